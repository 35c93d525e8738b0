import AppLifecycle
import Foundation
import TestSupport
import XCTest

@testable import lifecycle_host

/// `--trace-export chrome=FILE`: the built host writes the run as Chrome trace-event JSON.
///
/// No program that reads this format installs from Debian or PyPI without downloading at run time
/// (docs/host.md, "Exporting the trace"), so every event is checked against the fields the Trace
/// Event Format requires, and the tracks, slices and instants against the run's own JSON trace.
final class TraceExportTests: XCTestCase {
    /// The phases the format defines that the export uses, and for each the fields it requires
    /// beyond the five every event has (name, ph, ts, pid, tid).
    private static let required: [String: [String]] = ["X": ["dur"], "i": ["s"], "M": ["args"]]

    /// Checks every event against the format's required fields and types; the thread names by tid.
    @discardableResult
    private func checkFormat(_ viewed: ViewedRun, file: StaticString = #filePath, line: UInt = #line) throws -> [Int: String] {
        XCTAssertEqual(viewed.chrome["displayTimeUnit"] as? String, "ms", file: file, line: line)
        XCTAssertEqual((viewed.chrome["otherData"] as? [String: Any])?["generator"] as? String, "lifecycle-host \(HostVersion.version)",
                       file: file, line: line)
        var names: [Int: String] = [:]
        var sortIndex: [Int: Int] = [:]
        for event in viewed.chromeEvents {
            let ph = try XCTUnwrap(event["ph"] as? String, "\(event)", file: file, line: line)
            XCTAssertNotNil(event["name"] as? String, "\(event)", file: file, line: line)
            XCTAssertEqual(event["pid"] as? Int, 1, "\(event)", file: file, line: line)
            XCTAssertNotNil(event["tid"] as? Int, "\(event)", file: file, line: line)
            let ts = try XCTUnwrap(event["ts"] as? Double, "\(event)", file: file, line: line)
            XCTAssertGreaterThanOrEqual(ts, 0, file: file, line: line)
            let extra = try XCTUnwrap(Self.required[ph], "a phase the export does not use: \(event)", file: file, line: line)
            for field in extra { XCTAssertNotNil(event[field], "\(field) in \(event)", file: file, line: line) }
            if ph == "X" { XCTAssertGreaterThanOrEqual(try XCTUnwrap(event["dur"] as? Double), 0, file: file, line: line) }
            if ph == "i" { XCTAssertEqual(event["s"] as? String, "t", "thread scope", file: file, line: line) }
            if ph == "M", let tid = event["tid"] as? Int, let args = event["args"] as? [String: Any] {
                switch event["name"] as? String {
                case "thread_name": names[tid] = args["name"] as? String
                case "thread_sort_index": sortIndex[tid] = args["sort_index"] as? Int
                case "process_name": XCTAssertEqual(args["name"] as? String, "lifecycle-host", file: file, line: line)
                default: XCTFail("metadata \(event)", file: file, line: line)
                }
            }
        }
        XCTAssertEqual(Set(names.keys), Set(sortIndex.keys), "every track named and ordered", file: file, line: line)
        XCTAssertEqual(names.keys.sorted(), names.keys.sorted { sortIndex[$0]! < sortIndex[$1]! }, file: file, line: line)
        return names
    }

    private func events(_ viewed: ViewedRun, tid: Int, ph: String, category: String? = nil) -> [[String: Any]] {
        viewed.chromeEvents.filter {
            $0["tid"] as? Int == tid && $0["ph"] as? String == ph && (category == nil || $0["cat"] as? String == category)
        }
    }

    func testACrashRunHasTheStateTrackATrackPerPluginSlicesForCallsAndInstants() throws {
        let viewed = try ViewedRun.crashRun()
        let tracks = try checkFormat(viewed)
        XCTAssertEqual(tracks, [1: "application state", 2: "plugin com.example.slow", 3: "plugin com.example.segv"])

        // The application's states, one slice each, contiguous, as the JSON trace has them.
        var states: [String] = []
        for record in viewed.engineRecords where states.last != record.state { states.append(record.state) }
        let stateSlices = events(viewed, tid: 1, ph: "X")
        XCTAssertEqual(stateSlices.map { $0["name"] as? String }, states)
        XCTAssertTrue(stateSlices.allSatisfy { $0["cat"] as? String == "state" })
        for (a, b) in zip(stateSlices, stateSlices.dropFirst()) {
            XCTAssertEqual((a["ts"] as! Double) + (a["dur"] as! Double), b["ts"] as! Double, accuracy: 0.0015, "contiguous")
        }

        // The slow plugin's calls, each with its duration: didEnterBackground takes its 20 ms.
        let calls = events(viewed, tid: 2, ph: "X", category: "delegate")
        let slowCalls = viewed.engineRecords.filter { $0.kind == "delegate" && $0.plugin == "com.example.slow" }.map(\.name)
        // Home, the URL session's wake into the background, back, and terminate (through the background).
        XCTAssertEqual(slowCalls, ["applicationDidEnterBackground:", "applicationDidEnterBackground:", "applicationWillEnterForeground:",
                                   "applicationDidEnterBackground:"])
        XCTAssertEqual(calls.map { $0["name"] as? String }, slowCalls)
        for call in calls where call["name"] as? String == "applicationDidEnterBackground:" {
            let dur = try XCTUnwrap(call["dur"] as? Double)
            XCTAssertGreaterThanOrEqual(dur, 20_000, "microseconds: the call slept 20 ms")
            XCTAssertLessThan(dur, 2_000_000)
        }
        XCTAssertLessThan(try XCTUnwrap(calls[2]["dur"] as? Double), 20_000, "an empty call is brief")
        // A call's slice ends at the next event: the sequence numbers it spans.
        let seqs = calls.compactMap { ($0["args"] as? [String: Any])?["seq"] as? Int }
        XCTAssertEqual(seqs.count, 4)
        XCTAssertEqual(seqs, seqs.sorted())

        // Instants: the actions and the notifications on the state's track, the crash on the plugin's.
        XCTAssertEqual(events(viewed, tid: 1, ph: "i", category: "action").map { $0["name"] as? String },
                       ["launch", "home", "url-session", "foreground", "terminate"])
        XCTAssertEqual(events(viewed, tid: 1, ph: "i", category: "notification").map { $0["name"] as? String },
                       viewed.engineRecords.filter { $0.kind == "notification" }.map(\.name))
        let failure = try XCTUnwrap(viewed.run.failures().first)
        let crash = events(viewed, tid: 3, ph: "i")
        XCTAssertEqual(crash.count, 1)
        XCTAssertEqual(crash.first?["name"] as? String, "SIGSEGV")
        XCTAssertEqual(crash.first?["cat"] as? String, "failure")
        let args = try XCTUnwrap(crash.first?["args"] as? [String: Any])
        XCTAssertEqual(args["kind"] as? String, "plugin-failed")
        XCTAssertEqual(args["detail"] as? String, failure.detail)
        XCTAssertEqual(args["detail"] as? String, "killed by SIGSEGV; while handling didEnterBackground; not restarted (policy never)")
        // The crash came while the first didEnterBackground's observers ran: after the slow call ended.
        let crashTime = try XCTUnwrap(crash.first?["ts"] as? Double)
        XCTAssertGreaterThanOrEqual(crashTime, (calls[0]["ts"] as! Double) + (calls[0]["dur"] as! Double))
        XCTAssertLessThan(crashTime, calls[1]["ts"] as! Double)
        XCTAssertTrue(events(viewed, tid: 3, ph: "X").isEmpty, "the observer's plugin has no delegate calls")
    }

    func testAScenesRunHasATrackPerScene() throws {
        let viewed = try ViewedRun.start(["--scenes", "--plugin", HostEndToEndTests.recorder],
                                         script: try String(contentsOfFile: IsolationTests.scenarios + "/scenes.scenario", encoding: .utf8))
        XCTAssertEqual(viewed.run.status, 0, viewed.run.output)
        let tracks = try checkFormat(viewed)
        XCTAssertEqual(tracks, [1: "application state", 2: "scene main", 3: "scene side", 4: "plugin com.example.recorder"])
        for (tid, scene) in [(2, "main"), (3, "side")] {
            // The scene's states while attached, one slice each, as its scene-state lines say.
            let changes = viewed.engineRecords.filter { $0.kind == "scene-state" && $0.scene == scene }.map(\.name)
            let slices = events(viewed, tid: tid, ph: "X", category: "scene-state")
            XCTAssertEqual(slices.map { $0["name"] as? String }, changes.filter { $0 != "unattached" }, scene)
            XCTAssertTrue(slices.allSatisfy { ($0["args"] as? [String: Any])?["scene"] as? String == scene })
        }
        // Scene-addressed actions name their scene.
        let sceneActions = events(viewed, tid: 1, ph: "i", category: "action").filter { ($0["args"] as? [String: Any])?["scene"] != nil }
        XCTAssertEqual(sceneActions.map { $0["name"] as? String }, viewed.engineRecords.filter { $0.kind == "action" && !$0.scene.isEmpty }.map(\.name))
        XCTAssertFalse(sceneActions.isEmpty)
    }

    /// Words the export copies (scene ids, plugin ids, a failure's words) are escaped: the file stays
    /// JSON and they read back as they were.
    func testStringsAreEscaped() throws {
        let weird = "a\"b\\c\u{1}d\ne\u{7f}é✓"
        let failure = PluginFailure(plugin: "p\"\\\t", cause: .protocolViolation("bad \"frame\"\u{0}"), event: nil, restart: .none)
        let events = [
            TraceEvent(seq: 1, time: .milliseconds(1), payload: .sceneStateChanged(scene: weird, from: .unattached, to: .foregroundActive, reason: nil),
                       state: .active, kind: .sceneState, name: "x", observer: nil, detail: nil),
            TraceEvent(seq: 2, time: .milliseconds(2), payload: .pluginFailed(failure), state: .active,
                       kind: .pluginFailed, name: "x", observer: nil, detail: nil),
        ]
        let json = ChromeTrace.json(events, plugins: ["q\u{2028}"])
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let list = try XCTUnwrap(object["traceEvents"] as? [[String: Any]])
        let names = list.filter { $0["name"] as? String == "thread_name" }.compactMap { ($0["args"] as? [String: Any])?["name"] as? String }
        XCTAssertEqual(names, ["application state", "scene \(weird)", "plugin p\"\\\t", "plugin q\u{2028}"])
        let crash = try XCTUnwrap(list.first { $0["cat"] as? String == "failure" })
        XCTAssertEqual(crash["name"] as? String, "protocol violation")
        XCTAssertEqual((crash["args"] as? [String: Any])?["detail"] as? String, failure.description)
    }

    /// The export reads the typed payloads: the words of every event garbled, the same file.
    func testTheExportIgnoresWords() throws {
        let failure = PluginFailure(plugin: "com.example.p", cause: .signal(SIGSEGV), event: "didEnterBackground", restart: .none)
        let payloads: [TraceEvent.Payload] = [
            .action(.launch()), .stateChanged(from: .notRunning, to: .inactive, reason: nil),
            .delegateCalled(method: .didFinishLaunching, delegate: "com.example.p"),
            .notificationDelivered(name: .didFinishLaunching, userInfo: nil, queuedCount: nil),
            .stateChanged(from: .inactive, to: .active, reason: nil), .pluginFailed(failure),
            .quotaRefused(QuotaRefusal(plugin: "com.example.q", kind: .timers, limit: 3, refused: 1)),
        ]
        func events(garbled: Bool) -> [TraceEvent] {
            payloads.enumerated().map { index, payload in
                let state: ApplicationState = index < 1 ? .notRunning : index < 4 ? .inactive : .active
                return TraceEvent(seq: UInt64(index + 1), time: .microseconds(100 * index), payload: payload, state: state,
                                  kind: garbled ? TraceEvent.Kind(rawValue: "kind-\(index)") : payload.wordsKind,
                                  name: garbled ? "renamed" : "", observer: garbled ? "someone" : nil, detail: nil)
            }
        }
        let plain = ChromeTrace.json(events(garbled: false))
        XCTAssertEqual(ChromeTrace.json(events(garbled: true)), plain)
        XCTAssertTrue(plain.contains("{\"name\":\"application:didFinishLaunchingWithOptions:\",\"cat\":\"delegate\",\"ph\":\"X\",\"ts\":200.000,\"dur\":100.000,\"pid\":1,\"tid\":2,\"args\":{\"seq\":3}}"), plain)
        XCTAssertTrue(plain.contains("{\"name\":\"quota timers\",\"cat\":\"failure\",\"ph\":\"i\",\"s\":\"t\",\"ts\":600.000,\"pid\":1,\"tid\":3,"), plain)
        XCTAssertTrue(plain.contains("{\"name\":\"SIGSEGV\",\"cat\":\"failure\",\"ph\":\"i\",\"s\":\"t\",\"ts\":500.000,\"pid\":1,\"tid\":2,"), plain)
    }

    func testTheOptionIsChecked() throws {
        XCTAssertEqual(try TraceExport.parse("chrome=a=b.json"), TraceExport(format: .chrome, path: "a=b.json"))
        for (value, message) in [
            ("chrome", "--trace-export expects FORMAT=FILE (chrome=run.json), got 'chrome'"),
            ("chrom=x.json", "--trace-export: unknown format 'chrom' (did you mean 'chrome'?) (the formats: chrome)"),
            ("chrome=", "--trace-export chrome= needs a file name"),
        ] {
            let result = try CBuild.run(IsolationTests.host, ["run", "--no-socket", "--trace-export", value])
            XCTAssertEqual(result.status, 64, result.output)
            XCTAssertTrue(result.output.contains("Error: \(message)\n"), result.output)
        }
    }

    /// A file that cannot be written is said on standard error; the run's status is the run's.
    func testAnUnwritableExportIsSaid() throws {
        let folder = try CBuild.temporaryFolder("export-unwritable")
        let path = folder + "/missing/run.json"
        let result = try CBuild.run(IsolationTests.host, ["run", "--no-socket", "--no-signals", "--no-pressure", "--no-clock",
                                                         "--trace-export", "chrome=\(path)", "--script", IsolationTests.scenarios + "/launch-foreground.scenario"])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertTrue(result.output.contains("lifecycle-host: cannot write the chrome trace export \(path): No such file or directory\n"), result.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path))
    }
}

private extension TraceEvent.Payload {
    /// Any kind: the words do not matter to the export.
    var wordsKind: TraceEvent.Kind { TraceEvent.Kind(rawValue: "any") }
}
