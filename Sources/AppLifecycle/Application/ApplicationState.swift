/// The five states of an iOS application.
///
/// A closed set, as on iOS: the engine never adds a state.
public enum ApplicationState: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// No process, or purged. Nothing is delivered.
    case notRunning = "not-running"
    /// In the foreground, not receiving input: a brief stop between states, or held by an interruption.
    case inactive
    /// In the foreground and receiving input.
    case active
    /// Off-screen and running for a limited time.
    case background
    /// Frozen in memory; runs no code; may be purged without notice.
    case suspended

    public var description: String { rawValue }

    /// Whether code runs in this state (observers may be called).
    public var isRunning: Bool { self == .inactive || self == .active || self == .background }

    /// Whether the application is on screen.
    public var isForeground: Bool { self == .inactive || self == .active }

    /// Parses the names used by scenario files and traces (`not-running`, `notRunning`, `active`, …).
    public init?(name: String) {
        switch name {
        case "not-running", "notRunning", "not_running": self = .notRunning
        default: self.init(rawValue: name)
        }
    }
}

extension ApplicationState {
    /// The state as a small number (its place in `allCases`), for storage in an atomic byte
    /// (a lane of `Application`'s `LoopBoundBytes`).
    var word: UInt8 {
        switch self {
        case .notRunning: 0
        case .inactive: 1
        case .active: 2
        case .background: 3
        case .suspended: 4
        }
    }

    /// The state `word` names (only the engine's own words reach it).
    static func fromWord(_ word: UInt8) -> ApplicationState {
        switch word {
        case 0: .notRunning
        case 1: .inactive
        case 2: .active
        case 3: .background
        default: .suspended
        }
    }
}
