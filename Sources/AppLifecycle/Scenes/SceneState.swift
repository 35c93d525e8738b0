/// The five states of a scene (Apple's "Managing your app's life cycle", `UIScene.ActivationState` plus the suspended state of the
/// life-cycle figure).
///
/// `unattached → foreground-inactive ↔ foreground-active → background → suspended → unattached`: a
/// scene is disconnected (back to unattached) from the background or while suspended.
public enum SceneState: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Not connected to the application (before `scene:willConnectToSession:options:`, after
    /// `sceneDidDisconnect:`).
    case unattached
    /// On screen, not receiving input.
    case foregroundInactive = "foreground-inactive"
    /// On screen and receiving input.
    case foregroundActive = "foreground-active"
    /// Off screen, running.
    case background
    /// Off screen, running no code.
    case suspended

    public var description: String { rawValue }

    /// Whether the scene is on screen.
    public var isForeground: Bool { self == .foregroundInactive || self == .foregroundActive }

    /// Parses the names used by scenario files and traces (`foreground-active`, `foregroundActive`, …).
    public init?(name: String) {
        switch name {
        case "foregroundInactive", "foreground_inactive": self = .foregroundInactive
        case "foregroundActive", "foreground_active": self = .foregroundActive
        default: self.init(rawValue: name)
        }
    }
}

/// How many scenes are in each state. [value]
struct SceneStateCounts {
    private var counts = (unattached: 0, foregroundInactive: 0, foregroundActive: 0, background: 0, suspended: 0)

    subscript(state: SceneState) -> Int {
        get {
            switch state {
            case .unattached: counts.unattached
            case .foregroundInactive: counts.foregroundInactive
            case .foregroundActive: counts.foregroundActive
            case .background: counts.background
            case .suspended: counts.suspended
            }
        }
        set {
            switch state {
            case .unattached: counts.unattached = newValue
            case .foregroundInactive: counts.foregroundInactive = newValue
            case .foregroundActive: counts.foregroundActive = newValue
            case .background: counts.background = newValue
            case .suspended: counts.suspended = newValue
            }
        }
    }

    /// Scenes in the foreground (inactive or active).
    var foreground: Int { counts.foregroundInactive + counts.foregroundActive }
}
