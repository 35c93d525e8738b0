import AppLifecycle

/// What one step's process said and how it ended, as findings of the report's checks.
///
/// How it ended decides which check a failure belongs to, from the phase it was in: loading, or the
/// settle after init (`init`; the sequence, never begun, is skipped), the sequence (its `sequence:`
/// check: "killed by SIGSEGV while handling didEnterBackground", the callback being the last one the
/// engine started), unloading or later (`unload`). The records'
/// findings go to the checks they name; refused calls to `host-api` (or `unload`, when made in or
/// after deinit); the standard output to `output`.
enum StepOutcome {
    /// The `unload` finding for a step whose plugin left a process running (`StepResult.leftRunning`).
    static let leftRunning = "a process it started was still running when its step ended: killed by the validator"

    /// Adds `result` of `sequence` to `report`. - Returns: the plugin as the step found it loaded.
    static func apply(_ result: StepResult, of sequence: ValidationSequence, deadline: Duration,
                      to report: inout ValidationReport) -> PluginSummary?
    {
        let own: ValidationCheck? = sequence.steps.isEmpty ? nil : .sequence(sequence.id)
        var summary: PluginSummary?
        var phase: StepPhase?
        var step: String?, callback: String?
        var done = false, exitAsked: Int32?, watchdog: String?
        var refusals: [(function: String, status: String, message: String, after: Bool)] = []
        for record in result.records {
            switch record {
            case .described(let found): summary = found
            case .phase(let next):
                phase = next
                step = nil
                callback = nil
            case .step(let text):
                step = text
                callback = nil
            case .callback(let name): callback = name
            case .finding(let id, let text):
                if id == ValidationCheck.initialise.id {
                    report.fail(.initialise, text)
                } else if let check = ValidationCheck(findingID: id) {
                    report.fail(check, text, in: sequence.id)
                    if phase != .afterDeinit, check == .budgets || check == .completions { watchdog = text }
                }
            case .refused(let function, let status, let message, let after):
                refusals.append((function, status, message, after))
            case .exit(let status): exitAsked = status
            case .stuck(let why): report.fail(own ?? .initialise, "could not go on: \(why)", in: sequence.id)
            case .done: done = true
            }
        }
        for refused in refusals {
            let when = refused.after ? " in or after its deinit" : ""
            report.fail(refused.after ? .unload : .hostAPI, "\(refused.function)\(when) refused with \(refused.status): \(refused.message)",
                        in: sequence.id)
        }
        for finding in OutputCheck.findings(result.output, truncated: result.outputTruncated) {
            report.fail(.output, finding, in: sequence.id)
        }
        if result.leftRunning { report.fail(.unload, leftRunning, in: sequence.id) }

        // How it ended, and where.
        guard !(done && result.exitCode == HostExit.ok) else { return summary }
        if result.exitCode == HostExit.pluginRefused, phase == .load { return summary }  // its `init` finding says why
        let ending: String
        var placed = true
        if result.timedOut {
            ending = "did not end within \(formatSeconds(deadline)): killed by the validator"
        } else if let signo = result.signal {
            ending = "killed by \(PluginFailure.signalName(signo))"
        } else if result.exitCode == HostExit.pluginExit, let exitAsked {
            ending = "called exit(\(exitAsked))"
        } else if result.exitCode == HostExit.watchdogKill, let watchdog {
            ending = "the watchdog ended it: \(watchdog)"
            placed = false  // the finding names the callback
        } else {
            let said = String(decoding: result.errorTail, as: UTF8.self).split(separator: "\n").last.map { ": \($0)" } ?? ""
            ending = "its process ended with status \(result.exitCode ?? -1)\(said)"
        }
        switch phase {
        case .load?, nil:
            report.fail(.initialise, "\(ending) while loading in the host's process (its init)")
        case .afterInit?:
            report.fail(.initialise, ending + " after its init (in a thread or timer of the plugin)", in: sequence.id)
            if let own { report.skip(own, "not run: the plugin's process ended after its init, before the sequence began") }
        case .sequence?:
            let place = callback.map { " while handling \($0)" } ?? step.map { " during '\($0)'" } ?? ""
            report.fail(own ?? .unload, ending + (placed ? place : ""), in: sequence.id)
        case .unloading?:
            report.fail(.unload, ending + (placed ? " while running deinit" : ""), in: sequence.id)
        case .afterDeinit?:
            report.fail(.unload, ending + " after its deinit (in a thread or timer of the plugin)", in: sequence.id)
        }
        return summary
    }
}
