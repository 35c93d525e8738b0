import AppLifecycle

// The delegate bridge's scene rows (ABI 1.2): the scene delegate's methods bound into a
// `SceneDelegateHandlers`, through the same conventions, marshalling and calls as the application's.
// Each C function receives the scene's handle (`lc_scene *`: the scene's address, its notifications'
// sender) right after the receiver.

extension FFIDelegates {
    static func installScene(_ function: Function, _ f: BoundFunction, _ receiver: Receiver,
                             into handlers: inout SceneDelegateHandlers)
    {
        let method = function.method
        switch function.shape {
        case .sceneNotify(let set):
            set(&handlers) { _, scene in receiver.void(f, method, handle(scene), core: 1) }
        case .sceneWillConnect:
            handlers.willConnect = { _, scene, session, options in
                withDict(connectionDict(options, restored: session.stateRestorationActivity)) {
                    receiver.void(f, method, handle(scene), $0, core: 2)
                }
            }
        case .sceneOpenURLs:
            handlers.openURLContexts = { _, scene, contexts in
                withDict(["urlContexts": .list(contexts.map(contextValue))]) { receiver.void(f, method, handle(scene), $0, core: 2) }
            }
        case .sceneRestoration:
            handlers.stateRestorationActivity = { _, scene in
                let box = UserInfoBox(UserInfo())
                let save = withExtendedLifetime(box) { receiver.bool(f, method, handle(scene), UnsafeRawPointer(box.opaque), core: 2) }
                // Only a well-formed activity is saved; anything else saves nothing (the previous archive stays).
                return save ? UserActivity(dictionary: box.value) : nil
            }
        case .sceneWithString(let set):
            set(&handlers) { _, scene, text in text.withCString { receiver.void(f, method, handle(scene), $0, core: 2) } }
        case .sceneActivity(let set):
            set(&handlers) { _, scene, activity in
                withDict(activity.dictionary) { receiver.void(f, method, handle(scene), $0, core: 2) }
            }
        case .sceneFail:
            handlers.didFailToContinueUserActivity = { _, scene, type, error in
                type.withCString { type in error.withCString { receiver.void(f, method, handle(scene), type, $0, core: 3) } }
            }
        default:
            preconditionFailure("\(function.symbol) is an application delegate method: bound by bind")
        }
    }

    /// The scene's `lc_scene *`: its address, as its notifications' sender (`NotificationSender(scene)`).
    @inline(__always)
    static func handle(_ scene: Scene) -> UnsafeRawPointer? { UnsafeRawPointer(bitPattern: scene.sender.rawValue) }

    /// Connection options as the C functions see them: `urlContexts` and `userActivities` (each only
    /// when not empty), and `stateRestorationActivity` when this delegate saved one.
    package static func connectionDict(_ options: SceneConnectionOptions, restored: UserActivity?) -> UserInfo {
        var dict = UserInfo()
        if !options.urlContexts.isEmpty { dict["urlContexts"] = .list(options.urlContexts.map(contextValue)) }
        if !options.userActivities.isEmpty { dict["userActivities"] = .list(options.userActivities.map { .dict($0.dictionary) }) }
        if let restored { dict["stateRestorationActivity"] = .dict(restored.dictionary) }
        return dict
    }

    /// The options and restored activity of a dictionary `connectionDict` made (what crossed to another
    /// process): its inverse. Entries of any other shape are skipped.
    package static func connectionOptions(_ dict: UserInfo) -> (options: SceneConnectionOptions, restored: UserActivity?) {
        var options = SceneConnectionOptions(urlContexts: urlContexts(dict))
        if case .list(let activities)? = dict["userActivities"] {
            options.userActivities = activities.compactMap { if case .dict(let d) = $0 { UserActivity(dictionary: d) } else { nil } }
        }
        var restored: UserActivity?
        if case .dict(let activity)? = dict["stateRestorationActivity"] { restored = UserActivity(dictionary: activity) }
        return (options, restored)
    }

    /// The URLs to open under `urlContexts` (`contextValue`'s inverse).
    package static func urlContexts(_ dict: UserInfo) -> [OpenURLContext] {
        guard case .list(let contexts)? = dict["urlContexts"] else { return [] }
        return contexts.compactMap { value in
            guard case .dict(let context) = value, case .string(let url)? = context["url"] else { return nil }
            if case .dict(let options)? = context["options"] { return OpenURLContext(url: url, options: options) }
            return OpenURLContext(url: url)
        }
    }

    /// One URL to open: `{"url": …, "options": {…}}`.
    package static func contextValue(_ context: OpenURLContext) -> UserInfoValue {
        .dict(["url": .string(context.url), "options": .dict(context.options)])
    }
}
