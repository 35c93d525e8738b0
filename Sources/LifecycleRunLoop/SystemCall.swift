// The one wrapper every system call that can fail with EINTR goes through, and its typed error.
import Glibc

/// A system call failed: which call, and its `errno`.
///
/// Small and allocation-free: the call's name is a `StaticString` (a pointer and a length into the
/// binary), so throwing one (typed throws) copies two words and an `Int32`. Its text is made only when
/// `description` is read.
public struct SystemCallError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The call's name as the site gave it (`"read"`, `"epoll_ctl"`).
    @usableFromInline let name: StaticString
    /// The `errno` value the call failed with (never `EINTR` unless the site asked to see it).
    public let errno: Int32

    @inlinable
    package init(_ name: StaticString, errno: Int32) {
        self.name = name
        self.errno = errno
    }

    /// The call's name, e.g. `"open"`.
    public var call: String { name.description }

    /// `"<call> failed: <strerror text> (errno N)"`, e.g.
    /// `"open failed: No such file or directory (errno 2)"`. [thread-safe]
    public var description: String { Self.describe(call: call, errno: errno) }

    /// Why, without the call: `"No such file or directory (errno 2)"`. [thread-safe]
    package var reason: String { Self.reason(errno) }

    /// The one format of a failed call, shared with `RunLoopError.system`. [thread-safe]
    package static func describe(call: String, errno code: Int32) -> String {
        "\(call) failed: \(reason(code))"
    }

    /// `"<strerror text> (errno N)"`. [thread-safe]
    package static func reason(_ code: Int32) -> String {
        "\(errnoDescription(code)) (errno \(code))"
    }

    public static func == (lhs: SystemCallError, rhs: SystemCallError) -> Bool {
        lhs.errno == rhs.errno && lhs.name.withUTF8Buffer { l in rhs.name.withUTF8Buffer { r in l.elementsEqual(r) } }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(errno)
        name.withUTF8Buffer { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

/// Makes a system call: calls `body`, again while it fails with `EINTR`, and turns any other failure
/// into a `SystemCallError` naming the call.
///
/// `body` is one system call (or a thin C wrapper of one) returning -1 with `errno` set on failure;
/// any negative result counts as a failure. Guarantees:
/// - **errno is read right after the call**, before anything else runs on the thread, so no other
///   call can overwrite it; it is per-thread, so the wrapper is [thread-safe].
/// - **EINTR is retried** by calling `body` again (a body that computes a timeout computes it again
///   on each call). With `retryingEINTR: false` it is thrown like any other errno, for a caller that
///   must see it (`epoll_wait`, whose caller recomputes its timeout and re-checks its stop flag).
/// - **Nothing allocates** on any path: the name is a `StaticString` and the error is thrown typed.
/// - **Never wrap `close()`**: on Linux the descriptor is released even when close reports EINTR,
///   and calling it again could close a descriptor another thread has just been given.
/// - Throws: `SystemCallError(name, errno)` for any failure but a retried EINTR.
@inlinable
package func systemCall<T: FixedWidthInteger & SignedInteger>(
    _ name: StaticString, retryingEINTR: Bool = true, _ body: () -> T
) throws(SystemCallError) -> T {
    while true {
        let result = body()
        if result >= 0 { return result }
        let code = errno
        if code == EINTR, retryingEINTR { continue }
        throw SystemCallError(name, errno: code)
    }
}
