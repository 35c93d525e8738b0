@preconcurrency import Glibc
import HostInput
import Synchronization

/// A replay's trace compared with its recording's, line by line as the replay writes it, and the
/// first place where they part (docs/recording.md, "What a replay compares").
///
/// Two lines match when their time on the loop's clock, state, kind, name, plugin, detail and scene
/// are equal — except a `plugin loaded` line's detail (the file's version and path), which the
/// replay's check of each plugin file's identity covers and a replay with `--plugin` changes. Line
/// numbers (`seq`) are not compared: the host's own IO lines (its socket, OS-event sources) are in
/// neither trace. [thread-safe] Lines come under the trace writer's lock.
final class TraceComparison: Sendable {
    /// How the first difference is reported: one paragraph on standard error, or (`replay --diff`) in
    /// context on standard output.
    enum Report: Sendable { case summary, context }

    /// Where the traces part.
    enum Divergence: Equatable, Sendable {
        /// The replay wrote `replayed` where the recording has `recorded` (its line `index`, from 0).
        case differs(index: Int, recorded: RecordedTraceLine, replayed: RecordedTraceLine)
        /// The replay's trace goes on past the recording's last line.
        case extra(index: Int, replayed: RecordedTraceLine)
        /// The replay's trace ended before the recording's line `index`.
        case missing(index: Int, recorded: RecordedTraceLine)
    }

    /// Lines of context shown on each side of a difference.
    static let context = 3

    private struct State {
        var next = 0
        var divergence: Divergence?
        /// The replay's lines after the difference, up to `context`.
        var after: [RecordedTraceLine] = []
        /// The replay could not follow the recording (`markParted`), whatever its trace says.
        var parted = false
    }

    private let expected: [RecordedTraceLine]
    private let report: Report
    private let state = Mutex(State())

    init(expected: [RecordedTraceLine], report: Report) {
        self.expected = expected
        self.report = report
    }

    /// Compares the replay's next line.
    func compare(_ line: RecordedTraceLine) {
        state.withLock { state in
            if state.divergence != nil {
                if state.after.count < Self.context { state.after.append(line) }
                return
            }
            let index = state.next
            guard index < expected.count else { return state.divergence = .extra(index: index, replayed: line) }
            if Self.matches(expected[index], line) {
                state.next += 1
            } else {
                state.divergence = .differs(index: index, recorded: expected[index], replayed: line)
            }
        }
    }

    /// The replay's trace has ended: a recording with lines left parts here.
    func finish() {
        state.withLock { state in
            if state.divergence == nil, state.next < expected.count {
                state.divergence = .missing(index: state.next, recorded: expected[state.next])
            }
        }
    }

    /// The replay could not follow the recording (said already, `say`).
    func markParted() { state.withLock { $0.parted = true } }

    /// The first difference, if any.
    var divergence: Divergence? { state.withLock { $0.divergence } }

    /// Says something about the replay on standard error.
    func say(_ text: String) { fputs(printable(text) + "\n", stderr) }

    /// Reports the first difference (`report`'s way), or with `--diff` that there is none. -
    /// Returns: whether the replay parted from the recording.
    func reportDivergence(file: String) -> Bool {
        let (divergence, after, parted, matched) = state.withLock { ($0.divergence, $0.after, $0.parted, $0.next) }
        guard let divergence else {
            if report == .context, !parted {
                print("replay \(printable(file)): the replay's trace matches the recording's, \(matched) lines")
            }
            return parted
        }
        let lines = describe(divergence, after: after, file: file)
        switch report {
        case .summary:
            say(lines.summary + " ('lifecycle-host replay --diff \(file)' shows it in context)")
        case .context:
            print(([lines.summary] + lines.context).joined(separator: "\n"))
        }
        return true
    }

    private func describe(_ divergence: Divergence, after: [RecordedTraceLine], file: String) -> (summary: String, context: [String]) {
        let index: Int, summary: String
        var body: [String] = []
        switch divergence {
        case .differs(let at, let recorded, let replayed):
            index = at
            summary = "replay \(file): the traces part at the recording's trace line \(at + 1) (seq \(recorded.seq)): "
                + "recorded '\(Self.text(recorded))', replayed '\(Self.text(replayed))'"
            body = ["- " + Self.text(recorded), "+ " + Self.text(replayed)]
        case .extra(let at, let replayed):
            index = at
            summary = "replay \(file): the replay's trace goes on after the recording's last line: '\(Self.text(replayed))'"
            body = ["+ " + Self.text(replayed)]
        case .missing(let at, let recorded):
            index = at
            summary = "replay \(file): the replay's trace ended before the recording's trace line \(at + 1) (seq \(recorded.seq)): "
                + "'\(Self.text(recorded))'"
            body = ["- " + Self.text(recorded)]
        }
        var context = ["  (= both, - the recording only, + the replay only)"]
        context += expected[max(0, index - Self.context)..<min(index, expected.count)].map { "= " + Self.text($0) }
        context += body
        if case .extra = divergence {} else {
            context += expected[min(index + 1, expected.count)..<min(index + 1 + Self.context, expected.count)].map { "- " + Self.text($0) }
        }
        context += after.map { "+ " + Self.text($0) }
        return (printable(summary), context.map(printable))
    }

    /// Whether the replay's line is the recording's (see the type's comment).
    static func matches(_ recorded: RecordedTraceLine, _ replayed: RecordedTraceLine) -> Bool {
        guard recorded.time == replayed.time, recorded.state == replayed.state, recorded.kind == replayed.kind,
              recorded.name == replayed.name, recorded.plugin == replayed.plugin
        else { return false }
        if recorded.kind == "plugin", recorded.name == "loaded" { return true }
        return recorded.detail == replayed.detail && recorded.scene == replayed.scene
    }

    /// One line as the report shows it: time (s), state, kind, name, then plugin, detail and scene.
    static func text(_ line: RecordedTraceLine) -> String {
        let seconds = format6(Double(line.time) / 1e9)
        return ([seconds, line.state, line.kind, line.name] + [line.plugin, line.detail, line.scene.map { "scene \($0)" }].compactMap { $0 })
            .joined(separator: " ")
    }
}
