import Foundation
import TestSupport
import XCTest

/// `lifecycle-host validate`, as a plugin's author runs it: the built host, real plugins, the report
/// read back from its JSON (and its text form checked line by line).
final class ValidateTests: XCTestCase {
    static let host = CBuild.products + "/lifecycle-host"

    /// One `validate` run: the exit status, and each check's result and findings' reasons, from `--json`.
    struct Report {
        struct Check { let result: String, reasons: [String], sequences: [[String]] }
        var status: Int32
        var ids: [String] = []
        var checks: [String: Check] = [:]
        var plugin: [String: Any]?
        var counts: (passed: Int, failed: Int, skipped: Int) = (0, 0, 0)
        var output = ""

        var failed: [String] { ids.filter { checks[$0]?.result == "fail" } }
        var skipped: [String] { ids.filter { checks[$0]?.result == "skip" } }
    }

    static func validate(_ plugin: String, _ options: [String] = []) throws -> Report {
        let result = try CBuild.run(host, ["validate", "--json"] + options + [plugin])
        var report = Report(status: result.status, output: result.output)
        let json = result.output.components(separatedBy: "--stderr--\n")[0]
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return report }
        report.plugin = object["plugin"] as? [String: Any]
        report.counts = (object["passed"] as? Int ?? -1, object["failed"] as? Int ?? -1, object["skipped"] as? Int ?? -1)
        for check in object["checks"] as? [[String: Any]] ?? [] {
            let id = check["id"] as? String ?? "?"
            let findings = check["findings"] as? [[String: Any]] ?? []
            report.ids.append(id)
            report.checks[id] = Report.Check(result: check["result"] as? String ?? "?", reasons: findings.map { $0["reason"] as? String ?? "" },
                                             sequences: findings.map { $0["in"] as? [String] ?? [] })
        }
        return report
    }

    /// `text` without the checks' times (" (0.213 s)" at the end of a check's line).
    static func untimed(_ text: String) -> String {
        text.replacingOccurrences(of: #" \(\d+\.\d{3} s\)(?=\n|$)"#, with: "", options: .regularExpression)
    }

    static let sequences = ["launch", "launch-background", "home-and-return", "lock-unlock", "interruption", "memory-warning", "time-change",
                            "device-state", "terminate-background", "terminate-suspended", "purge", "open-url", "fetch", "remote-notification", "url-session", "handoff",
                            "restoration", "notifications", "scenes"]
    /// Every check, in report order.
    static let checkIDs = ["load", "init", "delegates"] + sequences.map { "sequence:\($0)" } + ["budgets", "completions", "host-api", "output", "unload"]

    func testEveryExamplePluginPassesEveryCheckThatAppliesToIt() throws {
        // What does not apply: scenes to a plugin without scene methods or observers, posting observed
        // names to one that observes only what the sequences post.
        let skips: [String: [String]] = [
            "Echo": ["sequence:scenes"],
            "StateKeeper": ["sequence:notifications", "sequence:scenes"],
            "Greeter": ["sequence:notifications", "sequence:scenes"],
            "CacheTrimmer": ["sequence:notifications", "sequence:scenes"],
            "Sessions": ["sequence:notifications", "sequence:scenes"],
            "Scenes": ["sequence:notifications"],
        ]
        for (name, skipped) in skips.sorted(by: { $0.key < $1.key }) {
            let report = try Self.validate(CBuild.products + "/lib\(name).so")
            XCTAssertEqual(report.status, 0, "\(name): \(report.output)")
            XCTAssertEqual(report.ids, Self.checkIDs, name)
            XCTAssertEqual(report.failed, [], "\(name): \(report.output)")
            XCTAssertEqual(report.skipped, skipped, name)
            XCTAssertEqual(report.counts.passed, Self.checkIDs.count - skipped.count, name)
            XCTAssertEqual(report.plugin?["id"] as? String, "org.applifecycle.\(name.lowercased())", name)
        }
    }

    func testTheTextReportHasOneLinePerCheckAndACountLine() throws {
        let echo = CBuild.products + "/libEcho.so"
        let result = try CBuild.run(Self.host, ["validate", echo])
        XCTAssertEqual(result.status, 0, result.output)
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(lines.first, "validate \(echo)")
        XCTAssertEqual(lines[1], "plugin:    org.applifecycle.echo 1.0.0 (ABI 1.7): Prints every standard notification")
        XCTAssertEqual(lines[3], "delegates: (none)")
        let checks = lines.filter { $0.hasPrefix("PASS  ") || $0.hasPrefix("FAIL  ") || $0.hasPrefix("SKIP  ") }
        XCTAssertEqual(checks.map { String($0.dropFirst(6).prefix(32)).trimmingCharacters(in: .whitespaces) }, Self.checkIDs)
        // Each check that ran ends with its time: "(0.213 s)".
        let timed = try NSRegularExpression(pattern: #" \(\d+\.\d{3} s\)$"#)
        for line in checks where !line.hasPrefix("SKIP") {
            XCTAssertEqual(timed.numberOfMatches(in: line, range: NSRange(line.startIndex..., in: line)), 1, line)
        }
        XCTAssertEqual(Self.untimed(checks.first ?? ""), "PASS  load                            opens as the host opens it: a regular file, not a link, safe permissions, "
                       + "a sound ELF shared object for this machine, a valid descriptor (in a process of its own)")
        XCTAssertEqual(checks.first { $0.contains("sequence:scenes") },
                       "SKIP  sequence:scenes                 not run: it implements no scene delegate method and observes no scene notification")
        XCTAssertEqual(lines.suffix(2), ["result: 27 checks: 26 passed, 0 failed, 1 skipped", ""])
    }

    /// A failing plugin: status 1; each finding once, naming every sequence it happened in; the checks
    /// it did not break still pass.
    func testAFailingPluginExitsOneWithItsFindingsGroupedBySequence() throws {
        let plugin = try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.memory", name: "didReceiveMemoryWarning", body: "raise(SIGBUS);"), named: "memory")
        let report = try Self.validate(plugin)
        XCTAssertEqual(report.status, 1, report.output)
        XCTAssertEqual(report.failed, ["sequence:memory-warning"], report.output)
        XCTAssertEqual(report.checks["sequence:memory-warning"]?.reasons, ["killed by SIGBUS while handling didReceiveMemoryWarning"])
        XCTAssertEqual(report.checks["sequence:memory-warning"]?.sequences, [["memory-warning"]])
        XCTAssertEqual(report.counts.failed, 1)

        let text = try CBuild.run(Self.host, ["validate", plugin])
        XCTAssertEqual(text.status, 1)
        XCTAssertTrue(Self.untimed(text.output).contains("""
            FAIL  sequence:memory-warning         launch; memory-warning normal; memory-warning warning; memory-warning critical; terminate
                  - killed by SIGBUS while handling didReceiveMemoryWarning (in memory-warning)
            """), text.output)
        XCTAssertTrue(text.output.hasSuffix("result: 27 checks: 24 passed, 1 failed, 2 skipped\n"), text.output)
    }

    /// One state-preservation gate without the other: `delegates` fails naming both methods (neither
    /// would ever be called), and nothing else does.
    func testALoneStatePreservationGateFailsDelegates() throws {
        let plugin = try CBuild.sharedObject("""
            #define LC_DECLARE_DELEGATE_FUNCTIONS
            #include "lifecycle.h"
            bool application_shouldRestoreApplicationState(lc_app *app, const lc_dict *coder) { (void)app, (void)coder; return true; }
            static lc_status fixture_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
                (void)host, (void)plugin, (void)state; return LC_OK;
            }
            static const lc_plugin_descriptor_t descriptor = {
                .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
                .abi_minor = LC_ABI_VERSION_MINOR, .id = "com.example.lonegate", .version = "1", .description = "one gate",
                .init = fixture_init,
            };
            LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
            """, named: "lonegate", in: try CBuild.temporaryFolder("validate-lonegate"))
        let report = try Self.validate(plugin)
        XCTAssertEqual(report.status, 1, report.output)
        XCTAssertEqual(report.failed, ["delegates"], report.output)
        XCTAssertEqual(report.checks["delegates"]?.reasons, [
            "implements application:shouldRestoreApplicationState: but not application:shouldSaveApplicationState: "
                + "(state preservation needs both, as on iOS): its state is neither saved nor restored",
        ])
    }

    /// A plugin with `deinitBody` (C, the body of `void fixture_deinit(void *state)`) and `initBody` in its init.
    private func plugin(_ name: String, initBody: String = "return LC_OK;", deinitBody: String, extra: String = "") throws -> String {
        try CBuild.sharedObject("""
            #include "lifecycle.h"
            #include <pthread.h>
            #include <unistd.h>
            static const lc_host_api_t *host;
            static lc_plugin *me;
            \(extra)
            static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
                (void)state; host = api; me = plugin;
                \(initBody)
            }
            static void fixture_deinit(void *state) { (void)state; \(deinitBody) }
            static const lc_plugin_descriptor_t descriptor = {
                .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
                .abi_minor = LC_ABI_VERSION_MINOR, .id = "com.example.\(name)", .version = "1.0", .description = "unload fixture",
                .init = fixture_init, .deinit = fixture_deinit,
            };
            LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
            """, named: name, in: try CBuild.temporaryFolder("validate-unload"))
    }

    func testUnloadFailsForACrashInDeinitAndForAThreadCallingTheHostAfterIt() throws {
        let crasher = try Self.validate(try plugin("deinitcrash", deinitBody: "*(volatile int *)0 = 1;"))
        XCTAssertEqual(crasher.status, 1, crasher.output)
        XCTAssertEqual(crasher.failed, ["unload"], crasher.output)
        XCTAssertEqual(crasher.checks["unload"]?.reasons, ["killed by SIGSEGV while running deinit"])
        // Every step unloads it: the load-and-unload step first, then each sequence that ran.
        XCTAssertEqual(crasher.checks["unload"]?.sequences.first?.first, "describe")
        XCTAssertEqual(crasher.checks["unload"]?.sequences.first?.count, 1 + Self.sequences.count - 2)

        let poster = try Self.validate(try plugin("latepost", initBody: """
            pthread_t thread;
            return pthread_create(&thread, NULL, keep_posting, NULL) == 0 ? LC_OK : LC_ERR_SYSTEM;
            """, deinitBody: "", extra: """
            static void *keep_posting(void *arg) {
                (void)arg;
                for (;;) { host->post(me, "com.example.late", NULL, NULL); usleep(1000); }
                return NULL;
            }
            """))
        XCTAssertEqual(poster.status, 1, poster.output)
        XCTAssertEqual(poster.failed, ["unload"], poster.output)
        XCTAssertEqual(poster.checks["unload"]?.reasons,
                       ["post in or after its deinit refused with LC_ERR_NOT_FOUND: post: plugin 'com.example.latepost' is not loaded"])
    }

    /// A plugin whose init starts a timer, or a thread, that crashes 50 ms later: each step lets the
    /// loop run on after init (`ValidationStep.settle`), so the crash fails `init` with its reason, and
    /// the sequences it never reached are skipped, not passed.
    func testACrashFiftyMillisecondsAfterInitFailsInitAndTheSequencesAreNotRun() throws {
        let timer = try plugin("latetimer", initBody: "return host->add_timer(me, 0.05, boom, NULL, NULL);", deinitBody: "", extra: """
            #include <signal.h>
            static void boom(void *ctx) { (void)ctx; raise(SIGSEGV); }
            """)
        let thread = try plugin("latethread", initBody: """
            pthread_t thread;
            return pthread_create(&thread, NULL, boom, NULL) == 0 ? LC_OK : LC_ERR_SYSTEM;
            """, deinitBody: "", extra: """
            #include <signal.h>
            static void *boom(void *arg) { (void)arg; usleep(50000); raise(SIGABRT); return NULL; }
            """)
        let applicable = Self.sequences.filter { $0 != "notifications" && $0 != "scenes" }
        for (path, signal) in [(timer, "SIGSEGV"), (thread, "SIGABRT")] {
            let report = try Self.validate(path)
            XCTAssertEqual(report.status, 1, report.output)
            XCTAssertEqual(report.failed, ["init"], report.output)
            XCTAssertEqual(report.checks["init"]?.reasons, ["killed by \(signal) after its init (in a thread or timer of the plugin)"], report.output)
            XCTAssertEqual(report.checks["init"]?.sequences, [["describe"] + applicable], report.output)
            XCTAssertEqual(report.skipped, Self.sequences.map { "sequence:\($0)" }, report.output)
            XCTAssertEqual(report.checks["unload"]?.result, "pass", report.output)
        }
    }

    func testAnInitThatFailsFailsInitAndSkipsTheRest() throws {
        let report = try Self.validate(try IsolationFixtures.build(IsolationFixtures.initialiser(
            id: "com.example.nope", body: #"return LC_ERR_SYSTEM;"#), named: "nope"))
        XCTAssertEqual(report.status, 1, report.output)
        XCTAssertEqual(report.failed, ["init"])
        XCTAssertEqual(report.checks["init"]?.reasons, ["init failed with LC_ERR_SYSTEM: the plugin set no message"])
        XCTAssertEqual(report.skipped, Array(Self.checkIDs.dropFirst(2)))
        XCTAssertEqual(report.checks["load"]?.result, "pass")
        XCTAssertNil(report.plugin, "a plugin that did not load is not described")
    }

    func testABadBudgetIsAUsageErrorBeforeAnythingRuns() throws {
        let result = try CBuild.run(Self.host, ["validate", "--budget", "hang=0", CBuild.products + "/libEcho.so"])
        XCTAssertEqual(result.status, 64, result.output)
        XCTAssertTrue(result.output.contains("Error: --budget hang=0: must be more than 0"), result.output)
        let missing = try CBuild.run(Self.host, ["validate", "/nonexistent/libnothing.so"])
        XCTAssertEqual(missing.status, 1, missing.output)
        XCTAssertTrue(missing.output.contains("FAIL  load"), missing.output)
    }

    // MARK: Reporting as it goes, --only, --fail-fast, --check-timeout, --format

    /// The text report arrives a check at a time, as each ends: the lines of the checks before a hanging
    /// one are read while the validator still runs, and the hanging check fails at --check-timeout, so
    /// the whole report arrives within that budget, not after minutes.
    func testTheTextReportArrivesAsChecksEndAndAHangFailsAtTheCheckTimeout() throws {
        let plugin = try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.hangs", name: "didReceiveMemoryWarning", body: "for (;;) {}"), named: "hangs")
        let started = Date()
        let process = try RunningProcess(Self.host, ["validate", "--check-timeout", "2", plugin])
        let early = process.waitForLine(timeout: 30) { $0.hasPrefix("PASS  sequence:lock-unlock") }
        XCTAssertNotNil(early, process.output.joined(separator: "\n"))
        XCTAssertNil(process.procState.flatMap { $0 == "Z" ? $0 : nil }, "still running when the earlier checks were printed")
        let memory = process.waitForLine(timeout: 30) { $0.hasPrefix("FAIL  sequence:memory-warning") }
        XCTAssertNotNil(memory, process.output.joined(separator: "\n"))
        XCTAssertEqual(process.wait(timeout: 60), 1)
        XCTAssertLessThan(Date().timeIntervalSince(started), 30, "the hang cost its 2 s, not the budgets' sum")
        let lines = process.output
        let index = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("FAIL  sequence:memory-warning") })
        XCTAssertEqual(lines[index + 1], "      - did not end within 2.000 s: killed by the validator while handling didReceiveMemoryWarning (in memory-warning)")
        XCTAssertEqual(lines.last, "result: 27 checks: 24 passed, 1 failed, 2 skipped")
    }

    /// --fail-fast: after the first failed check the sequences not begun are skipped, naming it; the
    /// checks that ran keep their results. --only: the report holds the checks asked for, in report
    /// order, and runs only what they need.
    func testFailFastSkipsTheRestAndOnlyReportsTheChecksAskedFor() throws {
        let plugin = try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.bus", name: "didReceiveMemoryWarning", body: "raise(SIGBUS);"), named: "bus")
        let fast = try Self.validate(plugin, ["--fail-fast"])
        XCTAssertEqual(fast.status, 1, fast.output)
        XCTAssertEqual(fast.failed, ["sequence:memory-warning"])
        let after = Self.sequences.drop { $0 != "memory-warning" }.dropFirst().map { "sequence:\($0)" }
        XCTAssertEqual(fast.skipped, Array(after), fast.output)
        let text = try CBuild.run(Self.host, ["validate", "--fail-fast", plugin])
        XCTAssertTrue(text.output.contains("SKIP  sequence:time-change            not run: --fail-fast: sequence:memory-warning failed\n"), text.output)

        let only = try Self.validate(CBuild.products + "/libEcho.so", ["--only", "sequence:fetch", "--only", "init"])
        XCTAssertEqual(only.status, 0, only.output)
        XCTAssertEqual(only.ids, ["init", "sequence:fetch"])
        let onlyText = try CBuild.run(Self.host, ["validate", "--only", "sequence:fetch", CBuild.products + "/libEcho.so"])
        XCTAssertTrue(onlyText.output.hasSuffix("\nresult: 1 checks: 1 passed, 0 failed, 0 skipped\n"), onlyText.output)

        let bad = try CBuild.run(Self.host, ["validate", "--only", "sequence:fech", plugin])
        XCTAssertEqual(bad.status, 64, bad.output)
        XCTAssertTrue(bad.output.contains("Error: --only sequence:fech: not a check (did you mean 'sequence:fetch'?)"), bad.output)
        let format = try CBuild.run(Self.host, ["validate", "--format", "xml", plugin])
        XCTAssertEqual(format.status, 64, format.output)
        XCTAssertTrue(format.output.contains("Error: --format must be text, json or junit, not 'xml'"), format.output)
    }

    /// --format junit: JUnit XML as CI systems read it, loaded by a real consumer (Debian's
    /// python3-junitparser, the parser GitLab-style tooling uses) and by xmllint; a failing check is a
    /// `failure` with its finding, a skipped one `skipped` with why; the suite named by the plugin's id.
    func testTheJUnitReportIsReadByARealConsumer() throws {
        let python = try RequiredTool.python(importing: "junitparser", package: "python3-junitparser", for: "to read the JUnit report")
        let xmllint = try RequiredTool.path("xmllint", package: "libxml2-utils", for: "to check the JUnit report is well-formed XML")
        let plugin = try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.junit", name: "didReceiveMemoryWarning", body: "raise(SIGBUS);"), named: "junit")
        let folder = try CBuild.temporaryFolder("junit")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let result = try CBuild.run(Self.host, ["validate", "--format", "junit", plugin])
        XCTAssertEqual(result.status, 1, result.output)
        let xml = result.output.components(separatedBy: "--stderr--\n")[0]
        try xml.write(toFile: folder + "/report.xml", atomically: true, encoding: .utf8)
        // Well-formed, and valid against the JUnit report format as those readers document it
        // (`junitSchema`: testsuites → testsuite with name and tests → testcase with name and
        // classname, at most one of failure, error or skipped).
        try Self.junitSchema.write(toFile: folder + "/junit.xsd", atomically: true, encoding: .utf8)
        let valid = try CBuild.run(xmllint, ["--noout", "--schema", folder + "/junit.xsd", folder + "/report.xml"])
        XCTAssertEqual(valid.status, 0, valid.output)
        let read = try CBuild.run(python, ["-c", """
            import sys
            from junitparser import JUnitXml, Failure, Skipped
            xml = JUnitXml.fromfile(sys.argv[1])
            for suite in xml:
                print("suite", suite.name, suite.tests, suite.failures, suite.skipped, suite.errors)
                for case in suite:
                    kinds = [type(r).__name__ + ":" + (r.message or "") for r in case.result]
                    print("case", case.name, case.classname, "|".join(kinds))
            """, folder + "/report.xml"])
        XCTAssertEqual(read.status, 0, read.output)
        let lines = read.output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "suite com.example.junit 27 1 2 0")
        XCTAssertEqual(lines.filter { $0.hasPrefix("case ") }.map { $0.split(separator: " ")[1] }.map(String.init), Self.checkIDs)
        XCTAssertTrue(lines.contains("case sequence:memory-warning validate.com.example.junit "
                                     + "Failure:killed by SIGBUS while handling didReceiveMemoryWarning (in memory-warning)"), read.output)
        XCTAssertTrue(lines.contains("case sequence:scenes validate.com.example.junit "
                                     + "Skipped:it implements no scene delegate method and observes no scene notification"), read.output)
        XCTAssertTrue(lines.contains("case load validate.com.example.junit "), read.output)
    }

    /// The JUnit XML report format as its readers document it (GitLab's "Unit test reports", Jenkins'
    /// junit step, GitHub actions reading JUnit): written here from that description, not copied from
    /// any project's schema file. What they require: a `testsuite` with `name` and `tests`, a
    /// `testcase` with `name` and `classname`, in it at most one of `failure`, `error`, `skipped`.
    static let junitSchema = """
        <?xml version="1.0" encoding="UTF-8"?>
        <xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
          <xs:complexType name="outcome">
            <xs:simpleContent>
              <xs:extension base="xs:string">
                <xs:attribute name="message" type="xs:string"/>
                <xs:attribute name="type" type="xs:string"/>
              </xs:extension>
            </xs:simpleContent>
          </xs:complexType>
          <xs:attributeGroup name="counts">
            <xs:attribute name="tests" type="xs:nonNegativeInteger" use="required"/>
            <xs:attribute name="failures" type="xs:nonNegativeInteger"/>
            <xs:attribute name="errors" type="xs:nonNegativeInteger"/>
            <xs:attribute name="skipped" type="xs:nonNegativeInteger"/>
            <xs:attribute name="time" type="xs:decimal"/>
          </xs:attributeGroup>
          <xs:element name="testsuites">
            <xs:complexType>
              <xs:sequence>
                <xs:element ref="testsuite" minOccurs="0" maxOccurs="unbounded"/>
              </xs:sequence>
              <xs:attribute name="name" type="xs:string"/>
              <xs:attributeGroup ref="counts"/>
            </xs:complexType>
          </xs:element>
          <xs:element name="testsuite">
            <xs:complexType>
              <xs:sequence>
                <xs:element name="properties" minOccurs="0">
                  <xs:complexType>
                    <xs:sequence>
                      <xs:element name="property" minOccurs="0" maxOccurs="unbounded">
                        <xs:complexType>
                          <xs:attribute name="name" type="xs:string" use="required"/>
                          <xs:attribute name="value" type="xs:string" use="required"/>
                        </xs:complexType>
                      </xs:element>
                    </xs:sequence>
                  </xs:complexType>
                </xs:element>
                <xs:element name="testcase" minOccurs="0" maxOccurs="unbounded">
                  <xs:complexType>
                    <xs:choice minOccurs="0">
                      <xs:element name="failure" type="outcome"/>
                      <xs:element name="error" type="outcome"/>
                      <xs:element name="skipped" type="outcome"/>
                    </xs:choice>
                    <xs:attribute name="name" type="xs:string" use="required"/>
                    <xs:attribute name="classname" type="xs:string" use="required"/>
                    <xs:attribute name="time" type="xs:decimal"/>
                  </xs:complexType>
                </xs:element>
              </xs:sequence>
              <xs:attribute name="name" type="xs:string" use="required"/>
              <xs:attributeGroup ref="counts"/>
            </xs:complexType>
          </xs:element>
        </xs:schema>
        """
}
