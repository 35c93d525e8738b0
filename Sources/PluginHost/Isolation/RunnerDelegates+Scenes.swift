import AppLifecycle
import LifecycleC

// The scene rows of an isolated plugin's process: each call's scene is the proxy of the scene the
// frame names (`RunnerScenes`), made current first; the dictionaries the host sent are turned back
// into the values the C layer's bridge marshals again, so the plugin sees what it sees in-process.

extension RunnerDelegates {
    /// The call of scene delegate row `row` (nil: `h` does not implement it). [main-thread]
    static func sceneInvoker(_ row: Int, _ h: SceneDelegateHandlers, app: Application, scenes: RunnerScenes) -> Invoker? {
        func on(_ body: @escaping (Scene, DelegateArguments) -> (answer: Bool, archive: UserInfo?)) -> Call {
            { a in
                guard let snapshot = a.scene else { RunnerLink.fatal("the host called scene delegate row \(row) without its scene") }
                return body(scenes.proxy(snapshot), a)
            }
        }
        func void(_ body: ((Application, Scene) -> Void)?) -> Invoker? {
            some(body) { f in on { scene, _ in f(app, scene); return (false, nil) } }
        }
        func activity(_ body: ((Application, Scene, UserActivity) -> Void)?) -> Invoker? {
            some(body) { f in on { scene, a in
                if let activity = UserActivity(dictionary: a.dict ?? UserInfo()) { f(app, scene, activity) }
                return (false, nil)
            } }
        }
        switch FFIDelegates.functions[row].method {
        case .sceneWillConnect:
            return some(h.willConnect) { f in on { scene, a in
                let (options, restored) = FFIDelegates.connectionOptions(a.dict ?? UserInfo())
                let session = SceneSession.mirror(scene.session.persistentIdentifier, configurationName: scene.session.configurationName,
                                                  stateRestorationActivity: restored)
                f(app, scene, session, options)
                return (false, nil)
            } }
        case .sceneDidDisconnect: return void(h.didDisconnect)
        case .sceneDidBecomeActive: return void(h.didBecomeActive)
        case .sceneWillResignActive: return void(h.willResignActive)
        case .sceneWillEnterForeground: return void(h.willEnterForeground)
        case .sceneDidEnterBackground: return void(h.didEnterBackground)
        case .sceneOpenURLContexts:
            return some(h.openURLContexts) { f in on { scene, a in
                f(app, scene, FFIDelegates.urlContexts(a.dict ?? UserInfo()))
                return (false, nil)
            } }
        case .stateRestorationActivity:
            return some(h.stateRestorationActivity) { f in on { scene, _ in
                let activity = f(app, scene)
                return (activity != nil, activity?.dictionary)
            } }
        case .sceneWillContinueUserActivity:
            return some(h.willContinueUserActivity) { f in on { scene, a in f(app, scene, a.text ?? ""); return (false, nil) } }
        case .sceneContinueUserActivity: return activity(h.continueUserActivity)
        case .sceneDidFailToContinueUserActivity:
            return some(h.didFailToContinueUserActivity) { f in on { scene, a in
                f(app, scene, a.text ?? "", a.secondText ?? "")
                return (false, nil)
            } }
        case .sceneDidUpdateUserActivity: return activity(h.didUpdateUserActivity)
        case .sceneRestoreInteractionState: return activity(h.restoreInteractionState)
        default:
            return nil
        }
    }

    /// `application:configurationForConnectingSceneSession:options:`: the session id and options the
    /// host sent; answers the configuration's name under "name".
    static func configurationInvoker(_ h: DelegateHandlers, app: Application) -> Invoker? {
        some(h.configurationForConnecting) { f in { a in
            let (options, _) = FFIDelegates.connectionOptions(a.dict ?? UserInfo())
            let configuration = f(app, SceneSession.mirror(a.text ?? "", configurationName: nil), options)
            return (true, ["name": .string(configuration.name)])
        } }
    }

    /// `application:didDiscardSceneSessions:`: the sessions the host sent (id → configuration name, "" for none).
    static func discardInvoker(_ h: DelegateHandlers, app: Application) -> Invoker? {
        some(h.didDiscardSceneSessions) { f in { a in
            let dict = a.dict ?? UserInfo()
            let sessions = dict.keys.map { id -> SceneSession in
                guard case .string(let name)? = dict[id], !name.isEmpty else { return SceneSession.mirror(id, configurationName: nil) }
                return SceneSession.mirror(id, configurationName: name)
            }
            f(app, sessions)
            return (false, nil)
        } }
    }
}
