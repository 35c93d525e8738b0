/// The sequences of a scene-based application (Apple, "Managing your app's life cycle"): a scene's steps through its states, each
/// followed by the application's notification when the application's derived state changes, and the
/// application-wide sequences (launch, Home, return, interruption) expressed as scene steps.
///
/// Order rule: a scene's delegate methods (scene delegates, in registration order), then its
/// notification (sender: the scene), then — when the application's derived state changes — its
/// UIApplication notification (no application delegate method). The application's state is its most
/// active scene's and changes with it: after the "will" notifications (`willEnterForeground`,
/// `willResignActive`), before the scene's "did" methods (`sceneDidBecomeActive:`,
/// `sceneDidEnterBackground:`).
extension Application {
    // MARK: One scene

    /// Connects scene `id`: its session (kept, or new), the configuration (asked for a new session
    /// only: a kept session keeps the one chosen when it was created, decision 47), each scene
    /// delegate's restored activity and `scene:willConnectToSession:options:`, `sceneWillConnect`;
    /// then to the foreground-inactive state (user-requested) or to the background (system-requested).
    /// - Parameter applicationEntersBackground: a launch into the background: the application's
    ///   `didEnterBackground` is posted after the scene's, as after a launch without scenes.
    @discardableResult
    func connectScene(_ id: String, foreground: Bool, options: SceneConnectionOptions = SceneConnectionOptions(),
                      applicationEntersBackground: Bool = false) throws(Killed) -> Scene
    {
        var (session, isNew) = session(for: id)
        // Asked when the session is created ("Called when a new scene session is being created",
        // Xcode's template for the method); `UISceneSession.configuration` keeps what was chosen then.
        if isNew || session.configurationName == nil {
            var chosen: SceneConfiguration?
            for slot in slots {
                guard let handler = slot.handlers.configurationForConnecting, isRegistered(slot) else { continue }
                let given = session
                let answer = try call(.configurationForConnecting, slot, scene: id) { handler(self, given, options) }
                if chosen == nil { chosen = answer }
            }
            session.configurationName = (chosen ?? .default).name
        }
        updateSession(session)
        let scene = Scene(id: id, session: session, requestedByUser: foreground, application: self)
        connectScene(scene)
        // The restoration archives are read only while protected data is available (decision 48); with
        // no archive folder there is nothing to read, now or later.
        scene.restoration.deferred = !isProtectedDataAvailable && archiveStore != nil
        for slot in sceneSlots {
            guard isRegistered(slot), slot.handlers.stateRestorationActivity != nil else { continue }
            guard slot.handlers.willConnect != nil || slot.handlers.restoreInteractionState != nil else { continue }
            if scene.restoration.deferred {
                trace(.inScene(scene.id, .archiveDeferred(delegate: slot.id)))
            } else if let activity = readSceneActivity(slot, scene) {
                scene.restoration.activities[slot.id] = activity
            }
        }
        for slot in sceneSlots {
            guard let willConnect = slot.handlers.willConnect, isRegistered(slot) else { continue }
            var given = session
            given.stateRestorationActivity = scene.restoration.activities[slot.id]
            try callScene(.sceneWillConnect, slot, scene) { willConnect(self, scene, given, options) }
        }
        try postScene(.sceneWillConnect, scene)
        if foreground {
            try sceneEnterForeground(scene)
        } else {
            try sceneEnterBackground(scene, applicationNotification: applicationEntersBackground)
        }
        return scene
    }

    /// Background, suspended (the application resumed) or just connected → foreground-inactive. The
    /// first scene to come forward takes the application out of the background: after the scene's
    /// `sceneWillEnterForeground:` and notification, the application's `willEnterForeground`
    /// (notification only, the application still background), then the scene and the application
    /// change state together — the application takes its most active scene's state (decision 23).
    func sceneEnterForeground(_ scene: Scene) throws(Killed) {
        if scene.state == .suspended { setSceneState(scene, .background) }
        try callSceneDelegates(.sceneWillEnterForeground, { $0.willEnterForeground }, scene)
        try postScene(.sceneWillEnterForeground, scene)
        let applicationEnters = !state.isForeground
        if applicationEnters {
            cancelBackgroundTimers()
            backgroundSince = nil
            tasks.updateAll { $0.expirationCalled = false }
            try postLifecycle(.willEnterForeground)
        }
        setSceneState(scene, .foregroundInactive)
        if applicationEnters { setState(.inactive) }
        if scene.restoration.beforeFirstForeground { try restoreInteractionState(scene) }
    }

    /// The scene's first arrival in the foreground since its connection: each scene delegate with a
    /// restored activity gets `scene:restoreInteractionStateWithUserActivity:` (decision 48); archives
    /// deferred at the connection are read first.
    func restoreInteractionState(_ scene: Scene) throws(Killed) {
        if scene.restoration.deferred, isProtectedDataAvailable { readDeferredRestoration(scene) }
        scene.restoration.beforeFirstForeground = false
        let activities = scene.restoration.activities
        scene.restoration.activities.removeAll()
        guard !activities.isEmpty else { return }
        for slot in sceneSlots {
            guard let restore = slot.handlers.restoreInteractionState, isRegistered(slot), let activity = activities[slot.id] else { continue }
            try callScene(.sceneRestoreInteractionState, slot, scene) { restore(self, scene, activity) }
        }
    }

    /// Reads the restoration archives a scene's connection deferred because protected data was
    /// unavailable — "When the data becomes available, the system updates the value accordingly"
    /// (Apple, `UISceneSession.stateRestorationActivity`) — for the scene delegates that take them
    /// over in `scene:restoreInteractionStateWithUserActivity:`, while the scene has not yet come to
    /// the foreground.
    func readDeferredRestoration(_ scene: Scene) {
        scene.restoration.deferred = false
        guard scene.restoration.beforeFirstForeground else { return }
        for slot in sceneSlots {
            guard isRegistered(slot), slot.handlers.stateRestorationActivity != nil, slot.handlers.restoreInteractionState != nil,
                  let activity = readSceneActivity(slot, scene) else { continue }
            scene.restoration.activities[slot.id] = activity
        }
    }

    /// Foreground-inactive → foreground-active; the application becomes active with its first active
    /// scene, before that scene's `sceneDidBecomeActive:` (which reads both active); the application's
    /// `didBecomeActive` after the scene's notification.
    func sceneActivate(_ scene: Scene) throws(Killed) {
        setSceneState(scene, .foregroundActive)
        let applicationBecomes = state == .inactive
        if applicationBecomes { setState(.active) }
        try callSceneDelegates(.sceneDidBecomeActive, { $0.didBecomeActive }, scene)
        try postScene(.sceneDidActivate, scene)
        if applicationBecomes { try postLifecycle(.didBecomeActive) }
    }

    /// Foreground-active → foreground-inactive; the application resigns active with its last active
    /// scene: `sceneWillResignActive:` and its notification, the application's `willResignActive`
    /// (both still active), then the scene and the application change state together.
    func sceneDeactivate(_ scene: Scene) throws(Killed) {
        try callSceneDelegates(.sceneWillResignActive, { $0.willResignActive }, scene)
        try postScene(.sceneWillDeactivate, scene)
        let othersActive = connectedSceneCounts[.foregroundActive] - (scene.state == .foregroundActive && isConnected(scene) ? 1 : 0)
        let applicationResigns = state == .active && othersActive == 0
        if applicationResigns { try postLifecycle(.willResignActive) }
        setSceneState(scene, .foregroundInactive)
        if applicationResigns { setState(.inactive) }
    }

    /// A foreground scene (deactivated first if active), or a connecting one, → background: when it
    /// is the last foreground scene the application enters the background with it, before
    /// `sceneDidEnterBackground:`; that method and the scene's notification run under the
    /// didEnterBackground budget, then the application's `didEnterBackground`; then the scene's state
    /// is preserved (`stateRestorationActivityForScene:`).
    func sceneEnterBackground(_ scene: Scene, applicationNotification: Bool = false) throws(Killed) {
        if scene.state == .foregroundActive { try sceneDeactivate(scene) }
        setSceneState(scene, .background)
        let applicationEnters = state.isForeground && connectedSceneCounts.foreground == 0
        if applicationEnters {
            interrupted = false  // an interruption ends when the application leaves the foreground
            setState(.background)
            backgroundSince = loop.now
        }
        try withBudget(.didEnterBackground, configuration.budgets.didEnterBackground) { () throws(Killed) in
            try callSceneDelegates(.sceneDidEnterBackground, { $0.didEnterBackground }, scene)
            try postScene(.sceneDidEnterBackground, scene)
            if applicationEnters || applicationNotification { try postLifecycle(.didEnterBackground) }
        }
        try saveSceneState(scene)
        if applicationEnters || applicationNotification { scheduleBackgroundTimers() }
    }

    /// Background or suspended (the application resumed) → unattached: `sceneDidDisconnect:` sees
    /// unattached, then `sceneDidDisconnect`. The session stays.
    func sceneDisconnect(_ scene: Scene) throws(Killed) {
        disconnectScene(scene)
        setSceneState(scene, .unattached)
        try callSceneDelegates(.sceneDidDisconnect, { $0.didDisconnect }, scene)
        try postScene(.sceneDidDisconnect, scene)
    }

    // MARK: The application's sequences, with scenes

    /// Launch: willFinishLaunching → didFinishLaunching (+ notification) under the launch budget, the
    /// sessions discarded while not running, then the scene `scene` (default `main`) is connected:
    /// into the foreground and activated, or into the background for a launch into the background.
    func launchScenes(options: UserInfo, inBackground: Bool, scene: String?, connection: SceneConnectionOptions,
                      handoff: Handoff?) throws(Killed)
    {
        resetRuntime()
        // "A scene-based app launches in the background state" (Apple, `applicationState`); a
        // foreground launch leaves it when its scene reaches foreground-inactive (`willEnterForeground`).
        setState(.background)
        if inBackground { backgroundSince = loop.now }
        try withBudget(.launch, configuration.budgets.launch) { () throws(Killed) in
            _ = try askAll(.willFinishLaunching, { $0.willFinishLaunching }) { $0(self, options) }
            _ = try didFinishLaunchingAll(options)
            try postLifecycle(.didFinishLaunching, userInfo: options)
        }
        if !pendingDiscards.isEmpty {
            let discarded = pendingDiscards
            pendingDiscards.removeAll()
            try callDidDiscard(discarded)
        }
        let id = scene ?? configuration.sceneManifest?.defaultSceneID ?? "main"
        let target = try connectScene(id, foreground: !inBackground, options: connection, applicationEntersBackground: inBackground)
        if let handoff, handoff.error != nil { try deliverSceneHandoff(handoff, target) }
        if !inBackground { try sceneActivate(target) }
    }

    /// Interruption, Home, lock, terminate: every active scene is deactivated (remembered for `dismiss`).
    func scenesResignActive() throws(Killed) {
        let active = connectedScenes.filter { $0.state == .foregroundActive }
        interruptedScenes = active.map(\.id)
        for scene in active where scene.state == .foregroundActive { try sceneDeactivate(scene) }
    }

    /// Dismissed interruption: the scenes it deactivated become active again.
    func scenesBecomeActive() throws(Killed) {
        let ids = interruptedScenes
        interruptedScenes.removeAll()
        for scene in connectedScenes where scene.state == .foregroundInactive && (ids.isEmpty || ids.contains(scene.id)) {
            try sceneActivate(scene)
        }
    }

    /// Home, accept, lock, terminate: every foreground scene to the background, in connection order
    /// (remembered for `foreground` and `unlock`).
    func scenesEnterBackground() throws(Killed) {
        let foreground = connectedScenes.filter { $0.state.isForeground }
        returningScenes = foreground.map(\.id)
        interruptedScenes.removeAll()
        for scene in foreground where scene.state.isForeground { try sceneEnterBackground(scene) }
        if state.isForeground {  // no scene was in the foreground
            setState(.background)
            backgroundSince = loop.now
            try scenesApplicationDidEnterBackground()
        }
    }

    /// The application itself enters the background without a scene (a wake from suspension): the
    /// `didEnterBackground` notification only, under its budget; no application delegate method.
    func scenesApplicationDidEnterBackground() throws(Killed) {
        try withBudget(.didEnterBackground, configuration.budgets.didEnterBackground) { () throws(Killed) in
            try postLifecycle(.didEnterBackground)
        }
        scheduleBackgroundTimers()
    }

    /// Return to the application (`foreground`, `unlock`): the scenes that were in the foreground come
    /// back (all to foreground-inactive, then all active); if none of them is connected, the default
    /// scene (or the first connected one); if no scene is connected, the default scene is connected.
    func scenesReturnToForeground() throws(Killed) {
        try resumeIfSuspended()
        var targets = returningScenes.compactMap { scene(id: $0) }.filter { !$0.state.isForeground }
        returningScenes.removeAll()
        let defaultID = configuration.sceneManifest?.defaultSceneID ?? "main"
        if targets.isEmpty, let scene = scene(id: defaultID) ?? connectedScenes.first { targets = [scene] }
        if targets.isEmpty {
            try sceneActivate(try connectScene(defaultID, foreground: true))
            return
        }
        for scene in targets { try sceneEnterForeground(scene) }
        for scene in targets where scene.state == .foregroundInactive { try sceneActivate(scene) }
    }

    // MARK: Scene actions

    func runScene(_ operation: Action.SceneOperation) throws(Killed) {
        if case .connect(let id, let inBackground) = operation {
            try resumeIfSuspended()
            let scene = try connectScene(id, foreground: !inBackground)
            if !inBackground { try sceneActivate(scene) }
            return
        }
        if case .discard(let id) = operation { return try discardSession(id) }
        guard let scene = scene(id: operation.id) else { return }  // validated: connected
        switch operation {
        case .activate: try sceneActivate(scene)
        case .deactivate: try sceneDeactivate(scene)
        case .background: try sceneEnterBackground(scene)
        case .foreground:
            try resumeIfSuspended()
            try sceneEnterForeground(scene)
            try sceneActivate(scene)
        case .disconnect:
            try resumeIfSuspended()
            try sceneDisconnect(scene)
        case .close: try closeScene(scene)
        case .connect, .discard: break
        }
    }

    /// The user swipes foreground scene `scene` away in the app switcher (decision 52): deactivated if
    /// active, then disconnected straight from the foreground — no `sceneDidEnterBackground:` — with the
    /// application leaving the foreground if it was its last foreground scene (state background, then
    /// `didEnterBackground` after the scene's notification); then its session is discarded
    /// (`application:didDiscardSceneSessions:`). Closing the last connected scene force-quits the
    /// application: `applicationWillTerminate:`, then not running.
    func closeScene(_ scene: Scene) throws(Killed) {
        if scene.state == .foregroundActive { try sceneDeactivate(scene) }
        disconnectScene(scene)
        let applicationLeaves = state.isForeground && connectedSceneCounts.foreground == 0
        setSceneState(scene, .unattached)
        if applicationLeaves {
            interrupted = false
            setState(.background)
            backgroundSince = loop.now
        }
        try withBudget(.didEnterBackground, configuration.budgets.didEnterBackground) { () throws(Killed) in
            try callSceneDelegates(.sceneDidDisconnect, { $0.didDisconnect }, scene)
            try postScene(.sceneDidDisconnect, scene)
            if applicationLeaves { try postLifecycle(.didEnterBackground) }
        }
        try discardSession(scene.id)
        if connectedScenes.isEmpty {
            try terminateSequence(.closedInAppSwitcher)
        } else if applicationLeaves {
            scheduleBackgroundTimers()
        }
    }

    /// The user closes scene `id` in the app switcher: disconnected if connected, its session and the
    /// registered scene delegates' archives for it removed, then `application:didDiscardSceneSessions:`
    /// — at the next launch if the application is not running.
    func discardSession(_ id: String) throws(Killed) {
        guard let session = sessions[id] else { return }
        if state != .notRunning {
            try resumeIfSuspended()
            if let scene = scene(id: id) { try sceneDisconnect(scene) }
        }
        sessions.remove(key: id)
        if let store = sceneArchiveStore(id) {
            for slot in sceneSlots { try? store.remove(id: slot.id) }
        }
        if state == .notRunning {
            pendingDiscards.append(session)
        } else {
            try callDidDiscard([session])
        }
    }

    func callDidDiscard(_ discarded: [SceneSession]) throws(Killed) {
        let tag = discarded.count == 1 ? discarded[0].persistentIdentifier : nil
        for slot in slots {
            guard let handler = slot.handlers.didDiscardSceneSessions, isRegistered(slot) else { continue }
            try call(.didDiscardSceneSessions, slot, scene: tag) { handler(self, discarded) }
        }
    }

    // MARK: Per-scene state restoration

    /// The archives of scene `id`: `<archiveDirectory>/scenes/<id>/<scene delegate id>.lcarchive`.
    func sceneArchiveStore(_ id: String) -> ArchiveStore? {
        archiveStore.map { ArchiveStore(directory: $0.directory + "/scenes/" + id) }
    }

    /// Asks each scene delegate implementing `stateRestorationActivityForScene:` and saves its answer.
    func saveSceneState(_ scene: Scene) throws(Killed) {
        guard let store = sceneArchiveStore(scene.id) else { return }
        sweep(store)
        for slot in sceneSlots {
            guard let ask = slot.handlers.stateRestorationActivity, isRegistered(slot) else { continue }
            guard let activity = try callScene(.stateRestorationActivity, slot, scene, { ask(self, scene) }) else { continue }
            let values = activity.dictionary
            do {
                try store.save(values, id: slot.id)
                trace(.inScene(scene.id, .archive(.saved, delegate: slot.id, keys: values.count)))
            } catch {
                trace(.inScene(scene.id, .archiveFailed(.saved, delegate: slot.id, message: error.message)))
            }
        }
    }

    /// The activity a scene delegate saved for `scene`, read back from its archive (nil: none).
    func readSceneActivity(_ slot: SceneDelegateSlot, _ scene: Scene) -> UserActivity? {
        guard let store = sceneArchiveStore(scene.id) else { return nil }
        let values: UserInfo?
        do {
            values = try store.load(id: slot.id)
        } catch {
            trace(.inScene(scene.id, .archiveFailed(.read, delegate: slot.id, message: error.message)))
            return nil
        }
        guard let values else { return nil }
        trace(.inScene(scene.id, .archive(.read, delegate: slot.id, keys: values.count)))
        guard let activity = UserActivity(dictionary: values) else {
            trace(.inScene(scene.id, .archiveFailed(.read, delegate: slot.id, message: "the archive holds no user activity")))
            return nil
        }
        return activity
    }
}
