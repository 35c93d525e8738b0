import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Logging

/// The host-API table every plugin receives in `init`: one static table; the `lc_plugin *`
/// argument says which plugin calls. Allocated once, never freed (plugins may keep the pointer).
nonisolated(unsafe) package let hostAPITable: UnsafePointer<lc_host_api_t> = {
    let table = UnsafeMutablePointer<lc_host_api_t>.allocate(capacity: 1)
    table.initialize(to: lc_host_api_t(
        struct_size: UInt32(MemoryLayout<lc_host_api_t>.size),
        abi_major: UInt32(LC_ABI_VERSION_MAJOR),
        abi_minor: UInt32(LC_ABI_VERSION_MINOR),
        dict: lcDictAPI,
        set_error: { plugin, message in
            HostCalls.withPlugin(plugin, "set_error", mainThread: true) { p, _ in
                guard let message else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "set_error: message is NULL") }
                p.initError = String(cString: message)
                return lc_status(LC_OK)
            }
        },
        log: { plugin, level, message in
            guard let plugin, let message else { return }
            let p = LoadedPlugin.from(plugin)
            guard let owner = p.owner else { return }
            let logLevel: Logger.Level = switch Int(level) {
            case LC_LOG_DEBUG: .debug
            case LC_LOG_INFO: .info
            case LC_LOG_WARNING: .warning
            default: .error
            }
            owner.app.configuration.logger.log(level: logLevel, "\(String(cString: message))", metadata: ["plugin": "\(p.id)"])
        },
        observe: { plugin, name, sender, fn, ctx, out in
            HostCalls.withPlugin(plugin, "observe", mainThread: true) { p, handle in
                handle.observe(name, sender: sender, fn: fn, ctx: ctx, owner: p.id, out: out, function: "observe")
            }
        },
        remove_observer: { plugin, token in
            HostCalls.withPlugin(plugin, "remove_observer", mainThread: true) { _, handle in
                handle.removeObserver(token, function: "remove_observer")
            }
        },
        post: { plugin, name, sender, userInfo in
            HostCalls.withPlugin(plugin, "post", mainThread: false) { _, handle in
                handle.post(name, sender: sender, userInfo: userInfo, function: "post")
            }
        },
        state: { plugin in
            guard let plugin, let owner = LoadedPlugin.from(plugin).owner, owner.loop.isOnLoopThread else {
                return lc_state(LC_STATE_NOT_RUNNING)
            }
            return owner.app.state.lcState
        },
        begin_background_task: { plugin, name, expiration, ctx, out in
            HostCalls.withPlugin(plugin, "begin_background_task", mainThread: true) { p, handle in
                handle.beginBackgroundTask(name, expiration: expiration, ctx: ctx, owner: p.id, out: out,
                                           function: "begin_background_task")
            }
        },
        end_background_task: { plugin, task in
            HostCalls.withPlugin(plugin, "end_background_task", mainThread: false) { _, handle in
                handle.endBackgroundTask(task, function: "end_background_task")
            }
        },
        add_timer: { plugin, seconds, fn, ctx, out in
            HostCalls.withPlugin(plugin, "add_timer", mainThread: true) { p, handle in
                handle.addTimer(seconds, fn: fn, ctx: ctx, owner: p, out: out, function: "add_timer")
            }
        },
        cancel_timer: { plugin, source in
            HostCalls.withPlugin(plugin, "cancel_timer", mainThread: true) { _, handle in
                handle.cancelTimer(source, function: "cancel_timer")
            }
        },
        perform_async: { plugin, fn, ctx in
            HostCalls.withPlugin(plugin, "perform_async", mainThread: false) { _, handle in
                handle.performAsync(fn, ctx: ctx, function: "perform_async")
            }
        },
        get_extension: { _, _ in
            // ABI 1.0 defines no optional extensions: every id answers NULL ("not supported").
            nil
        }
    ))
    return UnsafePointer(table)
}()

/// The checks every host-API call starts with.
enum HostCalls {
    static func withPlugin(_ plugin: OpaquePointer?, _ function: String, mainThread: Bool,
                           _ body: (LoadedPlugin, AppHandle) -> lc_status) -> lc_status
    {
        guard let plugin else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): plugin is NULL") }
        let p = LoadedPlugin.from(plugin)
        guard let handle = p.owner else {
            return lcFail(lc_status(LC_ERR_NOT_FOUND), "\(function): the plugin's application is gone")
        }
        if mainThread, !handle.loop.isOnLoopThread {
            return lcFail(lc_status(LC_ERR_WRONG_THREAD), "\(function) must be called on the main run loop's thread")
        }
        // Active from the start of init until unloaded (or refused).
        guard p.isActive else {
            return lcFail(lc_status(LC_ERR_NOT_FOUND), "\(function): plugin '\(p.id)' is not loaded")
        }
        return body(p, handle)
    }
}
