import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
@preconcurrency import Glibc

/// A failure of the control socket: what went wrong, in words a user can act on.
///
/// Rationale: `ApplicationError` has no initializer outside the AppLifecycle module, so the host
/// carries its own small error; `description` is the message the CLI prints.
struct ControlSocketError: Error, Sendable, CustomStringConvertible {
    /// A readable sentence naming the path and the cause.
    let message: String
    /// The `errno` behind the failure, if a system call failed.
    let errno: Int32?

    init(_ message: String, errno: Int32? = nil) {
        self.message = message
        self.errno = errno
    }

    var description: String { message }

    /// `"<what> failed: <strerror> (errno N)"`.
    static func system(_ what: String, _ code: Int32) -> ControlSocketError {
        ControlSocketError("\(what) failed: \(lcs_strerror(code).map { String(cString: $0) } ?? "error \(code)") (errno \(code))", errno: code)
    }

    static func notListening(_ path: String, _ code: Int32? = nil) -> ControlSocketError {
        ControlSocketError("no lifecycle-host is listening on \(path)", errno: code)
    }

    static func alreadyListening(_ path: String) -> ControlSocketError {
        ControlSocketError("another lifecycle-host is listening on \(path)")
    }
}

/// A Unix stream socket the host listens on: one request line in, one response line out.
///
/// ## Protocol
///
/// - The socket is a Unix-domain stream socket (`AF_UNIX`, `SOCK_STREAM`) at `path`, file mode
///   0600. By default it is `$XDG_RUNTIME_DIR/lifecycle-host.sock`, or
///   `/tmp/lifecycle-host-<uid>.sock` when `XDG_RUNTIME_DIR` is unset or not a directory.
/// - Only a peer running as the host's own user, or as root, is served (checked with
///   `SO_PEERCRED` when it connects). Any other peer gets the single line
///   `error: permission denied (uid N)` and is disconnected.
/// - A request is one line of UTF-8 text ended by a line feed (`\n`); a carriage return just before
///   the line feed is dropped. A request holds at most 65536 bytes before its line feed.
/// - Every request gets exactly one response: one line of UTF-8 ended by `\n`, never containing a
///   CR or LF of its own (any in the handler's answer are sent as spaces). Responses come in the
///   order of the requests. By convention a failure starts with `error: `.
/// - A connection may carry any number of requests, and a client may send the next one before it
///   has read the last response (pipelining).
/// - A line that is empty or holds only spaces and tabs is ignored: it gets no response.
/// - A request that is not valid UTF-8 gets `error: request is not UTF-8`; the connection stays open.
/// - A request longer than 65536 bytes gets `error: request too long`, and then the server closes
///   the connection (the rest of that line is not read).
/// - A client may shut down its writing side after its last request (`shutdown(SHUT_WR)`, as
///   `nc -N` does): the responses still come, and a last line without a line feed counts as a
///   request. The server then closes the connection.
/// - A client that disconnects before reading its responses loses them; the server is unaffected.
///
/// ## Behaviour
///
/// Everything runs on the loop thread, without blocking it: the listening socket and every client
/// socket are non-blocking, partial lines are buffered until their line feed arrives, and a response
/// the client does not read yet is buffered and sent when the socket is writable (meanwhile that
/// client's further requests wait). Each socket is an IO source of the loop (`MainRunLoop.addIO`):
/// the listening socket waits for `.readable`; a client waits for `.readable`, or for `.writable`
/// instead while a response waits to be sent (`LoopSource.setIOEvents`), so a client that does not
/// read cannot make the server buffer without bound. Hang-up and error are always reported. The
/// loop dispatches ready sockets in the order epoll reports them, one callback each per turn.
///
/// - Important: create, use and close the server on the loop thread. The loop's sources hold the
///   server weakly: keep a reference for as long as it should serve; releasing it closes it.
final class ControlServer {
    /// The longest request, in bytes before its line feed.
    static let maxRequestLength = 65536

    /// The socket file.
    let path: String

    private let loop: MainRunLoop
    private let handler: (String) -> String
    private let ownerUID: uid_t
    private var listenFD: Int32 = -1
    /// The listening socket's IO source.
    private var source: LoopSource?
    /// The socket file's identity, so that `close` never unlinks a file another process put there.
    private var socketDevice: UInt64 = 0
    private var socketInode: UInt64 = 0
    private var connections: [UInt64: Connection] = [:]
    private var nextToken: UInt64 = 1
    private var isClosed = false
    /// True while the handler runs; `close()` then only sets `closeRequested`.
    private var isHandling = false
    private var closeRequested = false
    private var acceptRetry: LoopSource?

    /// How much one readiness event reads from one client before the others get their turn.
    private static let readChunk = 65536
    private static let readsPerEvent = 4

    /// The default socket path: `$XDG_RUNTIME_DIR/lifecycle-host.sock`, or
    /// `/tmp/lifecycle-host-<uid>.sock` when `XDG_RUNTIME_DIR` is unset, empty or not a directory.
    /// [thread-safe]
    static func defaultPath() -> String {
        if let value = getenv("XDG_RUNTIME_DIR") {
            let dir = String(cString: value)
            var info = stat()
            if !dir.isEmpty, stat(dir, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
                return dir.hasSuffix("/") ? dir + "lifecycle-host.sock" : dir + "/lifecycle-host.sock"
            }
        }
        return "/tmp/lifecycle-host-\(geteuid()).sock"
    }

    /// Binds the socket at `path`, makes it mode 0600, listens, and serves requests on `loop`.
    ///
    /// [loop-thread] Returns once the socket listens; requests are served while the loop runs.
    /// A socket file left behind by a host that is gone (nothing accepts on it) is replaced.
    /// - Parameters:
    ///   - path: the socket file; at most 107 bytes.
    ///   - loop: the loop to serve on; this must be its thread.
    ///   - handler: gets each request line (without its line ending) and returns the response line
    ///     (without a line feed). It runs on the loop thread, one request at a time, in order; it may
    ///     call `close()`.
    /// - Throws: `ControlSocketError`: "another lifecycle-host is listening on PATH" when a live
    ///   socket is there; a path that is too long, exists and is not a socket, or cannot be bound.
    init(path: String, loop: MainRunLoop, handler: @escaping (String) -> String) throws(ControlSocketError) {
        self.path = path
        self.loop = loop
        self.handler = handler
        ownerUID = geteuid()
        guard loop.isOnLoopThread else {
            throw ControlSocketError("the control socket must be created on the loop's thread")
        }
        do {
            try open()
        } catch {
            shutDown(unlinking: socketInode != 0)
            throw error
        }
    }

    deinit {
        shutDown(unlinking: true)
    }

    /// Stops listening, closes every client connection and removes the socket file (unless another
    /// process has replaced it since).
    ///
    /// [loop-thread] Idempotent. Responses a slow client has not read yet are dropped. Called from the
    /// handler, it takes effect once the handler returns: that response is still sent (best effort,
    /// without blocking), and no further request is answered.
    func close() {
        precondition(loop.isOnLoopThread, "ControlServer.close must be called on the loop thread")
        if isHandling {
            closeRequested = true
        } else {
            shutDown(unlinking: true)
        }
    }

    // MARK: Setting up

    private func open() throws(ControlSocketError) {
        let address = try Self.address(path)
        try removeStaleSocket()
        listenFD = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard listenFD >= 0 else { throw .system("socket(AF_UNIX)", errno) }
        if Self.bind(listenFD, address) != 0 {
            let code = errno
            if code == EADDRINUSE { throw .alreadyListening(path) }
            throw .system("bind \(path)", code)
        }
        var info = stat()
        guard lstat(path, &info) == 0 else { throw .system("stat \(path)", errno) }
        socketDevice = UInt64(info.st_dev)
        socketInode = UInt64(info.st_ino)
        // Before listen(): nobody can connect yet, so the mode is 0600 before anyone can use it.
        guard chmod(path, 0o600) == 0 else { throw .system("chmod 0600 \(path)", errno) }
        guard listen(listenFD, 64) == 0 else { throw .system("listen \(path)", errno) }
        do {
            source = try loop.addIO(fd: listenFD, events: .readable) { [weak self] _ in
                guard let self else { return }
                acceptAll()
                finishRequestedClose()
            }
        } catch {
            throw ControlSocketError("cannot watch the control socket: \(error.message)")
        }
    }

    /// Removes a socket file nothing listens on; refuses a live socket or a file that is not a socket.
    private func removeStaleSocket() throws(ControlSocketError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { return }
            throw .system("stat \(path)", errno)
        }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw ControlSocketError("\(path) exists and is not a socket; remove it or choose another path")
        }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { throw .system("socket(AF_UNIX)", errno) }
        defer { _ = Glibc.close(probe) }
        let address = try Self.address(path)
        if Self.connect(probe, address) == 0 { throw .alreadyListening(path) }
        switch errno {
        case ECONNREFUSED:
            // Stale: bound once, nobody accepts on it any more.
            guard unlink(path) == 0 || errno == ENOENT else { throw .system("unlink stale socket \(path)", errno) }
        case EAGAIN:
            // Its backlog is full: someone listens but is busy.
            throw .alreadyListening(path)
        case let code:
            throw .system("connect to existing socket \(path)", code)
        }
    }

    private func shutDown(unlinking: Bool) {
        guard !isClosed else { return }
        isClosed = true
        acceptRetry?.cancel()
        acceptRetry = nil
        // Sources first: the loop does not own the descriptors and must stop watching them before
        // they are closed.
        source?.cancel()
        source = nil
        var descriptors: [Int32] = []
        for connection in connections.values {
            connection.source?.cancel()
            connection.source = nil
            descriptors.append(connection.fd)
        }
        connections.removeAll()
        if listenFD >= 0 { descriptors.append(listenFD) }
        listenFD = -1
        if loop.isOnLoopThread {
            for fd in descriptors { _ = Glibc.close(fd) }
        } else {
            // Off the loop thread (a release elsewhere) the cancels above detach on the loop's next
            // turn: close after them, so the loop never unwatches a descriptor number reused meanwhile.
            let closing = descriptors
            loop.perform { for fd in closing { _ = Glibc.close(fd) } }
        }
        if unlinking, socketInode != 0 {
            var info = stat()
            if lstat(path, &info) == 0, UInt64(info.st_dev) == socketDevice, UInt64(info.st_ino) == socketInode {
                _ = unlink(path)
            }
        }
    }

    // MARK: Serving

    /// `close()` from the handler: send what is ready (the answer to that request) and go. Called at
    /// the end of every callback of the server's sources.
    private func finishRequestedClose() {
        guard closeRequested, !isClosed else { return }
        for connection in Array(connections.values) where connection.sent < connection.output.count {
            _ = flush(connection)
        }
        shutDown(unlinking: true)
    }

    private func acceptAll() {
        while !isClosed, !closeRequested {
            // accept4 is not in the Glibc module: set the flags right after (the host spawns no children
            // from other threads, so the close-on-exec gap does not leak).
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                switch errno {
                case EINTR, ECONNABORTED: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: pauseAccepting()
                default: break
                }
                return
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            guard let uid = Self.peerUID(fd) else {
                _ = Glibc.close(fd)
                continue
            }
            guard uid == ownerUID || uid == 0 else {
                reject(fd, uid: uid)
                continue
            }
            let connection = Connection(fd: fd, token: nextToken)
            nextToken += 1
            do {
                connection.source = try loop.addIO(fd: fd, events: .readable) { [weak self, weak connection] events in
                    guard let self, let connection, !isClosed, !closeRequested else { return }
                    service(connection, events: events)
                    finishRequestedClose()
                }
            } catch {
                _ = Glibc.close(fd)
                continue
            }
            connections[connection.token] = connection
        }
    }

    /// Out of descriptors or memory: level-triggered, the listener would wake every turn. Stop
    /// watching it for a moment instead.
    private func pauseAccepting() {
        guard acceptRetry == nil else { return }
        try? source?.setIOEvents([])
        acceptRetry = loop.addTimer(after: .milliseconds(100)) { [weak self] in
            guard let self, !isClosed else { return }
            acceptRetry = nil
            try? source?.setIOEvents(.readable)
        }
    }

    private func reject(_ fd: Int32, uid: uid_t) {
        let reply = Array("error: permission denied (uid \(uid))\n".utf8)
        _ = reply.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        Self.discardInput(fd)
        _ = Glibc.close(fd)
    }

    private func service(_ connection: Connection, events: IOEvents) {
        if events.contains(.writable) {
            guard flush(connection) else { return }
        }
        // Hang-up and error count as readable: the read then says what happened (end, reset).
        if connection.isReading, !events.isDisjoint(with: [.readable, .hangUp, .error]) {
            receive(connection)
        } else {
            updateInterest(connection)
        }
    }

    /// Reads what is there, answers every complete line, and sends what it can.
    private func receive(_ connection: Connection) {
        var buffer = [UInt8](repeating: 0, count: Self.readChunk)
        var reachedEnd = false
        reading: for _ in 0..<Self.readsPerEvent {
            let count = buffer.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                connection.input.append(contentsOf: buffer[0..<count])
                if count < Self.readChunk { break }
            } else if count == 0 {
                reachedEnd = true
                break
            } else {
                switch errno {
                case EINTR: continue reading
                case EAGAIN, EWOULDBLOCK: break reading
                default:
                    drop(connection)  // ECONNRESET and the like: nobody to answer.
                    return
                }
            }
        }
        answerLines(connection, atEnd: reachedEnd)
        if reachedEnd { connection.stopReading() }
        guard flush(connection) else { return }
        updateInterest(connection)
    }

    /// Answers each complete line of the input in order (and, at the end of the stream, the last
    /// unterminated one); enforces the length limit.
    private func answerLines(_ connection: Connection, atEnd: Bool) {
        var start = 0
        let input = connection.input
        while connection.isReading, !closeRequested {
            guard let newline = input[start...].firstIndex(of: 10) else { break }
            guard newline - start <= Self.maxRequestLength else {
                tooLong(connection)
                return
            }
            answer(connection, input[start..<newline])
            start = newline + 1
        }
        guard connection.isReading, !closeRequested else { return }
        let rest = input.count - start
        if rest > Self.maxRequestLength {
            tooLong(connection)
            return
        }
        if atEnd, rest > 0 {
            answer(connection, input[start...])
            start = input.count
        }
        connection.input.removeFirst(start)
    }

    private func answer(_ connection: Connection, _ raw: ArraySlice<UInt8>) {
        var line = raw
        if line.last == 13 { line = line.dropLast() }
        if line.allSatisfy({ $0 == 32 || $0 == 9 }) { return }
        let response: String
        if let text = String(validating: line, as: UTF8.self) {
            isHandling = true
            response = handler(text)
            isHandling = false
        } else {
            response = "error: request is not UTF-8"
        }
        connection.output.append(contentsOf: response.utf8.map { $0 == 10 || $0 == 13 ? 32 : $0 })
        connection.output.append(10)
    }

    private func tooLong(_ connection: Connection) {
        connection.output.append(contentsOf: "error: request too long\n".utf8)
        connection.input.removeAll()
        connection.stopReading()
        Self.discardInput(connection.fd)
    }

    /// Sends buffered output until done or the socket is full. Returns false if the connection is gone.
    private func flush(_ connection: Connection) -> Bool {
        while connection.sent < connection.output.count {
            let sent = connection.output.withUnsafeBytes { bytes in
                send(connection.fd, bytes.baseAddress! + connection.sent, bytes.count - connection.sent,
                     Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if sent > 0 {
                connection.sent += sent
            } else if sent < 0, errno == EINTR {
                continue
            } else if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                return true
            } else {
                drop(connection)  // EPIPE, ECONNRESET: the client has gone.
                return false
            }
        }
        connection.output.removeAll(keepingCapacity: connection.output.capacity <= 1 << 16)
        connection.sent = 0
        if !connection.isReading {
            drop(connection)  // Everything said; the client ended or is being turned away.
            return false
        }
        return true
    }

    /// Waits for writability while output waits (and stops reading meanwhile), else for input.
    private func updateInterest(_ connection: Connection) {
        let wanted: IOEvents
        if connection.sent < connection.output.count {
            wanted = .writable
        } else if connection.isReading {
            wanted = .readable
        } else {
            drop(connection)
            return
        }
        do {
            try connection.source?.setIOEvents(wanted)
        } catch {
            drop(connection)
        }
    }

    private func drop(_ connection: Connection) {
        guard connections.removeValue(forKey: connection.token) != nil else { return }
        connection.source?.cancel()
        connection.source = nil
        _ = Glibc.close(connection.fd)
    }

    // MARK: Helpers

    /// Reads and throws away what the peer has sent already, so that closing does not reset the
    /// connection before the peer reads our last line (Linux resets on close with unread input).
    private static func discardInput(_ fd: Int32) {
        var scratch = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<64 {
            let count = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count <= 0, !(count < 0 && errno == EINTR) { return }
        }
    }

    /// The peer's user id from `SO_PEERCRED` (`struct ucred { pid_t pid; uid_t uid; gid_t gid; }`).
    static func peerUID(_ fd: Int32) -> uid_t? {
        // ucred is behind _GNU_SOURCE, which the Glibc module does not define: read its three fields.
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        let result = withUnsafeMutablePointer(to: &credentials) {
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, $0, &length)
        }
        guard result == 0, length == 12 else { return nil }
        return credentials.uid
    }

    /// The `sockaddr_un` for `path`.
    static func address(_ path: String) throws(ControlSocketError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty else { throw ControlSocketError("the control socket path is empty") }
        guard !bytes.contains(0) else { throw ControlSocketError("the control socket path contains a NUL byte") }
        guard bytes.count < capacity else {
            throw ControlSocketError("the control socket path is too long (\(bytes.count) bytes; at most \(capacity - 1)): \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    static func bind(_ fd: Int32, _ address: sockaddr_un) -> Int32 {
        var address = address
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    static func connect(_ fd: Int32, _ address: sockaddr_un) -> Int32 {
        var address = address
        var result: Int32
        repeat {
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        } while result < 0 && errno == EINTR
        return result
    }
}

/// One client connection of a `ControlServer`. [loop-thread]
private final class Connection {
    let fd: Int32
    let token: UInt64
    /// Bytes received and not yet answered (at most one partial line between events).
    var input: [UInt8] = []
    /// Response bytes not yet sent, from `sent` on.
    var output: [UInt8] = []
    var sent = 0
    /// False once the client ended its stream or a request was too long: no more requests are taken,
    /// and the connection closes when `output` is sent.
    private(set) var isReading = true
    /// The connection's IO source: `.readable`, or `.writable` while output waits.
    var source: LoopSource?

    init(fd: Int32, token: UInt64) {
        self.fd = fd
        self.token = token
    }

    func stopReading() { isReading = false }
}

/// Sends one request to a running host's control socket and returns its response.
enum ControlClient {
    /// Connects to `path`, sends `line` and a line feed, and reads one response line.
    ///
    /// [thread-safe] Blocks the calling thread for at most `timeout` in all (connecting, sending and
    /// waiting for the answer).
    /// - Parameters:
    ///   - path: the host's socket (see `ControlServer.defaultPath()`).
    ///   - line: the request: one non-blank line, at most 65536 bytes, without CR or LF.
    ///   - timeout: the longest wait for the whole exchange.
    /// - Returns: the response line without its line feed (an `error: …` line is returned, not thrown).
    /// - Throws: `ControlSocketError`: "no lifecycle-host is listening on PATH" when the file is missing
    ///   or nothing accepts on it; permission denied; no response within the timeout; the connection
    ///   closed before a response; a malformed request.
    static func request(path: String, line: String, timeout: Duration = .seconds(5)) throws(ControlSocketError) -> String {
        guard !line.utf8.contains(10), !line.utf8.contains(13) else {
            throw ControlSocketError("a control request is one line: it cannot contain a line break")
        }
        guard !line.utf8.allSatisfy({ $0 == 32 || $0 == 9 }) else {
            throw ControlSocketError("a control request cannot be blank")
        }
        guard line.utf8.count <= ControlServer.maxRequestLength else {
            throw ControlSocketError("a control request is at most \(ControlServer.maxRequestLength) bytes (this one has \(line.utf8.count))")
        }
        let deadline = MonotonicInstant.now + timeout
        let address = try ControlServer.address(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system("socket(AF_UNIX)", errno) }
        defer { _ = close(fd) }

        // Blocking connect and send, bounded by SO_SNDTIMEO (a Unix connect waits while the backlog is full).
        setSendTimeout(fd, until: deadline)
        if ControlServer.connect(fd, address) != 0 {
            let code = errno
            switch code {
            case ENOENT, ECONNREFUSED, ENOTDIR: throw .notListening(path, code)
            case EACCES, EPERM:
                throw ControlSocketError("permission denied connecting to \(path) (the socket belongs to another user)", errno: code)
            case EAGAIN, EWOULDBLOCK, ETIMEDOUT, EINPROGRESS:
                throw ControlSocketError("the lifecycle-host on \(path) did not accept the connection within \(describe(timeout))", errno: code)
            default: throw .system("connect to \(path)", code)
            }
        }

        let request = Array(line.utf8) + [10]
        var offset = 0
        while offset < request.count {
            setSendTimeout(fd, until: deadline)
            let sent = request.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent > 0 {
                offset += sent
            } else if sent < 0, errno == EINTR {
                continue
            } else if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                throw ControlSocketError("timed out sending the request to the lifecycle-host on \(path) (\(describe(timeout)))", errno: errno)
            } else {
                // EPIPE/ECONNRESET: the host hung up, perhaps after saying why: read that line below.
                break
            }
        }

        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let remaining = deadline.nanoseconds > MonotonicInstant.now.nanoseconds
                ? deadline.nanoseconds - MonotonicInstant.now.nanoseconds : 0
            var pollItem = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pollItem, 1, Int32(clamping: (remaining + 999_999) / 1_000_000))
            if ready < 0 {
                if errno == EINTR { continue }
                throw .system("poll", errno)
            }
            if ready == 0 {
                throw ControlSocketError("no response from the lifecycle-host on \(path) within \(describe(timeout))", errno: ETIMEDOUT)
            }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                if errno == ECONNRESET {
                    throw ControlSocketError("the lifecycle-host on \(path) closed the connection without a response", errno: errno)
                }
                throw .system("reading from \(path)", errno)
            }
            if count == 0 {
                throw ControlSocketError("the lifecycle-host on \(path) closed the connection without a response")
            }
            if let newline = chunk[0..<count].firstIndex(of: 10) {
                response.append(contentsOf: chunk[0..<newline])
                return String(decoding: response, as: UTF8.self)
            }
            response.append(contentsOf: chunk[0..<count])
        }
    }

    private static func setSendTimeout(_ fd: Int32, until deadline: MonotonicInstant) {
        let now = MonotonicInstant.now.nanoseconds
        // Zero would mean "no timeout": wait at least a microsecond.
        let remaining = max(deadline.nanoseconds > now ? deadline.nanoseconds - now : 0, 1000)
        var value = timeval(tv_sec: Int(remaining / 1_000_000_000), tv_usec: Int(remaining % 1_000_000_000) / 1000)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// `5 s`, `250 ms`.
    private static func describe(_ duration: Duration) -> String {
        let ms = Int64((duration.secondsDouble * 1000).rounded())
        return ms % 1000 == 0 ? "\(ms / 1000) s" : "\(ms) ms"
    }
}
