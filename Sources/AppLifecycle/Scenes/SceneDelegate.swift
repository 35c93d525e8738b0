/// The scene delegate, as on iOS 13 and later (Apple's "Managing your app's life cycle", `UISceneDelegate`). Every method is
/// optional: the defaults do nothing (`stateRestorationActivity(for:)` returns nil).
///
/// Register one with `Application.addSceneDelegate(_:id:)` (as an `ApplicationDelegate` with
/// `addDelegate(_:id:)`); one delegate serves every scene of the application. In a scene-based
/// application it gets the foreground and background callbacks instead of the application delegate.
/// To keep unimplemented methods out of the trace, implement `respondsTo(_:)` or use
/// `SceneDelegateHandlers`. Every method is called on the loop thread.
public protocol SceneDelegate: AnyObject {
    /// Which methods to call; the default answers true for all.
    func respondsTo(_ method: DelegateMethod) -> Bool
    func scene(_ scene: Scene, willConnectTo session: SceneSession, options: SceneConnectionOptions)
    func sceneDidDisconnect(_ scene: Scene)
    func sceneDidBecomeActive(_ scene: Scene)
    func sceneWillResignActive(_ scene: Scene)
    func sceneWillEnterForeground(_ scene: Scene)
    func sceneDidEnterBackground(_ scene: Scene)
    func scene(_ scene: Scene, openURLContexts contexts: [OpenURLContext])
    func stateRestorationActivity(for scene: Scene) -> UserActivity?
    func scene(_ scene: Scene, willContinueUserActivityWithType activityType: String)
    func scene(_ scene: Scene, continue activity: UserActivity)
    func scene(_ scene: Scene, didFailToContinueUserActivityWithType activityType: String, error: String)
    func scene(_ scene: Scene, didUpdate activity: UserActivity)
    func scene(_ scene: Scene, restoreInteractionStateWith activity: UserActivity)
}

extension SceneDelegate {
    public func respondsTo(_ method: DelegateMethod) -> Bool { true }
    public func scene(_ scene: Scene, willConnectTo session: SceneSession, options: SceneConnectionOptions) {}
    public func sceneDidDisconnect(_ scene: Scene) {}
    public func sceneDidBecomeActive(_ scene: Scene) {}
    public func sceneWillResignActive(_ scene: Scene) {}
    public func sceneWillEnterForeground(_ scene: Scene) {}
    public func sceneDidEnterBackground(_ scene: Scene) {}
    public func scene(_ scene: Scene, openURLContexts contexts: [OpenURLContext]) {}
    public func stateRestorationActivity(for scene: Scene) -> UserActivity? { nil }
    public func scene(_ scene: Scene, willContinueUserActivityWithType activityType: String) {}
    public func scene(_ scene: Scene, continue activity: UserActivity) {}
    public func scene(_ scene: Scene, didFailToContinueUserActivityWithType activityType: String, error: String) {}
    public func scene(_ scene: Scene, didUpdate activity: UserActivity) {}
    public func scene(_ scene: Scene, restoreInteractionStateWith activity: UserActivity) {}
}

extension SceneDelegateHandlers {
    /// The handlers of a protocol delegate (held strongly), limited to what `respondsTo` admits.
    init(_ d: SceneDelegate) {
        self.init()
        let r = d.respondsTo
        if r(.sceneWillConnect) { willConnect = { d.scene($1, willConnectTo: $2, options: $3) } }
        if r(.sceneDidDisconnect) { didDisconnect = { d.sceneDidDisconnect($1) } }
        if r(.sceneDidBecomeActive) { didBecomeActive = { d.sceneDidBecomeActive($1) } }
        if r(.sceneWillResignActive) { willResignActive = { d.sceneWillResignActive($1) } }
        if r(.sceneWillEnterForeground) { willEnterForeground = { d.sceneWillEnterForeground($1) } }
        if r(.sceneDidEnterBackground) { didEnterBackground = { d.sceneDidEnterBackground($1) } }
        if r(.sceneOpenURLContexts) { openURLContexts = { d.scene($1, openURLContexts: $2) } }
        if r(.stateRestorationActivity) { stateRestorationActivity = { d.stateRestorationActivity(for: $1) } }
        if r(.sceneWillContinueUserActivity) { willContinueUserActivity = { d.scene($1, willContinueUserActivityWithType: $2) } }
        if r(.sceneContinueUserActivity) { continueUserActivity = { d.scene($1, continue: $2) } }
        if r(.sceneDidFailToContinueUserActivity) {
            didFailToContinueUserActivity = { d.scene($1, didFailToContinueUserActivityWithType: $2, error: $3) }
        }
        if r(.sceneDidUpdateUserActivity) { didUpdateUserActivity = { d.scene($1, didUpdate: $2) } }
        if r(.sceneRestoreInteractionState) { restoreInteractionState = { d.scene($1, restoreInteractionStateWith: $2) } }
    }
}
