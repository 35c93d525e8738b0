import Logging
import Synchronization

/// An application's life cycle, exactly as iOS runs it (seeds 000–004): states, sequences, budgets,
/// background tasks, coalesced notifications while suspended, and state preservation.
///
/// Guarantees:
/// - **Thread.** Bound to its loop's thread: every method and property is [loop-thread] unless marked
///   [thread-safe]; every delegate, observer, expiration handler and timer runs on that thread.
/// - **Order.** Within a sequence, delegates are called in registration order; each lifecycle
///   notification is posted once, after (or, for willEnterForeground and significantTimeChange, before)
///   all delegates — seed 002. The trace records every step in the order it happened.
/// - **Legality.** An action that is illegal in the current state throws `ApplicationError`
///   (`.illegalAction`, naming the action and the state) and changes nothing. An action started from
///   inside a callback of another action throws `.actionInProgress`.
/// - **Combining answers of several delegates.** Launch: the URL is handled unless some delegate that
///   implements willFinish or didFinish returned false (unimplemented methods do not count). openURL:
///   every implementing delegate is called; the URL counts as handled if any returned true.
///   shouldSave/shouldRestore do not combine: each gates its own delegate's archive only.
/// - **Time.** Budgets are watched from another thread (see `Configuration.Budgets`); background tasks
///   and completion handlers are timed by the loop's monotonic timers.
public final class Application: @unchecked Sendable {
    public let loop: MainRunLoop
    public let center: AppNotificationCenter
    public let configuration: Configuration

    /// The current state.
    public private(set) var state: ApplicationState = .notRunning
    /// Whether the device is locked (between `lock` and `unlock`).
    public private(set) var isDeviceLocked = false
    /// Whether files with complete protection are readable (`protectedDataAvailable`).
    public private(set) var isProtectedDataAvailable = true
    /// Receives every trace event, on the loop thread, in order.
    public var traceHandler: ((TraceEvent) -> Void)?

    /// The application's identity as the sender of its lifecycle notifications.
    public var sender: NotificationSender { NotificationSender(self) }

    private struct DelegateSlot {
        let id: String
        let token: UInt64
        let handlers: DelegateHandlers
    }

    private struct QueuedNotification {
        let kind: String
        var name: NotificationName
        var sender: UInt
        var userInfo: UserInfo?
        var count: Int
    }

    private struct OpenTask {
        let id: BackgroundTaskID
        let name: String
        let owner: String
        let expirationHandler: (() -> Void)?
        var expirationCalled = false
    }

    private struct Request {
        let id: UInt64
        let method: DelegateMethod
        let observer: String
        let handler: FetchCompletionHandler
        var timer: LoopSource?

        func end() {
            timer?.cancel()
            handler.markEnded()
        }
    }

    /// Thrown inside a sequence when the watchdog killed the application: unwinds to `perform`.
    private struct Killed: Error {}

    private var slots: [DelegateSlot] = []
    /// The ids of `slots`, sorted: the duplicate check of `addDelegate` and `hasDelegate(id:)` search
    /// it by halving, so that adding a thousand delegates (plugins) does not compare each id with all the others.
    private var sortedIDs: [String] = []
    private var nextDelegateToken: UInt64 = 1
    private var currentAction: String?
    private var interrupted = false
    private var lockedFromForeground = false
    private var queued: [QueuedNotification] = []
    private var tasks: [OpenTask] = []
    private var nextTaskID: UInt64 = 1
    private var backgroundSince: MonotonicInstant?
    private var expirationTimer: LoopSource?
    private var deadlineTimer: LoopSource?
    private var requests: [Request] = []
    private var nextRequestID: UInt64 = 1
    /// Bumped whenever the application stops running, so late completion handlers are recognised.
    private var generation: UInt64 = 0
    private var inBudget = false
    private var traceOrigin: MonotonicInstant?
    private var sequenceNumber: UInt64 = 0
    private let killSwitch: KillSwitch
    private let watchdog: Watchdog
    private let archiveStore: ArchiveStore?

    /// Creates an application on `loop` (call on the loop's thread), with its own notification center.
    public init(configuration: Configuration = Configuration(), loop: MainRunLoop) {
        self.configuration = configuration
        self.loop = loop
        center = AppNotificationCenter(loop: loop)
        let killSwitch = KillSwitch(configuration)
        self.killSwitch = killSwitch
        watchdog = Watchdog(policy: configuration.watchdogPolicy) { report in killSwitch.overrun(report) }
        archiveStore = configuration.archiveDirectory.map { ArchiveStore(directory: $0) }
        center.heldDeliveryHandler = { [weak self] name, sender, info in self?.held(name, sender: sender, userInfo: info) }
    }

    deinit {
        cancelBackgroundTimers()
        for request in requests { request.end() }
        watchdog.shutdown()
    }

    // MARK: Delegates

    /// Identifies a registered delegate.
    public struct DelegateToken: Hashable, Sendable {
        public let rawValue: UInt64
    }

    /// Adds a delegate (held strongly); it is called after those added before it.
    /// - Parameter id: a unique name (a plugin id): traces, watchdog reports and its archive file use it.
    /// - Throws: `.invalidArgument` for an empty or duplicate id.
    @discardableResult
    public func addDelegate(_ delegate: ApplicationDelegate, id: String) throws(ApplicationError) -> DelegateToken {
        try addDelegate(DelegateHandlers(delegate), id: id)
    }

    /// Adds a delegate given as a table of handlers (nil: not implemented).
    @discardableResult
    public func addDelegate(_ handlers: DelegateHandlers, id: String) throws(ApplicationError) -> DelegateToken {
        try requireLoopThread("addDelegate")
        if id.isEmpty { throw ApplicationError(.invalidArgument, "a delegate needs a non-empty id") }
        let position = sortedIndex(of: id)
        if position.found {
            throw ApplicationError(.invalidArgument, "a delegate with id '\(id)' is already registered")
        }
        let token = nextDelegateToken
        nextDelegateToken += 1
        slots.append(DelegateSlot(id: id, token: token, handlers: handlers))
        sortedIDs.insert(id, at: position.index)
        return DelegateToken(rawValue: token)
    }

    /// Removes a delegate; safe from inside a callback (it is not called again). [loop-thread]
    @discardableResult
    public func removeDelegate(_ token: DelegateToken) -> Bool {
        guard let index = slots.firstIndex(where: { $0.token == token.rawValue }) else { return false }
        removeSlot(at: index)
        return true
    }

    /// Removes the delegate registered under `id`. [loop-thread]
    @discardableResult
    public func removeDelegate(id: String) -> Bool {
        guard let index = slots.firstIndex(where: { $0.id == id }) else { return false }
        removeSlot(at: index)
        return true
    }

    private func removeSlot(at index: Int) {
        let position = sortedIndex(of: slots[index].id)
        if position.found { sortedIDs.remove(at: position.index) }
        slots.remove(at: index)
    }

    /// Where `id` is, or would be inserted, in `sortedIDs`.
    private func sortedIndex(of id: String) -> (index: Int, found: Bool) {
        var low = 0
        var high = sortedIDs.count
        while low < high {
            let middle = (low + high) / 2
            if sortedIDs[middle] < id { low = middle + 1 } else { high = middle }
        }
        return (low, low < sortedIDs.count && sortedIDs[low] == id)
    }

    /// The registered delegates' ids, in call order.
    public var delegateIDs: [String] { slots.map(\.id) }

    /// Whether a delegate is registered under `id` (as `delegateIDs.contains(id)`, without the copy).
    public func hasDelegate(id: String) -> Bool { sortedIndex(of: id).found }

    // MARK: Actions

    /// Performs one system action and runs its whole sequence before returning.
    ///
    /// [loop-thread] Delegates and observers run inside this call. Afterwards, an application in the
    /// background that nothing holds (no background task, pending completion handler, or continuous
    /// background mode) is suspended.
    /// - Throws: `ApplicationError` — `.illegalAction` (names the action and the state; nothing changed),
    ///   `.actionInProgress`, `.backgroundModeMissing`, `.notOnLoopThread`.
    public func perform(_ action: Action) throws(ApplicationError) {
        try requireLoopThread("perform(\(action.name))")
        if let running = currentAction { throw .actionInProgress(action.name, running: running) }
        try validate(action)
        currentAction = action.name
        if case .launch = action.kind, traceOrigin == nil { traceOrigin = .now }
        trace(.action, action.name, detail: actionDetail(action))
        do {
            try run(action)
        } catch {
            goNotRunning("killed by the watchdog")
        }
        currentAction = nil
        suspendIfIdle()
    }

    private func actionDetail(_ action: Action) -> String? {
        switch action.kind {
        case .launch(let options, _): return options.isEmpty ? nil : options.description
        case .memoryWarning(let level): return level.rawValue
        case .openURL(let url, let source, _): return source.map { "\(url) from \($0)" } ?? url
        case .remoteNotification(let payload): return payload.isEmpty ? nil : payload.description
        default: return nil
        }
    }

    private func validate(_ action: Action) throws(ApplicationError) {
        let name = action.name
        func illegal(_ why: String? = nil) -> ApplicationError { .illegalAction(name, in: state, why) }
        if configuration.exitsOnSuspend, action.entersBackgroundFrom(state) {
            throw illegal("the application exits on suspend, so it never runs in the background (seed 003)")
        }
        switch action.kind {
        case .launch:
            guard state == .notRunning else { throw illegal("it is already running") }
        case .beginInterruption:
            guard state == .active else { throw illegal("only an active application can be interrupted") }
        case .dismissInterruption, .acceptInterruption:
            guard state == .inactive, interrupted else { throw illegal("no interruption is in progress") }
        case .home:
            guard state == .active || (state == .inactive && interrupted) else {
                throw illegal("only a foreground application can be switched away from")
            }
        case .foreground:
            guard state == .background || state == .suspended else {
                throw illegal(state == .notRunning ? "launch it instead" : "it is already in the foreground")
            }
            if isDeviceLocked { throw illegal("the device is locked; unlock it first") }
        case .lock:
            guard state != .notRunning else { throw illegal() }
            if isDeviceLocked { throw illegal("the device is already locked") }
        case .unlock:
            guard state != .notRunning else { throw illegal() }
            if !isDeviceLocked { throw illegal("the device is not locked") }
        case .memoryWarning:
            guard state.isRunning else {
                throw illegal(state == .suspended ? "a suspended application runs no code; memory pressure purges it instead" : nil)
            }
        case .significantTimeChange:
            guard state != .notRunning else { throw illegal() }
        case .openURL:
            if isDeviceLocked, state == .background || state == .suspended {
                throw illegal("the device is locked; unlock it first")
            }
        case .backgroundFetch:
            guard configuration.backgroundModes.contains(.fetch) else {
                throw ApplicationError(.backgroundModeMissing,
                                       "action 'fetch' needs the 'fetch' background mode, which the application does not declare",
                                       action: name, state: state)
            }
            guard !state.isForeground else { throw illegal("background fetch is delivered only outside the foreground") }
        case .remoteNotification:
            if state == .notRunning || state == .suspended, !configuration.backgroundModes.contains(.remoteNotification) {
                throw ApplicationError(.backgroundModeMissing,
                                       "action 'remote-notification' needs the 'remote-notification' background mode to wake an application that is \(state)",
                                       action: name, state: state)
            }
        case .terminate:
            guard state != .notRunning else { throw illegal() }
        case .purge:
            guard state == .suspended else { throw illegal("only a suspended application is purged") }
        }
    }

    private func run(_ action: Action) throws(Killed) {
        switch action.kind {
        case .launch(let options, let inBackground):
            try launch(options: options, inBackground: inBackground)
        case .beginInterruption:
            try resignActive()
            interrupted = true
        case .dismissInterruption:
            interrupted = false
            try becomeActive()
        case .acceptInterruption:
            interrupted = false
            try leaveForeground()
        case .home:
            interrupted = false
            if state == .active { try resignActive() }
            try leaveForeground()
        case .foreground:
            try enterForeground()
        case .lock:
            try lock()
        case .unlock:
            try unlock()
        case .memoryWarning(let level):
            try callDelegates(.didReceiveMemoryWarning, \.didReceiveMemoryWarning)
            try postLifecycle(.didReceiveMemoryWarning, userInfo: ["level": .string(level.rawValue)])
        case .significantTimeChange:
            if state == .suspended {
                enqueue(.significantTimeChange, sender: sender.rawValue, userInfo: nil)
            } else {
                try deliverTimeChange(detail: nil)
            }
        case .openURL(let url, let source, let annotation):
            switch state {
            case .notRunning:
                var options: UserInfo = [LaunchOptionsKey.url: .string(url)]
                if let source { options[LaunchOptionsKey.sourceApplication] = .string(source) }
                if let annotation { options[LaunchOptionsKey.annotation] = annotation }
                try launch(options: options, inBackground: false)
            case .background, .suspended:
                try enterForeground(openingURL: (url, source, annotation))
            case .active, .inactive:
                try openURL(url, source, annotation)
            }
        case .backgroundFetch:
            if state == .notRunning { try launch(options: UserInfo(), inBackground: true) }
            try resumeIfSuspended()
            for slot in slots {
                guard let handler = slot.handlers.performFetch, isRegistered(slot) else { continue }
                try startRequest(.performFetch, slot) { handler(self, $0) }
            }
        case .remoteNotification(let payload):
            let launched = state == .notRunning
            if launched { try launch(options: [LaunchOptionsKey.remoteNotification: .dict(payload)], inBackground: true) }
            try resumeIfSuspended()
            for slot in slots where isRegistered(slot) {
                if let handler = slot.handlers.didReceiveRemoteNotificationWithCompletion {
                    try startRequest(.didReceiveRemoteNotificationWithCompletion, slot) { handler(self, payload, $0) }
                } else if !launched, let handler = slot.handlers.didReceiveRemoteNotification {
                    // Without the completion variant, a launch hands the payload over in the launch options only.
                    try call(.didReceiveRemoteNotification, slot) { handler(self, payload) }
                }
            }
        case .terminate:
            switch state {
            case .suspended:
                goNotRunning("terminated while suspended: no callback (seed 001)")
            case .active:
                try resignActive()
                try terminateSequence()
            default:
                try terminateSequence()
            }
        case .purge:
            goNotRunning("purged while suspended: no callback (seed 003)")
        }
    }

    // MARK: Sequences

    private func launch(options: UserInfo, inBackground: Bool) throws(Killed) {
        resetRuntime()
        setState(inBackground ? .background : .inactive)
        if inBackground { backgroundSince = .now }
        var accepted = true
        try withBudget("launch", configuration.budgets.launch) { () throws(Killed) in
            let willFinish = try askAll(.willFinishLaunching, \.willFinishLaunching) { $0(self, options) }
            try restoreState()
            let didFinish = try askAll(.didFinishLaunching, \.didFinishLaunching) { $0(self, options) }
            try postLifecycle(.didFinishLaunching, userInfo: options)
            accepted = willFinish != false && didFinish != false
        }
        if let url = options[LaunchOptionsKey.url]?.stringValue {
            if accepted {
                try openURL(url, options[LaunchOptionsKey.sourceApplication]?.stringValue, options[LaunchOptionsKey.annotation])
            } else {
                trace(.skipped, DelegateMethod.openURL.selector, detail: "a launch method returned false")
            }
        }
        if inBackground {
            try didEnterBackground()
        } else {
            try becomeActive()
        }
    }

    private func resignActive() throws(Killed) {
        try callDelegates(.willResignActive, \.willResignActive)
        try postLifecycle(.willResignActive)
        setState(.inactive)
    }

    private func becomeActive() throws(Killed) {
        setState(.active)
        try callDelegates(.didBecomeActive, \.didBecomeActive)
        try postLifecycle(.didBecomeActive)
    }

    /// From inactive: to the background, or out altogether when the application exits on suspend.
    private func leaveForeground() throws(Killed) {
        if configuration.exitsOnSuspend {
            try terminateSequence()
        } else {
            setState(.background)
            backgroundSince = .now
            try didEnterBackground()
        }
    }

    /// didEnterBackground (budgeted), then state preservation; the state is already background.
    private func didEnterBackground() throws(Killed) {
        try withBudget("didEnterBackground", configuration.budgets.didEnterBackground) { () throws(Killed) in
            try callDelegates(.didEnterBackground, \.didEnterBackground)
            try postLifecycle(.didEnterBackground)
        }
        try preserveState()
        scheduleBackgroundTimers()
    }

    private func enterForeground(openingURL url: (String, String?, UserInfoValue?)? = nil) throws(Killed) {
        try resumeIfSuspended()
        cancelBackgroundTimers()
        backgroundSince = nil
        for index in tasks.indices { tasks[index].expirationCalled = false }
        try postLifecycle(.willEnterForeground)  // posted before the delegate method (seed 002)
        try callDelegates(.willEnterForeground, \.willEnterForeground)
        setState(.inactive)
        if let (address, source, annotation) = url { try openURL(address, source, annotation) }
        try becomeActive()
    }

    @discardableResult
    private func openURL(_ url: String, _ source: String?, _ annotation: UserInfoValue?) throws(Killed) -> Bool {
        var handled = false
        for slot in slots {
            guard let handler = slot.handlers.openURL, isRegistered(slot) else { continue }
            handled = try call(.openURL, slot) { handler(self, url, source, annotation) } || handled
        }
        return handled
    }

    private func lock() throws(Killed) {
        isDeviceLocked = true
        lockedFromForeground = state.isForeground
        switch state {
        case .active, .inactive:
            if state == .active { try resignActive() }
            interrupted = false
            if configuration.exitsOnSuspend {
                try terminateSequence()
                return
            }
            setState(.background)
            backgroundSince = .now
            try didEnterBackground()
            try deliverProtectedDataWillBecomeUnavailable(detail: nil)
        case .background:
            try deliverProtectedDataWillBecomeUnavailable(detail: nil)
        case .suspended:
            enqueue(.protectedDataWillBecomeUnavailable, sender: sender.rawValue, userInfo: nil)
        case .notRunning:
            break
        }
    }

    private func unlock() throws(Killed) {
        isDeviceLocked = false
        let returnToForeground = lockedFromForeground
        lockedFromForeground = false
        if state == .suspended {
            // Delivered first on resume, before willEnterForeground.
            enqueue(.protectedDataDidBecomeAvailable, sender: sender.rawValue, userInfo: nil)
        } else {
            try deliverProtectedDataDidBecomeAvailable(detail: nil)
        }
        if returnToForeground, state == .background || state == .suspended { try enterForeground() }
    }

    private func terminateSequence() throws(Killed) {
        try preserveState()
        try withBudget("willTerminate", configuration.budgets.willTerminate) { () throws(Killed) in
            try callDelegates(.willTerminate, \.willTerminate)
            try postLifecycle(.willTerminate)
        }
        goNotRunning(nil)
    }

    private func deliverTimeChange(detail: String?) throws(Killed) {
        try postLifecycle(.significantTimeChange, detail: detail)  // posted before the delegate method (seed 002)
        try callDelegates(.significantTimeChange, \.significantTimeChange)
    }

    private func deliverProtectedDataWillBecomeUnavailable(detail: String?) throws(Killed) {
        try callDelegates(.protectedDataWillBecomeUnavailable, \.protectedDataWillBecomeUnavailable)
        try postLifecycle(.protectedDataWillBecomeUnavailable, detail: detail)
        isProtectedDataAvailable = false
    }

    private func deliverProtectedDataDidBecomeAvailable(detail: String?) throws(Killed) {
        isProtectedDataAvailable = true
        try callDelegates(.protectedDataDidBecomeAvailable, \.protectedDataDidBecomeAvailable)
        try postLifecycle(.protectedDataDidBecomeAvailable, detail: detail)
    }

    // MARK: Suspension and coalescing

    /// Posts that arrive while the application runs no code.
    private func held(_ name: NotificationName, sender: UInt, userInfo: UserInfo?) {
        if state == .suspended, name.coalescingKind != nil {
            enqueue(name, sender: sender, userInfo: userInfo)
        } else {
            trace(.discarded, name.rawValue, detail: state == .suspended
                ? "suspended: only notifications of the coalescing kinds are queued"
                : "the application is not running")
        }
    }

    private func enqueue(_ name: NotificationName, sender: UInt, userInfo: UserInfo?) {
        guard let kind = name.coalescingKind else { return }
        if let index = queued.firstIndex(where: { $0.kind == kind }) {
            queued[index].name = name
            queued[index].sender = sender
            queued[index].userInfo = userInfo
            queued[index].count += 1
        } else {
            queued.append(QueuedNotification(kind: kind, name: name, sender: sender, userInfo: userInfo, count: 1))
        }
        trace(.queued, name.rawValue, detail: "coalescing kind \(kind)")
    }

    /// The notifications waiting for the application to resume: one per kind, the most recent, with
    /// how many it stands for. [loop-thread]
    public var queuedNotifications: [(name: NotificationName, count: Int)] { queued.map { ($0.name, $0.count) } }

    private func resumeIfSuspended() throws(Killed) {
        guard state == .suspended else { return }
        setState(.background)
        backgroundSince = .now
        let pending = queued
        queued.removeAll()
        for entry in pending {
            let detail = entry.count > 1 ? "coalesced from \(entry.count)" : nil
            switch entry.name {
            case .significantTimeChange: try deliverTimeChange(detail: detail)
            case .protectedDataWillBecomeUnavailable: try deliverProtectedDataWillBecomeUnavailable(detail: detail)
            case .protectedDataDidBecomeAvailable: try deliverProtectedDataDidBecomeAvailable(detail: detail)
            default: try postLifecycle(entry.name, userInfo: entry.userInfo, sender: entry.sender, detail: detail)
            }
        }
    }

    private func suspendIfIdle() {
        guard state == .background, currentAction == nil, tasks.isEmpty, requests.isEmpty,
              configuration.backgroundModes.isDisjoint(with: .continuous) else { return }
        cancelBackgroundTimers()
        setState(.suspended)
    }

    private func goNotRunning(_ detail: String?) {
        resetRuntime()
        killSwitch.killed.store(false, ordering: .relaxed)
        setState(.notRunning, detail: detail)
    }

    private func resetRuntime() {
        cancelBackgroundTimers()
        for request in requests { request.end() }
        requests.removeAll()
        tasks.removeAll()
        queued.removeAll()
        interrupted = false
        isDeviceLocked = false
        lockedFromForeground = false
        isProtectedDataAvailable = true
        backgroundSince = nil
        generation &+= 1
    }

    private func setState(_ newState: ApplicationState, detail: String? = nil) {
        state = newState
        center.heldDeliveryHandler = newState.isRunning ? nil : heldHandler
        trace(.state, newState.rawValue, detail: detail)
    }

    private lazy var heldHandler: (NotificationName, UInt, UserInfo?) -> Void = { [unowned self] name, sender, info in
        self.held(name, sender: sender, userInfo: info)
    }

    // MARK: Background tasks

    /// Begins a background task: while any is open, the application stays in the background instead
    /// of being suspended, for at most the background-task budget counted from leaving the foreground.
    ///
    /// [loop-thread] The expiration handler runs on the loop thread `expirationWarning` before the time
    /// runs out; a task still open when it has run out goes to the watchdog policy.
    /// - Throws: `.illegalAction` unless the application is running.
    public func beginBackgroundTask(named name: String = "", owner: String = "",
                                    expirationHandler: (() -> Void)? = nil) throws(ApplicationError) -> BackgroundTaskID
    {
        try requireLoopThread("beginBackgroundTask")
        guard state.isRunning else {
            throw .illegalAction("beginBackgroundTask", in: state, "background tasks begin only while the application runs")
        }
        let id = BackgroundTaskID(rawValue: nextTaskID)
        nextTaskID += 1
        tasks.append(OpenTask(id: id, name: name, owner: owner, expirationHandler: expirationHandler))
        trace(.backgroundTask, "begin", observer: owner, detail: name.isEmpty ? "#\(id)" : "#\(id) \(name)")
        if state == .background, expirationTimer == nil { scheduleBackgroundTimers() }
        return id
    }

    /// Ends a background task; the application is suspended when nothing else holds it. [loop-thread]
    /// - Throws: `.unknownBackgroundTask` when no open task has that id.
    public func endBackgroundTask(_ id: BackgroundTaskID) throws(ApplicationError) {
        try requireLoopThread("endBackgroundTask")
        guard let index = tasks.firstIndex(where: { $0.id == id }) else {
            throw ApplicationError(.unknownBackgroundTask, "no open background task has id \(id)")
        }
        let task = tasks.remove(at: index)
        trace(.backgroundTask, "end", observer: task.owner, detail: task.name.isEmpty ? "#\(id)" : "#\(id) \(task.name)")
        if tasks.isEmpty { cancelBackgroundTimers() }
        suspendIfIdle()
    }

    /// Ends every open background task begun by `owner` (a plugin being unloaded). [loop-thread]
    /// - Returns: how many were ended.
    @discardableResult
    public func endBackgroundTasks(owner: String) -> Int {
        let owned = tasks.filter { $0.owner == owner }
        for task in owned { try? endBackgroundTask(task.id) }
        return owned.count
    }

    /// The open background tasks, oldest first.
    public var backgroundTasks: [BackgroundTaskInfo] {
        tasks.map { BackgroundTaskInfo(id: $0.id, name: $0.name, owner: $0.owner, expirationHandlerCalled: $0.expirationCalled) }
    }

    /// Background time left (`backgroundTimeRemaining`): nil in the foreground (unlimited), zero when
    /// suspended or not running.
    public var backgroundTimeRemaining: Duration? {
        switch state {
        case .active, .inactive: return nil
        case .suspended, .notRunning: return .zero
        case .background:
            guard let since = backgroundSince else { return configuration.budgets.backgroundTask }
            let used = MonotonicInstant.now.duration(since: since)
            return used >= configuration.budgets.backgroundTask ? .zero : configuration.budgets.backgroundTask - used
        }
    }

    private func scheduleBackgroundTimers() {
        cancelBackgroundTimers()
        guard state == .background, !tasks.isEmpty, let since = backgroundSince else { return }
        let budgets = configuration.budgets
        let warning = min(budgets.expirationWarning, budgets.backgroundTask)
        expirationTimer = loop.addTimer(at: since + (budgets.backgroundTask - warning)) { [weak self] in self?.expireTasks() }
        deadlineTimer = loop.addTimer(at: since + budgets.backgroundTask) { [weak self] in self?.backgroundTimeRanOut() }
    }

    private func cancelBackgroundTimers() {
        expirationTimer?.cancel()
        deadlineTimer?.cancel()
        expirationTimer = nil
        deadlineTimer = nil
    }

    private func expireTasks() {
        expirationTimer = nil
        for id in tasks.map(\.id) {
            guard let index = tasks.firstIndex(where: { $0.id == id }), !tasks[index].expirationCalled else { continue }
            tasks[index].expirationCalled = true
            let task = tasks[index]
            trace(.backgroundTask, "expiring", observer: task.owner, detail: task.name.isEmpty ? "#\(id)" : "#\(id) \(task.name)")
            task.expirationHandler?()
        }
    }

    private func backgroundTimeRanOut() {
        deadlineTimer = nil
        guard !tasks.isEmpty, let since = backgroundSince else { return }
        let elapsed = MonotonicInstant.now.duration(since: since)
        for task in tasks {
            let report = WatchdogReport(observer: task.owner, event: "background task #\(task.id)" + (task.name.isEmpty ? "" : " '\(task.name)'"),
                                        budgetName: "backgroundTask", budget: configuration.budgets.backgroundTask,
                                        elapsed: elapsed, policy: configuration.watchdogPolicy)
            trace(.watchdog, report.event, observer: task.owner, detail: report.description)
            killSwitch.overrun(report)
        }
        if configuration.watchdogPolicy == .terminate {
            goNotRunning("killed by the watchdog")
        } else {
            for task in tasks {
                trace(.backgroundTask, "end", observer: task.owner, detail: "#\(task.id) ended by the watchdog")
            }
            tasks.removeAll()
            suspendIfIdle()
        }
    }

    // MARK: Completion handlers

    private func startRequest(_ method: DelegateMethod, _ slot: DelegateSlot,
                              _ body: (FetchCompletionHandler) -> Void) throws(Killed)
    {
        let id = nextRequestID
        nextRequestID += 1
        let generation = self.generation
        let observer = slot.id
        let handler = FetchCompletionHandler { [weak self, loop] result, repeated in
            let complete: @Sendable () -> Void = { [weak self] in
                self?.completeRequest(id, generation, method, observer, result, repeated: repeated)
            }
            if loop.isOnLoopThread { complete() } else { loop.perform(complete) }
        }
        let timer = loop.addTimer(after: configuration.budgets.completionHandler) { [weak self] in self?.requestTimedOut(id) }
        requests.append(Request(id: id, method: method, observer: observer, handler: handler, timer: timer))
        try call(method, slot) { body(handler) }
    }

    private func completeRequest(_ id: UInt64, _ generation: UInt64, _ method: DelegateMethod, _ observer: String,
                                 _ result: FetchResult, repeated: Bool)
    {
        guard generation == self.generation else { return }  // the application stopped since: nothing waits
        if repeated {
            trace(.error, "completion handler called again", observer: observer, detail: "\(method.selector): the second call (\(result)) is ignored")
            return
        }
        guard let index = requests.firstIndex(where: { $0.id == id }) else {
            trace(.completion, method.selector, observer: observer, detail: "\(result), late: the watchdog had already ended the request")
            return
        }
        requests[index].end()
        requests.remove(at: index)
        trace(.completion, method.selector, observer: observer, detail: result.rawValue)
        suspendIfIdle()
    }

    private func requestTimedOut(_ id: UInt64) {
        guard let index = requests.firstIndex(where: { $0.id == id }) else { return }
        let request = requests[index]
        let report = WatchdogReport(observer: request.observer, event: "completion handler of \(request.method.selector)",
                                    budgetName: "completionHandler", budget: configuration.budgets.completionHandler,
                                    elapsed: configuration.budgets.completionHandler, policy: configuration.watchdogPolicy)
        trace(.watchdog, report.event, observer: request.observer, detail: report.description)
        killSwitch.overrun(report)
        if configuration.watchdogPolicy == .terminate {
            goNotRunning("killed by the watchdog")
        } else {
            requests[index].end()
            requests.remove(at: index)
            suspendIfIdle()
        }
    }

    // MARK: State preservation

    private func preserveState() throws(Killed) {
        guard let store = archiveStore else { return }
        for slot in slots {
            guard let shouldSave = slot.handlers.shouldSaveApplicationState, isRegistered(slot) else { continue }
            let archive = StateArchive()
            guard try call(.shouldSaveApplicationState, slot, { shouldSave(self, archive) }) else { continue }
            if let encode = slot.handlers.willEncodeRestorableState {
                try call(.willEncodeRestorableState, slot) { encode(self, archive) }
            }
            do {
                try store.save(archive.values, id: slot.id)
                trace(.archive, "saved", observer: slot.id, detail: "\(archive.values.count) keys")
            } catch {
                trace(.error, "archive", observer: slot.id, detail: error.message)
            }
        }
    }

    private func restoreState() throws(Killed) {
        guard let store = archiveStore else { return }
        for slot in slots {
            guard let shouldRestore = slot.handlers.shouldRestoreApplicationState, isRegistered(slot) else { continue }
            let values: UserInfo?
            do {
                values = try store.load(id: slot.id)
            } catch {
                trace(.error, "archive", observer: slot.id, detail: "\(error.message); launching without it")
                continue
            }
            guard let values else { continue }
            trace(.archive, "read", observer: slot.id, detail: "\(values.count) keys")
            let archive = StateArchive(values: values)
            guard try call(.shouldRestoreApplicationState, slot, { shouldRestore(self, archive) }) else { continue }
            if let decode = slot.handlers.didDecodeRestorableState {
                try call(.didDecodeRestorableState, slot) { decode(self, archive) }
            }
        }
    }

    // MARK: Calling out

    /// Calls one delegate method, traced, watched, and checked for a watchdog kill afterwards.
    private func call<R>(_ method: DelegateMethod, _ slot: DelegateSlot, _ body: () -> R) throws(Killed) -> R {
        trace(.delegate, method.selector, observer: slot.id)
        if inBudget { watchdog.setCurrent(event: method.selector, observer: slot.id) }
        let result = body()
        try checkKilled()
        return result
    }

    /// Calls a void method on every delegate implementing it, in registration order. A delegate
    /// removed by an earlier one is not called.
    private func callDelegates(_ method: DelegateMethod, _ handler: KeyPath<DelegateHandlers, ((Application) -> Void)?>) throws(Killed) {
        for slot in slots {
            guard let body = slot.handlers[keyPath: handler], isRegistered(slot) else { continue }
            try call(method, slot) { body(self) }
        }
    }

    /// Asks every implementing delegate; true only if all answered true; nil when none implements it.
    private func askAll<H>(_ method: DelegateMethod, _ handler: KeyPath<DelegateHandlers, H?>,
                           _ invoke: (H) -> Bool) throws(Killed) -> Bool?
    {
        var answer: Bool?
        for slot in slots {
            guard let body = slot.handlers[keyPath: handler], isRegistered(slot) else { continue }
            let yes = try call(method, slot) { invoke(body) }
            answer = (answer ?? true) && yes
        }
        return answer
    }

    /// Whether `slot` is still registered: `slots` is in ascending token order (append-only tokens,
    /// order-keeping removal), so a search by halving answers in O(log n) instead of a scan per call.
    private func isRegistered(_ slot: DelegateSlot) -> Bool {
        var low = 0, high = slots.count
        while low < high { let middle = (low + high) / 2; if slots[middle].token < slot.token { low = middle + 1 } else { high = middle } }
        return low < slots.count && slots[low].token == slot.token
    }

    /// Posts a lifecycle notification to observers now (the engine's own posts are never held).
    private func postLifecycle(_ name: NotificationName, userInfo: UserInfo? = nil, sender: UInt? = nil,
                               detail: String? = nil) throws(Killed)
    {
        let info = userInfo.flatMap { $0.isEmpty ? nil : $0 }
        trace(.notification, name.rawValue, detail: detail ?? info?.description)
        if inBudget {
            let watchdog = self.watchdog
            let killed = killSwitch
            let event = name.rawValue
            center.observerWillRun = { owner in
                // A killed application runs nothing more, not even the rest of this observer list.
                if killed.killed.load(ordering: .relaxed) { return false }
                watchdog.setCurrent(event: event, observer: owner)
                return true
            }
        }
        center.dispatch(name, sender: sender ?? self.sender.rawValue, userInfo: userInfo)
        center.observerWillRun = nil
        try checkKilled()
    }

    private func withBudget(_ name: String, _ budget: Duration, _ body: () throws(Killed) -> Void) throws(Killed) {
        watchdog.begin(name, budget: budget)
        inBudget = true
        var failure: Killed?
        do { try body() } catch { failure = error }
        inBudget = false
        if let report = watchdog.end() {
            trace(.watchdog, report.event, observer: report.observer, detail: report.description)
        }
        try checkKilled()
        if let failure { throw failure }
    }

    private func checkKilled() throws(Killed) {
        if killSwitch.killed.load(ordering: .relaxed) { throw Killed() }
    }

    private func requireLoopThread(_ what: String) throws(ApplicationError) {
        guard loop.isOnLoopThread else {
            throw ApplicationError(.notOnLoopThread, "\(what) must be called on the thread that runs the application's main run loop")
        }
    }

    // MARK: Trace

    private func trace(_ kind: TraceEvent.Kind, _ name: String, observer: String? = nil, detail: String? = nil) {
        sequenceNumber += 1
        guard let handler = traceHandler else { return }
        let time = traceOrigin.map { MonotonicInstant.now.duration(since: $0) } ?? .zero
        handler(TraceEvent(seq: sequenceNumber, time: time, kind: kind, name: name, state: state,
                           observer: observer, detail: detail))
    }
}

/// Decides, on whatever thread notices an overrun, what the policy does; holds no reference to the application.
final class KillSwitch: Sendable {
    let killed = Atomic<Bool>(false)
    private let policy: Configuration.WatchdogPolicy
    private let logger: Logger
    private let onReport: (@Sendable (WatchdogReport) -> Void)?
    private let onKill: (@Sendable (WatchdogReport) -> Void)?

    init(_ configuration: Configuration) {
        policy = configuration.watchdogPolicy
        logger = configuration.logger
        onReport = configuration.onWatchdogReport
        onKill = configuration.onWatchdogKill
    }

    func overrun(_ report: WatchdogReport) {
        logger.warning("watchdog: \(report.description)")
        onReport?(report)
        if policy == .terminate {
            killed.store(true, ordering: .relaxed)
            onKill?(report)
        }
    }
}
