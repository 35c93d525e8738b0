import AppLifecycle
import CLifecycleABI
import LifecycleC

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
    package var callBudget: Duration = .seconds(5) {
        didSet { callBudgetNanoseconds = callBudget.nanosecondCount }
    }
    /// `callBudget` in nanoseconds (kept: a round trip reads it, and `Duration`'s conversion is not free).
    private(set) var callBudgetNanoseconds: UInt64 = 5_000_000_000
    /// How long starting the process, opening the plugin and its init may take. Default 5 s.
    package var initBudget: Duration = .seconds(5)
    package var restart: RestartPolicy = .never
    /// The first restart's delay; each next one doubles it, up to 5 s.
    package var backoff: Duration = .milliseconds(100)
    /// The loader's options, for the plugin's process (`--allow-unsafe-plugins`).
    package var loadOptions: PluginLoadOptions = []
    /// Whether the plugin's process is put in a cgroup of its own where the host can make one
    /// (`ProcessContainment`); off, its process group and its subreaper contain what it starts.
    package var cgroups = true
    /// How its processes are frozen while the application is suspended (`PluginFreezer`): by default
    /// the strongest freezer that works here.
    package var freezer: FreezerChoice = .auto
    /// A scan (`PluginScan`): the plugin is opened and initialised only to see that it does not crash;
    /// its delegate is not registered (so rows an isolated plugin cannot offer do not refuse it).
    var scanOnly = false

    package init() {}

    /// The delay before restart `attempt` (from 1).
    func delay(before attempt: Int) -> Duration {
        var delay = backoff
        for _ in 1..<max(attempt, 1) where delay < .seconds(5) { delay *= 2 }
        return min(delay, .seconds(5))
    }
}

extension IsolationSettings {
    /// The settings an `lc_load_options_t` asks for: nil when the plugin is not isolated (NULL options,
    /// or no `LC_LOAD_ISOLATED`), else its fields checked against their ranges (a shorter struct's tail
    /// counts as zero: the defaults).
    package static func from(_ options: UnsafePointer<lc_load_options_t>?, function: String) -> Result<IsolationSettings?, CStatusError> {
        guard let options else { return .success(nil) }
        func invalid(_ message: String) -> Result<IsolationSettings?, CStatusError> {
            .failure(CStatusError(status: lc_status(LC_ERR_INVALID_ARGUMENT), message: "\(function): \(message)"))
        }
        let size = Int(options.pointee.struct_size)
        guard size >= 8 else { return invalid("options->struct_size is \(size); at least 8 (struct_size and flags)") }
        var o = lc_load_options_t()
        withUnsafeMutableBytes(of: &o) {
            $0.copyMemory(from: UnsafeRawBufferPointer(start: options, count: min(size, MemoryLayout<lc_load_options_t>.size)))
        }
        guard o.flags & ~UInt32(LC_LOAD_ISOLATED) == 0 else { return invalid("options->flags has unknown bits 0x\(String(o.flags & ~UInt32(LC_LOAD_ISOLATED), radix: 16))") }
        guard o.flags & UInt32(LC_LOAD_ISOLATED) != 0 else { return .success(nil) }
        var settings = IsolationSettings()
        switch Int(o.restart_policy) {
        case LC_RESTART_NEVER: settings.restart = .never
        case LC_RESTART_ON_FAILURE:
            guard o.restart_limit <= 1000 else { return invalid("options->restart_limit is \(o.restart_limit); at most 1000") }
            settings.restart = .onFailure(limit: o.restart_limit == 0 ? 3 : Int(o.restart_limit))
        default: return invalid("options->restart_policy \(o.restart_policy) is not LC_RESTART_NEVER or LC_RESTART_ON_FAILURE")
        }
        var budgets: [Duration] = []
        for (name, seconds, keep) in [("call_budget", o.call_budget, settings.callBudget), ("init_budget", o.init_budget, settings.initBudget)] {
            guard seconds != 0 else {
                budgets.append(keep)
                continue
            }
            guard let budget = try? Seconds.duration(seconds, allowsZero: false, atMost: 3600) else {
                return invalid("options->\(name) is \(seconds); a number of seconds above 0 and at most 3600 (0: 5)")
            }
            budgets.append(budget)
        }
        settings.callBudget = budgets[0]
        settings.initBudget = budgets[1]
        switch Int(o.freezer) {  // 1.6
        case LC_FREEZER_AUTO: settings.freezer = .auto
        case LC_FREEZER_CGROUP: settings.freezer = .cgroup
        case LC_FREEZER_CGROUP_V1: settings.freezer = .cgroupV1
        case LC_FREEZER_SIGNAL: settings.freezer = .signal
        case LC_FREEZER_NONE: settings.freezer = .none
        default: return invalid("options->freezer \(o.freezer) is not one of LC_FREEZER_AUTO … LC_FREEZER_NONE (0 to 4)")
        }
        return .success(settings)
    }
}
