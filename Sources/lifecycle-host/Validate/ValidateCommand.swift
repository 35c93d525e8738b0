import AppLifecycle
import ArgumentParser
import PluginHost
@preconcurrency import Glibc

/// `lifecycle-host validate PLUGIN [--json]`: see `Validator` and docs/host.md, "validate".
struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the conformance checks against a plugin, each in a process of its own: PASS, FAIL or SKIP per check.",
        discussion: "Exit status: 0 every check that ran passed, 1 at least one failed, 2 the validator could not start its processes, "
            + "64 a bad command line.")

    @Argument(help: ArgumentHelp("The plugin .so.", valueName: "PLUGIN"), completion: .file(extensions: ["so"]))
    var plugin: String

    @Flag(name: .customLong("json"), help: "Print the report as one JSON object instead of text (the same as --format json).")
    var json = false

    @Option(name: .customLong("format"), help: ArgumentHelp(
        "The report: text (printed a check at a time, as each ends), json (one object at the end) or junit (JUnit XML at the end, "
            + "as CI systems read test reports).", valueName: "FORMAT"),
            completion: .list(Format.allCases.map(\.rawValue)))
    var format: String?

    @Option(name: .customLong("only"), help: ArgumentHelp(
        "Report only this check (repeatable): load, init, delegates, sequence:NAME, budgets, completions, host-api, output, unload. "
            + "load and init always run; a sequence runs when selected, every one when a check they all add to is.", valueName: "CHECK"),
            completion: .list(ValidationCheck.allIDs))
    var only: [String] = []

    @Flag(name: .customLong("fail-fast"), help: "Stop at the first failed check: the sequences not begun are skipped.")
    var failFast = false

    @Option(name: .customLong("check-timeout"), help: ArgumentHelp(
        "The most one check's process may take: a plugin that hangs fails that check then (default: the budgets' sum and 10s; "
            + "above 0, at most 3600s).", valueName: "DURATION"))
    var checkTimeout: String?

    @Option(name: .customLong("budget"), help: ArgumentHelp("A time budget the plugin is held to, as for 'run' (repeatable).",
                                                         valueName: "NAME=SECONDS"),
            completion: .list(EngineValues.budgetNames.map { $0 + "=" }))
    var budgets: [String] = []

    @Option(name: .customLong("scan-budget"), help: ArgumentHelp("How long opening the plugin and its init may take in its scan (default 5s).",
                                                                valueName: "DURATION"))
    var scanBudgetText: String?

    @Flag(name: .customLong("allow-unsafe-plugins"), help: UnsafePlugins.help)
    var allowUnsafePlugins = false

    /// The report's form.
    enum Format: String, CaseIterable { case text, json, junit }

    func validate() throws { _ = try settings() }

    private func settings() throws -> (format: Format, selection: ValidationSelection) {
        var chosen = json ? Format.json : .text
        if let format {
            guard let parsed = Format(rawValue: format) else {
                throw ValidationError("--format must be text, json or junit, not '\(format)'\(didYouMean(format, among: Format.allCases.map(\.rawValue)))")
            }
            if json, parsed != .json { throw ValidationError("--json and --format \(format) ask for two forms; give one") }
            chosen = parsed
        }
        var selection = ValidationSelection()
        do { selection.only = try ValidationSelection.parse(only: only) } catch { throw ValidationError(error.message) }
        selection.failFast = failFast
        if let checkTimeout {
            do { selection.checkTimeout = try Seconds.parse(checkTimeout, allowsZero: false, atMost: 3600) } catch {
                throw ValidationError("--check-timeout \(checkTimeout): \(error.message)")
            }
        }
        return (chosen, selection)
    }

    func run() throws {
        var options = RunOptions()
        try EngineValues(budgets: budgets).apply(to: &options)  // a bad budget is a usage error, before anything runs
        let (format, selection) = try settings()
        var validator = Validator(path: absolute(plugin), budgets: budgets, loading: allowUnsafePlugins ? .allowUnsafePermissions : [],
                                  scanBudget: try scanBudget(scanBudgetText), configuration: options.configuration)
        validator.selection = selection
        let printer = format == .text ? TextProgress() : nil
        let report = validator.run(progress: printer)
        switch format {
        case .text: break  // printed as it went
        case .json: writeOut(report.json)
        case .junit: writeOut(report.junit)
        }
        if report.exitStatus != 0 { throw ExitCode(report.exitStatus) }
    }
}

/// The text report, printed as it goes: the header once the plugin is known, a check's lines as soon
/// as it ends, the count at the end; each flushed at once (a pipe or a CI log sees it then).
final class TextProgress: ValidationProgress {
    func described(_ report: ValidationReport) { writeOut(report.headerText) }
    func ended(_ check: ValidationReport.Check) { writeOut(ValidationReport.text(check)) }
    func finished(_ report: ValidationReport) { writeOut(report.resultText) }
}

/// Writes `text` to standard output now (unbuffered by the caller).
func writeOut(_ text: String) {
    fputs(text, stdout)
    fflush(stdout)
}
