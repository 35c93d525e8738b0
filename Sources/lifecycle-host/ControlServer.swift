// The control socket server: listening, accepting peers (credential check), shutting down.
import AppLifecycle
import HostInput
import CLifecycleSystem
@preconcurrency import Glibc

/// A Unix stream socket the host listens on: one request line in, one response line out.
///
/// ## Protocol
///
/// - The socket is a Unix-domain stream socket (`AF_UNIX`, `SOCK_STREAM`) at `path`, file mode
///   0600. By default it is `$XDG_RUNTIME_DIR/lifecycle-host.sock`, or, when `XDG_RUNTIME_DIR` is
///   unset or not a directory, `lifecycle-host.sock` in the private folder
///   `${TMPDIR:-/tmp}/lifecycle-host-<euid>/` (mode 0700, made and checked: see `SocketFolder`).
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
/// - A request line not finished (no line feed) within 5 s of its first byte gets
///   `error: request not finished within 5 s`, and then the server closes the connection.
/// - At most 64 connections at once: a new client takes the place of the connection idle longest
///   (which gets `error: closed to make room: …` and is closed), or, when none is idle, gets
///   `error: too many connections (at most 64)` and is closed (see `ControlServer+Limits.swift`).
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
    static let maxRequestLength = ControlFraming.maxRequestLength

    /// Answers a request line now (its response), or later (nil, after taking the `PendingReply`).
    typealias Handler = (_ request: String, _ later: () -> PendingReply) -> String?

    /// The socket file.
    let path: String

    let loop: MainRunLoop
    let handler: Handler
    private let ownerUID: uid_t
    private var listenFD: Int32 = -1
    /// The listening socket's IO source.
    private var source: LoopSource?
    /// The socket file's identity, so that `close` never unlinks a file another process put there.
    private var socketDevice: UInt64 = 0
    private var socketInode: UInt64 = 0
    var connections: [UInt64: Connection] = [:]
    private var nextToken: UInt64 = 1
    private var isClosed = false
    /// True while the handler runs; `close()` then only sets `closeRequested`.
    var isHandling = false
    var closeRequested = false
    private var acceptRetry: LoopSource?

    /// The default socket path: `$XDG_RUNTIME_DIR/lifecycle-host.sock`, or
    /// `${TMPDIR:-/tmp}/lifecycle-host-<euid>/lifecycle-host.sock` when `XDG_RUNTIME_DIR` is unset,
    /// empty or not a directory. [thread-safe]
    static func defaultPath() -> String { defaultLocation().path }

    /// The default socket path and, when it is not under `XDG_RUNTIME_DIR`, the private folder
    /// holding it, which the host must `prepare()` and a client `check()` before use. [thread-safe]
    static func defaultLocation() -> (path: String, folder: SocketFolder?) {
        if let value = getenv("XDG_RUNTIME_DIR") {
            let dir = String(cString: value)
            var info = stat()
            if !dir.isEmpty, stat(dir, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
                let name = SocketFolder.socketName
                return (dir.hasSuffix("/") ? dir + name : dir + "/" + name, nil)
            }
        }
        let folder = SocketFolder.fallback()
        return (folder.socketPath, folder)
    }

    /// Binds the socket at `path`, makes it mode 0600, listens, and serves requests on `loop`.
    ///
    /// [loop-thread] Returns once the socket listens; requests are served while the loop runs.
    /// A socket file left behind by a host that is gone (nothing accepts on it) is replaced.
    /// - Parameters:
    ///   - path: the socket file; at most 107 bytes.
    ///   - loop: the loop to serve on; this must be its thread.
    ///   - handler: gets each request line (without its line ending) and returns the response line
    ///     (without a line feed), or nil after taking a `PendingReply` from its second argument to
    ///     answer later (`PendingReply.send`): that connection answers nothing more until then, and
    ///     reads nothing meanwhile. It runs on the loop thread, one request at a time, in order; it
    ///     may call `close()`.
    /// - Throws: `ControlSocketError`: "another lifecycle-host is listening on PATH" when a live
    ///   socket is there; a path that is too long, exists and is not a socket, or cannot be bound.
    init(path: String, loop: MainRunLoop, handler: @escaping Handler) throws(ControlSocketError) {
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
        guard let refused = Self.connect(probe, address) else { throw .alreadyListening(path) }
        switch refused.errno {
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
            connection.lineDeadline?.cancel()
            connection.lineDeadline = nil
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
            let fd: Int32
            do throws(SystemCallError) {
                fd = try systemCall("accept") { accept(listenFD, nil, nil) }
            } catch {
                switch error.errno {
                case ECONNABORTED: continue
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
            guard makeRoomForAClient() else {
                Self.sendLast(fd, ControlFraming.busyResponse)
                Self.discardInput(fd)
                _ = Glibc.close(fd)
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
        acceptRetry = loop.addRealTimeTimer(after: .milliseconds(100)) { [weak self] in
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
}

/// A control-socket request answered later: the handler took it (and returned nil); `send` gives the
/// response line. Until then that connection answers nothing more and reads nothing; the server keeps
/// the connection open for it even when the client has ended its stream. [loop-thread]
final class PendingReply {
    private weak var server: ControlServer?
    private weak var connection: Connection?

    init(server: ControlServer, connection: Connection) {
        self.server = server
        self.connection = connection
    }

    /// Sends `response` (a line; line breaks in it are sent as spaces), once. Nothing when the client
    /// has gone or the server has closed meanwhile.
    func send(_ response: String) {
        guard let server, let connection else { return }
        self.connection = nil
        server.sendLater(response, on: connection)
    }
}
