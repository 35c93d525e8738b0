/// Handoff (Apple's "Managing your app's life cycle", Handoff) and URLs opened in scenes: the activity or URL reaches the
/// application delegates (an application without scenes) or the target scene's delegates, after
/// the application or the scene is brought to the foreground, before it becomes active.
extension Application {
    /// One activity to continue, or (`error` set) one that could not be.
    struct Handoff {
        let activity: UserActivity
        let error: String?

        /// The application delegate methods it calls, in order (what a declined launch skips).
        var methods: [DelegateMethod] {
            error == nil ? [.willContinueUserActivity, .continueUserActivity] : [.willContinueUserActivity, .didFailToContinueUserActivity]
        }
    }

    /// `continue-activity`: a not-running application is launched with the activity in its launch
    /// options (a scene-based one connects the target scene with it in the connection options); a
    /// background or suspended one is brought to the foreground first.
    func continueUserActivity(_ activity: UserActivity, scene: String?, error: String?) throws(Killed) {
        let handoff = Handoff(activity: activity, error: error)
        if isSceneBased { return try continueInScene(handoff, scene ?? frontmostSceneID()) }
        switch state {
        case .notRunning:
            var options: UserInfo = [LaunchOptionsKey.userActivityType: .string(activity.activityType)]
            if error == nil { options[LaunchOptionsKey.userActivityDictionary] = .dict(activity.dictionary) }
            try launch(options: options, inBackground: false, handoff: handoff)
        case .background, .suspended:
            try enterForeground { () throws(Killed) in try self.deliverHandoff(handoff) }
        case .active, .inactive:
            try deliverHandoff(handoff)
        }
    }

    /// Every delegate's `willContinueUserActivityWithType:`, then every delegate's
    /// `continueUserActivity:restorationHandler:` — or, on failure, `didFailToContinueUserActivityWithType:error:`.
    func deliverHandoff(_ handoff: Handoff) throws(Killed) {
        let type = handoff.activity.activityType
        for slot in slots {
            guard let handler = slot.handlers.willContinueUserActivity, isRegistered(slot) else { continue }
            _ = try call(.willContinueUserActivity, slot) { handler(self, type) }
        }
        for slot in slots where isRegistered(slot) {
            if let error = handoff.error {
                guard let handler = slot.handlers.didFailToContinueUserActivity else { continue }
                try call(.didFailToContinueUserActivity, slot) { handler(self, type, error) }
            } else {
                guard let handler = slot.handlers.continueUserActivity else { continue }
                _ = try call(.continueUserActivity, slot) { handler(self, handoff.activity) }
            }
        }
    }

    /// The scene counterparts, for a connected scene.
    func deliverSceneHandoff(_ handoff: Handoff, _ scene: Scene) throws(Killed) {
        let type = handoff.activity.activityType
        try callSceneDelegates(.sceneWillContinueUserActivity, { $0.willContinueUserActivity }, scene) { $0(self, scene, type) }
        if let error = handoff.error {
            try callSceneDelegates(.sceneDidFailToContinueUserActivity, { $0.didFailToContinueUserActivity }, scene) { $0(self, scene, type, error) }
        } else {
            try callSceneDelegates(.sceneContinueUserActivity, { $0.continueUserActivity }, scene) { $0(self, scene, handoff.activity) }
        }
    }

    /// A connected scene gets the scene methods (brought forward first if in the background); a scene
    /// not connected is connected with the activity in its connection options, as UIKit does, and no
    /// continue method is called — except on failure, where the connection options are empty and
    /// `scene:willContinueUserActivityWithType:` → `scene:didFailToContinueUserActivityWithType:error:`
    /// come before the scene becomes active.
    private func continueInScene(_ handoff: Handoff, _ id: String) throws(Killed) {
        var options = SceneConnectionOptions()
        if handoff.error == nil { options.userActivities = [handoff.activity] }
        if state == .notRunning {
            try launch(options: UserInfo(), inBackground: false, scene: id, connection: options, handoff: handoff)
            return
        }
        try resumeIfSuspended()
        if let scene = scene(id: id) {
            try bringForward(scene) { () throws(Killed) in try self.deliverSceneHandoff(handoff, scene) }
        } else {
            let scene = try connectScene(id, foreground: true, options: options)
            if handoff.error != nil { try deliverSceneHandoff(handoff, scene) }
            try sceneActivate(scene)
        }
    }

    /// `open-url` in a scene-based application: `scene:openURLContexts:` for a connected scene (brought
    /// forward first if in the background); a scene not connected (or an application not running) is
    /// connected with the URL in its connection options.
    func openURLInScene(_ sceneID: String?, _ context: OpenURLContext) throws(Killed) {
        let id = sceneID ?? frontmostSceneID()
        let options = SceneConnectionOptions(urlContexts: [context])
        if state == .notRunning {
            try launch(options: UserInfo(), inBackground: false, scene: id, connection: options)
            return
        }
        try resumeIfSuspended()
        if let scene = scene(id: id) {
            try bringForward(scene) { () throws(Killed) in
                try self.callSceneDelegates(.sceneOpenURLContexts, { $0.openURLContexts }, scene) { $0(self, scene, [context]) }
            }
        } else {
            try sceneActivate(try connectScene(id, foreground: true, options: options))
        }
    }

    /// Runs `body` with `scene` in the foreground: a foreground scene as it is; a background or
    /// suspended one goes to foreground-inactive first and becomes active after `body`.
    private func bringForward(_ scene: Scene, _ body: () throws(Killed) -> Void) throws(Killed) {
        guard !scene.state.isForeground else { return try body() }
        try sceneEnterForeground(scene)
        try body()
        try sceneActivate(scene)
    }

    /// `update-activity`: `application:didUpdateUserActivity:`, or the target scene's
    /// `scene:didUpdateUserActivity:`. The state does not change.
    func updateUserActivity(_ activity: UserActivity, scene: String?) throws(Killed) {
        if isSceneBased {
            guard let target = self.scene(id: scene ?? frontmostSceneID()) else { return }
            try callSceneDelegates(.sceneDidUpdateUserActivity, { $0.didUpdateUserActivity }, target) { $0(self, target, activity) }
            return
        }
        for slot in slots {
            guard let handler = slot.handlers.didUpdateUserActivity, isRegistered(slot) else { continue }
            try call(.didUpdateUserActivity, slot) { handler(self, activity) }
        }
    }
}
