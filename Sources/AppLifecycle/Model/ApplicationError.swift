import LifecycleRunLoop

/// An error from the engine: what went wrong, in words a user can act on.
///
/// A struct around a private code so that new cases never break callers (the swift-service-lifecycle
/// habit). Compare with the static factories' `code` via `==` on `ApplicationError.Code` values.
public struct ApplicationError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure; grows without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Kind: Hashable, Sendable {
            case illegalAction, actionInProgress, backgroundModeMissing, unknownBackgroundTask
            case unknownNotificationName, invalidNotificationName, notOnLoopThread
            case archiveUnreadable, archiveCorrupt, archiveWriteFailed, system, invalidArgument
            case unknownScene
        }
        fileprivate let kind: Kind

        /// The action is not legal in the current state; nothing changed.
        public static let illegalAction = Code(kind: .illegalAction)
        /// An action was started from inside a callback of another action; nothing changed.
        public static let actionInProgress = Code(kind: .actionInProgress)
        /// The action needs a background mode the application did not declare.
        public static let backgroundModeMissing = Code(kind: .backgroundModeMissing)
        /// No open background task has that identifier.
        public static let unknownBackgroundTask = Code(kind: .unknownBackgroundTask)
        /// A name that is neither standard, an alias, nor a custom (dotted) name.
        public static let unknownNotificationName = Code(kind: .unknownNotificationName)
        /// A name that is empty, too long, or contains white space or control characters.
        public static let invalidNotificationName = Code(kind: .invalidNotificationName)
        /// A loop-bound call was made from another thread.
        public static let notOnLoopThread = Code(kind: .notOnLoopThread)
        /// The archive file exists but cannot be read.
        public static let archiveUnreadable = Code(kind: .archiveUnreadable)
        /// The archive file was read but its contents are not a valid archive.
        public static let archiveCorrupt = Code(kind: .archiveCorrupt)
        /// Writing the archive failed; the previous archive is untouched.
        public static let archiveWriteFailed = Code(kind: .archiveWriteFailed)
        /// A system call failed.
        public static let system = Code(kind: .system)
        /// An argument is out of range or malformed.
        public static let invalidArgument = Code(kind: .invalidArgument)
        /// No connected scene (or, for a discard, no scene session) has that id; nothing changed.
        public static let unknownScene = Code(kind: .unknownScene)

        public var description: String { "\(kind)" }
    }

    /// The kind of failure.
    public let code: Code
    /// A readable sentence that names what failed and why.
    public let message: String
    /// For `illegalAction` and `actionInProgress`: the action that was refused.
    public let action: String?
    /// For `illegalAction`: the state the application was in.
    public let state: ApplicationState?
    /// Where the error was made (`#fileID:#line`), for bug reports.
    public let location: String

    init(_ code: Code, _ message: String, action: String? = nil, state: ApplicationState? = nil,
         fileID: String = #fileID, line: Int = #line)
    {
        self.code = code
        self.message = message
        self.action = action
        self.state = state
        self.location = "\(fileID):\(line)"
    }

    public var description: String { message }

    static func illegalAction(_ action: String, in state: ApplicationState, _ why: String? = nil,
                              fileID: String = #fileID, line: Int = #line) -> ApplicationError
    {
        var message = "action '\(action)' is not allowed while the application is \(state)"
        if let why { message += ": \(why)" }
        return ApplicationError(.illegalAction, message, action: action, state: state, fileID: fileID, line: line)
    }

    static func actionInProgress(_ action: String, running: String, fileID: String = #fileID, line: Int = #line)
        -> ApplicationError
    {
        ApplicationError(.actionInProgress,
                         "action '\(action)' cannot start while '\(running)' is in progress (called from inside a callback)",
                         action: action, fileID: fileID, line: line)
    }

    /// The run loop's error, with its code carried over (a re-entrant run is `.actionInProgress`).
    public init(_ error: RunLoopError, fileID: String = #fileID, line: Int = #line) {
        let code: Code = switch error.code {
        case .notOnLoopThread: .notOnLoopThread
        case .reentrant: .actionInProgress
        case .invalidArgument: .invalidArgument
        default: .system
        }
        self.init(code, error.message, fileID: fileID, line: line)
    }

    static func system(_ call: String, errno code: Int32, fileID: String = #fileID, line: Int = #line) -> ApplicationError {
        ApplicationError(.system, "\(call) failed: \(errnoDescription(code)) (errno \(code))", fileID: fileID, line: line)
    }
}
