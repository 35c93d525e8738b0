/// Scenes (Apple, "Managing your app's life cycle"): scene delegates, the connected scenes and their sessions, the legality of
/// scene actions, and calling scene delegates and posting scene notifications.
extension Application {
    // MARK: Scene delegates

    /// Adds a scene delegate (held strongly), called after the scene delegates added before it, for
    /// every scene. The scene-delegate counterpart of `addDelegate(_:id:)`: ids are unique among scene
    /// delegates (an application delegate may have the same id).
    /// - Parameters:
    ///   - delegate: the scene delegate; the methods its `respondsTo(_:)` admits are called (all by default).
    ///   - id: a unique name (a plugin id): traces, watchdog reports and its per-scene restoration
    ///     archives use it.
    /// - Throws: `.invalidArgument` for an empty or duplicate id; `.notOnLoopThread`.
    @discardableResult
    public func addSceneDelegate(_ delegate: SceneDelegate, id: String) throws(ApplicationError) -> DelegateToken {
        try addSceneDelegate(SceneDelegateHandlers(delegate), id: id)
    }

    /// Adds a scene delegate given as a table of handlers (nil: not implemented).
    @discardableResult
    public func addSceneDelegate(_ handlers: SceneDelegateHandlers, id: String) throws(ApplicationError) -> DelegateToken {
        try requireLoopThread("addSceneDelegate")
        if id.isEmpty { throw ApplicationError(.invalidArgument, "a scene delegate needs a non-empty id") }
        let token = nextDelegateToken
        guard sceneSlotIDs.insert(id, token: token) else {
            throw ApplicationError(.invalidArgument, "a scene delegate with id '\(id)' is already registered")
        }
        nextDelegateToken += 1
        sceneSlots.append(SceneDelegateSlot(id: id, token: token, handlers: handlers, owner: center.ownerID(id)))
        return DelegateToken(rawValue: token)
    }

    /// Removes a scene delegate; safe from inside a callback (it is not called again). [loop-thread]
    @discardableResult
    public func removeSceneDelegate(_ token: DelegateToken) -> Bool {
        loop.preconditionOnLoopThread("Application.removeSceneDelegate(_:)")
        guard let index = sceneSlots.index(ofToken: token.rawValue) else { return false }
        sceneSlots.removeSlot(at: index, ids: &sceneSlotIDs)
        return true
    }

    /// Removes the scene delegate registered under `id`. [loop-thread]
    @discardableResult
    public func removeSceneDelegate(id: String) -> Bool {
        loop.preconditionOnLoopThread("Application.removeSceneDelegate(id:)")
        guard let token = sceneSlotIDs.token(of: id), let index = sceneSlots.index(ofToken: token) else { return false }
        sceneSlots.removeSlot(at: index, ids: &sceneSlotIDs)
        return true
    }

    /// The registered scene delegates' ids, in call order.
    public var sceneDelegateIDs: [String] {
        loop.preconditionOnLoopThread("Application.sceneDelegateIDs")
        return sceneSlots.map(\.id)
    }

    // MARK: Scenes and sessions

    /// Whether the application is scene-based (`Configuration.sceneManifest` is set).
    public var isSceneBased: Bool { configuration.sceneManifest != nil }

    /// The connected scenes, in connection order. [loop-thread]
    public var scenes: [Scene] {
        loop.preconditionOnLoopThread("Application.scenes")
        return connectedScenes.elements
    }

    /// The connected scene with this id, or nil. [loop-thread]
    public func scene(id: String) -> Scene? {
        loop.preconditionOnLoopThread("Application.scene(id:)")
        return connectedScenes[id]
    }

    /// The sessions the system keeps (connected or not), oldest first. [loop-thread]
    public var sceneSessions: [SceneSession] {
        loop.preconditionOnLoopThread("Application.sceneSessions")
        return sessions.elements
    }

    /// The session `id`, connected or not; nil when the system keeps none of that id. [loop-thread]
    public func sceneSession(id: String) -> SceneSession? {
        loop.preconditionOnLoopThread("Application.sceneSession(id:)")
        return sessions[id]
    }

    /// Replaces session `id`'s `userInfo` (`UISceneSession.userInfo`): kept with the session until it
    /// is discarded; its connected scene's `session` shows it at once. [loop-thread]
    /// - Throws: `.unknownScene` when no session `id` exists.
    public func setUserInfo(_ userInfo: UserInfo, forSession id: String) throws(ApplicationError) {
        try requireLoopThread("setUserInfo(_:forSession:)")
        guard sessions.update(key: id, { $0.userInfo = userInfo }) else {
            throw ApplicationError(.unknownScene, "setUserInfo: no scene session '\(id)' exists", state: state)
        }
        if let scene = scene(id: id) { scene.session.userInfo = userInfo }
    }

    /// The scene an action with no scene named is for: the first foreground-active scene, else the first
    /// foreground one, else the manifest's default id.
    func frontmostSceneID() -> String {
        // The counts say whether a walk can find one.
        if connectedSceneCounts[.foregroundActive] > 0, let scene = connectedScenes.first(where: { $0.state == .foregroundActive }) {
            return scene.id
        }
        if connectedSceneCounts.foreground > 0, let scene = connectedScenes.first(where: { $0.state.isForeground }) { return scene.id }
        return configuration.sceneManifest?.defaultSceneID ?? "main"
    }

    /// Whether the scene an action is for (or, without scenes, the application) is on screen.
    func targetIsInForeground(_ scene: String?) -> Bool {
        guard isSceneBased else { return state.isForeground }
        return self.scene(id: scene ?? frontmostSceneID())?.state.isForeground ?? false
    }

    // MARK: Legality

    /// An action naming a scene needs a scene-based application and a well-formed id.
    func validateSceneTarget(_ id: String, of action: Action) throws(ApplicationError) {
        guard isSceneBased else {
            throw ApplicationError.illegalAction(action.name, in: state,
                                                 "the application is not scene-based (no scene manifest; the host's --scenes)")
        }
        // Scene ids name archive folders: the archive ids' rule.
        do throws(ApplicationError) {
            try ArchiveStore.validate(id: id)
        } catch {
            let shown = id.utf8.count > 64 ? jsonQuoted(String(id.prefix(32))) + "…" : jsonQuoted(id)
            throw ApplicationError(.invalidArgument,
                                   "scene id \(shown) is not valid: a scene id is 1 to 200 bytes of A-Z a-z 0-9 . _ -, not starting with '.'",
                                   action: action.name, state: state)
        }
    }

    func validateScene(_ operation: Action.SceneOperation, _ name: String) throws(ApplicationError) {
        let id = operation.id
        func refused(_ why: String) -> ApplicationError {
            ApplicationError(.illegalAction, "action '\(name) \(id)' is not allowed: \(why)", action: name, state: state)
        }
        func connected() throws(ApplicationError) -> Scene {
            guard let scene = scene(id: id) else {
                let list = connectedScenes.isEmpty ? "none is connected" : "connected: " + connectedScenes.map(\.id).joined(separator: ", ")
                throw ApplicationError(.unknownScene, "action '\(name) \(id)': no scene '\(id)' is connected (\(list))",
                                       action: name, state: state)
            }
            return scene
        }
        func comingForward() throws(ApplicationError) {
            if isDeviceLocked { throw refused("the device is locked; unlock it first") }
            if interrupted { throw refused("an interruption is in progress; dismiss or accept it first") }
        }
        switch operation {
        case .connect(_, let inBackground):
            guard state != .notRunning else { throw refused("the application is not running; launch it with 'launch scene=\(id)'") }
            if let scene = scene(id: id) { throw refused("scene '\(id)' is already connected (\(scene.state))") }
            if configuration.sceneManifest?.supportsMultipleScenes == false, let other = connectedScenes.first {
                throw refused("the application does not support multiple scenes and scene '\(other.id)' is connected")
            }
            if inBackground, configuration.exitsOnSuspend { throw refused(Self.exitsOnSuspendReason) }
            if !inBackground { try comingForward() }
        case .activate:
            let scene = try connected()
            guard scene.state == .foregroundInactive else { throw refused("scene '\(id)' is \(scene.state); only a foreground-inactive scene becomes active") }
            if interrupted { throw refused("an interruption is in progress; dismiss it first") }
        case .deactivate:
            let scene = try connected()
            guard scene.state == .foregroundActive else { throw refused("scene '\(id)' is \(scene.state); only a foreground-active scene is deactivated") }
        case .background:
            let scene = try connected()
            guard scene.state.isForeground else { throw refused("scene '\(id)' is \(scene.state); only a foreground scene moves to the background") }
            if configuration.exitsOnSuspend { throw refused(Self.exitsOnSuspendReason) }
        case .foreground:
            let scene = try connected()
            guard scene.state == .background || scene.state == .suspended else {
                throw refused("scene '\(id)' is \(scene.state); only a background or suspended scene comes to the foreground")
            }
            try comingForward()
        case .disconnect:
            let scene = try connected()
            guard scene.state == .background || scene.state == .suspended else {
                throw refused("scene '\(id)' is \(scene.state); only a background or suspended scene is disconnected (move it to the background first)")
            }
        case .discard:
            guard sessions.contains(key: id) else {
                throw ApplicationError(.unknownScene, "action '\(name) \(id)': no scene session '\(id)' exists", action: name, state: state)
            }
            if let scene = scene(id: id), scene.state.isForeground {
                throw refused("scene '\(id)' is \(scene.state); move it to the background first")
            }
        case .close:
            let scene = try connected()
            guard scene.state.isForeground else {
                throw refused("scene '\(id)' is \(scene.state); only a foreground scene is closed from the app switcher "
                              + "(a background scene's session is discarded with 'scene discard')")
            }
        }
    }

    static let exitsOnSuspendReason = "the application exits on suspend, so it never runs in the background (UIApplicationExitsOnSuspend); use home or terminate"

    func validateUpdateUserActivity(_ scene: String?, _ name: String) throws(ApplicationError) {
        guard state.isRunning else {
            throw ApplicationError.illegalAction(name, in: state, "only a running application updates its activity")
        }
        guard isSceneBased else { return }
        let id = scene ?? frontmostSceneID()
        guard let target = self.scene(id: id) else {
            throw ApplicationError(.unknownScene, "action '\(name)': no scene '\(id)' is connected", action: name, state: state)
        }
        guard target.state != .suspended else {
            throw ApplicationError(.illegalAction, "action '\(name)' is not allowed: scene '\(id)' is suspended and runs no code",
                                   action: name, state: state)
        }
    }

    // MARK: Calling scene delegates, posting scene notifications

    /// Calls one scene delegate method for `scene`, traced, watched, and checked for a watchdog kill.
    func callScene<R>(_ method: DelegateMethod, _ slot: SceneDelegateSlot, _ scene: Scene, _ body: () -> R) throws(Killed) -> R {
        trace(.inScene(scene.id, .delegateCalled(method: method, delegate: slot.id)))
        if inBudget { watchdog.setCurrent(event: method.selector, observer: slot.id) }
        let result = marked(method, owner: slot.owner, body)
        try checkKilled()
        return result
    }

    /// Calls a method on every scene delegate implementing it, in registration order. A scene delegate
    /// removed by an earlier one is not called.
    func callSceneDelegates<H>(_ method: DelegateMethod, _ handler: (SceneDelegateHandlers) -> H?, _ scene: Scene,
                               _ invoke: (H) -> Void) throws(Killed)
    {
        for slot in sceneSlots {
            guard let body = handler(slot.handlers), isRegistered(slot) else { continue }
            try callScene(method, slot, scene) { invoke(body) }
        }
    }

    /// The plain `(Application, Scene) -> Void` methods.
    func callSceneDelegates(_ method: DelegateMethod, _ handler: (SceneDelegateHandlers) -> ((Application, Scene) -> Void)?,
                            _ scene: Scene) throws(Killed)
    {
        try callSceneDelegates(method, handler, scene) { $0(self, scene) }
    }

    /// Whether `slot` is still registered (not removed since the loop over `sceneSlots` began). O(1).
    @inline(__always)
    func isRegistered(_ slot: SceneDelegateSlot) -> Bool { !slot.removed.load(ordering: .relaxed) }

    /// Posts a scene notification, with the scene as sender.
    func postScene(_ name: NotificationName, _ scene: Scene, userInfo: UserInfo? = nil) throws(Killed) {
        trace(.inScene(scene.id, .notificationDelivered(name: name, userInfo: userInfo.flatMap { $0.isEmpty ? nil : $0 }, queuedCount: nil)))
        try deliver(name, userInfo: userInfo, sender: scene.sender.rawValue)
    }

    /// The session of scene `id`: the one kept since its first connection (`isNew` false), or a new
    /// one, added to `sessions`.
    func session(for id: String) -> (session: SceneSession, isNew: Bool) {
        if let session = sessions[id] { return (session, false) }
        let session = SceneSession(persistentIdentifier: id)
        sessions.append(session)
        return (session, true)
    }

    func updateSession(_ session: SceneSession) {
        sessions.update(key: session.persistentIdentifier) { kept in
            kept = session
            kept.stateRestorationActivity = nil
        }
    }

    /// Adds `scene` to the connected scenes, counted in its state.
    func connectScene(_ scene: Scene) {
        connectedScenes.append(scene)
        connectedSceneCounts[scene.state] += 1
    }

    /// Whether `scene` is connected (this object, not an older connection of its id).
    func isConnected(_ scene: Scene) -> Bool { connectedScenes[scene.id] === scene }

    /// Takes `scene` out of the connected scenes (before its state becomes unattached).
    func disconnectScene(_ scene: Scene) {
        guard isConnected(scene) else { return }
        connectedScenes.remove(key: scene.id)
        connectedSceneCounts[scene.state] -= 1
    }

    /// Empties the connected scenes (the process is gone).
    func disconnectAllScenes() {
        connectedScenes.removeAll()
        connectedSceneCounts = SceneStateCounts()
    }
}

extension DelegateHandlers {
    /// Whether this table implements `method`.
    func implements(_ method: DelegateMethod) -> Bool { implementedMethods.contains(method) }
}
