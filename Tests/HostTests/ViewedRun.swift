import Foundation
import TestSupport
import XCTest

/// A run of the built host, as a user runs it, with the timeline (`--timeline`) and the Chrome
/// trace-event export (`--trace-export chrome=`) both written: the JSON trace's records, the SVG and
/// the export, parsed.
struct ViewedRun {
    let run: IsolationTests.Run
    let svg: String
    let chrome: [String: Any]
    /// `chrome["traceEvents"]`.
    let chromeEvents: [[String: Any]]

    /// The engine's records of the JSON trace (the host's `plugin` and `input` lines left out).
    var engineRecords: [IsolationTests.Run.Record] { run.records.filter { $0.kind != "plugin" && $0.kind != "input" } }

    /// Runs `lifecycle-host run --trace json` with `arguments`, the scenario `script`, `--timeline` and
    /// `--trace-export chrome=` into a fresh folder.
    static func start(_ arguments: [String], script: String, file: StaticString = #filePath, line: UInt = #line) throws -> ViewedRun {
        let folder = try CBuild.temporaryFolder("viewed-run")
        let svgPath = folder + "/run.svg", chromePath = folder + "/run.json"
        let run = try IsolationTests.run(arguments + ["--no-signals", "--timeline", svgPath, "--trace-export", "chrome=\(chromePath)"], script: script)
        let svg = try String(contentsOfFile: svgPath, encoding: .utf8)
        let data = try Data(contentsOf: URL(fileURLWithPath: chromePath))
        let chrome = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any], "a JSON object", file: file, line: line)
        let events = try XCTUnwrap(chrome["traceEvents"] as? [[String: Any]], "traceEvents: an array of objects", file: file, line: line)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder).sorted(), ["run.json", "run.svg"],
                       "the export's temporary file renamed, nothing else left", file: file, line: line)
        return ViewedRun(run: run, svg: svg, chrome: chrome, chromeEvents: events)
    }

    /// A plugin `com.example.slow` whose applicationDidEnterBackground: takes 20 ms and that implements
    /// applicationWillEnterForeground:.
    static let slowPlugin: Result<String, Error> = Result {
        try IsolationFixtures.build(IsolationFixtures.exporter(id: "com.example.slow", functions: """
            #include <unistd.h>
            void applicationDidEnterBackground(lc_app *a) { (void)a; usleep(20000); }
            void applicationWillEnterForeground(lc_app *a) { (void)a; }
            """), named: "slow")
    }

    /// A plugin `com.example.segv` whose observer of didEnterBackground writes through a null pointer.
    static let segvPlugin: Result<String, Error> = Result {
        try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.segv", name: "didEnterBackground", body: "*(volatile int *)0 = 42;"), named: "views-segv")
    }

    /// The slow plugin in the host's process, the crashing one isolated: launch, Home (the crash), a
    /// URL session's events, back, terminate. Exit status 7 (an isolated plugin failed).
    static func crashRun(file: StaticString = #filePath, line: UInt = #line) throws -> ViewedRun {
        let viewed = try start(["--plugin", try slowPlugin.get(), "--plugin", try segvPlugin.get(), "--isolate", "com.example.segv"],
                               script: "launch\nhome\nurl-session com.example.download\nforeground\nterminate\n", file: file, line: line)
        XCTAssertEqual(viewed.run.status, 7, viewed.run.output, file: file, line: line)
        return viewed
    }
}
