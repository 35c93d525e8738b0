import Foundation
import Synchronization
import TestSupport
import XCTest

@testable import lifecycle_host

/// `reload ID [PATH] [--force]` on the built host: real plugins built twice from one fixture
/// (Fixtures/reload_fixture.c, `-DBUILD`), a real control socket, a second plugin counting a stream
/// of notifications posted from another connection the whole time (docs/host.md, "Reloading a plugin").
final class ReloadTests: XCTestCase {
    static let fixture = CBuild.root + "/Tests/HostTests/Fixtures/reload_fixture.c"
    let id = "com.example.reloadable"

    /// A folder with the counter and build A of the reloadable plugin, the log file they write.
    struct Rig {
        let folder: String
        let log: String
        let counter: String
        let plugin: String
    }

    func makeRig(_ name: String) throws -> Rig {
        let folder = try CBuild.temporaryFolder(name)
        let counter = try CBuild.sharedObject(file: Self.fixture, defines: ["COUNTER"], named: "counter", in: folder)
        let plugin = try build("A", named: "reloadable", in: folder)
        return Rig(folder: folder, log: folder + "/reload.log", counter: counter, plugin: plugin)
    }

    func build(_ build: String, _ defines: [String] = [], named name: String, in folder: String) throws -> String {
        try CBuild.sharedObject(file: Self.fixture, defines: ["BUILD=\"\(build)\""] + defines, named: name, in: folder)
    }

    /// The host running with the counter and the reloadable plugin, launched and active.
    func start(_ rig: Rig, _ extra: [String] = []) throws -> (process: RunningProcess, socket: String) {
        let socket = rig.folder + "/host.sock"
        let process = try RunningProcess(HostEndToEndTests.host,
                                         ["run", "--trace", "json", "--socket", socket, "--no-signals", "--no-pressure", "--no-clock",
                                          "--plugin", rig.counter, "--plugin", rig.plugin] + extra,
                                         environment: ["RELOAD_LOG": rig.log])
        XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"didBecomeActive\"") }, "launched")
        return (process, socket)
    }

    /// Makes a rig named `name`, starts the host on it (`extra` options), runs `body` (the requests),
    /// terminates the run and checks that it ended with status 0, then runs `check` (on what it wrote).
    func session(_ name: String, _ extra: [String] = [], file: StaticString = #filePath, line: UInt = #line,
                 _ body: (_ rig: Rig, _ process: RunningProcess, _ socket: String) throws -> Void,
                 then check: (_ rig: Rig, _ process: RunningProcess) throws -> Void) throws
    {
        let rig = try makeRig(name)
        defer { try? FileManager.default.removeItem(atPath: rig.folder) }
        let (process, socket) = try start(rig, extra)
        defer { _ = process.wait(timeout: 5) }
        try body(rig, process, socket)
        XCTAssertEqual(try request(socket, "send terminate"), "ok not-running", file: file, line: line)
        XCTAssertEqual(process.wait(timeout: 10), 0, process.standardError, file: file, line: line)
        try check(rig, process)
    }

    /// The log's lines written by the host's process (not by the scans' processes), without the pid.
    func hostLog(_ rig: Rig, pid: Int32) -> [String] {
        let text = (try? String(contentsOfFile: rig.log, encoding: .utf8)) ?? ""
        let prefix = "\(pid) "
        return text.split(separator: "\n").filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    func request(_ socket: String, _ line: String) throws -> String { try ControlClient.request(path: socket, line: line) }

    /// The trace's JSON objects after the `input` line of `command`, up to and including the first line
    /// `until` accepts, as `kind name [plugin] (detail)`.
    func traceLines(_ output: [String], after command: String, until: (String) -> Bool) -> [String] {
        var lines: [String] = []
        var inside = false
        for line in output {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { continue }
            let kind = object["kind"] as? String ?? "", name = object["name"] as? String ?? ""
            if !inside {
                inside = kind == "input" && name == command
                continue
            }
            var text = "\(kind) \(name)"
            if let plugin = object["plugin"] as? String { text += " [\(plugin)]" }
            if let detail = object["detail"] as? String { text += " (\(detail))" }
            lines.append(text)
            if until(text) { break }
        }
        return lines
    }

    /// Posts `com.example.tick` over the control socket, one request at a time, until `stop` is set and
    /// then `after` more; returns how many were answered `ok` (and the first failure, if any).
    final class Poster: Sendable {
        let posted = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let failure = Mutex<String?>(nil)
        private let done = DispatchSemaphore(value: 0)

        init(socket: String, after: Int) {
            let thread = Thread { [self] in
                var extra = -1
                while extra != 0 {
                    do {
                        let reply = try ControlClient.request(path: socket, line: "send post com.example.tick")
                        guard reply.hasPrefix("ok ") else {
                            failure.withLock { $0 = reply }
                            break
                        }
                        posted.wrappingAdd(1, ordering: .relaxed)
                    } catch {
                        failure.withLock { $0 = "\(error)" }
                        break
                    }
                    if extra > 0 { extra -= 1 } else if extra < 0, stop.load(ordering: .relaxed) { extra = after }
                }
                done.signal()
            }
            thread.start()
        }

        /// Waits until at least `count` were posted (at most 20 s).
        func waitFor(_ count: Int) {
            let deadline = Date().addingTimeInterval(20)
            while posted.load(ordering: .relaxed) < count, Date() < deadline, failure.withLock({ $0 }) == nil { usleep(1000) }
        }

        /// Sets `stop`, waits for the thread to end; how many were posted.
        func finish() -> Int {
            stop.store(true, ordering: .relaxed)
            _ = done.wait(timeout: .now() + 60)
            return posted.load(ordering: .relaxed)
        }
    }

    /// The log's lines without their pids, each with its pid.
    func fullLog(_ rig: Rig) -> [(pid: Int32, text: String)] {
        let text = (try? String(contentsOfFile: rig.log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let space = line.firstIndex(of: " "), let pid = Int32(line[..<space]) else { return nil }
            return (pid, String(line[line.index(after: space)...]))
        }
    }

    /// Runs the host, reloads the plugin with build B (put in place by rename) while another connection
    /// posts ticks before, during and after, terminates; checks the answers, the exact trace of the
    /// reload and that every tick was counted. Returns how many were posted and how many build A had
    /// seen when it handed its state over.
    func reloadUnderLoad(_ rig: Rig, _ extra: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws
        -> (process: RunningProcess, posted: Int, before: Int)
    {
        let (process, socket) = try start(rig, extra)
        let staged = try build("B", named: "staged", in: rig.folder)
        XCTAssertEqual(rename(staged, rig.plugin), 0, file: file, line: line)

        let poster = Poster(socket: socket, after: 100)
        poster.waitFor(100)
        XCTAssertEqual(try request(socket, "send reload \(id)"), "ok active", file: file, line: line)
        let posted = poster.finish()
        XCTAssertNil(poster.failure.withLock { $0 }, file: file, line: line)
        XCTAssertGreaterThanOrEqual(posted, 200, file: file, line: line)
        XCTAssertEqual(try request(socket, "send terminate"), "ok not-running", file: file, line: line)
        XCTAssertEqual(process.wait(timeout: 10), 0, process.standardError, file: file, line: line)

        // The trace of the reload: its own lines and the reloaded plugin's delegate calls, nothing else.
        let lines = traceLines(process.output, after: "reload \(id)") { $0.hasPrefix("plugin reloaded") }
        XCTAssertEqual(lines, [
            "plugin-reload begin [\(id)] (\(rig.plugin))",
            "delegate application:shouldSaveApplicationState: [\(id)]",
            "delegate application:willEncodeRestorableStateWithCoder: [\(id)]",
            "delegate application:shouldRestoreApplicationState: [\(id)]",
            "delegate application:didDecodeRestorableStateWithCoder: [\(id)]",
            "plugin-reload end [\(id)] (\(rig.plugin))",
            "plugin reloaded [\(id)] (1.0-B \(rig.plugin))",
        ], file: file, line: line)
        let encoded = fullLog(rig).first { $0.text.hasPrefix("encode A seen=") }.flatMap { Int($0.text.dropFirst("encode A seen=".count)) }
        let before = try XCTUnwrap(encoded, "\(fullLog(rig))", file: file, line: line)
        XCTAssertGreaterThanOrEqual(before, 100, file: file, line: line)
        XCTAssertLessThan(before, posted, file: file, line: line)
        return (process, posted, before)
    }

    /// What the run wrote, in order: build A saw `before` ticks and handed them over, B went on from
    /// there, the counter saw every tick.
    func expectedLog(posted: Int, before: Int) -> [String] {
        [
            "init counter", "init A",
            "save A", "encode A seen=\(before)",
            "init B", "deinit A seen=\(before)",
            "restore? B from A", "decode B seen=\(before)",
            "terminate counter seen=\(posted)", "terminate B seen=\(posted)",
            "deinit B seen=\(posted)", "deinit counter seen=\(posted)",
        ]
    }

    // MARK: In process

    func testReloadUnderLoadKeepsEveryNotificationOfTheOtherPluginAndHandsTheStateToTheNewBuild() throws {
        let rig = try makeRig("reload-inproc")
        defer { try? FileManager.default.removeItem(atPath: rig.folder) }
        let (process, posted, before) = try reloadUnderLoad(rig)
        XCTAssertEqual(hostLog(rig, pid: process.pid), expectedLog(posted: posted, before: before))
    }

    // MARK: Isolated

    func testAnIsolatedPluginIsReloadedUnderLoadByANewRunnerStartedBeforeTheOldStops() throws {
        let rig = try makeRig("reload-isolated")
        defer { try? FileManager.default.removeItem(atPath: rig.folder) }
        let (process, posted, before) = try reloadUnderLoad(rig, ["--isolate", id])
        // The counter runs in the host's process (its scan's lines left out); the reloadable plugin's
        // builds each in a runner of its own.
        let log = fullLog(rig).filter { $0.pid == process.pid || !$0.text.contains("counter") }
        XCTAssertEqual(log.map(\.text), expectedLog(posted: posted, before: before))
        func pids(of build: String) -> Set<Int32> {
            Set(log.filter { $0.text.split(separator: " ").dropFirst().first == Substring(build) }.map(\.pid))
        }
        let runnerA = pids(of: "A"), runnerB = pids(of: "B")
        XCTAssertEqual(runnerA.count, 1, "\(log)")
        XCTAssertEqual(runnerB.count, 1, "\(log)")
        XCTAssertTrue(runnerA.isDisjoint(with: runnerB) && !runnerA.contains(process.pid) && !runnerB.contains(process.pid), "\(log)")
    }

    // MARK: Scenario files

    func testAReloadInAScenarioRunsInOrderAndAFailedOneIsAScriptError() throws {
        let rig = try makeRig("reload-script")
        defer { try? FileManager.default.removeItem(atPath: rig.folder) }
        let newBuild = try build("B", named: "b", in: rig.folder)
        let script = rig.folder + "/reload.scenario"
        try "launch\npost com.example.tick\nreload \(id) \(newBuild)\npost com.example.tick\nreload com.example.nothing\nterminate\n"
            .write(toFile: script, atomically: true, encoding: .utf8)
        let result = try CBuild.run(HostEndToEndTests.host, ["run", "--no-socket", "--no-pressure", "--no-clock", "--no-signals", "--script", script,
                                                             "--plugin", rig.counter, "--plugin", rig.plugin],
                                    environment: ["RELOAD_LOG": rig.log])
        XCTAssertEqual(result.status, 2, result.output)
        XCTAssertTrue(result.output.hasSuffix("\(script):5: cannot reload 'com.example.nothing': no plugin with that id is loaded\n"), result.output)
        let host = Set(fullLog(rig).filter { $0.text == "init counter" }.map(\.pid)).filter { pid in
            fullLog(rig).contains { $0.pid == pid && $0.text.hasPrefix("decode") }
        }
        XCTAssertEqual(host.count, 1, "\(fullLog(rig))")
        XCTAssertEqual(fullLog(rig).filter { host.contains($0.pid) }.map(\.text), [
            "init counter", "init A", "save A", "encode A seen=1", "init B", "deinit A seen=1", "restore? B from A", "decode B seen=1",
            "deinit B seen=2", "deinit counter seen=2",
        ], "the script stopped at line 5: no terminate")
    }

    // MARK: --watch

    func testWatchReloadsOnceForAFileRewrittenInPlaceAndOnceForAFileReplacedByRename() throws {
        try session("reload-watch", ["--watch"]) { rig, process, socket in
            let buildB = try build("B", named: "staged-b", in: rig.folder)
            let buildC = try build("C", named: "staged-c", in: rig.folder)
            XCTAssertEqual(try request(socket, "send post com.example.tick"), "ok active")

            // In place (same inode, as `cp new.so plugin.so` writes, in several writes): loaded again, not
            // answered with the running image, which was loaded from a private copy and is not disturbed.
            let inode = try FileManager.default.attributesOfItem(atPath: rig.plugin)[.systemFileNumber] as? UInt64
            let bytes = try Data(contentsOf: URL(fileURLWithPath: buildB))
            let file = try FileHandle(forWritingTo: URL(fileURLWithPath: rig.plugin))
            try file.truncate(atOffset: 0)
            for start in stride(from: 0, to: bytes.count, by: 4096) {
                try file.write(contentsOf: bytes[start..<min(start + 4096, bytes.count)])
                usleep(2000)
            }
            try file.close()
            XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: rig.plugin)[.systemFileNumber] as? UInt64, inode)
            XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"plugin\",\"name\":\"reloaded\"") }, "reloaded")
            XCTAssertEqual(try request(socket, "send post com.example.tick"), "ok active")

            // By rename, as compilers and install(1) write.
            XCTAssertEqual(rename(buildC, rig.plugin), 0)
            let afterFirst = process.output.count
            XCTAssertNotNil(process.waitForLine(after: afterFirst) { $0.contains("\"kind\":\"plugin\",\"name\":\"reloaded\"") }, "reloaded")
            usleep(600_000)  // three settle times: a second reload of either change would have come
        } then: { rig, process in

            let inputs = process.output.filter { $0.contains("\"kind\":\"input\",\"name\":\"reload ") }
            XCTAssertEqual(inputs.count, 2, "\(inputs)")
            XCTAssertTrue(inputs.allSatisfy { $0.contains("\"detail\":\"watch \(rig.plugin) changed\"") }, "\(inputs)")
            XCTAssertEqual(process.output.filter { $0.contains("\"kind\":\"plugin\",\"name\":\"reloaded\"") }.count, 2)
            XCTAssertEqual(hostLog(rig, pid: process.pid), [
                "init counter", "init A",
                "save A", "encode A seen=1", "init B", "deinit A seen=1", "restore? B from A", "decode B seen=1",
                "save B", "encode B seen=2", "init C", "deinit B seen=2", "restore? C from B", "decode C seen=2",
                "terminate counter seen=2", "terminate C seen=2", "deinit C seen=2", "deinit counter seen=2",
            ])
        }
    }

    // MARK: Failures keep the old instance

    func testANewBuildWhoseInitFailsLeavesTheOldInstanceRunningAndSaysWhy() throws {
        try session("reload-initfail") { rig, process, socket in
            let failing = try build("F", ["FAIL_IN_HOST"], named: "failing", in: rig.folder)
            XCTAssertEqual(try request(socket, "send post com.example.tick"), "ok active")
            XCTAssertEqual(try request(socket, "send reload \(id) \(failing)"),
                           "error: cannot reload '\(id)': \(failing): init failed with LC_ERR_PLUGIN_REFUSED: build F refuses to start")
            // The old instance still observes (its observers were given back; the failed init's are gone).
            XCTAssertEqual(try request(socket, "send post com.example.tick"), "ok active")
            // One that fails in its scan's process too is refused there, before the old instance is asked anything.
            let scanned = try build("G", ["FAIL_INIT"], named: "scanned", in: rig.folder)
            XCTAssertEqual(try request(socket, "send reload \(id) \(scanned)"),
                           "error: cannot reload '\(id)': \(scanned): init failed with LC_ERR_PLUGIN_REFUSED: build G refuses to start")
        } then: { rig, process in
            let failing = rig.folder + "/failing.so"
            XCTAssertEqual(hostLog(rig, pid: process.pid), [
                "init counter", "init A", "save A", "encode A seen=1", "init F failing",
                "terminate counter seen=2", "terminate A seen=2", "deinit A seen=2", "deinit counter seen=2",
            ])
            let lines = traceLines(process.output, after: "reload \(id) \(failing)") { $0.hasPrefix("error") }
            XCTAssertEqual(lines, [
                "plugin-reload begin [\(id)] (\(failing))",
                "delegate application:shouldSaveApplicationState: [\(id)]",
                "delegate application:willEncodeRestorableStateWithCoder: [\(id)]",
                "plugin-reload failed [\(id)] (\(failing): init failed with LC_ERR_PLUGIN_REFUSED: build F refuses to start; the old instance runs on)",
                "error reload \(id) \(failing) (cannot reload '\(id)': \(failing): init failed with LC_ERR_PLUGIN_REFUSED: build F refuses to start)",
            ])
        }
    }

    func testAnIsolatedNewBuildWhoseInitFailsLeavesTheOldRunnerRunning() throws {
        try session("reload-isolated-fail", ["--isolate", id]) { rig, process, socket in
            let failing = try build("F", ["FAIL_INIT"], named: "failing", in: rig.folder)
            XCTAssertEqual(try request(socket, "send post com.example.tick"), "ok active")
            XCTAssertEqual(try request(socket, "send reload \(id) \(failing)"),
                           "error: cannot reload '\(id)': \(failing): init failed with LC_ERR_PLUGIN_REFUSED: build F refuses to start")
            XCTAssertEqual(try request(socket, "send post com.example.tick"), "ok active")
        } then: { rig, process in
            let log = fullLog(rig).filter { $0.pid == process.pid || !$0.text.contains("counter") }
            XCTAssertEqual(log.map(\.text), [
                "init counter", "init A", "save A", "encode A seen=1", "init F failing",
                "terminate counter seen=2", "terminate A seen=2", "deinit A seen=2", "deinit counter seen=2",
            ])
            XCTAssertEqual(Set(log.filter { $0.text.hasSuffix(" A") || $0.text.contains(" A ") }.map(\.pid)).count, 1, "one runner ran A throughout")
        }
    }

    func testARefusedFileAnUnknownIdAndBadArgumentsAreAnsweredAndChangeNothing() throws {
        try session("reload-refused") { rig, process, socket in
            let notPlugin = rig.folder + "/notes.so"
            try "not an ELF file\n".write(toFile: notPlugin, atomically: true, encoding: .utf8)
            let other = try CBuild.sharedObject(file: Self.fixture, defines: ["COUNTER"], named: "other", in: rig.folder)
            let cases: [(String, String)] = [
                ("send reload com.example.nothing", "error: cannot reload 'com.example.nothing': no plugin with that id is loaded"),
                ("send reload nodots", "error: cannot reload 'nodots': invalid id: a reverse-DNS id has at least two dot-separated labels, e.g. 'com.example.echo'"),
                ("send reload", "error: 'reload' needs a plugin id, then optionally an absolute path to load it from (reload ID [PATH] [--force])"),
                ("send reload \(id) a b", "error: 'reload' needs a plugin id, then optionally an absolute path to load it from (reload ID [PATH] [--force])"),
                ("send reload \(id) relative.so", "error: 'reload': the path 'relative.so' is relative; plugins are loaded from absolute paths only"),
                ("send reload \(id) --force --force", "error: 'reload': --force is given twice (reload ID [PATH] [--force])"),
                ("send reload \(id) --now", "error: 'reload': unknown option '--now' (reload ID [PATH] [--force])"),
                ("send reload \(id) /" + String(repeating: "x", count: 5000), "error: 'reload': the path is 5001 bytes; the limit is 4095"),
                ("send reload \(id) \(notPlugin)",
                 "error: cannot reload '\(id)': \(notPlugin): not an ELF shared object"),
                ("send reload \(id) \(rig.folder)/missing.so",
                 "error: cannot reload '\(id)': \(rig.folder)/missing.so: cannot open: No such file or directory"),
                ("send reload \(id) \(other)", "error: cannot reload '\(id)': \(other) is the plugin 'com.example.counter', not '\(id)'"),
            ]
            for (line, answer) in cases {
                XCTAssertEqual(try request(socket, line), answer, line)
            }
            XCTAssertEqual(try request(socket, "send post com.example.tick"), "ok active")
        } then: { rig, process in
            XCTAssertEqual(hostLog(rig, pid: process.pid), [
                "init counter", "init A", "terminate counter seen=1", "terminate A seen=1", "deinit A seen=1", "deinit counter seen=1",
            ], "no reload touched the old instance: nothing was encoded")
        }
    }

    func testAPendingCompletionHandlerRefusesTheReloadUntilItIsCalled() throws {
        try session("reload-completion", ["--background-mode", "fetch"]) { rig, process, socket in
            XCTAssertEqual(try request(socket, "send home"), "ok suspended")
            XCTAssertEqual(try request(socket, "send fetch"), "ok background", "held in the background by the pending handler")
            XCTAssertEqual(try request(socket, "send reload \(id)"),
                           "error: cannot reload '\(id)': it has a completion handler pending (reload it with --force to go ahead anyway)")
            XCTAssertEqual(try request(socket, "send post com.example.release"), "ok suspended")
            XCTAssertEqual(try request(socket, "send reload \(id)"), "ok suspended", "a reload is not an iOS event: it runs while suspended")
        } then: { rig, process in
            XCTAssertEqual(hostLog(rig, pid: process.pid), [
                "init counter", "init A", "fetch A", "fetched A", "save A", "encode A seen=0", "init A", "deinit A seen=0",
                "restore? A from A", "decode A seen=0", "deinit A seen=0", "deinit counter seen=0",
            ])
        }
    }

    func testATaskTheOldInstanceBeginsWhileEncodingGoesWithItNotToTheNewInstance() throws {
        try session("reload-encode-hold") { rig, process, socket in
            let holding = try build("H", ["HOLD_ON_ENCODE"], named: "holding", in: rig.folder)
            let plain = try build("B", named: "b", in: rig.folder)
            XCTAssertEqual(try request(socket, "send reload \(id) \(holding)"), "ok active")
            XCTAssertEqual(try request(socket, "send reload \(id) \(plain)"), "ok active", "H began its task while encoding: ended as H goes")
            XCTAssertEqual(try request(socket, "send reload \(id)"), "ok active", "B holds no task of H's")
        } then: { rig, process in
            let lines = traceLines(process.output, after: "reload \(id) \(rig.folder)/b.so") { $0.hasPrefix("plugin reloaded") }
            XCTAssertEqual(lines, [
                "plugin-reload begin [\(id)] (\(rig.folder)/b.so)",
                "delegate application:shouldSaveApplicationState: [\(id)]",
                "delegate application:willEncodeRestorableStateWithCoder: [\(id)]",
                "background-task begin [\(id)] (#1 encode-hold)",
                "background-task end [\(id) (reloading)] (#1 encode-hold)",
                "delegate application:shouldRestoreApplicationState: [\(id)]",
                "delegate application:didDecodeRestorableStateWithCoder: [\(id)]",
                "plugin-reload end [\(id)] (\(rig.folder)/b.so)",
                "plugin reloaded [\(id)] (1.0-B \(rig.folder)/b.so)",
            ])
            XCTAssertEqual(hostLog(rig, pid: process.pid).filter { $0.hasPrefix("hold") }, ["hold on encode H"])
        }
    }

    func testABackgroundTaskOutstandingRefusesTheReloadUnlessForced() throws {
        try session("reload-busy") { rig, process, socket in
            XCTAssertEqual(try request(socket, "send post com.example.hold"), "ok active")
            XCTAssertEqual(try request(socket, "send reload \(id)"),
                           "error: cannot reload '\(id)': it has 1 background task open (reload it with --force to go ahead anyway)")
            XCTAssertEqual(try request(socket, "send reload \(id) --force"), "ok active")
        } then: { rig, process in
            XCTAssertEqual(hostLog(rig, pid: process.pid), [
                "init counter", "init A", "hold A", "save A", "encode A seen=0", "init A", "deinit A seen=0", "restore? A from A",
                "decode A seen=0", "terminate counter seen=0", "terminate A seen=0", "deinit A seen=0", "deinit counter seen=0",
            ])
            let lines = traceLines(process.output, after: "reload \(id) --force") { $0.hasPrefix("plugin reloaded") }
            XCTAssertEqual(lines.first, "plugin-reload begin [\(id)] (\(rig.plugin))")
            XCTAssertEqual(lines[1], "background-task end [\(id)] (#1 hold)", "the old instance's task is ended first")
        }
    }
}
