import AppLifecycle
import CLifecycleABI
import Glibc
import LifecycleC
import Synchronization

/// What an isolated plugin's process keeps of what its plugin registered, for the frames that come
/// back (an observer's notifications, a timer, an expiration). [main-thread] unless said otherwise.
final class RunnerRegistrations: @unchecked Sendable {
    // @unchecked: runner main thread only: written by main-thread host calls (HostCalls checks) and host frames.
    struct Callback {
        let fn: @convention(c) (UnsafeMutableRawPointer?) -> Void
        let ctx: UnsafeMutableRawPointer?
    }

    typealias Observer = (fn: lc_observer_fn, ctx: UnsafeMutableRawPointer?, name: NotificationName)
    /// Observers by token (tokens chosen here, from 1).
    private(set) var observers: [UInt64: Observer] = [:]
    var nextObserver: UInt64 = 1
    /// The observer `observer(_:)` found last: a stream of one name to one observer looks it up once.
    private var lastObserver: (token: UInt64, observer: Observer)?

    /// The observer `token`, if it is registered. O(1).
    @inline(__always)
    func observer(_ token: UInt64) -> Observer? {
        if let last = lastObserver, last.token == token { return last.observer }
        guard let found = observers[token] else { return nil }
        lastObserver = (token, found)
        return found
    }

    func addObserver(_ token: UInt64, _ observer: Observer) { observers[token] = observer }

    /// Removes the observer `token`; false when there was none.
    func removeObserver(_ token: UInt64) -> Bool {
        if lastObserver?.token == token { lastObserver = nil }
        return observers.removeValue(forKey: token) != nil
    }
    /// Live timers by id (chosen here, from 1): removed when they fire or are cancelled.
    var timers: [UInt64: Callback] = [:]
    var nextTimer: UInt64 = 1
    /// Expiration handlers of open background tasks, by the host's task id.
    var expirations: [UInt64: Callback] = [:]
    /// The completion handlers of the requests the host sent (fetch, remote notification), by key,
    /// until the host says the request ended (`requestEnded`): then a call is late.
    var requests: [UInt64: FetchCompletionHandler] = [:]
}

/// The host-API table of an isolated plugin's process: the in-process table (dictionaries, errors,
/// the delegate table, interned names, `perform_async` on this process's loop), with the functions
/// that reach the application replaced by frames to the host. Same checks, same statuses and
/// messages as in-process where the answer is known here (a name, an owner, a thread); what only the
/// host knows (a background task's id) waits for its reply.
///
/// Differences a plugin can see (docs/host.md, "Isolated plugins"): `post` and `post_name` are
/// queued as from another thread, even on the main thread (observers have not run when they return);
/// an observer, timer or end of task takes effect when the host reads the frame; `state` is the state
/// as of the frame being handled; the scene accessors answer from proxies, as of the frame being handled.
enum RunnerHostAPI {
    /// The table (made once; read-only).
    // nonisolated(unsafe): built once, then its page is mprotect'ed read-only; only the address is shared.
    nonisolated(unsafe) static let table: UnsafePointer<lc_host_api_t> = HostAPITable.makeAdjusted { table in
        table.log = { plugin, level, message in
            guard plugin != nil, let message, let runner = PluginRunner.current else { return }
            let text = String(cString: message)
            runner.link.send { out in
                out.begin(.log)
                out.u32(level)
                out.text(text)  // cut to 64 KiB, so that it always crosses
                out.end()
            }
        }
        table.perform_async = { plugin, fn, ctx in
            HostCalls.withPlugin(plugin, "perform_async", mainThread: false) { p, handle in
                let status = handle.performAsync(fn, ctx: ctx, owner: p.workOwner, function: "perform_async")
                // Work queued from another thread must not wait for a linger (`RunnerLink.serve`).
                if status == lc_status(LC_OK), !handle.loop.isOnLoopThread { PluginRunner.current?.link.stopLingering() }
                return status
            }
        }
        table.observe = { plugin, name, sender, fn, ctx, out in
            HostCalls.withPlugin(plugin, "observe", mainThread: true) { p, _ in
                guard let name else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "observe: name is NULL") }
                guard fn != nil else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "observe: fn is NULL") }
                let notificationName: NotificationName
                do throws(ApplicationError) { notificationName = try NotificationName(cString: name) } catch { return lcFail(error) }
                return observe(p, notificationName, sender, fn, ctx, out, "observe")
            }
        }
        table.observe_name = { plugin, name, sender, fn, ctx, out in
            HostCalls.withPlugin(plugin, "observe_name", mainThread: true) { p, _ in
                guard let known = NotificationName(internedID: name) else { return lcUnknownNameID(name, "observe_name") }
                return observe(p, known, sender, fn, ctx, out, "observe_name")
            }
        }
        table.remove_observer = { plugin, token in
            HostCalls.withPlugin(plugin, "remove_observer", mainThread: true) { p, _ in
                guard PluginRunner.current?.registrations.removeObserver(token) == true else {
                    return lcFail(lc_status(LC_ERR_NOT_FOUND), "remove_observer: plugin '\(p.id)' has no observer with token \(token)")
                }
                return tell(.removeObserver, token)
            }
        }
        table.post = { plugin, name, sender, userInfo in
            HostCalls.withPlugin(plugin, "post", mainThread: false) { p, _ in
                guard let name else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "post: name is NULL") }
                let notificationName: NotificationName
                do throws(ApplicationError) { notificationName = try NotificationName(cString: name) } catch { return lcFail(error) }
                return post(p, notificationName, sender, userInfo, "post")
            }
        }
        table.post_name = { plugin, name, sender, userInfo in
            HostCalls.withPlugin(plugin, "post_name", mainThread: false) { p, _ in
                guard let known = NotificationName(internedID: name) else { return lcUnknownNameID(name, "post_name") }
                return post(p, known, sender, userInfo, "post_name")
            }
        }
        table.state = { plugin in
            guard plugin != nil, let runner = PluginRunner.current, runner.link.loop.isOnLoopThread else {
                return lc_state(LC_STATE_NOT_RUNNING)
            }
            return lc_state(runner.link.state)
        }
        // ABI 1.5. Protected data as of the frame being run (its state byte), as `state`.
        table.is_protected_data_available = { plugin in
            guard plugin != nil, PluginHandles.plugin(for: plugin) != nil, let runner = PluginRunner.current,
                  runner.link.loop.isOnLoopThread else { return false }
            return runner.link.protectedDataAvailable
        }
        // The time left, as of the frame's state: unlimited in the foreground, none when suspended;
        // in the background the host's clock says how much is left when it answers (a `query`).
        table.background_time_remaining = { plugin in
            guard plugin != nil, PluginHandles.plugin(for: plugin) != nil, let runner = PluginRunner.current,
                  runner.link.loop.isOnLoopThread else { return 0 }
            switch Int(runner.link.state) {
            case LC_STATE_ACTIVE, LC_STATE_INACTIVE: return -1
            case LC_STATE_BACKGROUND: break
            default: return 0
            }
            let reply = runner.link.request { out, id in
                out.begin(.query, word: id)
                out.u8(HostQuery.backgroundTimeRemaining.rawValue)
                out.end()
            }
            guard reply.status == LC_OK else { return 0 }
            // The host may have left the background since: the time left is then no longer counted.
            let left = Double(bitPattern: reply.value)
            return left < 0 ? 0 : left
        }
        // ABI 1.6: the device's power and thermal state, asked of the host (a `query`).
        func deviceState(_ plugin: OpaquePointer?) -> UInt64? {
            guard plugin != nil, PluginHandles.plugin(for: plugin) != nil, let runner = PluginRunner.current,
                  runner.link.loop.isOnLoopThread else { return nil }
            let reply = runner.link.request { out, id in
                out.begin(.query, word: id)
                out.u8(HostQuery.deviceState.rawValue)
                out.end()
            }
            return reply.status == LC_OK ? reply.value : nil
        }
        table.is_low_power_mode_enabled = { plugin in deviceState(plugin).map { $0 & 1 != 0 } ?? false }
        table.thermal_state = { plugin in
            lc_thermal_state(UInt32(min((deviceState(plugin) ?? 0) >> 8 & 0xFF, 3)))
        }
        // ABI 1.5: scene requests, checked by the host (the application is there) and performed by it.
        func request(_ plugin: OpaquePointer?, _ kind: UInt8, _ function: String, _ session: UnsafePointer<CChar>?,
                     _ activity: OpaquePointer?) -> lc_status
        {
            HostCalls.withPlugin(plugin, function, mainThread: true) { _, _ in
                guard let runner = PluginRunner.current else { return lcFail(lc_status(LC_ERR_INTERNAL), "\(function): no runner") }
                if kind != 0, session == nil { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): session_id is NULL") }
                // Over the dictionary limits: refused here with the in-process status and words (never sent).
                if let refused = lcPostLimitRefusal(activity, function) { return refused }
                let id = session.map { String(cString: $0) }
                let info = activity.map { UserInfoBox.from($0).value }
                let reply = runner.link.request { out, word in
                    out.begin(.sceneRequest, word: word)
                    out.u8(kind)
                    out.u8(id == nil ? 0 : 1)
                    if let id { out.text(id) }
                    out.dictionary(info)
                    out.end()
                }
                return reply.status == LC_OK ? lc_status(LC_OK) : lcFail(lc_status(reply.status), reply.message)
            }
        }
        // ABI 1.5: the scenes this process knows; the sessions and their userInfo, from the host.
        table.scene_list = { plugin, out, capacity, count in
            HostCalls.withPlugin(plugin, "scene_list", mainThread: true) { _, _ in
                guard let runner = PluginRunner.current else { return lcFail(lc_status(LC_ERR_INTERNAL), "scene_list: no runner") }
                return runner.scenes.list(out, capacity: capacity, count, function: "scene_list")
            }
        }
        table.session_list = { plugin, out, capacity, count in
            HostCalls.withPlugin(plugin, "session_list", mainThread: true) { _, handle in
                guard let runner = PluginRunner.current else { return lcFail(lc_status(LC_ERR_INTERNAL), "session_list: no runner") }
                guard let count else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "session_list: count is NULL") }
                guard capacity == 0 || out != nil else {
                    return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "session_list: out is NULL with capacity \(capacity)")
                }
                let reply = runner.link.request { out, word in
                    out.begin(.query, word: word)
                    out.u8(HostQuery.sessionIDs.rawValue)
                    out.end()
                }
                guard reply.status == LC_OK else { return lcFail(lc_status(reply.status), reply.message) }
                // Each id ends with a newline; a reply cut at its 64 KiB (thousands of sessions) loses
                // the ids that did not fit whole, never half an id.
                var text = Substring(reply.message)
                if let last = text.lastIndex(of: "\n") { text = text[...last] } else { text = "" }
                let ids = text.split(separator: "\n").map(String.init)
                for (index, id) in ids.prefix(capacity).enumerated() { out?[index] = UnsafePointer(handle.sessionCString(id)) }
                count.pointee = ids.count
                return lc_status(LC_OK)
            }
        }
        table.session_get_user_info = { plugin, session, out in
            HostCalls.withPlugin(plugin, "session_get_user_info", mainThread: true) { _, handle in
                guard let runner = PluginRunner.current else { return lcFail(lc_status(LC_ERR_INTERNAL), "session_get_user_info: no runner") }
                guard let session else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "session_get_user_info: session_id is NULL") }
                guard let out else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "session_get_user_info: out is NULL") }
                let id = String(cString: session)
                let reply = runner.link.request({ frame, word in
                    frame.begin(.sessionUserInfo, word: word)
                    frame.u8(0)
                    frame.text(id)
                    frame.dictionary(nil)
                    frame.end()
                }, more: { (reader: inout FrameReader) throws(ProtocolViolation) in try reader.dictionary("userInfo") })
                guard reply.status == LC_OK else { return lcFail(lc_status(reply.status), reply.message) }
                // Kept here as in the host's process: the same box until the userInfo changes.
                out.pointee = handle.userInfoBox(session: id, reply.more ?? UserInfo()).opaque
                return lc_status(LC_OK)
            }
        }
        table.session_set_user_info = { plugin, session, info in
            HostCalls.withPlugin(plugin, "session_set_user_info", mainThread: true) { _, _ in
                guard let runner = PluginRunner.current else { return lcFail(lc_status(LC_ERR_INTERNAL), "session_set_user_info: no runner") }
                guard let session else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "session_set_user_info: session_id is NULL") }
                if let refused = lcPostLimitRefusal(info, "session_set_user_info") { return refused }
                let id = String(cString: session)
                let value = info.map { UserInfoBox.from($0).value } ?? UserInfo()
                let reply = runner.link.request { frame, word in
                    frame.begin(.sessionUserInfo, word: word)
                    frame.u8(1)
                    frame.text(id)
                    frame.dictionary(value)
                    frame.end()
                }
                return reply.status == LC_OK ? lc_status(LC_OK) : lcFail(lc_status(reply.status), reply.message)
            }
        }
        table.request_scene_activation = { plugin, session, activity in request(plugin, 0, "request_scene_activation", session, activity) }
        table.request_scene_destruction = { plugin, session in request(plugin, 1, "request_scene_destruction", session, nil) }
        table.request_scene_refresh = { plugin, session in request(plugin, 2, "request_scene_refresh", session, nil) }
        table.begin_background_task = { plugin, name, expiration, ctx, out in
            HostCalls.withPlugin(plugin, "begin_background_task", mainThread: true) { p, _ in
                guard let runner = PluginRunner.current else { return lcFail(lc_status(LC_ERR_INTERNAL), "begin_background_task: no runner") }
                let label = name.map { String(cString: $0) } ?? ""
                let reply = runner.link.request { out, id in
                    out.begin(.beginTask, word: id)
                    out.text(label)  // cut to 64 KiB, so that the request always crosses
                    out.u8(expiration == nil ? 0 : 1)
                    out.end()
                }
                guard reply.status == LC_OK else { return lcFail(lc_status(reply.status), reply.message) }
                p.addTask(reply.value)
                if let expiration { runner.registrations.expirations[reply.value] = .init(fn: expiration, ctx: ctx) }
                out?.pointee = reply.value
                return lc_status(LC_OK)
            }
        }
        table.end_background_task = { plugin, task in
            HostCalls.withPlugin(plugin, "end_background_task", mainThread: false) { p, _ in
                guard p.removeTask(task) else {
                    return lcFail(lc_status(LC_ERR_NOT_FOUND), "end_background_task: plugin '\(p.id)' has no open background task \(task)")
                }
                return tell(.endTask, task, state: PluginRunner.current?.link.ownStateByte ?? 0)
            }
        }
        table.add_timer = { plugin, seconds, fn, ctx, out in
            HostCalls.withPlugin(plugin, "add_timer", mainThread: true) { p, _ in
                if let problem = AppHandle.timerArgumentProblem(seconds, fn: fn, function: "add_timer") { return problem }
                guard let runner = PluginRunner.current, let fn else { return lcFail(lc_status(LC_ERR_INTERNAL), "add_timer: no runner") }
                if let refused = p.quotaRefusal(.timers, used: runner.registrations.timers.count, "add_timer") { return refused }
                let id = runner.registrations.nextTimer
                runner.registrations.nextTimer += 1
                runner.registrations.timers[id] = .init(fn: fn, ctx: ctx)
                runner.link.send { out in
                    out.begin(.addTimer, word: id)
                    out.f64(seconds)
                    out.end()
                }
                out?.pointee = id
                return lc_status(LC_OK)
            }
        }
        table.cancel_timer = { plugin, source in
            HostCalls.withPlugin(plugin, "cancel_timer", mainThread: true) { p, _ in
                guard PluginRunner.current?.registrations.timers.removeValue(forKey: source) != nil else {
                    return lcFail(lc_status(LC_ERR_NOT_FOUND), "cancel_timer: plugin '\(p.id)' has no timer \(source)")
                }
                return tell(.cancelTimer, source)
            }
        }
        table.scene_find = { plugin, id, out in
            HostCalls.withPlugin(plugin, "scene_find", mainThread: true) { _, _ in
                guard let runner = PluginRunner.current else { return lcFail(lc_status(LC_ERR_INTERNAL), "scene_find: no runner") }
                return runner.scenes.find(id, out, function: "scene_find")
            }
        }
        // scene_get_*: the in-process table's. The proxies are scenes of this process's application,
        // remembered as its scenes: the in-process accessors answer them with their checks and words.
    }

    /// Registers an observer here and tells the host, within the plugin's quotas: its observers (the
    /// ones registered here, which the host holds its own count to), and its custom names. [main-thread]
    private static func observe(_ p: LoadedPlugin, _ name: NotificationName, _ sender: UnsafeRawPointer?, _ fn: lc_observer_fn?,
                                _ ctx: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<lc_observer_token>?,
                                _ function: String) -> lc_status
    {
        guard let fn else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): fn is NULL") }
        guard let runner = PluginRunner.current else { return lcFail(lc_status(LC_ERR_INTERNAL), "\(function): no runner") }
        if let refused = p.quotaRefusal(.observers, used: runner.registrations.observers.count, function) { return refused }
        guard runner.link.admit(name, limit: runner.quotas.customNames) else { return p.refuseAtQuota(.customNames, function) }
        let token = runner.registrations.nextObserver
        runner.registrations.nextObserver += 1
        runner.registrations.addObserver(token, (fn, ctx, name))
        let link = runner.link
        link.send { out in
            out.begin(.observe, word: token)
            link.name(name, into: &out)
            out.u64(runner.scenes.hostSender(sender))
            out.end()
        }
        out?.pointee = token
        return lc_status(LC_OK)
    }

    /// [thread-safe] Queued, as from another thread: the host posts it when it reads the frame. A
    /// custom name the host has not had from this process counts towards its quota of custom names.
    private static func post(_ p: LoadedPlugin, _ name: NotificationName, _ sender: UnsafeRawPointer?, _ userInfo: OpaquePointer?,
                             _ function: String) -> lc_status
    {
        guard let runner = PluginRunner.current else { return lcFail(lc_status(LC_ERR_INTERNAL), "\(function): no runner") }
        let link = runner.link
        guard link.admit(name, limit: runner.quotas.customNames) else { return p.refuseAtQuota(.customNames, function) }
        // Over the dictionary limits: refused here with the in-process status and words (never sent).
        if let refused = lcPostLimitRefusal(userInfo, function) { return refused }
        let info = userInfo.map { UserInfoBox.from($0).value }
        let state = link.ownStateByte
        link.send { out in
            out.begin(.post, state: state)
            link.name(name, into: &out)
            out.u64(PluginRunner.current?.scenes.hostSender(sender) ?? UInt64(UInt(bitPattern: sender)))
            out.dictionary(info)
            out.end()
        }
        return lc_status(LC_OK)
    }

    /// Tells the host of a registration ended here (an observer removed, a timer cancelled, a task
    /// ended): one frame naming its id, no payload. [thread-safe]
    private static func tell(_ kind: FrameKind, _ id: UInt64, state: UInt8 = 0) -> lc_status {
        PluginRunner.current?.link.send { out in
            out.begin(kind, word: id, state: state)
            out.end()
        }
        return lc_status(LC_OK)
    }
}
