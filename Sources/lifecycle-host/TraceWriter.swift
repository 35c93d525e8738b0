import AppLifecycle
import CLifecycleSystem
@preconcurrency import Glibc
import Synchronization

/// One line of the host's trace: an engine event, or an event of the host itself (a plugin loaded
/// or refused, a signal, an input, an error).
struct TraceLine: Sendable {
    var kind: String
    var name: String
    var state: ApplicationState
    var plugin: String?
    var detail: String?
    /// The scene the event is about (`TraceEvent.scene`, from its typed payload), if any.
    var scene: String?
    /// For a `watchdog` line: the budget overrun (`WatchdogReport.budgetName`: `launch`, `hang`,
    /// `terminate`, …), from the typed report.
    var budget: String?
    /// A line about the host's own IO — its socket, OS-event sources, metrics, systemd, standard
    /// input's errors — which a replay does not open: kept out of a recording's trace (docs/recording.md).
    var environment = false
}

/// Writes the trace to a file descriptor, as aligned text (colour only on a terminal) or as JSON
/// lines. Every line gets `t` (seconds since the host started, monotonic) and `seq` (from 1).
///
/// [thread-safe] One lock around each line: the watchdog thread may write the line that explains
/// why the process is about to exit.
final class TraceWriter: Sendable {
    enum Format: String, Sendable { case text, json }

    private let format: Format
    private let fd: Int32
    private let colour: Bool
    /// The text format for a reader (the demo): rows in narrow columns, none wider than this, a longer
    /// one continued on indented lines (`TextWrap`). Nil: the aligned columns of `columns`, unwrapped.
    private let width: Int?
    private let origin = MonotonicInstant.now
    /// The last line's number, and the loop on a manual clock (`--clock virtual`) whose time the lines
    /// show (`follow`; nil: real time since the writer was made): one lock a line for both.
    private let lines = Mutex<(sequence: UInt64, virtualClock: MainRunLoop?, observer: LineObserver?)>((0, nil, nil))

    /// Sees each line as it is written, with its number and its time on the loop's clock (`follow`'s
    /// loop; nil on real time), under the writer's lock: a recording's trace (`RunRecorder`), a
    /// replay's comparison (`Replay`).
    typealias LineObserver = @Sendable (_ line: TraceLine, _ seq: UInt64, _ loopTime: Duration?) -> Void

    init(format: Format, fd: Int32 = STDOUT_FILENO, colour: Bool? = nil, width: Int? = nil) {
        self.format = format
        self.fd = fd
        self.width = format == .text ? width : nil
        self.colour = colour ?? (format == .text && isatty(fd) == 1 && getenv("NO_COLOR") == nil)
    }

    func write(_ event: TraceEvent) {
        var budget: String?
        if case .watchdogOverrun(let report) = event.payload { budget = report.budgetName }
        write(TraceLine(kind: event.kind.rawValue, name: event.name, state: event.state, plugin: event.observer, detail: event.detail,
                        scene: event.scene, budget: budget))
    }

    /// Times the lines that follow on `loop`'s clock when it is manual (the virtual time since the
    /// loop was made); on the monotonic clock nothing changes. [thread-safe]
    func follow(_ loop: MainRunLoop) {
        guard loop.clock.isManual else { return }
        lines.withLock { $0.virtualClock = loop }
    }

    /// Sets the line observer (nil: none). [thread-safe]
    func observe(_ observer: LineObserver?) {
        lines.withLock { $0.observer = observer }
    }

    func write(_ line: TraceLine) {
        lines.withLock { lines in
            let loopTime = lines.virtualClock?.elapsed
            let time = (loopTime ?? MonotonicInstant.now.duration(since: origin)).secondsDouble
            lines.sequence += 1
            let seq = lines.sequence
            lines.observer?(line, seq, loopTime)
            let text = format == .json ? Self.json(line, time: time, seq: seq) : text(line, time: time)
            writeAll(text + "\n")
            lcs_crash_guard_note_line(seq, Int32(ApplicationState.allCases.firstIndex(of: line.state) ?? 0))
        }
    }

    /// Makes this writer the one a crash of the host's process writes its last line to (the crash
    /// guard, `lcs_crash_guard_install`: kind `crash`, the signal, the plugin whose code faulted).
    func guardCrashes() {
        _ = lcs_crash_guard_install(fd, format == .json ? 1 : 0, origin.nanoseconds)
    }

    /// The header row of the text format (nothing for JSON).
    func writeHeader() {
        guard format == .text else { return }
        if width != nil { return writeAll(Self.narrowColumns(time: "time", state: "state", kind: "kind", rest: "name, plugin, detail") + "\n") }
        writeAll(Self.columns(time: "time", state: "state", kind: "kind", name: "name", plugin: "plugin") + "\n")
    }

    /// A line of words for the reader of the text trace (the demo's steps and summary), wrapped at the
    /// writer's width; nothing in the JSON trace, whose lines are records only. Not a trace line: no
    /// `seq`. [thread-safe]
    func note(_ text: String) {
        guard format == .text else { return }
        let wrapped = width.map { TextWrap.lines(text, width: $0, indent: 2) } ?? [text]
        lines.withLock { _ in writeAll(wrapped.joined(separator: "\n") + "\n") }
    }

    private func writeAll(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            guard let n = try? systemCall("write", { bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) } })
            else { return }
            offset += n
        }
        bytes.removeAll()
    }

    static func columns(time: String, state: String, kind: String, name: String, plugin: String) -> String {
        func pad(_ s: String, _ width: Int) -> String { s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count) }
        return pad(time, 9) + pad(state, 12) + pad(kind, 16) + pad(name, 52) + plugin
    }

    /// The narrow columns of a row for a reader (`width`): time, state and kind, then the rest.
    static func narrowColumns(time: String, state: String, kind: String, rest: String) -> String {
        func pad(_ s: String, _ width: Int) -> String { s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count) }
        return pad(time, 7) + pad(state, 12) + pad(kind, 14) + rest
    }

    /// One row of the text format: every field `printable` (a path or a plugin's words holding a line
    /// feed or an escape sequence stays on its row, uncoloured).
    private func text(_ line: TraceLine, time: Double) -> String {
        var detail = printable(line.detail ?? "")
        if let scene = line.scene.map(printable) { detail = detail.isEmpty ? "{\(scene)}" : "{\(scene)} \(detail)" }
        var row: String
        if let width {
            let rest = [printable(line.name), printable(line.plugin ?? ""), detail].filter { !$0.isEmpty }.joined(separator: "  ")
            let first = Self.narrowColumns(time: String(format3(time)), state: line.state.rawValue, kind: printable(line.kind), rest: rest)
            row = TextWrap.lines(first, width: width, indent: 33).joined(separator: "\n")
        } else {
            row = Self.columns(time: String(format3(time)), state: line.state.rawValue, kind: printable(line.kind), name: printable(line.name),
                               plugin: printable(line.plugin ?? ""))
            if !detail.isEmpty { row += (line.plugin?.isEmpty == false ? "  " : "") + detail }
        }
        while row.last == " " { row.removeLast() }
        guard colour else { return row }
        let code: String = switch line.kind {
        case "state", "scene-state": "1;34"
        case "delegate": "32"
        case "notification": "36"
        case "watchdog", "error", "exit": "1;31"
        case "action", "input": "1"
        case "queued", "discarded", "skipped": "33"
        default: "0"
        }
        return "\u{1B}[\(code)m\(row)\u{1B}[0m"
    }

    static func json(_ line: TraceLine, time: Double, seq: UInt64) -> String {
        var out = "{\"t\":\(format6(time)),\"seq\":\(seq),\"kind\":\(quote(line.kind)),\"name\":\(quote(line.name)),\"state\":\(quote(line.state.rawValue))"
        if let scene = line.scene { out += ",\"scene\":\(quote(scene))" }
        if let plugin = line.plugin, !plugin.isEmpty { out += ",\"plugin\":\(quote(plugin))" }
        if let budget = line.budget { out += ",\"budget\":\(quote(budget))" }
        if let detail = line.detail, !detail.isEmpty { out += ",\"detail\":\(quote(detail))" }
        return out + "}"
    }

    static func quote(_ s: String) -> String { jsonQuoted(s) }
}

/// `1.234` (three decimals).
func format3(_ x: Double) -> String {
    let ms = Int64((x * 1000).rounded())
    let fraction = String(ms % 1000)
    return "\(ms / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
}

/// `1.234567` (six decimals).
func format6(_ x: Double) -> String {
    let us = Int64((x * 1_000_000).rounded())
    let fraction = String(us % 1_000_000)
    return "\(us / 1_000_000).\(String(repeating: "0", count: 6 - fraction.count))\(fraction)"
}
