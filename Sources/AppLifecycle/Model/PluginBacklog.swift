/// An isolated plugin's process fell behind what the host sends it, or caught up again: what the
/// host did meanwhile. docs/host.md, "A slow plugin", gives the policy. [value]
public enum PluginBacklog: Sendable, Hashable {
    /// It fell behind: `waiting` bytes were waiting in the host for its process, and the oldest frame
    /// it had not finished was sent `oldest` ago. From now on its observers' notifications are held and
    /// coalesced instead of sent.
    case behind(waiting: Int, oldest: Duration)
    /// It caught up after `lasted`: `held` notifications were held meanwhile, of which `delivered` were
    /// sent — the latest of each observer and name, in the order each was first held (and all held
    /// before any other frame the host sent it meanwhile). `held - delivered` were coalesced away.
    case caughtUp(held: Int, delivered: Int, lasted: Duration)

    /// How many notifications were coalesced away (0 while behind).
    public var coalesced: Int {
        if case .caughtUp(let held, let delivered, _) = self { return held - delivered }
        return 0
    }

    /// The trace's words: `behind` or `caught up`, then the detail.
    var traceText: (name: String, detail: String) {
        switch self {
        case .behind(let waiting, let oldest):
            return ("behind", "\(waiting) bytes waiting for its process, the oldest frame it has not finished sent "
                + "\(formatSeconds(oldest)) ago: its notifications are held and coalesced until it catches up")
        case .caughtUp(let held, let delivered, let lasted):
            return ("caught up", "after \(formatSeconds(lasted)): \(held) notifications held, \(delivered) delivered "
                + "(the latest of each observer and name), \(held - delivered) coalesced")
        }
    }
}
