/// What a plugin can make the host keep for it, each kind held to a per-plugin quota (the plugins
/// module sets the numbers and refuses a call past them with `LC_ERR_QUOTA`).
///
/// Typed: read the kind to decide anything; `rawValue` is the trace's name and the metrics' `kind`.
public enum QuotaKind: String, CaseIterable, Sendable, Hashable, CustomStringConvertible {
    /// Observers registered and not removed.
    case observers
    /// Timers added that have neither fired nor been cancelled.
    case timers
    /// Background tasks begun and not ended (by the plugin, the watchdog or the application's end).
    case backgroundTasks = "background-tasks"
    /// Custom notification names the plugin made the host keep: in its process, names it was the
    /// first to intern; isolated, the distinct custom names its process sent (names live as long as
    /// the process: they are never given back).
    case customNames = "custom-names"

    /// The words for a count of them: "observers", "timers", "open background tasks", "custom notification names".
    public var noun: String {
        switch self {
        case .observers: "observers"
        case .timers: "timers"
        case .backgroundTasks: "open background tasks"
        case .customNames: "custom notification names"
        }
    }

    /// Its place in `allCases` (a fixed small index: per-kind state is kept in arrays).
    public var index: Int {
        switch self {
        case .observers: 0
        case .timers: 1
        case .backgroundTasks: 2
        case .customNames: 3
        }
    }

    public var description: String { rawValue }
}

/// Calls of one plugin refused at one of its quotas: what a `quota` trace event says.
///
/// The first refusal of a kind is traced at once (`refused` 1); later ones at most once a second per
/// plugin and kind, together (`refused`: how many since the last event), so that a plugin calling in
/// a loop cannot flood the trace. The sum of `refused` over the events is every refused call.
public struct QuotaRefusal: Sendable, Hashable {
    /// The plugin's id.
    public let plugin: String
    public let kind: QuotaKind
    /// The quota: how many the plugin may have at once.
    public let limit: Int
    /// How many refused calls this event stands for (at least 1).
    public let refused: Int

    public init(plugin: String, kind: QuotaKind, limit: Int, refused: Int) {
        self.plugin = plugin
        self.kind = kind
        self.limit = limit
        self.refused = refused
    }

    /// The trace detail: "1 call refused: the quota is 4096 timers".
    var traceDetail: String {
        "\(refused) call\(refused == 1 ? "" : "s") refused: the quota is \(limit) \(kind.noun)"
    }
}
