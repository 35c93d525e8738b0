import AppLifecycle
import CLifecycleABI
import Glibc
import LifecycleC

// What an isolated plugin's process asks of the host, frame by frame: every field checked, every id
// checked against what that process registered. Anything impossible cuts the process off.

extension IsolatedPlugin {
    /// Runs one frame from the process. [loop-thread]
    func run(_ frame: inout FrameReader) {
        do {
            try handleFrame(&frame)
        } catch {
            fail(.protocolViolation(error.message))
        }
    }

    private func handleFrame(_ frame: inout FrameReader) throws(ProtocolViolation) {
        guard let handle else { return }
        let word = frame.word
        switch frame.kind {
        case .observe:
            let name = try processName(try frame.name())
            let sender = try frame.u64("sender")
            try frame.finish()
            guard word != 0, observers[word] == nil else { throw ProtocolViolation("observe reuses token \(word)") }
            try checkQuota(.observers, used: observers.count)
            let observer = IsolatedObserver(token: word, owner: self)
            observers[word] = observer
            observer.registered = handle.app.center.observeRaw(name, sender: UInt(truncatingIfNeeded: sender), owner: plugin.id,
                                                               function: isolatedObserverFunction,
                                                               context: Unmanaged.passUnretained(observer).toOpaque())
        case .removeObserver:
            try frame.finish()
            guard let observer = observers.removeValue(forKey: word) else {
                throw ProtocolViolation("remove_observer names token \(word), which it never registered")
            }
            if let token = observer.registered { handle.app.center.removeObserver(token, owner: plugin.id) }
        case .post:
            let name = try processName(try frame.name())
            let sender = try frame.u64("sender")
            let info = try frame.dictionary("userInfo")
            try frame.finish()
            fromPluginThread(frame, .post(name)) { [weak handle] in
                handle?.app.center.post(name, sender: NotificationSender(rawValue: UInt(truncatingIfNeeded: sender)), userInfo: info)
            }
        case .log:
            let level = try frame.u32("level")
            let message = try frame.string("message")
            try frame.finish()
            plugin.log(lc_log_level(min(level, UInt32(LC_LOG_ERROR))), message)
        case .beginTask:
            let name = try frame.string("name")
            let expires = try frame.u8("expiration flag") != 0
            try frame.finish()
            beginTask(request: word, name: name, expires: expires)
        case .endTask:
            try frame.finish()
            fromPluginThread(frame, .endBackgroundTask(BackgroundTaskID(rawValue: word))) { [weak self, weak handle] in
                guard let self, let handle else { return }
                if plugin.endOwnBackgroundTask(word, in: handle, function: "end_background_task") != LC_OK {
                    handle.app.configuration.logger.warning("isolated plugin '\(plugin.id)': \(String(cString: lcLastErrorMessage()))")
                }
            }
        case .addTimer:
            let seconds = try frame.f64("seconds")
            try frame.finish()
            guard seconds.isFinite, seconds >= 0 else { throw ProtocolViolation("add_timer with \(seconds) seconds") }
            guard word != 0, timers[word] == nil else { throw ProtocolViolation("add_timer reuses timer id \(word)") }
            try checkQuota(.timers, used: timers.count)
            timers[word] = handle.addTimer(seconds: seconds, owner: plugin.id) { [weak self] in self?.timerFired(word) }
        case .cancelTimer:
            try frame.finish()
            // Unknown: it fired while the cancel was on its way.
            if let id = timers.removeValue(forKey: word) { handle.cancelTimer(id) }
        case .result:
            let answer = try frame.u8("answer") != 0
            let archive = try frame.dictionary("archive")
            let failure = try Self.readEncodingFailure(&frame)
            try frame.finish()
            guard word != 0, word == waitingCall, callAnswer == nil else { throw ProtocolViolation("a result for call \(word), which is not waiting") }
            callAnswer = (answer, archive, failure)
        case .completed:
            let result = try frame.u32("result")
            let repeated = try frame.u8("repeated flag") != 0
            try frame.finish()
            guard word != 0, word < nextCompletionKey else { throw ProtocolViolation("a completion for key \(word), never handed out") }
            guard result <= UInt32(LC_FETCH_FAILED) else { throw ProtocolViolation("a completion with result \(result)") }
            let fetched = fetchResult(lc_fetch_result(result))
            fromPluginThread(frame, .completion(delegate: plugin.id)) { [weak self] in self?.completed(word, fetched, repeated: repeated) }
        case .synced:
            try frame.finish()
            guard word != 0, word == waitingSync else { throw ProtocolViolation("synced \(word), which was not asked") }
            synced = true
        case .described:
            throw ProtocolViolation("a second descriptor")
        case .loadFailed, .initDone:
            guard status == .loading, loadAnswer == nil else { throw ProtocolViolation("a \(frame.kind) frame after loading") }
            loadAnswer = try Self.readLoadAnswer(&frame)
        case .unloaded:
            try frame.finish()
            guard status == .unloading else { throw ProtocolViolation("unloaded without being asked") }
            unloadedSeen = true
        case .query:
            let asked = try frame.u8("query")
            try frame.finish()
            guard let query = HostQuery(rawValue: asked) else { throw ProtocolViolation("a query of kind \(asked)") }
            switch query {
            case .backgroundTimeRemaining: reply(word, lc_status(LC_OK), value: handle.app.backgroundTimeRemainingSeconds.bitPattern)
            case .deviceState:
                let value = UInt64(handle.app.isLowPowerModeEnabled ? 1 : 0) | UInt64(handle.app.thermalState.rawValue) << 8
                reply(word, lc_status(LC_OK), value: value)
            case .sessionIDs:
                let ids = handle.app.sceneSessions.map(\.persistentIdentifier)
                reply(word, lc_status(LC_OK), value: UInt64(ids.count), message: ids.map { $0 + "\n" }.joined())
            }
        case .sessionUserInfo:
            let operation = try frame.u8("operation")
            let session = try frame.string("session id")
            let info = try frame.dictionary("userInfo")
            try frame.finish()
            switch operation {
            case 0:
                switch handle.sessionUserInfo(session, function: "session_get_user_info") {
                case .success(let value): reply(word, lc_status(LC_OK), dictionary: .some(value))
                case .failure(let error): reply(word, error.status, message: error.message, dictionary: .some(nil))
                }
            case 1:
                let status = handle.setSessionUserInfo(session, info ?? UserInfo(), function: "session_set_user_info")
                reply(word, status, message: status == LC_OK ? "" : String(cString: lcLastErrorMessage()))
            default:
                throw ProtocolViolation("a session userInfo operation \(operation)")
            }
        case .sceneRequest:
            let rawKind = try frame.u8("request kind")
            let hasSession = try frame.u8("session flag")
            let session = hasSession == 1 ? try frame.string("session id") : nil
            let activity = try frame.dictionary("activity")
            try frame.finish()
            let kinds: [SceneRequestKind] = [.activation, .destruction, .refresh]
            guard Int(rawKind) < kinds.count else { throw ProtocolViolation("a scene request of kind \(rawKind)") }
            guard hasSession <= 1 else { throw ProtocolViolation("the sceneRequest frame's session flag is \(hasSession)") }
            let function = "request_scene_\(kinds[Int(rawKind)])"
            let status = handle.requestScene(kinds[Int(rawKind)], sessionID: session, activity: activity, requester: plugin.id, function: function)
            reply(word, status, message: status == LC_OK ? "" : String(cString: lcLastErrorMessage()))
        case .quotaRefused:
            let during = try frame.u64("the frame the refused call was made in")
            try frame.finish()
            guard word < UInt64(QuotaKind.allCases.count) else { throw ProtocolViolation("a quota refusal of kind \(word)") }
            guard during <= events.sent else { throw ProtocolViolation("a quota refusal made in frame \(during) of \(events.sent) sent") }
            quotaRefused(QuotaKind.allCases[Int(word)], during: during)
        default:
            throw ProtocolViolation("a frame of the host's kind \(frame.kind)")
        }
    }

    /// A `result` frame's last field: 0, or 1 then the refused setter and its message.
    static func readEncodingFailure(_ frame: inout FrameReader) throws(ProtocolViolation) -> EncodingFailure? {
        switch try frame.u8("encoding flag") {
        case 0: return nil
        case 1: return .writeRefused(function: try frame.string("refused setter"), message: try frame.string("refusal"))
        case let flag: throw ProtocolViolation("the result frame's encoding flag is \(flag)")
        }
    }

    static func readLoadAnswer(_ frame: inout FrameReader) throws(ProtocolViolation) -> LoadAnswer {
        switch frame.kind {
        case .initDone:
            let status = try frame.i32("status")
            let reason = try frame.string("reason")
            let rows = try frame.u64("rows")
            let sceneRows = try frame.u64("scene rows")
            try frame.finish()
            return .initDone(status: status, reason: reason, rows: rows, sceneRows: sceneRows)
        case .loadFailed:
            let status = try frame.i32("status")
            let reason = try frame.string("reason")
            try frame.finish()
            return .loadFailed(status: status, reason: reason)
        case .described:
            let id = try frame.string("id")
            let version = try frame.string("version")
            let summary = try frame.string("summary")
            let major = try frame.u32("abi major")
            let minor = try frame.u32("abi minor")
            try frame.finish()
            return .described(id: id, version: version, summary: summary, abiMajor: major, abiMinor: minor)
        default:
            throw ProtocolViolation("a \(frame.kind) frame where the plugin's process should say how loading went")
        }
    }

    /// The name a process's name field names: standard ids as they are; a custom name by the text it
    /// sent once with its id (a limited number of them).
    private func processName(_ field: (id: UInt32, text: String?)) throws(ProtocolViolation) -> NotificationName {
        if let text = field.text {
            if names[field.id] == nil { try checkQuota(.customNames, used: names.count) }
            let name: NotificationName
            do { name = try NotificationName(text) } catch { throw ProtocolViolation("an invalid notification name: \(error.message)") }
            guard !name.isStandard else { throw ProtocolViolation("sent the standard name '\(text)' as a custom one") }
            names[field.id] = name
            return name
        }
        if let name = names[field.id] { return name }
        guard NotificationName.isStandardID(field.id), let name = NotificationName(internedID: field.id) else {
            throw ProtocolViolation("name id \(field.id) was never sent with its text")
        }
        return name
    }

    /// Runs `body` now, or hands it to the application's gate (`Application.foreignInputGate`) when
    /// the frame came from one of the plugin's own threads (`IsolationProtocol.fromPluginThread`)
    /// and a gate is set: what a recording orders, as it does the same call from an in-process
    /// plugin's thread. [loop-thread]
    private func fromPluginThread(_ frame: borrowing FrameReader, _ kind: ForeignInput.Kind, _ body: @escaping () -> Void) {
        guard frame.state & IsolationProtocol.fromPluginThread != 0, let gate = handle?.app.center.foreignInputGate else { return body() }
        gate(ForeignInput(kind, body))
    }

    private func beginTask(request: UInt64, name: String, expires: Bool) {
        guard let handle else { return }
        let limit = plugin.quota.limits.backgroundTasks
        guard handle.app.backgroundTaskCount(owner: plugin.id) < limit else {
            let message = QuotaLedger.message("begin_background_task", plugin: plugin.id, .backgroundTasks, limit: limit)
            reply(request, lc_status(LC_ERR_QUOTA), message: message)
            return quotaRefused(.backgroundTasks)
        }
        var task: UInt64 = 0  // captured: set once the engine has issued the id
        let expiration: (() -> Void)? = expires ? { [weak self] in self?.sendEvent(.expire, word: task, .expiration) } : nil
        do {
            task = try handle.app.beginBackgroundTask(named: name, owner: plugin.id, expirationHandler: expiration).rawValue
            plugin.addTask(task)
            reply(request, lc_status(LC_OK), value: task)
        } catch {
            reply(request, lcFail(error), message: error.message)
        }
    }

    private func timerFired(_ timer: UInt64) {
        guard timers.removeValue(forKey: timer) != nil else { return }
        sendEvent(.timerFired, word: timer, .timer)
    }

    /// A completion handler of a request sent to the plugin (fetch, remote notification): kept under
    /// a new key until the process calls it. When the request ends, the process is told
    /// (`requestEnded`, in order with the other frames), so that a later call there is late as in the
    /// host's process.
    func keep(_ handler: FetchCompletionHandler) -> UInt64 {
        let key = nextCompletionKey
        nextCompletionKey += 1
        // On the loop thread, where the engine ends requests; `isActive` first: a plugin unloaded
        // (its application may be going) sends nothing.
        handler.whenEnded { [weak self] in
            guard let self, isActive else { return }
            sendEvent(.requestEnded, word: key, .requestEnded)
        }
        if completions.count >= completionsSweepAt {
            completions = completions.filter { !$0.value.requestEnded }
            completionsSweepAt = max(64, completions.count * 2)  // amortised O(1) a request
        }
        completions[key] = handler
        return key
    }

    private func completed(_ key: UInt64, _ result: FetchResult, repeated: Bool) {
        guard let handler = completions[key] else { return }  // its request ended long ago
        // The engine tells a repeat from a first call itself (and traces it); forget after a repeat.
        if repeated { completions[key] = nil }
        handler(result)
    }

    /// Sends a notification to the observer `token` of the process, or holds it while the process is
    /// behind (`Backlog`): what `isolatedObserverFunction` does.
    func forward(_ token: UInt64, _ record: NotificationRecord) {
        withApplication { handle in
            let info = record.userInfo.map { UserInfoBox.from(OpaquePointer($0)).value }
            let context = handle.app.frameContext
            let notification = Backlog.Held(token: token, name: record.nameID, sender: UInt(bitPattern: record.sender),
                                            userInfo: info, state: IsolationProtocol.stateByte(context))
            if backlog != nil { backlog?.hold(notification) } else { sendNotification(notification, in: handle, context: context) }
        }
    }

    /// Sends a notification (now, or held from when it was posted: its state then). [loop-thread]
    func sendNotification(_ notification: Backlog.Held) {
        withApplication { sendNotification(notification, in: $0) }
    }

    private func sendNotification(_ notification: Backlog.Held, in handle: AppHandle, context: Application.FrameContext? = nil) {
        let scene = notification.sender == 0 ? nil : SceneHandles.scene(at: notification.sender, of: handle)
        // The usual frame of a stream: no scene, no dictionary (and a name the process knows by id).
        let plain = scene == nil && notification.userInfo == nil
        sendFrame(.notify, word: notification.token, .notification(notification.name), state: notification.state,
                  plainNotification: plain ? (notification.name, UInt64(notification.sender)) : nil, context: context, in: handle) { out in
            if let name = NotificationName(internedID: notification.name) { out.name(name) } else { out.name(notification.name, text: nil) }
            out.u64(UInt64(notification.sender))
            // A scene's notification names the scene: the process hands its proxy as the sender.
            if let scene {
                out.u8(1)
                SceneSnapshot(scene, in: handle.app).write(to: &out)
            } else {
                out.u8(0)
            }
            out.dictionary(notification.userInfo)
        }
    }
}
