/// The scene delegate's methods (`UISceneDelegate`, `UIWindowSceneDelegate`'s life-cycle part), by
/// their Objective-C selectors as traces name them.
extension DelegateMethod {
    public static let sceneWillConnect = DelegateMethod(selector: "scene:willConnectToSession:options:", standard: 32)
    public static let sceneDidDisconnect = DelegateMethod(selector: "sceneDidDisconnect:", standard: 33)
    public static let sceneDidBecomeActive = DelegateMethod(selector: "sceneDidBecomeActive:", standard: 34)
    public static let sceneWillResignActive = DelegateMethod(selector: "sceneWillResignActive:", standard: 35)
    public static let sceneWillEnterForeground = DelegateMethod(selector: "sceneWillEnterForeground:", standard: 36)
    public static let sceneDidEnterBackground = DelegateMethod(selector: "sceneDidEnterBackground:", standard: 37)
    public static let sceneOpenURLContexts = DelegateMethod(selector: "scene:openURLContexts:", standard: 38)
    public static let stateRestorationActivity = DelegateMethod(selector: "stateRestorationActivityForScene:", standard: 39)
    public static let sceneWillContinueUserActivity = DelegateMethod(selector: "scene:willContinueUserActivityWithType:", standard: 40)
    public static let sceneContinueUserActivity = DelegateMethod(selector: "scene:continueUserActivity:", standard: 41)
    public static let sceneDidFailToContinueUserActivity =
        DelegateMethod(selector: "scene:didFailToContinueUserActivityWithType:error:", standard: 42)
    public static let sceneDidUpdateUserActivity = DelegateMethod(selector: "scene:didUpdateUserActivity:", standard: 43)
    /// `scene:restoreInteractionStateWithUserActivity:` (iOS 15): the restored activity, handed over when
    /// the scene first comes to the foreground after its connection.
    public static let sceneRestoreInteractionState = DelegateMethod(selector: "scene:restoreInteractionStateWithUserActivity:", standard: 44)

    /// Every scene delegate method, in the order of `SceneDelegateHandlers`.
    public static let sceneMethods: [DelegateMethod] = [
        .sceneWillConnect, .sceneDidDisconnect, .sceneDidBecomeActive, .sceneWillResignActive, .sceneWillEnterForeground,
        .sceneDidEnterBackground, .sceneOpenURLContexts, .stateRestorationActivity, .sceneWillContinueUserActivity,
        .sceneContinueUserActivity, .sceneDidFailToContinueUserActivity, .sceneDidUpdateUserActivity,
        .sceneRestoreInteractionState,
    ]
}

/// The callbacks of one scene delegate, for every scene of the application. A nil handler is a
/// method the delegate does not implement: it is not called and not traced.
///
/// Register one with `Application.addSceneDelegate(_:id:)`, as an application delegate's
/// `DelegateHandlers` with `addDelegate(_:id:)`; or let `addSceneDelegate` build it from a
/// `SceneDelegate`. Every handler runs on the loop thread and receives the application and the scene.
public struct SceneDelegateHandlers {
    /// `scene:willConnectToSession:options:`: the session carries this delegate's restored activity.
    public var willConnect: ((Application, Scene, SceneSession, SceneConnectionOptions) -> Void)?
    public var didDisconnect: ((Application, Scene) -> Void)?
    public var didBecomeActive: ((Application, Scene) -> Void)?
    public var willResignActive: ((Application, Scene) -> Void)?
    public var willEnterForeground: ((Application, Scene) -> Void)?
    public var didEnterBackground: ((Application, Scene) -> Void)?
    /// `scene:openURLContexts:`: URLs to open in a connected scene.
    public var openURLContexts: ((Application, Scene, [OpenURLContext]) -> Void)?
    /// `stateRestorationActivityForScene:`: asked when the scene moves to the background; the activity
    /// returned is saved (one archive per scene delegate and scene) and handed back in the session at
    /// the scene's next connection. Nil saves nothing (the previous archive stays).
    public var stateRestorationActivity: ((Application, Scene) -> UserActivity?)?
    public var willContinueUserActivity: ((Application, Scene, String) -> Void)?
    public var continueUserActivity: ((Application, Scene, UserActivity) -> Void)?
    /// The activity type and the error's message.
    public var didFailToContinueUserActivity: ((Application, Scene, String, String) -> Void)?
    public var didUpdateUserActivity: ((Application, Scene, UserActivity) -> Void)?
    /// `scene:restoreInteractionStateWithUserActivity:`: the activity this delegate saved for the scene
    /// (`stateRestorationActivity`), handed over once a connection, when the scene first reaches
    /// foreground-inactive — read then if protected data was unavailable at the connection (decision 48).
    public var restoreInteractionState: ((Application, Scene, UserActivity) -> Void)?

    public init() {}

    /// The methods this table implements, in `DelegateMethod.sceneMethods` order.
    public var implementedMethods: [DelegateMethod] {
        let present = [willConnect != nil, didDisconnect != nil, didBecomeActive != nil, willResignActive != nil,
                       willEnterForeground != nil, didEnterBackground != nil, openURLContexts != nil,
                       stateRestorationActivity != nil, willContinueUserActivity != nil, continueUserActivity != nil,
                       didFailToContinueUserActivity != nil, didUpdateUserActivity != nil, restoreInteractionState != nil]
        return zip(DelegateMethod.sceneMethods, present).filter(\.1).map(\.0)
    }
}
