import AppLifecycle
@preconcurrency import Glibc
import HostInput
import LifecycleC
import LifecycleRunLoop
import PluginHost
import Synchronization

/// How a run takes its input (docs/recording.md).
enum InputMode {
    /// As it comes, each input in the loop callback that reads it.
    case live
    /// `run --record FILE`: each input waits for the next gate point, where the clock is moved to real
    /// time first; it is written to the recording, then run.
    case recording(RunRecorder)
    /// `replay FILE`: the recording's inputs, each at its recorded time, on a clock that never waits.
    case replaying(Replay)

    var isLive: Bool {
        if case .live = self { return true }
        return false
    }
}

/// The recording a `run --record FILE` writes, and the input waiting for the next gate point.
///
/// [loop-thread] except `append`, which a trace line may call from another thread (the recording
/// file has a lock of its own).
final class RunRecorder {
    /// The file, under a lock: the trace's lines reach it under the trace writer's lock, and a line
    /// may be written from another thread (the watchdog's, an emergency exit).
    let sink: RecordingSink
    /// Input that arrived since the last gate point, in arrival order; with its entry (nil: the input
    /// writes its own, after it ran: a socket request and its response).
    private var pending: [(entry: RecordingEntry?, body: () -> Void)] = []
    private var next = 0
    /// True while a gate point runs input: input arriving meanwhile joins it, without stopping the loop.
    var atGatePoint = false

    init(sink: RecordingSink) { self.sink = sink }

    func append(_ entry: RecordingEntry) { sink.append(entry) }

    func queue(_ entry: RecordingEntry?, _ body: @escaping () -> Void) { pending.append((entry, body)) }

    /// The next input waiting, in arrival order. O(1).
    func take() -> (entry: RecordingEntry?, body: () -> Void)? {
        guard next < pending.count else {
            if next > 0 {
                pending.removeAll(keepingCapacity: pending.count <= 1024)
                next = 0
            }
            return nil
        }
        defer { next += 1 }
        return pending[next]
    }
}

/// A recording file shared by the loop thread and the trace writer. [thread-safe]
final class RecordingSink: Sendable {
    private let writer: Mutex<RecordingWriter?>

    init(_ writer: consuming sending RecordingWriter) { self.writer = Mutex(writer) }

    func append(_ entry: RecordingEntry) {
        writer.withLock { $0?.append(entry) }
    }

    /// Writes the end line with `status` and closes the file. - Returns: what went wrong, if anything.
    func finish(status: Int32) -> String? {
        writer.withLock { writer -> String? in
            defer { writer = nil }
            do throws(RecordingError) {
                try writer?.finish(status: status)
                return nil
            } catch {
                return error.message
            }
        }
    }
}

extension RecordedOSOrigin {
    /// What a recording keeps of an OS event's origin: the typed signal (and its sender), pressure level or clock step,
    /// or the words of the others (logind's, the thermal zones').
    init(_ origin: OSOrigin) {
        switch origin {
        case .signal(let signo, let sender): self = .signal(signo, sender: sender)
        case .pressure(let level): self = .pressure(critical: level == .critical)
        case .clock: self = .clock
        case .session, .thermal, .replayed: self = .other(description: origin.description)
        }
    }

    /// The origin a replay gives the event: the typed cases as they were, the others by their words.
    var osOrigin: OSOrigin {
        switch self {
        case .signal(let signo, let sender): .signal(signo, sender: sender)
        case .pressure(let critical): .pressure(critical ? .critical : .warning)
        case .clock: .clock
        case .other(let description): .replayed(description)
        }
    }
}

extension HostRunner {
    /// Takes one input: runs it now (live), queues it for the next gate point (recording: the loop
    /// stops, so that the gate point comes at once), or drops it (replay: the recording's entry of it
    /// runs it at its place). `entry` nil: the input writes its own entry. [loop-thread]
    func input(_ entry: @autoclosure () -> RecordingEntry?, _ body: @escaping () -> Void) {
        switch inputMode {
        case .live: body()
        case .recording(let recorder):
            recorder.queue(entry(), body)
            if !recorder.atGatePoint { handle?.loop.stop() }
        case .replaying: break
        }
    }

    /// Opens the recording (`--record`) or sets up the replay, once the application exists and before
    /// anything is traced or loaded. - Returns: why the run cannot start.
    func startInputMode(_ handle: AppHandle, files: PluginFiles) -> String? {
        switch inputMode {
        case .live:
            guard let path = options.record else { return nil }
            var identities: [PluginFileIdentity] = []
            for file in files.all {
                do throws(RecordingError) { identities.append(try PluginFileIdentity.of(path: file)) } catch {
                    return "--record \(path): \(error.message)"
                }
            }
            let file: RecordingWriter
            do throws(RecordingError) {
                file = try RecordingWriter(path: path, hostVersion: HostVersion.version, arguments: options.arguments,
                                             plugins: identities)
            } catch {
                return "--record: \(error.message)"
            }
            let sink = RecordingSink(file)
            inputMode = .recording(RunRecorder(sink: sink))
            writer.observe({ line, seq, time in
                guard !line.environment else { return }
                sink.append(.trace(RecordedTraceLine(line, seq: seq, time: time)))
            })
            handle.app.foreignInputGate = { [unowned self] foreign in
                input(.foreign(foreign.kind.description)) { foreign.run() }
            }
            return nil
        case .recording: return nil
        case .replaying(let replay):
            let comparison = replay.comparison
            writer.observe({ line, seq, time in
                guard !line.environment else { return }
                comparison.compare(RecordedTraceLine(line, seq: seq, time: time))
            })
            handle.app.foreignInputGate = { foreign in replay.hold(foreign) }
            return nil
        }
    }

    /// One gate point of a recorded run: the loop waits (in real time) for input or for the next
    /// timer's deadline; then the clock is moved to real time — the timers that fell due run, each at
    /// its deadline — and the input that arrived runs, in arrival order, each written to the
    /// recording first and waited for (what it posted, isolated plugins' answers) before the next.
    /// A replay does exactly this from the recording. [loop-thread]
    func recordStep(_ recorder: RunRecorder, _ handle: AppHandle) {
        let loop = handle.loop
        let pacer = loop.nextTimerDeadline.map { deadline in loop.addRealTimeTimer(at: deadline) { [unowned loop] in loop.stop() } }
        do { try loop.run() } catch {
            fputs("lifecycle-host: \(error.message)\n", stderr)
            return finish(HostExit.failure)
        }
        pacer?.cancel()
        guard exitCode == nil else { return }
        recorder.atGatePoint = true
        defer { recorder.atGatePoint = false }
        do throws(ApplicationError) {
            let now = MonotonicInstant.now
            if now > loop.now {
                recorder.append(.clock(nanoseconds: now.nanoseconds - loop.origin.nanoseconds))
                try handle.app.advance(by: now.duration(since: loop.now))
            }
            while exitCode == nil, let (entry, body) = recorder.take() {
                if let entry { recorder.append(entry) }
                body()
                try handle.app.advance(by: .zero)
            }
        } catch {
            fputs("lifecycle-host: \(error.message)\n", stderr)
            finish(HostExit.failure)
        }
    }

    /// The end of a recorded run or a replay: the recording's end line, the replay's verdict. -
    /// Returns: the run's exit status.
    func endInputMode(status: Int32) -> Int32 {
        switch inputMode {
        case .live: return status
        case .recording(let recorder):
            if let problem = recorder.sink.finish(status: status) {
                fputs("lifecycle-host: --record: \(printable(problem))\n", stderr)
            }
            return status
        case .replaying(let replay):
            return replay.verdict(status: status)
        }
    }
}

extension RecordedTraceLine {
    /// A trace line as a recording keeps it: its number, its time on the loop's clock, its fields.
    init(_ line: TraceLine, seq: UInt64, time: Duration?) {
        let nanoseconds = time.map { max(0, $0.nanosecondsClamped) } ?? 0
        self.init(seq: seq, time: UInt64(nanoseconds), kind: line.kind, name: line.name, state: line.state.rawValue,
                  plugin: line.plugin, detail: line.detail, scene: line.scene)
    }
}
