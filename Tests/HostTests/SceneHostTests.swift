import AppLifecycle
import HostInput
import Foundation
import TestSupport
import XCTest

@testable import lifecycle_host

/// Scenes and Handoff in `lifecycle-host` (issue 9, phase 1): the verbs parsed, the two-scene
/// scenario of docs/scenarios run on the built binary, the same verbs through `send`, the JSON
/// trace's typed `scene` field, the timeline's scene lanes, and bad input.
final class SceneHostTests: XCTestCase {
    let host = HostEndToEndTests.host
    let recorder = HostEndToEndTests.recorder

    // MARK: Parsing

    func testSceneAndHandoffVerbsParse() throws {
        func parsed(_ line: String) throws -> String { try XCTUnwrap(try ScenarioParser.parse(line: line)).description }
        XCTAssertEqual(try parsed("scene connect side"), "scene connect side")
        XCTAssertEqual(try parsed("scene connect side background"), "scene connect side background")
        for verb in ["activate", "deactivate", "background", "foreground", "disconnect", "discard"] {
            XCTAssertEqual(try parsed("scene \(verb) side"), "scene \(verb) side")
        }
        XCTAssertEqual(try parsed("expect-scene side foreground-active"), "expect-scene side foreground-active")
        XCTAssertEqual(try parsed("launch scene=editor k=1"), #"launch {"k":1} scene=editor"#)
        XCTAssertEqual(try parsed("open-url app://x source=com.example.mail scene=side"), "open-url app://x source=com.example.mail scene=side")
        XCTAssertEqual(try parsed("continue-activity com.example.edit scene=main title=\"Draft 2\" doc=7"),
                       #"continue-activity com.example.edit scene=main {"doc":7}"#)
        XCTAssertEqual(try parsed("continue-activity com.example.edit error=offline"), "continue-activity com.example.edit error=offline")
        XCTAssertEqual(try parsed("update-activity com.example.edit scene=side n=2"), #"update-activity com.example.edit scene=side {"n":2}"#)
        guard case .action(let action)? = try ScenarioParser.parse(line: "continue-activity t title=\"Draft 2\" doc=7") else {
            return XCTFail("not an action")
        }
        XCTAssertEqual(action.sceneID, nil)
        XCTAssertEqual(action.name, "continue-activity")
    }

    func testBadSceneLinesSayWhy() {
        func error(_ line: String) -> String {
            do {
                _ = try ScenarioParser.parse(line: line)
                return "parsed"
            } catch {
                return error.message
            }
        }
        XCTAssertEqual(error("scene"), "'scene' needs a verb and a scene id: scene connect|activate|deactivate|background|foreground|disconnect|discard|close ID")
        XCTAssertEqual(error("scene fly side"), "unknown scene verb 'fly' (connect, activate, deactivate, background, foreground, disconnect, discard, close)")
        XCTAssertEqual(error("scene activate"), "'scene activate' needs a scene id")
        XCTAssertEqual(error("scene activate a b"), "'scene activate' takes one scene id")
        XCTAssertEqual(error("scene connect a foreground"), "'scene connect' takes a scene id and optionally 'background'")
        XCTAssertEqual(error("expect-scene main sleeping"),
                       "unknown scene state 'sleeping' (unattached, foreground-inactive, foreground-active, background, suspended)")
        XCTAssertEqual(error("continue-activity"), "'continue-activity' needs an activity type, e.g. com.example.editing")
        XCTAssertEqual(error("continue-activity scene=main"), "'continue-activity' needs an activity type first, got 'scene=main'")
        XCTAssertEqual(error("continue-activity t scene="), "'continue-activity': scene= needs a value")
        XCTAssertEqual(error("scne connect x"), "unknown action 'scne' (did you mean 'scene'?); 'help' lists the actions")
    }

    // MARK: The binary

    /// `kind name state {scene}` per JSON line (the scene from the typed field), plugin lines left out.
    private func project(_ output: [String]) throws -> [String] {
        try output.compactMap { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            let kind = object["kind"] as? String ?? "?"
            if kind == "plugin" || kind == "socket" { return nil }
            var text = "\(kind) \(object["name"] as? String ?? "?") \(object["state"] as? String ?? "?")"
            if let scene = object["scene"] as? String { text += " {\(scene)}" }
            if let plugin = object["plugin"] as? String { text += " [\(plugin == "com.example.recorder" ? "rec" : plugin)]" }
            return text
        }
    }

    func testTheTwoSceneScenarioOnTheBinary() throws {
        let folder = try CBuild.temporaryFolder("scenes")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let timeline = folder + "/scenes.svg"
        let result = try CBuild.run(host, ["run", "--scenes", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock",
                                           "--script", HostEndToEndTests.scenarios + "/scenes.scenario", "--plugin", recorder,
                                           "--timeline", timeline, "--background-mode", "fetch"])
        XCTAssertEqual(result.status, 0, result.output)
        let lines = try project(result.output.split(separator: "\n").map(String.init))
        // The launch: in the background (a scene-based application); the recorder (an application
        // delegate) gets the launch methods, the scene its steps; the application leaves the
        // background with the scene (willEnterForeground) and takes its state at each step, its
        // notifications after the scene's; no applicationDidBecomeActive:.
        XCTAssertEqual(Array(lines.prefix(14)), [
            "action launch not-running",
            "state background background",
            "delegate application:willFinishLaunchingWithOptions: background [rec]",
            "delegate application:didFinishLaunchingWithOptions: background [rec]",
            "notification didFinishLaunching background",
            "notification sceneWillConnect background {main}",
            "notification sceneWillEnterForeground background {main}",
            "notification willEnterForeground background",
            "scene-state foreground-inactive background {main}",
            "state inactive inactive",
            "scene-state foreground-active inactive {main}",
            "state active active",
            "notification sceneDidActivate active {main}",
            "notification didBecomeActive active",
        ])
        XCTAssertFalse(lines.contains { $0.hasPrefix("delegate applicationDidBecomeActive:") || $0.hasPrefix("delegate applicationDidEnterBackground:") })
        XCTAssertTrue(lines.contains("action open-url active {side}"))
        XCTAssertTrue(lines.contains("action continue-activity active {main}"))
        XCTAssertTrue(lines.contains("scene-state unattached active {side}"))
        XCTAssertEqual(lines.suffix(4), [
            "delegate applicationWillTerminate: background [rec]",
            "notification willTerminate background",
            "scene-state unattached background {main}",
            "state not-running not-running",
        ])
        // The typed scene field: on every scene event, on no application event.
        for line in result.output.split(separator: "\n") {
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let name = object["name"] as? String ?? ""
            if object["kind"] as? String == "scene-state" || name.hasPrefix("scene") && object["kind"] as? String == "notification" {
                XCTAssertNotNil(object["scene"], String(line))
            }
            if ["didBecomeActive", "didEnterBackground", "willResignActive", "willEnterForeground"].contains(name) {
                XCTAssertNil(object["scene"], String(line))
            }
        }
        // One timeline lane per scene.
        let svg = try String(contentsOfFile: timeline, encoding: .utf8)
        XCTAssertTrue(svg.contains(">scene main</text>"))
        XCTAssertTrue(svg.contains(">scene side</text>"))
        XCTAssertTrue(svg.contains("class=\"scene-band\" data-scene=\"side\" data-state=\"suspended\""))
    }

    func testSceneVerbsThroughSendAndBadInputLosesNothing() throws {
        let folder = try CBuild.temporaryFolder("scene-socket")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let socket = folder + "/host.sock"
        let process = try RunningProcess(host, ["run", "--scenes", "--trace", "json", "--socket", socket, "--no-signals",
                                                "--no-pressure", "--no-clock", "--plugin", recorder])
        defer { _ = process.wait(timeout: 1) }
        XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"didBecomeActive\"") })
        func send(_ words: String...) throws -> String { try CBuild.run(host, ["send", "--socket", socket] + words).output }
        XCTAssertEqual(try send("scene", "connect", "side"), "ok active\n")
        XCTAssertEqual(try send("scene", "deactivate", "side"), "ok active\n")
        XCTAssertEqual(try send("scene", "deactivate", "main"), "ok inactive\n")
        XCTAssertEqual(try send("scene", "activate", "main"), "ok active\n")
        XCTAssertEqual(try send("scene", "background", "side"), "ok active\n")
        // Bad input: a clear error, and nothing changed.
        XCTAssertEqual(try send("scene", "activate", "ghost"),
                       "error: action 'scene activate ghost': no scene 'ghost' is connected (connected: main, side)\n")
        XCTAssertEqual(try send("scene", "activate", "side"),
                       "error: action 'scene activate side' is not allowed: scene 'side' is suspended; only a foreground-inactive scene becomes active\n")
        XCTAssertEqual(try send("scene", "connect", "a/b"),
                       "error: scene id \"a/b\" is not valid: a scene id is 1 to 200 bytes of A-Z a-z 0-9 . _ -, not starting with '.'\n")
        XCTAssertEqual(try send("scene", "jump", "side"),
                       "error: unknown scene verb 'jump' (connect, activate, deactivate, background, foreground, disconnect, discard, close)\n")
        let status = try CBuild.run(host, ["status", "--socket", socket]).output
        XCTAssertTrue(status.contains(#""scenes":[{"id":"main","state":"foreground-active"},{"id":"side","state":"suspended"}]"#), status)
        XCTAssertEqual(try send("scene", "foreground", "side"), "ok active\n")
        XCTAssertEqual(try send("continue-activity", "com.example.edit", "scene=side", "doc=7"), "ok active\n")
        XCTAssertEqual(try send("home"), "ok suspended\n")
        XCTAssertEqual(try send("scene", "disconnect", "side"), "ok suspended\n")
        XCTAssertEqual(try send("terminate"), "ok not-running\n")
        XCTAssertEqual(process.wait(), 0)
        XCTAssertTrue(process.output.contains {
            $0.contains("\"kind\":\"error\"") && $0.contains("scene activate ghost")
        }, "a refused send is an error line in the trace")
    }

    func testScenesNeedTheFlag() throws {
        let folder = try CBuild.temporaryFolder("noscenes")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = folder + "/s.scenario"
        try "launch\nscene connect side\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        let result = try CBuild.run(host, ["run", "--no-socket", "--no-pressure", "--no-clock", "--script", script])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.output.hasSuffix("\(script):2: action 'scene connect' is not allowed while the application is active: the application is not scene-based (no scene manifest; the host's --scenes)\n"),
                      result.output)
    }

    /// `--scenes single`: a single-scene application (UIApplicationSupportsMultipleScenes = NO), on the
    /// binary, through the ArgumentParser path (`--isolate`) and the fast path; a bad value is refused.
    func testSingleSceneFromTheCommandLine() throws {
        let folder = try CBuild.temporaryFolder("single-scene")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = folder + "/s.scenario"
        try "launch\nscene connect side\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        let refusal = "\(script):2: action 'scene connect side' is not allowed: the application does not support multiple scenes and scene 'main' is connected\n"
        for extra in [[], ["--isolate"]] {
            let result = try CBuild.run(host, ["run", "--no-socket", "--no-pressure", "--no-clock", "--scenes", "single", "--script", script] + extra)
            XCTAssertEqual(result.status, 2, result.output)
            XCTAssertTrue(result.output.hasSuffix(refusal), result.output)
        }
        // Several scenes with the bare flag, in both parsers.
        try "launch\nscene connect side\nexpect-scene side foreground-active\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        for extra in [[], ["--isolate"]] {
            let result = try CBuild.run(host, ["run", "--no-socket", "--no-pressure", "--no-clock", "--script", script] + extra + ["--scenes"])
            XCTAssertEqual(result.status, 0, result.output)
        }
        let bad = try CBuild.run(host, ["run", "--no-socket", "--scenes", "singel"])
        XCTAssertEqual(bad.status, 64, bad.output)
        XCTAssertTrue(bad.output.contains("--scenes takes 'single' (one scene at a time) or nothing (several), not 'singel' (did you mean 'single'?)"), bad.output)
    }

    // MARK: Timeline, in process

    func testTimelineDrawsOneLanePerSceneFromTypedEvents() throws {
        var configuration = Configuration()
        configuration.sceneManifest = SceneManifest()
        let loop = try MainRunLoop()
        let app = Application(configuration: configuration, loop: loop)
        let recorder = TimelineRecorder()
        app.traceHandler = { recorder.record($0) }
        try app.perform(.launch())
        try app.perform(.connectScene("side"))
        try app.perform(.moveSceneToBackground("side"))
        try app.perform(.disconnectScene("side"))
        try app.perform(.terminate)
        let analysis = TimelineAnalysis(recorder.events, finish: 1)
        XCTAssertEqual(analysis.sceneLanes.map(\.scene), ["main", "side"])
        XCTAssertEqual(analysis.sceneLanes[1].intervals.map(\.state), [.foregroundInactive, .foregroundActive, .foregroundInactive, .background, .suspended])
        XCTAssertEqual(analysis.sceneLanes[0].intervals.map(\.state), [.foregroundInactive, .foregroundActive, .foregroundInactive, .background])
        // The application's lane follows its scenes (issue 20, readings 1 and 2): the launch in the
        // background, inactive and active with main; active throughout side's trip; then the
        // termination through inactive and the background.
        XCTAssertEqual(analysis.intervals.map(\.state), [.notRunning, .background, .inactive, .active, .inactive, .background, .notRunning],
                       "\(analysis.intervals)")
        // Reworded events draw the same lanes: the analysis reads the payloads.
        let reworded = recorder.events.map {
            TraceEvent(seq: $0.seq, time: $0.time, payload: $0.payload, state: $0.state, kind: .init(rawValue: "x"), name: "y", observer: nil, detail: nil)
        }
        XCTAssertEqual(TimelineAnalysis(reworded, finish: 1).sceneLanes, analysis.sceneLanes)
        XCTAssertEqual(reworded.filter { $0.scene != nil }.count, recorder.events.filter { $0.scene != nil }.count,
                       "the scene is typed data, whatever the words")
        let svg = recorder.svg()
        XCTAssertEqual(svg.components(separatedBy: "class=\"scene-band\" data-scene=\"side\"").count - 1, 5)
        // Without scenes, no scene group at all.
        let plain = TimelineDrawing(events: [], width: 600).render()
        XCTAssertFalse(plain.contains("id=\"scenes\""))
    }
}
