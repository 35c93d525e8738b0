/// One entry of the event trace: every action, state change, delegate call, notification, watchdog
/// report and error, in the exact order they happened.
///
/// Guarantees:
/// - **Typed.** `payload` says what happened, with typed values (states, reasons, budgets, durations,
///   task ids). Code that decides something from the trace reads the payload, never the words.
/// - **Words follow.** `kind`, `name`, `observer` and `detail` are rendered from the payload when the
///   engine makes the event, in the forms the traces have always had (logs, JSON, the C face and the
///   golden files compare them); they carry no information the payload lacks.
public struct TraceEvent: Sendable, CustomStringConvertible {
    /// What sort of event.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// An action was performed (name: the action).
        public static let action = Kind(rawValue: "action")
        /// The state changed (name: the new state).
        public static let state = Kind(rawValue: "state")
        /// A scene's state changed (name: the scene's new state; `scene`: which).
        public static let sceneState = Kind(rawValue: "scene-state")
        /// A delegate method was called (name: its selector; observer: the delegate id).
        public static let delegate = Kind(rawValue: "delegate")
        /// A notification was delivered to observers (name: the notification).
        public static let notification = Kind(rawValue: "notification")
        /// A notification of a coalescing kind was queued while suspended.
        public static let queued = Kind(rawValue: "queued")
        /// A delegate method was deliberately not called (e.g. openURL after a launch method said no).
        public static let skipped = Kind(rawValue: "skipped")
        /// A notification was not delivered because the application ran no code.
        public static let discarded = Kind(rawValue: "discarded")
        /// A background task began, expired or ended.
        public static let backgroundTask = Kind(rawValue: "background-task")
        /// A completion handler was called.
        public static let completion = Kind(rawValue: "completion")
        /// A state archive was saved or restored.
        public static let archive = Kind(rawValue: "archive")
        /// A budget overrun.
        public static let watchdog = Kind(rawValue: "watchdog")
        /// Something failed; the engine went on.
        public static let error = Kind(rawValue: "error")
        /// An isolated plugin's process failed (name: the cause; observer: the plugin).
        public static let pluginFailed = Kind(rawValue: "plugin-failed")
        /// An isolated plugin was started again after a failure (observer: the plugin).
        public static let pluginRestarted = Kind(rawValue: "plugin-restarted")
        /// A plugin's calls were refused at one of its quotas (name: the quota's kind; observer: the plugin).
        public static let quota = Kind(rawValue: "quota")
        /// A host-API call on the main thread named another plugin than the one whose callback was
        /// running (name: the function; observer: the running callback's owner).
        public static let handleRefused = Kind(rawValue: "handle-refused")
        /// A scene request the application made (`Application.requestSceneSessionActivation` …) is
        /// performed (name: activation, destruction or refresh; observer: who asked; scene: the session).
        public static let sceneRequest = Kind(rawValue: "scene-request")
        /// An isolated plugin's process fell behind (name `behind`) or caught up (`caught up`);
        /// observer: the plugin.
        public static let pluginBacklog = Kind(rawValue: "plugin-backlog")
        /// How a suspended application's isolated plugins are frozen (name `frozen`, said once), that
        /// they cannot be (`not frozen`, once); a plugin whose frozen processes a purge or termination
        /// killed (`killed`), started again at the next launch (`restarted`; observer: the plugin).
        public static let pluginFreezer = Kind(rawValue: "plugin-freezer")
        /// A plugin was replaced by a new build of its file in place (name `begin`, `end` or `failed`;
        /// observer: the plugin; docs/host.md, "Reloading a plugin").
        public static let pluginReload = Kind(rawValue: "plugin-reload")
        /// Every kind above, in their order: the kinds the engine traces (metrics count each from 0,
        /// `LifecycleMetric.events`). A kind added above is added here.
        public static let engineKinds: [Kind] = [
            .action, .state, .sceneState, .delegate, .notification, .queued, .skipped, .discarded, .backgroundTask, .completion,
            .archive, .watchdog, .error, .pluginFailed, .pluginRestarted, .quota, .handleRefused, .sceneRequest, .pluginBacklog,
            .pluginFreezer, .pluginReload,
        ]
        public var description: String { rawValue }
    }

    /// Why the state changed, when the sequence alone does not say.
    public enum StateChangeReason: Hashable, Sendable {
        /// The willTerminate sequence ran to its end (a `terminate` action).
        case terminated
        /// The application exits on suspend: leaving the foreground ran the willTerminate sequence (as on iOS).
        case exitsOnSuspend
        /// The watchdog policy `terminate` killed the application after an overrun.
        case killedByWatchdog
        /// Terminated while suspended: no callback ran (as on iOS).
        case terminatedWhileSuspended
        /// Purged by memory pressure while suspended: no callback ran (as on iOS).
        case purgedWhileSuspended
        /// Purged by memory pressure while running in the background: the willTerminate sequence ran
        /// first (seed 000, decision 49).
        case purgedInBackground
        /// Terminated outright by the memory-warning escalation policy: `warnings` warnings in a row
        /// went unrelieved (`Configuration.memoryWarningLimit`); no callback ran (seed 002, decision 50).
        case terminatedForMemory(warnings: Int)
        /// The user closed the application's last scene in the app switcher: the willTerminate
        /// sequence ran (decision 52).
        case closedInAppSwitcher
    }

    /// Why a notification was not delivered.
    public enum DiscardReason: Hashable, Sendable {
        /// Suspended, and the notification is not of a coalescing kind.
        case suspendedNotCoalescing
        /// The application is not running.
        case notRunning
        /// A protected-data change while suspended that undoes the queued one (`undone`, also
        /// dropped): the net change is none (as on iOS).
        case nettedOut(NotificationName)
    }

    /// Why a delegate method was not called.
    public enum SkipReason: Hashable, Sendable {
        /// A launch method returned false, so the launch URL is not opened.
        case launchDeclined
        /// The delegate registered under `delegate` implements only one of shouldSaveApplicationState
        /// and shouldRestoreApplicationState; state preservation needs both, as on iOS.
        case preservationNeedsBoth(delegate: String)
    }

    /// A step in the life of a background task.
    public enum BackgroundTaskPhase: Hashable, Sendable {
        case began
        /// The expiration handler is being called (the budget is about to run out).
        case expiring
        /// Ended by `endBackgroundTask` (or by unloading its owner).
        case ended
        /// Ended by the watchdog when the background-task budget ran out (policy log).
        case endedByWatchdog
    }

    /// What happened to a state archive.
    public enum ArchiveOperation: Hashable, Sendable {
        case saved
        case read
    }

    /// What happened, typed.
    public indirect enum Payload: Sendable {
        /// An action was performed.
        case action(Action)
        /// The state changed from `from` to `to`; `reason` is nil for the ordinary steps of a sequence.
        case stateChanged(from: ApplicationState, to: ApplicationState, reason: StateChangeReason?)
        /// A delegate method was called on the delegate registered under `delegate`.
        case delegateCalled(method: DelegateMethod, delegate: String)
        /// A delegate method was deliberately not called.
        case delegateSkipped(method: DelegateMethod, reason: SkipReason)
        /// A lifecycle notification was delivered to observers. `queuedCount`: nil when delivered at
        /// once; on resume from suspension, how many posts the delivery stands for.
        case notificationDelivered(name: NotificationName, userInfo: UserInfo?, queuedCount: Int?)
        /// A notification of a coalescing kind was queued while suspended.
        case notificationQueued(name: NotificationName, coalescingKind: String)
        /// A notification was not delivered because the application ran no code.
        case notificationDiscarded(name: NotificationName, reason: DiscardReason)
        /// A background task (begun by `owner`, possibly empty) reached `phase`.
        case backgroundTask(id: BackgroundTaskID, phase: BackgroundTaskPhase, name: String, owner: String)
        /// A completion handler was called; `late`: after the watchdog had already ended the request.
        case completion(method: DelegateMethod, delegate: String, result: FetchResult, late: Bool)
        /// A completion handler was called a second time; the call is ignored.
        case completionCalledAgain(method: DelegateMethod, delegate: String, result: FetchResult)
        /// The archive of the delegate registered under `delegate` was saved or read, with `keys` keys.
        case archive(ArchiveOperation, delegate: String, keys: Int)
        /// Saving or reading an archive failed; the engine went on (a failed read launches without it).
        case archiveFailed(ArchiveOperation, delegate: String, message: String)
        /// A scene's restoration archive of the delegate registered under `delegate` was not read at
        /// the scene's connection: protected data was unavailable (the device locked). It is read when
        /// the data becomes available (decision 48).
        case archiveDeferred(delegate: String)
        /// A scene request the application made, performed now (`refusal` nil: the actions it takes
        /// follow), or refused then with `refusal` (decision 53).
        case sceneRequest(SceneRequestKind, session: String, requester: String, refusal: String?)
        /// The delegate's encoding failed during `method` (shouldSave or willEncode): nothing was saved,
        /// its previous archive is kept as it was (`StateArchive.failure`).
        case archiveKept(method: DelegateMethod, delegate: String, failure: EncodingFailure)
        /// A budget was overrun: which budget, how long it was, how long it took, who, and the policy.
        case watchdogOverrun(WatchdogReport)
        /// A post of `name` was refused: `depth` dispatches were already nested
        /// (`AppNotificationCenter.maximumNesting`); nothing was delivered. `poster`: the owner of the
        /// observer that posted ("" if none).
        case postRefused(name: NotificationName, depth: Int, poster: String)
        /// The scene `scene` went from `from` to `to`; `reason` is set when the application stopped
        /// running with the scene connected (the scene is unattached with no callback).
        case sceneStateChanged(scene: String, from: SceneState, to: SceneState, reason: StateChangeReason?)
        /// `event` happened to the scene `scene`: a scene delegate method called for it
        /// (`.delegateCalled`), a scene notification posted with it as sender (`.notificationDelivered`),
        /// its restoration archive saved, read or deferred (`.archive`, `.archiveFailed`, `.archiveDeferred`). Never nested.
        case inScene(String, Payload)
        /// An isolated plugin's process failed; the plugin was taken out of the application.
        case pluginFailed(PluginFailure)
        /// An isolated plugin failed earlier was started again in a new process (restart `attempt` of `limit`).
        case pluginRestarted(plugin: String, attempt: Int, limit: Int)
        /// Calls of a plugin were refused at one of its quotas (`LC_ERR_QUOTA`); nothing they asked for was kept.
        case quotaRefused(QuotaRefusal)
        /// A host-API call `function`, made on the main thread while a callback of `caller` ran, named the
        /// plugin `handleOf`: refused, nothing changed (a plugin calls with its own `lc_plugin *`).
        case handleRefused(function: String, handleOf: String, caller: String)
        /// The isolated plugin `plugin`'s process fell behind what the host sends it, or caught up:
        /// meanwhile its notifications and timer fires were held and coalesced (docs/host.md, "A slow plugin").
        case pluginBacklog(plugin: String, PluginBacklog)
        /// How isolated plugins are frozen while the application is suspended (nil plugin: all of them).
        case pluginFreezing(plugin: String?, PluginFreezing)
        /// A step of the reload of the plugin `plugin` in place.
        case pluginReload(plugin: String, PluginReloadStep)
    }

    /// Position in the trace, from 1.
    public let seq: UInt64
    /// Monotonic time since the first launch.
    public let time: Duration
    /// What happened, typed: read this to decide anything.
    public let payload: Payload
    /// The application state after the event.
    public let state: ApplicationState
    /// The sort of event (rendered from `payload`).
    public let kind: Kind
    /// The action, state, selector, notification or task step (rendered from `payload`).
    public let name: String
    /// The delegate or plugin involved, if any (rendered from `payload`).
    public let observer: String?
    /// More words: a userInfo, a result, a reason (rendered from `payload`).
    public let detail: String?
    /// The scene the event is about, if any (rendered from `payload`: a scene's state change, a scene
    /// delegate call, a scene notification, a scene's archive, an action naming a scene).
    public let scene: String?

    /// An event whose words are rendered from `payload`.
    init(seq: UInt64, time: Duration, payload: Payload, state: ApplicationState) {
        let text = payload.text
        self.init(seq: seq, time: time, payload: payload, state: state,
                  kind: text.kind, name: text.name, observer: text.observer, detail: text.detail)
    }

    /// An event with words of the caller's choosing, whatever the payload says: for tests proving
    /// that a reader of the trace decides from the payload, not from the words.
    package init(seq: UInt64, time: Duration, payload: Payload, state: ApplicationState,
                 kind: Kind, name: String, observer: String?, detail: String?)
    {
        self.seq = seq
        self.time = time
        self.payload = payload
        self.state = state
        self.kind = kind
        self.name = name
        self.observer = observer
        self.detail = detail
        scene = payload.scene  // typed data, not words: always the payload's
    }

    /// `kind name [observer] {scene} (detail)` — the compact form tests and logs compare (`{scene}`
    /// only for an event about a scene).
    public var description: String {
        var s = "\(kind) \(name)"
        if let observer, !observer.isEmpty { s += " [\(observer)]" }
        if let scene { s += " {\(scene)}" }
        if let detail, !detail.isEmpty { s += " (\(detail))" }
        return s
    }
}

extension TraceEvent.Payload {
    /// The words of the event, in the forms the traces have always had.
    var text: (kind: TraceEvent.Kind, name: String, observer: String?, detail: String?) {
        switch self {
        case .action(let action):
            return (.action, action.name, nil, action.traceDetail)
        case .stateChanged(_, let to, let reason):
            return (.state, to.rawValue, nil, reason?.traceDetail)
        case .delegateCalled(let method, let delegate):
            return (.delegate, method.selector, delegate, nil)
        case .delegateSkipped(let method, .launchDeclined):
            return (.skipped, method.selector, nil, "a launch method returned false")
        case .delegateSkipped(let method, .preservationNeedsBoth(let delegate)):
            let other: DelegateMethod = method == .shouldSaveApplicationState ? .shouldRestoreApplicationState : .shouldSaveApplicationState
            return (.skipped, method.selector, delegate,
                    "\(other.selector) is not implemented: state preservation needs both, as on iOS")
        case .notificationDelivered(let name, let userInfo, let queuedCount):
            let coalesced = queuedCount.flatMap { $0 > 1 ? "coalesced from \($0)" : nil }
            return (.notification, name.rawValue, nil, coalesced ?? userInfo.flatMap { $0.isEmpty ? nil : $0.description })
        case .notificationQueued(let name, let kind):
            return (.queued, name.rawValue, nil, "coalescing kind \(kind)")
        case .notificationDiscarded(let name, let reason):
            let why = switch reason {
            case .suspendedNotCoalescing: "suspended: only notifications of the coalescing kinds are queued"
            case .notRunning: "the application is not running"
            case .nettedOut(let undone): "undoes the queued \(undone.rawValue): nothing is delivered on resume, as on iOS"
            }
            return (.discarded, name.rawValue, nil, why)
        case .backgroundTask(let id, let phase, let name, let owner):
            let label = name.isEmpty ? "#\(id)" : "#\(id) \(name)"
            switch phase {
            case .began: return (.backgroundTask, "begin", owner, label)
            case .expiring: return (.backgroundTask, "expiring", owner, label)
            case .ended: return (.backgroundTask, "end", owner, label)
            case .endedByWatchdog: return (.backgroundTask, "end", owner, "#\(id) ended by the watchdog")
            }
        case .completion(let method, let delegate, let result, let late):
            // A URL session's handler carries no result (Apple's `() -> Void`): "called".
            let what = method.completionCarriesResult ? result.rawValue : "called"
            return (.completion, method.selector, delegate, late ? "\(what), late: the watchdog had already ended the request" : what)
        case .completionCalledAgain(let method, let delegate, let result):
            let call = method.completionCarriesResult ? "the second call (\(result))" : "the second call"
            return (.error, "completion handler called again", delegate, "\(method.selector): \(call) is ignored")
        case .archive(let operation, let delegate, let keys):
            return (.archive, operation == .saved ? "saved" : "read", delegate, "\(keys) keys")
        case .archiveFailed(let operation, let delegate, let message):
            return (.error, "archive", delegate, operation == .saved ? message : "\(message); launching without it")
        case .sceneRequest(let kind, let session, let requester, let refusal):
            guard let refusal else { return (.sceneRequest, kind.rawValue, requester, "session \(session)") }
            return (.error, "scene request", requester, "\(kind) of session \(session) refused: \(refusal)")
        case .archiveDeferred(let delegate):
            return (.archive, "deferred", delegate, "protected data is unavailable (the device is locked); read when it becomes available")
        case .archiveKept(let method, let delegate, let failure):
            return (.error, "archive", delegate, "not saved, the previous archive is kept: \(method.selector) \(failure.words)")
        case .watchdogOverrun(let report):
            return (.watchdog, report.event, report.observer, report.description)
        case .postRefused(let name, let depth, let poster):
            return (.error, "post refused", poster,
                    "\(name.rawValue): \(depth) dispatches were already nested (the limit is \(AppNotificationCenter.maximumNesting)); nothing was delivered")
        case .sceneStateChanged(_, _, let to, let reason):
            return (.sceneState, to.rawValue, nil, reason?.traceDetail)
        case .inScene(_, let event):
            return event.text
        case .pluginFailed(let failure):
            return (.pluginFailed, failure.causeName, failure.plugin, failure.description)
        case .pluginRestarted(let plugin, let attempt, let limit):
            return (.pluginRestarted, "restarted", plugin, "restart \(attempt) of \(limit)")
        case .quotaRefused(let refusal):
            return (.quota, refusal.kind.rawValue, refusal.plugin, refusal.traceDetail)
        case .handleRefused(let function, let handleOf, let caller):
            return (.handleRefused, function, caller, "called with the handle of '\(handleOf)' while a callback of '\(caller)' ran: refused")
        case .pluginFreezing(let plugin, let freezing):
            let text = freezing.traceText
            return (.pluginFreezer, text.name, plugin, text.detail)
        case .pluginBacklog(let plugin, let backlog):
            let text = backlog.traceText
            return (.pluginBacklog, text.name, plugin, text.detail)
        case .pluginReload(let plugin, let step):
            let text = step.traceText
            return (.pluginReload, text.name, plugin, text.detail)
        }
    }

    /// The scene the event is about, if any.
    var scene: String? {
        switch self {
        case .sceneStateChanged(let scene, _, _, _), .inScene(let scene, _): return scene
        case .action(let action): return action.sceneID
        default: return nil
        }
    }
}

extension TraceEvent.StateChangeReason {
    /// The trace detail of a state change for this reason (none for an ordinary termination).
    var traceDetail: String? {
        switch self {
        case .terminated, .exitsOnSuspend: return nil
        case .killedByWatchdog: return "killed by the watchdog"
        case .terminatedWhileSuspended: return "terminated while suspended: no callback, as on iOS"
        case .purgedWhileSuspended: return "purged while suspended: no callback, as on iOS"
        case .purgedInBackground: return "purged while running in the background, after applicationWillTerminate:"
        case .closedInAppSwitcher: return "its last scene closed in the app switcher, after applicationWillTerminate:"
        case .terminatedForMemory(let warnings):
            return "terminated outright: memory still short after \(warnings) memory warning\(warnings == 1 ? "" : "s") without relief (the memory-warning limit); no callback"
        }
    }
}
