import AppLifecycle
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
        discussion: "Exit status of 'run': 0 clean end, 1 failure, 2 scenario error, 3 a plugin refused, 4 watchdog kill, "
            + "5 a termination (SIGTERM, SIGINT) not done within the terminate budget, 6 a plugin called exit(), "
            + "7 an isolated plugin failed.",
        subcommands: [Run.self, Demo.self, Check.self, Send.self, Status.self])
}

/// Options shared by `run` and `demo`.
struct EngineOptions: ParsableArguments {
    @Option(name: .customLong("trace"), help: "Trace format: text or json.")
    var trace: String = EngineValues().trace

    @Option(name: .customLong("budget"), help: ArgumentHelp("A time budget (repeatable): seconds, or with a unit (250ms, 2s, 1m); at most 9223372036 s.",
                                                         discussion: "NAME: launch, did-enter-background, will-terminate, completion, background-task, expiration-warning, "
                                                             + "hang (one callback outside those phases, default 5), terminate (SIGTERM to exit, default "
                                                             + "did-enter-background + will-terminate + hang).",
                                                         valueName: "NAME=SECONDS"))
    var budgets: [String] = []

    @Option(name: .customLong("archive"), help: "Folder for state-preservation archives.")
    var archive: String?

    @Option(name: .customLong("watchdog"), help: "Watchdog policy: terminate (as iOS) or report.")
    var watchdog: String = EngineValues().watchdog

    @Option(name: .customLong("background-mode"), help: "A declared background mode (repeatable): audio, location, voip, fetch, remote-notification, …")
    var backgroundModes: [String] = []

    @Flag(name: .customLong("exits-on-suspend"), help: "UIApplicationExitsOnSuspend: leaving the foreground terminates.")
    var exitsOnSuspend = false

    @Option(name: .customLong("timeline"), help: "After the run, write a picture of it (SVG).")
    var timeline: String?

    @Flag(name: .customLong("scenes"), help: "A scene-based application (UIApplicationSceneManifest): a launch connects the scene 'main'.")
    var scenes = false

    var values: EngineValues {
        EngineValues(trace: trace, budgets: budgets, archive: archive, watchdog: watchdog, backgroundModes: backgroundModes,
                     exitsOnSuspend: exitsOnSuspend, timeline: timeline, scenes: scenes)
    }

    func apply(to options: inout RunOptions) throws { try values.apply(to: &options) }
}

/// The values of `EngineOptions` as plain data: `LifecycleHost.main`'s fast path fills them without
/// ArgumentParser. The defaults here are the options' defaults.
struct EngineValues: Equatable {
    var trace = "text"
    var budgets: [String] = []
    var archive: String?
    var watchdog = "terminate"
    var backgroundModes: [String] = []
    var exitsOnSuspend = false
    var timeline: String?
    var scenes = false

    func apply(to options: inout RunOptions) throws {
        guard let format = TraceWriter.Format(rawValue: trace) else {
            throw ValidationError("--trace must be text or json, not '\(trace)'")
        }
        options.trace = format
        var configuration = Configuration()
        guard let policy = Configuration.WatchdogPolicy(name: watchdog) else {
            throw ValidationError("--watchdog must be terminate or report, not '\(watchdog)'")
        }
        configuration.watchdogPolicy = policy
        for name in backgroundModes {
            guard let mode = Configuration.BackgroundModes(name: name) else {
                throw ValidationError("unknown background mode '\(name)' (\(Configuration.BackgroundModes.allNames.joined(separator: ", ")))")
            }
            configuration.backgroundModes.insert(mode)
        }
        configuration.exitsOnSuspend = exitsOnSuspend
        if scenes { configuration.sceneManifest = SceneManifest() }
        configuration.archiveDirectory = archive.map(absolute)
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
                throw ValidationError("unknown budget '\(parts[0])' (launch, did-enter-background, will-terminate, completion, background-task, "
                                      + "expiration-warning, hang, terminate)")
            }
        }
        options.configuration = configuration
        options.timeline = timeline
    }
}

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load plugins, launch, then take actions from a scenario, the prompt, the control socket and the OS.")

    @Option(name: .customLong("plugin"), help: "A plugin .so (repeatable).")
    var plugins: [String] = []

    @Option(name: .customLong("plugin-dir"), help: "A folder of plugin .so files (repeatable).")
    var pluginDirs: [String] = []

    @Option(name: .customLong("script"), help: "A scenario file: one action a line.")
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

    @Option(name: .customLong("pressure-file"), help: "The PSI file to watch (default: the cgroup's memory.pressure, else /proc/pressure/memory).")
    var pressureFile: String?

    @Option(name: .customLong("pressure-warning"), help: "PSI trigger for a 'warning' memory warning (window: a multiple of 2 s).")
    var pressureWarning: String = RunValues().pressureWarning

    @Option(name: .customLong("pressure-critical"), help: "PSI trigger for a 'critical' memory warning.")
    var pressureCritical: String = RunValues().pressureCritical

    @Option(name: .customLong("pressure-delay"), help: ArgumentHelp(
        "Arm the PSI triggers this long after start: seconds, or with a unit (default 0.25; at most 86400; a shorter run never opens them).",
        valueName: "SECONDS"))
    var pressureDelay: String?

    @Flag(name: .customLong("no-clock"), help: "Do not watch for clock steps.")
    var noClock = false

    @Option(name: .customLong("socket"), help: ArgumentHelp(SocketOption.help))
    var socket: String?

    @Flag(name: .customLong("no-socket"), help: "Do not open the control socket.")
    var noSocket = false

    @Option(name: .customLong("isolate"), help: ArgumentHelp(
        "Run plugins in processes of their own: '--isolate' alone for all, or '--isolate ID,…' (ids or file names).",
        valueName: "IDS"))
    var isolate: String?

    @Option(name: .customLong("restart"), help: "An isolated plugin that fails: never (the default), on-failure, or on-failure:N restarts.")
    var restart: String?

    @Option(name: .customLong("isolate-budget"), help: ArgumentHelp(
        "How long an isolated plugin's callback may run outside a lifecycle budget (default 5s; at most 3600s).", valueName: "DURATION"))
    var isolateBudget: String?

    @Flag(name: .customLong("rescan"), help: "Forget what the plugin registry remembers: scan every --plugin-dir plugin again.")
    var rescan = false

    @Option(name: .customLong("scan-budget"), help: ArgumentHelp("How long a plugin's scan may take (default 5s; at most 3600s).", valueName: "DURATION"))
    var scanBudget: String?

    @Flag(name: .customLong("allow-unsafe-plugins"), help: UnsafePlugins.help)
    var allowUnsafePlugins = false

    @OptionGroup var engine: EngineOptions

    @OptionGroup var metrics: MetricsOptions

    /// The parsed values (the same type the fast path of `LifecycleHost.main` fills).
    var values: RunValues {
        RunValues(
            plugins: plugins, pluginDirs: pluginDirs, script: script, interactive: interactive, launchOptions: launchOptions,
            backgroundLaunch: backgroundLaunch, noSignals: noSignals, noPressure: noPressure, pressureFile: pressureFile,
            pressureWarning: pressureWarning, pressureCritical: pressureCritical, pressureDelay: pressureDelay,
            noClock: noClock, socket: socket,
            noSocket: noSocket, isolate: isolate, restart: restart, isolateBudget: isolateBudget, rescan: rescan,
            scanBudget: scanBudget, allowUnsafePlugins: allowUnsafePlugins, engine: engine.values, metrics: metrics.values)
    }

    func run() throws {
        let code = HostRunner(options: try values.options()).run()
        if code != 0 { throw ExitCode(code) }
    }
}

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The bundled example plugins through every sequence of the life cycle, trace on screen.")

    @OptionGroup var engine: EngineOptions

    func run() throws {
        var options = RunOptions()
        try engine.apply(to: &options)
        // The demo needs fetch and remote notifications, and a place for StateKeeper's archive.
        options.configuration.backgroundModes.formUnion([.fetch, .remoteNotification])
        if options.configuration.archiveDirectory == nil {
            options.configuration.archiveDirectory = "/tmp/lifecycle-host-demo-\(getuid())"
        }
        let folder = examplePluginFolder()
        options.plugins = ["Echo", "StateKeeper", "Greeter", "CacheTrimmer"].map { "\(folder)/lib\($0).so" }
        try buildMissingPlugins(options.plugins, folder: folder)
        options.scriptText = ("demo.scenario", DemoScenario.text)
        options.socket = false
        options.osEvents.pressure = false
        options.osEvents.clock = false
        let code = HostRunner(options: options).run()
        if code != 0 { throw ExitCode(code) }
    }
}

/// `swift run lifecycle-host demo` builds only the executable; the example plugins are separate
/// products. When they are missing and the demo runs from the package (as `swift run` does), build
/// them with `swift build` in the same configuration; elsewhere, say what to do.
private func buildMissingPlugins(_ paths: [String], folder: String) throws {
    guard paths.contains(where: { access($0, R_OK) != 0 }) else { return }
    guard access("Package.swift", R_OK) == 0, access("Plugins/Echo/echo.c", R_OK) == 0 else {
        throw ValidationError("the example plugins are not built next to this executable (\(folder)); run 'swift build' in the AppLifecycle package first")
    }
    let configuration = folder.hasSuffix("/release") ? "release" : "debug"
    fputs("lifecycle-host demo: building the example plugins (swift build -c \(configuration))…\n", stderr)
    let arguments = ["swift", "build", "-c", configuration]
    var pid = pid_t()
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO)  // keep stdout for the trace
    var argv = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    guard posix_spawnp(&pid, "swift", &actions, nil, &argv, environ) == 0 else {
        throw ValidationError("could not run 'swift build'; run it in the AppLifecycle package, then the demo")
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0, errno == EINTR {}
    guard status == 0, paths.allSatisfy({ access($0, R_OK) == 0 }) else {
        throw ValidationError("'swift build' did not produce the example plugins in \(folder)")
    }
}

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load each plugin and print its descriptor, notifications and delegate methods, or why it is refused.")

    @Argument(help: "Plugin .so files.")
    var plugins: [String]

    @Flag(name: .customLong("rescan"), help: "Forget what the plugin registry remembers: scan every plugin again.")
    var rescan = false

    @Option(name: .customLong("scan-budget"), help: ArgumentHelp("How long a plugin's scan (open and init in its own process) may take (default 5s).",
                                                                valueName: "DURATION"))
    var scanBudgetText: String?

    @Flag(name: .customLong("allow-unsafe-plugins"), help: UnsafePlugins.help)
    var allowUnsafePlugins = false

    func run() throws {
        let loading: PluginLoadOptions = allowUnsafePlugins ? .allowUnsafePermissions : []
        var scanner = PluginScanner(rescan: rescan, budget: try scanBudget(scanBudgetText), options: loading)
        let handle: AppHandle
        // A plugin whose init exits or never returns is reported as `run` reports it (statuses 6 and 4).
        var configuration = Configuration()
        configuration.onWatchdogKill = { report in EmergencyExit.end(.watchdogKill(report)) }
        do { handle = try AppHandle(configuration: configuration) } catch { throw ValidationError("\(error)") }
        EmergencyExit.setApplication(handle.app)
        EmergencyExit.arm()
        defer {
            handle.shutdown()
            EmergencyExit.disarm()
            EmergencyExit.setApplication(nil)
        }
        defer { if let problem = scanner.save() { fputs("lifecycle-host: plugin registry: \(problem)\n", stderr) } }
        var refused = 0
        for path in plugins {
            do throws(PluginRefusal) {
                let path = absolute(path)
                // Scanned first, in a process of its own: a plugin that crashes there is not loaded here.
                if let refusal = scanner.check(path) { throw refusal }
                let plugin = try handle.app.runMarked("init", owner: path) { () throws(PluginRefusal) in
                    try handle.loadPlugin(path: path, options: loading)
                }
                print("\(plugin.path)")
                print("  id:          \(plugin.id)")
                print("  version:     \(plugin.version)")
                print("  abi:         \(plugin.abiMajor).\(plugin.abiMinor)")
                print("  description: \(plugin.summary)")
                let names = plugin.observedNames.map(\.rawValue)
                print("  observes:    \(names.isEmpty ? "(nothing)" : names.joined(separator: ", "))")
                let methods = plugin.implementedMethods.map(\.selector)
                print("  delegates:   \(methods.isEmpty ? "(none)" : methods.joined(separator: ", "))")
                // ABI 1.2: the scene delegate methods, only for a plugin that has some.
                let sceneMethods = plugin.implementedSceneMethods.map(\.selector)
                if !sceneMethods.isEmpty { print("  scenes:      \(sceneMethods.joined(separator: ", "))") }
                handle.app.runMarked("deinit", owner: plugin.id) { handle.unload(plugin) }
            } catch {
                refused += 1
                print("\(error.path)")
                print("  refused:     \(error.reason)")
            }
        }
        if refused > 0 { throw ExitCode(HostExit.pluginRefused) }
    }
}

/// `--allow-unsafe-plugins`, on `run` and `check`.
enum UnsafePlugins {
    static let help = ArgumentHelp(
        "Load plugin files that are group- or world-writable, owned by another user, or in such a folder.")
}

struct SocketOption: ParsableArguments {
    static let help = "The control socket's path (default: $XDG_RUNTIME_DIR/lifecycle-host.sock, else ${TMPDIR:-/tmp}/lifecycle-host-UID/lifecycle-host.sock)."

    @Option(name: .customLong("socket"), help: ArgumentHelp(SocketOption.help))
    var socket: String?

    var path: String { socket ?? ControlServer.defaultPath() }
}

struct Send: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Send an action to a running host, e.g. 'send memory-warning critical'.")

    @OptionGroup var socket: SocketOption

    @Argument(parsing: .captureForPassthrough, help: "The action and its arguments, as in a scenario file.")
    var action: [String]

    func run() throws {
        // The action's words are captured as they come, options after it included: take `--socket`
        // out of them (it was ignored there, and the action sent to the default socket).
        let (words, given) = try Self.splitSocketOption(action)
        guard !words.isEmpty else { throw ValidationError("send needs an action ('lifecycle-host send home')") }
        if given != nil, socket.socket != nil { throw ValidationError("--socket given twice") }
        let line = words.map(quoteWord).joined(separator: " ")
        try request("send " + line, given ?? socket.path)
    }

    /// The action's words without `--socket PATH` / `--socket=PATH`, and that path. A `--` word ends
    /// the options: every word after it belongs to the action (`send -- post com.example.x --socket`).
    static func splitSocketOption(_ words: [String]) throws -> (action: [String], socket: String?) {
        var action: [String] = []
        var path: String?
        var index = 0
        while index < words.count {
            let word = words[index]
            index += 1
            if word == "--" {
                action += words[index...]
                break
            }
            var value: String?
            if word == "--socket" {
                guard index < words.count else { throw ValidationError("--socket needs a path") }
                value = words[index]
                index += 1
            } else if word.hasPrefix("--socket=") {
                value = String(word.dropFirst("--socket=".count))
            }
            guard let value else {
                action.append(word)
                continue
            }
            guard path == nil else { throw ValidationError("--socket given twice") }
            guard !value.isEmpty else { throw ValidationError("--socket needs a path") }
            path = value
        }
        return (action, path)
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a running host's state, plugins, queued notifications and background tasks (JSON).")

    @OptionGroup var socket: SocketOption

    func run() throws { try request("status", socket.path) }
}

/// A word as the scenario tokenizer reads it back: quoted when it holds white space or quotes.
func quoteWord(_ word: String) -> String {
    guard word.isEmpty || word.contains(where: { $0.isWhitespace || $0 == "\"" || $0 == "#" }) else { return word }
    var out = "\""
    for character in word {
        if character == "\"" || character == "\\" { out.append("\\") }
        out.append(character)
    }
    return out + "\""
}

/// Sends one request and prints the reply; a reply starting with "error" exits 1. A default path in
/// the private folder is used only once the folder passes its checks (`SocketFolder.check`).
private func request(_ line: String, _ path: String) throws {
    do {
        let location = ControlServer.defaultLocation()
        if path == location.path { try location.folder?.check() }
        let reply = try ControlClient.request(path: path, line: line)
        print(reply)
        if reply.hasPrefix("error") { throw ExitCode(1) }
    } catch let error as ControlSocketError {
        fputs("lifecycle-host: \(error.description)\n", stderr)
        throw ExitCode(1)
    }
}

/// The folder holding this executable (where SwiftPM also puts the example plugins).
func executableFolder() -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buffer, Int(PATH_MAX))
    guard n > 0 else { return "." }
    let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
}
