@preconcurrency import Glibc
import AppLifecycle
import HostInput
import LifecycleOSEvents

/// The host's policy for real OS events: the `LifecycleOSEvents` sources, their events mapped to
/// host commands, and working Ctrl-Z job control. Everything runs on the loop thread.
///
/// Mapping (each command is performed with the origin in parentheses):
///
/// | OS event | Host command |
/// | --- | --- |
/// | `SIGTSTP` (Ctrl-Z) | `home` if the app is in the foreground (`signal SIGTSTP`); then, once the app is suspended, the process really stops: stdout and stderr are flushed and it sends itself `SIGSTOP`, so the shell shows the job as stopped and `fg` resumes it. It stops at once if the app is already suspended (or not running), otherwise on the loop turn after the host reports `suspended` (so that transition's output is complete). An app in the background is not sent `home`; the process stops once it is suspended. A `SIGCONT` before then cancels the pending stop. |
/// | `SIGCONT` (`fg`, `bg`, `kill -CONT`) | `foreground` if the app is in the background or suspended (`signal SIGCONT`), performed on a later loop turn: whatever arrived while the process was stopped (a clock step, other signals, pressure) is handled first, while the app is still suspended, so the engine coalesces it. Nothing while the app is active, inactive or not running. |
/// | `SIGTERM`, `SIGINT` (Ctrl-C) | `terminate` (`signal SIGTERM`, `signal SIGINT`). |
/// | `SIGUSR1` | `memory-warning warning` (`signal SIGUSR1`). |
/// | PSI warning trigger | `memory-warning warning` (`psi warning`); the library reports at most one per trigger window. |
/// | PSI critical trigger | `memory-warning critical` (`psi critical`), likewise. |
/// | `CLOCK_REALTIME` set | `time-change` (`clock`). |
/// | logind's answer to `GetSessionByPID` (`--session-events`) | nothing (a `session` line naming the session followed). |
/// | logind `Lock` | `lock` (`logind Lock`) unless the device is locked already. |
/// | logind `Unlock` | `unlock` (`logind Unlock`) unless the device is unlocked already. |
/// | logind `LockedHint` true / false (read at start — an answer heard after a `Lock`, `Unlock`, sleep or change is older, dropped by `lcs_bus` — then on each change) | `lock` / `unlock` (`logind LockedHint true`) when it differs from the device's state: a host started on a locked screen starts locked; the hint that follows a `Lock` does nothing more. |
/// | logind `PrepareForSleep(true)` | `lock` (`logind PrepareForSleep true`) unless locked already: on iOS, sleep is the screen off and the device locked. |
/// | logind `PrepareForSleep(false)` | nothing (a `session` line): waking turns the screen on but does not unlock; the `Unlock` that follows the user's password does. |
/// | power-profiles `ActiveProfile` `power-saver` | `low-power on` (`power-profiles ActiveProfile power-saver`) unless on already. |
/// | power-profiles `ActiveProfile`, any other profile | `low-power off` unless off already. |
/// | UPower `OnBattery` | nothing (a `session` line): iOS's Low Power Mode is the user's choice, not the battery's; the power-saver profile is that choice on Linux. |
/// | a malformed bus message | nothing: an `error` line `session-events` saying what and why. |
/// | the thermal zones' level changes (`--session-events`; `--thermal-folder`, read every 2 s) | `thermal LEVEL` (`thermal serious (thermal_zone0 87.5 C)`) unless the device is at that level already; the levels are `ThermalZoneSource`'s. |
///
/// - Important: `start()` blocks the five signals in the calling thread, which must be the loop
///   thread; call it before spawning threads (see `OSEventSources`).
final class HostOSEvents: @unchecked Sendable {
    // @unchecked: every member is [loop-thread]; closures this type posts with `loop.perform` run there.

    /// What to watch. Defaults: everything on.
    struct Options: Sendable {
        /// The five signals of the mapping (`--no-signals` turns them off).
        var signals = true
        /// PSI memory pressure.
        var pressure = true
        /// The PSI file; nil: the own cgroup's `memory.pressure`, else `/proc/pressure/memory`.
        var pressureFile: String?
        var warningTrigger = "some 150000 2000000"
        var criticalTrigger = "full 150000 2000000"
        /// How long after start the PSI triggers are armed. A run that ends sooner (a script that
        /// launches and terminates) never opens them, and so does not wait at exit for the kernel to
        /// destroy them (an RCU grace period per trigger, 10–30 ms). Memory pressure cannot be seen
        /// sooner than its stall threshold anyway (150 ms with the default triggers).
        var pressureDelay: Duration = .milliseconds(250)
        /// Clock steps.
        var clock = true
        /// The session's events on the system bus (`--session-events`).
        var session = false
        /// The bus for them (`--system-bus`); nil: the system bus.
        var sessionBusAddress: String?
        /// The thermal zones' folder (`--thermal-folder`), read with the session's events.
        var thermalFolder = "/sys/class/thermal"

        /// The library's options for these.
        var library: OSEventSources.Options {
            var options = OSEventSources.Options()
            options.signals = signals ? HostOSEvents.handled.map(\.signo) : []
            options.pressure = pressure
            options.pressureFile = pressureFile
            options.warningTrigger = warningTrigger
            options.criticalTrigger = criticalTrigger
            options.pressureDelay = pressureDelay
            options.clock = clock
            options.session = session
            options.sessionBusAddress = sessionBusAddress
            options.thermal = session
            options.thermalFolder = thermalFolder
            return options
        }
    }

    /// The signals taken, with the names used in origins (`signal SIGTSTP`).
    static let handled: [(signo: Int32, name: String)] = [
        (SIGTSTP, "SIGTSTP"), (SIGCONT, "SIGCONT"), (SIGTERM, "SIGTERM"), (SIGINT, "SIGINT"), (SIGUSR1, "SIGUSR1"),
    ]

    /// Really stops the process (stdout and stderr are already flushed): `SIGSTOP` to the whole process,
    /// which the shell's job control reports as stopped; it returns once the process is continued.
    static func sendStopToProcess() {
        _ = kill(getpid(), SIGSTOP)
    }

    let options: Options
    /// The library's sources (exposed for tests and status).
    private(set) var sources: OSEventSources!
    private let loop: MainRunLoop
    private let perform: (HostCommand, OSOrigin) -> Void
    private let state: () -> ApplicationState
    private let device: () -> DeviceState
    private let note: (_ kind: String, _ name: String, _ detail: String) -> Void
    /// Called to stop the process for Ctrl-Z, after stdout and stderr are flushed (tests replace it).
    var stopProcess: () -> Void = HostOSEvents.sendStopToProcess
    /// Whether a Ctrl-Z waits for the application to be suspended.
    private(set) var stopPending = false

    /// Creates the sources; nothing is installed before `start()`.
    ///
    /// - Parameters:
    ///   - loop: the host's loop; every callback runs on its thread.
    ///   - perform: runs a command; the second argument is its origin (`signal SIGTSTP`, `psi warning`, `clock`).
    ///   - state: reads the application's state.
    ///   - log: reports a problem (a PSI file that cannot be armed, a failing timerfd) in one line.
    ///   - device: reads the device's lock and Low Power Mode (the session mapping skips what holds already).
    ///   - note: writes a trace line (kind, name, detail) of a session event that gives no command.
    init(loop: MainRunLoop, options: Options, perform: @escaping (HostCommand, OSOrigin) -> Void,
         state: @escaping () -> ApplicationState,
         device: @escaping () -> DeviceState = { DeviceState(locked: false, lowPower: false) },
         note: @escaping (_ kind: String, _ name: String, _ detail: String) -> Void = { _, _, _ in }, log: @escaping (String) -> Void)
    {
        self.loop = loop
        self.options = options
        self.perform = perform
        self.state = state
        self.device = device
        self.note = note
        sources = OSEventSources(loop: loop, options: options.library, problem: { log($0.message) }) { [weak self] event in
            self?.handle(event)
        }
    }

    /// Installs the enabled sources (`OSEventSources.start`). [loop-thread]
    func start() throws(OSEventError) {
        try sources.start()
    }

    /// Removes every source; a pending Ctrl-Z stop is dropped. [loop-thread] Idempotent.
    func stop() {
        sources.stop()
        stopPending = false
    }

    /// Acts on one event as the mapping says. [loop-thread]
    func handle(_ event: OSEvent) {
        switch event.kind {
        case .signal:
            if let signo = event.signalNumber { handle(signal: signo, sender: event.senderPID ?? 0) }
        case .memoryPressure:
            guard let level = event.memoryPressure?.level else { return }
            let warning: MemoryWarningLevel = level == .critical ? .critical : .warning
            perform(.action(.memoryWarning(warning)), .pressure(level))
        case .clockChanged:
            perform(.action(.significantTimeChange), .clock)
        case .session:
            if let session = event.session { handle(session: session) }
        case .thermal:
            guard let reading = event.thermal else { return }
            let state: ThermalState = switch reading.level {
            case .nominal: .nominal
            case .fair: .fair
            case .serious: .serious
            case .critical: .critical
            }
            if state != device().thermal { perform(.action(.thermalState(state)), .thermal(reading)) }
        default:
            break
        }
    }

    /// The session rows of the mapping.
    private func handle(session event: SessionEvent) {
        let origin = OSOrigin.session(event)
        let device = device()
        switch event {
        case .lock, .prepareForSleep(true), .lockedHint(true):
            if !device.locked { perform(.action(.lock), origin) }
        case .unlock, .lockedHint(false):
            if device.locked { perform(.action(.unlock), origin) }
        case .sessionFound(let path):
            note("session", event.description, "\(path): its Lock, Unlock and LockedHint are followed")
        case .prepareForSleep(false):
            note("session", event.description, "no action: the device stays locked until logind Unlock")
        case .onBattery:
            note("session", event.description, "no action: Low Power Mode follows the power-saver profile")
        case .powerProfile(let profile):
            let lowPower = profile == "power-saver"
            if lowPower != device.lowPower { perform(.action(.powerState(lowPower: lowPower)), origin) }
        case .malformed(let why):
            note("error", "session-events", "malformed bus message ignored: \(why)")
        }
    }

    private func handle(signal signo: Int32, sender: Int32) {
        let origin = OSOrigin.signal(signo, sender: sender)
        switch signo {
        case SIGTSTP:
            // Pending before `home`: the engine may suspend the app inside it (no background task).
            stopPending = true
            if state().isForeground { perform(.action(.home), origin) }
            stopIfSuspended()
        case SIGCONT:
            // Like the kernel, a continue cancels a stop that has not happened yet.
            stopPending = false
            guard Self.returnsToForeground(state()) else { return }
            // A later turn: readers of this turn (a clock step read while stopped) and signals that were
            // pending with this one are handled first, while the app is still suspended.
            loop.performNext { [weak self] in
                guard let self, sources.signals.isWatching, Self.returnsToForeground(state()) else { return }
                perform(.action(.foreground), origin)
            }
        case SIGTERM, SIGINT:
            perform(.action(.terminate), origin)
        case SIGUSR1:
            perform(.action(.memoryWarning(.warning)), origin)
        default:
            break
        }
    }

    /// Tells the job control the application's new state; the host calls it after every state change.
    ///
    /// [loop-thread] With a Ctrl-Z pending, `suspended` stops the process on the next loop turn — not
    /// now: the host calls this from inside the transition, whose remaining output (trace lines)
    /// should be written before the process stops. The state is read again then.
    func applicationStateChanged(to state: ApplicationState) {
        guard stopPending, state == .suspended else { return }
        loop.performNext { [weak self] in self?.stopIfSuspended() }
    }

    private static func returnsToForeground(_ state: ApplicationState) -> Bool {
        state == .background || state == .suspended
    }

    /// Stops the process if a Ctrl-Z is pending and the app runs no code (suspended, or not running).
    private func stopIfSuspended() {
        guard stopPending else { return }
        let state = state()
        guard state == .suspended || state == .notRunning else { return }
        stopPending = false
        // Everything written so far reaches the terminal before the shell prints "Stopped".
        _ = fflush(nil)
        stopProcess()
    }
}

/// Which OS event a command came from: decided on by its fields, rendered in the trace as
/// `signal SIGTSTP`, `psi warning`, `psi critical` or `clock`.
enum OSOrigin: Equatable, CustomStringConvertible {
    /// A signal, and the process that sent it (0: the kernel, e.g. Ctrl-Z at a terminal); the words
    /// name the signal only.
    case signal(Int32, sender: Int32 = 0)
    case pressure(MemoryPressureLevel)
    case clock
    case session(SessionEvent)
    case thermal(ThermalReading)
    /// An OS event a replay runs from its recording, by the words it was recorded with (logind's, the
    /// thermal zones'): `replay FILE`.
    case replayed(String)

    var description: String {
        switch self {
        case .replayed(let words): return words
        case .session(let event): return event.description
        case .thermal(let reading): return reading.description
        case .signal(let signo, _): return "signal \(OSEvent.signalName(signo))"
        case .pressure(let level): return "psi \(level)"
        case .clock: return "clock"
        }
    }
}

/// The device's state the session mapping reads: whether it is locked, whether Low Power Mode is on,
/// its thermal state.
struct DeviceState: Equatable {
    var locked: Bool
    var lowPower: Bool
    var thermal: ThermalState = .nominal
}
