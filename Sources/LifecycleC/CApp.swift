import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc
import Synchronization

// The implementations behind the lc_app_* functions and the host-API table. Each checks its
// arguments first (one guard each, its own message), then calls the engine; failures go through
// lcFail so that lc_last_error_message() can say what happened.

/// A C callback and its context, carried across threads (the C caller vouches for the context).
struct CCallback<F>: @unchecked Sendable {
    // @unchecked: two lets; the C caller vouches that fn(ctx) may run on any thread (the watchdog's).
    let fn: F
    let ctx: UnsafeMutableRawPointer?
}

extension AppHandle {
    package func observe(_ name: UnsafePointer<CChar>?, sender: UnsafeRawPointer?, fn: lc_observer_fn?, ctx: UnsafeMutableRawPointer?,
                 owner: String, out: UnsafeMutablePointer<lc_observer_token>?, function: String) -> lc_status
    {
        guard let name else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): name is NULL") }
        guard let fn else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): fn is NULL") }
        let notificationName: NotificationName
        do { notificationName = try NotificationName(cString: name) } catch { return lcFail(error) }
        return observe(notificationName, sender: sender, fn: fn, ctx: ctx, owner: owner, out: out)
    }

    /// `observe` by interned id: 0 or an id never issued is LC_ERR_UNKNOWN_NAME naming the id.
    /// [loop-thread] (the caller checks).
    package func observe(nameID: UInt32, sender: UnsafeRawPointer?, fn: lc_observer_fn?, ctx: UnsafeMutableRawPointer?,
                         owner: String, out: UnsafeMutablePointer<lc_observer_token>?, function: String) -> lc_status
    {
        guard let name = NotificationName(internedID: nameID) else { return lcUnknownNameID(nameID, function) }
        guard let fn else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): fn is NULL") }
        return observe(name, sender: sender, fn: fn, ctx: ctx, owner: owner, out: out)
    }

    private func observe(_ notificationName: NotificationName, sender: UnsafeRawPointer?, fn: lc_observer_fn,
                         ctx: UnsafeMutableRawPointer?, owner: String, out: UnsafeMutablePointer<lc_observer_token>?) -> lc_status
    {
        let token = app.center.observeRaw(notificationName, sender: UInt(bitPattern: sender), owner: owner,
                                          function: unsafeBitCast(fn, to: RawObserverFunction.self), context: ctx)
        out?.pointee = token.rawValue
        return lc_status(LC_OK)
    }

    /// A plugin's removal: only an observer the plugin (id `owner`) registered itself.
    package func removeObserver(_ token: lc_observer_token, owner: String, function: String) -> lc_status {
        guard app.center.removeObserver(ObserverToken(rawValue: token), owner: owner) else {
            return lcFail(lc_status(LC_ERR_NOT_FOUND), "\(function): plugin '\(owner)' has no observer with token \(token)")
        }
        return lc_status(LC_OK)
    }

    package func removeObserver(_ token: lc_observer_token, function: String) -> lc_status {
        guard app.center.removeObserver(ObserverToken(rawValue: token)) else {
            return lcFail(lc_status(LC_ERR_NOT_FOUND), "\(function): no observer has token \(token)")
        }
        return lc_status(LC_OK)
    }

    package func post(_ name: UnsafePointer<CChar>?, sender: UnsafeRawPointer?, userInfo: OpaquePointer?, function: String) -> lc_status {
        guard let name else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): name is NULL") }
        let notificationName: NotificationName
        do { notificationName = try NotificationName(cString: name) } catch { return lcFail(error) }
        return post(notificationName, sender: sender, userInfo: userInfo, function: function)
    }

    /// Posts an interned name. [thread-safe] On the loop thread observers have run when this returns;
    /// from another thread the post is queued (no lock but the loop's queue lock, no `String`), or
    /// refused with `LC_ERR_QUEUE_FULL` when this thread is over the queue's bound.
    /// `userInfo` is copied (its value is read now).
    /// On the loop thread, `LC_ERR_NESTING_LIMIT` when refused at the nesting limit. On any thread,
    /// `LC_ERR_INVALID_ARGUMENT` when `userInfo` is over `UserInfoLimits` (nothing posted).
    package func post(_ name: NotificationName, sender: UnsafeRawPointer?, userInfo: OpaquePointer?,
                      function: String = "post") -> lc_status
    {
        if userInfo != nil, let refused = lcPostLimitRefusal(userInfo, function) { return refused }
        let box = userInfo.map { UserInfoBox.from($0) }
        let posted = center._withUnsafeGuaranteedRef {
            $0.post(name, sender: NotificationSender(rawValue: UInt(bitPattern: sender)), userInfo: box?.current, rawUserInfo: box)
        }
        if posted { return lc_status(LC_OK) }
        return loop.isOnLoopThread ? lcNestingLimit(name.rawValue, function) : lcQueueFull(function)
    }

    package func beginBackgroundTask(_ name: UnsafePointer<CChar>?, expiration: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?,
                             ctx: UnsafeMutableRawPointer?, owner: String, out: UnsafeMutablePointer<lc_task_id>?,
                             function: String) -> lc_status
    {
        let handler = expiration.map { fn in { fn(ctx) } }
        do {
            let id = try app.beginBackgroundTask(named: name.map { String(cString: $0) } ?? "", owner: owner,
                                                 expirationHandler: handler)
            out?.pointee = id.rawValue
            return lc_status(LC_OK)
        } catch {
            return lcFail(error)
        }
    }

    /// [thread-safe] From another thread the end is applied on the loop; an unknown id is then only logged.
    package func endBackgroundTask(_ task: lc_task_id, function: String) -> lc_status {
        let id = BackgroundTaskID(rawValue: task)
        if loop.isOnLoopThread {
            do { try app.endBackgroundTask(id) } catch { return lcFail(error) }
        } else {
            app.performForeign(.endBackgroundTask(id)) { [self] in
                do { try app.endBackgroundTask(id) } catch let error as ApplicationError {
                    app.configuration.logger.warning("\(function): \(error.message)")
                } catch {}
            }
        }
        return lc_status(LC_OK)
    }

    package func addTimer(_ seconds: Double, fn: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?, ctx: UnsafeMutableRawPointer?,
                  owner: String?, out: UnsafeMutablePointer<lc_source_id>?, function: String) -> lc_status
    {
        if let problem = Self.timerArgumentProblem(seconds, fn: fn, function: function) { return problem }
        guard let fn else { return lc_status(LC_ERR_INVALID_ARGUMENT) }
        let id = addTimer(seconds: seconds, owner: owner) { fn(ctx) }
        out?.pointee = id
        return lc_status(LC_OK)
    }

    /// The checks of a timer's arguments: nil when they are fine, else the failure's status (the
    /// message set). [thread-safe]
    package static func timerArgumentProblem(_ seconds: Double, fn: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?,
                                             function: String) -> lc_status?
    {
        guard fn != nil else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): fn is NULL") }
        guard seconds.isFinite, seconds >= 0 else {
            return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): seconds must be a finite number ≥ 0, not \(seconds)")
        }
        return nil
    }

    package func cancelTimer(_ source: lc_source_id, function: String) -> lc_status {
        guard cancelTimer(source) else { return lcFail(lc_status(LC_ERR_NOT_FOUND), "\(function): no timer has id \(source)") }
        return lc_status(LC_OK)
    }

    /// Runs `fn(ctx)` on the loop, marked as a callback of `owner` (a plugin's, or nil for a C caller).
    /// [thread-safe] Allocates nothing: one queue message holds the function, the context and the owner
    /// (`AppNotificationCenter.enqueueWork`).
    package func performAsync(_ fn: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?, ctx: UnsafeMutableRawPointer?,
                              owner: WorkOwner? = nil, function: String) -> lc_status
    {
        guard let fn else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): fn is NULL") }
        guard app.center.enqueueWork(fn, context: ctx, owner: owner) else { return lcQueueFull(function) }
        return lc_status(LC_OK)
    }
}

// MARK: Creating an application

/// The configuration a C caller gave, over the defaults; a shorter (older) struct's tail stays default.
/// - Throws: `CStatusError` (`LC_ERR_INVALID_ARGUMENT`, naming the field) for a struct_size below 8, a
///   budget out of range (`CSeconds.budget`) or an enumeration, bit set or path out of range (`ConfigRanges`).
package func configuration(from config: UnsafePointer<lc_config_t>?) throws(CStatusError) -> Configuration {
    try settings(from: config).configuration
}

/// The configuration and the loop's clock (`lc_config_t.clock`, 1.7) a C caller gave, over the
/// defaults; a shorter (older) struct's tail stays default.
/// - Throws: as `configuration(from:)`; a clock other than the two of the header is refused too.
package func settings(from config: UnsafePointer<lc_config_t>?) throws(CStatusError) -> (configuration: Configuration, clock: LoopClock) {
    var configuration = Configuration()
    guard let config else { return (configuration, .monotonic) }
    var c = lc_config_t()
    lc_config_init_defaults(&c)
    let size = Int(config.pointee.struct_size)
    guard size >= 8 else {
        throw CStatusError(status: lc_status(LC_ERR_INVALID_ARGUMENT), message: "config->struct_size is \(size); use lc_config_init")
    }
    withUnsafeMutableBytes(of: &c) { $0.copyMemory(from: UnsafeRawBufferPointer(start: config, count: min(size, MemoryLayout<lc_config_t>.size))) }
    let archiveDirectory = try ConfigRanges.check(c)  // the enumerations, bit sets and path: in range, or refused
    configuration.watchdogPolicy = Int(c.watchdog_policy) == LC_WATCHDOG_REPORT ? .report : .terminate
    configuration.backgroundModes = Configuration.BackgroundModes(rawValue: c.background_modes)
    configuration.exitsOnSuspend = c.exits_on_suspend != 0
    var b = configuration.budgets
    b.launch = try CSeconds.budget(c.launch_budget, field: "launch_budget", keep: b.launch)
    b.didEnterBackground = try CSeconds.budget(c.did_enter_background_budget, field: "did_enter_background_budget", keep: b.didEnterBackground)
    b.willTerminate = try CSeconds.budget(c.will_terminate_budget, field: "will_terminate_budget", keep: b.willTerminate)
    b.completionHandler = try CSeconds.budget(c.completion_handler_budget, field: "completion_handler_budget", keep: b.completionHandler)
    b.backgroundTask = try CSeconds.budget(c.background_task_budget, field: "background_task_budget", keep: b.backgroundTask)
    b.expirationWarning = try CSeconds.budget(c.expiration_warning, field: "expiration_warning", keep: b.expirationWarning)
    b.hang = try CSeconds.budget(c.hang_budget, field: "hang_budget", keep: b.hang)  // 1.3: a 1.2 struct is zero-filled there
    configuration.budgets = b
    configuration.archiveDirectory = archiveDirectory
    configuration.memoryWarningLimit = c.memory_warning_limit == 0 ? nil : Int(c.memory_warning_limit)  // 1.5; checked: ≤ 1000
    if c.scene_manifest & UInt32(LC_SCENE_MANIFEST) != 0 {
        configuration.sceneManifest = SceneManifest(supportsMultipleScenes: c.scene_manifest & UInt32(LC_SCENE_MANIFEST_SINGLE_SCENE) == 0)
    }
    if let fn = c.on_watchdog {
        let callback = CCallback(fn: fn, ctx: c.on_watchdog_ctx)
        configuration.onWatchdogReport = { report in
            report.observer.withCString { observer in
                report.event.withCString { event in
                    report.budgetName.withCString { budgetName in
                        report.description.withCString { message in
                            var r = lc_watchdog_report_t(
                                struct_size: UInt32(MemoryLayout<lc_watchdog_report_t>.size), observer: observer,
                                event: event, budget_name: budgetName, budget_seconds: report.budget.secondsDouble,
                                elapsed_seconds: report.elapsed.secondsDouble,
                                policy: report.policy == .report ? lc_watchdog_policy(LC_WATCHDOG_REPORT) : lc_watchdog_policy(LC_WATCHDOG_TERMINATE),
                                message: message)
                            callback.fn(&r, callback.ctx)
                        }
                    }
                }
            }
        }
    }
    return (configuration, c.clock.rawValue == LC_CLOCK_MANUAL.rawValue ? .manual : .monotonic)  // 1.7; checked
}

/// Fills a config with the defaults.
package func lc_config_init_defaults(_ config: UnsafeMutablePointer<lc_config_t>) {
    config.initialize(to: lc_config_t())
    config.pointee.struct_size = UInt32(MemoryLayout<lc_config_t>.size)
    config.pointee.watchdog_policy = lc_watchdog_policy(LC_WATCHDOG_TERMINATE)
    config.pointee.launch_budget = 5
    config.pointee.did_enter_background_budget = 5
    config.pointee.will_terminate_budget = 5
    config.pointee.completion_handler_budget = 30
    config.pointee.background_task_budget = 30
    config.pointee.expiration_warning = 5
    config.pointee.hang_budget = 5
}

// MARK: Actions

extension AppHandle {
    package func perform(_ action: UnsafePointer<lc_action_t>?) -> lc_status {
        guard let action else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_perform: action is NULL") }
        // Append-only growth: any struct that has `kind` is accepted; what it lacks is zero-filled.
        let size = Int(action.pointee.struct_size)
        let minimum = MemoryLayout<lc_action_t>.offset(of: \lc_action_t.options)!
        guard size >= minimum else {
            return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT),
                          "lc_app_perform: action->struct_size is \(size); an action has at least struct_size and kind (\(minimum) bytes)")
        }
        var a = lc_action_t()
        withUnsafeMutableBytes(of: &a) {
            $0.copyMemory(from: UnsafeRawBufferPointer(start: action, count: min(size, MemoryLayout<lc_action_t>.size)))
        }
        let options = a.options.map { UserInfoBox.from($0).value } ?? UserInfo()
        let scene = a.scene.map { String(cString: $0) }  // NULL in a struct too short to hold it (1.1)
        let engineAction: Action
        switch Int(a.kind) {
        case LC_ACTION_LAUNCH: engineAction = .launch(options: options, scene: scene)
        case LC_ACTION_LAUNCH_BACKGROUND: engineAction = .launch(options: options, inBackground: true, scene: scene)
        case LC_ACTION_INTERRUPT: engineAction = .beginInterruption
        case LC_ACTION_DISMISS: engineAction = .dismissInterruption
        case LC_ACTION_ACCEPT: engineAction = .acceptInterruption
        case LC_ACTION_HOME: engineAction = .home
        case LC_ACTION_FOREGROUND: engineAction = .foreground
        case LC_ACTION_LOCK: engineAction = .lock
        case LC_ACTION_UNLOCK: engineAction = .unlock
        case LC_ACTION_MEMORY_WARNING:
            guard let level = [MemoryWarningLevel.normal, .warning, .critical][safe: Int(a.memory_level)] else {
                return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_perform: memory_level \(a.memory_level) is not LC_MEMORY_NORMAL, _WARNING or _CRITICAL")
            }
            engineAction = .memoryWarning(level)
        case LC_ACTION_TIME_CHANGE: engineAction = .significantTimeChange
        case LC_ACTION_OPEN_URL:
            guard let url = a.url else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_perform: open-url needs action->url") }
            engineAction = .openURL(String(cString: url), sourceApplication: a.source_application.map { String(cString: $0) },
                                    annotation: a.annotation.map { .dict(UserInfoBox.from($0).value) }, scene: scene)
        case LC_ACTION_FETCH: engineAction = .backgroundFetch
        case LC_ACTION_REMOTE_NOTIFICATION: engineAction = .remoteNotification(options)
        case LC_ACTION_OPEN_REMOTE_NOTIFICATION: engineAction = .openRemoteNotification(options)  // 1.5
        case LC_ACTION_LOCAL_NOTIFICATION: engineAction = .localNotification(options)  // 1.5
        case LC_ACTION_OPEN_LOCAL_NOTIFICATION: engineAction = .localNotification(options, opened: true)
        case LC_ACTION_REMOTE_REGISTRATION:
            if let token = a.device_token {
                engineAction = .remoteRegistration(token: String(cString: token))
            } else if let error = a.error {
                engineAction = .remoteRegistration(error: String(cString: error))
            } else {
                return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_perform: a remote registration needs action->device_token or action->error")
            }
        case LC_ACTION_URL_SESSION:  // 1.5
            guard let identifier = a.url_session else {
                return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_perform: a URL session's events need action->url_session")
            }
            engineAction = .urlSessionEvents(String(cString: identifier))
        case LC_ACTION_LOW_POWER_MODE: engineAction = .powerState(lowPower: a.low_power_mode)  // 1.6
        case LC_ACTION_THERMAL_STATE:  // 1.6
            guard a.thermal_state.rawValue <= 3, let state = ThermalState(rawValue: UInt8(a.thermal_state.rawValue)) else {
                return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT),
                              "lc_app_perform: thermal_state \(a.thermal_state.rawValue) is not LC_THERMAL_NOMINAL, _FAIR, _SERIOUS or _CRITICAL")
            }
            engineAction = .thermalState(state)
        case LC_ACTION_SCENE_CLOSE:  // 1.5
            guard let scene else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_perform: a scene action needs action->scene") }
            engineAction = .closeScene(scene)
        case LC_ACTION_TERMINATE: engineAction = .terminate
        case LC_ACTION_PURGE: engineAction = .purge
        case LC_ACTION_SCENE_CONNECT...LC_ACTION_UPDATE_USER_ACTIVITY:
            switch sceneAction(a, scene: scene) {
            case .success(let action): engineAction = action
            case .failure(let error): return lcFail(error.status, error.message)
            }
        default:
            return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_perform: unknown action kind \(a.kind)")
        }
        do { try app.perform(engineAction) } catch { return lcFail(error) }
        return lc_status(LC_OK)
    }
}

extension AppHandle {
    /// The scene and Handoff actions (ABI 1.2), their arguments checked.
    private func sceneAction(_ a: lc_action_t, scene: String?) -> Result<Action, CStatusError> {
        func invalid(_ message: String) -> Result<Action, CStatusError> {
            .failure(CStatusError(status: lc_status(LC_ERR_INVALID_ARGUMENT), message: "lc_app_perform: \(message)"))
        }
        let kind = Int(a.kind)
        if kind <= LC_ACTION_SCENE_DISCARD {
            guard let scene else { return invalid("a scene action needs action->scene") }
            switch kind {
            case LC_ACTION_SCENE_CONNECT: return .success(.connectScene(scene))
            case LC_ACTION_SCENE_CONNECT_BACKGROUND: return .success(.connectScene(scene, inBackground: true))
            case LC_ACTION_SCENE_ACTIVATE: return .success(.activateScene(scene))
            case LC_ACTION_SCENE_DEACTIVATE: return .success(.deactivateScene(scene))
            case LC_ACTION_SCENE_BACKGROUND: return .success(.moveSceneToBackground(scene))
            case LC_ACTION_SCENE_FOREGROUND: return .success(.bringSceneToForeground(scene))
            case LC_ACTION_SCENE_DISCONNECT: return .success(.disconnectScene(scene))
            default: return .success(.discardSceneSession(scene))
            }
        }
        guard let dict = a.activity else { return invalid("a user activity action needs action->activity") }
        guard let activity = UserActivity(dictionary: UserInfoBox.from(dict).value) else {
            return invalid("action->activity is not a user activity: it needs a non-empty string \"activityType\", "
                + "and \"title\" (a string) and \"userInfo\" (a dictionary) when present")
        }
        switch kind {
        case LC_ACTION_CONTINUE_USER_ACTIVITY: return .success(.continueUserActivity(activity, scene: scene))
        case LC_ACTION_FAIL_TO_CONTINUE_USER_ACTIVITY:
            guard let error = a.error else { return invalid("a failed user activity needs action->error") }
            return .success(.failToContinueUserActivity(type: activity.activityType, error: String(cString: error), scene: scene))
        default: return .success(.updateUserActivity(activity, scene: scene))
        }
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}

// MARK: Delegates written in C

package func fetchResult(_ result: lc_fetch_result) -> FetchResult {
    switch Int(result) {
    case LC_FETCH_NEW_DATA: return .newData
    case LC_FETCH_NO_DATA: return .noData
    default: return .failed
    }
}

extension AppHandle {
    /// Adds a delegate given as an `lc_delegate_t` (copied; a shorter struct's tail counts as NULL).
    package func addDelegate(id: UnsafePointer<CChar>?, _ delegate: UnsafePointer<lc_delegate_t>?) -> lc_status {
        guard let id else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_add_delegate: id is NULL") }
        guard let delegate else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_add_delegate: delegate is NULL") }
        let size = Int(delegate.pointee.struct_size)
        guard size >= 16 else {
            return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_add_delegate: delegate->struct_size is \(size)")
        }
        var d = lc_delegate_t()
        withUnsafeMutableBytes(of: &d) {
            $0.copyMemory(from: UnsafeRawBufferPointer(start: delegate, count: min(size, MemoryLayout<lc_delegate_t>.size)))
        }
        // The fields in the bridge's row order; lc_delegate_t has no plain didReceiveRemoteNotification
        // and no openURL:options: (row 19). Its 1.2 fields are the rows after that, in order.
        func raw<F>(_ f: F?) -> UnsafeMutableRawPointer? { f.map { unsafeBitCast($0, to: UnsafeMutableRawPointer.self) } }
        let addresses: [UnsafeMutableRawPointer?] = [
            raw(d.will_finish_launching), raw(d.did_finish_launching), raw(d.did_become_active), raw(d.will_resign_active),
            raw(d.did_enter_background), raw(d.will_enter_foreground), raw(d.will_terminate), raw(d.did_receive_memory_warning),
            raw(d.significant_time_change), raw(d.protected_data_will_become_unavailable), raw(d.protected_data_did_become_available),
            raw(d.open_url), raw(d.perform_fetch), raw(d.did_receive_remote_notification), nil,
            raw(d.should_save_application_state), raw(d.should_restore_application_state),
            raw(d.will_encode_restorable_state), raw(d.did_decode_restorable_state), nil,
            raw(d.configuration_for_connecting), raw(d.did_discard_scene_sessions), raw(d.will_continue_user_activity),
            raw(d.continue_user_activity), raw(d.did_fail_to_continue_user_activity), raw(d.did_update_user_activity),
            raw(d.scene_will_connect), raw(d.scene_did_disconnect), raw(d.scene_did_become_active), raw(d.scene_will_resign_active),
            raw(d.scene_will_enter_foreground), raw(d.scene_did_enter_background), raw(d.scene_open_url_contexts),
            raw(d.scene_state_restoration_activity), raw(d.scene_will_continue_user_activity), raw(d.scene_continue_user_activity),
            raw(d.scene_did_fail_to_continue_user_activity), raw(d.scene_did_update_user_activity),
            raw(d.scene_restore_interaction_state), raw(d.application_did_finish_launching), raw(d.handle_open_url),
            raw(d.did_receive_local_notification), raw(d.did_register_for_remote_notifications),
            raw(d.did_fail_to_register_for_remote_notifications), raw(d.handle_events_for_background_url_session),
        ]
        let idString = String(cString: id)
        let convention = FFIDelegates.Convention.delegateStruct(app: UnsafeRawPointer(opaque), ctx: UnsafeRawPointer(d.ctx), id: idString)
        let (h, scenes) = addresses.withUnsafeBufferPointer {
            (FFIDelegates.bind(addresses: $0, convention: convention).handlers, FFIDelegates.bindScenes(addresses: $0, convention: convention))
        }
        do { try app.addDelegate(h, id: idString) } catch { return lcFail(error) }
        // The scene functions (1.2) make it a scene delegate too, under the same id.
        if !scenes.rows.isEmpty {
            do { try app.addSceneDelegate(scenes.handlers, id: idString) } catch {
                app.removeDelegate(id: idString)
                return lcFail(error)
            }
        }
        return lc_status(LC_OK)
    }

    /// Hands the archive to C as a dictionary and takes back what C wrote into it (a refused write:
    /// the encoding failed, `StateArchive.take`).
    @discardableResult
    static func withArchive(_ archive: StateArchive, _ body: (OpaquePointer) -> Bool) -> Bool {
        let box = UserInfoBox(archive.values)
        let answer = withExtendedLifetime(box) { body(box.opaque) }
        archive.take(box)
        return answer
    }
}
