import Foundation
import TestSupport
import XCTest

/// Scanning plugins before the host loads them (`check`, `run --plugin-dir`): init runs in a process
/// of its own within a budget, crashers are remembered in the registry (keyed by path, size and
/// modification time) and refused without running again until the file changes or `--rescan`.
final class PluginScanTests: XCTestCase {
    static let host = CBuild.products + "/lifecycle-host"

    var cache = ""
    var registry: String { cache + "/lifecycle-host/plugin-registry" }

    override func setUpWithError() throws {
        cache = try CBuild.temporaryFolder("scan-cache")
    }

    func host(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try CBuild.run(Self.host, arguments, environment: ["XDG_CACHE_HOME": cache])
    }

    /// The `refused:` lines of a `check` output, by file.
    func refusals(_ output: String) -> [String: String] {
        var result: [String: String] = [:]
        var file = ""
        for line in output.split(separator: "\n").map(String.init) {
            if line.hasPrefix("/") { file = line }
            if line.hasPrefix("  refused:     ") { result[file] = String(line.dropFirst(15)) }
        }
        return result
    }

    func testCheckScansCrashersInAProcessOfTheirOwnRemembersThemAndRescansOnRequest() throws {
        let initCrash = try IsolationFixtures.build(IsolationFixtures.initialiser(id: "com.example.initsegv", body: "*(volatile int *)0 = 1; return LC_OK;"),
                                                    named: "initsegv")
        let ctorAbort = try IsolationFixtures.build(IsolationFixtures.initialiser(id: "com.example.ctor", body: "return LC_OK;")
            + "\n__attribute__((constructor)) static void boom(void) { abort(); }\n", named: "ctor")
        let echo = CBuild.products + "/libEcho.so"
        let place = "remembered in \(registry); --rescan to scan it again"

        let first = try host(["check", initCrash, ctorAbort, echo])
        XCTAssertEqual(first.status, 3, first.output)
        XCTAssertEqual(refusals(first.output), [
            initCrash: "crashed when scanned: the plugin's process was killed by SIGSEGV while running init (\(place))",
            ctorAbort: "crashed when scanned: the plugin's process was killed by SIGABRT while opening the plugin (\(place))",
        ])
        XCTAssertTrue(first.output.contains("\(echo)\n  id:          org.applifecycle.echo\n"), "the host survived and checked Echo")

        let lines = try String(contentsOfFile: registry, encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "lifecycle-host plugin registry 1")
        XCTAssertEqual(lines.count, 4)
        let entries = lines.dropFirst().map { $0.split(separator: "\t").map(String.init) }
        XCTAssertEqual(entries.map { [$0[0], $0[3], $0[4]] }, [
            [initCrash, "crashed", "the plugin's process was killed by SIGSEGV while running init"],
            [ctorAbort, "crashed", "the plugin's process was killed by SIGABRT while opening the plugin"],
            [echo, "clean", "org.applifecycle.echo"],
        ].sorted { $0[0] < $1[0] })
        for entry in entries {
            let info = try FileManager.default.attributesOfItem(atPath: entry[0])
            XCTAssertEqual(Int64(entry[1]), (info[.size] as? NSNumber)?.int64Value, "keyed by size")
        }

        let second = try host(["check", initCrash, ctorAbort])
        XCTAssertEqual(refusals(second.output), [
            initCrash: "remembered as crashing when scanned: the plugin's process was killed by SIGSEGV while running init (\(place))",
            ctorAbort: "remembered as crashing when scanned: the plugin's process was killed by SIGABRT while opening the plugin (\(place))",
        ])

        let rescan = try host(["check", "--rescan", initCrash])
        XCTAssertEqual(refusals(rescan.output)[initCrash],
                       "crashed when scanned: the plugin's process was killed by SIGSEGV while running init (\(place))")
        let forgotten = try String(contentsOfFile: registry, encoding: .utf8)
        XCTAssertFalse(forgotten.contains(ctorAbort), "--rescan forgets every entry")

        // Changed on disk (size, modification time): scanned again; it is fixed now.
        _ = try CBuild.sharedObject(IsolationFixtures.initialiser(id: "com.example.initsegv", body: "return LC_OK;"),
                                    named: "initsegv", in: (initCrash as NSString).deletingLastPathComponent)
        let fixed = try host(["check", initCrash])
        XCTAssertEqual(fixed.status, 0, fixed.output)
        XCTAssertTrue(fixed.output.contains("  id:          com.example.initsegv"))
    }

    /// docs/host.md: `check` exits 6 when a plugin calls `exit()` in its init — whether its scan saw it
    /// now or the registry remembers it — and 6 wins over another plugin's refusal (3).
    func testAnExitInInitIsStatusSixWhenScannedAndWhenRemembered() throws {
        let exiting = try IsolationFixtures.build(IsolationFixtures.initialiser(id: "com.example.initexit", body: "exit(9);"), named: "initexit")
        let crashing = try IsolationFixtures.build(IsolationFixtures.initialiser(id: "com.example.initabrt", body: "abort();"), named: "initabrt")
        let place = "remembered in \(registry); --rescan to scan it again"
        let why = "the plugin's process exited with status 9 while running init"

        let first = try host(["check", exiting])
        XCTAssertEqual(first.status, 6, first.output)
        XCTAssertEqual(refusals(first.output), [exiting: "crashed when scanned: \(why) (\(place))"])
        let entry = try String(contentsOfFile: registry, encoding: .utf8).split(separator: "\n").dropFirst().map { $0.split(separator: "\t").map(String.init) }
        XCTAssertEqual(entry.map { [$0[0], $0[3], $0[4]] }, [[exiting, "exited", why]])

        let remembered = try host(["check", crashing, exiting])
        XCTAssertEqual(remembered.status, 6, remembered.output)
        XCTAssertEqual(refusals(remembered.output), [
            exiting: "remembered as crashing when scanned: \(why) (\(place))",
            crashing: "crashed when scanned: the plugin's process was killed by SIGABRT while running init (\(place))",
        ])
        let onlyCrash = try host(["check", crashing])
        XCTAssertEqual(onlyCrash.status, 3, onlyCrash.output)
    }

    func testAnInitThatHangsIsKilledAtTheScanBudgetAndRemembered() throws {
        let hang = try IsolationFixtures.build(IsolationFixtures.initialiser(id: "com.example.inithang", body: "for (;;) {} return LC_OK;"),
                                               named: "inithang")
        let started = Date()
        let result = try host(["check", "--scan-budget", "0.5", hang])
        XCTAssertLessThan(Date().timeIntervalSince(started), 4)
        XCTAssertEqual(refusals(result.output)[hang], "crashed when scanned: the plugin's process did not finish within its 0.500 s init budget: "
                       + "killed (SIGKILL) while running init (remembered in \(registry); --rescan to scan it again)")
        let bad = try host(["check", "--scan-budget", "0", hang])
        XCTAssertEqual(bad.status, 64, bad.output)
        XCTAssertTrue(bad.output.contains("--scan-budget 0: must be more than 0"), bad.output)
    }

    func testRunScansAFoldersPluginsAndLoadsOnlyTheCleanOnesInItsProcess() throws {
        let folder = try CBuild.temporaryFolder("scan-folder")
        _ = try CBuild.sharedObject(IsolationFixtures.initialiser(id: "com.example.a.segv", body: "raise(SIGSEGV); return LC_OK;"),
                                    named: "a-segv", in: folder)
        try FileManager.default.copyItem(atPath: CBuild.products + "/libEcho.so", toPath: folder + "/b-echo.so")
        let script = folder + "/s.scenario"
        try "launch\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        let arguments = ["run", "--no-socket", "--no-pressure", "--no-clock", "--script", script, "--plugin-dir", folder]
        for round in 1...2 {
            let result = try host(arguments)
            XCTAssertEqual(result.status, 3, result.output)  // a plugin refused; the host ran the others
            let verb = round == 1 ? "crashed when scanned" : "remembered as crashing when scanned"
            XCTAssertTrue(result.output.contains("lifecycle-host: plugin refused: \(folder)/a-segv.so: \(verb): the plugin's process was killed by SIGSEGV while running init"),
                          result.output)
            XCTAssertTrue(result.output.contains("echo: willTerminate"), result.output)
            XCTAssertTrue(result.output.contains("org.applifecycle.echo  1.0.0 \(folder)/b-echo.so\n"), "loaded in the host's process")
        }
    }
}
