import ArgumentParser
@preconcurrency import Glibc
import HostInput

/// `lifecycle-host replay FILE`: runs a recording (`run --record FILE`) again on a virtual clock and
/// compares its trace and exit status with the recording's (docs/recording.md).
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Run a recording ('run --record FILE') again on a virtual clock and compare its trace with the recorded one.",
        discussion: """
            Exits with the recorded run's status when the replay's trace and status are the recording's, 10 when they \
            part (the first difference on standard error; --diff shows it in context), 1 when the recording or a plugin \
            file cannot be used. See docs/recording.md.
            """)

    @Argument(help: ArgumentHelp("A recording written by 'lifecycle-host run --record FILE'.", valueName: "FILE"), completion: .file())
    var file: String

    @Option(name: .customLong("plugin"), help: ArgumentHelp(
        "A new build of a recorded plugin, replayed in place of the recorded file of the same file name (or of the only "
            + "one). Repeatable.", valueName: "FILE"), completion: .file(extensions: ["so"]))
    var plugins: [String] = []

    @Flag(name: .customLong("diff"), help: "Print where the replay's trace parts from the recording's, in context, instead of the trace.")
    var diff = false

    @Flag(name: .customLong("allow-changed"), help: "Replay even when a recorded plugin's file has changed since (else refused, naming both hashes).")
    var allowChanged = false

    @Option(name: .customLong("trace"), help: ArgumentHelp("The replay's trace format: text or json (default: the recorded run's).",
                                                           valueName: "FORMAT"))
    var trace: String?

    @Option(name: .customLong("trace-output"), help: ArgumentHelp("Write the replay's trace to FILE.", valueName: "FILE"))
    var traceOutput: String?

    func validate() throws {
        if let trace, TraceWriter.Format(rawValue: trace) == nil { throw ValidationError("--trace must be text or json, not '\(trace)'") }
    }

    func run() throws {
        let code = ReplaySetup(command: self).run()
        if code != 0 { throw ExitCode(code) }
    }
}

/// What a replay needs before it runs: the recording read and checked, its command line's options
/// with the host's own IO off, the plugin files checked against their recorded identities.
struct ReplaySetup {
    let command: ReplayCommand

    func run() -> Int32 {
        let recording: Recording
        do throws(RecordingError) { recording = try Recording.read(path: command.file) } catch {
            return refuse(error.message)
        }
        var options: RunOptions
        do {
            options = try Self.options(recording.arguments)
        } catch {
            return refuse("\(command.file): its command line (run \(recording.arguments.joined(separator: " "))) is refused here: "
                          + "\(Run.message(for: error))")
        }
        switch pluginFiles(recording) {
        case .success(let files): options.plugins = files
        case .failure(let refusal): return refuse(refusal.message)
        }
        // No IO of the host's own: no socket, no OS events, no prompt, no files written for the
        // recorded run (its timeline, export, metrics); the trace as asked here.
        options.pluginFolders = []
        options.socket = false
        options.osEvents.signals = false
        options.osEvents.pressure = false
        options.osEvents.clock = false
        options.osEvents.session = false
        options.timeline = nil
        options.traceExport = nil
        options.metrics = MetricsSettings()
        options.record = nil
        options.narrate = false
        if let trace = command.trace, let format = TraceWriter.Format(rawValue: trace) { options.trace = format }
        options.traceOutput = command.traceOutput ?? (command.diff ? "/dev/null" : nil)
        let replay = Replay(recording: recording, file: command.file, report: command.diff ? .context : .summary)
        return HostRunner(options: options, replay: replay).run()
    }

    /// The recorded command line's options, parsed as `run` parses them.
    static func options(_ arguments: [String]) throws -> RunOptions {
        if let values = RunValues.parse(["run"] + arguments) { return try values.options() }
        return try Run.parse(Array(IsolateOption.spelledForParser(["run"] + arguments).dropFirst())).values.options()
    }

    /// A plugin file that cannot be replayed as recorded.
    struct Refusal: Error { let message: String }

    /// The files to load, in the recorded order: each recorded file, checked to be the one recorded
    /// (size, SHA-256), or its replacement given with `--plugin`.
    func pluginFiles(_ recording: Recording) -> Result<[String], Refusal> {
        var replacement: [Int: String] = [:]
        for path in command.plugins {
            let name = Self.fileName(path)
            let matches = recording.plugins.indices.filter { Self.fileName(recording.plugins[$0].path) == name }
            let index: Int
            if matches.count == 1 {
                index = matches[0]
            } else if matches.isEmpty, recording.plugins.count == 1 {
                index = 0
            } else {
                let names = recording.plugins.map { Self.fileName($0.path) }.joined(separator: ", ")
                return .failure(Refusal(message: "--plugin \(path): the recording has \(matches.isEmpty ? "no" : "more than one") plugin file named "
                                        + "\(name) (its plugin files: \(names.isEmpty ? "none" : names))"))
            }
            guard replacement[index] == nil else {
                return .failure(Refusal(message: "--plugin \(path): \(recording.plugins[index].path) is replaced twice"))
            }
            replacement[index] = absolute(path)
        }
        var files: [String] = []
        for (index, recorded) in recording.plugins.enumerated() {
            let path = replacement[index] ?? recorded.path
            let now: PluginFileIdentity
            do throws(RecordingError) { now = try PluginFileIdentity.of(path: path) } catch {
                let hint = replacement[index] == nil ? " (give the file's new place with --plugin)" : ""
                return .failure(Refusal(message: "\(error.message)\(hint)"))
            }
            if replacement[index] != nil {
                fputs("lifecycle-host replay: \(printable(path)) (sha256 \(now.sha256)) in place of \(printable(recorded.path)) "
                      + "(sha256 \(recorded.sha256))\n", stderr)
            } else if now.sha256 != recorded.sha256 || now.size != recorded.size {
                let change = "the plugin file \(recorded.path) has changed since it was recorded: recorded sha256 \(recorded.sha256)"
                    + "\(Self.buildID(recorded)), now sha256 \(now.sha256)\(Self.buildID(now))"
                guard command.allowChanged else {
                    return .failure(Refusal(message: change + "; --allow-changed replays it anyway, --plugin FILE replays a new build on purpose"))
                }
                fputs("lifecycle-host replay: \(printable(change)); replayed anyway (--allow-changed)\n", stderr)
            }
            files.append(path)
        }
        return .success(files)
    }

    private static func buildID(_ identity: PluginFileIdentity) -> String { identity.buildID.map { " (build-id \($0))" } ?? "" }

    private static func fileName(_ path: String) -> String { path.split(separator: "/").last.map(String.init) ?? path }

    private func refuse(_ message: String) -> Int32 {
        fputs("lifecycle-host replay: \(printable(message))\n", stderr)
        return HostExit.failure
    }
}
