/// An input the system produces: launch, Home, lock, a memory warning, … Pass it to `Application.perform`.
///
/// A struct with static factories (it can grow without breaking callers).
public struct Action: Sendable, CustomStringConvertible {
    enum Kind: Sendable {
        case launch(options: UserInfo, inBackground: Bool, scene: String?)
        case beginInterruption, dismissInterruption, acceptInterruption
        case home, foreground, lock, unlock
        case memoryWarning(MemoryWarningLevel)
        case significantTimeChange
        case powerState(lowPower: Bool)
        case thermalState(ThermalState)
        case openURL(url: String, sourceApplication: String?, annotation: UserInfoValue?, scene: String?)
        case backgroundFetch
        case urlSessionEvents(String)
        case remoteNotification(UserInfo)
        case openRemoteNotification(UserInfo)
        case localNotification(UserInfo, opened: Bool)
        case remoteRegistration(token: String?, error: String?)
        case terminate, purge
        case scene(SceneOperation)
        case continueUserActivity(UserActivity, scene: String?, error: String?)
        case updateUserActivity(UserActivity, scene: String?)
    }

    /// What a scene action does to the scene it names.
    enum SceneOperation: Sendable {
        case connect(String, inBackground: Bool)
        case activate(String), deactivate(String), background(String), foreground(String), disconnect(String), discard(String)
        case close(String)

        var id: String {
            switch self {
            case .connect(let id, _), .activate(let id), .deactivate(let id), .background(let id), .foreground(let id),
                 .disconnect(let id), .discard(let id), .close(let id): return id
            }
        }

        var verb: String {
            switch self {
            case .connect: return "connect"
            case .activate: return "activate"
            case .deactivate: return "deactivate"
            case .background: return "background"
            case .foreground: return "foreground"
            case .disconnect: return "disconnect"
            case .discard: return "discard"
            case .close: return "close"
            }
        }
    }

    let kind: Kind

    /// Launch into the foreground (state inactive during launch, then active) or into the background.
    public static func launch(options: UserInfo = UserInfo(), inBackground: Bool = false) -> Action {
        Action(kind: .launch(options: options, inBackground: inBackground, scene: nil))
    }
    /// Launch a scene-based application, connecting the scene `scene` (nil: the manifest's default,
    /// `main`) into the foreground, or into the background for a launch into the background.
    public static func launch(options: UserInfo = UserInfo(), inBackground: Bool = false, scene: String?) -> Action {
        Action(kind: .launch(options: options, inBackground: inBackground, scene: scene))
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
    /// Low Power Mode turns on or off (Apple: `ProcessInfo.isLowPowerModeEnabled`). The device's state:
    /// legal in every state. A change posts `powerStateDidChange` to a running application (queued,
    /// coalesced, while it is suspended; nothing while it is not running); the same value again does
    /// nothing.
    public static func powerState(lowPower: Bool) -> Action { Action(kind: .powerState(lowPower: lowPower)) }
    /// The device's thermal state changes (Apple: `ProcessInfo.thermalState`). As `powerState`:
    /// legal in every state; a change posts `thermalStateDidChange`; the same value again does nothing.
    public static func thermalState(_ state: ThermalState) -> Action { Action(kind: .thermalState(state)) }
    /// A request to open a URL (launching the application if it is not running).
    public static func openURL(_ url: String, sourceApplication: String? = nil, annotation: UserInfoValue? = nil) -> Action {
        Action(kind: .openURL(url: url, sourceApplication: sourceApplication, annotation: annotation, scene: nil))
    }
    /// A request to open a URL in the scene `scene` of a scene-based application (nil: the frontmost
    /// scene, or the default one).
    public static func openURL(_ url: String, sourceApplication: String? = nil, annotation: UserInfoValue? = nil,
                               scene: String?) -> Action
    {
        Action(kind: .openURL(url: url, sourceApplication: sourceApplication, annotation: annotation, scene: scene))
    }
    /// A background fetch opportunity (needs the `fetch` background mode).
    public static let backgroundFetch = Action(kind: .backgroundFetch)
    /// The transfers of the background URL session `identifier` finished (or need the application):
    /// the system launches or wakes the application in the background and calls
    /// `application:handleEventsForBackgroundURLSession:completionHandler:` (seed 002; docs/lifecycle.md,
    /// decision 55). Needs no background mode; delivered only outside the foreground.
    public static func urlSessionEvents(_ identifier: String) -> Action { Action(kind: .urlSessionEvents(identifier)) }
    /// A remote (push) notification with its payload.
    public static func remoteNotification(_ payload: UserInfo = UserInfo()) -> Action { Action(kind: .remoteNotification(payload)) }
    /// The user opens the application from a remote notification's alert: it comes to the foreground
    /// (launched if not running, the payload in launch option `remoteNotification`) and the delegates are
    /// told again which notification it was (seed 002: "the system calls this method again";
    /// docs/lifecycle.md, decision 51).
    public static func openRemoteNotification(_ payload: UserInfo = UserInfo()) -> Action { Action(kind: .openRemoteNotification(payload)) }
    /// A local notification fires (`opened`: the user opens the application from its alert):
    /// `application:didReceiveLocalNotification:` in the foreground; in the background only when
    /// opened (docs/lifecycle.md, decision 54).
    public static func localNotification(_ userInfo: UserInfo = UserInfo(), opened: Bool = false) -> Action {
        Action(kind: .localNotification(userInfo, opened: opened))
    }
    /// The answer to the application's remote-notification registration: the device token (hexadecimal),
    /// or the error (decision 54).
    public static func remoteRegistration(token: String) -> Action { Action(kind: .remoteRegistration(token: token, error: nil)) }
    public static func remoteRegistration(error: String) -> Action { Action(kind: .remoteRegistration(token: nil, error: error)) }
    /// The system terminates the application.
    public static let terminate = Action(kind: .terminate)
    /// Memory pressure purges an application in the background: a suspended one without notice; one
    /// running in the background after `applicationWillTerminate:` (seed 000, decision 49).
    public static let purge = Action(kind: .purge)

    // Scenes (Apple, "Managing your app's life cycle"): scene-based applications only.

    /// The user (foreground) or the system (`inBackground`) asks for a new scene `id`.
    public static func connectScene(_ id: String, inBackground: Bool = false) -> Action {
        Action(kind: .scene(.connect(id, inBackground: inBackground)))
    }
    /// A foreground-inactive scene becomes foreground-active.
    public static func activateScene(_ id: String) -> Action { Action(kind: .scene(.activate(id))) }
    /// A foreground-active scene becomes foreground-inactive.
    public static func deactivateScene(_ id: String) -> Action { Action(kind: .scene(.deactivate(id))) }
    /// A foreground scene moves to the background (the user dismisses its UI).
    public static func moveSceneToBackground(_ id: String) -> Action { Action(kind: .scene(.background(id))) }
    /// A background or suspended scene comes back to the foreground and becomes active.
    public static func bringSceneToForeground(_ id: String) -> Action { Action(kind: .scene(.foreground(id))) }
    /// The system disconnects a background or suspended scene; its session stays.
    public static func disconnectScene(_ id: String) -> Action { Action(kind: .scene(.disconnect(id))) }
    /// The user closes the scene in the app switcher: disconnected if connected, then its session is
    /// discarded (`application:didDiscardSceneSessions:`, at the next launch if not running).
    public static func discardSceneSession(_ id: String) -> Action { Action(kind: .scene(.discard(id))) }
    /// The user swipes a foreground scene away in the app switcher: deactivated if active, disconnected
    /// without entering the background, its session discarded; the last scene's close ends the
    /// application (docs/lifecycle.md, decision 52).
    public static func closeScene(_ id: String) -> Action { Action(kind: .scene(.close(id))) }

    // Handoff (Apple, "Managing your app's life cycle").

    /// Handoff continues `activity` (launching or resuming the application), in the scene `scene` of
    /// a scene-based application (nil: the frontmost, or the default one).
    public static func continueUserActivity(_ activity: UserActivity, scene: String? = nil) -> Action {
        Action(kind: .continueUserActivity(activity, scene: scene, error: nil))
    }
    /// Handoff fails to continue an activity of `activityType`: `error` says why.
    public static func failToContinueUserActivity(type activityType: String, error: String, scene: String? = nil) -> Action {
        Action(kind: .continueUserActivity(UserActivity(activityType: activityType), scene: scene, error: error))
    }
    /// The current activity of the application (or of a scene) was updated.
    public static func updateUserActivity(_ activity: UserActivity, scene: String? = nil) -> Action {
        Action(kind: .updateUserActivity(activity, scene: scene))
    }

    /// The scene the action is for, if it names one (the `scene` field of its trace event).
    public var sceneID: String? {
        switch kind {
        case .launch(_, _, let scene), .openURL(_, _, _, let scene), .continueUserActivity(_, let scene, _),
             .updateUserActivity(_, let scene): return scene
        case .scene(let operation): return operation.id
        default: return nil
        }
    }

    /// Whether performing it on an application that is not running launches it (a launch, a URL, a
    /// fetch, a URL session's events, a push, the user opening a notification, Handoff).
    public var launchesApplication: Bool {
        switch kind {
        case .launch, .openURL, .backgroundFetch, .urlSessionEvents, .remoteNotification, .openRemoteNotification,
             .continueUserActivity: return true
        case .localNotification(_, let opened): return opened
        default: return false
        }
    }

    /// Whether performing this in `state` would run the application in the background (a launch
    /// into the background, or a wake from not running or suspended).
    func entersBackgroundFrom(_ state: ApplicationState) -> Bool {
        switch kind {
        case .launch(_, let inBackground, _): return inBackground
        case .backgroundFetch, .urlSessionEvents, .remoteNotification: return state == .notRunning || state == .suspended
        default: return false
        }
    }

    /// The action's name as scenario files and errors spell it.
    public var name: String {
        switch kind {
        case .launch(_, let background, _): return background ? "launch background" : "launch"
        case .beginInterruption: return "interrupt"
        case .dismissInterruption: return "dismiss"
        case .acceptInterruption: return "accept"
        case .home: return "home"
        case .foreground: return "foreground"
        case .lock: return "lock"
        case .unlock: return "unlock"
        case .memoryWarning: return "memory-warning"
        case .significantTimeChange: return "time-change"
        case .powerState: return "low-power"
        case .thermalState: return "thermal"
        case .openURL: return "open-url"
        case .backgroundFetch: return "fetch"
        case .urlSessionEvents: return "url-session"
        case .remoteNotification: return "remote-notification"
        case .openRemoteNotification: return "open-notification"
        case .localNotification: return "local-notification"
        case .remoteRegistration: return "remote-registration"
        case .terminate: return "terminate"
        case .purge: return "purge"
        case .scene(let operation): return "scene \(operation.verb)"
        case .continueUserActivity: return "continue-activity"
        case .updateUserActivity: return "update-activity"
        }
    }

    /// The detail of the action's trace event: its options, level, URL or payload.
    var traceDetail: String? {
        switch kind {
        case .launch(let options, _, _): return options.isEmpty ? nil : options.description
        case .memoryWarning(let level): return level.rawValue
        case .powerState(let lowPower): return lowPower ? "on" : "off"
        case .thermalState(let thermal): return thermal.description
        case .openURL(let url, let source, _, _): return source.map { "\(url) from \($0)" } ?? url
        case .scene(.connect(_, true)): return "background"
        case .continueUserActivity(let activity, _, let error):
            return error.map { "\(activity.activityType), failed: \($0)" } ?? activity.description
        case .updateUserActivity(let activity, _): return activity.description
        case .remoteNotification(let payload), .openRemoteNotification(let payload): return payload.isEmpty ? nil : payload.description
        case .localNotification(let info, let opened):
            let text = info.isEmpty ? nil : info.description
            return opened ? ["opened", text].compactMap { $0 }.joined(separator: " ") : text
        case .urlSessionEvents(let identifier): return identifier
        case .remoteRegistration(let token, let error): return token.map { "token \($0)" } ?? error.map { "error: \($0)" }
        default: return nil
        }
    }

    public var description: String {
        switch kind {
        case .launch(let options, _, let scene):
            var text = options.isEmpty ? name : "\(name) \(options)"
            if let scene { text += " scene=\(scene)" }
            return text
        case .memoryWarning(let level): return "\(name) \(level)"
        case .powerState(let lowPower): return "\(name) \(lowPower ? "on" : "off")"
        case .thermalState(let thermal): return "\(name) \(thermal)"
        case .openURL(let url, let source, _, let scene):
            var text = source.map { "\(name) \(url) source=\($0)" } ?? "\(name) \(url)"
            if let scene { text += " scene=\(scene)" }
            return text
        case .scene(let operation):
            if case .connect(let id, true) = operation { return "\(name) \(id) background" }
            return "\(name) \(operation.id)"
        case .continueUserActivity(let activity, let scene, let error):
            var text = "\(name) \(activity.activityType)"
            if let scene { text += " scene=\(scene)" }
            if let error { text += " error=\(error)" }
            return activity.userInfo.isEmpty ? text : "\(text) \(activity.userInfo)"
        case .updateUserActivity(let activity, let scene):
            let text = scene.map { "\(name) \(activity.activityType) scene=\($0)" } ?? "\(name) \(activity.activityType)"
            return activity.userInfo.isEmpty ? text : "\(text) \(activity.userInfo)"
        case .remoteNotification(let payload), .openRemoteNotification(let payload): return payload.isEmpty ? name : "\(name) \(payload)"
        case .localNotification(let info, let opened):
            let text = opened ? "\(name) open" : name
            return info.isEmpty ? text : "\(text) \(info)"
        case .remoteRegistration(let token, let error): return token.map { "\(name) token=\($0)" } ?? "\(name) error=\(error ?? "")"
        case .urlSessionEvents(let identifier): return "\(name) \(identifier)"
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

/// Keys of the launch-options dictionary (and of didFinishLaunching's userInfo): the nine of `UIApplicationDelegate`,
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
    /// The Handoff activity that launched the application (dict: `UserActivity.dictionary`; Apple's "Managing your app's life cycle",
    /// `UIApplicationLaunchOptionsUserActivityDictionaryKey`). Set by `continue-activity`.
    public static let userActivityDictionary = "userActivityDictionary"
    /// The type of that activity (string; `UIApplicationLaunchOptionsUserActivityTypeKey`).
    public static let userActivityType = "userActivityType"

    /// Every key, in `UIApplicationDelegate`'s order.
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
