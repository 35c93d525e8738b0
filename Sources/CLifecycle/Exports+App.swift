import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import LifecycleC
import PluginHost

// The lc_app_* functions of include/lifecycle.h: argument checks and a call into LifecycleC (plugins:
// PluginHost).

@c @implementation public func lc_config_init(_ config: UnsafeMutablePointer<lc_config_t>?) {
    guard let config else { return }
    lc_config_init_defaults(config)
}

@c @implementation public func lc_app_create(_ config: UnsafePointer<lc_config_t>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> lc_status {
    guard let out else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_create: out is NULL") }
    do {
        let (configuration, clock) = try settings(from: config)
        let handle = try AppHandle(configuration: configuration, clock: clock)
        out.pointee = OpaquePointer(Unmanaged.passRetained(handle).toOpaque())
        return lc_status(LC_OK)
    } catch let error as CStatusError {
        return lcFail(error.status, error.message)
    } catch let error as ApplicationError {
        return lcFail(error)
    } catch {
        return lcFail(lc_status(LC_ERR_INTERNAL), "lc_app_create: \(error)")
    }
}

@c @implementation public func lc_app_destroy(_ app: OpaquePointer?) {
    guard let app else { return }
    let handle = Unmanaged<AppHandle>.fromOpaque(UnsafeRawPointer(app))
    // Its plugins' deinit, its timers and its loop are the main thread's: from another thread the
    // application is left as it is (a leak, not a race), and the last error says why.
    guard handle.takeUnretainedValue().loop.isOnLoopThread else {
        _ = lcFail(lc_status(LC_ERR_WRONG_THREAD), "lc_app_destroy must be called on the main run loop's thread; the application was not destroyed")
        return
    }
    handle.takeUnretainedValue().shutdown()
    // From inside one of its own calls (a callback of lc_app_perform, lc_app_run, …): freed when the
    // outermost of them returns (`withApp`).
    if handle.takeUnretainedValue().callDepth.load(ordering: .relaxed) > 0 {
        handle.takeUnretainedValue().destroyPending.store(true, ordering: .relaxed)
        return
    }
    handle.release()
}

/// The handle, or an error status when it is NULL or used from the wrong thread.
///
/// On its main thread the call borrows the caller's reference (no retain and release: once a plugin
/// is loaded the handle is weakly referenced, so its count lives in a side table, ~125 instructions a
/// pair) and counts itself in `callDepth`, so that an `lc_app_destroy` made inside it frees the handle
/// only when the outermost call returns. From another thread (`mainThread: false`) it holds a reference
/// of its own.
func withApp(_ app: OpaquePointer?, _ function: String, mainThread: Bool = true, _ body: (AppHandle) -> lc_status) -> lc_status {
    guard let app else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): app is NULL") }
    let reference = Unmanaged<AppHandle>.fromOpaque(UnsafeRawPointer(app))
    guard mainThread else { return body(reference.takeUnretainedValue()) }
    return reference._withUnsafeGuaranteedRef { handle in
        guard handle.loop.isOnLoopThread else {
            return lcFail(lc_status(LC_ERR_WRONG_THREAD), "\(function) must be called on the main run loop's thread")
        }
        let depth = handle.callDepth.load(ordering: .relaxed)
        handle.callDepth.store(depth + 1, ordering: .relaxed)
        let status = body(handle)
        handle.callDepth.store(depth, ordering: .relaxed)
        if depth == 0, handle.destroyPending.load(ordering: .relaxed) { reference.release() }
        return status
    }
}

@c @implementation public func lc_app_state(_ app: OpaquePointer?) -> lc_state {
    guard let app else { return lc_state(LC_STATE_NOT_RUNNING) }
    return AppHandle.from(app).app.state.lcState
}

@c @implementation public func lc_app_is_device_locked(_ app: OpaquePointer?) -> Bool {
    app.map { AppHandle.from($0).app.isDeviceLocked } ?? false
}

@c @implementation public func lc_app_is_protected_data_available(_ app: OpaquePointer?) -> Bool {
    app.map { AppHandle.from($0).app.isProtectedDataAvailable } ?? false
}

@c @implementation public func lc_app_is_low_power_mode_enabled(_ app: OpaquePointer?) -> Bool {
    app.map { AppHandle.from($0).app.isLowPowerModeEnabled } ?? false
}

@c @implementation public func lc_app_thermal_state(_ app: OpaquePointer?) -> lc_thermal_state {
    lc_thermal_state(UInt32(app.map { AppHandle.from($0).app.thermalState.rawValue } ?? 0))
}

@c @implementation public func lc_app_perform(_ app: OpaquePointer?, _ action: UnsafePointer<lc_action_t>?) -> lc_status {
    withApp(app, "lc_app_perform") { $0.perform(action) }
}

@c @implementation public func lc_app_perform_simple(_ app: OpaquePointer?, _ kind: lc_action_kind) -> lc_status {
    var action = lc_action_t()
    action.struct_size = UInt32(MemoryLayout<lc_action_t>.size)
    action.kind = kind
    action.memory_level = lc_memory_level(LC_MEMORY_WARNING)
    return withApp(app, "lc_app_perform_simple") { $0.perform(&action) }
}

@c @implementation public func lc_app_observe(_ app: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ sender: UnsafeRawPointer?,
                              _ fn: lc_observer_fn?, _ ctx: UnsafeMutableRawPointer?,
                              _ out: UnsafeMutablePointer<lc_observer_token>?) -> lc_status
{
    withApp(app, "lc_app_observe") { $0.observe(name, sender: sender, fn: fn, ctx: ctx, owner: "", out: out, function: "lc_app_observe") }
}

@c @implementation public func lc_app_remove_observer(_ app: OpaquePointer?, _ token: lc_observer_token) -> lc_status {
    withApp(app, "lc_app_remove_observer") { $0.removeObserver(token, function: "lc_app_remove_observer") }
}

@c @implementation public func lc_app_post(_ app: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ sender: UnsafeRawPointer?,
                           _ userInfo: OpaquePointer?) -> lc_status
{
    // The fast path: a name already interned is found from its bytes (no String, no lock) and posted
    // by id as lc_app_post_name posts it, without retaining the handle or the center.
    if let app, let name, let existing = NotificationName(existingCString: name) {
        let center = Unmanaged<AppHandle>.fromOpaque(UnsafeRawPointer(app))._withUnsafeGuaranteedRef { $0.center }
        let outcome = center._withUnsafeGuaranteedRef { center in
            guard let userInfo else { return center.post(nameID: existing.id, sender: UInt(bitPattern: sender)) }
            let box = UserInfoBox.from(userInfo)
            return center.post(nameID: existing.id, sender: UInt(bitPattern: sender), userInfo: box.current, rawUserInfo: box)
        }
        if case .posted = outcome { return lc_status(LC_OK) }
        return lcStatus(outcome, name: existing.id, userInfo: userInfo, "lc_app_post")
    }
    // New names are interned here; NULLs and bad names are refused with their messages.
    return withApp(app, "lc_app_post", mainThread: false) { $0.post(name, sender: sender, userInfo: userInfo, function: "lc_app_post") }
}

@c @implementation public func lc_app_add_delegate(_ app: OpaquePointer?, _ id: UnsafePointer<CChar>?,
                                   _ delegate: UnsafePointer<lc_delegate_t>?) -> lc_status
{
    withApp(app, "lc_app_add_delegate") { $0.addDelegate(id: id, delegate) }
}

@c @implementation public func lc_app_remove_delegate(_ app: OpaquePointer?, _ id: UnsafePointer<CChar>?) -> lc_status {
    withApp(app, "lc_app_remove_delegate") { handle in
        guard let id else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_remove_delegate: id is NULL") }
        let name = String(cString: id)
        let scene = handle.app.removeSceneDelegate(id: name)  // its scene functions (1.2), if it had any
        guard handle.app.removeDelegate(id: name) || scene else {
            return lcFail(lc_status(LC_ERR_NOT_FOUND), "lc_app_remove_delegate: no delegate has id '\(name)'")
        }
        return lc_status(LC_OK)
    }
}

@c @implementation public func lc_app_begin_background_task(_ app: OpaquePointer?, _ name: UnsafePointer<CChar>?,
                                            _ expiration: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?,
                                            _ ctx: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<lc_task_id>?) -> lc_status
{
    withApp(app, "lc_app_begin_background_task") {
        $0.beginBackgroundTask(name, expiration: expiration, ctx: ctx, owner: "", out: out, function: "lc_app_begin_background_task")
    }
}

@c @implementation public func lc_app_end_background_task(_ app: OpaquePointer?, _ task: lc_task_id) -> lc_status {
    withApp(app, "lc_app_end_background_task", mainThread: false) { $0.endBackgroundTask(task, function: "lc_app_end_background_task") }
}

@c @implementation public func lc_app_background_time_remaining(_ app: OpaquePointer?) -> Double {
    guard let app else { return 0 }
    return AppHandle.from(app).app.backgroundTimeRemainingSeconds
}

@c @implementation public func lc_app_set_trace(_ app: OpaquePointer?,
                                _ fn: (@convention(c) (UnsafePointer<lc_trace_event_t>?, UnsafeMutableRawPointer?) -> Void)?,
                                _ ctx: UnsafeMutableRawPointer?) -> lc_status
{
    withApp(app, "lc_app_set_trace") { handle in
        handle.setTrace(fn, ctx: ctx)
        return lc_status(LC_OK)
    }
}

// MARK: The main run loop

@c @implementation public func lc_app_run(_ app: OpaquePointer?) -> lc_status {
    withApp(app, "lc_app_run") { handle in
        do { try handle.loop.run() } catch { return lcFail(error, in: "lc_app_run") }
        return lc_status(LC_OK)
    }
}

@c @implementation public func lc_app_run_for(_ app: OpaquePointer?, _ seconds: Double) -> lc_status {
    withApp(app, "lc_app_run_for") { handle in
        guard seconds.isFinite, seconds >= 0 else {
            return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_run_for: seconds must be a finite number ≥ 0, not \(seconds)")
        }
        do { try handle.loop.run(for: CSeconds.duration(seconds, atMost: 1e9)) } catch { return lcFail(error, in: "lc_app_run_for") }
        return lc_status(LC_OK)
    }
}

@c @implementation public func lc_app_stop(_ app: OpaquePointer?) -> lc_status {
    withApp(app, "lc_app_stop", mainThread: false) { handle in
        handle.loop.stop()
        return lc_status(LC_OK)
    }
}

@c @implementation public func lc_app_fd(_ app: OpaquePointer?) -> Int32 {
    app.map { AppHandle.from($0).loop.fileDescriptor } ?? -1
}

@c @implementation public func lc_app_dispatch_pending(_ app: OpaquePointer?) -> Int32 {
    let status = withApp(app, "lc_app_dispatch_pending") { lc_status(clamping: $0.loop.dispatchPending()) }
    return status
}

@c @implementation public func lc_app_next_timeout_ms(_ app: OpaquePointer?) -> Int32 {
    guard let app else { return -1 }
    let handle = AppHandle.from(app)
    guard handle.loop.isOnLoopThread, let deadline = handle.loop.nextTimerDeadline else { return -1 }
    let now = handle.loop.now
    // On a manual clock a timer falls due only by lc_app_advance: waiting for it in real time is pointless.
    if handle.loop.clock.isManual { return deadline > now ? -1 : 0 }
    guard deadline > now else { return 0 }
    return Int32(clamping: (deadline.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
}

@c @implementation public func lc_app_advance(_ app: OpaquePointer?, _ seconds: Double) -> lc_status {
    withApp(app, "lc_app_advance") { handle in
        guard handle.loop.clock.isManual else {
            return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT),
                          "lc_app_advance: the application runs on the monotonic clock (lc_config_t.clock); only LC_CLOCK_MANUAL advances")
        }
        guard let duration = try? Seconds.duration(seconds) else {
            return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT),
                          "lc_app_advance: seconds must be a finite number from 0 to \(Int64(Seconds.maximum)), not \(seconds)")
        }
        do throws(ApplicationError) { try handle.app.advance(by: duration) } catch { return lcFail(error) }
        return lc_status(LC_OK)
    }
}

@c @implementation public func lc_app_clock_seconds(_ app: OpaquePointer?) -> Double {
    guard let app else { return 0 }
    let handle = AppHandle.from(app)
    guard handle.loop.isOnLoopThread else { return 0 }
    return handle.loop.elapsed.secondsDouble
}

@c @implementation public func lc_app_perform_async(_ app: OpaquePointer?, _ fn: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?,
                                   _ ctx: UnsafeMutableRawPointer?) -> lc_status
{
    withApp(app, "lc_app_perform_async", mainThread: false) { $0.performAsync(fn, ctx: ctx, function: "lc_app_perform_async") }
}

@c @implementation public func lc_app_add_timer(_ app: OpaquePointer?, _ seconds: Double, _ fn: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?,
                                _ ctx: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<lc_source_id>?) -> lc_status
{
    withApp(app, "lc_app_add_timer") { $0.addTimer(seconds, fn: fn, ctx: ctx, owner: nil, out: out, function: "lc_app_add_timer") }
}

@c @implementation public func lc_app_cancel_timer(_ app: OpaquePointer?, _ source: lc_source_id) -> lc_status {
    withApp(app, "lc_app_cancel_timer") { $0.cancelTimer(source, function: "lc_app_cancel_timer") }
}

// MARK: Plugins

@c @implementation public func lc_app_load_plugin(_ app: OpaquePointer?, _ path: UnsafePointer<CChar>?,
                                  _ out: UnsafeMutablePointer<OpaquePointer?>?) -> lc_status
{
    withApp(app, "lc_app_load_plugin") { handle in
        guard let path else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_load_plugin: path is NULL") }
        do {
            let plugin = try handle.loadPlugin(path: String(cString: path))
            out?.pointee = plugin.handle
            return lc_status(LC_OK)
        } catch let refusal as PluginRefusal {
            return lcFail(refusal.status, refusal.message)
        } catch {
            return lcFail(error, in: "lc_app_load_plugin")
        }
    }
}

@c @implementation public func lc_app_load_plugin_with_options(_ app: OpaquePointer?, _ path: UnsafePointer<CChar>?,
                                               _ options: UnsafePointer<lc_load_options_t>?,
                                               _ out: UnsafeMutablePointer<OpaquePointer?>?) -> lc_status
{
    withApp(app, "lc_app_load_plugin_with_options") { handle in
        guard let path else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_load_plugin_with_options: path is NULL") }
        let settings: IsolationSettings?
        switch IsolationSettings.from(options, function: "lc_app_load_plugin_with_options") {
        case .success(let found): settings = found
        case .failure(let error): return lcFail(error.status, error.message)
        }
        do throws(PluginRefusal) {
            let file = String(cString: path)
            let plugin: LoadedPlugin
            if let settings { plugin = try handle.loadIsolatedPlugin(path: file, settings: settings) } else { plugin = try handle.loadPlugin(path: file) }
            out?.pointee = plugin.handle
            return lc_status(LC_OK)
        } catch {
            return lcFail(error.status, error.message)
        }
    }
}

@c @implementation public func lc_app_load_plugin_folder(_ app: OpaquePointer?, _ folder: UnsafePointer<CChar>?,
                                         _ loaded: UnsafeMutablePointer<Int>?, _ refused: UnsafeMutablePointer<Int>?) -> lc_status
{
    withApp(app, "lc_app_load_plugin_folder") { handle in
        guard let folder else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_load_plugin_folder: folder is NULL") }
        let result = handle.loadPlugins(folder: String(cString: folder))
        loaded?.pointee = result.loaded.count
        refused?.pointee = result.refused.count
        if let last = result.refused.last { return lcFail(last.status, last.message) }
        return lc_status(LC_OK)
    }
}

@c @implementation public func lc_app_unload_plugin(_ app: OpaquePointer?, _ id: UnsafePointer<CChar>?) -> lc_status {
    withApp(app, "lc_app_unload_plugin") { handle in
        guard let id else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "lc_app_unload_plugin: id is NULL") }
        let name = String(cString: id)
        guard let plugin = handle.plugin(id: name) else {
            return lcFail(lc_status(LC_ERR_NOT_FOUND), "lc_app_unload_plugin: no plugin '\(name)' is loaded")
        }
        handle.unload(plugin)
        return lc_status(LC_OK)
    }
}

@c @implementation public func lc_plugin_id(_ plugin: OpaquePointer?) -> UnsafePointer<CChar>? {
    // A handle this process never gave out (or of a plugin whose application is gone) names nothing.
    return PluginHandles.plugin(for: plugin)?.cID
}
