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
            initCrash: "crashed when scanned: plugin com.example.initsegv: the plugin's process was killed by SIGSEGV while running init (\(place))",
            ctorAbort: "crashed when scanned: the plugin's process was killed by SIGABRT while opening the plugin (\(place))",
        ])
        XCTAssertTrue(first.output.contains("\(echo)\n  id:          org.applifecycle.echo\n"), "the host survived and checked Echo")

        let lines = try String(contentsOfFile: registry, encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "lifecycle-host plugin registry 1")
        XCTAssertEqual(lines.count, 4)
        let entries = lines.dropFirst().map { $0.split(separator: "\t").map(String.init) }
        // A failure in init records the plugin's id (its descriptor was read); one while opening has none.
        XCTAssertEqual(entries.map { Array($0[0...0] + $0[3...]) }, [
            [initCrash, "crashed", "the plugin's process was killed by SIGSEGV while running init", "com.example.initsegv"],
            [ctorAbort, "crashed", "the plugin's process was killed by SIGABRT while opening the plugin"],
            [echo, "clean", "org.applifecycle.echo"],
        ].sorted { $0[0] < $1[0] })
        for entry in entries {
            let info = try FileManager.default.attributesOfItem(atPath: entry[0])
            XCTAssertEqual(Int64(entry[1]), (info[.size] as? NSNumber)?.int64Value, "keyed by size")
        }

        let second = try host(["check", initCrash, ctorAbort])
        XCTAssertEqual(refusals(second.output), [
            initCrash: "remembered as crashing when scanned: plugin com.example.initsegv: the plugin's process was killed by SIGSEGV while running init (\(place))",
            ctorAbort: "remembered as crashing when scanned: the plugin's process was killed by SIGABRT while opening the plugin (\(place))",
        ])

        let rescan = try host(["check", "--rescan", initCrash])
        XCTAssertEqual(refusals(rescan.output)[initCrash],
                       "crashed when scanned: plugin com.example.initsegv: the plugin's process was killed by SIGSEGV while running init (\(place))")
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
        XCTAssertEqual(refusals(first.output), [exiting: "crashed when scanned: plugin com.example.initexit: \(why) (\(place))"])
        let entry = try String(contentsOfFile: registry, encoding: .utf8).split(separator: "\n").dropFirst().map { $0.split(separator: "\t").map(String.init) }
        XCTAssertEqual(entry.map { Array($0[0...0] + $0[3...]) }, [[exiting, "exited", why, "com.example.initexit"]])

        let remembered = try host(["check", crashing, exiting])
        XCTAssertEqual(remembered.status, 6, remembered.output)
        XCTAssertEqual(refusals(remembered.output), [
            exiting: "remembered as crashing when scanned: plugin com.example.initexit: \(why) (\(place))",
            crashing: "crashed when scanned: plugin com.example.initabrt: the plugin's process was killed by SIGABRT while running init (\(place))",
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
        XCTAssertEqual(refusals(result.output)[hang], "crashed when scanned: plugin com.example.inithang: the plugin's process did not finish within its 0.500 s init budget: "
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
            XCTAssertTrue(result.output.contains("lifecycle-host: plugin refused: \(folder)/a-segv.so: \(verb): plugin com.example.a.segv: the plugin's process was killed by SIGSEGV while running init"),
                          result.output)
            XCTAssertTrue(result.output.contains("echo: willTerminate"), result.output)
            XCTAssertTrue(result.output.contains("org.applifecycle.echo  1.0.0 \(folder)/b-echo.so\n"), "loaded in the host's process")
        }
    }

    /// A plugin named with --plugin is scanned first, as a folder's is: a crash in its init is a
    /// refusal naming it by id (trace, standard error), not the host's end; the other plugins run
    /// (status 3). Its init's output is seen once: the scan's process is silent.
    func testRunScansANamedPluginAndReportsACrashInInitByItsId() throws {
        let folder = try CBuild.temporaryFolder("scan-named")
        let crash = try CBuild.sharedObject(IsolationFixtures.initialiser(id: "com.example.named.segv", body: "raise(SIGSEGV); return LC_OK;"),
                                            named: "named-segv", in: folder)
        let chatty = try CBuild.sharedObject("#include <stdio.h>\n" + IsolationFixtures.initialiser(id: "com.example.chatty",
                                                                           body: "fputs(\"chatty: init\\n\", stderr); return LC_OK;"),
                                             named: "chatty", in: folder)
        let script = folder + "/s.scenario"
        try "launch\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        let result = try BoundedRun.run(Self.host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--script", script,
                                                    "--plugin", crash, "--plugin", chatty], environment: ["XDG_CACHE_HOME": cache], timeout: 30)
        XCTAssertEqual(result.status, 3, result.errorText)
        let refusal = try XCTUnwrap(result.records.first { $0["name"] as? String == "plugin refused" }, result.output)
        XCTAssertEqual(refusal["plugin"] as? String, "com.example.named.segv")
        XCTAssertEqual(refusal["detail"] as? String, "\(crash): crashed when scanned: plugin com.example.named.segv: the plugin's process was "
                       + "killed by SIGSEGV while running init (remembered in \(registry); --rescan to scan it again)")
        XCTAssertEqual(result.records.filter { $0["kind"] as? String == "plugin" }.map { $0["plugin"] as? String }, ["com.example.chatty"])
        XCTAssertEqual(result.errorText.components(separatedBy: "chatty: init").count - 1, 1, "init's output once: \(result.errorText)")
    }

    /// Plugins were asked for and none could be loaded: the run ends at once, before the launch, with
    /// status 9 and one clear error — not a launch with no plugins that runs until SIGTERM. With
    /// --allow-no-plugins the application runs without them (status 3: a plugin was refused).
    func testARunWhoseOnlyPluginIsRefusedEndsAtOnceUnlessAllowed() throws {
        let missing = "/nonexistent/libmissing.so"
        let result = try BoundedRun.run(Self.host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--plugin", missing],
                                        environment: ["XDG_CACHE_HOME": cache], timeout: 10)
        XCTAssertEqual(result.status, 9, result.errorText)
        XCTAssertLessThan(result.exitedAfter, 5, "at once, with no scenario and no signal")
        XCTAssertEqual(result.records.map { "\($0["kind"] ?? "") \($0["name"] ?? "")" }, ["error plugin refused", "error no plugins"])
        XCTAssertTrue(result.errorText.hasSuffix("lifecycle-host: the plugin asked for could not be loaded (refused: see above); the run ends "
                                                 + "before the launch (--allow-no-plugins runs the application without them)\n"), result.errorText)

        let folder = try CBuild.temporaryFolder("no-plugins")
        let script = folder + "/s.scenario"
        try "launch\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        let two = try BoundedRun.run(Self.host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--script", script,
                                                 "--plugin", missing, "--plugin-dir", folder + "/absent"], environment: ["XDG_CACHE_HOME": cache],
                                     timeout: 10)
        XCTAssertEqual(two.status, 9, two.errorText)
        XCTAssertTrue(two.errorText.contains("none of the 2 plugins asked for could be loaded"), two.errorText)

        let allowed = try BoundedRun.run(Self.host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--script", script,
                                                     "--plugin", missing, "--allow-no-plugins"], environment: ["XDG_CACHE_HOME": cache], timeout: 10)
        XCTAssertEqual(allowed.status, 3, allowed.errorText)
        XCTAssertEqual(allowed.records.filter { $0["kind"] as? String == "state" }.map { $0["name"] as? String }.last, "not-running",
                       "launched and terminated without plugins")
    }

    /// The registry forgets files that are gone when it is next written: plugins named once from a
    /// temporary folder do not make it grow for good.
    func testTheRegistryForgetsFilesThatAreGone() throws {
        let folder = try CBuild.temporaryFolder("scan-gone")
        let gone = try CBuild.sharedObject(IsolationFixtures.initialiser(id: "com.example.gone", body: "return LC_OK;"), named: "gone", in: folder)
        let kept = try CBuild.sharedObject(IsolationFixtures.initialiser(id: "com.example.kept", body: "return LC_OK;"), named: "kept", in: folder)
        XCTAssertEqual(try host(["check", gone]).status, 0)
        XCTAssertTrue(try String(contentsOfFile: registry, encoding: .utf8).contains(gone + "\t"))
        try FileManager.default.removeItem(atPath: gone)
        XCTAssertEqual(try host(["check", kept]).status, 0)
        let lines = try String(contentsOfFile: registry, encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.dropFirst().map { $0.split(separator: "\t")[0] }, [Substring(kept)], "only the file that exists")
    }
}
