import AppLifecycle
@preconcurrency import Glibc
import HostInput
import LifecycleC
import LifecycleRunLoop
import PluginHost

/// `lifecycle-host replay FILE`: a recording run again (docs/recording.md). Its inputs run each at its
/// recorded time on a manual clock that never waits; input from plugins' own threads, which the
/// plugins send again, is held until the recording's place for it; the trace is compared line by
/// line with the recording's as it is written. [loop-thread] except `comparison`.
final class Replay {
    let recording: Recording
    /// The recording's file, as given (in reports).
    let file: String
    let comparison: TraceComparison
    /// Input from plugins' threads not yet run, by what it is (`ForeignInput.Kind.description`), each
    /// in arrival order. Taking one is O(1).
    private var held: [String: (inputs: [ForeignInput], next: Int)] = [:]
    private var heldCount = 0
    /// The most inputs held at once: a plugin's threads sending far more than the recording has are
    /// the replay parting from it, not memory without end.
    static let maxHeld = 1 << 20
    /// Whether the recorded run had a scenario, and whether its first line launched the application
    /// (then the host did not launch it first).
    let hasScript: Bool
    let scriptLaunches: Bool

    /// How long the replay waits, in real time, for a plugin's thread to send what the recording has
    /// next from it: the thread runs as fast as it runs, whatever the virtual clock says.
    static let foreignWait: Duration = .seconds(5)

    init(recording: Recording, file: String, report: TraceComparison.Report) {
        self.recording = recording
        self.file = file
        comparison = TraceComparison(expected: recording.entries.compactMap { if case .trace(let line) = $0 { line } else { nil } },
                                     report: report)
        // The scenario's first entry: its first line, or its end when it had none.
        let first = recording.entries.first { if case .script = $0 { true } else { $0 == .scriptEnd } }
        var scriptLaunches = false
        if case .script(_, let text)? = first, case .action(let action)? = try? ScenarioParser.parse(line: text) {
            scriptLaunches = action.launchesApplication
        }
        let hasScript = first != nil
        self.hasScript = hasScript
        self.scriptLaunches = scriptLaunches
    }

    /// Keeps what a plugin's thread sent until the recording's place for it.
    func hold(_ input: ForeignInput) {
        guard heldCount < Self.maxHeld else {
            if heldCount == Self.maxHeld {
                heldCount += 1
                comparison.say("replay \(file): plugins' threads sent more than \(Self.maxHeld) inputs the recording has not reached; "
                               + "the rest are dropped")
                comparison.markParted()
            }
            return
        }
        heldCount += 1
        held[input.kind.description, default: ([], 0)].inputs.append(input)
    }

    /// The first held input that is `description`, once one has arrived: the loop runs (its IO and
    /// what other threads send, never its clock) until then, at most `foreignWait`. Nil when none came.
    func take(_ description: String, loop: MainRunLoop) -> ForeignInput? {
        let deadline = MonotonicInstant.now + Self.foreignWait
        while true {
            if var queue = held[description], queue.next < queue.inputs.count {
                let input = queue.inputs[queue.next]
                queue.next += 1
                heldCount -= 1
                if queue.next == queue.inputs.count { queue = ([], 0) }
                held[description] = queue
                return input
            }
            guard MonotonicInstant.now < deadline else { return nil }
            try? loop.run(for: .milliseconds(2))
        }
    }

    /// What was held and never taken: sent by plugins' threads in the replay, not in the recording.
    var unclaimed: [String] {
        held.sorted { $0.key < $1.key }.compactMap { key, queue in
            let count = queue.inputs.count - queue.next
            return count > 0 ? "\(count) × \(key)" : nil
        }
    }

    /// The replay's exit status, and its report: the recorded run's status when everything matched,
    /// else `HostExit.replayDiverged`.
    func verdict(status: Int32) -> Int32 {
        comparison.finish()
        var parted = comparison.reportDivergence(file: file)
        if !parted, status != recording.status {
            comparison.say("replay \(file): the replay ended with status \(status); the recorded run ended with \(recording.status)")
            parted = true
        }
        let unclaimed = self.unclaimed
        if !unclaimed.isEmpty {
            comparison.say("replay \(file): plugins' threads sent what the recording does not have: \(unclaimed.joined(separator: ", "))")
            parted = true
        }
        return parted ? HostExit.replayDiverged : status
    }
}

extension HostRunner {
    /// Runs a recording's entries in order: a `clock` entry moves the manual clock (the timers due
    /// run, each at its deadline), an input runs as it ran when recorded and is waited for (what it
    /// posted, isolated plugins' answers) before the next — what `recordStep` did. [loop-thread]
    func replayAll(_ replay: Replay, _ handle: AppHandle) {
        let loop = handle.loop
        var left = replay.recording.entries.count { $0.isInput }
        for entry in replay.recording.entries {
            guard exitCode == nil else { break }
            do throws(ApplicationError) {
                switch entry {
                case .trace: continue
                case .clock(let elapsed):
                    let (target, overflow) = loop.origin.nanoseconds.addingReportingOverflow(elapsed)
                    let now = loop.now.nanoseconds
                    guard !overflow, target >= now, target - now <= UInt64(Int64.max) else {
                        return diverged(replay, "its clock entry at \(elapsed) ns goes back or out of range")
                    }
                    try handle.app.advance(by: .nanoseconds(Int64(target - now)))
                    continue
                case .script(let location, let text):
                    guard case let command? = try? ScenarioParser.parse(line: text) else {
                        return diverged(replay, "its scenario line \(location) '\(text)' does not parse")
                    }
                    _ = performScriptLine(command, location: location, text: text)
                case .scriptEnd: endScript()
                case .typed(let line): handleTyped(line)
                case .stdinClosed: endOfInput(typedQuit: false)
                case .socket(let request, _): _ = answerNow(request)
                case .os(let text, let origin):
                    guard case let command? = try? ScenarioParser.parse(line: text) else {
                        return diverged(replay, "its OS event '\(text)' does not parse")
                    }
                    performOSEvent(command, origin: origin.osOrigin)
                case .foreign(let description):
                    guard let input = replay.take(description, loop: loop) else {
                        return diverged(replay, "it has a '\(description)' from a plugin's thread next, and none came within "
                                        + "\(Replay.foreignWait.components.seconds) s")
                    }
                    input.run()
                case .finishCheck: finishIfDone()
                }
                left -= 1
                try handle.app.advance(by: .zero)
            } catch {
                fputs("lifecycle-host: \(error.message)\n", stderr)
                return finish(HostExit.failure)
            }
        }
        if left > 0 {
            diverged(replay, "the replay ended (status \(exitCode ?? HostExit.failure)) with \(left) of its inputs not run")
        } else if exitCode == nil {
            diverged(replay, "the recorded run ended after its last input; the replay's application is still \(handle.app.state)")
        }
    }

    /// The replay cannot follow the recording: said now (the trace's comparison may say more), and
    /// the replay ends with `HostExit.replayDiverged`.
    private func diverged(_ replay: Replay, _ why: String) {
        replay.comparison.say("replay \(replay.file): the replay parts from the recording: \(why)")
        replay.comparison.markParted()
        finish(HostExit.replayDiverged)
    }
}

extension RecordingEntry {
    /// Whether it is input a replay runs (not the clock, not a trace line).
    var isInput: Bool {
        switch self {
        case .clock, .trace: false
        default: true
        }
    }
}
