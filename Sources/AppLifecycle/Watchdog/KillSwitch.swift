import Logging
import Synchronization

/// Decides, on whatever thread notices an overrun, what the policy does; holds no reference to the application.
final class KillSwitch: Sendable {
    let killed = Atomic<Bool>(false)
    private let policy: Configuration.WatchdogPolicy
    private let logger: Logger
    private let onReport: (@Sendable (WatchdogReport) -> Void)?
    private let onKill: (@Sendable (WatchdogReport) -> Void)?

    init(_ configuration: Configuration) {
        policy = configuration.watchdogPolicy
        logger = configuration.logger
        onReport = configuration.onWatchdogReport
        onKill = configuration.onWatchdogKill
    }

    func overrun(_ report: WatchdogReport) {
        logger.warning("watchdog: \(report.description)")
        onReport?(report)
        if policy == .terminate {
            killed.store(true, ordering: .relaxed)
            onKill?(report)
        }
    }
}
