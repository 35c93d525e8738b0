// The control socket's error type and the AF_UNIX helpers shared by its server and client.
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

    /// `"<what> failed: <strerror> (errno N)"`, the text of a `SystemCallError`.
    static func system(_ what: String, _ code: Int32) -> ControlSocketError {
        ControlSocketError(SystemCallError.describe(call: what, errno: code), errno: code)
    }

    /// A failed call, named `what` (e.g. `"reading from /run/x.sock"`) or by its own name.
    static func system(_ error: SystemCallError, naming what: String? = nil) -> ControlSocketError {
        .system(what ?? error.call, error.errno)
    }

    static func notListening(_ path: String, _ code: Int32? = nil) -> ControlSocketError {
        ControlSocketError("no lifecycle-host is listening on \(path)", errno: code)
    }

    static func alreadyListening(_ path: String) -> ControlSocketError {
        ControlSocketError("another lifecycle-host is listening on \(path)")
    }
}

extension ControlServer {
    // MARK: Socket helpers

    /// Reads and throws away what the peer has sent already, so that closing does not reset the
    /// connection before the peer reads our last line (Linux resets on close with unread input).
    static func discardInput(_ fd: Int32) {
        var scratch = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<64 {
            guard let count = try? systemCall("recv", { scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) } }),
                  count > 0 else { return }
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

    /// Connects `fd` to `address`. - Returns: nil once connected, else the failed `connect`.
    static func connect(_ fd: Int32, _ address: sockaddr_un) -> SystemCallError? {
        var address = address
        do throws(SystemCallError) {
            _ = try systemCall("connect") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
                }
            }
            return nil
        } catch {
            return error
        }
    }
}
