import AppLifecycle
import CLifecycleABI
import LifecycleC

/// Calls an isolated plugin's delegate function in its process: the handler the C layer's bridge bound
/// for row `row`, with the arguments the host sent. [main-thread]
enum RunnerDelegates {
    /// One row's call: the arguments in, the answer (false for a void function) and, for a writable
    /// archive, what the plugin left in it out.
    typealias Call = (DelegateArguments) -> (answer: Bool, archive: UserInfo?)

    /// A row's call, in a struct: a bare function stored in an array is kept at its most general
    /// abstraction and called through thunks that copy the arguments (~700 instructions a call).
    struct Invoker {
        let call: Call
    }

    /// The failure of the writable archive the last call filled (a write into it refused: see
    /// `StateArchive.take`), for its `result` frame; taken (and cleared) by `takeEncodingFailure`. [main-thread]
    // nonisolated(unsafe): runner main thread only: set by an invoker, taken by PluginRunner.run right after the call.
    nonisolated(unsafe) private static var encodingFailure: EncodingFailure?

    /// The failure the last call left (`encodingFailure`), cleared. [main-thread]
    static func takeEncodingFailure() -> EncodingFailure? {
        defer { encodingFailure = nil }
        return encodingFailure
    }

    /// The invoker of `make(f)` when the handler `f` is there.
    static func some<F>(_ f: F?, _ make: (F) -> Call) -> Invoker? {
        guard let f else { return nil }
        return Invoker(call: make(f))
    }

    /// The calls of the rows `h` implements, by row (nil: not implemented): chosen once, when the plugin
    /// is bound, so that a call is an index and a closure, not a search by selector.
    static func invokers(_ h: DelegateHandlers, rows: FFIDelegates.Rows, scenes bound: (handlers: SceneDelegateHandlers, rows: FFIDelegates.Rows)?,
                         proxies: RunnerScenes, app: Application, link: RunnerLink) -> [Invoker?]
    {
        FFIDelegates.functions.indices.map { row in
            if rows.contains(row) { return invoker(row, h, app: app, link: link) }
            if let bound, bound.rows.contains(row) { return sceneInvoker(row, bound.handlers, app: app, scenes: proxies) }
            return nil
        }
    }

    private static func invoker(_ row: Int, _ h: DelegateHandlers, app: Application, link: RunnerLink) -> Invoker? {
        func void(_ body: ((Application) -> Void)?) -> Invoker? {
            some(body) { body in { _ in body(app); return (false, nil) } }
        }
        switch FFIDelegates.functions[row].method {
        case .willFinishLaunching: return some(h.willFinishLaunching) { f in { a in (f(app, a.dict ?? UserInfo()), nil) } }
        case .didFinishLaunching: return some(h.didFinishLaunching) { f in { a in (f(app, a.dict ?? UserInfo()), nil) } }
        case .didBecomeActive: return void(h.didBecomeActive)
        case .willResignActive: return void(h.willResignActive)
        case .didEnterBackground: return void(h.didEnterBackground)
        case .willEnterForeground: return void(h.willEnterForeground)
        case .willTerminate: return void(h.willTerminate)
        case .didReceiveMemoryWarning: return void(h.didReceiveMemoryWarning)
        case .significantTimeChange: return void(h.significantTimeChange)
        case .protectedDataWillBecomeUnavailable: return void(h.protectedDataWillBecomeUnavailable)
        case .protectedDataDidBecomeAvailable: return void(h.protectedDataDidBecomeAvailable)
        case .openURL: return some(h.openURL) { f in { a in (f(app, a.text ?? "", a.secondText, a.annotation?["value"]), nil) } }
        case .openURLWithOptions: return some(h.openURLWithOptions) { f in { a in (f(app, a.text ?? "", a.dict ?? UserInfo()), nil) } }
        case .performFetch: return some(h.performFetch) { f in { a in f(app, completion(a.key, link)); return (false, nil) } }
        case .didReceiveRemoteNotificationWithCompletion:
            return some(h.didReceiveRemoteNotificationWithCompletion) { f in { a in f(app, a.dict ?? UserInfo(), completion(a.key, link)); return (false, nil) } }
        case .didReceiveRemoteNotification:
            return some(h.didReceiveRemoteNotification) { f in { a in f(app, a.dict ?? UserInfo()); return (false, nil) } }
        case .shouldSaveApplicationState:
            return some(h.shouldSaveApplicationState) { f in { a in
                let archive = StateArchive(values: a.dict ?? UserInfo())
                let answer = f(app, archive)
                encodingFailure = archive.failure
                return (answer, archive.values)
            } }
        case .shouldRestoreApplicationState:
            return some(h.shouldRestoreApplicationState) { f in { a in (f(app, StateArchive(values: a.dict ?? UserInfo())), nil) } }
        case .willEncodeRestorableState:
            return some(h.willEncodeRestorableState) { f in { a in
                let archive = StateArchive(values: a.dict ?? UserInfo())
                f(app, archive)
                encodingFailure = archive.failure
                return (false, archive.values)
            } }
        case .didDecodeRestorableState:
            return some(h.didDecodeRestorableState) { f in { a in f(app, StateArchive(values: a.dict ?? UserInfo())); return (false, nil) } }
        case .willContinueUserActivity: return some(h.willContinueUserActivity) { f in { a in (f(app, a.text ?? ""), nil) } }
        // ABI 1.5: the older methods.
        case .applicationDidFinishLaunching: return void(h.applicationDidFinishLaunching)
        case .handleOpenURL: return some(h.handleOpenURL) { f in { a in (f(app, a.text ?? ""), nil) } }
        case .didReceiveLocalNotification:
            return some(h.didReceiveLocalNotification) { f in { a in f(app, a.dict ?? UserInfo()); return (false, nil) } }
        case .didRegisterForRemoteNotifications:
            return some(h.didRegisterForRemoteNotifications) { f in { a in f(app, a.text ?? ""); return (false, nil) } }
        case .didFailToRegisterForRemoteNotifications:
            return some(h.didFailToRegisterForRemoteNotifications) { f in { a in f(app, a.text ?? ""); return (false, nil) } }
        case .handleEventsForBackgroundURLSession:
            return some(h.handleEventsForBackgroundURLSession) { f in { a in
                f(app, a.text ?? "", URLSessionCompletionHandler(completion(a.key, link)))
                return (false, nil)
            } }
        case .continueUserActivity:
            return some(h.continueUserActivity) { f in { a in
                guard let activity = UserActivity(dictionary: a.dict ?? UserInfo()) else { return (false, nil) }
                return (f(app, activity), nil)
            } }
        case .didFailToContinueUserActivity:
            return some(h.didFailToContinueUserActivity) { f in { a in f(app, a.text ?? "", a.secondText ?? ""); return (false, nil) } }
        case .didUpdateUserActivity:
            return some(h.didUpdateUserActivity) { f in { a in
                if let activity = UserActivity(dictionary: a.dict ?? UserInfo()) { f(app, activity) }
                return (false, nil)
            } }
        case .configurationForConnecting: return configurationInvoker(h, app: app)
        case .didDiscardSceneSessions: return discardInvoker(h, app: app)
        default:
            return nil  // the scene delegate's rows: `sceneInvoker`
        }
    }

    /// A completion handler whose calls go back to the host as `completed` frames (from any thread, as
    /// the plugin calls it; the C layer's completion table has already told a repeat from a first call,
    /// and a late call once the host said the request ended: `RunnerRegistrations.requests`). [main-thread]
    private static func completion(_ key: UInt64, _ link: RunnerLink) -> FetchCompletionHandler {
        let handler = FetchCompletionHandler { result, repeated in
            let state = link.ownStateByte
            link.send { out in
                out.begin(.completed, word: key, state: state)
                out.u32(UInt32(result.lcFetchResult))
                out.u8(repeated ? 1 : 0)
                out.end()
            }
        }
        PluginRunner.current?.registrations.requests[key] = handler
        return handler
    }
}

extension FetchResult {
    /// The C constant (`LC_FETCH_NEW_DATA`, `_NO_DATA`, `_FAILED`).
    var lcFetchResult: Int {
        switch self {
        case .newData: LC_FETCH_NEW_DATA
        case .noData: LC_FETCH_NO_DATA
        case .failed: LC_FETCH_FAILED
        }
    }
}
