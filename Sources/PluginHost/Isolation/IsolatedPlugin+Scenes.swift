import AppLifecycle
import LifecycleC

// An isolated plugin's scene delegate, as the engine sees it: a `SceneDelegateHandlers` table whose
// handlers send frames naming the scene (`SceneSnapshot`: its process's proxy is current as of the
// frame), in order with the notifications; `stateRestorationActivityForScene:` waits for its answer.

extension IsolatedPlugin {
    /// The handlers of the scene delegate rows the plugin's process reported. [loop-thread]
    func makeSceneHandlers(_ rows: FFIDelegates.Rows) -> SceneDelegateHandlers {
        var h = SceneDelegateHandlers()
        for row in FFIDelegates.functions.indices where rows.contains(row) {
            switch FFIDelegates.functions[row].shape {
            case .sceneNotify(let set):
                set(&h) { [unowned self] app, scene in send(row, DelegateArguments(scene: SceneSnapshot(scene, in: app))) }
            case .sceneWillConnect:
                h.willConnect = { [unowned self] app, scene, session, options in
                    send(row, DelegateArguments(dict: FFIDelegates.connectionDict(options, restored: session.stateRestorationActivity),
                                                scene: SceneSnapshot(scene, in: app)))
                }
            case .sceneOpenURLs:
                h.openURLContexts = { [unowned self] app, scene, contexts in
                    send(row, DelegateArguments(dict: ["urlContexts": .list(contexts.map(FFIDelegates.contextValue))],
                                                scene: SceneSnapshot(scene, in: app)))
                }
            case .sceneRestoration:
                h.stateRestorationActivity = { [unowned self] app, scene in
                    let reply = ask(row, DelegateArguments(scene: SceneSnapshot(scene, in: app)))
                    guard reply.answer else { return nil }
                    guard let values = reply.archive else {
                        // The call is finished (answered): named here, not found among the frames in flight.
                        let method = FFIDelegates.functions[row].method.selector
                        fail(.protocolViolation("the answer to \(method) has no activity"), during: method)
                        return nil
                    }
                    // A malformed activity saves nothing, as in-process.
                    return UserActivity(dictionary: values)
                }
            case .sceneWithString(let set):
                set(&h) { [unowned self] app, scene, text in send(row, DelegateArguments(text: text, scene: SceneSnapshot(scene, in: app))) }
            case .sceneActivity(let set):
                set(&h) { [unowned self] app, scene, activity in
                    send(row, DelegateArguments(dict: activity.dictionary, scene: SceneSnapshot(scene, in: app)))
                }
            case .sceneFail:
                h.didFailToContinueUserActivity = { [unowned self] app, scene, type, error in
                    send(row, DelegateArguments(text: type, secondText: error, scene: SceneSnapshot(scene, in: app)))
                }
            default:
                continue
            }
        }
        return h
    }
}
