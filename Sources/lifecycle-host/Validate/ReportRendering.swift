/// The forms of a `ValidationReport` (docs/host.md, "validate"): stable text (also printed a check at a
/// time, as each ends: `ValidationProgress`), one JSON object, and JUnit XML. All only ever gain fields
/// and checks; a check's id and the meaning of its result never change.
extension ValidationReport {
    /// ```
    /// validate /plugins/libecho.so
    /// plugin:    org.applifecycle.echo 1.0.0 (ABI 1.0): Prints every standard notification
    /// observes:  didFinishLaunching, didBecomeActive, …
    /// delegates: (none)
    /// scenes:    (none)
    ///
    /// PASS  load                            opens as the host opens it: … (0.012 s)
    /// FAIL  sequence:home-and-return        launch; home; foreground; … (0.140 s)
    ///       - killed by SIGSEGV while handling didEnterBackground
    /// SKIP  sequence:scenes                 not run: …
    ///
    /// result: 24 checks: 20 passed, 1 failed, 3 skipped
    /// ```
    var text: String { headerText + checks.map(Self.text).joined() + resultText }

    /// The header: the path and, once known, the plugin; then a blank line.
    var headerText: String {
        var lines = ["validate \(path)"]
        if let plugin {
            func list(_ items: [String], _ none: String) -> String { items.isEmpty ? none : items.joined(separator: ", ") }
            lines.append("plugin:    \(plugin.id) \(plugin.version) (ABI \(plugin.abi)): \(plugin.summary)")
            lines.append("observes:  \(list(plugin.observes, "(nothing)"))")
            lines.append("delegates: \(list(plugin.delegates, "(none)"))")
            lines.append("scenes:    \(list(plugin.sceneMethods, "(none)"))")
        }
        lines.append("")
        // The path and the plugin's words may hold a line feed: each line stays one line.
        return lines.map(printable).joined(separator: "\n") + "\n"
    }

    /// One check's lines: `RESULT  id (padded to 32) summary, or why it was not run (its time)`, then one
    /// line a finding. A finding may hold a line feed: each line stays one line (`printable`).
    static func text(_ check: Check) -> String {
        let label = check.result.rawValue.uppercased()
        let id = check.check.id.count >= 32 ? check.check.id + " " : check.check.id + String(repeating: " ", count: 32 - check.check.id.count)
        let time = check.seconds.map { " (\(format3($0)) s)" } ?? ""
        var lines = ["\(label)  \(id)\(check.note.map { "not run: \($0)" } ?? check.check.summary)\(time)"]
        for finding in check.findings {
            lines.append("      - \(finding.reason)" + (finding.sequences.isEmpty ? "" : " (in \(finding.sequences.joined(separator: ", ")))"))
        }
        return lines.map(printable).joined(separator: "\n") + "\n"
    }

    /// The count line, after a blank one.
    var resultText: String { "\nresult: \(checks.count) checks: \(passed) passed, \(failed) failed, \(skipped) skipped\n" }

    /// One JSON object on one line: `path`, `plugin` (null when it did not load), `checks` (each `id`,
    /// `result` pass|fail|skip, `summary`, `findings` [{`reason`, `in`}], `note` when skipped, `time`
    /// in seconds when it ran), the counts and the exit `status`.
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
                + (c.note.map { ",\"note\":\(q($0))" } ?? "") + (c.seconds.map { ",\"time\":\(format6($0))" } ?? "") + "}"
        }.joined(separator: ",")
        return "{\"path\":\(q(path)),\"plugin\":\(plugin),\"checks\":[\(checks)],\"passed\":\(passed),\"failed\":\(failed),"
            + "\"skipped\":\(skipped),\"status\":\(exitStatus)}\n"
    }

    /// JUnit XML, as CI systems read test reports (GitHub Actions' and GitLab's JUnit readers, Jenkins'
    /// junit step): one `testsuites` with one `testsuite` named after the plugin (its id, else the
    /// path), a `testcase` a check (`name` its id, `classname` `validate.` and the plugin, `time`),
    /// a `failure` (its `message` the first finding, its text every finding) or a `skipped` (why).
    /// Attribute and text content escaped, characters XML 1.0 forbids replaced by U+FFFD
    /// (`TimelineRecorder.xmlEscape`).
    var junit: String {
        let suite = plugin?.id ?? path
        // The run's time: the scan (`load`; `init` is the same process), the describing step
        // (`delegates`) and each sequence; the checks every sequence adds to would count them twice.
        let time = checks.filter { check in
            switch check.check {
            case .load, .delegates, .sequence: true
            default: false
            }
        }.compactMap(\.seconds).reduce(0, +)
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        let counts = "tests=\"\(checks.count)\" failures=\"\(failed)\" errors=\"0\" skipped=\"\(skipped)\" time=\"\(format3(time))\""
        out += "<testsuites name=\"lifecycle-host validate\" \(counts)>\n"
        out += "  <testsuite name=\(Self.xmlAttribute(suite)) \(counts)>\n"
        out += "    <properties>\n      <property name=\"path\" value=\(Self.xmlAttribute(path))/>\n"
        if let plugin {
            out += "      <property name=\"version\" value=\(Self.xmlAttribute(plugin.version))/>\n"
            out += "      <property name=\"abi\" value=\(Self.xmlAttribute(plugin.abi))/>\n"
        }
        out += "    </properties>\n"
        for check in checks {
            let opening = "    <testcase name=\(Self.xmlAttribute(check.check.id)) classname=\(Self.xmlAttribute("validate.\(suite)"))"
                + " time=\"\(format3(check.seconds ?? 0))\""
            switch check.result {
            case .pass:
                out += opening + "/>\n"
            case .skip:
                out += opening + ">\n      <skipped message=\(Self.xmlAttribute(check.note ?? ""))/>\n    </testcase>\n"
            case .fail:
                let reasons = check.findings.map { $0.reason + ($0.sequences.isEmpty ? "" : " (in \($0.sequences.joined(separator: ", ")))") }
                out += opening + ">\n      <failure message=\(Self.xmlAttribute(reasons.first ?? "failed")) type=\"finding\">"
                    + TimelineRecorder.xmlEscape(reasons.joined(separator: "\n")) + "</failure>\n    </testcase>\n"
            }
        }
        out += "  </testsuite>\n</testsuites>\n"
        return out
    }

    /// `text` as a double-quoted XML attribute value (`TimelineRecorder.xmlEscape`, the host's one XML escaping).
    static func xmlAttribute(_ text: String) -> String { "\"" + TimelineRecorder.xmlEscape(text, inAttribute: true) + "\"" }
}
