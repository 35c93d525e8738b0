import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc
import LifecycleC
import Logging
import Synchronization

/// The host-API tables handed to plugins in `init`: one private copy per plugin (with its own copy of
/// the dictionary table, `host->dict`), each in a page of its own, made read-only (`mprotect(PROT_READ)`)
/// before any plugin sees it, so that a plugin writing through its `const lc_host_api_t *` faults in
/// that plugin instead of redirecting every other plugin's calls — and one that makes its own page
/// writable again (`mprotect` works on pages) can rewrite only its own table, not its neighbours'
/// (include/lifecycle.h, "What the host's checks can and cannot stop"). A page a plugin: 4 KiB.
///
/// The copies are carved out of mappings of many pages: each mapping is filled with identical copies,
/// then made read-only once, and its pages handed out one by one. A copy handed back is handed out
/// again as it is (its contents never change), so a process makes a mapping (an `mmap` and an
/// `mprotect`) only when every slot is in use: the first plugin pays one, each later mapping holds
/// twice as many slots as the one before (up to 64 pages).
///
/// Every function still takes the calling plugin's `lc_plugin *` and checks ownership with it (see
/// include/lifecycle.h, "Ownership").
package enum HostAPITable {
    /// Hands out a read-only copy. [thread-safe]
    /// - Returns: the table (an `lc_host_api_t *`, its `dict` its own copy); give it back with `free(_:)`.
    package static func make() -> UnsafePointer<lc_host_api_t> {
        let slot = pool.withLock { pool in
            if let node = pool.free {
                pool.free = node.next
                return UnsafeMutableRawPointer(bitPattern: node.slot)!
            }
            if pool.remaining == 0 { pool.map() }
            let slot = pool.next!
            pool.next = slot + Layout.slotSize
            pool.remaining -= 1
            return slot
        }
        return UnsafePointer(slot.assumingMemoryBound(to: lc_host_api_t.self))
    }

    /// Gives back a table made by `make()`; it is handed out again unchanged. [thread-safe]
    package static func free(_ table: UnsafePointer<lc_host_api_t>) {
        let slot = UInt(bitPattern: table)
        pool.withLock { $0.free = FreeSlot(slot, next: $0.free) }
    }

    /// A read-only table holding what every copy holds with `adjust` applied (a process that serves a
    /// plugin differently, the isolated plugin's runner, replaces some functions), in a page of its own.
    /// Never given back. [thread-safe]
    package static func makeAdjusted(_ adjust: (inout lc_host_api_t) -> Void) -> UnsafePointer<lc_host_api_t> {
        guard let page = mmap(nil, Layout.pageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), page != MAP_FAILED else {
            fatalError("mmap of a host-API table failed: \(String(cString: strerror(errno)))")
        }
        let dict = (page + Layout.dictOffset).bindMemory(to: lc_dict_api_t.self, capacity: 1)
        dict.initialize(to: lcDictAPIContents())
        var table = contents(dict: dict)
        adjust(&table)
        page.bindMemory(to: lc_host_api_t.self, capacity: 1).initialize(to: table)
        guard mprotect(page, Layout.pageSize, PROT_READ) == 0 else {
            fatalError("mprotect of a host-API table failed: \(String(cString: strerror(errno)))")
        }
        return UnsafePointer(page.assumingMemoryBound(to: lc_host_api_t.self))
    }

    /// Where a copy's parts are in a slot.
    private enum Layout {
        static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        static let dictOffset = (MemoryLayout<lc_host_api_t>.size + 15) & ~15
        /// A page: no two plugins' tables share one (see the type's documentation).
        static let slotSize = pageSize
        /// The largest mapping, in pages.
        static let maximumPages = 64
    }

    /// A slot handed back (a list: no array type to instantiate in the first load of a process).
    private final class FreeSlot: Sendable {
        /// The slot's address.
        let slot: UInt
        let next: FreeSlot?

        init(_ slot: UInt, next: FreeSlot?) {
            self.slot = slot
            self.next = next
        }
    }

    private struct Pool {
        /// The next unused slot of the newest mapping, and how many follow it (itself included).
        var next: UnsafeMutableRawPointer?
        var remaining = 0
        var free: FreeSlot?
        /// The size of the next mapping.
        var pages = 1

        /// Maps `pages` pages, fills every slot with a copy, makes them read-only.
        mutating func map() {
            precondition(Layout.dictOffset + MemoryLayout<lc_dict_api_t>.size <= Layout.pageSize, "the host-API tables outgrew a page")
            let size = pages * Layout.pageSize
            // MAP_POPULATE: every slot is written next, so the pages are made in the mmap call instead
            // of one fault each. MAP_FAILED by value: Glibc's is a function call into another library.
            let mapping = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0)
            guard let mapping, mapping != UnsafeMutableRawPointer(bitPattern: -1) else {
                fatalError("mmap of host-API tables failed: \(String(cString: strerror(errno)))")
            }
            let count = size / Layout.slotSize
            for index in 0..<count {
                let slot = mapping + index * Layout.slotSize
                let dict = (slot + Layout.dictOffset).bindMemory(to: lc_dict_api_t.self, capacity: 1)
                dict.initialize(to: lcDictAPIContents())
                slot.bindMemory(to: lc_host_api_t.self, capacity: 1).initialize(to: contents(dict: dict))
            }
            guard mprotect(mapping, size, PROT_READ) == 0 else {
                fatalError("mprotect of host-API tables failed: \(String(cString: strerror(errno)))")
            }
            next = mapping
            remaining = count
            pages = min(pages * 2, Layout.maximumPages)
        }
    }

    private static let pool = Mutex(Pool())

    /// What every copy holds, `dict` its own copy of the dictionary table. Made in place (not copied
    /// from a stored template): a template's first write cost the first plugin load of a process a
    /// page fault.
    private static func contents(dict: UnsafePointer<lc_dict_api_t>) -> lc_host_api_t {
    lc_host_api_t(
        struct_size: UInt32(MemoryLayout<lc_host_api_t>.size),
        abi_major: UInt32(LC_ABI_VERSION_MAJOR),
        abi_minor: UInt32(LC_ABI_VERSION_MINOR),
        dict: dict,
        set_error: { plugin, message in
            HostCalls.withPlugin(plugin, "set_error", mainThread: true) { p, _ in
                guard let message else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "set_error: message is NULL") }
                p.initError = String(cString: message)
                return lc_status(LC_OK)
            }
        },
        log: { plugin, level, message in
            guard let message, let p = PluginHandles.plugin(for: plugin) else { return }
            p.log(level, String(cString: message))
        },
        observe: { plugin, name, sender, fn, ctx, out in
            HostCalls.withPlugin(plugin, "observe", mainThread: true) { p, handle in
                guard name != nil else { return lcFail(LC_ERR_INVALID_ARGUMENT, "observe: name is NULL") }
                guard fn != nil else { return lcFail(LC_ERR_INVALID_ARGUMENT, "observe: fn is NULL") }
                if let refused = p.quotaRefusal(.observers, used: handle.app.center.observerCount(owner: p.id), "observe") { return refused }
                switch p.internName(name, "observe") {
                case .failed(let status): return status
                case .name(let known):
                    return handle.observe(nameID: known.id, sender: sender, fn: fn, ctx: ctx, owner: p.id, out: out, function: "observe")
                }
            }
        },
        remove_observer: { plugin, token in
            HostCalls.withPlugin(plugin, "remove_observer", mainThread: true) { p, handle in
                handle.removeObserver(token, owner: p.id, function: "remove_observer")
            }
        },
        post: { plugin, name, sender, userInfo in
            HostCalls.withPlugin(plugin, "post", mainThread: false) { p, handle in
                switch p.internName(name, "post") {
                case .failed(let status): return status
                case .name(let known): return handle.post(known, sender: sender, userInfo: userInfo, function: "post")
                }
            }
        },
        state: { plugin in
            guard let owner = PluginHandles.plugin(for: plugin)?.owner, owner.loop.isOnLoopThread else {
                return lc_state(LC_STATE_NOT_RUNNING)
            }
            return owner.app.state.lcState
        },
        begin_background_task: { plugin, name, expiration, ctx, out in
            HostCalls.withPlugin(plugin, "begin_background_task", mainThread: true) { p, handle in
                if let refused = p.quotaRefusal(.backgroundTasks, used: handle.app.backgroundTaskCount(owner: p.id), "begin_background_task") {
                    return refused
                }
                var task: lc_task_id = 0
                let status = handle.beginBackgroundTask(name, expiration: expiration, ctx: ctx, owner: p.id, out: &task,
                                                        function: "begin_background_task")
                if status == LC_OK {
                    p.addTask(task)
                    out?.pointee = task
                }
                return status
            }
        },
        end_background_task: { plugin, task in
            HostCalls.withPlugin(plugin, "end_background_task", mainThread: false) { p, handle in
                p.endOwnBackgroundTask(task, in: handle, function: "end_background_task")
            }
        },
        add_timer: { plugin, seconds, fn, ctx, out in
            HostCalls.withPlugin(plugin, "add_timer", mainThread: true) { p, handle in
                if let problem = AppHandle.timerArgumentProblem(seconds, fn: fn, function: "add_timer") { return problem }
                if let refused = p.quotaRefusal(.timers, used: handle.timerCount(owner: p.id), "add_timer") { return refused }
                return handle.addTimer(seconds, fn: fn, ctx: ctx, owner: p.id, out: out, function: "add_timer")
            }
        },
        cancel_timer: { plugin, source in
            HostCalls.withPlugin(plugin, "cancel_timer", mainThread: true) { p, handle in
                p.cancelOwnTimer(source, in: handle, function: "cancel_timer")
            }
        },
        perform_async: { plugin, fn, ctx in
            HostCalls.withPlugin(plugin, "perform_async", mainThread: false) { p, handle in
                handle.performAsync(fn, ctx: ctx, owner: p.workOwner, function: "perform_async")
            }
        },
        get_extension: { _, _ in
            // ABI 1.0 defines no optional extensions: every id answers NULL ("not supported").
            nil
        },
        set_delegate: { plugin, delegate in
            HostCalls.withPlugin(plugin, "set_delegate", mainThread: true) { p, _ in
                guard let delegate else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "set_delegate: delegate is NULL") }
                guard p.inInit else {
                    return lcFail(lc_status(LC_ERR_ILLEGAL_ACTION), "set_delegate: plugin '\(p.id)' may set its delegate table only from init")
                }
                guard p.delegateTable == nil else {
                    return lcFail(lc_status(LC_ERR_ILLEGAL_ACTION), "set_delegate: plugin '\(p.id)' has set its delegate table already")
                }
                let size = Int(delegate.pointee.struct_size)
                guard size >= 8 else {
                    return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "set_delegate: delegate->struct_size is \(size)")
                }
                p.delegateTable = FFIDelegates.pluginTableAddresses(delegate, size: size)
                return lc_status(LC_OK)
            }
        },
        name_intern: { plugin, name, out in
            HostCalls.withPlugin(plugin, "name_intern", mainThread: false) { p, _ in
                guard name != nil else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "name_intern: name is NULL") }
                guard let out else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "name_intern: out is NULL") }
                switch p.internName(name, "name_intern") {
                case .failed(let status): return status
                case .name(let known):
                    out.pointee = known.id
                    return lc_status(LC_OK)
                }
            }
        },
        observe_name: { plugin, name, sender, fn, ctx, out in
            HostCalls.withPlugin(plugin, "observe_name", mainThread: true) { p, handle in
                guard NotificationName(internedID: name) != nil else { return lcUnknownNameID(name, "observe_name") }
                guard fn != nil else { return lcFail(LC_ERR_INVALID_ARGUMENT, "observe_name: fn is NULL") }
                if let refused = p.quotaRefusal(.observers, used: handle.app.center.observerCount(owner: p.id), "observe_name") { return refused }
                return handle.observe(nameID: name, sender: sender, fn: fn, ctx: ctx, owner: p.id, out: out, function: "observe_name")
            }
        },
        post_name: { plugin, name, sender, userInfo in
            HostCalls.withPlugin(plugin, "post_name", mainThread: false) { _, handle in
                guard let known = NotificationName(internedID: name) else { return lcUnknownNameID(name, "post_name") }
                return handle.post(known, sender: sender, userInfo: userInfo, function: "post_name")
            }
        },
        scene_find: { plugin, id, out in
            HostCalls.withPlugin(plugin, "scene_find", mainThread: true) { _, handle in handle.findScene(id, out, function: "scene_find") }
        },
        scene_get_id: { plugin, scene, out in
            HostCalls.withPlugin(plugin, "scene_get_id", mainThread: true) { _, handle in
                SceneAccessors.id(UnsafeRawPointer(scene), out, "scene_get_id", application: handle)
            }
        },
        scene_get_state: { plugin, scene, out in
            HostCalls.withPlugin(plugin, "scene_get_state", mainThread: true) { _, handle in
                SceneAccessors.state(UnsafeRawPointer(scene), out, "scene_get_state", application: handle)
            }
        },
        scene_get_session_id: { plugin, scene, out in
            HostCalls.withPlugin(plugin, "scene_get_session_id", mainThread: true) { _, handle in
                SceneAccessors.id(UnsafeRawPointer(scene), out, "scene_get_session_id", application: handle)
            }
        },
        scene_get_configuration_name: { plugin, scene, out in
            HostCalls.withPlugin(plugin, "scene_get_configuration_name", mainThread: true) { _, handle in
                SceneAccessors.configurationName(UnsafeRawPointer(scene), out, "scene_get_configuration_name", application: handle)
            }
        },
        is_protected_data_available: { plugin in
            guard let owner = PluginHandles.plugin(for: plugin)?.owner, owner.loop.isOnLoopThread else { return false }
            return owner.app.isProtectedDataAvailable
        },
        background_time_remaining: { plugin in
            guard let owner = PluginHandles.plugin(for: plugin)?.owner, owner.loop.isOnLoopThread else { return 0 }
            return owner.app.backgroundTimeRemainingSeconds
        },
        request_scene_activation: { plugin, session, activity in
            HostCalls.withPlugin(plugin, "request_scene_activation", mainThread: true) { p, handle in
                handle.requestScene(.activation, session: session, activity: activity, requester: p.id, function: "request_scene_activation")
            }
        },
        request_scene_destruction: { plugin, session in
            HostCalls.withPlugin(plugin, "request_scene_destruction", mainThread: true) { p, handle in
                handle.requestScene(.destruction, session: session, activity: nil, requester: p.id, function: "request_scene_destruction")
            }
        },
        request_scene_refresh: { plugin, session in
            HostCalls.withPlugin(plugin, "request_scene_refresh", mainThread: true) { p, handle in
                handle.requestScene(.refresh, session: session, activity: nil, requester: p.id, function: "request_scene_refresh")
            }
        },
        scene_list: { plugin, out, capacity, count in
            HostCalls.withPlugin(plugin, "scene_list", mainThread: true) { _, handle in
                handle.listScenes(out, capacity: capacity, count, function: "scene_list")
            }
        },
        session_list: { plugin, out, capacity, count in
            HostCalls.withPlugin(plugin, "session_list", mainThread: true) { _, handle in
                handle.listSessions(out, capacity: capacity, count, function: "session_list")
            }
        },
        scene_get_session_role: { plugin, scene, out in
            HostCalls.withPlugin(plugin, "scene_get_session_role", mainThread: true) { _, handle in
                SceneAccessors.role(UnsafeRawPointer(scene), out, "scene_get_session_role", application: handle)
            }
        },
        session_get_user_info: { plugin, session, out in
            HostCalls.withPlugin(plugin, "session_get_user_info", mainThread: true) { _, handle in
                handle.sessionUserInfo(session, out, function: "session_get_user_info")
            }
        },
        session_set_user_info: { plugin, session, info in
            HostCalls.withPlugin(plugin, "session_set_user_info", mainThread: true) { _, handle in
                handle.setSessionUserInfo(session, info, function: "session_set_user_info")
            }
        },
        is_low_power_mode_enabled: { plugin in
            guard let owner = PluginHandles.plugin(for: plugin)?.owner, owner.loop.isOnLoopThread else { return false }
            return owner.app.isLowPowerModeEnabled
        },
        thermal_state: { plugin in
            guard let owner = PluginHandles.plugin(for: plugin)?.owner, owner.loop.isOnLoopThread else { return lc_thermal_state(0) }
            return lc_thermal_state(UInt32(owner.app.thermalState.rawValue))
        }
    )
    }
}

/// The checks every host-API call starts with.
enum HostCalls {
    /// Runs `body` after the checks; a call that ends with an error status is handed to the refusal
    /// watch, if one is installed (`HostCallRefusals`). [thread-safe]
    static func withPlugin(_ plugin: OpaquePointer?, _ function: String, mainThread: Bool,
                           _ body: (LoadedPlugin, AppHandle) -> lc_status) -> lc_status
    {
        let status = checked(plugin, function, mainThread: mainThread, body)
        if status != LC_OK { HostCallRefusals.refused(plugin, function, status) }
        return status
    }

    private static func checked(_ plugin: OpaquePointer?, _ function: String, mainThread: Bool,
                                _ body: (LoadedPlugin, AppHandle) -> lc_status) -> lc_status
    {
        guard let plugin else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): plugin is NULL") }
        guard let p = PluginHandles.plugin(for: plugin) else { return PluginHandles.refuse(plugin, function) }
        guard let handle = p.owner else {
            return lcFail(lc_status(LC_ERR_NOT_FOUND), "\(function): the plugin's application is gone")
        }
        let onLoop = handle.loop.isOnLoopThread
        if mainThread, !onLoop {
            return lcFail(lc_status(LC_ERR_WRONG_THREAD), "\(function) must be called on the main run loop's thread")
        }
        if onLoop, let refused = p.callerMismatch(in: handle, function) { return refused }
        // Active from the start of init until unloaded (or refused).
        guard p.isActive else {
            return lcFail(lc_status(LC_ERR_NOT_FOUND), "\(function): plugin '\(p.id)' is not loaded")
        }
        return body(p, handle)
    }
}
