import XCTest
@testable import AppLifecycle

/// A scene-based application for the scene tests: `Harness` with a scene manifest, the recording
/// application delegate `a` (plus the scene-session and Handoff methods), and a recording scene
/// delegate `s`; observers of the six scene notifications record into `seen` with the scene's id.
extension Harness {
    static func scenes(_ configure: (inout Configuration) -> Void = { _ in }, sceneDelegates: [String] = ["s"]) throws -> Harness {
        let h = try Harness({ configuration in
            configuration.sceneManifest = SceneManifest()
            configure(&configuration)
        })
        h.app.removeDelegate(id: "a")
        var handlers = h.recordingDelegate("a")
        h.addHandoffMethods(&handlers, "a")
        try h.app.addDelegate(handlers, id: "a")
        for id in sceneDelegates { try h.app.addSceneDelegate(h.recordingSceneDelegate(id), id: id) }
        for name in NotificationName.sceneNames {
            h.app.center.observe(name, owner: "observer") { [unowned h] note in
                let scene = h.app.scenes.first { $0.sender == note.sender }?.id ?? "?"
                h.seen.append("note \(note.name) \(scene)")
            }
        }
        return h
    }

    func addHandoffMethods(_ h: inout DelegateHandlers, _ id: String) {
        h.configurationForConnecting = { [unowned self] app, session, options in
            seen.append("\(id) configurationForConnecting \(session.persistentIdentifier) urls=\(options.urlContexts) activities=\(options.userActivities.map(\.activityType)) state=\(app.state)")
            return SceneConfiguration(name: "Main")
        }
        h.didDiscardSceneSessions = { [unowned self] _, sessions in
            seen.append("\(id) didDiscardSceneSessions \(sessions.map(\.persistentIdentifier))")
        }
        h.willContinueUserActivity = { [unowned self] app, type in
            seen.append("\(id) willContinue \(type) state=\(app.state)"); return true
        }
        h.continueUserActivity = { [unowned self] app, activity in
            seen.append("\(id) continue \(activity) state=\(app.state)"); return true
        }
        h.didFailToContinueUserActivity = { [unowned self] _, type, error in seen.append("\(id) didFail \(type) \(error)") }
        h.didUpdateUserActivity = { [unowned self] _, activity in seen.append("\(id) didUpdate \(activity)") }
    }

    /// Scene delegate `id`: records every call with the scene id and both states; `restoring` answers
    /// `stateRestorationActivityForScene:`.
    func recordingSceneDelegate(_ id: String) -> SceneDelegateHandlers {
        var h = SceneDelegateHandlers()
        func log(_ m: DelegateMethod, _ app: Application, _ scene: Scene, _ extra: String = "") {
            seen.append("\(id) \(m.selector) \(scene.id)\(extra) scene=\(scene.state) app=\(app.state)")
        }
        h.willConnect = { app, scene, session, options in
            var extra = ""
            if let activity = session.stateRestorationActivity { extra += " restored=\(activity)" }
            if !options.isEmpty { extra += " urls=\(options.urlContexts) activities=\(options.userActivities)" }
            log(.sceneWillConnect, app, scene, extra)
        }
        h.didDisconnect = { log(.sceneDidDisconnect, $0, $1) }
        h.didBecomeActive = { log(.sceneDidBecomeActive, $0, $1) }
        h.willResignActive = { log(.sceneWillResignActive, $0, $1) }
        h.willEnterForeground = { log(.sceneWillEnterForeground, $0, $1) }
        h.didEnterBackground = { log(.sceneDidEnterBackground, $0, $1) }
        h.openURLContexts = { app, scene, contexts in log(.sceneOpenURLContexts, app, scene, " \(contexts) \(contexts.map(\.options))") }
        h.stateRestorationActivity = { [unowned self] app, scene in
            log(.stateRestorationActivity, app, scene)
            return restoring[scene.id]
        }
        h.willContinueUserActivity = { app, scene, type in log(.sceneWillContinueUserActivity, app, scene, " \(type)") }
        h.continueUserActivity = { app, scene, activity in log(.sceneContinueUserActivity, app, scene, " \(activity)") }
        h.didFailToContinueUserActivity = { app, scene, type, error in
            log(.sceneDidFailToContinueUserActivity, app, scene, " \(type) \(error)")
        }
        h.didUpdateUserActivity = { app, scene, activity in log(.sceneDidUpdateUserActivity, app, scene, " \(activity)") }
        h.restoreInteractionState = { app, scene, activity in log(.sceneRestoreInteractionState, app, scene, " \(activity)") }
        return h
    }

    /// Scene states by id, in connection order: `main=foreground-active`.
    var sceneStates: [String] { app.scenes.map { "\($0.id)=\($0.state)" } }
}
