import AppLifecycle
import HostInput
import ArgumentParser
@preconcurrency import Glibc
import LifecycleC
import PluginHost

/// `lifecycle-host`: runs an application's iOS life cycle with observer plugins.
@main
struct LifecycleHost: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lifecycle-host",
        abstract: "Runs the iOS application life cycle with observer plugins.",
        discussion: HostExit.summary,
        version: HostVersion.text,
        subcommands: [Run.self, Demo.self, Check.self, Validate.self, ReplayCommand.self, Send.self, Status.self])
}

/// Options shared by `run` and `demo`.
struct EngineOptions: ParsableArguments {
    @Option(name: .customLong("trace"), help: ArgumentHelp("Trace format: text or json.", valueName: "FORMAT"),
            completion: .list(["text", "json"]))
    var trace: String = EngineValues().trace

    @Option(name: .customLong("trace-output"), help: ArgumentHelp(
        "Write the trace to FILE (created or truncated) instead of standard output; '-': standard output. With the JSON trace on "
            + "standard output, plugins' own standard output goes to standard error.", valueName: "FILE"), completion: .file())
    var traceOutput: String?

    @Option(name: .customLong("budget"), help: ArgumentHelp("A time budget (repeatable): seconds, or with a unit (250ms, 2s, 1m); at most 9223372036 s.",
                                                         discussion: "NAME: launch, did-enter-background, will-terminate, completion, background-task, expiration-warning, "
                                                             + "hang (one callback outside those phases, default 5), terminate (SIGTERM to exit, default "
                                                             + "did-enter-background + will-terminate + hang).",
                                                         valueName: "NAME=SECONDS"),
            completion: .list(EngineValues.budgetNames.map { $0 + "=" }))
    var budgets: [String] = []

    @Option(name: .customLong("archive"), help: ArgumentHelp("Folder for state-preservation archives.", valueName: "DIR"), completion: .directory)
    var archive: String?

    @Option(name: .customLong("watchdog"), help: ArgumentHelp("Watchdog policy: terminate (as iOS) or report.", valueName: "POLICY"),
            completion: .list(["terminate", "report"]))
    var watchdog: String = EngineValues().watchdog

    @Option(name: .customLong("background-mode"), help: ArgumentHelp(
        "A declared background mode (repeatable): audio, location, voip, fetch, remote-notification, …", valueName: "MODE"),
            completion: .list(Configuration.BackgroundModes.allNames))
    var backgroundModes: [String] = []

    @Flag(name: .customLong("exits-on-suspend"), help: "UIApplicationExitsOnSuspend: leaving the foreground terminates.")
    var exitsOnSuspend = false

    @Option(name: .customLong("timeline"), help: ArgumentHelp("After the run, write a picture of it (SVG).", valueName: "FILE"),
            completion: .file(extensions: ["svg"]))
    var timeline: String?

    @Option(name: .customLong("trace-export"), help: ArgumentHelp(
        "After the run, write its trace in FORMAT to FILE: chrome (trace-event JSON for Perfetto and chrome://tracing).",
        valueName: "FORMAT=FILE"), completion: .list(["chrome="]))
    var traceExport: String?

    @Option(name: .customLong("scenes"), help: ArgumentHelp(
        "A scene-based application (UIApplicationSceneManifest): a launch connects the scene 'main'. '--scenes' alone: several scenes "
            + "at a time; '--scenes single': one (UIApplicationSupportsMultipleScenes = NO).", valueName: "single"),
            completion: .list(["single"]))
    var scenes: String?

    @Option(name: .customLong("memory-warning-limit"), help: ArgumentHelp(
        "After N memory warnings in a row without relief (memory-warning normal), the next terminates the app outright (1 to 1000; default never).",
        valueName: "N"))
    var memoryWarningLimit: String?

    var values: EngineValues {
        EngineValues(trace: trace, traceOutput: traceOutput, budgets: budgets, archive: archive, watchdog: watchdog, backgroundModes: backgroundModes,
                     exitsOnSuspend: exitsOnSuspend, timeline: timeline, traceExport: traceExport, scenes: scenes,
                     memoryWarningLimit: memoryWarningLimit)
    }

    func apply(to options: inout RunOptions) throws { try values.apply(to: &options) }
}

/// The values of `EngineOptions` as plain data: `LifecycleHost.main`'s fast path fills them without
/// ArgumentParser. The defaults here are the options' defaults.
struct EngineValues: Equatable {
    var trace = "text"
    /// `--trace-output`: a file, or nil or "-" for standard output.
    var traceOutput: String?
    var budgets: [String] = []
    var archive: String?
    var watchdog = "terminate"
    var backgroundModes: [String] = []
    var exitsOnSuspend = false
    var timeline: String?
    /// `--trace-export FORMAT=FILE`, as given (checked by `apply`: `TraceExport.parse`).
    var traceExport: String?
    /// `--scenes`: nil (not scene-based), "multiple" (`--scenes` alone) or "single".
    var scenes: String?
    /// `--memory-warning-limit`, as given (checked by `apply`).
    var memoryWarningLimit: String?

    /// The names `--budget NAME=…` takes (each also has a camel-case spelling).
    static let budgetNames = ["launch", "did-enter-background", "will-terminate", "completion", "background-task", "expiration-warning", "hang",
                              "terminate"]

    func apply(to options: inout RunOptions) throws {
        guard let format = TraceWriter.Format(rawValue: trace) else {
            throw ValidationError("--trace must be text or json, not '\(trace)'\(didYouMean(trace, among: ["text", "json"]))")
        }
        options.trace = format
        if let traceOutput, traceOutput.isEmpty { throw ValidationError("--trace-output needs a file name, or '-' for standard output") }
        options.traceOutput = traceOutput == "-" ? nil : traceOutput
        var configuration = Configuration()
        guard let policy = Configuration.WatchdogPolicy(name: watchdog) else {
            throw ValidationError("--watchdog must be terminate or report, not '\(watchdog)'\(didYouMean(watchdog, among: ["terminate", "report"]))")
        }
        configuration.watchdogPolicy = policy
        for name in backgroundModes {
            guard let mode = Configuration.BackgroundModes(name: name) else {
                let names = Configuration.BackgroundModes.allNames
                throw ValidationError("unknown background mode '\(name)'\(didYouMean(name, among: names)) (\(names.joined(separator: ", ")))")
            }
            configuration.backgroundModes.insert(mode)
        }
        configuration.exitsOnSuspend = exitsOnSuspend
        switch scenes {
        case nil: break
        case "multiple": configuration.sceneManifest = SceneManifest()
        case "single": configuration.sceneManifest = SceneManifest(supportsMultipleScenes: false)
        case let other?:
            throw ValidationError("--scenes takes 'single' (one scene at a time) or nothing (several), not '\(other)'"
                                  + didYouMean(other, among: ["single"]))
        }
        configuration.archiveDirectory = archive.map(absolute)
        if let memoryWarningLimit {
            // Range-checked as text first: no conversion traps on a huge number.
            guard memoryWarningLimit.count <= 4, let limit = Int(memoryWarningLimit), (1...Int(ConfigRanges.maximumMemoryWarningLimit)).contains(limit) else {
                throw ValidationError("--memory-warning-limit must be a whole number from 1 to \(ConfigRanges.maximumMemoryWarningLimit), not '\(memoryWarningLimit)'")
            }
            configuration.memoryWarningLimit = limit
        }
        for budget in budgets {
            let parts = budget.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw ValidationError("--budget expects NAME=SECONDS, got '\(budget)'") }
            // Range-checked before it becomes a duration (`--budget launch=1e10` used to trap).
            let duration: Duration
            do { duration = try Seconds.parse(parts[1], allowsZero: false) } catch {
                throw ValidationError("--budget \(budget): \(error.message)")
            }
            switch parts[0] {
            case "launch": configuration.budgets.launch = duration
            case "did-enter-background", "didEnterBackground": configuration.budgets.didEnterBackground = duration
            case "will-terminate", "willTerminate": configuration.budgets.willTerminate = duration
            case "completion", "completion-handler", "completionHandler": configuration.budgets.completionHandler = duration
            case "background-task", "backgroundTask": configuration.budgets.backgroundTask = duration
            case "expiration-warning", "expirationWarning": configuration.budgets.expirationWarning = duration
            case "hang": configuration.budgets.hang = duration
            case "terminate": configuration.budgets.terminate = duration
            default:
                throw ValidationError("unknown budget '\(parts[0])'\(didYouMean(parts[0], among: Self.budgetNames)) (\(Self.budgetNames.joined(separator: ", ")))")
            }
        }
        options.configuration = configuration
        options.timeline = timeline
        options.traceExport = try traceExport.map(TraceExport.parse)
    }
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load plugins, launch, then take actions from a scenario, the prompt, the control socket and the OS.")

    @Option(name: .customLong("plugin"), help: ArgumentHelp("A plugin .so (repeatable).", valueName: "FILE"), completion: .file(extensions: ["so"]))
    var plugins: [String] = []

    @Option(name: .customLong("plugin-dir"), help: ArgumentHelp("A folder of plugin .so files (repeatable).", valueName: "DIR"), completion: .directory)
    var pluginDirs: [String] = []

    @Option(name: .customLong("script"), help: ArgumentHelp("A scenario file: one action a line.", valueName: "FILE"), completion: .file())
    var script: String?

    @Flag(name: .customLong("interactive"), help: "Read actions from standard input ('help' lists them).")
    var interactive = false

    @Option(name: .customLong("launch-option"), help: ArgumentHelp("A launch option (repeatable).", valueName: "KEY=VALUE"))
    var launchOptions: [String] = []

    @Flag(name: .customLong("background-launch"), help: "Launch into the background.")
    var backgroundLaunch = false

    @Flag(name: .customLong("no-signals"), help: "Do not map SIGTSTP, SIGCONT, SIGTERM, SIGINT, SIGUSR1 to actions.")
    var noSignals = false

    @Flag(name: .customLong("no-pressure"), help: "Do not watch memory pressure (PSI).")
    var noPressure = false

    @Option(name: .customLong("pressure-file"), help: ArgumentHelp(
        "The PSI file to watch (default: the cgroup's memory.pressure, else /proc/pressure/memory).", valueName: "FILE"), completion: .file())
    var pressureFile: String?

    @Option(name: .customLong("pressure-warning"), help: ArgumentHelp(
        "PSI trigger for a 'warning' memory warning (window: a multiple of 2 s).", valueName: "TRIGGER"))
    var pressureWarning: String = RunValues().pressureWarning

    @Option(name: .customLong("pressure-critical"), help: ArgumentHelp("PSI trigger for a 'critical' memory warning.", valueName: "TRIGGER"))
    var pressureCritical: String = RunValues().pressureCritical

    @Option(name: .customLong("pressure-delay"), help: ArgumentHelp(
        "Arm the PSI triggers this long after start: seconds, or with a unit (default 0.25; at most 86400; a shorter run never opens them).",
        valueName: "SECONDS"))
    var pressureDelay: String?

    @Flag(name: .customLong("no-clock"), help: "Do not watch for clock steps.")
    var noClock = false

    @Flag(name: .customLong("session-events"), help: ArgumentHelp(
        "Follow the session: logind's lock and sleep, the power-saver profile, the thermal zones, as lock, unlock, low-power and thermal (needs libsystemd.so.0)."))
    var sessionEvents = false

    @Option(name: .customLong("system-bus"), help: ArgumentHelp(
        "The D-Bus address --session-events connects to (default: the system bus).", valueName: "ADDRESS"))
    var systemBus: String?

    @Option(name: .customLong("thermal-folder"), help: ArgumentHelp(
        "The kernel's thermal zones --session-events reads every 2 s, as the thermal state (default /sys/class/thermal).",
        valueName: "DIR"), completion: .directory)
    var thermalFolder: String?

    @Option(name: .customLong("socket"), help: ArgumentHelp(SocketOption.help, valueName: "PATH"), completion: .file())
    var socket: String?

    @Flag(name: .customLong("no-socket"), help: "Do not open the control socket.")
    var noSocket = false

    @Option(name: .customLong("isolate"), help: ArgumentHelp(
        "Run plugins in processes of their own: '--isolate' alone for all, or '--isolate ID,…' (ids or file names).",
        valueName: "IDS"))
    var isolate: String?

    @Option(name: .customLong("restart"), help: ArgumentHelp(
        "An isolated plugin that fails: never (the default), on-failure, or on-failure:N restarts.", valueName: "POLICY"),
            completion: .list(["never", "on-failure", "on-failure:"]))
    var restart: String?

    @Option(name: .customLong("isolate-budget"), help: ArgumentHelp(
        "How long an isolated plugin's callback may run outside a lifecycle budget (default 5s; at most 3600s).", valueName: "DURATION"))
    var isolateBudget: String?

    @Option(name: .customLong("freezer"), help: ArgumentHelp(
        "How isolated plugins are frozen while the app is suspended: auto (the default), cgroup, cgroup-v1, signal or none.",
        valueName: "FREEZER"), completion: .list(FreezerChoice.allCases.map(\.rawValue)))
    var freezer: String?

    @Option(name: .customLong("clock"), help: ArgumentHelp(
        "The application's clock: real (the default) or virtual, where a scenario's 'wait' moves the clock at once instead of sleeping.",
        valueName: "CLOCK"), completion: .list(["real", "virtual"]))
    var clock: String?

    @Flag(name: .customLong("rescan"), help: "Forget what the plugin registry remembers: scan every plugin again.")
    var rescan = false

    @Option(name: .customLong("scan-budget"), help: ArgumentHelp("How long a plugin's scan may take (default 5s; at most 3600s).", valueName: "DURATION"))
    var scanBudget: String?

    @Flag(name: .customLong("allow-unsafe-plugins"), help: UnsafePlugins.help)
    var allowUnsafePlugins = false

    @Flag(name: .customLong("watch"), help: "Reload a plugin when its file is written or replaced (inotify; loads plugins from private copies).")
    var watch = false

    @Flag(name: .customLong("allow-no-plugins"), help: "Run even when plugins were asked for and none could be loaded (else the run ends with status 9).")
    var allowNoPlugins = false

    @Option(name: .customLong("plugin-quota"), help: ArgumentHelp(
        "The most a plugin may make the host keep at once: observers, timers, background-tasks or custom-names "
            + "(defaults 100000, 10000, 1000, 10000; 1 to 10000000). Repeatable.", valueName: "KIND=N"),
            completion: .list(["observers=", "timers=", "background-tasks=", "custom-names="]))
    var pluginQuotas: [String] = []

    @Option(name: .customLong("record"), help: ArgumentHelp(
        "Write what the run receives to FILE, each input at its place, for 'lifecycle-host replay FILE' (docs/recording.md).",
        valueName: "FILE"), completion: .file())
    var record: String?

    @OptionGroup var engine: EngineOptions

    @OptionGroup var metrics: MetricsOptions

    /// The parsed values (the same type the fast path of `LifecycleHost.main` fills).
    var values: RunValues {
        RunValues(
            plugins: plugins, pluginDirs: pluginDirs, script: script, interactive: interactive, launchOptions: launchOptions,
            backgroundLaunch: backgroundLaunch, noSignals: noSignals, noPressure: noPressure, pressureFile: pressureFile,
            pressureWarning: pressureWarning, pressureCritical: pressureCritical, pressureDelay: pressureDelay,
            noClock: noClock, sessionEvents: sessionEvents, systemBus: systemBus, thermalFolder: thermalFolder,
            socket: socket,
            noSocket: noSocket, isolate: isolate, restart: restart, isolateBudget: isolateBudget, freezer: freezer,
            clock: clock, rescan: rescan,
            scanBudget: scanBudget, allowUnsafePlugins: allowUnsafePlugins, watch: watch, allowNoPlugins: allowNoPlugins,
            pluginQuotas: pluginQuotas, record: record, engine: engine.values,
            metrics: metrics.values)
    }

    /// Checked here, not in `run()`: ArgumentParser then shows `run`'s usage under the error.
    func validate() throws { _ = try values.options() }

    func run() throws {
        var options = try values.options()
        // The words after `run`, as given: what a recording keeps of the command line.
        let arguments = CommandLine.arguments
        options.arguments = arguments.firstIndex(of: "run").map { Array(arguments[($0 + 1)...]) } ?? []
        let code = HostRunner(options: options).run()
        if code != 0 { throw ExitCode(code) }
    }
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load each plugin and print its descriptor, notifications and delegate methods, or why it is refused.")

    @Argument(help: ArgumentHelp("Plugin .so files.", valueName: "PLUGIN"), completion: .file(extensions: ["so"]))
    var plugins: [String]

    @Flag(name: .customLong("rescan"), help: "Forget what the plugin registry remembers: scan every plugin again.")
    var rescan = false

    @Option(name: .customLong("scan-budget"), help: ArgumentHelp("How long a plugin's scan (open and init in its own process) may take (default 5s).",
                                                                valueName: "DURATION"))
    var scanBudgetText: String?

    @Flag(name: .customLong("allow-unsafe-plugins"), help: UnsafePlugins.help)
    var allowUnsafePlugins = false

    func validate() throws { _ = try scanBudget(scanBudgetText) }

    func run() throws {
        let loading: PluginLoadOptions = allowUnsafePlugins ? .allowUnsafePermissions : []
        var scanner = PluginScanner(rescan: rescan, budget: try scanBudget(scanBudgetText), options: loading)
        let handle: AppHandle
        // A plugin whose init exits or never returns is reported as `run` reports it (statuses 6 and 4).
        var configuration = Configuration()
        configuration.onWatchdogKill = { report in EmergencyExit.end(.watchdogKill(report)) }
        do { handle = try AppHandle(configuration: configuration) } catch {
            fputs("lifecycle-host: \(error.message)\n", stderr)
            throw ExitCode(HostExit.failure)
        }
        EmergencyExit.setApplication(handle.app)
        EmergencyExit.arm()
        defer {
            handle.shutdown()
            EmergencyExit.disarm()
            EmergencyExit.setApplication(nil)
        }
        defer { if let problem = scanner.save() { fputs("lifecycle-host: plugin registry: \(problem)\n", stderr) } }
        var refused = 0, exited = 0
        for path in plugins {
            do throws(PluginRefusal) {
                let path = absolute(path)
                if let refusal = folderRefusal(path, instead: "give the plugin files in it (check \(path)/*.so)") { throw refusal }
                // Scanned first, in a process of its own: a plugin that crashes there is not loaded here.
                if let scanned = scanner.refusal(for: path) {
                    if scanned.calledExit { exited += 1 }
                    throw scanned.refusal
                }
                let plugin = try handle.app.runLoading(path: path) { () throws(PluginRefusal) in
                    try handle.loadPlugin(path: path, options: loading)
                }
                say("\(plugin.path)")
                say("  id:          \(plugin.id)")
                say("  version:     \(plugin.version)")
                say("  abi:         \(plugin.abiMajor).\(plugin.abiMinor)")
                say("  description: \(plugin.summary)")
                let names = plugin.observedNames.map(\.rawValue)
                say("  observes:    \(names.isEmpty ? "(nothing)" : names.joined(separator: ", "))")
                let methods = plugin.implementedMethods.map(\.selector)
                say("  delegates:   \(methods.isEmpty ? "(none)" : methods.joined(separator: ", "))")
                // ABI 1.2: the scene delegate methods, only for a plugin that has some.
                let sceneMethods = plugin.implementedSceneMethods.map(\.selector)
                if !sceneMethods.isEmpty { say("  scenes:      \(sceneMethods.joined(separator: ", "))") }
                // What `run` leaves off unless asked: state preservation, background fetch.
                for need in PluginNeed.needs(of: plugin.implementedMethods) { say("  needs:       \(need.option) for \(need.featureAndMethods)") }
                for warning in PluginNeed.warnings(for: plugin.implementedMethods) { say("  warning:     \(warning)") }
                handle.app.runMarked("deinit", owner: plugin.id) { handle.unload(plugin) }
            } catch {
                refused += 1
                say("\(error.path)")
                say("  refused:     \(error.reason)")
            }
        }
        // An exit() in a plugin's init (here, in its scan) is status 6, as `run` ends; it wins over 3.
        if exited > 0 { throw ExitCode(HostExit.pluginExit) }
        if refused > 0 { throw ExitCode(HostExit.pluginRefused) }
    }

    /// One line of the report on standard output, `printable`: a path or a plugin's words holding a line
    /// feed stay on their line.
    private func say(_ line: String) { print(printable(line)) }
}

/// `--allow-unsafe-plugins`, on `run` and `check`.
enum UnsafePlugins {
    static let help = ArgumentHelp(
        "Load plugin files that are group- or world-writable, owned by another user, or in such a folder.")
}

/// The folder holding this executable (where SwiftPM also puts the example plugins).
func executableFolder() -> String {
    guard let path = HostVersion.executablePath() else { return "." }
    return path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
}
