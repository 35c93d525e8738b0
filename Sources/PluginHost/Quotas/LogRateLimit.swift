import CLifecycleSystem
import LifecycleRunLoop
import Logging
import Synchronization

/// A plugin's log lines that are shown, rate-limited (a token bucket): `perSecond` lines a second on
/// average, in bursts of up to `burst`; lines over it are dropped and counted, and one warning line
/// attributed to the plugin says how many ("suppressed N log lines"): before the plugin's next line
/// that passes, or one second after the first line dropped, whichever comes first, and when the
/// plugin is unloaded, after its deinit (whose lines pass here too). Both modes: an isolated
/// plugin's lines reach the host as frames and pass here too.
///
/// [thread-safe]: O(1) a line (one lock, one clock read).
final class LogRateLimit: Sendable {
    /// Lines a second, on average.
    static let perSecond = 100
    /// The most lines at once (the bucket's size).
    static let burst = 1_000

    private let plugin: String
    private let logger: Logger
    private let loop: MainRunLoop
    private let state: Mutex<State>

    private struct State {
        /// Lines that may pass now (thousandths of a line: refilled by elapsed time).
        var tokens: Int
        var refilled: UInt64
        /// Lines dropped since the last note.
        var suppressed = 0
        /// A timer will write the note.
        var noteArmed = false
    }

    init(plugin: String, logger: Logger, loop: MainRunLoop) {
        self.plugin = plugin
        self.logger = logger
        self.loop = loop
        state = Mutex(State(tokens: Self.burst * 1000, refilled: lcs_monotonic_ns()))
    }

    /// Logs `message` at `level` for the plugin unless it is over its rate (then it is counted). A
    /// line below the logger's level (not shown) costs nothing and counts for nothing.
    func log(_ level: Logger.Level, _ message: String) {
        guard level >= logger.logLevel else { return }
        let now = lcs_monotonic_ns()
        enum Outcome { case pass(suppressed: Int), drop(armNote: Bool) }
        let outcome: Outcome = state.withLock { s in
            // `perSecond` lines a second: one thousandth of a line each 1,000,000 / perSecond ns (10 µs).
            let step = UInt64(1_000_000 / Self.perSecond)
            let gained = (now &- s.refilled) / step
            if gained > 0 {
                s.tokens = min(s.tokens + Int(clamping: gained), Self.burst * 1000)
                s.refilled = s.tokens == Self.burst * 1000 ? now : s.refilled &+ gained &* step
            }
            guard s.tokens >= 1000 else {
                s.suppressed += 1
                defer { s.noteArmed = true }
                return .drop(armNote: !s.noteArmed)
            }
            s.tokens -= 1000
            let suppressed = s.suppressed
            s.suppressed = 0
            return .pass(suppressed: suppressed)
        }
        switch outcome {
        case .pass(let suppressed):
            if suppressed > 0 { note(suppressed) }
            logger.log(level: level, "\(message)", metadata: ["plugin": "\(plugin)"])
        case .drop(let armNote):
            guard armNote else { return }
            loop.perform { [weak self] in
                guard let self else { return }
                loop.addRealTimeTimer(after: .seconds(1)) { [weak self] in self?.flush() }
            }
        }
    }

    /// Writes the note of the lines dropped so far, if any.
    func flush() {
        let suppressed = state.withLock { s in
            defer {
                s.suppressed = 0
                s.noteArmed = false
            }
            return s.suppressed
        }
        if suppressed > 0 { note(suppressed) }
    }

    private func note(_ suppressed: Int) {
        let words = "suppressed \(suppressed) log line\(suppressed == 1 ? "" : "s") of plugin '\(plugin)' "
            + "(over \(Self.perSecond) lines a second, in bursts of \(Self.burst))"
        logger.warning("\(words)", metadata: ["plugin": "\(plugin)"])
    }
}
