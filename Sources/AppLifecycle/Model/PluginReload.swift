/// A step of replacing a plugin with a new build of it without restarting the host (docs/host.md,
/// "Reloading a plugin"): traced as `plugin-reload begin|end|failed [id] (detail)`. [value]
public enum PluginReloadStep: Sendable, Hashable {
    /// The reload of the plugin began: the file at `path` is to replace the running instance.
    case began(path: String)
    /// The new instance runs, restored; the old one is gone (`path`: the file it was loaded from).
    case ended(path: String)
    /// The reload did not happen: the old instance runs on, untouched but for what `reason` says.
    case failed(reason: String)

    /// The trace's words: `begin`, `end` or `failed`, then the detail.
    var traceText: (name: String, detail: String) {
        switch self {
        case .began(let path): return ("begin", path)
        case .ended(let path): return ("end", path)
        case .failed(let reason): return ("failed", "\(reason); the old instance runs on")
        }
    }
}
