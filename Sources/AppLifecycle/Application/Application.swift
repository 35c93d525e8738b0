import Logging
import Synchronization

/// An application's life cycle, exactly as iOS runs it: states, sequences, budgets,
/// background tasks, coalesced notifications while suspended, and state preservation.
///
/// Guarantees:
/// - **Thread.** Bound to its loop's thread: every method and property is [loop-thread] unless marked
///   [thread-safe]; every delegate, observer, expiration handler and timer runs on that thread. Checked,
///   not vouched for: each public loop-bound member compares the calling thread with the loop's (one
///   `pthread_self()` and one compare; `LoopBound`, `MainRunLoop.preconditionOnLoopThread`) and a use
///   from another thread stops the program at the call, naming the member; the throwing ones throw
///   `.notOnLoopThread` instead.
/// - **Order.** Within a sequence, delegates are called in registration order; each lifecycle
///   notification is posted once, after (or, for willEnterForeground and significantTimeChange, before)
///   all delegates — `UIApplicationDelegate`'s reference. The trace records every step in the order it happened.
/// - **Legality.** An action that is illegal in the current state throws `ApplicationError`
///   (`.illegalAction`, naming the action and the state) and changes nothing. An action started from
///   inside a callback of another action throws `.actionInProgress`.
/// - **Combining answers of several delegates.** Launch: the URL is handled unless some delegate that
///   implements willFinish or didFinish returned false (unimplemented methods do not count). openURL:
///   every implementing delegate is called; the URL counts as handled if any returned true.
///   shouldSave/shouldRestore do not combine: each gates its own delegate's archive only.
/// - **Time.** Every reading of "now" is the loop's clock (`clock`: monotonic, or manual for tests,
///   moved by `advance(by:)`). Budgets are watched from another thread (see `Configuration.Budgets`),
///   or on a manual clock at each move of the clock; background tasks and completion handlers are
///   timed by the loop's timers.
public final class Application: @unchecked Sendable {
    // @unchecked: public state in LoopBound; other vars loop-only, public members checked; watchdog side atomic.
    public let loop: MainRunLoop
    public let center: AppNotificationCenter
    public let configuration: Configuration

    /// The current state. [loop-thread: checked]
    public internal(set) var state: ApplicationState {
        get { ApplicationState.fromWord(bound.lane(Lane.state, "Application.state")) }
        set { bound.set(Lane.state, newValue.word, "Application.state") }
    }
    /// Whether the device is locked (between `lock` and `unlock`). The device's state, not the run's:
    /// it outlives termination, and `lock`/`unlock` are legal while the application is not running.
    /// [loop-thread: checked]
    public internal(set) var isDeviceLocked: Bool {
        get { bound.lane(Lane.deviceLocked, "Application.isDeviceLocked") != 0 }
        set { bound.set(Lane.deviceLocked, newValue ? 1 : 0, "Application.isDeviceLocked") }
    }
    /// Whether files with complete protection are readable (`protectedDataAvailable`). [loop-thread: checked]
    public internal(set) var isProtectedDataAvailable: Bool {
        get { bound.lane(Lane.protectedData, "Application.isProtectedDataAvailable") != 0 }
        set { bound.set(Lane.protectedData, newValue ? 1 : 0, "Application.isProtectedDataAvailable") }
    }
    /// Whether Low Power Mode is on (Apple: `ProcessInfo.isLowPowerModeEnabled`). The device's state:
    /// it outlives termination; set by `Action.powerState(lowPower:)`, and `powerStateDidChange` is
    /// posted after each change. [loop-thread: checked]
    public internal(set) var isLowPowerModeEnabled: Bool {
        get { bound.lane(Lane.lowPower, "Application.isLowPowerModeEnabled") != 0 }
        set { bound.set(Lane.lowPower, newValue ? 1 : 0, "Application.isLowPowerModeEnabled") }
    }
    /// The device's thermal state (Apple: `ProcessInfo.thermalState`). The device's state: it
    /// outlives termination; set by `Action.thermalState(_:)`, and `thermalStateDidChange` is posted
    /// after each change. [loop-thread: checked]
    public internal(set) var thermalState: ThermalState {
        get { ThermalState(rawValue: bound.lane(Lane.thermal, "Application.thermalState")) ?? .nominal }
        set { bound.set(Lane.thermal, newValue.rawValue, "Application.thermalState") }
    }
    /// Receives every trace event, on the loop thread, in order. [loop-thread: checked]
    public var traceHandler: ((TraceEvent) -> Void)? {
        get { boundTraceHandler.value }
        set {
            boundTraceHandler.value = newValue
            isTracing = newValue != nil
        }
    }
    /// Whether `traceHandler` is set: what every engine step tests (a Bool, not a copy of the closure).
    private(set) var isTracing = false
    // The public state above, each read and written on the loop's thread only, checked (`LoopBound`).
    // The bytes are lanes of one `LoopBoundBytes`, a `let`: a read costs a thread check and a load,
    // where a `LoopBound` `var` cost a dynamic exclusivity check (~115 instructions) a read; and every
    // frame sent to an isolated plugin reads three of them (`frameContext`) with one check and one load.
    private let bound: LoopBoundBytes
    /// The lanes of `bound`.
    private enum Lane {
        static let state = 0, deviceLocked = 1, protectedData = 2, lowPower = 3, thermal = 4, budgetPhase = 5
    }
    private var boundTraceHandler: LoopBound<((TraceEvent) -> Void)?>

    /// The application's identity as the sender of its lifecycle notifications.
    public var sender: NotificationSender { NotificationSender(self) }

    /// A registered delegate. A class: a delegate call reads one reference out of `slots`, where a
    /// struct holding the ~30 handlers was copied whole (a retain and a release of each closure) at
    /// every step of a loop over the delegates. Immutable.
    final class DelegateSlot {
        let id: String
        let token: UInt64
        let handlers: DelegateHandlers
        /// `id` in the center's owner table, for the callback probe.
        let owner: UInt32
        /// Set when it is removed: a loop over a copy of `slots` skips it (O(1), no search).
        let removed = Atomic<Bool>(false)

        init(id: String, token: UInt64, handlers: DelegateHandlers, owner: UInt32) {
            self.id = id
            self.token = token
            self.handlers = handlers
            self.owner = owner
        }
    }

    struct QueuedNotification {
        let kind: String
        var name: NotificationName
        var sender: UInt
        var userInfo: UserInfo?
        var count: Int
        /// The system's own event (delegates and state on resume), not a post (observers only).
        let systemEvent: Bool
    }

    struct OpenTask {
        let id: BackgroundTaskID
        let name: String
        var owner: String
        let expirationHandler: (() -> Void)?
        var expirationCalled = false
    }

    struct Request {
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
    struct Killed: Error {}

    /// A registered scene delegate (a class, as `DelegateSlot`). Immutable.
    final class SceneDelegateSlot {
        let id: String
        let token: UInt64
        let handlers: SceneDelegateHandlers
        /// `id` in the center's owner table, for the callback probe.
        let owner: UInt32
        /// Set when it is removed (see `DelegateSlot.removed`).
        let removed = Atomic<Bool>(false)

        init(id: String, token: UInt64, handlers: SceneDelegateHandlers, owner: UInt32) {
            self.id = id
            self.token = token
            self.handlers = handlers
            self.owner = owner
        }
    }

    /// Delegates in registration order (ascending tokens: found by token by halving).
    var slots: [DelegateSlot] = []
    /// Scene delegates in registration order (ascending tokens, from the same counter as `slots`).
    var sceneSlots: [SceneDelegateSlot] = []
    /// The ids of `sceneSlots` with their tokens, searched by halving.
    var sceneSlotIDs = SlotIDs()
    /// The connected scenes, in connection order, found by id (`connectScene`, `disconnectScene`).
    var connectedScenes = KeyedList<Scene>()
    /// How many connected scenes are in each state (`setSceneState` keeps it): whether any scene is in
    /// the foreground, active or in the background is a look, not a walk over the scenes.
    var connectedSceneCounts = SceneStateCounts()
    /// The system's scene sessions, oldest first, found by id: they outlive connections and runs until
    /// discarded.
    var sessions = KeyedList<SceneSession>()
    /// The ids of new sessions asked for and not yet made (`requestSceneSessionActivation(nil)`), and
    /// the counter that names them.
    var reservedSessionIDs: Set<String> = []
    var nextRequestedSession = 0
    /// Sessions discarded while not running: `application:didDiscardSceneSessions:` at the next launch.
    var pendingDiscards: [SceneSession] = []
    /// The scenes that were in the foreground when the application left it (`foreground`, `unlock`
    /// bring them back), and those an interruption deactivated (`dismiss` reactivates them).
    var returningScenes: [String] = []
    var interruptedScenes: [String] = []
    /// The ids of `slots` with their tokens: `addDelegate`'s duplicate check, `hasDelegate(id:)` and
    /// `removeDelegate(id:)` search it by halving.
    private var slotIDs = SlotIDs()
    var nextDelegateToken: UInt64 = 1
    var currentAction: String?
    var interrupted = false
    var lockedFromForeground = false
    /// Memory warnings delivered since the last relief (`memory-warning normal`) in this run: the
    /// escalation policy's count (`Configuration.memoryWarningLimit`).
    var unrelievedMemoryWarnings = 0
    var queued: [QueuedNotification] = []
    var tasks = KeyedList<OpenTask>()
    /// How many of `tasks` each owner began (kept with `tasks`: `backgroundTaskCount(owner:)`).
    var taskCounts: [String: Int] = [:]
    var nextTaskID: UInt64 = 1
    var backgroundSince: MonotonicInstant?
    var expirationTimer: LoopSource?
    var deadlineTimer: LoopSource?
    var requests: [Request] = []
    var nextRequestID: UInt64 = 1
    /// Bumped whenever the application stops running, so late completion handlers are recognised.
    var generation: UInt64 = 0
    var inBudget = false
    /// The budgeted phase under way (nil outside one). [loop-thread: checked]
    ///
    /// For callbacks the engine does not run itself (an isolated plugin's, in another process): each
    /// frame sent in the phase is held to the phase's budget instead of the application's watchdog.
    /// Read for every frame sent to an isolated plugin: an atomic byte (see `boundState`).
    package internal(set) var budgetPhase: WatchdogReport.Budget? {
        get { Self.budgetPhase(bound.lane(Lane.budgetPhase, "Application.budgetPhase")) }
        set { bound.set(Lane.budgetPhase, Self.lane(of: newValue), "Application.budgetPhase") }
    }
    /// Lane `budgetPhase` of a phase (0: none). Switches, not a table: a read is a few compares, where a
    /// static array costs its lazy initialiser's check and a bounds check.
    static func lane(of phase: WatchdogReport.Budget?) -> UInt8 {
        switch phase {
        case nil: 0
        case .launch: 1
        case .didEnterBackground: 2
        case .willTerminate: 3
        case .completionHandler: 4
        case .backgroundTask: 5
        case .hang: 6
        case .terminate: 7
        }
    }
    /// The phase of lane `budgetPhase`: `lane(of:)` undone (a test checks both ways).
    @inline(__always)
    static func budgetPhase(_ lane: UInt8) -> WatchdogReport.Budget? {
        switch lane {
        case 1: .launch
        case 2: .didEnterBackground
        case 3: .willTerminate
        case 4: .completionHandler
        case 5: .backgroundTask
        case 6: .hang
        case 7: .terminate
        default: nil
        }
    }

    /// What a frame sent to an isolated plugin carries and is timed by: the state, whether protected
    /// data is available, and the budgeted phase under way, read at once (one thread check, one load).
    /// [loop-thread: checked]
    package struct FrameContext {
        package let state: ApplicationState
        package let isProtectedDataAvailable: Bool
        package let budgetPhase: WatchdogReport.Budget?
    }

    /// `state`, `isProtectedDataAvailable` and `budgetPhase` together. [loop-thread: checked]
    package var frameContext: FrameContext {
        let word = bound.word("Application.frameContext")
        @inline(__always) func lane(_ index: Int) -> UInt8 { UInt8(truncatingIfNeeded: word >> (8 * UInt64(index))) }
        return FrameContext(state: .fromWord(lane(Lane.state)), isProtectedDataAvailable: lane(Lane.protectedData) != 0,
                            budgetPhase: Self.budgetPhase(lane(Lane.budgetPhase)))
    }
    /// How many `withBudgetClockStopped` calls are under way.
    var budgetClockStops = 0
    /// Called at the end of every budgeted phase (launch, background entry, termination: before the
    /// phase is over) and at the end of every action, after its sequence but while the action is still
    /// under way (nothing is suspended meanwhile), before the engine decides whether to suspend the
    /// application. [loop-thread]
    ///
    /// A place for work an action started elsewhere to finish first: an isolated plugin's observers
    /// run in another process, and what they do (begin a background task, say) must count before the
    /// application is suspended. Nil: nothing to wait for.
    package var settleHandler: (() -> Void)?
    /// Called at every change of the application's state, after the change is traced and before
    /// anything of the new state runs: entering `.suspended`, on a resume (`.suspended` → `.background`,
    /// before the queued notifications), on a purge or termination, and at a launch (`.notRunning` →
    /// another state, before the launch's first callback). A place to freeze what runs for the
    /// application elsewhere (isolated plugins' processes) and to thaw or restart it before its first
    /// callback. [loop-thread]
    package var stateChangeHandler: ((_ from: ApplicationState, _ to: ApplicationState) -> Void)?
    var traceOrigin: MonotonicInstant?
    var sequenceNumber: UInt64 = 0
    let killSwitch: KillSwitch
    /// The metrics hook: nil without a metrics backend (see `EngineMetrics`).
    let metrics: EngineMetrics?
    let watchdog: Watchdog
    let archiveStore: ArchiveStore?

    /// Creates an application on `loop` (call on the loop's thread), with its own notification center.
    public init(configuration: Configuration = Configuration(), loop: MainRunLoop) {
        self.configuration = configuration
        self.loop = loop
        var lanes = [UInt8](repeating: 0, count: 6)
        lanes[Lane.state] = ApplicationState.notRunning.word
        lanes[Lane.protectedData] = 1
        lanes[Lane.thermal] = ThermalState.nominal.rawValue
        bound = LoopBoundBytes(lanes, loop: loop, name: "Application.init")
        boundTraceHandler = LoopBound(nil, loop: loop, name: "Application.traceHandler")
        center = AppNotificationCenter(loop: loop)
        metrics = EngineMetrics.make(configuration, center: center, loop: loop)
        center.state.pointee.metrics = metrics
        let killSwitch = KillSwitch(configuration, loop: loop, metrics: metrics)
        self.killSwitch = killSwitch
        watchdog = Watchdog(configuration: configuration, probe: center.probe, loop: loop,
                            onOverrun: { report in
                                if case .hang = report.subject { killSwitch.hang(report) } else { killSwitch.overrun(report) }
                            },
                            onTerminationOverdue: { report in killSwitch.terminationOverdue(report) })
        archiveStore = configuration.archiveDirectory.map { ArchiveStore(directory: $0) }
        center.heldDeliveryHandler = { [weak self] name, sender, info in self?.held(name, sender: sender, userInfo: info) }
        center.nestingLimitHandler = { [weak self] name, depth, poster in self?.trace(.postRefused(name: name, depth: depth, poster: poster)) }
        killSwitch.application = self
    }

    deinit {
        metrics?.stop()
        center.state.pointee.metrics = nil
        cancelBackgroundTimers()
        for request in requests { request.end() }
        watchdog.shutdown()
    }

    /// Receives the posts that arrive while the application runs no code (set by `setState`).
    lazy var heldHandler: (NotificationName, UInt, UserInfo?) -> Void = { [unowned self] name, sender, info in
        self.held(name, sender: sender, userInfo: info)
    }

    // MARK: Delegates

    /// Identifies a registered delegate.
    public struct DelegateToken: Hashable, Sendable {
        public let rawValue: UInt64
    }

    /// Adds a delegate (held strongly); it is called after those added before it.
    /// - Parameters:
    ///   - delegate: the delegate; the methods its `respondsTo(_:)` admits are called (all by default).
    ///   - id: a unique name (a plugin id): traces, watchdog reports and its archive file use it.
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
        let token = nextDelegateToken
        guard slotIDs.insert(id, token: token) else {
            throw ApplicationError(.invalidArgument, "a delegate with id '\(id)' is already registered")
        }
        nextDelegateToken += 1
        slots.append(DelegateSlot(id: id, token: token, handlers: handlers, owner: center.ownerID(id)))
        return DelegateToken(rawValue: token)
    }

    /// Removes a delegate; safe from inside a callback (it is not called again). Found by halving:
    /// O(log n) comparisons with n delegates. [loop-thread]
    @discardableResult
    public func removeDelegate(_ token: DelegateToken) -> Bool {
        loop.preconditionOnLoopThread("Application.removeDelegate(_:)")
        guard let index = slots.index(ofToken: token.rawValue) else { return false }
        slots.removeSlot(at: index, ids: &slotIDs)
        return true
    }

    /// Removes the delegate registered under `id`. Found by halving, as by token. [loop-thread]
    @discardableResult
    public func removeDelegate(id: String) -> Bool {
        loop.preconditionOnLoopThread("Application.removeDelegate(id:)")
        guard let token = slotIDs.token(of: id), let index = slots.index(ofToken: token) else { return false }
        slots.removeSlot(at: index, ids: &slotIDs)
        return true
    }

    /// The delegate registered with `token`, or nil. O(log n).
    func slot(_ token: DelegateToken) -> DelegateSlot? { slots.index(ofToken: token.rawValue).map { slots[$0] } }

    /// The registered delegates' ids, in call order.
    public var delegateIDs: [String] {
        loop.preconditionOnLoopThread("Application.delegateIDs")
        return slots.map(\.id)
    }

    /// Whether a delegate is registered under `id` (as `delegateIDs.contains(id)`, without the copy).
    public func hasDelegate(id: String) -> Bool {
        loop.preconditionOnLoopThread("Application.hasDelegate(id:)")
        return slotIDs.contains(id)
    }

    // MARK: Actions

    /// Performs one system action and runs its whole sequence before returning.
    ///
    /// [loop-thread] Delegates and observers run inside this call. Afterwards, an application in the
    /// background that nothing holds (no background task, pending completion handler, or continuous
    /// background mode) is suspended.
    /// - Throws: `ApplicationError` — `.illegalAction` (names the action and the state; nothing changed),
    ///   `.actionInProgress`, `.backgroundModeMissing`, `.notOnLoopThread`, `.invalidArgument` (a
    ///   dictionary it carries is over `UserInfoLimits`; nothing changed).
    public func perform(_ action: Action) throws(ApplicationError) {
        try requireLoopThread("perform(\(action.name))")
        if let running = currentAction { throw .actionInProgress(action.name, running: running) }
        try checkLimits(of: action)
        try validate(action)
        currentAction = action.name
        if case .launch = action.kind, traceOrigin == nil { traceOrigin = loop.now }
        trace(.action(action))
        do {
            try run(action)
        } catch {
            traceHangReports()
            goNotRunning(.killedByWatchdog)
        }
        settleHandler?()
        currentAction = nil
        suspendIfIdle()
    }

    private func validate(_ action: Action) throws(ApplicationError) {
        let name = action.name
        func illegal(_ why: String? = nil) -> ApplicationError { .illegalAction(name, in: state, why) }
        if configuration.exitsOnSuspend, action.entersBackgroundFrom(state) {
            throw illegal("the application exits on suspend, so it never runs in the background (UIApplicationExitsOnSuspend)")
        }
        if let scene = action.sceneID { try validateSceneTarget(scene, of: action) }
        switch action.kind {
        case .launch(_, let inBackground, _):
            guard state == .notRunning else { throw illegal("it is already running") }
            if isDeviceLocked, !inBackground { throw illegal("the device is locked; unlock it first") }
        case .beginInterruption:
            guard state == .active else { throw illegal("only an active application can be interrupted") }
        case .dismissInterruption, .acceptInterruption:
            guard state == .inactive, interrupted else { throw illegal("no interruption is in progress") }
        case .home:
            // A scene-based application is inactive without an interruption when its scenes were deactivated.
            guard state == .active || (state == .inactive && (interrupted || isSceneBased)) else {
                throw illegal("only a foreground application can be switched away from")
            }
        case .foreground:
            guard state == .background || state == .suspended else {
                throw illegal(state == .notRunning ? "launch it instead" : "it is already in the foreground")
            }
            if isDeviceLocked { throw illegal("the device is locked; unlock it first") }
        case .lock:
            if isDeviceLocked { throw illegal("the device is already locked") }
        case .unlock:
            if !isDeviceLocked { throw illegal("the device is not locked") }
        case .memoryWarning:
            guard state.isRunning else {
                throw illegal(state == .suspended ? "a suspended application runs no code; memory pressure purges it instead" : nil)
            }
        case .significantTimeChange:
            guard state != .notRunning else { throw illegal() }
        case .powerState, .thermalState:
            break  // the device's state: legal in every state, like lock
        case .openURL(_, _, _, let scene):
            if isDeviceLocked, !targetIsInForeground(scene) { throw illegal("the device is locked; unlock it first") }
            if isSceneBased, interrupted, !targetIsInForeground(scene) { throw illegal("an interruption is in progress; dismiss or accept it first") }
        case .backgroundFetch:
            guard configuration.backgroundModes.contains(.fetch) else {
                throw ApplicationError(.backgroundModeMissing,
                                       "action 'fetch' needs the 'fetch' background mode, which the application does not declare",
                                       action: name, state: state)
            }
            guard !state.isForeground else { throw illegal("background fetch is delivered only outside the foreground") }
        case .urlSessionEvents(let identifier):
            guard !identifier.isEmpty else {
                throw ApplicationError(.invalidArgument, "action 'url-session' needs a session identifier", action: name, state: state)
            }
            guard !state.isForeground else {
                throw illegal("a background URL session's events reach this method only outside the foreground (in the foreground the session's own delegate receives them)")
            }
        case .remoteNotification:
            if state == .notRunning || state == .suspended, !configuration.backgroundModes.contains(.remoteNotification) {
                throw ApplicationError(.backgroundModeMissing,
                                       "action 'remote-notification' needs the 'remote-notification' background mode to wake an application that is \(state)",
                                       action: name, state: state)
            }
        case .openRemoteNotification:
            // Opening the application from the alert needs the device unlocked, as every way to the foreground.
            if isDeviceLocked { throw illegal("the device is locked; unlock it first") }
        case .localNotification(_, let opened):
            if opened, isDeviceLocked { throw illegal("the device is locked; unlock it first") }
        case .remoteRegistration(let token, let error):
            guard state.isRunning else { throw illegal("the answer to a registration reaches a running application") }
            if token?.isEmpty ?? (error?.isEmpty ?? true) {
                throw ApplicationError(.invalidArgument, "a remote-notification registration answer needs a non-empty token or error",
                                       action: name, state: state)
            }
        case .terminate:
            guard state != .notRunning else { throw illegal() }
        case .purge:
            guard state == .suspended || state == .background else {
                throw illegal("only an application in the background (running or suspended) is purged")
            }
        case .scene(let operation):
            try validateScene(operation, name)
        case .continueUserActivity(let activity, let scene, _):
            if activity.activityType.isEmpty { throw ApplicationError(.invalidArgument, "a user activity needs a non-empty type", action: name, state: state) }
            if isDeviceLocked, !targetIsInForeground(scene) { throw illegal("the device is locked; unlock it first") }
            if isSceneBased, interrupted, !targetIsInForeground(scene) { throw illegal("an interruption is in progress; dismiss or accept it first") }
        case .updateUserActivity(_, let scene):
            try validateUpdateUserActivity(scene, name)
        }
    }

    private func run(_ action: Action) throws(Killed) {
        switch action.kind {
        case .launch(let options, let inBackground, let scene):
            try launch(options: options, inBackground: inBackground, scene: scene)
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
            if level == .normal {
                unrelievedMemoryWarnings = 0
            } else if let limit = configuration.memoryWarningLimit, limit > 0, unrelievedMemoryWarnings >= limit {
                // "If your app does not release enough memory during low-memory conditions, the system may
                // terminate it outright" (seed 002): no callback, the warning not delivered (decision 50).
                goNotRunning(.terminatedForMemory(warnings: unrelievedMemoryWarnings))
                return
            } else {
                unrelievedMemoryWarnings += 1
            }
            try callDelegates(.didReceiveMemoryWarning, { $0.didReceiveMemoryWarning != nil }, { $0.didReceiveMemoryWarning?($1) })
            try postLifecycle(.didReceiveMemoryWarning, userInfo: ["level": .string(level.rawValue)])
        case .powerState(let lowPower):
            guard lowPower != isLowPowerModeEnabled else { return }
            isLowPowerModeEnabled = lowPower
            try deliverDeviceChange(.powerStateDidChange)
        case .thermalState(let thermal):
            guard thermal != thermalState else { return }
            thermalState = thermal
            try deliverDeviceChange(.thermalStateDidChange)
        case .significantTimeChange:
            if state == .suspended {
                enqueue(.significantTimeChange, sender: sender.rawValue, userInfo: nil, systemEvent: true)
            } else {
                try deliverTimeChange(queuedCount: nil)
            }
        case .openURL(let url, let source, let annotation, let scene):
            if isSceneBased {
                try openURLInScene(scene, OpenURLContext(url: url, options: openURLOptions(source, annotation)))
                return
            }
            switch state {
            case .notRunning:
                var options: UserInfo = [LaunchOptionsKey.url: .string(url)]
                if let source { options[LaunchOptionsKey.sourceApplication] = .string(source) }
                if let annotation { options[LaunchOptionsKey.annotation] = annotation }
                try launch(options: options, inBackground: false)
            case .background, .suspended:
                try enterForeground { () throws(Killed) in try self.openURL(url, source, annotation) }
            case .active, .inactive:
                try openURL(url, source, annotation)
            }
        case .backgroundFetch:
            if state == .notRunning { try launch(options: UserInfo(), inBackground: true) }
            try wakeIntoBackground()
            for slot in slots {
                guard let handler = slot.handlers.performFetch, isRegistered(slot) else { continue }
                try startRequest(.performFetch, slot) { handler(self, $0) }
            }
        case .urlSessionEvents(let identifier):
            // Decision 55: launched (or woken) into the background as for a fetch; every delegate that
            // implements the method gets its own completion handler, within the completion budget.
            if state == .notRunning { try launch(options: UserInfo(), inBackground: true) }
            try wakeIntoBackground()
            for slot in slots {
                guard let handler = slot.handlers.handleEventsForBackgroundURLSession, isRegistered(slot) else { continue }
                try startRequest(.handleEventsForBackgroundURLSession, slot) { handler(self, identifier, URLSessionCompletionHandler($0)) }
            }
        case .remoteNotification(let payload):
            // The plain method is "called only when your app is running" (Apple, `UIApplicationDelegate`): not after a
            // launch (the payload is in the launch options) nor after a wake from suspension.
            let wasRunning = state.isRunning
            if state == .notRunning { try launch(options: [LaunchOptionsKey.remoteNotification: .dict(payload)], inBackground: true) }
            try wakeIntoBackground()
            try deliverRemoteNotification(payload, plainToo: wasRunning)
        case .openRemoteNotification(let payload):
            try openRemoteNotification(payload)
        case .localNotification(let info, let opened):
            try localNotification(info, opened: opened)
        case .remoteRegistration(let token, let error):
            for slot in slots where isRegistered(slot) {
                if let token, let handler = slot.handlers.didRegisterForRemoteNotifications {
                    try call(.didRegisterForRemoteNotifications, slot) { handler(self, token) }
                } else if token == nil, let error, let handler = slot.handlers.didFailToRegisterForRemoteNotifications {
                    try call(.didFailToRegisterForRemoteNotifications, slot) { handler(self, error) }
                }
            }
        case .terminate:
            switch state {
            case .suspended:
                goNotRunning(.terminatedWhileSuspended)
            case .active, .inactive:
                // A foreground multitasking application goes through the background first: iOS's documentation
                // says willTerminate comes only to an application already in the background, and an
                // application that saves in didEnterBackground (as on iOS) must get the chance.
                // One that exits on suspend never runs in the background (UIApplicationExitsOnSuspend).
                interrupted = false
                if state == .active { try resignActive() }
                if !configuration.exitsOnSuspend { try enterBackground() }
                try terminateSequence()
            case .background, .notRunning:
                try terminateSequence()
            }
        case .purge:
            if state == .suspended {
                goNotRunning(.purgedWhileSuspended)
            } else {
                // "the system needs to terminate it" while it runs in the background (seed 000).
                try terminateSequence(.purgedInBackground)
            }
        case .scene(let operation):
            try runScene(operation)
        case .continueUserActivity(let activity, let scene, let error):
            try continueUserActivity(activity, scene: scene, error: error)
        case .updateUserActivity(let activity, let scene):
            try updateUserActivity(activity, scene: scene)
        }
    }
}
