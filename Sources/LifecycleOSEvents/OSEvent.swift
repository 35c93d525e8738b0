@preconcurrency import Glibc
import CLifecycleSystem
import LifecycleRunLoop

/// One event of the operating system, as `OSEventSources` reports it to its handler.
///
/// An enum-like struct: match on `kind`, read the payload of that kind, or compare with the static
/// constructors (`event == .clockChanged`). New kinds may be added without breaking callers, so a
/// `switch` over `kind` needs a `default`.
public struct OSEvent: Hashable, Sendable, CustomStringConvertible {
    /// What happened; grows without breaking callers.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Value: Hashable, Sendable { case signal, memoryPressure, clockChanged, session, thermal }
        fileprivate let value: Value

        /// A signal arrived (`signalNumber`, `senderPID`).
        public static let signal = Kind(value: .signal)
        /// A PSI memory-pressure trigger fired (`memoryPressure`).
        public static let memoryPressure = Kind(value: .memoryPressure)
        /// `CLOCK_REALTIME` was set (stepped), not slewed.
        public static let clockChanged = Kind(value: .clockChanged)
        /// The session's bus said something (`session`): lock, sleep, battery, power profile.
        public static let session = Kind(value: .session)
        /// The thermal zones' level changed (`thermal`).
        public static let thermal = Kind(value: .thermal)

        public var description: String { "\(value)" }
    }

    /// A PSI trigger that fired.
    public struct MemoryPressure: Hashable, Sendable {
        /// The level the trigger was armed for.
        public var level: MemoryPressureLevel
        /// The pressure file the trigger is armed on (a cgroup's `memory.pressure`, `/proc/pressure/memory`).
        public var source: String
        /// The trigger string, `some|full STALL_µs WINDOW_µs`.
        public var trigger: String

        public init(level: MemoryPressureLevel, source: String, trigger: String) {
            self.level = level
            self.source = source
            self.trigger = trigger
        }
    }

    public let kind: Kind
    /// The signal number (`.signal` only).
    public let signalNumber: Int32?
    /// The process that sent the signal, 0 when the kernel sent it (`.signal` only).
    public let senderPID: Int32?
    /// The trigger that fired (`.memoryPressure` only).
    public let memoryPressure: MemoryPressure?
    /// What the session's bus said (`.session` only).
    public let session: SessionEvent?
    /// The thermal zones' reading (`.thermal` only).
    public let thermal: ThermalReading?

    private init(kind: Kind, signalNumber: Int32? = nil, senderPID: Int32? = nil, memoryPressure: MemoryPressure? = nil,
                 session: SessionEvent? = nil, thermal: ThermalReading? = nil)
    {
        self.kind = kind
        self.signalNumber = signalNumber
        self.senderPID = senderPID
        self.memoryPressure = memoryPressure
        self.session = session
        self.thermal = thermal
    }

    /// The thermal zones' level changed to `reading.level`.
    public static func thermal(_ reading: ThermalReading) -> OSEvent { OSEvent(kind: .thermal, thermal: reading) }

    /// The session's bus said `event`.
    public static func session(_ event: SessionEvent) -> OSEvent { OSEvent(kind: .session, session: event) }

    /// Signal `signo`, sent by process `senderPID` (0: by the kernel, e.g. Ctrl-Z at a terminal).
    public static func signal(_ signo: Int32, senderPID: Int32 = 0) -> OSEvent {
        OSEvent(kind: .signal, signalNumber: signo, senderPID: senderPID)
    }

    /// The PSI trigger `trigger` on `source`, armed for `level`, fired.
    public static func memoryPressure(level: MemoryPressureLevel, source: String, trigger: String) -> OSEvent {
        OSEvent(kind: .memoryPressure, memoryPressure: MemoryPressure(level: level, source: source, trigger: trigger))
    }

    /// The wall clock (`CLOCK_REALTIME`) was set.
    public static let clockChanged = OSEvent(kind: .clockChanged)

    /// `signal SIGTSTP from pid 0`, `memory pressure critical (/proc/pressure/memory: full 150000 2000000)`,
    /// `clock changed`.
    public var description: String {
        switch kind.value {
        case .signal:
            "signal \(OSEvent.signalName(signalNumber ?? 0)) from pid \(senderPID ?? 0)"
        case .memoryPressure:
            "memory pressure \(memoryPressure.map { "\($0.level) (\($0.source): \($0.trigger))" } ?? "")"
        case .clockChanged:
            "clock changed"
        case .session:
            session?.description ?? "session"
        case .thermal:
            thermal?.description ?? "thermal"
        }
    }

    /// `SIGTSTP` for `SIGTSTP`, `SIGRTMIN+3` for a real-time signal, `signal 99` otherwise. [thread-safe]
    public static func signalName(_ signo: Int32) -> String {
        let names: [Int32: String] = [
            SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
            SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGUSR1: "SIGUSR1",
            SIGSEGV: "SIGSEGV", SIGUSR2: "SIGUSR2", SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM",
            SIGCHLD: "SIGCHLD", SIGCONT: "SIGCONT", SIGSTOP: "SIGSTOP", SIGTSTP: "SIGTSTP", SIGTTIN: "SIGTTIN",
            SIGTTOU: "SIGTTOU", SIGURG: "SIGURG", SIGXCPU: "SIGXCPU", SIGXFSZ: "SIGXFSZ", SIGVTALRM: "SIGVTALRM",
            SIGPROF: "SIGPROF", SIGWINCH: "SIGWINCH", SIGIO: "SIGIO", SIGPWR: "SIGPWR", SIGSYS: "SIGSYS",
        ]
        if let name = names[signo] { return name }
        // glibc reserves the first two real-time signals; SIGRTMIN is 34 for applications.
        if signo >= 34, signo <= 64 { return "SIGRTMIN+\(signo - 34)" }
        return "signal \(signo)"
    }
}

/// The level a PSI memory-pressure trigger was armed for.
public enum MemoryPressureLevel: String, Hashable, Sendable, CustomStringConvertible {
    /// Some tasks stall on memory (by default `some 150000 2000000`).
    case warning
    /// All non-idle tasks stall on memory at once (by default `full 150000 2000000`).
    case critical

    public var description: String { rawValue }
}

/// A failure of an OS event source: what went wrong, in words a user can act on.
///
/// A struct around a code so that new cases never break callers. `start()` throws it; a source that
/// cannot be set up but is not essential (a PSI file, the clock timerfd) is reported to the problem
/// handler instead, and the others run on.
public struct OSEventError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure; grows without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Kind: Hashable, Sendable { case notOnLoopThread, invalidArgument, system, unavailable }
        fileprivate let kind: Kind

        /// A loop-bound call was made from another thread.
        public static let notOnLoopThread = Code(kind: .notOnLoopThread)
        /// An argument is malformed (a trigger string, a signal that cannot be caught).
        public static let invalidArgument = Code(kind: .invalidArgument)
        /// A system call failed; `errno` says why.
        public static let system = Code(kind: .system)
        /// A source that was asked for cannot be had at all: the session events without
        /// `libsystemd.so.0`, or without a bus to connect to.
        public static let unavailable = Code(kind: .unavailable)

        public var description: String { "\(kind)" }
    }

    public let code: Code
    /// A readable sentence naming what failed and why, e.g.
    /// `psi warning: open(/x) failed: No such file or directory (errno 2); warning memory-pressure warnings are off`.
    public let message: String
    /// The `errno` value (`.system` only).
    public let errno: Int32?

    public init(_ code: Code, _ message: String, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    /// The run loop's error, with `prefix` before its message.
    init(_ error: RunLoopError, prefix: String = "") {
        let code: Code = switch error.code {
        case .notOnLoopThread: .notOnLoopThread
        case .invalidArgument: .invalidArgument
        default: .system
        }
        self.init(code, prefix + error.message, errno: error.errno)
    }

    /// A `.system` error from a failed call: `prefix`, the call's text (named `call` when given, e.g.
    /// `open(/x)`, else by the call's own name), then `suffix`.
    init(_ error: SystemCallError, naming call: String? = nil, prefix: String = "", suffix: String = "") {
        self.init(.system, prefix + SystemCallError.describe(call: call ?? error.call, errno: error.errno) + suffix, errno: error.errno)
    }

    public var description: String { message }

    /// `"open(/x) failed: No such file or directory (errno 2)"`, the text of a `SystemCallError`. [thread-safe]
    static func failure(_ call: String, _ code: Int32) -> String {
        SystemCallError.describe(call: call, errno: code)
    }
}

/// What every source needs: the loop, where events go, where problems go. [loop-thread]
struct OSEventSink {
    let loop: MainRunLoop
    let emit: (OSEvent) -> Void
    let problem: (OSEventError) -> Void
}
