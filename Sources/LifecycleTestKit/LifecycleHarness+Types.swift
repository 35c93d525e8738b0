import CLifecycleABI

extension LifecycleHarness {
    /// An action with no arguments (`lc_app_perform_simple`); for the others, `perform(_: lc_action_t)`.
    public struct Action: Sendable, Equatable {
        /// The `LC_ACTION_*` kind.
        public let kind: lc_action_kind
        public init(kind: lc_action_kind) { self.kind = kind }
        public static let launch = Action(kind: lc_action_kind(LC_ACTION_LAUNCH))
        public static let launchInBackground = Action(kind: lc_action_kind(LC_ACTION_LAUNCH_BACKGROUND))
        public static let interrupt = Action(kind: lc_action_kind(LC_ACTION_INTERRUPT))
        public static let dismiss = Action(kind: lc_action_kind(LC_ACTION_DISMISS))
        public static let accept = Action(kind: lc_action_kind(LC_ACTION_ACCEPT))
        public static let home = Action(kind: lc_action_kind(LC_ACTION_HOME))
        public static let foreground = Action(kind: lc_action_kind(LC_ACTION_FOREGROUND))
        public static let lock = Action(kind: lc_action_kind(LC_ACTION_LOCK))
        public static let unlock = Action(kind: lc_action_kind(LC_ACTION_UNLOCK))
        /// A memory warning at level "warning".
        public static let memoryWarning = Action(kind: lc_action_kind(LC_ACTION_MEMORY_WARNING))
        public static let timeChange = Action(kind: lc_action_kind(LC_ACTION_TIME_CHANGE))
        /// A background fetch (the harness needs `LC_BACKGROUND_FETCH` in `Options.backgroundModes`).
        public static let fetch = Action(kind: lc_action_kind(LC_ACTION_FETCH))
        public static let remoteNotification = Action(kind: lc_action_kind(LC_ACTION_REMOTE_NOTIFICATION))
        public static let terminate = Action(kind: lc_action_kind(LC_ACTION_TERMINATE))
        public static let purge = Action(kind: lc_action_kind(LC_ACTION_PURGE))
    }

    /// The application's state.
    public struct AppState: Sendable, Equatable, CustomStringConvertible {
        /// The `LC_STATE_*` value.
        public let rawValue: lc_state
        public init(rawValue: lc_state) { self.rawValue = rawValue }
        public static let notRunning = AppState(rawValue: lc_state(LC_STATE_NOT_RUNNING))
        public static let inactive = AppState(rawValue: lc_state(LC_STATE_INACTIVE))
        public static let active = AppState(rawValue: lc_state(LC_STATE_ACTIVE))
        public static let background = AppState(rawValue: lc_state(LC_STATE_BACKGROUND))
        public static let suspended = AppState(rawValue: lc_state(LC_STATE_SUSPENDED))
        /// "not-running", "inactive", …, as traces spell it.
        public var description: String { String(cString: lc_state_name(rawValue)) }
    }

    /// A recorded trace event (`lc_trace_event_t`), copied.
    public struct Event: Sendable, Equatable, CustomStringConvertible {
        /// Seconds on the application's clock when it was recorded.
        public let time: Double
        public let kind: String
        public let name: String
        /// The application's state after it.
        public let state: AppState
        public let observer: String?
        public let detail: String?
        public let scene: String?

        init(_ event: lc_trace_event_t) {
            time = event.time
            kind = event.kind.map { String(cString: $0) } ?? ""
            name = event.name.map { String(cString: $0) } ?? ""
            state = AppState(rawValue: event.state)
            observer = event.observer.map { String(cString: $0) }
            detail = event.detail.map { String(cString: $0) }
            scene = event.scene.map { String(cString: $0) }
        }

        /// The compact form of traces: `kind name [observer] {scene} (detail)`, empty parts left out.
        public var description: String {
            var text = "\(kind) \(name)"
            if let observer, !observer.isEmpty { text += " [\(observer)]" }
            if let scene, !scene.isEmpty { text += " {\(scene)}" }
            if let detail, !detail.isEmpty { text += " (\(detail))" }
            return text
        }
    }
}
