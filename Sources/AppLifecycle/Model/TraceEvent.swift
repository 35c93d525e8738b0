/// One entry of the event trace: every action, state change, delegate call, notification, watchdog
/// report and error, in the exact order they happened.
public struct TraceEvent: Sendable, CustomStringConvertible {
    /// What sort of event.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// An action was performed (name: the action).
        public static let action = Kind(rawValue: "action")
        /// The state changed (name: the new state).
        public static let state = Kind(rawValue: "state")
        /// A delegate method was called (name: its selector; observer: the delegate id).
        public static let delegate = Kind(rawValue: "delegate")
        /// A notification was delivered to observers (name: the notification).
        public static let notification = Kind(rawValue: "notification")
        /// A notification of a coalescing kind was queued while suspended.
        public static let queued = Kind(rawValue: "queued")
        /// A delegate method was deliberately not called (e.g. openURL after a launch method said no).
        public static let skipped = Kind(rawValue: "skipped")
        /// A notification was not delivered because the application ran no code.
        public static let discarded = Kind(rawValue: "discarded")
        /// A background task began, expired or ended.
        public static let backgroundTask = Kind(rawValue: "background-task")
        /// A completion handler was called.
        public static let completion = Kind(rawValue: "completion")
        /// A state archive was saved or restored.
        public static let archive = Kind(rawValue: "archive")
        /// A budget overrun.
        public static let watchdog = Kind(rawValue: "watchdog")
        /// Something failed; the engine went on.
        public static let error = Kind(rawValue: "error")
        public var description: String { rawValue }
    }

    /// Position in the trace, from 1.
    public let seq: UInt64
    /// Monotonic time since the first launch.
    public let time: Duration
    public let kind: Kind
    public let name: String
    /// The application state after the event.
    public let state: ApplicationState
    /// The delegate or plugin involved, if any.
    public let observer: String?
    /// More words: a userInfo, a result, a reason.
    public let detail: String?

    /// `kind name [observer] (detail)` — the compact form tests and logs compare.
    public var description: String {
        var s = "\(kind) \(name)"
        if let observer, !observer.isEmpty { s += " [\(observer)]" }
        if let detail, !detail.isEmpty { s += " (\(detail))" }
        return s
    }
}
