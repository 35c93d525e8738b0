import AppLifecycle
import ArgumentParser
import PluginHost

/// `lifecycle-host validate PLUGIN [--json]`: see `Validator` and docs/host.md, "validate".
struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the conformance checks against a plugin, each in a process of its own: PASS, FAIL or SKIP per check.",
        discussion: "Exit status: 0 every check that ran passed, 1 at least one failed, 2 the validator could not start its processes, "
            + "64 a bad command line.")

    @Argument(help: ArgumentHelp("The plugin .so.", valueName: "PLUGIN"), completion: .file(extensions: ["so"]))
    var plugin: String

    @Flag(name: .customLong("json"), help: "Print the report as one JSON object instead of text.")
    var json = false

    @Option(name: .customLong("budget"), help: ArgumentHelp("A time budget the plugin is held to, as for 'run' (repeatable).",
                                                         valueName: "NAME=SECONDS"),
            completion: .list(["launch=", "did-enter-background=", "will-terminate=", "completion=", "background-task=", "expiration-warning=",
                               "hang=", "terminate="]))
    var budgets: [String] = []

    @Option(name: .customLong("scan-budget"), help: ArgumentHelp("How long opening the plugin and its init may take in its scan (default 5s).",
                                                                valueName: "DURATION"))
    var scanBudgetText: String?

    @Flag(name: .customLong("allow-unsafe-plugins"), help: UnsafePlugins.help)
    var allowUnsafePlugins = false

    func run() throws {
        var options = RunOptions()
        try EngineValues(budgets: budgets).apply(to: &options)  // a bad budget is a usage error, before anything runs
        let validator = Validator(path: absolute(plugin), budgets: budgets, loading: allowUnsafePlugins ? .allowUnsafePermissions : [],
                                  scanBudget: try scanBudget(scanBudgetText), configuration: options.configuration)
        let report = validator.run()
        print(json ? report.json : report.text, terminator: "")
        if report.exitStatus != 0 { throw ExitCode(report.exitStatus) }
    }
}
