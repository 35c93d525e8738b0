import CLifecycleSystem

/// An error from the run loop: what failed, in words a user can act on.
///
/// A struct around a private code so that new cases never break callers.
public struct RunLoopError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure; grows without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Kind: Hashable, Sendable { case notOnLoopThread, reentrant, invalidArgument, system }
        fileprivate let kind: Kind

        /// A loop-bound call was made from another thread.
        public static let notOnLoopThread = Code(kind: .notOnLoopThread)
        /// `run` was called from inside one of the loop's own callbacks.
        public static let reentrant = Code(kind: .reentrant)
        /// An argument is out of range (a negative descriptor, a signal that cannot be caught).
        public static let invalidArgument = Code(kind: .invalidArgument)
        /// A system call failed; `errno` says why.
        public static let system = Code(kind: .system)

        public var description: String { "\(kind)" }
    }

    public let code: Code
    /// A readable sentence naming what failed and why.
    public let message: String
    /// The system call that failed (`.system` only).
    public let call: String?
    /// The `errno` value (`.system` only).
    public let errno: Int32?

    package init(_ code: Code, _ message: String, call: String? = nil, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.call = call
        self.errno = errno
    }

    public var description: String { message }

    /// `call` failed with `errno code`: the text of a `SystemCallError` (`"<call> failed: … (errno N)"`).
    package static func system(_ call: String, errno code: Int32) -> RunLoopError {
        RunLoopError(.system, SystemCallError.describe(call: call, errno: code), call: call, errno: code)
    }

    /// A `.system` error from `error`, with its text and fields; `call`, when given, names the call
    /// with what it was applied to (`"epoll_ctl(EPOLL_CTL_ADD, fd 7)"`) instead of the bare name.
    package init(_ error: SystemCallError, call: String? = nil) {
        let call = call ?? error.call
        self.init(.system, SystemCallError.describe(call: call, errno: error.errno), call: call, errno: error.errno)
    }
}

/// The text of an errno value (thread-safe).
package func errnoDescription(_ code: Int32) -> String {
    guard let text = lcs_strerror(code) else { return "error \(code)" }
    return String(cString: text)
}
