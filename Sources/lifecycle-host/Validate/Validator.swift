import AppLifecycle
@preconcurrency import Glibc
import PluginHost

/// `lifecycle-host validate PLUGIN`: the conformance checks a plugin's author runs against it. No code
/// of the plugin runs in the validator's process: it is opened and initialised in a process of its own
/// (the plugin runner, as a scan: `load`, `init`), then loaded as `run` loads it in one process per
/// sequence (`ValidationStep`), so that a crash, an `exit()` or a hang fails a check instead of ending
/// the validator. See docs/host.md, "validate".
struct Validator {
    let path: String
    /// `--budget NAME=SECONDS`, as `run` takes them (checked by the caller).
    let budgets: [String]
    let loading: PluginLoadOptions
    /// How long opening the plugin and its init may take in the scan (`--scan-budget`).
    let scanBudget: Duration
    /// The budgets the steps run with, for their deadline.
    let configuration: Configuration
    /// `--only`, `--fail-fast`, `--check-timeout`.
    var selection = ValidationSelection()

    /// Past this a step's process is killed: every budget it could spend in turn, and 10 s more
    /// (its own watchdog ends it long before, unless its main thread is stuck outside any callback);
    /// or the `--check-timeout`, when shorter.
    var stepDeadline: Duration {
        let b = configuration.budgets
        let budgets = b.launch + b.didEnterBackground + b.willTerminate + b.completionHandler + b.backgroundTask + b.expirationWarning
            + b.hang * 3 + .seconds(10)
        return selection.checkTimeout.map { min($0, budgets) } ?? budgets
    }

    /// Runs the checks; `progress` hears of each as it ends (in report order). - Returns: the report,
    /// limited to the `--only` checks.
    func run(progress: ValidationProgress? = nil) -> ValidationReport {
        var tracker = ProgressTracker(progress: progress, only: selection.only)
        var report = runChecks(&tracker)
        tracker.finish(&report)
        return report
    }

    private func runChecks(_ tracker: inout ProgressTracker) -> ValidationReport {
        // What a step's plugin starts comes back here, to be killed when the step ends (`StepProcess`).
        StepProcess.becomeReaper()
        var report = ValidationReport(path: path)
        report.begin(.load)
        report.begin(.initialise)
        let scanStart = MonotonicInstant.now
        let scanned = Self.quietly({ PluginScan.inspect(path, budget: scanBudget, options: loading) })
        let scanSeconds = MonotonicInstant.now.duration(since: scanStart).secondsDouble
        report.time(.load, scanSeconds)
        report.time(.initialise, scanSeconds)
        // The scan's runner server is the validator's, not the plugin's: ended before any step looks
        // for what a plugin left running.
        IsolationRunner.stopServers()
        if case .failure(let refusal) = scanned {
            let reason = refusal.reason.hasPrefix("isolated: ") ? String(refusal.reason.dropFirst(10)) : refusal.reason
            let opening = refusal.stage == .opening
            report.fail(opening ? .load : .initialise, reason)
            skipTheRest(&report, opening ? "the plugin did not load" : "its init failed")
            report.sort()
            return report
        }
        let describeStart = MonotonicInstant.now
        guard let summary = step(.describe, &report) else {
            report.fail(.initialise, "it did not load in the host's process")
            skipTheRest(&report, "it did not load in the host's process")
            report.sort()
            return report
        }
        report.plugin = summary
        report.begin(.delegates)
        report.time(.delegates, MonotonicInstant.now.duration(since: describeStart).secondsDouble)
        for warning in PluginNeed.warnings(for: summary.delegates.map(DelegateMethod.init(selector:))) {
            report.fail(.delegates, warning)
        }
        tracker.ended([.load, .initialise, .delegates], report)
        var stopped: String?
        for sequence in ValidationSequence.all {
            let check = ValidationCheck.sequence(sequence.id)
            if let stopped {
                report.skip(check, stopped)
            } else if !selection.runs(sequence) {
                report.skip(check, "not selected (--only)")
            } else if let why = Self.notApplicable(sequence, to: summary) {
                report.skip(check, why)
            } else {
                report.begin(check)
                let start = MonotonicInstant.now
                _ = step(sequence, &report)
                let seconds = MonotonicInstant.now.duration(since: start).secondsDouble
                report.time(check, seconds)
                for aggregate in ValidationCheck.aggregates { report.time(aggregate, seconds) }
            }
            tracker.ended([check], report)
            if stopped == nil, selection.failFast, let failed = report.checks.first(where: { $0.result == .fail }) {
                stopped = "--fail-fast: \(failed.check.id) failed"
            }
        }
        for check in ValidationCheck.aggregates { report.begin(check) }
        report.sort()
        return report
    }

    /// Why `sequence` does not apply to the plugin (nil: it does).
    static func notApplicable(_ sequence: ValidationSequence, to plugin: PluginSummary) -> String? {
        let observes = Set(plugin.observes.compactMap { NotificationName(existing: $0) })
        if sequence.scenes, plugin.sceneMethods.isEmpty, observes.isDisjoint(with: ValidationSequence.sceneNames) {
            return "it implements no scene delegate method and observes no scene notification"
        }
        if sequence.steps.contains(where: { if case .postObserved = $0 { true } else { false } }),
           observes.isSubset(of: ValidationSequence.postedBySequences) {
            return "it observes no notification that only a post delivers"
        }
        return nil
    }

    private func skipTheRest(_ report: inout ValidationReport, _ why: String) {
        if report.checks.allSatisfy({ $0.check != .initialise || $0.result != .fail }) { report.skip(.initialise, why) }
        report.skip(.delegates, why)
        for sequence in ValidationSequence.all { report.skip(.sequence(sequence.id), why) }
        for check in ValidationCheck.aggregates { report.skip(check, why) }
    }

    /// Runs one step's process and adds what it found. - Returns: the plugin as it found it.
    private func step(_ sequence: ValidationSequence, _ report: inout ValidationReport) -> PluginSummary? {
        var arguments = [ValidationStep.name, "--sequence", sequence.id, "--plugin", path]
        if loading.contains(.allowUnsafePermissions) { arguments.append("--allow-unsafe-plugins") }
        for budget in budgets { arguments += ["--budget", budget] }
        var archive: String?
        if sequence.archive {
            let temporary = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
            var template = Array("\(temporary)/lifecycle-validate-XXXXXX".utf8CString)
            if let made = mkdtemp(&template) { archive = String(cString: made) }
            if let archive { arguments += ["--archive", archive] }
        }
        defer { if let archive { Self.removeFolder(archive) } }
        let result: StepResult
        do { result = try StepProcess.run(arguments, deadline: stepDeadline) } catch {
            report.couldNotRun = true
            report.fail(sequence.steps.isEmpty ? .initialise : .sequence(sequence.id), "the validator could not run it: \(error)")
            return nil
        }
        return StepOutcome.apply(result, of: sequence, deadline: stepDeadline, to: &report)
    }

    /// Runs `body` with standard output on /dev/null, where a process started meanwhile (the scan's
    /// plugin runner) prints: the report alone goes to standard output.
    private static func quietly<R>(_ body: () -> R) -> R {
        fflush(stdout)
        let saved = dup(STDOUT_FILENO), null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer {
            if saved >= 0 {
                dup2(saved, STDOUT_FILENO)
                close(saved)
            }
            if null >= 0 { close(null) }
        }
        if saved >= 0, null >= 0 { dup2(null, STDOUT_FILENO) }
        return body()
    }

    /// Removes a folder the validator made and the files in it.
    private static func removeFolder(_ path: String) {
        if let dir = opendir(path) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if name != ".", name != ".." { unlink(path + "/" + name) }
            }
            closedir(dir)
        }
        rmdir(path)
    }
}
