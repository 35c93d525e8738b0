import CLifecycleSystem

/// A plugin whose code runs in a process of its own (an isolated plugin) failed: its process died or
/// was killed, and the plugin was taken out of the application (its observers and delegate methods
/// removed). The host and the other plugins went on.
///
/// Typed: read the fields to decide anything; `TraceEvent` renders the words from them.
public struct PluginFailure: Sendable, Hashable, CustomStringConvertible {
    /// What ended the plugin's process.
    public enum Cause: Sendable, Hashable {
        /// The process died of this signal (SIGSEGV, SIGABRT, SIGBUS, …), not sent by the host.
        case signal(Int32)
        /// The process exited with this status (a plugin calling `exit`, or the runner refusing to go on).
        case exited(Int32)
        /// A callback overran its budget: the host killed the process (SIGKILL). `budget` is how long the
        /// callback had (a lifecycle budget's end, or the isolated-call budget), `budgetName` which one.
        case overran(budgetName: String, budget: Duration)
        /// The process sent what the protocol does not allow (garbage, a frame too large, an id it does
        /// not own); the host cut it off (SIGKILL). The words say what was wrong.
        case protocolViolation(String)
        /// The process could not be started, or did not answer the handshake.
        case startFailed(String)
        /// The plugin went on calling past one of its quotas (`kind`, at most `limit` at once): `refusals`
        /// refused calls within `window`; the host cut it off (SIGKILL).
        case quotaExceeded(QuotaKind, limit: Int, refusals: Int, window: Duration)
    }

    /// What happens next.
    public enum Restart: Sendable, Hashable {
        /// Policy `never`: the plugin stays out.
        case none
        /// Policy `on-failure`: a new process is started after `delay`; this is restart `attempt` of `limit`.
        case scheduled(attempt: Int, limit: Int, delay: Duration)
        /// Policy `on-failure`, and the plugin failed `limit` restarts: it stays out.
        case gaveUp(limit: Int)
        /// Policy `on-failure`, but the plugin failed while it was being unloaded: it stays out.
        case unloading
    }

    /// The plugin's id.
    public let plugin: String
    public let cause: Cause
    /// The callback it was running when it failed (a notification name, a delegate selector, `init`,
    /// `timer`, …), nil when it was idle or that is not known.
    public let event: String?
    public let restart: Restart

    public init(plugin: String, cause: Cause, event: String?, restart: Restart) {
        self.plugin = plugin
        self.cause = cause
        self.event = event
        self.restart = restart
    }

    /// `SIGSEGV`, `exit 3`, `overran did-enter-background budget`, `protocol violation`, `start failed`,
    /// `quota exceeded`.
    public var causeName: String {
        switch cause {
        case .signal(let signo): return Self.signalName(signo)
        case .exited(let status): return "exit \(status)"
        case .overran(let name, _): return "overran \(name) budget"
        case .protocolViolation: return "protocol violation"
        case .startFailed: return "start failed"
        case .quotaExceeded: return "quota exceeded"
        }
    }

    /// The trace detail: what it was doing, the cause's words, and what happens next.
    public var description: String {
        var parts: [String] = []
        switch cause {
        case .signal(let signo): parts.append("killed by \(Self.signalName(signo))")
        case .exited(let status): parts.append("exited with status \(status)")
        case .overran(let name, let budget): parts.append("did not return within its \(formatSeconds(budget)) \(name) budget: killed (SIGKILL)")
        case .protocolViolation(let what): parts.append("cut off (SIGKILL): \(what)")
        case .startFailed(let what): parts.append("could not start: \(what)")
        case .quotaExceeded(let kind, let limit, let refusals, let window):
            parts.append("cut off (SIGKILL): went on calling past its quota of \(limit) \(kind.noun) "
                         + "(\(refusals) calls refused within \(formatSeconds(window)))")
        }
        if let event { parts.append("while handling \(event)") }
        switch restart {
        case .none: parts.append("not restarted (policy never)")
        case .scheduled(let attempt, let limit, let delay): parts.append("restart \(attempt) of \(limit) in \(formatSeconds(delay))")
        case .gaveUp(let limit): parts.append("gave up after \(limit) restart\(limit == 1 ? "" : "s")")
        case .unloading: parts.append("not restarted (it was being unloaded)")
        }
        return parts.joined(separator: "; ")
    }

    /// `SIGSEGV` for 11, `SIGRTMIN+3`, `signal 99`.
    public static func signalName(_ signo: Int32) -> String {
        if let abbreviation = lcs_signal_abbreviation(signo) { return "SIG" + String(cString: abbreviation) }
        return "signal \(signo)"
    }
}
