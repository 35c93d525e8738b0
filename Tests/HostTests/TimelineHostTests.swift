import Foundation
import TestSupport
import XCTest

@testable import lifecycle_host

/// `--timeline FILE` from the built host: the actions are named, the axis fits the run, and a plugin
/// failure is a red mark with its name; a real renderer (rsvg-convert) draws each picture.
final class TimelineHostTests: XCTestCase {
    /// Each `<text>` with what it says.
    private func texts(_ document: SVGDocument) -> [(element: SVGDocument.Element, text: String)] {
        Array(zip(document.elements.filter { $0.name == "text" }, document.texts))
    }

    /// No two texts of the picture overlap (their boxes measured in the picture's font).
    private func assertTextsApart(_ document: SVGDocument, file: StaticString = #filePath, line: UInt = #line) {
        let labels = texts(document).map { element, text in
            TimelineLabel(text, x: element.number("x"), baseline: element.number("y"), size: element.number("font-size"),
                          anchor: TimelineLabel.Anchor(rawValue: element.attributes["text-anchor"] ?? "start") ?? .start,
                          bold: element.attributes["font-weight"] == "bold")
        }
        for (i, a) in labels.enumerated() {
            for b in labels[(i + 1)...] where a.box.intersects(b.box) {
                XCTFail("'\(a.text)' and '\(b.text)' overlap", file: file, line: line)
            }
        }
    }

    private func render(_ svg: String, name: String) throws {
        let converter = try RequiredTool.path("rsvg-convert", package: "librsvg2-bin", for: "to check that a real renderer draws the timeline")
        let folder: String
        if let kept = ProcessInfo.processInfo.environment["TIMELINE_PNG_DIR"] { folder = kept } else { folder = try CBuild.temporaryFolder("timeline-host") }
        let svgPath = folder + "/\(name).svg", pngPath = folder + "/\(name).png"
        try svg.write(toFile: svgPath, atomically: true, encoding: .utf8)
        let result = try CBuild.run(converter, ["-o", pngPath, svgPath])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: pngPath)).prefix(4)), [0x89, 0x50, 0x4E, 0x47])
    }

    /// A run of a fraction of a millisecond gets an axis as long as the run (plus at most one step),
    /// with 5 to 10 steps, every tick labelled: not the 0.010 s it used to get.
    func testAShortRunGetsAnAxisThatFitsIt() throws {
        let viewed = try ViewedRun.start(["--plugin", IsolationTests.example("Echo")], script: "launch\nhome\nforeground\nterminate\n")
        XCTAssertEqual(viewed.run.status, 0, viewed.run.output)
        let document = try SVGDocument(viewed.svg)
        // The run's last instant, from the export of the same run (microseconds).
        let last = viewed.chromeEvents.compactMap { event -> Double? in
            guard let ts = event["ts"] as? Double else { return nil }
            return (ts + (event["dur"] as? Double ?? 0)) / 1_000_000
        }.max() ?? 0
        XCTAssertGreaterThan(last, 0)
        let labels = texts(document).filter { $0.element.attributes["class"] == "axis-label" }
        let values = try labels.map { try XCTUnwrap(Double($0.text.replacingOccurrences(of: " s", with: "")), $0.text) }
        XCTAssertEqual(labels.count, document.elements(class: "grid").count, "every tick labelled")
        XCTAssertTrue((6...11).contains(values.count), "\(values)")
        XCTAssertEqual(values.first, 0)
        let step = values[1] - values[0]
        let end = try XCTUnwrap(values.last)
        for (a, b) in zip(values, values.dropFirst()) { XCTAssertEqual(b - a, step, accuracy: step / 1000, "even steps: \(values)") }
        XCTAssertGreaterThanOrEqual(end, last, "the axis holds the run")
        XCTAssertLessThanOrEqual(end, last * 1.02 + step * 1.001, "the axis fits the run: \(values) for a run of \(last) s")
        // The last label sits at the right end of the plot (1200 − 24 px).
        XCTAssertEqual(labels.last?.element.number("x"), 1176)
        try render(viewed.svg, name: "timeline-short-run")
    }

    /// Every action has its mark and its name beside it, in order; no text overlaps another.
    func testTheActionsAreNamed() throws {
        let viewed = try ViewedRun.crashRun()
        let document = try SVGDocument(viewed.svg)
        let marks = document.elements(class: "action")
        let names = ["launch", "home", "url-session", "foreground", "terminate"]
        XCTAssertEqual(marks.map { $0.attributes["data-action"] }, names)
        XCTAssertEqual(viewed.engineRecords.filter { $0.kind == "action" }.map(\.name), names)
        // Each action's mark is at its tick in the events' lanes.
        let ticks = document.elements(class: "tick")
        for mark in marks {
            let tick = try XCTUnwrap(ticks.first { $0.attributes["data-seq"] == mark.attributes["data-seq"] })
            XCTAssertEqual(mark.number("x1"), tick.number("x1"))
            XCTAssertTrue(mark.title?.contains("action \(mark.attributes["data-action"] ?? "")") == true, mark.title ?? "")
        }
        let labels = texts(document).filter { $0.element.attributes["class"] == "action-label" }
        XCTAssertEqual(labels.map(\.text), names, "five actions, three rows: every name finds room")
        for ((element, _), mark) in zip(labels, marks) {
            // Beside its mark: 4 px after it, or 4 px before it near the right edge.
            XCTAssertEqual(abs(element.number("x") - mark.number("x1")), 4, accuracy: 0.01)
            XCTAssertEqual(element.number("y"), mark.number("y1") + 11, accuracy: 0.01, "on its mark's row")
        }
        XCTAssertTrue(document.texts.contains("actions"), "the row's name")
        assertTextsApart(document)
        try render(viewed.svg, name: "timeline-actions")
    }

    /// A crash of an isolated plugin is a red triangle labelled with the plugin and the signal, a red
    /// line down the picture and a red tick — not a grey one.
    func testAPluginCrashIsDrawnAsAFailure() throws {
        let viewed = try ViewedRun.crashRun()
        let document = try SVGDocument(viewed.svg)
        let failures = document.elements(class: "failure")
        XCTAssertEqual(failures.count, 1)
        let failure = try XCTUnwrap(failures.first)
        XCTAssertEqual(failure.name, "polygon")
        XCTAssertEqual(failure.attributes["fill"], "#d50000")
        XCTAssertEqual(failure.attributes["data-plugin"], "com.example.segv")
        XCTAssertEqual(failure.attributes["data-kind"], "plugin-failed")
        let record = try XCTUnwrap(viewed.run.failures().first)
        XCTAssertTrue(failure.title?.hasSuffix("plugin-failed [com.example.segv] SIGSEGV (\(record.detail))") == true, failure.title ?? "")

        let label = try XCTUnwrap(texts(document).first { $0.element.attributes["class"] == "failure-label" })
        XCTAssertEqual(label.text, "com.example.segv: SIGSEGV")
        XCTAssertEqual(label.element.attributes["fill"], "#d50000")
        XCTAssertEqual(texts(document).filter { $0.element.attributes["class"] == "failure-label" }.count, 1)

        // Its tick is red, at the same x, and no tick is grey (a kind without a colour).
        let ticks = document.elements(class: "tick")
        let tick = try XCTUnwrap(ticks.first { $0.attributes["data-seq"] == failure.attributes["data-seq"] })
        XCTAssertEqual(tick.attributes["stroke"], "#d50000")
        XCTAssertTrue(tick.title?.contains("plugin-failed SIGSEGV [com.example.segv]") == true, tick.title ?? "")
        XCTAssertFalse(ticks.contains { $0.attributes["stroke"] == "#757575" })
        let points = (failure.attributes["points"] ?? "").split(separator: " ").compactMap { Double($0.split(separator: ",").first ?? "") }
        XCTAssertEqual(points.count, 3)
        XCTAssertEqual(points[2], tick.number("x1"), accuracy: 0.01, "the triangle points at the failure's instant")
        let line = try XCTUnwrap(document.elements(class: "failure-line").first)
        XCTAssertEqual(line.number("x1"), tick.number("x1"), accuracy: 0.01)
        XCTAssertEqual(line.attributes["stroke"], "#d50000")

        XCTAssertTrue(document.texts.contains("plugin failures"), "the row's name")
        XCTAssertTrue(document.texts.contains("plugin failure"), "the legend's entry")
        assertTextsApart(document)
        try render(viewed.svg, name: "timeline-plugin-crash")
    }

    /// An isolated plugin killed at the end of its budget (it looped in an observer) is a failure too,
    /// in the picture and in the export, named by its cause.
    func testAPluginKilledAtItsBudgetIsDrawnAndExportedAsAFailure() throws {
        let looper = try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.loop", name: "didBecomeActive", body: "for (;;) {}"), named: "views-loop")
        let viewed = try ViewedRun.start(["--plugin", looper, "--isolate", "--isolate-budget", "0.5"], script: "launch\nhome\nterminate\n")
        XCTAssertEqual(viewed.run.status, 7, viewed.run.output)
        XCTAssertEqual(viewed.run.failures().map(\.name), ["overran isolated-call budget"])
        let document = try SVGDocument(viewed.svg)
        XCTAssertEqual(document.elements(class: "failure").map { $0.attributes["data-plugin"] }, ["com.example.loop"])
        XCTAssertEqual(texts(document).filter { $0.element.attributes["class"] == "failure-label" }.map(\.text),
                       ["com.example.loop: overran isolated-call budget"])
        let crash = viewed.chromeEvents.filter { $0["cat"] as? String == "failure" }
        XCTAssertEqual(crash.map { $0["name"] as? String }, ["overran isolated-call budget"])
        let names = viewed.chromeEvents.filter { $0["name"] as? String == "thread_name" }.map { ($0["args"] as? [String: Any])?["name"] as? String }
        XCTAssertEqual(names, ["application state", "plugin com.example.loop"])
        XCTAssertEqual(crash.first?["tid"] as? Int, 2)
        assertTextsApart(document)
        try render(viewed.svg, name: "timeline-plugin-killed")
    }
}
