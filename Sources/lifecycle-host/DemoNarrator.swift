import AppLifecycle
import HostInput

/// The demo as a walkthrough (`lifecycle-host demo`): each scenario step's comment printed before its
/// events, and a closing summary — what ran, the plugins, the counts, and the command that draws the
/// timeline. Its words go to the text trace as notes (`TraceWriter.note`), wrapped at the writer's
/// width; the JSON trace gets none. [main-thread] (the host's loop, as `HostRunner`).
final class DemoNarrator {
    private let writer: TraceWriter
    private var steps = 0
    private var plugins: [String] = []
    /// Trace events by kind (typed: `TraceEvent.Kind`), in the order first seen.
    private var counts: [TraceEvent.Kind: Int] = [:]
    private var errors = 0

    init(writer: TraceWriter) { self.writer = writer }

    /// Before a scenario line runs: its action and comment (a line without a comment: its action).
    func step(_ line: ScenarioLine) {
        guard case .action(let action) = line.command else { return }
        steps += 1
        writer.note("")
        writer.note("▸ " + action.description + (line.comment.map { " — \($0)" } ?? ""))
    }

    /// A plugin the host loaded (its id).
    func loaded(_ id: String) { plugins.append(id) }

    /// Every engine event, counted by kind.
    func record(_ event: TraceEvent) {
        counts[event.kind, default: 0] += 1
        if event.kind == .error || event.kind == .watchdog { errors += 1 }
    }

    /// The closing summary.
    func summary(status: Int32) {
        func count(_ kind: TraceEvent.Kind, _ one: String, _ many: String) -> String {
            let n = counts[kind, default: 0]
            return "\(n) \(n == 1 ? one : many)"
        }
        writer.note("")
        writer.note("Summary: the demo scenario ran \(steps) actions with \(plugins.count) plugins (\(plugins.joined(separator: ", "))).")
        writer.note("  Events: " + [count(.delegate, "delegate call", "delegate calls"), count(.notification, "notification", "notifications"),
                                     count(.state, "state change", "state changes"), count(.backgroundTask, "background-task event",
                                                                                             "background-task events"),
                                     count(.archive, "archive event", "archive events"), "\(errors) \(errors == 1 ? "error" : "errors")"]
            .joined(separator: ", ") + "; exit status \(status).")
        writer.note("  Draw this run as a timeline: lifecycle-host demo --timeline demo.svg (then open demo.svg).")
        writer.note("  The same steps with your own plugin: lifecycle-host run --plugin ./libmine.so --script docs/scenarios/demo.scenario")
    }
}
