/// An input the system produces: launch, Home, lock, a memory warning, … Pass it to `Application.perform`.
///
/// A struct with static factories (it can grow without breaking callers).
public struct Action: Sendable, CustomStringConvertible {
    enum Kind: Sendable {
        case launch(options: UserInfo, inBackground: Bool)
        case beginInterruption, dismissInterruption, acceptInterruption
        case home, foreground, lock, unlock
        case memoryWarning(MemoryWarningLevel)
        case significantTimeChange
        case openURL(url: String, sourceApplication: String?, annotation: UserInfoValue?)
        case backgroundFetch
        case remoteNotification(UserInfo)
        case terminate, purge
    }

    let kind: Kind

    /// Launch into the foreground (state inactive during launch, then active) or into the background.
    public static func launch(options: UserInfo = UserInfo(), inBackground: Bool = false) -> Action {
        Action(kind: .launch(options: options, inBackground: inBackground))
    }
    /// An alert-based interruption begins (call, SMS, notification center pulled down).
    public static let beginInterruption = Action(kind: .beginInterruption)
    /// The user dismisses the interruption: back to active.
    public static let dismissInterruption = Action(kind: .dismissInterruption)
    /// The user takes the interruption (answers the call): the application goes to the background.
    public static let acceptInterruption = Action(kind: .acceptInterruption)
    /// The Home button, or a switch to another application.
    public static let home = Action(kind: .home)
    /// The user returns to the application.
    public static let foreground = Action(kind: .foreground)
    /// The Sleep/Wake button locks the device.
    public static let lock = Action(kind: .lock)
    /// The device is unlocked.
    public static let unlock = Action(kind: .unlock)
    /// A memory warning at a level.
    public static func memoryWarning(_ level: MemoryWarningLevel = .warning) -> Action { Action(kind: .memoryWarning(level)) }
    /// A significant time change (midnight, carrier time update, DST, a clock step).
    public static let significantTimeChange = Action(kind: .significantTimeChange)
    /// A request to open a URL (launching the application if it is not running).
    public static func openURL(_ url: String, sourceApplication: String? = nil, annotation: UserInfoValue? = nil) -> Action {
        Action(kind: .openURL(url: url, sourceApplication: sourceApplication, annotation: annotation))
    }
    /// A background fetch opportunity (needs the `fetch` background mode).
    public static let backgroundFetch = Action(kind: .backgroundFetch)
    /// A remote (push) notification with its payload.
    public static func remoteNotification(_ payload: UserInfo = UserInfo()) -> Action { Action(kind: .remoteNotification(payload)) }
    /// The system terminates the application.
    public static let terminate = Action(kind: .terminate)
    /// Memory pressure purges the suspended application, without notice.
    public static let purge = Action(kind: .purge)

    /// Whether performing this in `state` would run the application in the background (a launch
    /// into the background, or a wake from not running or suspended).
    func entersBackgroundFrom(_ state: ApplicationState) -> Bool {
        switch kind {
        case .launch(_, let inBackground): return inBackground
        case .backgroundFetch, .remoteNotification: return state == .notRunning || state == .suspended
        default: return false
        }
    }

    /// The action's name as scenario files and errors spell it.
    public var name: String {
        switch kind {
        case .launch(_, let background): return background ? "launch background" : "launch"
        case .beginInterruption: return "interrupt"
        case .dismissInterruption: return "dismiss"
        case .acceptInterruption: return "accept"
        case .home: return "home"
        case .foreground: return "foreground"
        case .lock: return "lock"
        case .unlock: return "unlock"
        case .memoryWarning: return "memory-warning"
        case .significantTimeChange: return "time-change"
        case .openURL: return "open-url"
        case .backgroundFetch: return "fetch"
        case .remoteNotification: return "remote-notification"
        case .terminate: return "terminate"
        case .purge: return "purge"
        }
    }

    /// The detail of the action's trace event: its options, level, URL or payload.
    var traceDetail: String? {
        switch kind {
        case .launch(let options, _): return options.isEmpty ? nil : options.description
        case .memoryWarning(let level): return level.rawValue
        case .openURL(let url, let source, _): return source.map { "\(url) from \($0)" } ?? url
        case .remoteNotification(let payload): return payload.isEmpty ? nil : payload.description
        default: return nil
        }
    }

    public var description: String {
        switch kind {
        case .launch(let options, _): return options.isEmpty ? name : "\(name) \(options)"
        case .memoryWarning(let level): return "\(name) \(level)"
        case .openURL(let url, let source, _): return source.map { "\(name) \(url) source=\($0)" } ?? "\(name) \(url)"
        case .remoteNotification(let payload): return payload.isEmpty ? name : "\(name) \(payload)"
        default: return name
        }
    }
}

/// How severe a memory warning is; delivered in the notification's userInfo under `level`.
public enum MemoryWarningLevel: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case normal, warning, critical
    public var description: String { rawValue }
}

/// The result a fetch or remote-notification handler reports (`UIBackgroundFetchResult`).
public enum FetchResult: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case newData, noData, failed
    public var description: String { rawValue }
}

/// Keys of the launch-options dictionary (and of didFinishLaunching's userInfo): the nine of seed 002,
/// by the short name (UIKit's `UIApplicationLaunchOptions…Key` without prefix and suffix). The engine
/// itself sets `url`, `sourceApplication`, `annotation` (open-url) and `remoteNotification`; the others
/// come with a launch that passes them (e.g. the host's `launch location=true`).
public enum LaunchOptionsKey {
    /// The URL to open (string).
    public static let url = "url"
    /// The bundle id of the application that asked to open the URL (string).
    public static let sourceApplication = "sourceApplication"
    /// The annotation the source application attached to the URL (any value).
    public static let annotation = "annotation"
    /// The payload of the remote notification that launched the application (dict).
    public static let remoteNotification = "remoteNotification"
    /// The local notification that launched the application (dict: its userInfo).
    public static let localNotification = "localNotification"
    /// Launched for an incoming location event (bool).
    public static let location = "location"
    /// Identifiers of newly downloaded Newsstand assets (list of strings).
    public static let newsstandDownloads = "newsstandDownloads"
    /// Restoration identifiers of the central managers to restore (list of strings).
    public static let bluetoothCentrals = "bluetoothCentrals"
    /// Restoration identifiers of the peripheral managers to restore (list of strings).
    public static let bluetoothPeripherals = "bluetoothPeripherals"

    /// Every key, in seed 002's order.
    public static let all = [url, sourceApplication, remoteNotification, annotation, localNotification, location,
                             newsstandDownloads, bluetoothCentrals, bluetoothPeripherals]
}

/// Keys of the options dictionary of `application:openURL:options:` (UIKit's
/// `UIApplicationOpenURLOptions…Key`, by the short name). Absent when the request has no such value.
public enum OpenURLOptionsKey {
    /// The bundle id of the application that asked to open the URL (string).
    public static let sourceApplication = "sourceApplication"
    /// The annotation the source application attached to the URL (any value).
    public static let annotation = "annotation"
}
