/// The two forms of a `ValidationReport` (docs/host.md, "validate"): stable text, and one JSON object.
/// Both only ever gain fields and checks; a check's id and the meaning of its result never change.
extension ValidationReport {
    /// ```
    /// validate /plugins/libecho.so
    /// plugin:    org.applifecycle.echo 1.0.0 (ABI 1.0): Prints every standard notification
    /// observes:  didFinishLaunching, didBecomeActive, …
    /// delegates: (none)
    /// scenes:    (none)
    ///
    /// PASS  load                            opens as the host opens it: …
    /// FAIL  sequence:home-and-return        launch; home; foreground; …
    ///       - killed by SIGSEGV while handling didEnterBackground
    /// SKIP  sequence:scenes                 not applicable: …
    ///
    /// result: 24 checks: 20 passed, 1 failed, 3 skipped
    /// ```
    var text: String {
        var lines = ["validate \(path)"]
        if let plugin {
            func list(_ items: [String], _ none: String) -> String { items.isEmpty ? none : items.joined(separator: ", ") }
            lines.append("plugin:    \(plugin.id) \(plugin.version) (ABI \(plugin.abi)): \(plugin.summary)")
            lines.append("observes:  \(list(plugin.observes, "(nothing)"))")
            lines.append("delegates: \(list(plugin.delegates, "(none)"))")
            lines.append("scenes:    \(list(plugin.sceneMethods, "(none)"))")
        }
        lines.append("")
        for check in checks {
            let label = check.result.rawValue.uppercased()
            let id = check.check.id.count >= 32 ? check.check.id + " " : check.check.id + String(repeating: " ", count: 32 - check.check.id.count)
            lines.append("\(label)  \(id)\(check.note.map { "not run: \($0)" } ?? check.check.summary)")
            for finding in check.findings {
                lines.append("      - \(finding.reason)" + (finding.sequences.isEmpty ? "" : " (in \(finding.sequences.joined(separator: ", ")))"))
            }
        }
        lines.append("")
        lines.append("result: \(checks.count) checks: \(passed) passed, \(failed) failed, \(skipped) skipped")
        // The path, the plugin's words and the findings may hold a line feed: each line stays one line.
        return lines.map(printable).joined(separator: "\n") + "\n"
    }

    /// One JSON object on one line: `path`, `plugin` (null when it did not load), `checks` (each `id`,
    /// `result` pass|fail|skip, `summary`, `findings` [{`reason`, `in`}], `note` when skipped), the
    /// counts and the exit `status`.
    var json: String {
        func q(_ text: String) -> String { TraceWriter.quote(text) }
        func array(_ items: [String]) -> String { "[" + items.map(q).joined(separator: ",") + "]" }
        let plugin = self.plugin.map { p in
            "{\"id\":\(q(p.id)),\"version\":\(q(p.version)),\"abi\":\(q(p.abi)),\"description\":\(q(p.summary)),"
                + "\"observes\":\(array(p.observes)),\"delegates\":\(array(p.delegates)),\"scenes\":\(array(p.sceneMethods))}"
        } ?? "null"
        let checks = self.checks.map { c in
            let findings = c.findings.map { "{\"reason\":\(q($0.reason)),\"in\":\(array($0.sequences))}" }.joined(separator: ",")
            return "{\"id\":\(q(c.check.id)),\"result\":\(q(c.result.rawValue)),\"summary\":\(q(c.check.summary)),\"findings\":[\(findings)]"
                + (c.note.map { ",\"note\":\(q($0))" } ?? "") + "}"
        }.joined(separator: ",")
        return "{\"path\":\(q(path)),\"plugin\":\(plugin),\"checks\":[\(checks)],\"passed\":\(passed),\"failed\":\(failed),"
            + "\"skipped\":\(skipped),\"status\":\(exitStatus)}\n"
    }
}
