import AppLifecycle

/// One legal sequence of the life cycle that `validate` takes a plugin through, in a process of its
/// own (`ValidationStep`): the steps are scenario lines, plus two of validate's own.
struct ValidationSequence: Sendable {
    enum Step: Sendable, CustomStringConvertible {
        /// A scenario line (`docs/host.md`, "Scenario files").
        case line(String)
        /// Lets the loop run until the application is suspended (a background task may hold it).
        case awaitSuspended
        /// Posts each name the plugin observes that only a post delivers (not one of the engine's
        /// sequences), once without and once with a userInfo.
        case postObserved

        var description: String {
            switch self {
            case .line(let text): return text
            case .awaitSuspended: return "(until suspended)"
            case .postObserved: return "post every name it observes"
            }
        }
    }

    /// The check's id is `sequence:` and this.
    let id: String
    let steps: [Step]
    /// Run in a scene-based application (`--scenes`); only for a plugin with scene methods or observers.
    var scenes = false
    /// Run with a state-preservation archive folder.
    var archive = false

    var checkID: String { "sequence:\(id)" }
    var summary: String { steps.isEmpty ? "load, then unload" : steps.map(\.description).joined(separator: "; ") }

    private init(_ id: String, _ lines: [String], scenes: Bool = false, archive: Bool = false) {
        self.id = id
        steps = lines.map { line in
            switch line {
            case "(until suspended)": return .awaitSuspended
            case "(post observed)": return .postObserved
            default: return .line(line)
            }
        }
        self.scenes = scenes
        self.archive = archive
    }

    /// Loads and unloads the plugin only: what it observes and implements (the first step, always).
    static let describe = ValidationSequence("describe", [])

    /// Every sequence, in the order they run. Each ends with the application not running, and is
    /// legal whatever the plugin does (a background task it holds only delays a suspension).
    static let all: [ValidationSequence] = [
        ValidationSequence("launch", ["launch source=validate", "terminate"]),
        ValidationSequence("launch-background", ["launch background", "(until suspended)", "terminate"]),
        ValidationSequence("home-and-return", ["launch", "home", "foreground", "home", "(until suspended)", "foreground", "terminate"]),
        ValidationSequence("lock-unlock", ["launch", "lock", "(until suspended)", "unlock", "lock", "unlock", "terminate"]),
        ValidationSequence("interruption", ["launch", "interrupt", "dismiss", "interrupt", "accept", "(until suspended)", "foreground", "terminate"]),
        ValidationSequence("memory-warning", ["launch", "memory-warning normal", "memory-warning warning", "memory-warning critical", "terminate"]),
        ValidationSequence("time-change", ["launch", "time-change", "home", "(until suspended)", "time-change", "time-change", "foreground", "terminate"]),
        ValidationSequence("device-state", ["launch", "low-power on", "thermal serious", "home", "(until suspended)", "low-power off",
                                            "thermal critical", "foreground", "thermal nominal", "terminate"]),
        ValidationSequence("terminate-background", ["launch", "home", "terminate"]),
        ValidationSequence("terminate-suspended", ["launch", "home", "(until suspended)", "terminate"]),
        ValidationSequence("purge", ["launch", "home", "(until suspended)", "purge"]),
        ValidationSequence("open-url", ["open-url app://validate/1 source=com.example.validate", "home", "(until suspended)",
                                        "open-url app://validate/2", "terminate"]),
        ValidationSequence("fetch", ["fetch", "(until suspended)", "fetch", "(until suspended)", "foreground", "terminate"]),
        ValidationSequence("remote-notification", ["remote-notification badge=3 alert=validate", "(until suspended)",
                                                   "remote-notification", "terminate"]),
        ValidationSequence("url-session", ["url-session com.example.validate", "(until suspended)", "url-session com.example.validate",
                                           "terminate"]),
        ValidationSequence("handoff", ["launch", "continue-activity com.example.validate title=Draft doc=7",
                                       "update-activity com.example.validate title=Draft", "continue-activity com.example.validate error=offline",
                                       "terminate"]),
        ValidationSequence("restoration", ["launch", "home", "(until suspended)", "terminate", "launch", "terminate"], archive: true),
        ValidationSequence("notifications", ["launch", "(post observed)", "terminate"]),
        ValidationSequence("scenes", ["launch", "scene connect side", "scene background side", "open-url app://validate/3 scene=side",
                                      "continue-activity com.example.validate scene=main title=Draft", "scene deactivate main",
                                      "scene activate main", "home", "(until suspended)", "foreground", "scene background side",
                                      "scene disconnect side", "scene connect third background", "scene discard third",
                                      "terminate"], scenes: true),
    ]

    /// The sequence with this id (`describe` included).
    static func named(_ id: String) -> ValidationSequence? {
        id == describe.id ? describe : all.first { $0.id == id }
    }

    /// The notifications the engine's own sequences post (a plugin observing only these has nothing
    /// for `postObserved` to post).
    static let postedBySequences: Set<NotificationName> = [
        .didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground, .willEnterForeground, .willTerminate,
        .didReceiveMemoryWarning, .significantTimeChange, .protectedDataWillBecomeUnavailable, .protectedDataDidBecomeAvailable,
        .sceneWillConnect, .sceneDidDisconnect, .sceneDidActivate, .sceneWillDeactivate, .sceneWillEnterForeground, .sceneDidEnterBackground,
        .powerStateDidChange, .thermalStateDidChange,
    ]

    /// The scene notifications (a plugin observing one of them is taken through `scenes`).
    static let sceneNames: Set<NotificationName> = [
        .sceneWillConnect, .sceneDidDisconnect, .sceneDidActivate, .sceneWillDeactivate, .sceneWillEnterForeground, .sceneDidEnterBackground,
    ]
}
