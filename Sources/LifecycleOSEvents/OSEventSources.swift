@preconcurrency import Glibc
import LifecycleRunLoop

/// Real OS events as typed `OSEvent`s on a `MainRunLoop`: signals, PSI memory pressure, and steps
/// of the wall clock. Any embedder of the run loop can use it; it knows nothing of applications.
///
/// ```swift
/// let loop = try MainRunLoop()
/// var options = OSEventSources.Options()
/// options.signals = [SIGTERM, SIGINT]
/// let events = OSEventSources(loop: loop, options: options, problem: { print("os-events:", $0) }) { event in
///     switch event.kind {
///     case .signal: loop.stop()
///     case .memoryPressure: trimCaches(event.memoryPressure!.level)
///     case .clockChanged: recomputeDeadlines()
///     default: break
///     }
/// }
/// try events.start()   // before starting other threads: see below
/// try loop.run()
/// ```
///
/// Guarantees:
/// - **Thread.** The handler and the problem handler run on the loop thread only, inside a loop turn,
///   never inline from `start()` or `stop()`.
/// - **Order.** Within one turn the loop dispatches signals before descriptors (see `MainRunLoop`), so
///   signals come first, in arrival order, then pressure and clock events in the order epoll reports
///   them. Standard signals that arrive while one of the same number is pending coalesce (the kernel's
///   rule); PSI events are at most one per trigger window and level; clock steps between two reads
///   coalesce into one `.clockChanged`.
/// - **Time.** An event is delivered on the first loop turn after the kernel reports it, so within the
///   time the loop spends on the callbacks before it. Memory pressure is reported only after its stall
///   threshold has accumulated within the trigger's window (≥ 150 ms with the default triggers); with
///   `pressureDelay`, not before that delay after `start()`.
/// - **After `stop()`** no handler is called again; a pending event is dropped.
///
/// - Important: `start()` blocks `options.signals` in the calling thread, which must be the loop
///   thread. Threads started afterwards inherit the mask; a thread started before it does not, and a
///   signal sent to the process (Ctrl-Z, Ctrl-C, `kill`) may then be delivered there and take its
///   default action. So call `start()` before spawning threads. The signals stay blocked after `stop()`.
public final class OSEventSources: @unchecked Sendable {
    // @unchecked: every member is [loop-thread]; closures handed to the loop run there.

    /// What to watch.
    public struct Options: Sendable {
        /// The signals to take (none by default). Taking a signal replaces its default action: take
        /// `SIGTSTP` only with a plan to stop the process yourself (e.g. `kill(getpid(), SIGSTOP)`).
        public var signals: [Int32] = []
        /// PSI memory pressure (on by default).
        public var pressure = true
        /// The PSI file the triggers are armed on; nil: `MemoryPressureSource.defaultFile`, looked up
        /// when the triggers are armed.
        public var pressureFile: String?
        /// `some|full STALL_µs WINDOW_µs` for `.warning`; nil turns the level off. The kernel requires
        /// a window that is a multiple of 2 s unless the process may raise resource limits.
        public var warningTrigger: String? = "some 150000 2000000"
        /// As `warningTrigger`, for `.critical`.
        public var criticalTrigger: String? = "full 150000 2000000"
        /// How long after `start()` the PSI triggers are armed (zero: at once, inside `start()`).
        /// A process that ends before then never opens them, and so never pays for closing them (an
        /// RCU grace period per trigger, which the kernel pays at exit even when nobody closes them).
        public var pressureDelay: Duration = .zero
        /// A `CLOCK_REALTIME` timerfd that reports clock steps (on by default).
        public var clock = true
        /// The session's events from the D-Bus system bus (`SessionBusSource`; off by default).
        public var session = false
        /// The bus for `session`: a D-Bus address (`unix:path=/run/x`); nil: the system bus.
        public var sessionBusAddress: String?
        /// The kernel's thermal zones, polled (`ThermalZoneSource`; off by default).
        public var thermal = false
        /// The folder of the thermal zones (`thermal_zone*`).
        public var thermalFolder = "/sys/class/thermal"
        /// How often they are read.
        public var thermalInterval: Duration = .seconds(2)

        public init() {}
    }

    public let options: Options
    public let signals: SignalEventSource
    public let pressure: MemoryPressureSource
    public let clock: ClockChangeSource
    public let sessionBus: SessionBusSource
    public let thermal: ThermalZoneSource
    private let loop: MainRunLoop
    private var pressureTimer: LoopSource?
    private var started = false

    /// Creates the sources; nothing is installed before `start()`.
    ///
    /// - Parameters:
    ///   - loop: every callback runs on its thread.
    ///   - options: which sources to set up, and how (signals, the PSI file and triggers, clock steps).
    ///   - problem: a source that cannot be set up or fails later (a PSI file that cannot be armed, a
    ///     failing timerfd), in one line; the others run on. [loop-thread]
    ///   - handler: each event. [loop-thread]
    public init(loop: MainRunLoop, options: Options = Options(), problem: @escaping (OSEventError) -> Void = { _ in },
                handler: @escaping (OSEvent) -> Void)
    {
        self.loop = loop
        self.options = options
        let sink = OSEventSink(loop: loop, emit: handler, problem: problem)
        signals = SignalEventSource(signals: options.signals, sink: sink)
        pressure = MemoryPressureSource(sink: sink)
        clock = ClockChangeSource(sink: sink)
        sessionBus = SessionBusSource(sink: sink) { handler(.session($0)) }
        thermal = ThermalZoneSource(sink: sink) { handler(.thermal($0)) }
    }

    deinit {
        pressureTimer?.cancel()
    }

    /// Installs the enabled sources. [loop-thread]
    ///
    /// Signals first (blocked in the calling thread: see the type's note), then the clock timerfd,
    /// then the PSI triggers (or a timer that arms them after `pressureDelay`). A PSI file or timerfd
    /// that cannot be set up goes to the problem handler and is skipped, not fatal. Does nothing when
    /// already started; after `stop()` it installs everything again.
    /// - Throws: `.notOnLoopThread` off the loop thread; `.invalidArgument` for a signal that cannot be
    ///   caught; `.system` when a signal cannot be blocked or the signalfd cannot be created, or when
    ///   `session` is on and libsystemd.so.0 cannot be loaded or the bus cannot be reached. Nothing
    ///   stays installed when it throws.
    public func start() throws(OSEventError) {
        guard loop.isOnLoopThread else {
            throw OSEventError(.notOnLoopThread, "OSEventSources.start must be called on the loop's thread")
        }
        guard !started else { return }
        do {
            try signals.start()
            if options.clock { try clock.start() }
            if options.session { try sessionBus.start(address: options.sessionBusAddress) }
            if options.thermal { thermal.start(folder: options.thermalFolder, interval: options.thermalInterval) }
            if options.pressure {
                if options.pressureDelay <= .zero {
                    try armPressure()
                } else {
                    pressureTimer = loop.addRealTimeTimer(after: options.pressureDelay) { [weak self] in
                        guard let self else { return }
                        pressureTimer = nil
                        try? armPressure()  // On the loop thread: cannot throw.
                    }
                }
            }
        } catch {
            stop()
            throw error
        }
        started = true
    }

    /// Removes every source; no handler is called again. [loop-thread: checked] Idempotent.
    ///
    /// The timerfd is closed at once; the PSI trigger descriptors on detached threads (see
    /// `MemoryPressureSource`), so `stop()` never waits for the kernel. The signals stay blocked in
    /// the loop thread (a `SIGTERM` then stays pending instead of ending the process).
    public func stop() {
        loop.preconditionOnLoopThread("OSEventSources.stop()")
        pressureTimer?.cancel()
        pressureTimer = nil
        signals.stop()
        pressure.stop()
        clock.stop()
        sessionBus.stop()
        thermal.stop()
        started = false
    }

    private func armPressure() throws(OSEventError) {
        let file = options.pressureFile ?? MemoryPressureSource.defaultFile
        if let trigger = options.warningTrigger { try pressure.arm(file: file, trigger: trigger, level: .warning) }
        if let trigger = options.criticalTrigger { try pressure.arm(file: file, trigger: trigger, level: .critical) }
    }
}
