@preconcurrency import Glibc
import AppLifecycle
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import XCTest
import TestSupport

@testable import lifecycle_host

/// The timeline drawn from a real run of the engine.
final class TimelineTests: XCTestCase {
    /// The colours the brief asks for, checked independently of `TimelineStyle`.
    private static let stateColours: [String: String] = [
        "not-running": "#9e9e9e", "inactive": "#f2c94c", "active": "#43a047", "background": "#1e88e5", "suspended": "#8e44ad",
    ]
    private static let taskName = "upload <&> \"now\" 'ok'"
    private static let phaseNames: Set<String> = ["launch", "didEnterBackground", "willTerminate"]

    /// launch · home (didEnterBackground begins a task a timer ends) · foreground · lock · unlock · terminate,
    /// with pauses so that the bands have widths.
    private func realisticRun(_ configure: (inout Configuration) -> Void = { _ in },
                              didEnterBackground: ((Application) -> Void)? = nil) throws -> [TraceEvent]
    {
        var configuration = Configuration()
        configure(&configuration)
        let loop = try MainRunLoop()
        let app = Application(configuration: configuration, loop: loop)
        let recorder = TimelineRecorder()
        var events: [TraceEvent] = []
        app.traceHandler = { event in
            recorder.record(event)
            events.append(event)
        }
        var handlers = DelegateHandlers()
        handlers.willFinishLaunching = { _, _ in true }
        handlers.didFinishLaunching = { _, _ in true }
        handlers.didBecomeActive = { _ in }
        handlers.willResignActive = { _ in }
        handlers.willTerminate = { _ in }
        var began = false
        handlers.didEnterBackground = { [unowned loop] app in
            didEnterBackground?(app)
            guard !began else { return }
            began = true
            guard let task = try? app.beginBackgroundTask(named: Self.taskName, owner: "uploader") else { return }
            loop.addTimer(after: .milliseconds(150)) { try? app.endBackgroundTask(task) }
        }
        try app.addDelegate(handlers, id: "demo")
        app.center.observe(.didEnterBackground, owner: "observer") { _ in }

        try app.perform(.launch())
        try loop.run(for: .milliseconds(100))
        try app.perform(.home)
        try loop.run(for: .milliseconds(250))  // the task ends at 150 ms, then the app is suspended
        try app.perform(.foreground)
        try loop.run(for: .milliseconds(100))
        try app.perform(.lock)
        try loop.run(for: .milliseconds(100))
        try app.perform(.unlock)
        try loop.run(for: .milliseconds(100))
        try app.perform(.terminate)
        XCTAssertEqual(recorder.events.count, events.count)
        return events
    }

    /// The horizontal scale, from the ticks of the first and the last event.
    private func pixelsPerSecond(_ events: [TraceEvent], _ tickX: (TraceEvent) -> Double) throws -> Double {
        let first = try XCTUnwrap(events.first), last = try XCTUnwrap(events.last)
        let seconds = (last.time - first.time).secondsDouble
        XCTAssertGreaterThan(seconds, 0.5)
        return (tickX(last) - tickX(first)) / seconds
    }

    private func draw(_ events: [TraceEvent], width: Int = 1200) -> String {
        let recorder = TimelineRecorder()
        for event in events { recorder.record(event) }
        return recorder.svg(width: width)
    }

    func testRealisticRun() throws {
        let events = try realisticRun()
        let svg = draw(events)
        let document = try SVGDocument(svg)

        // The root.
        XCTAssertEqual(document.root?.name, "svg")
        XCTAssertEqual(document.root?.attributes["xmlns"], "http://www.w3.org/2000/svg")
        XCTAssertEqual(document.root?.attributes["version"], "1.1")
        XCTAssertEqual(document.root?.attributes["width"], "1200")

        // One tick per event, in trace order.
        let ticks = document.elements(class: "tick")
        XCTAssertEqual(ticks.count, events.count)
        XCTAssertEqual(ticks.map { $0.attributes["data-seq"] }, events.map { "\($0.seq)" })
        func tickX(_ event: TraceEvent) -> Double { ticks.first { $0.attributes["data-seq"] == "\(event.seq)" }!.number("x1") }

        // One band per state interval, with the right colours, contiguous and in order.
        var expected: [(ApplicationState, TraceEvent)] = []
        for event in events where expected.last?.0 != event.state { expected.append((event.state, event)) }
        let bands = document.elements(class: "band")
        XCTAssertEqual(bands.map { $0.attributes["data-state"] }, expected.map { $0.0.rawValue })
        XCTAssertEqual(Set(expected.map(\.0)), Set(ApplicationState.allCases), "the run visits every state")
        for (band, (state, event)) in zip(bands, expected) {
            XCTAssertEqual(band.attributes["fill"], Self.stateColours[state.rawValue], "\(state)")
            XCTAssertEqual(band.number("x"), tickX(event), accuracy: 0.02, "the \(state) band starts at its state event")
            XCTAssertTrue(band.title?.hasPrefix(state.rawValue) == true)
        }
        for (a, b) in zip(bands, bands.dropFirst()) {
            XCTAssertEqual(a.number("x") + a.number("width"), b.number("x"), accuracy: 0.02, "contiguous")
            XCTAssertLessThanOrEqual(a.number("x"), b.number("x"))
        }
        let lastBand = try XCTUnwrap(bands.last)
        XCTAssertEqual(lastBand.attributes["data-state"], "not-running")
        XCTAssertGreaterThan(lastBand.number("width"), 0, "the axis runs a little past the last event")
        // Widths follow time: one scale (pixels per second) for every band.
        let scale = try pixelsPerSecond(events, tickX)
        for (index, (state, event)) in expected.enumerated().dropLast() {
            let seconds = (expected[index + 1].1.time - event.time).secondsDouble
            XCTAssertEqual(bands[index].number("width"), seconds * scale, accuracy: 0.05, "\(state)")
        }

        // The background task: one bar from its begin to its end.
        let tasks = document.elements(class: "task")
        XCTAssertEqual(tasks.count, 1)
        let begin = try XCTUnwrap(events.first { $0.kind == .backgroundTask && $0.name == "begin" })
        let end = try XCTUnwrap(events.first { $0.kind == .backgroundTask && $0.name == "end" })
        XCTAssertEqual(tasks[0].number("x"), tickX(begin), accuracy: 0.02)
        XCTAssertEqual(tasks[0].number("x") + tasks[0].number("width"), tickX(end), accuracy: 0.02)
        XCTAssertTrue(tasks[0].title?.contains(Self.taskName) == true, tasks[0].title ?? "")
        XCTAssertTrue(tasks[0].title?.contains("[uploader]") == true)

        // Budgeted phases: launch, didEnterBackground three times (home, lock, and terminate, which goes
        // through the background: seed 001), willTerminate; no overrun.
        let phases = document.elements(class: "phase")
        XCTAssertEqual(phases.map { $0.attributes["data-phase"] },
                       ["launch", "didEnterBackground", "didEnterBackground", "didEnterBackground", "willTerminate"])
        XCTAssertTrue(document.elements(class: "overrun").isEmpty)
        let didEnter = try XCTUnwrap(events.first { $0.kind == .delegate && $0.name == DelegateMethod.didEnterBackground.selector })
        XCTAssertEqual(phases[1].number("x"), tickX(didEnter), accuracy: 0.02)

        // Escaping: the task name appears only escaped in the markup, and round-trips through the parser.
        XCTAssertFalse(svg.contains("<&>"))
        XCTAssertTrue(svg.contains("upload &lt;&amp;&gt; &quot;now&quot; &apos;ok&apos;"))
        XCTAssertTrue(ticks.contains { $0.title?.contains(Self.taskName) == true })

        // Axis and legend.
        XCTAssertTrue(document.texts.contains { $0.hasPrefix("0") && $0.hasSuffix(" s") }, "an axis label at 0")
        for state in ApplicationState.allCases { XCTAssertTrue(document.texts.contains(state.rawValue), "legend: \(state)") }
        XCTAssertTrue(document.texts.contains("background-task"))
    }

    func testOverrunIsRed() throws {
        let events = try realisticRun({
            $0.budgets.didEnterBackground = .milliseconds(40)
            $0.watchdogPolicy = .report
        }, didEnterBackground: { _ in usleep(120_000) })
        XCTAssertTrue(events.contains { $0.kind == .watchdog }, "the slow didEnterBackground overran")
        let svg = draw(events)
        let document = try SVGDocument(svg)
        let ticks = document.elements(class: "tick")
        func tickX(_ event: TraceEvent) -> Double { ticks.first { $0.attributes["data-seq"] == "\(event.seq)" }!.number("x1") }
        let scale = try pixelsPerSecond(events, tickX)
        let overruns = document.elements(class: "overrun")
        // home, lock and terminate (through the background: seed 001) each overran.
        XCTAssertEqual(overruns.map { $0.attributes["data-phase"] }, ["didEnterBackground", "didEnterBackground", "didEnterBackground"])
        let phases = document.elements(class: "phase").filter { $0.attributes["data-phase"] == "didEnterBackground" }
        XCTAssertEqual(phases.count, 3)
        for (phase, overrun) in zip(phases, overruns) {
            XCTAssertEqual(overrun.attributes["fill"], "#e53935")
            // The red part starts 40 ms into the phase and ends with it.
            let px = phase.number("x"), pw = phase.number("width")
            XCTAssertGreaterThan(overrun.number("x"), px)
            XCTAssertEqual(overrun.number("x") + overrun.number("width"), px + pw, accuracy: 0.05)
            XCTAssertEqual(overrun.number("x") - px, 0.040 * scale, accuracy: 0.05)
        }
    }

    func testEmptyAndNarrow() throws {
        let empty = TimelineRecorder().svg()
        let document = try SVGDocument(empty)
        XCTAssertEqual(document.root?.name, "svg")
        XCTAssertTrue(document.elements(class: "band").isEmpty)
        XCTAssertTrue(document.elements(class: "tick").isEmpty)
        // A width below the minimum is raised to it.
        XCTAssertEqual(try SVGDocument(TimelineRecorder().svg(width: 10)).root?.attributes["width"], "480")
    }

    func testXMLEscape() {
        XCTAssertEqual(TimelineRecorder.xmlEscape("a<&>\"'b"), "a&lt;&amp;&gt;&quot;&apos;b")
        XCTAssertEqual(TimelineRecorder.xmlEscape("bell\u{7}\u{0}"), "bell\u{FFFD}\u{FFFD}")
        XCTAssertEqual(TimelineRecorder.xmlEscape("tab\tnew\nline é ✓"), "tab\tnew\nline é ✓")
    }

    func testAxisIsRound() {
        let (end, step) = TimelineDrawing.axis(for: 0.67)
        XCTAssertEqual(step, 0.1, accuracy: 1e-9)
        XCTAssertEqual(end, 0.7, accuracy: 1e-9)
        // Short runs get short axes (they used to get at least 0.010 s).
        for (last, wantEnd, wantStep) in [(0.002, 0.0025, 0.0005), (0.00035, 0.0004, 0.00005), (0.0000031, 0.00001, 0.000002)] {
            let (end, step) = TimelineDrawing.axis(for: last)
            XCTAssertEqual(end, wantEnd, accuracy: wantStep / 1000, "\(last)")
            XCTAssertEqual(step, wantStep, accuracy: wantStep / 1000, "\(last)")
        }
        let (end2, step2) = TimelineDrawing.axis(for: 0)
        XCTAssertGreaterThan(end2, 0)
        XCTAssertGreaterThan(step2, 0)
    }

    /// launch and, at once, Home: the launch and didEnterBackground phases start at the same instant
    /// (microseconds apart: one pixel); then `cycles` more Home and return with no pause, and a wait.
    private func simultaneousPhases(cycles: Int = 0) throws -> [TraceEvent] {
        let loop = try MainRunLoop()
        let app = Application(loop: loop)
        var events: [TraceEvent] = []
        app.traceHandler = { events.append($0) }
        var handlers = DelegateHandlers()
        handlers.didFinishLaunching = { _, _ in true }
        handlers.didEnterBackground = { _ in }
        try app.addDelegate(handlers, id: "demo")
        try app.perform(.launch())
        try app.perform(.home)
        for _ in 0..<cycles {
            try app.perform(.foreground)
            try app.perform(.home)
        }
        try loop.run(for: .milliseconds(300))
        try app.perform(.foreground)
        try app.perform(.terminate)
        return events
    }

    /// Asserts that no two of the drawing's labels intersect, and that the SVG's `<text>` elements are
    /// exactly those labels (same words, same places): the boxes checked are the ones drawn.
    @discardableResult
    private func assertLabelsApart(_ events: [TraceEvent], width: Int, file: StaticString = #filePath,
                                   line: UInt = #line) throws -> (document: SVGDocument, labels: [TimelineLabel])
    {
        let (svg, labels) = TimelineDrawing(events: events, width: width).draw()
        XCTAssertEqual(svg, TimelineDrawing(events: events, width: width).render(), file: file, line: line)
        let document = try SVGDocument(svg)
        let texts = document.elements.filter { $0.name == "text" }
        XCTAssertEqual(document.texts, labels.map(\.text), "one <text> per label, in order", file: file, line: line)
        XCTAssertEqual(texts.count, labels.count, file: file, line: line)
        for (element, label) in zip(texts, labels) {
            XCTAssertEqual(element.number("x"), label.x, accuracy: 0.006, label.text, file: file, line: line)
            XCTAssertEqual(element.number("y"), label.baseline, accuracy: 0.006, label.text, file: file, line: line)
            XCTAssertEqual(element.number("font-size"), label.size, label.text, file: file, line: line)
            XCTAssertEqual(element.attributes["text-anchor"] ?? "start", label.anchor.rawValue, label.text, file: file, line: line)
            let box = label.box
            XCTAssertGreaterThanOrEqual(box.minX, 0, "\(label.text) starts inside the picture", file: file, line: line)
            XCTAssertLessThanOrEqual(box.maxX, Double(width), "\(label.text) ends inside the picture", file: file, line: line)
        }
        for (i, a) in labels.enumerated() {
            for b in labels[(i + 1)...] where a.box.intersects(b.box) {
                XCTFail("'\(a.text)' \(a.box) and '\(b.text)' \(b.box) overlap (width \(width))", file: file, line: line)
            }
        }
        return (document, labels)
    }

    func testLabelsOfPhasesStartingTogetherDoNotOverlap() throws {
        let events = try simultaneousPhases()
        for width in [1200, 640, 480] {
            let (document, labels) = try assertLabelsApart(events, width: width)
            // Both names are drawn, the second phase's bar and name on a row of their own.
            let phases = document.elements(class: "phase")
            // terminate goes through the background: didEnterBackground and willTerminate start together too.
            XCTAssertEqual(phases.map { $0.attributes["data-phase"] }, ["launch", "didEnterBackground", "didEnterBackground", "willTerminate"])
            // At one spot: microseconds apart, a pixel or less — up to ~0.4 ms under AddressSanitizer on a
            // slow shared machine (1.01 and 1.13 px seen at 1200 px), so 3 px; the labels' rows are the point.
            XCTAssertEqual(phases[0].number("x"), phases[1].number("x"), accuracy: 3, "the two phases start at one spot")
            XCTAssertEqual(phases[1].number("y") - phases[0].number("y"), 22, "the second phase is one row (18 + 4 px) lower")
            XCTAssertEqual(phases[2].number("y"), phases[0].number("y"), "a later phase goes back to the first row")
            XCTAssertEqual(phases[3].number("y"), phases[1].number("y"))
            XCTAssertEqual(phaseLabels(document), ["launch", "didEnterBackground", "didEnterBackground", "willTerminate"])
            XCTAssertEqual(labels.filter { Self.phaseNames.contains($0.text) }.count, 5, "the phases' four and the action launch")
        }
        // The same check on the realistic run (tasks, every state) and on its overrun.
        try assertLabelsApart(try realisticRun(), width: 1200)
        try assertLabelsApart(try realisticRun(), width: 480)
    }

    /// A real renderer (rsvg-convert) draws the realistic run, its overrun and the phases that start
    /// together; the PNGs stay in $TIMELINE_PNG_DIR when that is set, for a look.
    func testARealRendererDrawsTheTimelines() throws {
        let converter = try RequiredTool.path("rsvg-convert", package: "librsvg2-bin", for: "to check that a real renderer draws the timeline")
        try renderPNG(draw(try realisticRun()), name: "timeline-realistic", converter: converter)
        let overrun = try realisticRun({
            $0.budgets.didEnterBackground = .milliseconds(40)
            $0.watchdogPolicy = .report
        }, didEnterBackground: { _ in usleep(120_000) })
        try renderPNG(draw(overrun), name: "timeline-overrun", converter: converter)
        try renderPNG(TimelineDrawing(events: try simultaneousPhases(), width: 1200).render(), name: "timeline-simultaneous", converter: converter)
    }

    func testManyPhasesAtOneSpotKeepTheirLabelsApart() throws {
        // Eleven phases within a millisecond (launch and ten Home), on an axis of a third of a second:
        // four rows of names at most; the phases past them keep their bars (and <title>) without a name.
        let events = try simultaneousPhases(cycles: 9)
        let (document, _) = try assertLabelsApart(events, width: 1200)
        let phases = document.elements(class: "phase")
        XCTAssertEqual(phases.count, 13, "launch, ten Home, and terminate's didEnterBackground and willTerminate")
        XCTAssertEqual(Set(phases.map { $0.number("y") }).count, 4, "four budget rows")
        XCTAssertEqual(phaseLabels(document), ["launch", "didEnterBackground", "didEnterBackground", "didEnterBackground",
                                            "didEnterBackground", "willTerminate"],
                       "four names at the crowded spot, and terminate's two later")
        XCTAssertTrue(phases.allSatisfy { $0.title?.contains("budget") == true })
    }

    /// The budget bars' names (class `phase-label`), in order.
    private func phaseLabels(_ document: SVGDocument) -> [String] {
        zip(document.elements.filter { $0.name == "text" }, document.texts).filter { $0.0.attributes["class"] == "phase-label" }.map(\.1)
    }

    func testTextWidthsAndClipping() {
        // DejaVu Sans: the 18 glyphs of "didEnterBackground" advance 20 929 of 2048 units per em.
        XCTAssertEqual(TimelineText.width("didEnterBackground", size: 10), 20_929.0 / 2048 * 10, accuracy: 1e-9)
        XCTAssertGreaterThan(TimelineText.width("AB", size: 14, bold: true), TimelineText.width("AB", size: 14))
        XCTAssertEqual(TimelineText.width("é", size: 10), 12.5, "a character past ASCII counts 1.25 em")
        XCTAssertEqual(TimelineText.clip("short", toWidth: 100, size: 10), "short")
        let clipped = TimelineText.clip("a rather long background task name", toWidth: 60, size: 10)
        XCTAssertTrue(clipped.hasSuffix("…"), clipped)
        XCTAssertLessThanOrEqual(TimelineText.width(clipped, size: 10), 60)
        XCTAssertGreaterThan(TimelineText.width(clipped, size: 10), 60 - 13, "as long as fits")
        XCTAssertEqual(TimelineText.clip("abc", toWidth: 2, size: 10), "")
        let box = TimelineLabel("ab", x: 100, baseline: 50, size: 10, anchor: .end).box
        XCTAssertEqual(box.maxX, 100)
        XCTAssertFalse(box.intersects(TimelineBox(minX: box.maxX, minY: box.minY, maxX: box.maxX + 5, maxY: box.maxY)), "edges touch")
        XCTAssertTrue(box.intersects(TimelineBox(minX: box.maxX - 0.5, minY: box.minY, maxX: box.maxX + 5, maxY: box.maxY)))
    }

    /// Renders with `converter` (rsvg-convert) and checks it wrote a PNG; keeps it in $TIMELINE_PNG_DIR
    /// when that is set.
    private func renderPNG(_ svg: String, name: String, converter: String) throws {
        let folder = ProcessInfo.processInfo.environment["TIMELINE_PNG_DIR"] ?? NSTemporaryDirectory()
        let svgURL = URL(fileURLWithPath: folder).appendingPathComponent("\(name).svg")
        let pngURL = URL(fileURLWithPath: folder).appendingPathComponent("\(name).png")
        try Data(svg.utf8).write(to: svgURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: converter)
        process.arguments = ["-o", pngURL.path, svgURL.path]
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "rsvg-convert failed on \(svgURL.path)")
        let png = try Data(contentsOf: pngURL)
        XCTAssertEqual(Array(png.prefix(4)), [0x89, 0x50, 0x4E, 0x47])
    }
}

/// A parsed SVG: every element with its attributes and the text of its `<title>` child.
final class SVGDocument: NSObject, XMLParserDelegate {
    final class Element {
        let name: String
        let attributes: [String: String]
        var title: String?
        init(name: String, attributes: [String: String]) {
            self.name = name
            self.attributes = attributes
        }
        func number(_ attribute: String) -> Double { Double(attributes[attribute] ?? "") ?? .nan }
    }

    private(set) var elements: [Element] = []
    /// The text of every `<text>` element.
    private(set) var texts: [String] = []
    private var stack: [Element] = []
    private var characters = ""
    private var failure: Error?

    var root: Element? { elements.first }

    init(_ svg: String) throws {
        super.init()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.shouldProcessNamespaces = false
        parser.delegate = self
        guard parser.parse() else {
            throw failure ?? parser.parserError ?? CocoaError(.coderReadCorrupt)
        }
    }

    func elements(class name: String) -> [Element] {
        elements.filter { $0.attributes["class"] == name }
    }

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                qualifiedName: String?, attributes: [String: String] = [:])
    {
        let element = Element(name: elementName, attributes: attributes)
        elements.append(element)
        stack.append(element)
        characters = ""
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { characters += string }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        stack.removeLast()
        if elementName == "title" { stack.last?.title = characters }
        if elementName == "text" { texts.append(characters) }
        characters = ""
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) { failure = parseError }
}
