import AppLifecycle
import HostInput
import ArgumentParser
@preconcurrency import Glibc
import PluginHost

/// The values of `lifecycle-host run` as plain data, and the options they make.
///
/// `Run` fills them from ArgumentParser; `LifecycleHost.main` fills them itself for a plain `run`
/// command line (see `parse(_:)`), because ArgumentParser's parse, built on reflection and runtime
/// conformance lookups, was most of the host's start: 17 of 29 million instructions for a launch of
/// ten plugins, about 3 ms. The defaults here are the options' defaults.
struct RunValues: Equatable {
    var plugins: [String] = []
    var pluginDirs: [String] = []
    var script: String?
    var interactive = false
    var launchOptions: [String] = []
    var backgroundLaunch = false
    var noSignals = false
    var noPressure = false
    var pressureFile: String?
    var pressureWarning = "some 150000 2000000"
    var pressureCritical = "full 150000 2000000"
    /// How long after start the PSI triggers are armed, as written (`0.5`, `250ms`); nil: the default
    /// (0.25 s). Kept as text so that an error quotes what was given.
    var pressureDelay: String?
    var noClock = false
    /// `--session-events`: logind, UPower and power-profiles on the system bus.
    var sessionEvents = false
    /// `--system-bus ADDRESS`; nil: the system bus.
    var systemBus: String?
    /// `--thermal-folder DIR`; nil: /sys/class/thermal.
    var thermalFolder: String?
    var socket: String?
    var noSocket = false
    /// `--isolate` ("*": every plugin) or `--isolate ID,…`; nil: none.
    var isolate: String?
    var restart: String?
    var isolateBudget: String?
    /// `--freezer`, as given; nil: `auto`.
    var freezer: String?
    /// `--clock`, as given; nil: `real`.
    var clock: String?
    var rescan = false
    var scanBudget: String?
    var allowUnsafePlugins = false
    /// `--watch`: reload a plugin when its file changes.
    var watch = false
    var allowNoPlugins = false
    /// `--plugin-quota KIND=N`, as given, in order (a later one for the same kind wins).
    var pluginQuotas: [String] = []
    /// `--record FILE`.
    var record: String?
    var engine = EngineValues()
    var metrics = MetricsValues()

    /// The run's options; throws `ValidationError` as `Run` reports it.
    func options() throws -> RunOptions {
        var options = RunOptions()
        try engine.apply(to: &options)
        options.plugins = plugins
        options.pluginFolders = pluginDirs
        options.script = script
        options.interactive = interactive
        options.backgroundLaunch = backgroundLaunch
        do {
            options.launchOptions = try ScenarioParser.keyValues(launchOptions, "--launch-option")
        } catch {
            throw ValidationError(error.message)
        }
        options.osEvents.signals = !noSignals
        options.osEvents.pressure = !noPressure
        options.osEvents.clock = !noClock
        options.osEvents.session = sessionEvents
        if let systemBus {
            guard sessionEvents else { throw ValidationError("--system-bus is for --session-events") }
            options.osEvents.sessionBusAddress = systemBus
        }
        if let thermalFolder {
            guard sessionEvents else { throw ValidationError("--thermal-folder is for --session-events") }
            options.osEvents.thermalFolder = thermalFolder
        }
        if let pressureFile { options.osEvents.pressureFile = pressureFile }
        options.osEvents.warningTrigger = pressureWarning
        options.osEvents.criticalTrigger = pressureCritical
        if let pressureDelay {
            do { options.osEvents.pressureDelay = try Seconds.parse(pressureDelay, atMost: 86_400) } catch {
                throw ValidationError("--pressure-delay \(pressureDelay): \(error.message)")
            }
        }
        options.socket = !noSocket
        options.socketPath = socket
        switch clock {
        case nil, "real": options.clock = .monotonic
        case "virtual": options.clock = .manual
        case let other?: throw ValidationError("--clock must be real or virtual, not '\(other)'")
        }
        try IsolateOption.apply(isolate: isolate, restart: restart, budget: isolateBudget, freezer: freezer, to: &options)
        options.rescan = rescan
        options.scanBudget = try lifecycle_host.scanBudget(scanBudget)
        options.pluginLoading = allowUnsafePlugins ? .allowUnsafePermissions : []
        // Watched plugins are loaded from private copies: a file rewritten in place (`cp` over it)
        // must not change the code of the instance running until its reload.
        if watch { options.pluginLoading.insert(.privateCopy) }
        options.watch = watch
        options.allowNoPlugins = allowNoPlugins
        for quota in pluginQuotas {
            do throws(QuotaSettingError) { try options.pluginQuotas.set(parsing: quota) } catch {
                throw ValidationError("--plugin-quota: \(error.message)")
            }
        }
        options.metrics = try metrics.settings()
        if let record {
            // A recording's gate points move the clock with real time; its replay is the virtual run.
            guard !options.clock.isManual else {
                throw ValidationError("--record records a run on real time; it cannot be used with --clock virtual (its replay runs on a virtual clock)")
            }
            guard !watch else {
                throw ValidationError("--record cannot be used with --watch: a reload by a file's change is not input a replay can give again")
            }
            options.record = record
        }
        return options
    }

    /// Whether `arguments` plainly ask `run` to isolate plugins: `run` first, an `--isolate` word (bare,
    /// with ids, or `--isolate=…`), and no help or version asked for. A look, not a parse: a command
    /// line that says so and then fails to parse merely started the runners' server for nothing (it
    /// ends with this process).
    static func plainlyIsolates(_ arguments: [String]) -> Bool {
        guard arguments.first == "run" else { return false }
        var isolates = false
        for argument in arguments.dropFirst() {
            if argument == "--help" || argument == "-h" || argument == "--version" { return false }
            if argument == "--isolate" || argument.hasPrefix("--isolate=") { isolates = true }
        }
        return isolates
    }

    /// The values of `run` followed by `--NAME VALUE` options and `--FLAG` flags, each at most once
    /// (repeatable options any number of times); nil for anything else: `--NAME=VALUE`, a value that
    /// starts with '-' or is empty, an unknown word, a repeated flag or single option, help, other
    /// commands. ArgumentParser parses those, and reports their errors, exactly as before.
    static func parse(_ arguments: [String]) -> RunValues? {
        guard arguments.first == "run" else { return nil }
        var values = RunValues()
        var seen: [String] = []  // the flags and single options given so far (a switch and an array, no key paths
                                 // or hashing: their first use costs the runtime more than this whole parse)
        var index = 1
        while index < arguments.count {
            let name = arguments[index]
            index += 1
            guard name.hasPrefix("--"), !seen.contains(name) else { return nil }
            switch name {
            case "--interactive": values.interactive = true
            case "--background-launch": values.backgroundLaunch = true
            case "--no-signals": values.noSignals = true
            case "--no-pressure": values.noPressure = true
            case "--no-clock": values.noClock = true
            case "--session-events": values.sessionEvents = true
            case "--no-socket": values.noSocket = true
            case "--allow-unsafe-plugins": values.allowUnsafePlugins = true
            case "--watch": values.watch = true
            case "--allow-no-plugins": values.allowNoPlugins = true
            case "--exits-on-suspend": values.engine.exitsOnSuspend = true
            case "--scenes":
                // Bare (several scenes), or followed by its value (a word not starting with '-').
                if index < arguments.count, !arguments[index].hasPrefix("-"), !arguments[index].isEmpty {
                    values.engine.scenes = arguments[index]
                    index += 1
                } else {
                    values.engine.scenes = "multiple"
                }
            case "--rescan": values.rescan = true
            case "--isolate":
                // Bare, or followed by a list of ids (a word not starting with '-').
                if index < arguments.count, !arguments[index].hasPrefix("-"), !arguments[index].isEmpty {
                    values.isolate = arguments[index]
                    index += 1
                } else {
                    values.isolate = "*"
                }
            default:
                guard index < arguments.count else { return nil }
                let value = arguments[index]
                index += 1
                guard !value.isEmpty, !value.hasPrefix("-") else { return nil }
                switch name {
                case "--plugin": values.plugins.append(value)
                case "--plugin-dir": values.pluginDirs.append(value)
                case "--launch-option": values.launchOptions.append(value)
                case "--budget": values.engine.budgets.append(value)
                case "--background-mode": values.engine.backgroundModes.append(value)
                case "--script": values.script = value
                case "--pressure-file": values.pressureFile = value
                case "--socket": values.socket = value
                case "--system-bus": values.systemBus = value
                case "--thermal-folder": values.thermalFolder = value
                case "--archive": values.engine.archive = value
                case "--timeline": values.engine.timeline = value
                case "--trace-export": values.engine.traceExport = value
                case "--pressure-warning": values.pressureWarning = value
                case "--pressure-critical": values.pressureCritical = value
                case "--pressure-delay": values.pressureDelay = value
                case "--trace": values.engine.trace = value
                case "--trace-output": values.engine.traceOutput = value
                case "--watchdog": values.engine.watchdog = value
                case "--memory-warning-limit": values.engine.memoryWarningLimit = value
                case "--restart": values.restart = value
                case "--isolate-budget": values.isolateBudget = value
                case "--freezer": values.freezer = value
                case "--clock": values.clock = value
                case "--scan-budget": values.scanBudget = value
                case "--plugin-quota": values.pluginQuotas.append(value)
                case "--record": values.record = value
                case "--metrics": values.metrics.address = value
                case "--metrics-file": values.metrics.file = value
                case "--metrics-interval": values.metrics.interval = value
                default: return nil
                }
                switch name {
                case "--plugin", "--plugin-dir", "--launch-option", "--budget", "--background-mode", "--plugin-quota": continue  // repeatable
                default: break
                }
            }
            seen.append(name)
        }
        return values
    }
}

extension LifecycleHost {
    /// A plain `run` command line is parsed here (`RunValues.parse`); everything else, and any run
    /// whose values do not validate, goes to ArgumentParser as before.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == ValidationStep.name { end(ValidationStep.run(arguments)) }
        // The runner's commands of earlier versions, when this host was its own runner: what an old
        // `LC_PLUGIN_RUNNER=…/lifecycle-host` starts. Said plainly instead of a parser's error.
        if let first = arguments.first, first == RunnerServer.serverCommand || first == PluginRunner.command {
            fputs("lifecycle-host: '\(first)' is not a lifecycle-host command: isolated plugins run in lifecycle-plugin-runner"
                  + " (set LC_PLUGIN_RUNNER to it, not to lifecycle-host)\n", stderr)
            end(64)
        }
        // Isolated plugins run in `lifecycle-plugin-runner` (beside this executable, or where `make
        // install` recorded it: `IsolationRunner.resolve`). Its server's process start (an exec: the
        // dynamic loader, the Swift runtime) is the longest step of an isolated cold start: begun first,
        // it overlaps the host's own start. It learns what `run` settles later as it makes each runner
        // (the standard descriptors); the environment `run` settles is the same without systemd's
        // variables.
        if RunValues.plainlyIsolates(arguments) { IsolationRunner.prepareEarly(withoutVariables: SystemdNotifier.variables) }
        if let values = RunValues.parse(arguments), var options = try? values.options() {
            options.arguments = Array(arguments.dropFirst())
            end(HostRunner(options: options).run())
        }
        if let unknown = Usage.unknownSubcommand(arguments) { end(report(ValidationError(unknown))) }
        end(runParsed(IsolateOption.spelledForParser(arguments)))
    }

    /// ArgumentParser's `main`, without its `exit`: parses, runs, and turns an error (or `--help`,
    /// `--version`, a completion script) into its text and status, as `exit(withError:)` would.
    private static func runParsed(_ arguments: [String]) -> Int32 {
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
            return 0
        } catch {
            return report(error)
        }
    }

    /// Prints what ArgumentParser says of `error` (standard output for a clean end such as `--help`,
    /// standard error otherwise) and returns its status.
    private static func report(_ error: Error) -> Int32 {
        let code = exitCode(for: error)
        let text = fullMessage(for: error)
        if !text.isEmpty {
            if code.isSuccess { print(text) } else { fputs(text + "\n", stderr) }
        }
        return code.rawValue
    }

    /// Ends the process with `status`: standard output and error flushed, then `_exit`. No `atexit`
    /// handler runs — a plugin's could otherwise call `_exit(0)` and turn a failing scenario (2), a
    /// refused plugin (3) or a run that ended with the application running (8) into a success (and
    /// a plugin runner's status, which the host reports, into another). Everything the host writes
    /// at its end (the last trace line, the metrics file, the socket file's removal) is done before.
    static func end(_ status: Int32) -> Never {
        fflush(nil)
        _exit(status)
    }
}
