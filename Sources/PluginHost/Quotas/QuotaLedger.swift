import AppLifecycle
import CLifecycleSystem
import LifecycleC
import Synchronization

/// One plugin's side of its quotas: the limits it was loaded with, the custom names charged to it,
/// and its refused calls — traced (`TraceEvent.Payload.quotaRefused`), counted in the metrics from
/// the trace, and counted towards the cut-off of an isolated plugin that keeps calling past a quota.
///
/// The other counts are kept by the registries themselves, so that every way out of one gives the
/// slot back and a check costs one read: `AppNotificationCenter.observerCount(owner:)`,
/// `AppHandle.timerCount(owner:)`, `Application.backgroundTaskCount(owner:)` (removal, firing,
/// cancelling, ending, expiry, the watchdog, the application's end, unloading), or an isolated
/// plugin's own tables.
///
/// Guarantees:
/// - **Trace.** The first refusal of a kind is traced at once; later ones at most once a second per
///   kind (`traceInterval`), as one event counting them, so that a plugin calling in a loop cannot
///   flood the trace. Every refusal is in exactly one event; the last ones within a second after the
///   previous event are traced when that second ends (a loop timer), if the loop runs.
/// - **Cost.** O(1) a refusal: one lock, a clock read, at most one trace event.
/// - [thread-safe]: a refusal off the loop thread (a custom name, posted from a plugin's thread) is
///   handed to the loop, at most one hand-over waiting at a time.
final class QuotaLedger: Sendable {
    /// The id of the plugin whose ledger this is.
    let plugin: String
    let limits: PluginQuotas
    /// How often at most a kind's refusals are traced.
    static let traceInterval: UInt64 = 1_000_000_000

    /// Custom names charged to the plugin: never given back (names live as long as the process).
    private let customNames = Atomic<Int>(0)
    private let state = Mutex(State())

    private struct State {
        /// By `QuotaKind.index`. Inline arrays: a ledger is made at every load, and two heap arrays
        /// (and `allCases`, an array made at each call) cost each load ~3,800 instructions.
        var kinds = InlineArray<4, KindState>(repeating: KindState())
        /// Refusals made off the loop thread, by kind, not handed to the loop yet.
        var offLoop = InlineArray<4, Int>(repeating: 0)
        var handOverWaiting = false
        /// The cut-off window: when it started (ns, 0: none) and the refusals in it.
        var windowStart: UInt64 = 0
        var windowRefusals = 0
    }

    private struct KindState {
        /// When its last event was traced (ns; 0: never).
        var lastTraced: UInt64 = 0
        /// Refusals not traced yet.
        var pending = 0
        /// A timer will trace `pending` when the interval ends.
        var flushArmed = false
    }

    init(plugin: String, limits: PluginQuotas) {
        assert(QuotaKind.allCases.count == 4, "State's inline arrays hold one entry per QuotaKind")
        self.plugin = plugin
        self.limits = limits
    }

    /// The message of a refused call: "`function`: plugin 'ID' is at its quota of N KIND; refused,
    /// nothing changed". The same words in both modes.
    static func message(_ function: String, plugin: String, _ kind: QuotaKind, limit: Int) -> String {
        "\(function): plugin '\(plugin)' is at its quota of \(limit) \(kind.noun); refused, nothing changed"
    }

    // MARK: Custom names

    /// Charges one custom name, unless the quota is reached: false then. [thread-safe]
    func chargeCustomName() -> Bool {
        var used = customNames.load(ordering: .relaxed)
        while used < limits.customNames {
            let (exchanged, original) = customNames.compareExchange(expected: used, desired: used + 1, ordering: .relaxed)
            if exchanged { return true }
            used = original
        }
        return false
    }

    /// Gives back a charge that bought nothing (the name was invalid). [thread-safe]
    func refundCustomName() { customNames.subtract(1, ordering: .relaxed) }

    /// Custom names charged so far. [thread-safe]
    var customNamesCharged: Int { customNames.load(ordering: .relaxed) }

    // MARK: Refusals

    /// `count` calls of `kind` were refused: traced (now, or with the next ones). [thread-safe]
    func refused(_ kind: QuotaKind, count: Int = 1, handle: AppHandle) {
        guard handle.loop.isOnLoopThread else { return handOver(kind, count, handle) }
        let now = lcs_monotonic_ns()
        enum Next { case trace(Int), arm(UInt64), nothing }
        let next: Next = state.withLock { s in
            var k = s.kinds[kind.index]
            defer { s.kinds[kind.index] = k }
            k.pending += count
            if k.flushArmed { return .nothing }
            if k.lastTraced == 0 || now - k.lastTraced >= Self.traceInterval {
                let refused = k.pending
                k.pending = 0
                k.lastTraced = now
                return .trace(refused)
            }
            k.flushArmed = true
            return .arm(k.lastTraced + Self.traceInterval - now)
        }
        switch next {
        case .trace(let refused): trace(kind, refused, handle)
        case .arm(let nanoseconds):
            handle.loop.addRealTimeTimer(after: .nanoseconds(Int64(nanoseconds))) { [weak self, weak handle] in
                guard let self, let handle else { return }
                flush(kind, handle)
            }
        case .nothing: break
        }
    }

    /// Counts `count` refusals towards the cut-off; the refusals of the window and its length when
    /// they reach `PluginQuotas.cutOffRefusals`, else nil. [loop-thread]
    func cutOff(after count: Int = 1) -> (refusals: Int, window: Duration)? {
        let now = lcs_monotonic_ns()
        let window = PluginQuotas.cutOffWindow.nanosecondCount
        return state.withLock { s in
            if s.windowStart == 0 || now - s.windowStart > window {
                s.windowStart = now
                s.windowRefusals = 0
            }
            s.windowRefusals += count
            return s.windowRefusals >= PluginQuotas.cutOffRefusals ? (s.windowRefusals, PluginQuotas.cutOffWindow) : nil
        }
    }

    /// Traces every refusal not traced yet, whatever the interval: the plugin's end (unloaded, cut
    /// off) — no refusal comes after it. [loop-thread]
    func flushAll(_ handle: AppHandle) {
        for kind in QuotaKind.allCases { flush(kind, handle) }
    }

    /// Traces what waits when the interval has ended. [loop-thread]
    private func flush(_ kind: QuotaKind, _ handle: AppHandle) {
        let now = lcs_monotonic_ns()
        let refused = state.withLock { s in
            let refused = s.kinds[kind.index].pending
            s.kinds[kind.index] = KindState(lastTraced: refused > 0 ? now : s.kinds[kind.index].lastTraced)
            return refused
        }
        if refused > 0 { trace(kind, refused, handle) }
    }

    /// A refusal off the loop thread: kept, and handed to the loop by one message at a time.
    private func handOver(_ kind: QuotaKind, _ count: Int, _ handle: AppHandle) {
        let send = state.withLock { s in
            s.offLoop[kind.index] += count
            defer { s.handOverWaiting = true }
            return !s.handOverWaiting
        }
        guard send else { return }
        handle.loop.perform { [weak self, weak handle] in
            guard let self, let handle else { return }
            let counts = state.withLock { s in
                defer {
                    s.offLoop = InlineArray<4, Int>(repeating: 0)
                    s.handOverWaiting = false
                }
                return s.offLoop
            }
            for kind in QuotaKind.allCases where counts[kind.index] > 0 { refused(kind, count: counts[kind.index], handle: handle) }
        }
    }

    private func trace(_ kind: QuotaKind, _ refused: Int, _ handle: AppHandle) {
        handle.app.record(.quotaRefused(QuotaRefusal(plugin: plugin, kind: kind, limit: limits[kind], refused: refused)))
    }
}
