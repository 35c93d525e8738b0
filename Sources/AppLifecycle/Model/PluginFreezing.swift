/// What the host did to stop isolated plugins' processes while the application is suspended (on iOS
/// "a suspended app does not execute any code" (seed 000)). docs/lifecycle.md, "Suspended
/// means frozen", gives the policy. [value]
public enum PluginFreezing: Sendable, Hashable {
    /// The first freeze of the application's isolated plugins in this process: how they are frozen
    /// (the freezer's words). Said once.
    case frozen(freezer: String)
    /// A suspended application's isolated plugins cannot be frozen here (why): they run on, as
    /// in-process plugins do. Said once.
    case unavailable(reason: String)
    /// The suspended application was purged or terminated: the plugin's frozen processes were killed,
    /// with no callback (iOS kills a suspended app's process). It starts again at the next launch.
    case killed
    /// The application launches again after `killed`: the plugin was started again in a new process
    /// (its `init` run again), before the launch's first callback.
    case restarted

    /// The trace's words: `frozen`, `not frozen`, `killed` or `restarted`, then the detail.
    var traceText: (name: String, detail: String) {
        switch self {
        case .frozen(let freezer):
            return ("frozen", "a suspended application's isolated plugins are frozen with \(freezer), and thawed before their first callback after it resumes")
        case .unavailable(let reason):
            return ("not frozen", "a suspended application's isolated plugins run on: \(reason)")
        case .killed:
            return ("killed", "its frozen processes were killed with the suspended application, with no callback; it starts again in a new process at the next launch")
        case .restarted:
            return ("restarted", "in a new process, before the launch")
        }
    }
}
