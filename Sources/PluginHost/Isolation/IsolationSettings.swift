import AppLifecycle

/// How an isolated plugin is run: its budgets and what happens when its process fails.
package struct IsolationSettings: Sendable, Equatable {
    /// What happens when an isolated plugin's process fails.
    package enum RestartPolicy: Sendable, Equatable {
        /// The plugin stays out (the default).
        case never
        /// A new process is started after a back-off (`backoff`, doubling each time, at most 5 s), at
        /// most `limit` times; a successful start does not reset the count.
        case onFailure(limit: Int)

        /// Parses `never`, `on-failure` (limit 3) or `on-failure:N` (N from 1 to 1000); nil otherwise.
        package init?(parsing text: String) {
            if text == "never" {
                self = .never
                return
            }
            guard text.hasPrefix("on-failure") else { return nil }
            let rest = text.dropFirst("on-failure".count)
            if rest.isEmpty {
                self = .onFailure(limit: 3)
                return
            }
            guard rest.first == ":", let limit = Int(rest.dropFirst()), limit >= 1, limit <= 1000 else { return nil }
            self = .onFailure(limit: limit)
        }
    }

    /// How long a callback of the plugin may run when the engine is not in a budgeted phase (a
    /// notification outside launch, background entry and termination; a timer; an expiration). In a
    /// budgeted phase, the phase's end is the limit. Default 5 s, like the lifecycle budgets.
    package var callBudget: Duration = .seconds(5)
    /// How long starting the process, opening the plugin and its init may take. Default 5 s.
    package var initBudget: Duration = .seconds(5)
    package var restart: RestartPolicy = .never
    /// The first restart's delay; each next one doubles it, up to 5 s.
    package var backoff: Duration = .milliseconds(100)

    package init() {}

    /// The delay before restart `attempt` (from 1).
    func delay(before attempt: Int) -> Duration {
        var delay = backoff
        for _ in 1..<max(attempt, 1) where delay < .seconds(5) { delay *= 2 }
        return min(delay, .seconds(5))
    }
}
