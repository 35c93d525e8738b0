import CLifecycleSystem

// Suspended means frozen: an isolated plugin's processes stop while the application is suspended
// (`PluginSet.suspensionChanged`), and run again before its first callback after the resume.

extension IsolatedPlugin {
    /// Whether its processes are frozen now. [loop-thread]
    var isFrozen: Bool { frozenAt != nil }

    /// Freezes its processes with the containment's freezer, what the host sent so far flushed first
    /// (it runs it after the thaw). Its deadlines stop meanwhile. [loop-thread]
    /// - Returns: the freezer that took it; nil when it has none, it is not running, or the system
    ///   refused (it runs on then).
    func freeze() -> FreezerMethod? {
        guard status == .running, frozenAt == nil, let process, let method = process.containment.freezer else { return nil }
        flushNow()
        guard process.containment.setFrozen(true) else { return nil }
        frozenAt = lcs_monotonic_ns()
        deadlineTimer?.cancel()
        deadlineTimer = nil
        deadlineArmed = 0
        return method
    }

    /// Thaws its processes, and moves the deadlines of the frames it has not finished on by the time it
    /// was frozen. Nothing when it is not frozen. [loop-thread]
    func thaw() {
        guard let since = frozenAt else { return }
        frozenAt = nil
        guard let process else { return }
        _ = process.containment.setFrozen(false)
        events.postpone(by: lcs_monotonic_ns() &- since)
        checkDeadlines()
    }
}
