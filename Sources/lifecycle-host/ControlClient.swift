// The control socket client: sends one request to a running host and reads its reply.
import AppLifecycle
import HostInput
import CLifecycleSystem
@preconcurrency import Glibc

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
    ///   or nothing accepts on it; permission denied; a server run by another user (not root), checked
    ///   with `SO_PEERCRED` before the request is sent; no response within the timeout; the connection
    ///   closed before a response; a response over `ControlFraming.maxResponseLength` bytes; a malformed request.
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
        if let error = ControlServer.connect(fd, address) {
            switch error.errno {
            case ENOENT, ECONNREFUSED, ENOTDIR: throw .notListening(path, error.errno)
            case EACCES, EPERM:
                throw ControlSocketError("permission denied connecting to \(path) (the socket belongs to another user)", errno: error.errno)
            case EAGAIN, EWOULDBLOCK, ETIMEDOUT, EINPROGRESS:
                throw ControlSocketError("the lifecycle-host on \(path) did not accept the connection within \(describe(timeout))", errno: error.errno)
            default: throw .system(error, naming: "connect to \(path)")
            }
        }

        try checkServer(fd, path: path)

        let request = Array(line.utf8) + [10]
        var offset = 0
        while offset < request.count {
            setSendTimeout(fd, until: deadline)
            let sent: Int
            do throws(SystemCallError) {
                sent = try systemCall("send") { request.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) } }
            } catch {
                if error.errno == EAGAIN || error.errno == EWOULDBLOCK {
                    throw ControlSocketError("timed out sending the request to the lifecycle-host on \(path) (\(describe(timeout)))",
                                             errno: error.errno)
                }
                break  // EPIPE/ECONNRESET: the host hung up, perhaps after saying why: read that line below.
            }
            guard sent > 0 else { break }
            offset += sent
        }

        var reader = ControlFraming.ResponseReader()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            var pollItem = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready: Int32
            do throws(SystemCallError) {
                // The time left is computed again for each call (a retry after EINTR included).
                ready = try systemCall("poll") { () -> Int32 in
                    let remaining = deadline.nanoseconds > MonotonicInstant.now.nanoseconds
                        ? deadline.nanoseconds - MonotonicInstant.now.nanoseconds : 0
                    return poll(&pollItem, 1, Int32(clamping: (remaining + 999_999) / 1_000_000))
                }
            } catch {
                throw .system(error)
            }
            if ready == 0 {
                throw ControlSocketError("no response from the lifecycle-host on \(path) within \(describe(timeout))", errno: ETIMEDOUT)
            }
            let count: Int
            do throws(SystemCallError) {
                count = try systemCall("recv") { chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) } }
            } catch {
                if error.errno == EAGAIN { continue }
                if error.errno == ECONNRESET {
                    throw ControlSocketError("the lifecycle-host on \(path) closed the connection without a response", errno: error.errno)
                }
                throw .system(error, naming: "reading from \(path)")
            }
            if count == 0 {
                throw ControlSocketError("the lifecycle-host on \(path) closed the connection without a response")
            }
            switch reader.append(chunk[0..<count]) {
            case .line(let response): return response
            case .tooLong:
                throw ControlSocketError("the response from the lifecycle-host on \(path) is longer than \(ControlFraming.maxResponseLength) bytes")
            case .needMore: continue
            }
        }
    }

    /// Refuses a server that is not run by our own user or root (`SO_PEERCRED`), before a byte is
    /// sent: another local user who bound the path first would otherwise read our request and forge
    /// the answer.
    static func checkServer(_ fd: Int32, path: String) throws(ControlSocketError) {
        let me = geteuid()
        guard let uid = ControlServer.peerUID(fd) else {
            throw ControlSocketError("cannot tell who listens on \(path) (SO_PEERCRED failed); refusing to talk to it")
        }
        guard uid == me || uid == 0 else {
            throw ControlSocketError("the process listening on \(path) runs as uid \(uid), not as you (uid \(me)) or root; "
                                     + "refusing to talk to it (another user may have taken the path; use --socket or XDG_RUNTIME_DIR)")
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
