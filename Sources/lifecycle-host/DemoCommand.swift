import ArgumentParser
@preconcurrency import Glibc
import LifecycleRunLoop

// `lifecycle-host demo`: the example plugins through the built-in scenario.

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The bundled example plugins through every sequence of the life cycle, trace on screen.")

    @OptionGroup var engine: EngineOptions

    func validate() throws {
        var options = RunOptions()
        try engine.apply(to: &options)
    }

    func run() throws {
        var options = RunOptions()
        try engine.apply(to: &options)
        // The demo needs fetch and remote notifications, and a place for StateKeeper's archive: a
        // fresh folder of its own unless --archive names one, so that every demo starts from nothing
        // (a folder shared by every run made a fresh checkout's first demo restore another's state).
        options.configuration.backgroundModes.formUnion([.fetch, .remoteNotification])
        var scratch: String?
        defer { if let scratch { removeTree(scratch) } }
        let folder = examplePluginFolder()
        options.plugins = ["Echo", "StateKeeper", "Greeter", "CacheTrimmer"].map { "\(folder)/lib\($0).so" }
        do {
            try buildMissingPlugins(options.plugins, folder: folder)
            if options.configuration.archiveDirectory == nil {
                let folder = try makeTemporaryFolder(prefix: "lifecycle-host-demo-")
                scratch = folder
                options.configuration.archiveDirectory = folder
                // StateKeeper's protected file too (else /tmp/statekeeper-protected.txt), unless named.
                if getenv("LC_STATEKEEPER_FILE") == nil { setenv("LC_STATEKEEPER_FILE", folder + "/protected.txt", 1) }
            }
        } catch {
            fputs("lifecycle-host demo: \(error.message)\n", stderr)
            throw ExitCode(HostExit.failure)
        }
        options.scriptText = ("demo.scenario", DemoScenario.text)
        options.narrate = true
        options.socket = false
        options.osEvents.pressure = false
        options.osEvents.clock = false
        let code = HostRunner(options: options).run()
        if code != 0 { throw ExitCode(code) }
    }
}

/// `swift run lifecycle-host demo` builds only the executable; the example plugins are separate
/// products. When some are missing and the demo runs from the package (as `swift run` does), build
/// those products, and only those, with `swift build --product NAME` in the same configuration (a
/// plain `swift build` would build every target of the package); elsewhere, say what to do. Quiet:
/// one line says what is built; the build's own output is shown only when it fails.
private func buildMissingPlugins(_ paths: [String], folder: String) throws(HostFailure) {
    let missing = paths.filter { access($0, R_OK) != 0 }
    guard !missing.isEmpty else { return }
    guard access("Package.swift", R_OK) == 0, access("Plugins/Echo/echo.c", R_OK) == 0 else {
        throw HostFailure("the example plugins are not built next to this executable (\(folder)); run 'swift build' in the AppLifecycle package first")
    }
    let configuration = folder.hasSuffix("/release") ? "release" : "debug"
    let names = missing.map { path in String(path[path.index(after: path.lastIndex(of: "/") ?? path.startIndex)...].dropFirst(3).dropLast(3)) }
    fputs("lifecycle-host demo: building the example plugins \(names.joined(separator: ", ")) (swift build -c \(configuration))…\n", stderr)
    let log = try makeTemporaryFolder(prefix: "lifecycle-host-demo-build-")
    defer { removeTree(log) }
    for path in missing {
        // ".../libEcho.so" → the product "Echo".
        let file = path[path.index(after: path.lastIndex(of: "/") ?? path.startIndex)...]
        let product = String(file.dropFirst("lib".count).dropLast(".so".count))
        let arguments = ["swift", "build", "-c", configuration, "--product", product]
        var pid = pid_t()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The build's output to a file of its own (stdout stays the trace's), shown only if it fails.
        let output = log + "/build.log"
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO)
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        guard posix_spawnp(&pid, "swift", &actions, nil, &argv, environ) == 0 else {
            throw HostFailure("could not run 'swift build'; run it in the AppLifecycle package, then the demo")
        }
        var status: Int32 = 0
        _ = try? systemCall("waitpid") { waitpid(pid, &status, 0) }
        guard status == 0 else {
            if let text = try? readFile(output, atMost: 1 << 20) { fputs(text, stderr) }
            throw HostFailure("'\(arguments.joined(separator: " "))' failed (its output is above); the demo needs the example plugins")
        }
        guard access(path, R_OK) == 0 else {
            throw HostFailure("'\(arguments.joined(separator: " "))' did not produce \(path)")
        }
    }
}

