import AppLifecycle
@preconcurrency import Glibc

/// The `--metrics` port: a minimal HTTP/1.1 responder on the host's run loop — `GET /metrics`
/// answers the Prometheus text exposition; nothing else is served.
///
/// Every connection is hostile until its request is checked:
/// - **Bounded size.** At most `MetricsRequest.maxBytes` (8 KiB) of request head are held; no blank
///   line by then is `431`, and the connection closes. Only the request line is parsed
///   (`MetricsRequest`); a body is never read.
/// - **Bounded time.** A connection has `timeout` (5 s) from its accept to its last response byte;
///   then it is closed, whatever it was doing (a client that sends nothing, or reads nothing).
/// - **Bounded count, fairly shared.** At most `maxConnections` (16) at once. A connection beyond them
///   takes the place of the one that has waited longest for its request head (that one gets a
///   best-effort `408` and is closed), so clients that connect and say nothing cannot keep a scraper
///   out: a request sent at once after connecting is served while fewer than 16 newer connections
///   arrive before it. Only when all 16 have their request and are being answered is the new one
///   closed at once (after a best-effort `503`).
/// - **One request a connection.** The response says `Connection: close`; the server shuts its
///   writing side after the last byte and closes.
///
/// Everything runs on the loop thread, without blocking it: non-blocking sockets, each an IO source
/// of the loop (`MainRunLoop.addIO`) waiting for `.readable` until the head is complete, then for
/// `.writable` while the response is not all sent. A response is rendered once per request, when the
/// head is complete.
///
/// - Important: create, use and close on the loop thread.
final class MetricsServer {
    static let maxConnections = 16
    static let timeout: Duration = .seconds(5)

    /// The address it listens on (with the port the kernel chose, for port 0).
    let address: MetricsAddress
    private let loop: MainRunLoop
    private let render: () -> String
    private let answered: (String) -> Void
    private var listenFD: Int32 = -1
    private var source: LoopSource?
    private var connections: [Int32: Connection] = [:]

    /// Accepted connections so far: each connection's place in the order of arrival.
    private var accepted: UInt64 = 0

    private final class Connection {
        let fd: Int32
        /// Its place in the order of arrival (`accepted` when it came).
        let arrival: UInt64
        var input: [UInt8] = []
        var output: [UInt8] = []
        var sent = 0
        var source: LoopSource?
        var deadline: LoopSource?
        /// Still waiting for its request head (no response decided yet).
        var waitingForHead: Bool { output.isEmpty }
        init(fd: Int32, arrival: UInt64) {
            self.fd = fd
            self.arrival = arrival
        }
    }

    /// Listens on `address` and serves while `loop` runs. [loop-thread]
    /// - Parameters:
    ///   - render: the exposition, called once for each `GET /metrics` (on the loop thread).
    ///   - answered: told each response's status code (`200`, `404`, …) as it is decided.
    /// - Throws: `MetricsOptionError` naming the address and the system's reason (in use, no permission).
    init(address: MetricsAddress, loop: MainRunLoop, render: @escaping () -> String, answered: @escaping (String) -> Void = { _ in })
        throws(MetricsOptionError)
    {
        self.loop = loop
        self.render = render
        self.answered = answered
        guard let socketAddress = address.socketAddress() else { throw MetricsOptionError("'\(address)' is not an address") }
        listenFD = socket(socketAddress.family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard listenFD >= 0 else { throw Self.failure("socket", address) }
        var yes: Int32 = 1
        _ = setsockopt(listenFD, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        if socketAddress.family == AF_INET6 { _ = setsockopt(listenFD, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &yes, socklen_t(MemoryLayout<Int32>.size)) }
        guard socketAddress.bind(listenFD) == 0 else {
            let error = Self.failure("bind", address)
            _ = Glibc.close(listenFD)
            throw error
        }
        guard listen(listenFD, 16) == 0 else {
            let error = Self.failure("listen", address)
            _ = Glibc.close(listenFD)
            throw error
        }
        self.address = MetricsAddress.bound(listenFD, like: address)
        do {
            source = try loop.addIO(fd: listenFD, events: .readable) { [weak self] _ in self?.acceptAll() }
        } catch {
            _ = Glibc.close(listenFD)
            throw MetricsOptionError("cannot watch the metrics socket: \(error.message)")
        }
    }

    deinit { close() }

    /// Stops listening and closes every connection. [loop-thread] Idempotent.
    func close() {
        source?.cancel()
        source = nil
        for fd in Array(connections.keys) { drop(fd) }
        if listenFD >= 0 { _ = Glibc.close(listenFD) }
        listenFD = -1
    }

    private static func failure(_ call: String, _ address: MetricsAddress) -> MetricsOptionError {
        let code = errno
        return MetricsOptionError("cannot listen on \(address): \(call): \(String(cString: strerror(code))) (errno \(code))")
    }

    // MARK: Connections

    private func acceptAll() {
        while listenFD >= 0 {
            let fd: Int32
            do throws(SystemCallError) {
                fd = try systemCall("accept") { accept(listenFD, nil, nil) }
            } catch {
                if error.errno == ECONNABORTED { continue }
                return
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            if connections.count >= Self.maxConnections, !evictLongestWaiting() {
                Self.sendEmpty(fd, "503 Service Unavailable")
                answered("503")
                _ = Glibc.close(fd)
                continue
            }
            accepted += 1
            let connection = Connection(fd: fd, arrival: accepted)
            do {
                connection.source = try loop.addIO(fd: fd, events: .readable) { [weak self] events in self?.service(fd, events) }
            } catch {
                _ = Glibc.close(fd)
                continue
            }
            connection.deadline = loop.addRealTimeTimer(after: Self.timeout) { [weak self] in self?.drop(fd) }
            connections[fd] = connection
        }
    }

    /// Makes room: closes the connection that has waited longest for its request head, after a
    /// best-effort `408`. - Returns: false when every connection has its request (none is closed).
    private func evictLongestWaiting() -> Bool {
        guard let oldest = connections.values.filter(\.waitingForHead).min(by: { $0.arrival < $1.arrival }) else { return false }
        Self.sendEmpty(oldest.fd, "408 Request Timeout")
        answered("408")
        drop(oldest.fd)
        return true
    }

    /// A response without a body, sent once without waiting (the socket is closed after it).
    private static func sendEmpty(_ fd: Int32, _ status: String) {
        let bytes = Array("HTTP/1.1 \(status)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
    }

    private func service(_ fd: Int32, _ events: IOEvents) {
        guard let connection = connections[fd] else { return }
        if connection.output.isEmpty {
            read(connection)
        } else {
            write(connection)
        }
    }

    /// Reads what has come, up to the bound; answers once the head is complete (or too large).
    private func read(_ connection: Connection) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while connection.input.count < MetricsRequest.maxBytes {
            let room = min(chunk.count, MetricsRequest.maxBytes - connection.input.count)
            let n: Int
            do throws(SystemCallError) {
                n = try systemCall("recv") { chunk.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, room, Int32(MSG_DONTWAIT)) } }
            } catch {
                if error.errno == EAGAIN || error.errno == EWOULDBLOCK { break }
                return drop(connection.fd)  // failed before a whole request
            }
            if n == 0 { return drop(connection.fd) }  // closed before a whole request
            connection.input += chunk[0..<n]
            if MetricsRequest.headEnd(connection.input) != nil { break }
        }
        guard let outcome = MetricsRequest.outcome(connection.input) else { return }
        answered(MetricsRequest.code(outcome))
        connection.output = MetricsRequest.response(outcome, metrics: render)
        connection.input = []
        try? connection.source?.setIOEvents(.writable)
        write(connection)
    }

    /// Sends what the socket takes; at the end shuts the writing side and closes.
    private func write(_ connection: Connection) {
        while connection.sent < connection.output.count {
            let n: Int
            do throws(SystemCallError) {
                n = try systemCall("send") {
                    connection.output.withUnsafeBytes {
                        send(connection.fd, $0.baseAddress! + connection.sent, $0.count - connection.sent, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                    }
                }
            } catch {
                if error.errno == EAGAIN || error.errno == EWOULDBLOCK { return }  // wait for .writable
                return drop(connection.fd)
            }
            if n == 0 { return drop(connection.fd) }
            connection.sent += n
        }
        _ = shutdown(connection.fd, Int32(SHUT_WR))
        ControlServer.discardInput(connection.fd)
        drop(connection.fd)
    }

    private func drop(_ fd: Int32) {
        guard let connection = connections.removeValue(forKey: fd) else { return }
        connection.source?.cancel()
        connection.deadline?.cancel()
        _ = Glibc.close(fd)
    }
}
