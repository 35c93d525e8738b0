import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc
import LifecycleC

/// The host's side of an isolated plugin: presents a plugin that runs in a process of its own
/// (`PluginRunner`) to the engine exactly as an in-process one — observers in the center, a delegate
/// in the application, registered under the plugin's id — whose bodies send frames.
///
/// Guarantees:
/// - **Order and thread.** The plugin's process runs its callbacks on its main thread, one at a
///   time, in the order the host sent them, which is the order they happen in the host.
/// - **What waits.** Notifications, void delegate calls, timers and expirations are sent without
///   waiting, in batches (flushed at the end of the loop turn, or at 64 KiB). A delegate call with an
///   answer (a launch method, openURL, a writable archive, Handoff's questions) waits for it. At the
///   end of every action the engine waits (`settle`) until each isolated plugin has run what the
///   action sent, so that what they did (began a background task) counts before the application is
///   suspended.
/// - **Budgets.** Every frame has a deadline: sent in one of the engine's budgeted phases (launch,
///   background entry, termination), the phase's budget from the moment it was sent; otherwise
///   `IsolationSettings.callBudget`. A process that has not finished a frame by its deadline is killed
///   (SIGKILL) and reported like a crash. The progress page it shares is its own word: it can end a
///   frame sooner, never later — a frame the host waits for the answer of keeps its deadline until the
///   answer comes, whatever the page says. While the host waits for isolated plugins the phase's own
///   clock is stopped (`Application.withBudgetClockStopped`): the application's watchdog measures the
///   host's own callbacks, each isolated plugin is held to its deadlines.
/// - **Failure.** A process that dies, overruns or breaks the protocol is reported in the trace
///   (`TraceEvent.Payload.pluginFailed`: the plugin, the signal or status, the callback it was
///   running), and the plugin is taken out: its observers, delegate, timers and background tasks
///   removed, its open completion handlers called with `.failed`. The host and the other plugins go on.
///   The restart policy may start it again (not after a failure while it was being unloaded: a crash
///   or an `exit()` in deinit is reported too). Its death is seen when it happens (a pidfd, or within
///   `exitCheckInterval` in a wait), even while a child of the plugin keeps the socket open.
/// - **Processes.** Everything the plugin's process starts ends with it, at a failure, at the unload
///   and at the host's end (`ProcessContainment`).
/// - [loop-thread], all of it.
final class IsolatedPlugin: @unchecked Sendable {
    // @unchecked: loop-thread only; the closures it hands the loop run there too.
    enum Status { case loading, running, unloading, failed, unloaded }

    unowned let plugin: LoadedPlugin
    /// The application, unretained: it keeps this proxy in its plugin set and ends it (`unload`,
    /// `shutdown`) before it goes, so the proxy never runs without it. Unretained because the handle
    /// is weakly referenced, so its count lives in a side table: a retain and release cost ~130
    /// instructions, and the notification path took four (the unsafe ledger, docs/architecture.md).
    let application: Unmanaged<AppHandle>
    var handle: AppHandle? { application.takeUnretainedValue() }

    /// Runs `body` with the application, without retaining it (see `application`). [loop-thread]
    @inline(__always)
    func withApplication<R>(_ body: (AppHandle) -> R) -> R { application._withUnsafeGuaranteedRef(body) }
    let settings: IsolationSettings
    // The state a round trip reads and writes is the loop thread's only (see `FrameChannel`).
    // `process`, `events` and `backlog` (and `FrameChannel.out`), which every frame sent touches, are
    // `@exclusivity(unchecked)`: loop-thread only, and no access to them is held across a call that
    // could reach them again (the unsafe ledger, docs/architecture.md: +13% on one CPU, +30% on two,
    // isolated one way).
    @exclusivity(unchecked) var process: RunnerProcess?
    var status: Status = .loading
    /// The loop's watch of the socket (readable, and writable while output waits).
    var source: LoopSource? {
        didSet { watchingWritable = false }
    }
    /// Whether `source` waits for room to write too (kept here: asking the loop costs more).
    var watchingWritable = false
    /// The loop's watch of the process's end (its pidfd), while the plugin runs.
    var exitSource: LoopSource?
    /// Armed for the earliest deadline of the unfinished frames.
    var deadlineTimer: LoopSource?
    var deadlineArmed: UInt64 = 0
    var flushScheduled = false
    /// When its processes were frozen (monotonic nanoseconds; nil: they run). `IsolatedPlugin+Freezing`.
    var frozenAt: UInt64?
    /// Killed with the suspended application (a purge, a termination): started again at the next launch.
    var awaitsLaunch = false
    @exclusivity(unchecked) var events = EventLog()
    /// The notifications held while the process is behind (nil: it keeps up), and its check's timer.
    @exclusivity(unchecked) var backlog: Backlog?
    var backlogTimer: LoopSource?
    /// Frames read while the host waited to write, run before anything read later.
    var inbox = FrameQueue()

    // What the process registered, by the ids it chose.
    var observers: [UInt64: IsolatedObserver] = [:]
    var timers: [UInt64: UInt64] = [:]
    /// Completion handlers of requests sent to the plugin, by key (from 1, never reused).
    var completions: [UInt64: FetchCompletionHandler] = [:]
    var nextCompletionKey: UInt64 = 1
    var completionsSweepAt = 64
    /// The process's custom names, by its ids.
    var names: [UInt32: NotificationName] = [:]

    // Waits.
    /// The frame a wait under way holds to its deadline whatever the progress page says (of nested
    /// waits, the one whose deadline is earliest); nil while the host waits for nothing.
    var awaited: EventLog.Entry?
    var nextCall: UInt64 = 1
    var waitingCall: UInt64 = 0
    /// The answer to the waiting call: a writable archive's `failure` when a write into it was refused.
    var callAnswer: (answer: Bool, archive: UserInfo?, failure: EncodingFailure?)?
    var waitingSync: UInt64 = 0
    var synced = false
    /// The sync frame `beginSync` sent, which `endSync` waits for.
    var syncFrame: (number: UInt64, entry: EventLog.Entry)?
    /// What the process said while loading (`described`, `loadFailed`, `initDone`).
    var loadAnswer: LoadAnswer?
    var unloadedSeen = false

    /// Restarts so far (a successful start does not reset it).
    var restarts = 0
    /// Whether a restart is under way (its failures are reported, not refused).
    var isRestarting = false
    /// The last failure (nil while the plugin runs).
    var failure: PluginFailure?

    enum LoadAnswer {
        case described(id: String, version: String, summary: String, abiMajor: UInt32, abiMinor: UInt32)
        case loadFailed(status: lc_status, reason: String)
        case initDone(status: lc_status, reason: String, rows: UInt64, sceneRows: UInt64)
    }

    init(plugin: LoadedPlugin, handle: AppHandle, settings: IsolationSettings, process: RunnerProcess) {
        self.plugin = plugin
        application = Unmanaged.passUnretained(handle)
        self.settings = settings
        self.process = process
    }

    // MARK: Starting

    /// Starts a runner for `path` (or takes `prestarted`, one started ahead for it and sent its hello)
    /// and reads its descriptor (within `settings.initBudget`).
    /// - Throws: the refusal: the runner could not start, the plugin failed the loader's checks, or
    ///   the process died or overran before describing it.
    static func launch(path: String, settings: IsolationSettings, prestarted: RunnerProcess? = nil) throws(PluginRefusal)
        -> (process: RunnerProcess, id: String, version: String, summary: String, abiMajor: UInt32, abiMinor: UInt32)
    {
        func refuse(_ reason: String, _ status: Int = LC_ERR_PLUGIN_REFUSED) -> PluginRefusal {
            PluginRefusal(path: path, reason: reason, status: lc_status(status))
        }
        let process: RunnerProcess
        if let prestarted {
            process = prestarted
        } else {
            do { process = try RunnerProcess.start(runner: try IsolationRunner.resolve(), cgroups: settings.cgroups, freezer: settings.freezer) } catch {
                throw refuse("isolated: \(error.message)", LC_ERR_SYSTEM)
            }
            sendHello(to: process, path: path, settings: settings)
        }
        let deadline = lcs_monotonic_ns() + settings.initBudget.nanosecondCount
        let first: FrameReader
        do { first = try readFrame(process, until: deadline) } catch {
            let (words, cause) = error.settle(process, during: "opening the plugin", budget: settings.initBudget)
            throw PluginRefusal(path: path, reason: "isolated: \(words)", status: lc_status(LC_ERR_PLUGIN_REFUSED), processFailure: cause)
        }
        var reader = first
        do {
            switch try readLoadAnswer(&reader) {
            case .described(let id, let version, let summary, let major, let minor):
                if let problem = AppHandle.idProblem(id) { throw ProtocolViolation("described an invalid id '\(id)': \(problem)") }
                return (process, id, version, summary, major, minor)
            case .loadFailed(let status, let reason):
                process.reap(within: .seconds(1))
                throw PluginRefusal(path: path, reason: reason, status: status)
            case .initDone:
                throw ProtocolViolation("an initDone frame before the descriptor")
            }
        } catch let violation as ProtocolViolation {
            process.kill()
            process.reap(within: .seconds(1))
            throw refuse("isolated: the plugin's process broke the protocol: \(violation.message)")
        } catch let refusal as PluginRefusal {
            throw refusal
        } catch {
            throw refuse("isolated: \(error)")
        }
    }

    /// Queues the first frame: the protocol version, the load options and the plugin's path.
    static func sendHello(to process: RunnerProcess, path: String, settings: IsolationSettings) {
        queueHello(on: process.channel, path: path, settings: settings)
    }

    /// `sendHello` on a runner's channel, before its process exists.
    static func queueHello(on channel: FrameChannel, path: String, settings: IsolationSettings) {
        var hello = FrameWriter()
        hello.begin(.hello)
        hello.u32(IsolationProtocol.version)
        hello.u32(settings.loadOptions.rawValue)
        hello.string(path)
        hello.end()
        channel.out = hello
    }

    /// What went wrong reading the process's first frame.
    enum FirstFrameProblem: Error {
        case ended, overran, violation(ProtocolViolation)

        /// Ends the process if it still runs; the refusal's words and the failure's cause.
        func settle(_ process: RunnerProcess, during what: String, budget: Duration) -> (words: String, cause: PluginFailure.Cause) {
            switch self {
            case .overran:
                process.kill()
                process.reap(within: .seconds(1))
                let cause = PluginFailure.Cause.overran(budgetName: "init", budget: budget)
                return ("the plugin's process \(IsolatedPlugin.causeWords(cause)) while \(what)", cause)
            case .violation(let violation):
                process.kill()
                process.reap(within: .seconds(1))
                return ("the plugin's process broke the protocol: \(violation.message)", .protocolViolation(violation.message))
            case .ended:
                let cause = IsolatedPlugin.cause(of: process.reap(within: .seconds(1)))
                return ("the plugin's process \(IsolatedPlugin.causeWords(cause)) while \(what)", cause)
            }
        }
    }

    /// Writes what waits and reads until a whole frame has come (the handshake, before the loop watches).
    private static func readFrame(_ process: RunnerProcess, until deadline: UInt64) throws(FirstFrameProblem) -> FrameReader {
        let channel = process.channel
        while true {
            if channel.pendingOutput > 0, case .failed = channel.writeSome() { throw .ended }
            do {
                if let frame = try channel.nextFrame(acceptFromHost: false) { return frame }
            } catch {
                throw .violation(error)
            }
            switch channel.readSome() {
            case .data: continue
            case .closed, .failed: throw .ended
            case .wouldBlock:
                // In slices: a process that died while a child of its keeps the socket open has ended.
                let slice = min(deadline, lcs_monotonic_ns() + IsolatedPlugin.exitCheckInterval)
                if channel.poll(Int16(POLLIN) | (channel.pendingOutput > 0 ? Int16(POLLOUT) : 0), until: slice) == 0 {
                    if process.hasExited { throw .ended }
                    if lcs_monotonic_ns() >= deadline { throw .overran }
                }
            }
        }
    }

    // MARK: Process ends

    /// The cause a `waitpid` status names.
    static func cause(of status: Int32) -> PluginFailure.Cause {
        let signal = status & 0x7F
        if signal != 0 && signal != 0x7F { return .signal(signal) }
        return .exited((status >> 8) & 0xFF)
    }

    /// "was killed by SIGSEGV", "exited with status 3", "did not finish within its 5 s init budget: killed (SIGKILL)".
    static func causeWords(_ cause: PluginFailure.Cause) -> String {
        switch cause {
        case .signal(let signo): return "was killed by \(PluginFailure.signalName(signo))"
        case .exited(let status): return "exited with status \(status)"
        case .overran(let name, let budget): return "did not finish within its \(formatSeconds(budget)) \(name) budget: killed (SIGKILL)"
        case .protocolViolation(let what): return "broke the protocol: \(what); cut off (SIGKILL)"
        case .startFailed(let what): return "could not start: \(what)"
        case .quotaExceeded(let kind, let limit, let refusals, let window):
            return "went on calling past its quota of \(limit) \(kind.noun) (\(refusals) calls refused within \(formatSeconds(window))): "
                + "cut off (SIGKILL)"
        }
    }

    /// A load's refusal for a process that failed: "the plugin's process was killed by SIGABRT while running init".
    static func refusalWords(_ failure: PluginFailure) -> String {
        "the plugin's process \(causeWords(failure.cause))" + (failure.event.map { " while running \($0)" } ?? "")
    }
}

/// One observer an isolated plugin registered: the center calls `isolatedObserverFunction` with it.
final class IsolatedObserver {
    /// The token the plugin's process chose.
    let token: UInt64
    var registered: ObserverToken?
    /// Unretained: the proxy keeps this observer (`observers`) and removes its center entry before it
    /// lets it go, so while the center can call it the proxy is there (the unsafe ledger). The proxy
    /// is weakly referenced, so its count lives in a side table: a retain and release a notification
    /// would cost ~130 instructions.
    let owner: Unmanaged<IsolatedPlugin>

    init(token: UInt64, owner: IsolatedPlugin) {
        self.token = token
        self.owner = Unmanaged.passUnretained(owner)
    }
}

/// The raw observer of every isolated plugin's observers: sends the notification to its process.
let isolatedObserverFunction: RawObserverFunction = { record, context in
    guard let record, let context else { return }
    Unmanaged<IsolatedObserver>.fromOpaque(context)._withUnsafeGuaranteedRef { observer in
        observer.owner._withUnsafeGuaranteedRef { $0.forward(observer.token, record.load(as: NotificationRecord.self)) }
    }
}

extension Duration {
    /// Whole nanoseconds (negative durations count as 0).
    package var nanosecondCount: UInt64 { UInt64(max(nanosecondsClamped, 0)) }
}
