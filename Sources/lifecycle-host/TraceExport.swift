// `--trace-export FORMAT=FILE`: after the run, the trace in a format other tools open.
import AppLifecycle
import ArgumentParser
@preconcurrency import Glibc

/// Where and how `run` (and `demo`) export the run's trace when it ends.
///
/// Guarantees: the value is checked when the command line is read (a format the host knows, a file
/// name); the file is written once, when the run ends, through a temporary file in the same folder
/// renamed over it, so it is either the whole export or not there (a failure is said on standard
/// error and leaves any earlier file as it was). A run ended by a watchdog kill, a crash or an
/// overdue termination exits at once and writes none (as the timeline).
struct TraceExport: Equatable {
    enum Format: String, CaseIterable {
        /// Chrome trace-event JSON (`ChromeTrace`).
        case chrome
    }

    let format: Format
    let path: String

    /// `chrome=FILE`.
    static func parse(_ text: String) throws -> TraceExport {
        let names = Format.allCases.map(\.rawValue)
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else {
            throw ValidationError("--trace-export expects FORMAT=FILE (chrome=run.json), got '\(printable(text))'")
        }
        guard let format = Format(rawValue: parts[0]) else {
            throw ValidationError("--trace-export: unknown format '\(printable(parts[0]))'\(didYouMean(parts[0], among: names)) (the formats: "
                                  + names.joined(separator: ", ") + ")")
        }
        guard !parts[1].isEmpty else { throw ValidationError("--trace-export \(format.rawValue)= needs a file name") }
        return TraceExport(format: format, path: parts[1])
    }

    /// The export of `events` (the engine's events of the run, in order); `plugins`: the ids of the
    /// plugins loaded, in load order.
    func render(_ events: [TraceEvent], plugins: [String]) -> String {
        switch format {
        case .chrome: return ChromeTrace.json(events, plugins: plugins)
        }
    }

    /// Writes the export of `events`; on failure, says so on standard error (`lifecycle-host: cannot
    /// write the chrome trace export FILE: REASON`) and returns false.
    @discardableResult
    func write(_ events: [TraceEvent], plugins: [String]) -> Bool {
        guard HostMetrics.write(render(events, plugins: plugins), to: path) else {
            fputs("lifecycle-host: cannot write the \(format.rawValue) trace export \(printable(path)): \(String(cString: strerror(errno)))\n", stderr)
            return false
        }
        return true
    }
}
