/// A delegate method, named by its Objective-C selector as in `UIApplicationDelegate`'s reference (traces and errors use it).
public struct DelegateMethod: Hashable, Sendable, CustomStringConvertible {
    public let selector: String
    /// The selector's index among the process's callback labels (`CallbackLabels`), interned when the
    /// method is made: a call marks the callback probe with it, hashing nothing. A function of
    /// `selector`, so equality and hashing are the selector's.
    let label: UInt32
    public init(selector: String) {
        self.selector = selector
        label = CallbackLabels.intern(selector)
    }

    /// A standard method: its label is its fixed index among `CallbackLabels.standard`, nothing is
    /// hashed or locked to make it (the first plugin load of a process makes all 45).
    init(selector: String, standard index: UInt32) {
        assert(CallbackLabels.standard[Int(index)] == selector, "\(selector) is not standard label \(index)")
        self.selector = selector
        label = index
    }
    public var description: String { selector }

    /// Whether the method's completion handler carries a result (`FetchResult`): false for a URL
    /// session's (Apple's `() -> Void`), whose completion the trace and reports name without one.
    public var completionCarriesResult: Bool { self != .handleEventsForBackgroundURLSession }

    public static let willFinishLaunching = DelegateMethod(selector: "application:willFinishLaunchingWithOptions:", standard: 0)
    public static let didFinishLaunching = DelegateMethod(selector: "application:didFinishLaunchingWithOptions:", standard: 1)
    public static let didBecomeActive = DelegateMethod(selector: "applicationDidBecomeActive:", standard: 2)
    public static let willResignActive = DelegateMethod(selector: "applicationWillResignActive:", standard: 3)
    public static let didEnterBackground = DelegateMethod(selector: "applicationDidEnterBackground:", standard: 4)
    public static let willEnterForeground = DelegateMethod(selector: "applicationWillEnterForeground:", standard: 5)
    public static let willTerminate = DelegateMethod(selector: "applicationWillTerminate:", standard: 6)
    public static let didReceiveMemoryWarning = DelegateMethod(selector: "applicationDidReceiveMemoryWarning:", standard: 7)
    public static let significantTimeChange = DelegateMethod(selector: "applicationSignificantTimeChange:", standard: 8)
    public static let protectedDataWillBecomeUnavailable = DelegateMethod(selector: "applicationProtectedDataWillBecomeUnavailable:", standard: 9)
    public static let protectedDataDidBecomeAvailable = DelegateMethod(selector: "applicationProtectedDataDidBecomeAvailable:", standard: 10)
    public static let openURL = DelegateMethod(selector: "application:openURL:sourceApplication:annotation:", standard: 11)
    /// The newer form (`application(_:open:options:)`); called instead of `openURL` when implemented.
    public static let openURLWithOptions = DelegateMethod(selector: "application:openURL:options:", standard: 12)
    public static let performFetch = DelegateMethod(selector: "application:performFetchWithCompletionHandler:", standard: 13)
    public static let didReceiveRemoteNotificationWithCompletion =
        DelegateMethod(selector: "application:didReceiveRemoteNotification:fetchCompletionHandler:", standard: 14)
    public static let didReceiveRemoteNotification = DelegateMethod(selector: "application:didReceiveRemoteNotification:", standard: 15)
    public static let shouldSaveApplicationState = DelegateMethod(selector: "application:shouldSaveApplicationState:", standard: 16)
    public static let shouldRestoreApplicationState = DelegateMethod(selector: "application:shouldRestoreApplicationState:", standard: 17)
    public static let willEncodeRestorableState = DelegateMethod(selector: "application:willEncodeRestorableStateWithCoder:", standard: 18)
    public static let didDecodeRestorableState = DelegateMethod(selector: "application:didDecodeRestorableStateWithCoder:", standard: 19)
    /// Scenes (Apple, "Managing your app's life cycle"): the configuration for a connecting scene, and sessions the user discarded.
    public static let configurationForConnecting = DelegateMethod(selector: "application:configurationForConnectingSceneSession:options:", standard: 20)
    public static let didDiscardSceneSessions = DelegateMethod(selector: "application:didDiscardSceneSessions:", standard: 21)
    /// Handoff (Apple, "Managing your app's life cycle"), in an application that is not scene-based.
    public static let willContinueUserActivity = DelegateMethod(selector: "application:willContinueUserActivityWithType:", standard: 22)
    public static let continueUserActivity = DelegateMethod(selector: "application:continueUserActivity:restorationHandler:", standard: 23)
    public static let didFailToContinueUserActivity =
        DelegateMethod(selector: "application:didFailToContinueUserActivityWithType:error:", standard: 24)
    public static let didUpdateUserActivity = DelegateMethod(selector: "application:didUpdateUserActivity:", standard: 25)
    /// The older methods seed 002 still describes (issue 20): the launch method without options, called
    /// instead of `didFinishLaunching` when that one is not implemented; the URL method without a
    /// source, called when neither `openURL` form is; a local notification; the answer to a
    /// remote-notification registration.
    public static let applicationDidFinishLaunching = DelegateMethod(selector: "applicationDidFinishLaunching:", standard: 26)
    public static let handleOpenURL = DelegateMethod(selector: "application:handleOpenURL:", standard: 27)
    public static let didReceiveLocalNotification = DelegateMethod(selector: "application:didReceiveLocalNotification:", standard: 28)
    public static let didRegisterForRemoteNotifications =
        DelegateMethod(selector: "application:didRegisterForRemoteNotificationsWithDeviceToken:", standard: 29)
    public static let didFailToRegisterForRemoteNotifications =
        DelegateMethod(selector: "application:didFailToRegisterForRemoteNotificationsWithError:", standard: 30)
    /// The events of a background URL session are waiting (seed 002; docs/lifecycle.md, decision 55).
    public static let handleEventsForBackgroundURLSession =
        DelegateMethod(selector: "application:handleEventsForBackgroundURLSession:completionHandler:", standard: 31)
}

/// The callbacks of one delegate. A nil handler is a method the delegate does not implement: it is
/// not called, not traced, and does not count when answers combine (see `Application`).
///
/// Build one directly to implement only some methods, or let `Application.addDelegate(_:id:)` build
/// it from an `ApplicationDelegate`. Every handler runs on the loop thread.
public struct DelegateHandlers {
    public var willFinishLaunching: ((Application, UserInfo) -> Bool)?
    public var didFinishLaunching: ((Application, UserInfo) -> Bool)?
    public var didBecomeActive: ((Application) -> Void)?
    public var willResignActive: ((Application) -> Void)?
    public var didEnterBackground: ((Application) -> Void)?
    public var willEnterForeground: ((Application) -> Void)?
    public var willTerminate: ((Application) -> Void)?
    public var didReceiveMemoryWarning: ((Application) -> Void)?
    public var significantTimeChange: ((Application) -> Void)?
    public var protectedDataWillBecomeUnavailable: ((Application) -> Void)?
    public var protectedDataDidBecomeAvailable: ((Application) -> Void)?
    public var openURL: ((Application, String, String?, UserInfoValue?) -> Bool)?
    public var performFetch: ((Application, FetchCompletionHandler) -> Void)?
    public var didReceiveRemoteNotificationWithCompletion: ((Application, UserInfo, FetchCompletionHandler) -> Void)?
    public var didReceiveRemoteNotification: ((Application, UserInfo) -> Void)?
    public var shouldSaveApplicationState: ((Application, StateArchive) -> Bool)?
    public var shouldRestoreApplicationState: ((Application, StateArchive) -> Bool)?
    public var willEncodeRestorableState: ((Application, StateArchive) -> Void)?
    public var didDecodeRestorableState: ((Application, StateArchive) -> Void)?
    /// `application:openURL:options:` (Apple, "Managing your app's life cycle"): the URL and its options (`OpenURLOptionsKey`). When
    /// set, it is called instead of `openURL` for this delegate.
    public var openURLWithOptions: ((Application, String, UserInfo) -> Bool)?
    /// `application:configurationForConnectingSceneSession:options:` (scene-based applications): the
    /// first delegate's answer names the session's configuration.
    public var configurationForConnecting: ((Application, SceneSession, SceneConnectionOptions) -> SceneConfiguration)?
    /// `application:didDiscardSceneSessions:`: sessions the user closed in the app switcher.
    public var didDiscardSceneSessions: ((Application, [SceneSession]) -> Void)?
    /// `application:willContinueUserActivityWithType:` (Handoff; the answer is not used by the engine).
    public var willContinueUserActivity: ((Application, String) -> Bool)?
    /// `application:continueUserActivity:restorationHandler:` (the restoration handler is not modelled).
    public var continueUserActivity: ((Application, UserActivity) -> Bool)?
    /// `application:didFailToContinueUserActivityWithType:error:`: the activity type and the error's message.
    public var didFailToContinueUserActivity: ((Application, String, String) -> Void)?
    /// `application:didUpdateUserActivity:`.
    public var didUpdateUserActivity: ((Application, UserActivity) -> Void)?
    /// `applicationDidFinishLaunching:` (the oldest launch method): called, with no options and no
    /// answer, only to a delegate that does not implement `didFinishLaunching`.
    public var applicationDidFinishLaunching: ((Application) -> Void)?
    /// `application:handleOpenURL:` (the oldest URL method): called only to a delegate implementing
    /// neither `openURL` form; the answer says whether it handled the URL.
    public var handleOpenURL: ((Application, String) -> Bool)?
    /// `application:didReceiveLocalNotification:`: a local notification's userInfo, when it fires while
    /// the application is in the foreground or the user opens the application from its alert.
    public var didReceiveLocalNotification: ((Application, UserInfo) -> Void)?
    /// `application:didRegisterForRemoteNotificationsWithDeviceToken:`: the device token, in hexadecimal.
    public var didRegisterForRemoteNotifications: ((Application, String) -> Void)?
    /// `application:didFailToRegisterForRemoteNotificationsWithError:`: the error's message.
    public var didFailToRegisterForRemoteNotifications: ((Application, String) -> Void)?
    /// `application:handleEventsForBackgroundURLSession:completionHandler:`: the events of the
    /// background URL session with this identifier are waiting. Call the handler once the events are
    /// processed; the application stays running in the background until then (within the
    /// completion budget).
    public var handleEventsForBackgroundURLSession: ((Application, String, URLSessionCompletionHandler) -> Void)?

    public init() {}

    /// The methods this table implements, in the order of this table's properties.
    public var implementedMethods: [DelegateMethod] {
        var methods: [DelegateMethod] = []
        func add(_ present: Bool, _ method: DelegateMethod) { if present { methods.append(method) } }
        add(willFinishLaunching != nil, .willFinishLaunching)
        add(didFinishLaunching != nil, .didFinishLaunching)
        add(didBecomeActive != nil, .didBecomeActive)
        add(willResignActive != nil, .willResignActive)
        add(didEnterBackground != nil, .didEnterBackground)
        add(willEnterForeground != nil, .willEnterForeground)
        add(willTerminate != nil, .willTerminate)
        add(didReceiveMemoryWarning != nil, .didReceiveMemoryWarning)
        add(significantTimeChange != nil, .significantTimeChange)
        add(protectedDataWillBecomeUnavailable != nil, .protectedDataWillBecomeUnavailable)
        add(protectedDataDidBecomeAvailable != nil, .protectedDataDidBecomeAvailable)
        add(openURL != nil, .openURL)
        add(performFetch != nil, .performFetch)
        add(didReceiveRemoteNotificationWithCompletion != nil, .didReceiveRemoteNotificationWithCompletion)
        add(didReceiveRemoteNotification != nil, .didReceiveRemoteNotification)
        add(shouldSaveApplicationState != nil, .shouldSaveApplicationState)
        add(shouldRestoreApplicationState != nil, .shouldRestoreApplicationState)
        add(willEncodeRestorableState != nil, .willEncodeRestorableState)
        add(didDecodeRestorableState != nil, .didDecodeRestorableState)
        add(openURLWithOptions != nil, .openURLWithOptions)
        add(configurationForConnecting != nil, .configurationForConnecting)
        add(didDiscardSceneSessions != nil, .didDiscardSceneSessions)
        add(willContinueUserActivity != nil, .willContinueUserActivity)
        add(continueUserActivity != nil, .continueUserActivity)
        add(didFailToContinueUserActivity != nil, .didFailToContinueUserActivity)
        add(didUpdateUserActivity != nil, .didUpdateUserActivity)
        add(applicationDidFinishLaunching != nil, .applicationDidFinishLaunching)
        add(handleOpenURL != nil, .handleOpenURL)
        add(didReceiveLocalNotification != nil, .didReceiveLocalNotification)
        add(didRegisterForRemoteNotifications != nil, .didRegisterForRemoteNotifications)
        add(didFailToRegisterForRemoteNotifications != nil, .didFailToRegisterForRemoteNotifications)
        add(handleEventsForBackgroundURLSession != nil, .handleEventsForBackgroundURLSession)
        return methods
    }
}

/// The application delegate, as on iOS (Apple, `UIApplicationDelegate`). Every method is optional: the defaults behave
/// exactly like an unimplemented method (launch methods answer true, openURL and the
/// state-preservation gates answer false, the rest do nothing).
///
/// To keep unimplemented methods out of the trace, implement `respondsTo(_:)` or use `DelegateHandlers`.
/// Every method is called on the loop thread.
public protocol ApplicationDelegate: AnyObject {
    /// Which methods to call; the default answers true for all.
    func respondsTo(_ method: DelegateMethod) -> Bool
    func application(_ application: Application, willFinishLaunchingWithOptions options: UserInfo) -> Bool
    func application(_ application: Application, didFinishLaunchingWithOptions options: UserInfo) -> Bool
    func applicationDidBecomeActive(_ application: Application)
    func applicationWillResignActive(_ application: Application)
    func applicationDidEnterBackground(_ application: Application)
    func applicationWillEnterForeground(_ application: Application)
    func applicationWillTerminate(_ application: Application)
    func applicationDidReceiveMemoryWarning(_ application: Application)
    func applicationSignificantTimeChange(_ application: Application)
    func applicationProtectedDataWillBecomeUnavailable(_ application: Application)
    func applicationProtectedDataDidBecomeAvailable(_ application: Application)
    func application(_ application: Application, open url: String, sourceApplication: String?, annotation: UserInfoValue?) -> Bool
    func application(_ application: Application, performFetchWithCompletionHandler completion: FetchCompletionHandler)
    func application(_ application: Application, didReceiveRemoteNotification userInfo: UserInfo,
                     fetchCompletionHandler completion: FetchCompletionHandler)
    func application(_ application: Application, didReceiveRemoteNotification userInfo: UserInfo)
    func application(_ application: Application, shouldSaveApplicationState coder: StateArchive) -> Bool
    func application(_ application: Application, shouldRestoreApplicationState coder: StateArchive) -> Bool
    func application(_ application: Application, willEncodeRestorableStateWith coder: StateArchive)
    func application(_ application: Application, didDecodeRestorableStateWith coder: StateArchive)
    /// `application:openURL:options:` (Apple, "Managing your app's life cycle"), called instead of the older
    /// `application(_:open:sourceApplication:annotation:)` when `respondsTo` admits it. The default
    /// forwards to the older method, so a delegate that implements only that one keeps working.
    func application(_ application: Application, open url: String, options: UserInfo) -> Bool
    /// The configuration of a connecting scene (scene-based applications only). Default: `.default`.
    func application(_ application: Application, configurationForConnecting session: SceneSession,
                     options: SceneConnectionOptions) -> SceneConfiguration
    /// Sessions the user discarded (scene-based applications only).
    func application(_ application: Application, didDiscardSceneSessions sessions: [SceneSession])
    /// Handoff is about to continue an activity of `activityType`. Default: false.
    func application(_ application: Application, willContinueUserActivityWithType activityType: String) -> Bool
    /// Continue `activity`; answer whether it was handled. Default: false.
    func application(_ application: Application, continue activity: UserActivity) -> Bool
    /// Handoff could not continue an activity of `activityType`; `error` says why.
    func application(_ application: Application, didFailToContinueUserActivityWithType activityType: String, error: String)
    /// The application's current activity was updated.
    func application(_ application: Application, didUpdate activity: UserActivity)
    /// A local notification fired while in the foreground, or the user opened the application from its alert.
    func application(_ application: Application, didReceiveLocalNotification userInfo: UserInfo)
    /// The remote-notification registration succeeded: the device token in hexadecimal.
    func application(_ application: Application, didRegisterForRemoteNotificationsWithDeviceToken token: String)
    /// The remote-notification registration failed: the error's message.
    func application(_ application: Application, didFailToRegisterForRemoteNotificationsWithError error: String)
    /// The events of the background URL session `identifier` are waiting; call `completion` once they
    /// are processed. Default: calls it at once.
    func application(_ application: Application, handleEventsForBackgroundURLSession identifier: String,
                     completionHandler completion: URLSessionCompletionHandler)
}

extension ApplicationDelegate {
    public func respondsTo(_ method: DelegateMethod) -> Bool { true }
    public func application(_ application: Application, willFinishLaunchingWithOptions options: UserInfo) -> Bool { true }
    public func application(_ application: Application, didFinishLaunchingWithOptions options: UserInfo) -> Bool { true }
    public func applicationDidBecomeActive(_ application: Application) {}
    public func applicationWillResignActive(_ application: Application) {}
    public func applicationDidEnterBackground(_ application: Application) {}
    public func applicationWillEnterForeground(_ application: Application) {}
    public func applicationWillTerminate(_ application: Application) {}
    public func applicationDidReceiveMemoryWarning(_ application: Application) {}
    public func applicationSignificantTimeChange(_ application: Application) {}
    public func applicationProtectedDataWillBecomeUnavailable(_ application: Application) {}
    public func applicationProtectedDataDidBecomeAvailable(_ application: Application) {}
    public func application(_ application: Application, open url: String, sourceApplication: String?,
                            annotation: UserInfoValue?) -> Bool { false }
    public func application(_ application: Application, performFetchWithCompletionHandler completion: FetchCompletionHandler) {
        completion(.noData)
    }
    public func application(_ application: Application, didReceiveRemoteNotification userInfo: UserInfo,
                            fetchCompletionHandler completion: FetchCompletionHandler)
    {
        completion(.noData)
    }
    public func application(_ application: Application, didReceiveRemoteNotification userInfo: UserInfo) {}
    public func application(_ application: Application, shouldSaveApplicationState coder: StateArchive) -> Bool { false }
    public func application(_ application: Application, shouldRestoreApplicationState coder: StateArchive) -> Bool { false }
    public func application(_ application: Application, willEncodeRestorableStateWith coder: StateArchive) {}
    public func application(_ application: Application, didDecodeRestorableStateWith coder: StateArchive) {}
    public func application(_ application: Application, open url: String, options: UserInfo) -> Bool {
        self.application(application, open: url, sourceApplication: options[OpenURLOptionsKey.sourceApplication]?.stringValue,
                         annotation: options[OpenURLOptionsKey.annotation])
    }
    public func application(_ application: Application, configurationForConnecting session: SceneSession,
                            options: SceneConnectionOptions) -> SceneConfiguration { .default }
    public func application(_ application: Application, didDiscardSceneSessions sessions: [SceneSession]) {}
    public func application(_ application: Application, willContinueUserActivityWithType activityType: String) -> Bool { false }
    public func application(_ application: Application, continue activity: UserActivity) -> Bool { false }
    public func application(_ application: Application, didFailToContinueUserActivityWithType activityType: String, error: String) {}
    public func application(_ application: Application, didUpdate activity: UserActivity) {}
    public func application(_ application: Application, didReceiveLocalNotification userInfo: UserInfo) {}
    public func application(_ application: Application, didRegisterForRemoteNotificationsWithDeviceToken token: String) {}
    public func application(_ application: Application, didFailToRegisterForRemoteNotificationsWithError error: String) {}
    public func application(_ application: Application, handleEventsForBackgroundURLSession identifier: String,
                            completionHandler completion: URLSessionCompletionHandler)
    {
        completion()
    }
}

extension DelegateHandlers {
    /// The handlers of a protocol delegate (held strongly), limited to what `respondsTo` admits.
    init(_ d: ApplicationDelegate) {
        self.init()
        let r = d.respondsTo
        if r(.willFinishLaunching) { willFinishLaunching = { d.application($0, willFinishLaunchingWithOptions: $1) } }
        if r(.didFinishLaunching) { didFinishLaunching = { d.application($0, didFinishLaunchingWithOptions: $1) } }
        if r(.didBecomeActive) { didBecomeActive = { d.applicationDidBecomeActive($0) } }
        if r(.willResignActive) { willResignActive = { d.applicationWillResignActive($0) } }
        if r(.didEnterBackground) { didEnterBackground = { d.applicationDidEnterBackground($0) } }
        if r(.willEnterForeground) { willEnterForeground = { d.applicationWillEnterForeground($0) } }
        if r(.willTerminate) { willTerminate = { d.applicationWillTerminate($0) } }
        if r(.didReceiveMemoryWarning) { didReceiveMemoryWarning = { d.applicationDidReceiveMemoryWarning($0) } }
        if r(.significantTimeChange) { significantTimeChange = { d.applicationSignificantTimeChange($0) } }
        if r(.protectedDataWillBecomeUnavailable) {
            protectedDataWillBecomeUnavailable = { d.applicationProtectedDataWillBecomeUnavailable($0) }
        }
        if r(.protectedDataDidBecomeAvailable) { protectedDataDidBecomeAvailable = { d.applicationProtectedDataDidBecomeAvailable($0) } }
        if r(.openURL) { openURL = { d.application($0, open: $1, sourceApplication: $2, annotation: $3) } }
        if r(.performFetch) { performFetch = { d.application($0, performFetchWithCompletionHandler: $1) } }
        if r(.didReceiveRemoteNotificationWithCompletion) {
            didReceiveRemoteNotificationWithCompletion = { d.application($0, didReceiveRemoteNotification: $1, fetchCompletionHandler: $2) }
        }
        if r(.didReceiveRemoteNotification) { didReceiveRemoteNotification = { d.application($0, didReceiveRemoteNotification: $1) } }
        if r(.shouldSaveApplicationState) { shouldSaveApplicationState = { d.application($0, shouldSaveApplicationState: $1) } }
        if r(.shouldRestoreApplicationState) { shouldRestoreApplicationState = { d.application($0, shouldRestoreApplicationState: $1) } }
        if r(.willEncodeRestorableState) { willEncodeRestorableState = { d.application($0, willEncodeRestorableStateWith: $1) } }
        if r(.didDecodeRestorableState) { didDecodeRestorableState = { d.application($0, didDecodeRestorableStateWith: $1) } }
        if r(.openURLWithOptions) { openURLWithOptions = { d.application($0, open: $1, options: $2) } }
        if r(.configurationForConnecting) { configurationForConnecting = { d.application($0, configurationForConnecting: $1, options: $2) } }
        if r(.didDiscardSceneSessions) { didDiscardSceneSessions = { d.application($0, didDiscardSceneSessions: $1) } }
        if r(.willContinueUserActivity) { willContinueUserActivity = { d.application($0, willContinueUserActivityWithType: $1) } }
        if r(.continueUserActivity) { continueUserActivity = { d.application($0, continue: $1) } }
        if r(.didFailToContinueUserActivity) {
            didFailToContinueUserActivity = { d.application($0, didFailToContinueUserActivityWithType: $1, error: $2) }
        }
        if r(.didUpdateUserActivity) { didUpdateUserActivity = { d.application($0, didUpdate: $1) } }
        // The two oldest methods are not in the protocol: a protocol delegate has their successors.
        if r(.didReceiveLocalNotification) { didReceiveLocalNotification = { d.application($0, didReceiveLocalNotification: $1) } }
        if r(.didRegisterForRemoteNotifications) {
            didRegisterForRemoteNotifications = { d.application($0, didRegisterForRemoteNotificationsWithDeviceToken: $1) }
        }
        if r(.didFailToRegisterForRemoteNotifications) {
            didFailToRegisterForRemoteNotifications = { d.application($0, didFailToRegisterForRemoteNotificationsWithError: $1) }
        }
        if r(.handleEventsForBackgroundURLSession) {
            handleEventsForBackgroundURLSession = { d.application($0, handleEventsForBackgroundURLSession: $1, completionHandler: $2) }
        }
    }
}
