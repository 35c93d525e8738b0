@preconcurrency import Glibc
import CLifecycleSystem
import LifecycleRunLoop

/// Steps of the wall clock → `OSEvent.clockChanged`.
///
/// Part of `OSEventSources`. A `CLOCK_REALTIME` timerfd armed with `TFD_TIMER_ABSTIME |
/// TFD_TIMER_CANCEL_ON_SET` at a far-future time never expires; when the clock is set (`date -s`,
/// `settimeofday`, an NTP step — not gradual slewing) its read fails with `ECANCELED`. The descriptor
/// is then re-armed, and only then is the event emitted, so a step during the handler is reported
/// on a later turn, never lost.
public final class ClockChangeSource: @unchecked Sendable {
    // @unchecked: every member is [loop-thread].

    /// 2262-04-11, the latest time the kernel's timers hold (`KTIME_MAX`, `Int64.max` ns).
    static let farFuture = UInt64(Int64.max)

    private let sink: OSEventSink
    /// The timerfd; -1 when not started or turned off after a failure. [loop-thread: checked]
    public var fd: Int32 {
        sink.loop.preconditionOnLoopThread("ClockChangeSource.fd")
        return timerFD
    }
    private var timerFD: Int32 = -1
    private var reader: LoopSource?
    /// How many times the timerfd was armed (start and each re-arm). [loop-thread: checked]
    public var armCount: Int {
        sink.loop.preconditionOnLoopThread("ClockChangeSource.armCount")
        return arms
    }
    private var arms = 0

    init(sink: OSEventSink) {
        self.sink = sink
    }

    deinit {
        reader?.cancel()
        if timerFD >= 0 { _ = close(timerFD) }
    }

    /// Creates, arms and watches the timerfd. [loop-thread]
    ///
    /// A failure goes to the problem handler and leaves clock-change detection off.
    /// - Throws: `.notOnLoopThread` only.
    func start() throws(OSEventError) {
        guard timerFD < 0 else { return }
        let fd = lcs_timerfd_create(CLOCK_REALTIME)
        guard fd >= 0 else {
            let code = errno
            return turnOff(OSEventError.failure("timerfd_create(CLOCK_REALTIME)", code), errno: code)
        }
        timerFD = fd
        guard arm() else { return }
        do {
            reader = try sink.loop.addReader(fd: fd) { [weak self] in self?.readable() }
        } catch {
            turnOff(error.message, errno: error.errno)
            if error.code == .notOnLoopThread { throw OSEventError(error) }
        }
    }

    /// Closes the timerfd. [loop-thread] Idempotent.
    func stop() {
        reader?.cancel()
        reader = nil
        if timerFD >= 0 { _ = close(timerFD) }
        timerFD = -1
    }

    /// Handles one read of the timerfd: `result` as `lcs_timerfd_read` returns it (> 0 expirations,
    /// 0 nothing to read, -1 an error), `code` the errno after it. [loop-thread]
    ///
    /// `ECANCELED` (the clock was set) re-arms the timerfd, then emits `.clockChanged`; so does an
    /// expiry (the clock was set beyond the far-future time). Nothing to read (`EAGAIN`) does nothing.
    /// Any other error is reported and turns detection off (a descriptor that stays readable with an
    /// error would otherwise make the loop spin).
    func handleClockRead(result: Int64, errno code: Int32) {
        guard timerFD >= 0 else { return }
        if result == 0 { return }
        if result < 0 {
            switch code {
            case ECANCELED: break
            case EAGAIN, EINTR: return
            default: return turnOff(OSEventError.failure("read(timerfd CLOCK_REALTIME)", code), errno: code)
            }
        }
        guard arm() else { return }
        sink.emit(.clockChanged)
    }

    private func readable() {
        let result = lcs_timerfd_read(timerFD)
        handleClockRead(result: result, errno: result < 0 ? errno : 0)
    }

    /// Arms the timerfd at the far-future time with cancel-on-set; on failure reports and turns off.
    private func arm() -> Bool {
        // A clock within a day of the far-future time would expire it over and over.
        guard lcs_realtime_ns() < Self.farFuture - 86_400 * 1_000_000_000 else {
            turnOff("CLOCK_REALTIME is past 2262", errno: nil)
            return false
        }
        guard lcs_timerfd_set_abs(timerFD, Self.farFuture, 1) == 0 else {
            let code = errno
            turnOff(OSEventError.failure("timerfd_settime(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET)", code), errno: code)
            return false
        }
        arms += 1
        return true
    }

    private func turnOff(_ why: String, errno code: Int32?) {
        stop()
        sink.problem(OSEventError(code == nil ? .invalidArgument : .system, "clock: \(why); time-change events are off", errno: code))
    }
}
