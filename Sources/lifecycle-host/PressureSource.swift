@preconcurrency import Glibc
import AppLifecycle
import CLifecycleSystem

/// PSI memory pressure → `memory-warning LEVEL`, at most one warning per trigger window and level.
///
/// Part of `OSEventSources`. Each trigger is its own descriptor on the pressure file: opened
/// `O_RDWR | O_NONBLOCK`, the trigger string written with its NUL, then watched for `EPOLLPRI`.
/// After an event the descriptor is not watched until the window since the last warning has passed;
/// an event the kernel reported meanwhile is then seen at once and reported (once). So the loop can
/// neither spin on a descriptor that keeps reporting nor warn more than once per window.
final class PressureSource: @unchecked Sendable {
    // @unchecked: every member is [loop-thread].

    /// One armed trigger and its rate-limit state. [loop-thread]
    final class Trigger {
        let level: MemoryWarningLevel
        let fd: Int32
        /// The trigger's window, in nanoseconds: the shortest time between two warnings.
        let window: UInt64
        /// `EPOLLPRI` (PSI); false for a readable descriptor a test injects, read once per event.
        let priority: Bool
        let ownsFD: Bool
        /// Watching the descriptor; nil while paused.
        fileprivate var reader: LoopSource?
        /// The timer that resumes watching after the window; nil while watching.
        fileprivate var resumeTimer: LoopSource?
        /// The monotonic time of the last warning at this trigger.
        fileprivate(set) var lastWarning: UInt64?
        fileprivate var isActive = true

        fileprivate init(level: MemoryWarningLevel, fd: Int32, window: UInt64, priority: Bool, ownsFD: Bool) {
            self.level = level
            self.fd = fd
            self.window = window
            self.priority = priority
            self.ownsFD = ownsFD
        }

        /// Whether the descriptor is watched now (not paused for the window).
        var isWatching: Bool { reader?.isActive == true }

        fileprivate func close() {
            isActive = false
            reader?.cancel()
            resumeTimer?.cancel()
            reader = nil
            resumeTimer = nil
            if ownsFD { _ = Glibc.close(fd) }
        }
    }

    private let context: OSEventContext
    /// The armed triggers, in arming order. [loop-thread]
    private(set) var triggers: [Trigger] = []

    init(_ context: OSEventContext) {
        self.context = context
    }

    deinit {
        for trigger in triggers { trigger.close() }
    }

    /// The window of a trigger string `some|full STALL_µs WINDOW_µs`, in nanoseconds; nil when the
    /// string does not have that shape (the kernel judges the rest: kind, ranges, 2 s multiples).
    static func window(ofTrigger trigger: String) -> UInt64? {
        let fields = trigger.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count == 3, UInt64(fields[1]) != nil, let micros = UInt64(fields[2]), micros > 0 else { return nil }
        let (nanos, overflow) = micros.multipliedReportingOverflow(by: 1000)
        return overflow ? nil : nanos
    }

    /// Opens `file`, arms `trigger` on it and watches it. [loop-thread]
    ///
    /// A file that cannot be opened, a trigger the kernel refuses, or a descriptor epoll refuses is
    /// logged and skipped: the host runs on without warnings at that level.
    /// - Throws: `.notOnLoopThread` only.
    func arm(file: String, trigger: String, level: MemoryWarningLevel) throws(ApplicationError) {
        let what = "psi \(level)"
        guard let window = Self.window(ofTrigger: trigger) else {
            context.log("\(what): trigger '\(trigger)' is not 'some|full STALL_US WINDOW_US'; \(level) memory-pressure warnings are off")
            return
        }
        var fd: Int32
        repeat { fd = open(file, O_RDWR | O_NONBLOCK | O_CLOEXEC) } while fd < 0 && errno == EINTR
        guard fd >= 0 else {
            context.log("\(what): \(OSEventContext.failure("open(\(file))", errno)); \(level) memory-pressure warnings are off")
            return
        }
        // The kernel reads at most 128 bytes and overwrites the last byte written with a NUL: send it.
        let bytes = Array(trigger.utf8CString)
        var written: Int
        repeat { written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } } while written < 0 && errno == EINTR
        guard written == bytes.count else {
            let code = written < 0 ? errno : EIO
            _ = close(fd)
            context.log("\(what): \(OSEventContext.failure("writing trigger '\(trigger)' to \(file)", code)); \(level) memory-pressure warnings are off")
            return
        }
        do {
            try watch(fd: fd, level: level, window: window, priority: true, ownsFD: true)
        } catch {
            _ = close(fd)
            if error.code == .notOnLoopThread { throw ApplicationError(error) }
            context.log("\(what): \(error.message); \(level) memory-pressure warnings are off")
        }
    }

    /// Watches an armed trigger descriptor (or, in tests, any readable one with `priority` false).
    ///
    /// [loop-thread] With `ownsFD` the descriptor is closed by `stop()`. A descriptor watched without
    /// `priority` must be non-blocking; it is read once per event (an eventfd is then drained).
    /// - Throws: what `MainRunLoop.addReader` throws; nothing is kept then.
    func watch(fd: Int32, level: MemoryWarningLevel, window: UInt64, priority: Bool, ownsFD: Bool)
        throws(RunLoopError)
    {
        let trigger = Trigger(level: level, fd: fd, window: window, priority: priority, ownsFD: ownsFD)
        try startWatching(trigger)
        triggers.append(trigger)
    }

    /// Closes every trigger. [loop-thread] Idempotent.
    func stop() {
        for trigger in triggers { trigger.close() }
        triggers = []
    }

    private func startWatching(_ trigger: Trigger) throws(RunLoopError) {
        trigger.reader = try context.loop.addReader(fd: trigger.fd, priority: trigger.priority) { [weak self, weak trigger] in
            guard let self, let trigger else { return }
            fired(trigger)
        }
    }

    /// One event: warn unless within the window, and stop watching until the window has passed.
    private func fired(_ trigger: Trigger) {
        guard trigger.isActive else { return }
        if !trigger.priority {
            var scratch: UInt64 = 0
            _ = read(trigger.fd, &scratch, MemoryLayout<UInt64>.size)
        }
        let now = lcs_monotonic_ns()
        var warn = true
        if let last = trigger.lastWarning, now &- last < trigger.window { warn = false }
        if warn { trigger.lastWarning = now }
        // Pause first: `perform` may stop the sources (a terminate), which must find nothing left running.
        trigger.reader?.cancel()
        trigger.reader = nil
        let resumeAt = (trigger.lastWarning ?? now).addingReportingOverflow(trigger.window)
        trigger.resumeTimer = context.loop.addTimer(
            at: MonotonicInstant(nanoseconds: resumeAt.overflow ? .max : resumeAt.partialValue)
        ) { [weak self, weak trigger] in
            guard let self, let trigger, trigger.isActive else { return }
            trigger.resumeTimer = nil
            do throws(RunLoopError) {
                try startWatching(trigger)
            } catch {
                context.log("psi \(trigger.level): \(error.message); \(trigger.level) memory-pressure warnings are off")
            }
        }
        if warn { context.perform(.action(.memoryWarning(trigger.level)), "psi \(trigger.level)") }
    }
}
