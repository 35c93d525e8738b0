@preconcurrency import Glibc
import AppLifecycle
import CLifecycleSystem

/// Steps of the wall clock → `time-change`.
///
/// Part of `OSEventSources`. A `CLOCK_REALTIME` timerfd armed with `TFD_TIMER_ABSTIME |
/// TFD_TIMER_CANCEL_ON_SET` at a far-future time never expires; when the clock is set (not slewed)
/// its read fails with `ECANCELED`. The descriptor is then re-armed and `time-change` performed.
final class ClockChangeSource: @unchecked Sendable {
    // @unchecked: every member is [loop-thread].

    /// 2262-04-11, the latest time the kernel's timers hold (`KTIME_MAX`, `Int64.max` ns).
    static let farFuture = UInt64(Int64.max)

    private let context: OSEventContext
    /// The timerfd; -1 when not started or turned off after a failure. [loop-thread]
    private(set) var fd: Int32 = -1
    private var reader: LoopSource?
    /// How many times the timerfd was armed (start and each re-arm). [loop-thread]
    private(set) var armCount = 0

    init(_ context: OSEventContext) {
        self.context = context
    }

    deinit {
        reader?.cancel()
        if fd >= 0 { _ = close(fd) }
    }

    /// Creates, arms and watches the timerfd. [loop-thread]
    ///
    /// A failure is logged and leaves time-change detection off.
    /// - Throws: `.notOnLoopThread` only.
    func start() throws(ApplicationError) {
        guard fd < 0 else { return }
        let fd = lcs_timerfd_create(CLOCK_REALTIME)
        guard fd >= 0 else { return turnOff(OSEventContext.failure("timerfd_create(CLOCK_REALTIME)", errno)) }
        self.fd = fd
        guard arm() else { return }
        do {
            reader = try context.loop.addReader(fd: fd) { [weak self] in self?.readable() }
        } catch {
            turnOff(error.message)
            if error.code == .notOnLoopThread { throw ApplicationError(error) }
        }
    }

    /// Closes the timerfd. [loop-thread] Idempotent.
    func stop() {
        reader?.cancel()
        reader = nil
        if fd >= 0 { _ = close(fd) }
        fd = -1
    }

    /// Handles one read of the timerfd: `result` as `lcs_timerfd_read` returns it (> 0 expirations,
    /// 0 nothing to read, -1 an error), `code` the errno after it. [loop-thread]
    ///
    /// `ECANCELED` (the clock was set) re-arms the timerfd, then performs `time-change`; so does an
    /// expiry (the clock was set beyond the far-future time). Nothing to read (`EAGAIN`) does nothing.
    /// Any other error is logged and turns detection off (a descriptor that stays readable with an
    /// error would otherwise make the loop spin).
    func handleClockRead(result: Int64, errno code: Int32) {
        guard fd >= 0 else { return }
        if result == 0 { return }
        if result < 0 {
            switch code {
            case ECANCELED: break
            case EAGAIN, EINTR: return
            default: return turnOff(OSEventContext.failure("read(timerfd CLOCK_REALTIME)", code))
            }
        }
        // Re-arm before performing: a step during `perform` is then reported on a later turn.
        guard arm() else { return }
        context.perform(.action(.significantTimeChange), "clock")
    }

    private func readable() {
        let result = lcs_timerfd_read(fd)
        handleClockRead(result: result, errno: result < 0 ? errno : 0)
    }

    /// Arms the timerfd at the far-future time with cancel-on-set; on failure logs and turns off.
    private func arm() -> Bool {
        // A clock within a day of the far-future time would expire it over and over.
        guard lcs_realtime_ns() < Self.farFuture - 86_400 * 1_000_000_000 else {
            turnOff("CLOCK_REALTIME is past 2262")
            return false
        }
        guard lcs_timerfd_set_abs(fd, Self.farFuture, 1) == 0 else {
            turnOff(OSEventContext.failure("timerfd_settime(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET)", errno))
            return false
        }
        armCount += 1
        return true
    }

    private func turnOff(_ why: String) {
        stop()
        context.log("clock: \(why); time-change events are off")
    }
}
