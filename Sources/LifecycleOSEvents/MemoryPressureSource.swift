@preconcurrency import Glibc
import CLifecycleSystem
import LifecycleRunLoop

/// PSI memory pressure → `OSEvent.memoryPressure(level:source:trigger:)`, at most one event per
/// trigger window and level.
///
/// Part of `OSEventSources`. Each trigger is its own descriptor on the pressure file: opened
/// `O_RDWR | O_NONBLOCK`, the trigger string written with its NUL, then watched for `EPOLLPRI`.
/// After an event the descriptor is not watched until the window since the last event has passed;
/// an event the kernel reported meanwhile is then seen at once and reported (once). So the loop can
/// neither spin on a descriptor that keeps reporting nor report more than once per window.
///
/// Closing a PSI trigger descriptor blocks for an RCU grace period (the kernel's
/// `psi_trigger_destroy` calls `synchronize_rcu`, and stops the `psimon` thread with the last
/// trigger): 10–30 ms. So `stop()` never closes them on the loop thread: each is closed on a
/// detached thread of its own (the grace periods overlap), after its loop source is removed.
public final class MemoryPressureSource: @unchecked Sendable {
    // @unchecked: every member is [loop-thread].

    /// One armed trigger and its rate-limit state. [loop-thread]
    public final class Trigger {
        public let level: MemoryPressureLevel
        /// The pressure file.
        public let source: String
        /// `some|full STALL_µs WINDOW_µs`.
        public let trigger: String
        public let fd: Int32
        /// The trigger's window, in nanoseconds: the shortest time between two events.
        public let window: UInt64
        /// `EPOLLPRI` (PSI); false for a readable descriptor a test injects, read once per event.
        public let priority: Bool
        let ownsFD: Bool
        /// Watching the descriptor; nil while paused.
        fileprivate var reader: LoopSource?
        /// The timer that resumes watching after the window; nil while watching.
        fileprivate var resumeTimer: LoopSource?
        /// The monotonic time of the last event reported for this trigger.
        public fileprivate(set) var lastEvent: UInt64?
        fileprivate var isActive = true

        fileprivate init(level: MemoryPressureLevel, source: String, trigger: String, fd: Int32, window: UInt64,
                         priority: Bool, ownsFD: Bool)
        {
            self.level = level
            self.source = source
            self.trigger = trigger
            self.fd = fd
            self.window = window
            self.priority = priority
            self.ownsFD = ownsFD
        }

        /// Whether the descriptor is watched now (not paused for the window).
        public var isWatching: Bool { reader?.isActive == true }

        fileprivate func close() {
            isActive = false
            reader?.cancel()
            resumeTimer?.cancel()
            reader = nil
            resumeTimer = nil
            guard ownsFD else { return }
            if priority { MemoryPressureSource.closeDetached(fd) } else { _ = Glibc.close(fd) }
        }
    }

    private let sink: OSEventSink
    /// The armed triggers, in arming order. [loop-thread: checked]
    public var triggers: [Trigger] {
        sink.loop.preconditionOnLoopThread("MemoryPressureSource.triggers")
        return armed
    }
    private var armed: [Trigger] = []

    init(sink: OSEventSink) {
        self.sink = sink
    }

    deinit {
        for trigger in armed { trigger.close() }
    }

    /// The own cgroup's `memory.pressure` (cgroup v2, from `/proc/self/cgroup`), else
    /// `/sys/fs/cgroup/memory.pressure`, else `/proc/pressure/memory`. Reads the file system. [thread-safe]
    public static var defaultFile: String {
        var candidates: [String] = []
        if let own = ownCgroupV2Path(), own != "/" { candidates.append("/sys/fs/cgroup\(own)/memory.pressure") }
        candidates.append("/sys/fs/cgroup/memory.pressure")
        return candidates.first { access($0, F_OK) == 0 } ?? "/proc/pressure/memory"
    }

    /// The path of the `0::PATH` line of `/proc/self/cgroup`, nil when there is none.
    private static func ownCgroupV2Path() -> String? {
        guard let file = fopen("/proc/self/cgroup", "re") else { return nil }
        defer { fclose(file) }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            let text = String(cString: line)
            guard text.hasPrefix("0::") else { continue }
            var path = Substring(text.dropFirst(3))
            if path.hasSuffix("\n") { path = path.dropLast() }
            return path.hasPrefix("/") ? String(path) : nil
        }
        return nil
    }

    /// The window of a trigger string `some|full STALL_µs WINDOW_µs`, in nanoseconds; nil when the
    /// string does not have that shape (the kernel judges the rest: kind, ranges, 2 s multiples).
    public static func window(ofTrigger trigger: String) -> UInt64? {
        let fields = trigger.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count == 3, UInt64(fields[1]) != nil, let micros = UInt64(fields[2]), micros > 0 else { return nil }
        let (nanos, overflow) = micros.multipliedReportingOverflow(by: 1000)
        return overflow ? nil : nanos
    }

    /// Opens `file`, arms `trigger` on it and watches it. [loop-thread]
    ///
    /// A file that cannot be opened, a trigger the kernel refuses, or a descriptor epoll refuses goes
    /// to the problem handler and is skipped: no events at that level.
    /// - Throws: `.notOnLoopThread` only.
    func arm(file: String, trigger: String, level: MemoryPressureLevel) throws(OSEventError) {
        let what = "psi \(level)"
        let off = "; \(level) memory-pressure warnings are off"
        guard let window = Self.window(ofTrigger: trigger) else {
            sink.problem(OSEventError(.invalidArgument, "\(what): trigger '\(trigger)' is not 'some|full STALL_US WINDOW_US'\(off)"))
            return
        }
        let fd: Int32
        do throws(SystemCallError) {
            fd = try systemCall("open") { open(file, O_RDWR | O_NONBLOCK | O_CLOEXEC) }
        } catch {
            sink.problem(OSEventError(error, naming: "open(\(file))", prefix: "\(what): ", suffix: off))
            return
        }
        // The kernel reads at most 128 bytes and overwrites the last byte written with a NUL: send it.
        let bytes = Array(trigger.utf8CString)
        do throws(SystemCallError) {
            let written = try systemCall("write") { bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
            // A short write made no trigger either.
            if written != bytes.count { throw SystemCallError("write", errno: EIO) }
        } catch {
            _ = close(fd)  // No trigger was created: nothing to wait for.
            sink.problem(OSEventError(error, naming: "writing trigger '\(trigger)' to \(file)", prefix: "\(what): ", suffix: off))
            return
        }
        do {
            try watch(fd: fd, level: level, window: window, priority: true, ownsFD: true, source: file, trigger: trigger)
        } catch {
            Self.closeDetached(fd)
            if error.code == .notOnLoopThread { throw OSEventError(error) }
            sink.problem(OSEventError(error, prefix: "\(what): ").appending(off))
        }
    }

    /// Watches an armed trigger descriptor (or, in tests, any readable one with `priority` false).
    ///
    /// [loop-thread] With `ownsFD` the descriptor is closed by `stop()`. A descriptor watched without
    /// `priority` must be non-blocking; it is read once per event (an eventfd is then drained).
    /// - Throws: what `MainRunLoop.addReader` throws; nothing is kept then.
    func watch(fd: Int32, level: MemoryPressureLevel, window: UInt64, priority: Bool, ownsFD: Bool,
               source: String = "", trigger: String = "") throws(RunLoopError)
    {
        let trigger = Trigger(level: level, source: source, trigger: trigger, fd: fd, window: window,
                              priority: priority, ownsFD: ownsFD)
        try startWatching(trigger)
        armed.append(trigger)
    }

    /// Removes every trigger; the PSI descriptors are closed on detached threads. [loop-thread] Idempotent.
    func stop() {
        for trigger in armed { trigger.close() }
        armed = []
    }

    private func startWatching(_ trigger: Trigger) throws(RunLoopError) {
        trigger.reader = try sink.loop.addReader(fd: trigger.fd, priority: trigger.priority) { [weak self, weak trigger] in
            guard let self, let trigger else { return }
            fired(trigger)
        }
    }

    /// One event: report it unless within the window, and stop watching until the window has passed.
    private func fired(_ trigger: Trigger) {
        guard trigger.isActive else { return }
        if !trigger.priority {
            var scratch: UInt64 = 0
            _ = try? systemCall("read") { read(trigger.fd, &scratch, MemoryLayout<UInt64>.size) }
        }
        let now = lcs_monotonic_ns()
        var report = true
        if let last = trigger.lastEvent, now &- last < trigger.window { report = false }
        if report { trigger.lastEvent = now }
        // Pause first: the handler may stop the sources, which must find nothing left running.
        trigger.reader?.cancel()
        trigger.reader = nil
        let resumeAt = (trigger.lastEvent ?? now).addingReportingOverflow(trigger.window)
        trigger.resumeTimer = sink.loop.addRealTimeTimer(
            at: MonotonicInstant(nanoseconds: resumeAt.overflow ? .max : resumeAt.partialValue)
        ) { [weak self, weak trigger] in
            guard let self, let trigger, trigger.isActive else { return }
            trigger.resumeTimer = nil
            do throws(RunLoopError) {
                try startWatching(trigger)
            } catch {
                sink.problem(OSEventError(error, prefix: "psi \(trigger.level): ").appending("; \(trigger.level) memory-pressure warnings are off"))
            }
        }
        if report { sink.emit(.memoryPressure(level: trigger.level, source: trigger.source, trigger: trigger.trigger)) }
    }

    /// Closes `fd` on a detached thread (a PSI trigger's close waits for an RCU grace period); at once
    /// when no thread can be started. [thread-safe] The thread inherits the caller's signal mask.
    static func closeDetached(_ fd: Int32) {
        var attributes = pthread_attr_t()
        guard pthread_attr_init(&attributes) == 0 else {
            _ = close(fd)
            return
        }
        defer { pthread_attr_destroy(&attributes) }
        _ = pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        // The close needs next to no stack.
        _ = pthread_attr_setstacksize(&attributes, 64 * 1024)
        var thread = pthread_t()
        let started = pthread_create(&thread, &attributes, { argument in
            _ = close(Int32(Int(bitPattern: argument) - 1))
            return nil
        }, UnsafeMutableRawPointer(bitPattern: Int(fd) + 1))
        if started != 0 { _ = close(fd) }
    }
}

extension OSEventError {
    /// The same error with `suffix` after its message.
    func appending(_ suffix: String) -> OSEventError {
        OSEventError(code, message + suffix, errno: errno)
    }
}
