import Logging
import Synchronization

/// Decides, on whatever thread notices an overrun, what the policy does; holds the application only
/// weakly, and touches it only on the loop thread.
final class KillSwitch: @unchecked Sendable {
    // @unchecked: `application` is written once on the loop thread (after the application's init)
    // and read there only; everything else is immutable or atomic or behind its lock.
    let killed = Atomic<Bool>(false)
    /// Set when a hang report waits for the loop thread to trace it (`takeHangReports`).
    let hangPending = Atomic<Bool>(false)
    private let hangReports = Mutex<[WatchdogReport]>([])
    private let policy: Configuration.WatchdogPolicy
    private let logger: Logger
    private let loop: MainRunLoop
    private let onReport: (@Sendable (WatchdogReport) -> Void)?
    private let onKill: (@Sendable (WatchdogReport) -> Void)?
    private let onTerminationOverdue: (@Sendable (WatchdogReport) -> Void)?
    private let metrics: EngineMetrics?
    /// [loop-thread]
    weak var application: Application?

    init(_ configuration: Configuration, loop: MainRunLoop, metrics: EngineMetrics?) {
        self.metrics = metrics
        policy = configuration.watchdogPolicy
        logger = configuration.logger
        self.loop = loop
        onReport = configuration.onWatchdogReport
        onKill = configuration.onWatchdogKill
        onTerminationOverdue = configuration.onTerminationOverdue
    }

    func overrun(_ report: WatchdogReport) {
        logger.warning("watchdog: \(report.description)")
        metrics?.watchdog(report, killed: policy == .terminate)
        onReport?(report)
        if policy == .terminate {
            killed.store(true, ordering: .relaxed)
            onKill?(report)
        }
    }

    /// A callback overran the hang budget (watchdog thread): reported as any overrun, and handed to
    /// the loop thread, which traces it as soon as the callback returns (or on its next turn).
    func hang(_ report: WatchdogReport) {
        hangReports.withLock { $0.append(report) }
        hangPending.store(true, ordering: .relaxed)
        overrun(report)
        loop.perform { [weak self] in self?.application?.hangReturned() }
    }

    /// The hang reports not yet traced, oldest first. [loop-thread]
    func takeHangReports() -> [WatchdogReport] {
        hangPending.store(false, ordering: .relaxed)
        return hangReports.withLock { reports in
            defer { reports.removeAll() }
            return reports
        }
    }

    /// A termination that did not end in time (watchdog thread).
    func terminationOverdue(_ report: WatchdogReport) {
        logger.warning("watchdog: \(report.description)")
        metrics?.watchdog(report, killed: false)
        onTerminationOverdue?(report)
    }
}
