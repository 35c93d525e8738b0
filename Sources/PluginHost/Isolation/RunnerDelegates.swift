import AppLifecycle
import CLifecycleABI
import LifecycleC

/// Calls an isolated plugin's delegate function in its process: the handler the C layer's bridge bound
/// for row `row`, with the arguments the host sent. [main-thread]
enum RunnerDelegates {
    /// - Returns: the function's answer (false for a void one) and, for a writable archive, what the
    ///   plugin left in it.
    static func invoke(_ row: Int, _ a: DelegateArguments, _ h: DelegateHandlers, app: Application, link: RunnerLink,
                       call: UInt64) -> (answer: Bool, archive: UserInfo?)
    {
        let method = FFIDelegates.functions[row].method
        let dict = a.dict ?? UserInfo()
        switch method {
        case .willFinishLaunching: return (h.willFinishLaunching?(app, dict) ?? true, nil)
        case .didFinishLaunching: return (h.didFinishLaunching?(app, dict) ?? true, nil)
        case .didBecomeActive: h.didBecomeActive?(app)
        case .willResignActive: h.willResignActive?(app)
        case .didEnterBackground: h.didEnterBackground?(app)
        case .willEnterForeground: h.willEnterForeground?(app)
        case .willTerminate: h.willTerminate?(app)
        case .didReceiveMemoryWarning: h.didReceiveMemoryWarning?(app)
        case .significantTimeChange: h.significantTimeChange?(app)
        case .protectedDataWillBecomeUnavailable: h.protectedDataWillBecomeUnavailable?(app)
        case .protectedDataDidBecomeAvailable: h.protectedDataDidBecomeAvailable?(app)
        case .openURL: return (h.openURL?(app, a.text ?? "", a.secondText, a.annotation?["value"]) ?? false, nil)
        case .openURLWithOptions: return (h.openURLWithOptions?(app, a.text ?? "", dict) ?? false, nil)
        case .performFetch: h.performFetch?(app, completion(a.key, link))
        case .didReceiveRemoteNotificationWithCompletion: h.didReceiveRemoteNotificationWithCompletion?(app, dict, completion(a.key, link))
        case .didReceiveRemoteNotification: h.didReceiveRemoteNotification?(app, dict)
        case .shouldSaveApplicationState:
            let archive = StateArchive(values: dict)
            return (h.shouldSaveApplicationState?(app, archive) ?? false, archive.values)
        case .shouldRestoreApplicationState: return (h.shouldRestoreApplicationState?(app, StateArchive(values: dict)) ?? false, nil)
        case .willEncodeRestorableState:
            let archive = StateArchive(values: dict)
            h.willEncodeRestorableState?(app, archive)
            return (false, archive.values)
        case .didDecodeRestorableState: h.didDecodeRestorableState?(app, StateArchive(values: dict))
        case .willContinueUserActivity: return (h.willContinueUserActivity?(app, a.text ?? "") ?? false, nil)
        case .continueUserActivity:
            guard let activity = UserActivity(dictionary: dict) else { return (false, nil) }
            return (h.continueUserActivity?(app, activity) ?? false, nil)
        case .didFailToContinueUserActivity: h.didFailToContinueUserActivity?(app, a.text ?? "", a.secondText ?? "")
        case .didUpdateUserActivity:
            if let activity = UserActivity(dictionary: dict) { h.didUpdateUserActivity?(app, activity) }
        default:
            RunnerLink.fatal("delegate row \(row) (\(method)) cannot be called in an isolated plugin")
        }
        return (false, nil)
    }

    /// A completion handler whose calls go back to the host as `completed` frames (from any thread, as
    /// the plugin calls it; the C layer's completion table has already told a repeat from a first call).
    private static func completion(_ key: UInt64, _ link: RunnerLink) -> FetchCompletionHandler {
        FetchCompletionHandler { result, repeated in
            link.send { out in
                out.begin(.completed, word: key)
                out.u32(UInt32(result.lcFetchResult))
                out.u8(repeated ? 1 : 0)
                out.end()
            }
        }
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
