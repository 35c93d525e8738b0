import AppLifecycle
import HostInput
@preconcurrency import Glibc
import Logging
import LifecycleC
import LifecycleOSEvents
import PluginHost

/// What `lifecycle-host run` was asked to do.
struct RunOptions {
    var plugins: [String] = []
    var pluginFolders: [String] = []
    var script: String?
    /// A scenario given as text instead of a file (the demo), with the name errors use.
    var scriptText: (name: String, text: String)?
    var interactive = false
    var launchOptions = UserInfo()
    var backgroundLaunch = false
    var trace: TraceWriter.Format = .text
    /// `--trace-output FILE`; nil: standard output (see `TraceOutput`).
    var traceOutput: String?
    var configuration = Configuration()
    /// Signals, memory pressure, clock steps.
    var osEvents = HostOSEvents.Options()
    var socketPath: String?
    var socket = true
    /// `--clock`: the application's loop on the monotonic clock (`real`) or a manual one (`virtual`,
    /// where a scenario's `wait` advances it).
    var clock = LoopClock.monotonic
    var timeline: String?
    /// `--trace-export FORMAT=FILE`.
    var traceExport: TraceExport?
    /// Plugins run in processes of their own (`--isolate`, `--restart`, `--isolate-budget`).
    var isolation = HostIsolation()
    /// Every plugin file loaded here is scanned first (`--rescan`, `--scan-budget`).
    var rescan = false
    var scanBudget = PluginScanner.defaultBudget
    /// How plugins are loaded (`--allow-unsafe-plugins`; `--watch` adds `.privateCopy`).
    var pluginLoading: PluginLoadOptions = []
    /// `--watch`: the plugin files are watched and reloaded when they change (`PluginWatch`).
    var watch = false
    /// `--allow-no-plugins`: run on when plugins were asked for and none could be loaded.
    var allowNoPlugins = false
    /// The demo: the text trace in columns no wider than 100, each step's comment before its events,
    /// a closing summary (`DemoNarrator`).
    var narrate = false
    /// What each plugin may make the host keep (`--plugin-quota`).
    var pluginQuotas = PluginQuotas()
    /// `--metrics`, `--metrics-file`, `--metrics-interval`.
    var metrics = MetricsSettings()
    /// `--record FILE`: the run's input written to FILE, each at its place, for `replay`
    /// (docs/recording.md). The loop's clock is then a manual one moved with real time.
    var record: String?
    /// The command line's words after `run`, as given: what a recording keeps of it.
    var arguments: [String] = []
}

/// Runs one application: loads the plugins, launches, then takes commands from the script, the
/// prompt, the control socket and the OS until the application is no longer running.
///
/// Everything happens on the main thread's run loop; the only other threads that act are the
/// watchdog's, which exits the process when the terminate policy kills the application or a
/// termination is overdue, and the pending-signal watch's, which starts the terminate budget when
/// SIGTERM or SIGINT arrives while the main thread is stuck (see `EmergencyExit`).
final class HostRunner: @unchecked Sendable {
    // @unchecked: used on the main thread only (the loop's); closures handed to the loop run there too.
    private(set) var options: RunOptions
    private(set) var writer: TraceWriter
    private(set) var handle: AppHandle?
    private var sources: HostOSEvents?
    /// The plugin files watched (`--watch`).
    var pluginWatch: PluginWatch?
    private var signalWatch: PendingSignalWatch?
    private var server: ControlServer?
    /// Metrics and systemd notifications (`OperatorHooks`).
    private var operators: OperatorHooks?
    private let timeline: TimelineRecorder?
    private var narrator: DemoNarrator?
    private var script: [ScenarioLine] = []
    private var scriptIndex = 0
    /// `--clock virtual`: the `wait` the loop was stopped for, advanced by `run()` once the loop returns.
    private var pendingAdvance: Duration?
    private var scriptRunning = false
    /// The prompt's input (`--interactive`), from when it starts: after the scenario, if there is one.
    private var prompt: PromptInput?
    /// The scenario ended with the application running, and the host terminated it (`scenarioLeftRunning`).
    private var scenarioLeftRunning = false
    private var refusedPlugins = 0
    private var loadedPlugins = 0
    private var failedPlugins = 0
    private(set) var exitCode: Int32?
    private var killed = false
    /// SIGTERM or SIGINT arrived: the run ends once the application is not running, whatever the
    /// scenario or the prompt still had to do.
    private var endRequested = false
    /// How input is taken: as it comes, recorded (`--record`), or from a recording (`replay`).
    var inputMode: InputMode = .live
    /// The prompt, in a replay: started and not yet closed (no terminal is read).
    var replayPromptOpen = false

    init(options: RunOptions, replay: Replay? = nil) {
        self.options = options
        if let replay { inputMode = .replaying(replay) }
        writer = TraceWriter(format: options.trace, width: options.narrate ? Self.narratedWidth : nil)
        timeline = options.timeline == nil && options.traceExport == nil ? nil : TimelineRecorder()
    }

    /// Runs to the end and returns the exit status.
    func run() -> Int32 {
        // A bad scenario stops the run before anything starts.
        do {
            if case .replaying = inputMode {
                // A replay's scenario lines are the recording's, each at its place.
            } else if let path = options.script {
                let text: String
                do throws(WholeFileProblem) { text = try readFile(path, atMost: ScenarioParser.maxFileBytes) } catch {
                    let why = switch error {
                    case .tooLarge: "it is larger than \(ScenarioParser.maxFileBytes) bytes"
                    case .system(let failure): String(cString: strerror(failure.errno))
                    case .notRegular: "not a regular file"  // not asked for: readFile reads pipes too
                    }
                    fputs("lifecycle-host: cannot read scenario \(printable(path)): \(why)\n", stderr)
                    return HostExit.scriptError
                }
                script = try ScenarioParser.parse(text: text, file: path)
            } else if let given = options.scriptText {
                script = try ScenarioParser.parse(text: given.text, file: given.name)
            }
        } catch {
            fputs("\(printable(error.description))\n", stderr)
            return HostExit.scriptError
        }

        // Before any plugin is loaded (or any process started): with the JSON trace on standard output,
        // everything else written there goes to standard error.
        switch TraceOutput.open(options.traceOutput, format: options.trace) {
        case .success(let fd): writer = TraceWriter(format: options.trace, fd: fd, width: options.narrate ? Self.narratedWidth : nil)
        case .failure(let failure):
            fputs("lifecycle-host: \(printable(failure.message))\n", stderr)
            return HostExit.failure
        }

        if options.narrate { narrator = DemoNarrator(writer: writer) }
        var configuration = options.configuration
        // Before the application exists: the engine records into the metrics backend given here.
        var problems: [String] = []
        let operators = OperatorHooks(settings: options.metrics, configuration: &configuration) { problems.append($0) }
        self.operators = operators
        // The runners' server starts now, beside the rest of the host's start, unless `main` started
        // it already (a command line that plainly isolates: `RunValues.plainlyIsolates`): after
        // standard output is settled and systemd's variables are taken out of the environment (the
        // runners get both: their standard descriptors come with each start).
        if options.isolation.selection != .none || options.plugins.map(absolute).contains(where: options.isolation.isolatesFile) {
            IsolationRunner.prepare()
        }
        // iOS kills the app outright; a callback that never returns cannot be unwound, so exit here.
        configuration.onWatchdogKill = { report in EmergencyExit.end(.watchdogKill(report)) }
        // SIGTERM or SIGINT was not honoured in time: the main thread is stuck; end from the watchdog.
        configuration.onTerminationOverdue = { report in EmergencyExit.end(.terminationOverdue(report)) }
        let handle: AppHandle
        do {
            // Recorded or replayed: a manual clock, moved with real time (`recordStep`) or by the
            // recording (`replayAll`).
            handle = try AppHandle(configuration: configuration, clock: inputMode.isLive && options.record == nil ? options.clock : .manual)
        } catch {
            fputs("lifecycle-host: \(error.message)\n", stderr)
            return HostExit.failure
        }
        self.handle = handle
        writer.follow(handle.loop)
        handle.pluginQuotas = options.pluginQuotas
        EmergencyExit.setWriter(writer)
        EmergencyExit.setApplication(handle.app)
        EmergencyExit.arm()
        writer.guardCrashes()
        defer {
            // After `shutdown` (defers run in reverse): a plugin's deinit calling exit() is still caught.
            EmergencyExit.disarm()
            EmergencyExit.setApplication(nil)
        }
        // Shut down before the status is final (below): what happens then — an isolated plugin failing in
        // its deinit — decides it too. The defer covers the early returns.
        var shutDown = false
        defer { if !shutDown { shutdown() } }
        handle.swiftTraceHandler = { [unowned self] event in self.traced(event) }
        let files = pluginFiles(handle)
        if let failure = startInputMode(handle, files: files) {
            fputs("lifecycle-host: \(printable(failure))\n", stderr)
            return HostExit.failure
        }
        writer.writeHeader()
        for problem in problems { hostLine("error", "systemd", detail: problem, environment: true) }

        // Signals first: they are blocked in this thread, and threads started later inherit the mask.
        let sources = HostOSEvents(
            loop: handle.loop,
            options: options.osEvents,
            perform: { [unowned self] command, origin in
                input(.os(command: command.description, origin: RecordedOSOrigin(origin))) { [unowned self] in
                    performOSEvent(command, origin: origin)
                }
            },
            state: { [unowned handle] in handle.app.state },
            device: { [unowned handle] in DeviceState(locked: handle.app.isDeviceLocked, lowPower: handle.app.isLowPowerModeEnabled,
                                                    thermal: handle.app.thermalState) },
            note: { [unowned self] kind, name, detail in self.hostLine(kind, name, detail: detail, environment: true) },
            log: { [unowned self] line in self.hostLine("error", "os-events", detail: line, environment: true) })
        do { try sources.start() } catch {
            hostLine("error", "os-events", detail: error.message, environment: true)
            // Asked for, and impossible: the run does not go on without what it was asked to follow.
            if error.code == .unavailable {
                fputs("lifecycle-host: --session-events: \(error.message)\n", stderr)
                return HostExit.failure
            }
        }
        self.sources = sources
        if options.osEvents.signals { watchTerminationSignals(handle.app) }

        if options.socket {
            let location = options.socketPath.map { (path: $0, folder: SocketFolder?.none) } ?? ControlServer.defaultLocation()
            let path = location.path
            do {
                try location.folder?.prepare()
                server = try ControlServer(path: path, loop: handle.loop) { [unowned self] request, later in self.answer(request, later: later) }
                EmergencyExit.setSocketPath(path)
                hostLine("socket", path, environment: true)
            } catch {
                hostLine("error", "socket", detail: error.message, environment: true)
            }
        }

        operators.started(handle) { [unowned self] kind, name, detail in hostLine(kind, name, detail: detail, environment: true) }
        loadPlugins(handle, files: files)
        if options.watch { watchPlugins(handle) }
        // Plugins were asked for and none loaded: end now, before the launch, unless told to run on.
        if loadedPlugins == 0, refusedPlugins > 0, !options.allowNoPlugins {
            let asked = refusedPlugins == 1 ? "the plugin asked for could not be loaded" : "none of the \(refusedPlugins) plugins asked for could be loaded"
            let message = "\(asked) (refused: see above); the run ends before the launch (--allow-no-plugins runs the application without them)"
            hostLine("error", "no plugins", detail: message)
            fputs("lifecycle-host: \(message)\n", stderr)
            return HostExit.noPlugins
        }

        // A scenario whose first action starts the application itself is not pre-empted.
        let scriptLaunches: Bool = {
            if case .replaying(let replay) = inputMode { return replay.scriptLaunches }
            guard case .action(let action)? = script.first?.command else { return false }
            return action.launchesApplication
        }()
        // The scenario is under way before the host's own launch: a launch that finds no input open
        // would end the run as a scenario that left the application running (none of its lines run).
        scriptRunning = !script.isEmpty
        if case .replaying(let replay) = inputMode { scriptRunning = replay.hasScript }
        if !scriptLaunches {
            perform(.action(.launch(options: options.launchOptions, inBackground: options.backgroundLaunch)), origin: nil)
        }
        if !script.isEmpty { handle.loop.performNext { [unowned self] in self.runScript() } }
        // The scenario first, then the prompt: their lines never interleave.
        if options.interactive, script.isEmpty { startPrompt(handle) }
        finishIfDone()
        switch inputMode {
        case .live: break
        case .recording(let recorder):
            while exitCode == nil { recordStep(recorder, handle) }
        case .replaying(let replay):
            replayAll(replay, handle)
        }
        while exitCode == nil {
            do { try handle.loop.run() } catch {
                fputs("lifecycle-host: \(error.message)\n", stderr)
                exitCode = HostExit.failure
            }
            // `--clock virtual`: a scenario's `wait` stopped the loop; the clock moves here, outside the
            // loop's turns, running what falls due meanwhile (isolated plugins waited for at each
            // deadline), and the scenario goes on.
            if let duration = pendingAdvance, exitCode == nil {
                pendingAdvance = nil
                do { try handle.app.advance(by: duration) } catch {
                    fputs("lifecycle-host: \(error.message)\n", stderr)
                    exitCode = HostExit.failure
                }
                handle.loop.performNext { [unowned self] in self.runScript() }
            }
        }
        shutDown = true
        let failedBefore = failedPlugins
        shutdown()
        // An isolated plugin failing while it was unloaded (traced: `plugin-failed … while handling
        // deinit`) turns a clean end, or one that only left the application running, into 7.
        var status = exitCode ?? HostExit.failure
        if failedPlugins > failedBefore, exitCode == HostExit.ok || exitCode == HostExit.scenarioLeftRunning {
            status = HostExit.isolatedPluginFailed
        }
        narrator?.summary(status: status)
        return endInputMode(status: status)
    }

    /// The demo's widest line (`narrate`).
    static let narratedWidth = 100

    private func shutdown() {
        prompt?.close()
        server?.close()
        EmergencyExit.setSocketPath(nil)
        signalWatch?.stop()
        sources?.stop()
        if let path = options.timeline, let timeline {
            if !writeFile(path, timeline.svg()) {
                fputs("lifecycle-host: cannot write \(printable(path)): \(String(cString: strerror(errno)))\n", stderr)
            }
        }
        if let export = options.traceExport, let timeline { export.write(timeline.events, plugins: handle?.plugins.map(\.id) ?? []) }
        if let handle { handle.app.runMarked("plugin unload", owner: "") { handle.shutdown() } }
        // Last: the plugins' ends trace what they left (a quota's refusals not traced yet, a failure
        // while unloading), and the metrics file's last write counts it.
        if let problem = operators?.finish() { hostLine("error", "metrics", detail: problem, environment: true) }
    }

    /// Starts the terminate budget as soon as SIGTERM or SIGINT is pending, from a thread of its own:
    /// if the main thread is stuck and never reads the signal, the watchdog still ends the process
    /// when the budget runs out (`onTerminationOverdue`). The loop reads and handles the signal as
    /// usual when it can (`endForSignal`).
    private func watchTerminationSignals(_ app: Application) {
        do {
            signalWatch = try PendingSignalWatch(signals: [SIGTERM, SIGINT]) { signo in
                app.armTerminationDeadline(reason: OSOrigin.signal(signo).description)
            }
        } catch {
            hostLine("error", "os-events", detail: error.message)
        }
    }

    // MARK: Plugins

    /// The plugin files asked for (`--plugin`, absolute) and the plugin folders' files (`--plugin-dir`),
    /// each folder listed once.
    struct PluginFiles {
        var paths: [String]
        var folders: [(folder: String, files: Result<[String], PluginRefusal>)]

        /// Every file to load, in load order.
        var all: [String] {
            var files = paths
            for entry in folders { if case .success(let found) = entry.files { files += found } }
            return files
        }
    }

    private func pluginFiles(_ handle: AppHandle) -> PluginFiles {
        PluginFiles(paths: options.plugins.map(absolute),
                    folders: options.pluginFolders.map { ($0, handle.pluginFiles(in: absolute($0))) })
    }

    private func loadPlugins(_ handle: AppHandle, files: PluginFiles) {
        let paths = files.paths, folders = files.folders
        // The runners of every plugin that may run isolated start at once; the loads below take them
        // in order (each init still alone), and what none took is dismissed.
        var isolation = options.isolation
        isolation.settings.loadOptions = options.pluginLoading
        if isolation.selection != .none || paths.contains(where: isolation.isolatesFile) {
            let candidates = files.all
            handle.prestartIsolated(paths: candidates.filter { isolation.selection != .none || isolation.isolatesFile($0) },
                                    settings: isolation.settings)
        }
        defer { handle.discardPrestarted() }
        // Every file loaded in this process is scanned first, named or found in a folder (the registry
        // remembers): a crash in its init is a refusal naming it, not the host's end.
        var scanner = PluginScanner(rescan: options.rescan, budget: options.scanBudget, options: options.pluginLoading)
        for path in paths {
            if let refusal = folderRefusal(path, instead: "use --plugin-dir \(path) to load the plugins in it") {
                refused(refusal)
            } else {
                load(path, in: handle, scanner: &scanner)
            }
        }
        for entry in folders {
            switch entry.files {
            case .success(let files): for file in files { load(file, in: handle, scanner: &scanner) }
            case .failure(let refusal): refused(refusal)
            }
        }
        if let problem = scanner.save() { hostLine("error", "plugin registry", detail: problem) }
    }

    /// Loads one plugin, in this process or isolated in its own (`--isolate`). One loaded in this
    /// process is scanned first (the registry remembers): a crash in its init refuses it, naming it,
    /// instead of ending the host. An isolated one runs its init in a process of its own anyway.
    private func load(_ path: String, in handle: AppHandle, scanner: inout PluginScanner) {
        var isolation = options.isolation
        isolation.settings.loadOptions = options.pluginLoading
        do throws(PluginRefusal) {
            var loaded: LoadedPlugin?
            if isolation.isolatesFile(path) {
                loaded = try handle.loadIsolatedPlugin(path: path, settings: isolation.settings)
            } else if isolation.selection != .none {
                // Isolated by id: its process reads the descriptor; another id is loaded here instead.
                loaded = try handle.loadIsolatedPlugin(path: path, settings: isolation.settings, onlyIf: isolation.isolates(id:))
            }
            let plugin: LoadedPlugin
            if let loaded { plugin = loaded } else {
                if let refusal = scanner.check(path) { throw refusal }
                // Loading runs the plugin's init here: marked as a callback (named by the path until the
                // plugin has an id), so that the hang budget watches it and an exit() in it is traced as
                // the plugin's; its metrics are labelled with the id once read. An isolated plugin's init
                // is policed in its process (--isolate-budget).
                plugin = try handle.app.runLoading(path: path) { () throws(PluginRefusal) in
                    try handle.loadPlugin(path: path, options: options.pluginLoading)
                }
            }
            loadedPlugins += 1
            narrator?.loaded(plugin.id)
            EmergencyExit.addPluginImage(id: plugin.id, ranges: plugin.imageRanges)
            hostLine("plugin", "loaded", plugin: plugin.id, detail: "\(plugin.version) \(plugin.path)\(plugin.isIsolated ? " (isolated)" : "")")
            for need in PluginNeed.unmet(by: options.configuration, for: plugin.implementedMethods) {
                hostLine("warning", need.name, plugin: plugin.id, detail: need.offSentence(plugin: plugin.id))
                fputs("lifecycle-host: \(need.offSentence(plugin: plugin.id))\n", stderr)
            }
        } catch {
            refused(error)
        }
    }

    private func refused(_ refusal: PluginRefusal) {
        refusedPlugins += 1
        operators?.pluginRefused()
        hostLine("error", "plugin refused", plugin: refusal.id, detail: refusal.message)
        fputs("lifecycle-host: plugin refused: \(printable(refusal.message))\n", stderr)
    }

    // MARK: Commands

    /// Runs one command; returns the error message if it failed. `origin` nil: the host's own launch.
    @discardableResult
    func perform(_ command: HostCommand, origin: CommandOrigin?) -> String? {
        guard let handle else { return "the application is not ready" }
        // Where a command came from, unless the engine's own `action` line already says it all.
        if let origin {
            var fromScriptAction = false
            if case .action = command, origin.isScript { fromScriptAction = true }
            if !fromScriptAction { hostLine("input", command.description, detail: origin.description) }
        }
        let failure: String?
        if case .reload(let id, let path, let force) = command {
            failure = reload(id, path: path, force: force, in: handle)
        } else {
            failure = command.perform(on: handle.app, fromScript: origin?.isScript == true) { name, info in
                hostLine("post", name.rawValue, detail: info.isEmpty ? nil : info.description)
            }
        }
        if let failure, origin?.isScript != true {
            hostLine("error", command.description, detail: failure)
        }
        operators?.performed(handle.app.state)
        finishIfDone()
        return failure
    }

    /// An OS event. Memory pressure while suspended does what it does on iOS: a critical level
    /// purges the application, a warning reaches no code (a suspended application runs none).
    /// (`origin` is the words the OS-event sources give; they own that format.)
    func performOSEvent(_ command: HostCommand, origin: OSOrigin) {
        if case .signal(let signo, _) = origin, signo == SIGTERM || signo == SIGINT {
            endForSignal(command, origin: origin)
            return
        }
        if case .pressure(let level) = origin, handle?.app.state == .suspended {
            if level == .critical {
                perform(.action(.purge), origin: .os(origin))
            } else {
                hostLine("input", command.description, detail: "\(origin): ignored, the application is suspended")
            }
            return
        }
        perform(command, origin: .os(origin))
    }

    /// SIGTERM or SIGINT: the terminate budget starts (if the pending-signal watch did not start it
    /// already), a running application is terminated, and the run ends as soon as it is not running —
    /// the rest of the scenario is not run, the prompt is not read any more.
    private func endForSignal(_ command: HostCommand, origin: OSOrigin) {
        guard let handle else { return }
        handle.app.armTerminationDeadline(reason: origin.description)
        operators?.stopping()
        endRequested = true
        if handle.app.state == .notRunning {
            hostLine("input", command.description, detail: "\(origin): the application is not running; the run ends")
            finishIfDone()
        } else {
            perform(command, origin: .os(origin))
        }
    }

    private func runScript() {
        guard handle != nil, exitCode == nil else { return }
        guard scriptIndex < script.count else {
            return input(.scriptEnd) { [unowned self] in endScript() }
        }
        let line = script[scriptIndex]
        scriptIndex += 1
        input(.script(location: line.location, text: line.text)) { [unowned self] in
            narrator?.step(line)
            guard performScriptLine(line.command, location: line.location, text: line.text) else { return }
            scheduleScript(after: line.command)
        }
    }

    /// The scenario has no more lines: the prompt follows (`--interactive`), or the run may end.
    func endScript() {
        guard let handle else { return }
        scriptRunning = false
        if options.interactive { startPrompt(handle) }
        finishIfDone()
    }

    /// Performs one scenario line (`text` at `location`, parsed as `command`). - Returns: false when it
    /// failed: the run then ends with status 2.
    func performScriptLine(_ command: HostCommand, location: String, text: String) -> Bool {
        guard let failure = perform(command, origin: .script(location: location)) else { return true }
        hostLine("error", text.trimmingWhitespace(), detail: "\(location): \(failure)")
        fputs("\(printable(location)): \(failure)\n", stderr)
        finish(HostExit.scriptError)
        return false
    }

    /// Runs the scenario's next line after `command`: once its `wait` has passed, else on the next turn.
    private func scheduleScript(after command: HostCommand) {
        guard let handle else { return }
        if case .wait(let duration) = command {
            if options.clock.isManual {
                // The loop returns after this callback; `run()` advances the clock, then goes on.
                pendingAdvance = duration
                handle.loop.stop()
            } else {
                handle.loop.addTimer(after: duration) { [unowned self] in self.runScript() }
            }
        } else {
            // One loop turn between lines: posts from other threads (a slice of them), signals and
            // sockets interleave; the next line never waits behind a flood of posts (`performNext`).
            handle.loop.performNext { [unowned self] in self.runScript() }
        }
    }

    /// Ends the run once the application has stopped and no more input is expected. A scenario that
    /// ends with the application running (and no prompt to follow) does not leave the host running
    /// without a word: the host says so and terminates the application (`scenarioLeftRunning`).
    func finishIfDone() {
        guard let handle, exitCode == nil else { return }
        if killed { return finish(HostExit.watchdogKill) }
        let inputOpen = scriptRunning || prompt?.isOpen == true || replayPromptOpen
        if handle.app.state != .notRunning {
            if !inputOpen, !endRequested, !options.interactive, !scenarioLeftRunning, let file = scenarioName {
                scenarioLeftRunning = true
                fputs("lifecycle-host: \(printable(file)) ended with the application \(handle.app.state): the host terminates it "
                      + "(end the scenario with 'terminate' to end the run cleanly; exit status \(HostExit.scenarioLeftRunning))\n", stderr)
                perform(.action(.terminate), origin: .scriptEnded(file: file))
            }
            return
        }
        guard endRequested || !inputOpen else { return }
        finish(refusedPlugins > 0 ? HostExit.pluginRefused : failedPlugins > 0 ? HostExit.isolatedPluginFailed
               : scenarioLeftRunning ? HostExit.scenarioLeftRunning : HostExit.ok)
    }

    /// The scenario's name as errors give it (its path, or the demo's `demo.scenario`); nil without one.
    private var scenarioName: String? { options.script ?? options.scriptText?.name }

    func finish(_ code: Int32) {
        guard exitCode == nil else { return }
        exitCode = code
        handle?.loop.stop()
    }

    // MARK: Trace

    private func traced(_ event: TraceEvent) {
        writer.write(event)
        narrator?.record(event)
        EmergencyExit.noteState(event.state)
        timeline?.record(event)
        if case .pluginFailed = event.payload { failedPlugins += 1 }
        if case .stateChanged(_, let to, _) = event.payload {
            sources?.applicationStateChanged(to: to)
            if HostExit.isWatchdogKill(event) { killed = true }
            if to == .notRunning {
                handle?.loop.perform { [weak self] in self?.input(.finishCheck) { [weak self] in self?.finishIfDone() } }
            }
        }
    }

    /// A line of the host's own (not the engine's) in the trace.
    /// `environment`: a line about the host's own IO, which a replay does not open (`TraceLine.environment`).
    func hostLine(_ kind: String, _ name: String, plugin: String? = nil, detail: String? = nil, environment: Bool = false) {
        let state = handle?.app.state ?? .notRunning
        operators?.hostLine(kind: kind)
        writer.write(TraceLine(kind: kind, name: name, state: state, plugin: plugin, detail: detail, environment: environment))
    }

    // MARK: The prompt

    private func startPrompt(_ handle: AppHandle) {
        // A replay's typed lines are the recording's: no terminal is read.
        if case .replaying = inputMode { return replayPromptOpen = true }
        guard prompt == nil else { return }
        do {
            prompt = try PromptInput(loop: handle.loop) { [unowned self] event in self.typed(event) }
        } catch {
            hostLine("error", "stdin", detail: error.message, environment: true)
        }
    }

    private func typed(_ event: PromptInput.Event) {
        switch event {
        case .line(let line): input(.typed(line)) { [unowned self] in handleTyped(line) }
        case .tooLong:
            let message = "line too long (at most \(LineReader.maxLineBytes) bytes); ignored"
            hostLine("error", "stdin", detail: message, environment: true)
            fputs("error: \(message)\n", stderr)
        case .closed: input(.stdinClosed) { [unowned self] in endOfInput(typedQuit: false) }
        }
    }

    func handleTyped(_ line: String) {
        let trimmed = line.trimmingWhitespace()
        switch trimmed {
        case "": break
        // `wait` is for scenario files: the prompt refuses it, so its help does not list it.
        case "help": fputs(ScenarioParser.help(omitting: ["wait"]) + "\n  help | quit\n", stderr)
        case "quit", "exit":
            endOfInput(typedQuit: true)
            return
        default:
            do {
                if let command = try ScenarioParser.parse(line: trimmed) {
                    if let failure = perform(command, origin: .stdin) { fputs("error: \(failure)\n", stderr) }
                }
            } catch {
                hostLine("error", trimmed, detail: error.message)
                fputs("error: \(error.message)\n", stderr)
            }
        }
        if exitCode == nil { prompt?.showPrompt() }
    }

    /// End of input (EOF, or `quit` typed): terminate a running application, then finish. At the end
    /// of input (not a `quit`) the host says so on standard error, as the trace's `input` line does.
    func endOfInput(typedQuit: Bool) {
        prompt?.close()
        replayPromptOpen = false
        if let handle, handle.app.state != .notRunning {
            if !typedQuit { fputs("lifecycle-host: standard input closed with the application \(handle.app.state): the host terminates it\n", stderr) }
            perform(.action(.terminate), origin: .stdinClosed)
        }
        finishIfDone()
    }

    // MARK: The control socket

    /// One request line → one response line. Protocol: docs/host.md.
    /// One request line → its response line now, or (recording) at the next gate point through `later`.
    private func answer(_ request: String, later: () -> PendingReply) -> String? {
        guard case .recording(let recorder) = inputMode else { return answerNow(request) }
        let reply = later()
        input(nil) { [unowned self] in
            let response = answerNow(request)
            recorder.append(.socket(request: request, response: response))
            reply.send(response)
        }
        return nil
    }

    /// One request line → one response line. Protocol: docs/host.md.
    func answerNow(_ request: String) -> String {
        ControlRequest(line: request).response(status: status, perform: { perform($0, origin: .socket) },
                                               state: { handle?.app.state ?? .notRunning })
    }

    /// The state of the host as one JSON object.
    func status() -> String {
        guard let handle else { return "error: not ready" }
        let app = handle.app
        func quote(_ s: String) -> String { TraceWriter.quote(s) }
        let plugins = handle.plugins.map { p in
            "{\"id\":\(quote(p.id)),\"version\":\(quote(p.version)),\"path\":\(quote(p.path)),"
                + "\"observes\":[\(p.observedNames.map { quote($0.rawValue) }.joined(separator: ","))],"
                + "\"delegates\":[\(p.implementedMethods.map { quote($0.selector) }.joined(separator: ","))],\"isolated\":\(p.isIsolated)}"
        }
        let queued = app.queuedNotifications.map { "{\"name\":\(quote($0.name.rawValue)),\"count\":\($0.count)}" }
        let tasks = app.backgroundTasks.map {
            "{\"id\":\($0.id.rawValue),\"name\":\(quote($0.name)),\"owner\":\(quote($0.owner))}"
        }
        let remaining = app.backgroundTimeRemaining.map { format3($0.secondsDouble) } ?? "null"
        // A scene-based application's connected scenes, in connection order (absent otherwise).
        let scenes = app.isSceneBased
            ? ",\"scenes\":[" + app.scenes.map { "{\"id\":\(quote($0.id)),\"state\":\(quote($0.state.rawValue))}" }.joined(separator: ",") + "]"
            : ""
        return "{\"state\":\(quote(app.state.rawValue)),\"locked\":\(app.isDeviceLocked),\"pid\":\(getpid()),"
            + "\"plugins\":[\(plugins.joined(separator: ","))],\"queued\":[\(queued.joined(separator: ","))],"
            + "\"backgroundTasks\":[\(tasks.joined(separator: ","))],\"backgroundTimeRemaining\":\(remaining)\(scenes)}"
    }
}
