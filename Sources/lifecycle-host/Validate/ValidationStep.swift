import AppLifecycle
import CLifecycleSystem
@preconcurrency import Glibc
import HostInput
import LifecycleC
import PluginHost

/// `lifecycle-host validate-step --sequence ID --plugin PATH [--archive DIR] [--allow-unsafe-plugins]
/// [--budget NAME=SECONDS]...`: one step of `validate`, in a process of its own (hidden; `Validator`
/// starts it). It loads the plugin in this process as `run` does, lets the loop run for `settle`, takes
/// the application through the sequence, unloads the plugin, lets the loop run for `settle` again, and
/// tells the validator what happened (`StepRecord`s on descriptor 3);
/// the JSON trace goes to standard output, where the plugin's own printing goes too (`OutputCheck`
/// reads them together).
///
/// Ends with 0 after its last record (`done`); `HostExit.watchdogKill` when a budget overran (the
/// watchdog, policy terminate, from its thread); `HostExit.pluginExit` when the plugin called
/// `exit()`; `HostExit.pluginRefused` when the plugin did not load here; a signal when it crashed.
final class ValidationStep: @unchecked Sendable {
    // @unchecked: main-thread state (the loop's); the watchdog's closure only writes a record and exits.
    static let name = "validate-step"

    private let sequence: ValidationSequence
    private let path: String
    private let loading: PluginLoadOptions
    private let engine: EngineValues
    private let records = StepRecordWriter(fd: 3)
    private var handle: AppHandle?
    private var plugin: LoadedPlugin?
    private var index = 0

    private init(sequence: ValidationSequence, path: String, loading: PluginLoadOptions, engine: EngineValues) {
        self.sequence = sequence
        self.path = path
        self.loading = loading
        self.engine = engine
    }

    /// Parses the arguments (exactly as `Validator` writes them) and runs the step; 64 otherwise.
    static func run(_ arguments: [String]) -> Int32 {
        var sequence: ValidationSequence?, path: String?, loading: PluginLoadOptions = []
        var engine = EngineValues(trace: "json", backgroundModes: ["fetch", "remote-notification"])
        var words = arguments.dropFirst().makeIterator()
        while let word = words.next() {
            switch word {
            case "--sequence": sequence = words.next().flatMap(ValidationSequence.named)
            case "--plugin": path = words.next()
            case "--archive": engine.archive = words.next()
            case "--budget": words.next().map { engine.budgets.append($0) }
            case "--allow-unsafe-plugins": loading = .allowUnsafePermissions
            default: sequence = nil
            }
        }
        guard let sequence, let path, path.hasPrefix("/") else {
            fputs("lifecycle-host \(name): started by 'lifecycle-host validate' only\n", stderr)
            return 64
        }
        engine.scenes = sequence.scenes ? "multiple" : nil
        return ValidationStep(sequence: sequence, path: path, loading: loading, engine: engine).run()
    }

    private func run() -> Int32 {  // returns only when it did not get to the end
        _ = lcs_die_with_parent()
        var options = RunOptions()
        do { try engine.apply(to: &options) } catch {
            fputs("lifecycle-host \(Self.name): \(error)\n", stderr)
            return 64
        }
        var configuration = options.configuration
        configuration.watchdogPolicy = .terminate
        configuration.onWatchdogKill = { [records] report in
            let finding = EngineFindings.overrun(report)
            records.write(.finding(check: finding.check.id, text: finding.text))
            _exit(HostExit.watchdogKill)
        }
        let handle: AppHandle
        do { handle = try AppHandle(configuration: configuration) } catch {
            fputs("lifecycle-host \(Self.name): \(error.message)\n", stderr)
            return HostExit.failure
        }
        self.handle = handle
        let writer = TraceWriter(format: .json)
        handle.swiftTraceHandler = { [unowned self] event in
            writer.write(event)
            if let name = EngineFindings.callback(event) { records.write(.callback(name)) }
            if let finding = EngineFindings.finding(event) { records.write(.finding(check: finding.check.id, text: finding.text)) }
        }
        let refusals = RefusalTally(records: records)
        refusals.install()
        StepExitWatch.arm(records)

        records.write(.phase(.load))
        do throws(PluginRefusal) {
            plugin = try handle.app.runLoading(path: path) { () throws(PluginRefusal) in
                try handle.loadPlugin(path: path, options: loading)
            }
        } catch {
            records.write(.finding(check: ValidationCheck.initialise.id, text: error.reason))
            StepExitWatch.disarm()
            return HostExit.pluginRefused
        }
        guard let plugin else { return HostExit.failure }
        records.write(.described(PluginSummary(
            id: plugin.id, version: plugin.version, abi: "\(plugin.abiMajor).\(plugin.abiMinor)", summary: plugin.summary,
            observes: plugin.observedNames.map(\.rawValue), delegates: plugin.implementedMethods.map(\.selector),
            sceneMethods: plugin.implementedSceneMethods.map(\.selector))))

        // What its init started (a thread, a timer) has `settle` to show itself before the sequence.
        records.write(.phase(.afterInit))
        settle(handle)
        records.write(.phase(.sequence))
        handle.loop.perform { [unowned self] in next() }
        try? handle.loop.run()

        records.write(.phase(.unloading))
        handle.app.runMarked("deinit", owner: plugin.id) { handle.unload(plugin) }
        UnloadCheck.leftovers(of: plugin.id, in: handle.app).forEach { records.write(.finding(check: ValidationCheck.unload.id, text: $0)) }
        records.write(.phase(.afterDeinit))
        // Its threads and anything it queued have `settle` to show themselves.
        settle(handle)
        records.write(.done)
        StepExitWatch.disarm()
        // Ended at once, the application alive: a thread of the plugin still calling the host (a
        // finding already) gets refusals to the end, never a process tearing itself down under it.
        fflush(nil)
        _exit(HostExit.ok)
    }

    /// How long the loop runs on after the plugin's init returns (before the sequence) and after its
    /// deinit returns (before the step ends): a crash, an `exit()` or a refused call of a thread or timer
    /// the plugin started, within this time, fails a check (`init`, `unload`) instead of passing unseen.
    static let settle: Duration = .milliseconds(100)

    /// Runs the loop for `settle`: timers fire, queued work runs, the plugin's threads go on. [loop-thread]
    private func settle(_ handle: AppHandle) {
        handle.loop.addTimer(after: Self.settle) { handle.loop.stop() }
        try? handle.loop.run()
    }

    // MARK: The sequence

    /// Runs the next step, then comes back on a later loop turn (after a `wait`, when it has passed).
    private func next() {
        guard let handle else { return }
        guard index < sequence.steps.count else { return handle.loop.stop() }
        let step = sequence.steps[index]
        index += 1
        records.write(.step(step.description))
        switch step {
        case .line(let text):
            let command: HostCommand?
            do { command = try ScenarioParser.parse(line: text) } catch { return stuck("'\(text)': \(error.message)") }
            if case .wait(let duration)? = command {
                handle.loop.addTimer(after: duration) { [unowned self] in next() }
                return
            }
            if let failure = command?.perform(on: handle.app, fromScript: true) { return stuck("'\(text)': \(failure)") }
        case .awaitSuspended:
            let budgets = handle.app.configuration.budgets
            return awaitSuspended(until: lcs_monotonic_ns() + (budgets.backgroundTask + budgets.expirationWarning + .seconds(2)).nanosecondCount)
        case .postObserved:
            for name in plugin?.observedNames ?? [] where !ValidationSequence.postedBySequences.contains(name) {
                handle.app.center.post(name, userInfo: nil)
                handle.app.center.post(name, userInfo: ["validate": .bool(true), "step": .int(Int64(index))])
            }
        }
        // One loop turn between steps, as between scenario lines.
        handle.loop.perform { [unowned self] in next() }
    }

    /// Lets the loop run until the application is suspended (or not running).
    private func awaitSuspended(until deadline: UInt64) {
        guard let handle else { return }
        if handle.app.state == .suspended || handle.app.state == .notRunning { return next() }
        guard lcs_monotonic_ns() < deadline else {
            return stuck("the application was still \(handle.app.state) when its background time was over")
        }
        handle.loop.addTimer(after: .milliseconds(5)) { [unowned self] in awaitSuspended(until: deadline) }
    }

    /// The sequence cannot go on: said, and the plugin is unloaded.
    private func stuck(_ why: String) {
        records.write(.stuck(why))
        handle?.loop.stop()
    }
}
