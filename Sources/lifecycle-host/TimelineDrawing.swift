// Lays out a timeline and renders it as SVG 1.1.
import AppLifecycle
@preconcurrency import Glibc

/// Lays out one trace and writes its SVG (internal for the tests of its axis).
struct TimelineDrawing {
    let events: [TraceEvent]
    let width: Int

    private let left = 150.0
    private let right = 24.0
    private let top = 34.0
    private let rowGap = 10.0
    private let stateHeight = 28.0
    private let phaseHeight = 18.0
    private let taskHeight = 16.0
    private let laneHeight = 16.0
    private let sceneHeight = 16.0
    /// Budget rows at most: where more phases meet at one spot, the extra ones lose their names.
    private let maxPhaseRows = 4
    private let markHeight = 14.0
    /// Rows of action names, and of plugin failures, at most (`TimelineMarkRows`).
    private let maxMarkRows = 3

    /// The axis: from 0 to `end` seconds, labelled every `step`.
    private let end: Double
    private let step: Double
    private let decimals: Int
    private let analysis: TimelineAnalysis
    private let lanes: [TraceEvent.Kind]

    init(events: [TraceEvent], width: Int) {
        self.events = events
        self.width = width
        let last = events.map { $0.time.secondsDouble }.max() ?? 0
        let (end, step) = Self.axis(for: last)
        self.end = end
        self.step = step
        decimals = Self.decimals(for: step)
        analysis = TimelineAnalysis(events, finish: end)
        var kinds = TimelineStyle.kinds.map(\.0).filter { kind in events.contains { $0.kind == kind } }
        for event in events where !kinds.contains(event.kind) { kinds.append(event.kind) }
        lanes = kinds
    }

    /// A round axis end a little past `last`, and a step giving 5–10 labels: the axis fits the run
    /// (a run of 0.002 s gets an axis of 0.0025 s, labelled every 0.0005 s), and is at least
    /// 10 µs long (a run of one instant).
    static func axis(for last: Double) -> (end: Double, step: Double) {
        let span = max(last * 1.02, 0.000_01)
        let rough = span / 8
        let magnitude = pow(10, (log10(rough)).rounded(.down))
        let step = [1.0, 2.0, 2.5, 5.0, 10.0].map { $0 * magnitude }.first { $0 >= rough } ?? 10 * magnitude
        // Less a hair: a span of exactly k steps (the 10 µs floor) is k steps, whatever the last bit says.
        return ((span / step - 1e-9).rounded(.up) * step, step)
    }

    static func decimals(for step: Double) -> Int {
        for digits in 0...6 {
            let scaled = step * pow(10, Double(digits))
            if abs(scaled - scaled.rounded()) < 1e-6 { return digits }
        }
        return 6
    }

    private var plotWidth: Double { Double(width) - left - right }

    private func x(_ seconds: Double) -> Double {
        left + min(max(seconds, 0), end) / end * plotWidth
    }

    /// A time in the picture's words: three decimals, or as many as the axis labels have.
    private func seconds(_ value: Double) -> String { number(value, decimals: max(decimals, 3)) + " s" }

    func render() -> String { draw().svg }

    /// The SVG and every text in it, each with the box it covers (one `<text>` per label, in order).
    func draw() -> (svg: String, labels: [TimelineLabel]) {
        var body = ""
        var labels: [TimelineLabel] = []
        /// The `<text>` element of `label`, which joins the labels.
        func text(_ label: TimelineLabel, _ attributes: String = "") -> String {
            labels.append(label)
            let anchor = label.anchor == .start ? "" : " text-anchor=\"\(label.anchor.rawValue)\""
            let weight = label.bold ? " font-weight=\"bold\"" : ""
            return "<text x=\"\(f(label.x))\" y=\"\(f(label.baseline))\" font-size=\"\(f(label.size))\"\(anchor)\(weight)\(attributes)>"
                + "\(TimelineRecorder.xmlEscape(label.text))</text>\n"
        }
        let phaseLayout = layOutPhases()
        let actionLayout = layOutMarks(analysis.actions.map { (x($0.time), $0.name) }, halfWidth: 1)
        let failureLayout = layOutMarks(analysis.failures.map { (x($0.time), "\($0.plugin): \($0.cause)") }, halfWidth: 5)
        var y = top

        // Rows.
        let stateTop = y
        y += stateHeight + rowGap
        let scenesTop = y
        if !analysis.sceneLanes.isEmpty { y += Double(analysis.sceneLanes.count) * (sceneHeight + 4) - 4 + rowGap }
        let actionsTop = y
        if actionLayout.rows > 0 { y += Double(actionLayout.rows) * (markHeight + 4) - 4 + rowGap }
        let failuresTop = y
        if failureLayout.rows > 0 { y += Double(failureLayout.rows) * (markHeight + 4) - 4 + rowGap }
        let phaseTop = y
        y += Double(max(phaseLayout.rows, 1)) * (phaseHeight + 4) - 4 + rowGap
        let taskLanes = (analysis.tasks.map(\.lane).max() ?? -1) + 1
        let taskTop = y
        y += Double(max(taskLanes, 1)) * (taskHeight + 4) - 4 + rowGap
        let eventsTop = y
        y += Double(max(lanes.count, 1)) * laneHeight + rowGap
        let axisY = y
        y += 36
        let legendTop = y

        // Grid and axis.
        body += "<g id=\"axis\" font-size=\"10\" fill=\"#424242\">\n"
        var tick = 0.0
        var index = 0
        var lastAxisLabel: TimelineBox?
        while tick <= end + step / 1000 {
            let position = x(tick)
            body += "<line class=\"grid\" x1=\"\(f(position))\" y1=\"\(f(stateTop))\" x2=\"\(f(position))\" y2=\"\(f(axisY))\" stroke=\"#eeeeee\" stroke-width=\"1\"/>\n"
            body += "<line x1=\"\(f(position))\" y1=\"\(f(axisY))\" x2=\"\(f(position))\" y2=\"\(f(axisY + 5))\" stroke=\"#424242\"/>\n"
            // A label only where it clears the previous one (a narrow picture labels every other tick).
            let label = TimelineLabel("\(number(tick, decimals: decimals)) s", x: position, baseline: axisY + 17, size: 10, anchor: .middle)
            if lastAxisLabel.map({ $0.maxX + 6 <= label.box.minX }) ?? true {
                body += text(label, " class=\"axis-label\"")
                lastAxisLabel = label.box
            }
            index += 1
            tick = Double(index) * step
        }
        body += "<line x1=\"\(f(left))\" y1=\"\(f(axisY))\" x2=\"\(f(left + plotWidth))\" y2=\"\(f(axisY))\" stroke=\"#424242\"/>\n"
        body += text(TimelineLabel("time since launch (s)", x: left + plotWidth, baseline: axisY + 30, size: 10, anchor: .end))
        body += "</g>\n"

        // Row labels.
        body += "<g id=\"row-labels\" fill=\"#212121\">\n"
        /// A row's name, right-aligned before the plot, shortened to fit the margin.
        func rowLabel(_ name: String, _ middle: Double, colour: String? = nil) -> String {
            let clipped = TimelineText.clip(name, toWidth: left - 8 - 6, size: 11)
            return text(TimelineLabel(clipped, x: left - 8, baseline: middle + 4, size: 11, anchor: .end),
                        colour.map { " fill=\"\($0)\"" } ?? "")
        }
        body += rowLabel("state", stateTop + stateHeight / 2)
        for (index, lane) in analysis.sceneLanes.enumerated() {
            body += rowLabel("scene \(lane.scene)", scenesTop + Double(index) * (sceneHeight + 4) + sceneHeight / 2)
        }
        if actionLayout.rows > 0 { body += rowLabel("actions", actionsTop + markHeight / 2) }
        if failureLayout.rows > 0 { body += rowLabel("plugin failures", failuresTop + markHeight / 2, colour: TimelineStyle.failureColour) }
        body += rowLabel("budgets", phaseTop + phaseHeight / 2)
        body += rowLabel("background tasks", taskTop + taskHeight / 2)
        for (lane, kind) in lanes.enumerated() {
            body += rowLabel(kind.rawValue, eventsTop + Double(lane) * laneHeight + laneHeight / 2, colour: TimelineStyle.colour(of: kind))
        }
        body += "</g>\n"

        // State bands.
        body += "<g id=\"states\">\n"
        var slivers = ""
        var sliverEnd = -Double.infinity
        for interval in analysis.intervals {
            let x0 = x(interval.start), x1 = x(interval.end)
            body += "<rect class=\"band\" data-state=\"\(interval.state.rawValue)\" x=\"\(f(x0))\" y=\"\(f(stateTop))\" width=\"\(f(x1 - x0))\" height=\"\(f(stateHeight))\" fill=\"\(TimelineStyle.colour(of: interval.state))\">"
            let title = TimelineRecorder.xmlEscape("\(interval.state) \(seconds(interval.start)) – \(seconds(interval.end))")
            body += "<title>\(title)</title></rect>\n"
            if x1 - x0 < 2 {
                // Too brief to see at this scale (inactive between two actions): a 2 px sliver drawn over
                // the next band, side by side when several fall on one spot.
                let sx = max(x0, sliverEnd)
                sliverEnd = sx + 2
                slivers += "<rect class=\"brief\" data-state=\"\(interval.state.rawValue)\" x=\"\(f(sx))\" y=\"\(f(stateTop))\" width=\"2\" height=\"\(f(stateHeight))\" fill=\"\(TimelineStyle.colour(of: interval.state))\"><title>\(title)</title></rect>\n"
            }
            // The state's name inside its band, when it fits with 4 px to spare each side.
            if x1 - x0 >= TimelineText.width(interval.state.rawValue, size: 11) + 8 {
                let name = TimelineLabel(interval.state.rawValue, x: (x0 + x1) / 2, baseline: stateTop + stateHeight / 2 + 4, size: 11, anchor: .middle)
                body += text(name, " fill=\"\(interval.state == .inactive ? "#212121" : "#ffffff")\" pointer-events=\"none\"")
            }
        }
        body += slivers
        body += "</g>\n"

        // Scene lanes.
        if !analysis.sceneLanes.isEmpty {
            body += "<g id=\"scenes\">\n"
            for (index, lane) in analysis.sceneLanes.enumerated() {
                let rowY = scenesTop + Double(index) * (sceneHeight + 4)
                let scene = TimelineRecorder.xmlEscape(lane.scene)
                for interval in lane.intervals {
                    let x0 = x(interval.start)
                    let x1 = max(x(interval.end), x0 + 2)
                    let title = TimelineRecorder.xmlEscape("scene \(lane.scene) \(interval.state) \(seconds(interval.start)) – \(seconds(interval.end))")
                    body += "<rect class=\"scene-band\" data-scene=\"\(scene)\" data-state=\"\(interval.state.rawValue)\" x=\"\(f(x0))\" y=\"\(f(rowY))\" width=\"\(f(x1 - x0))\" height=\"\(f(sceneHeight))\" fill=\"\(TimelineStyle.colour(of: interval.state))\"><title>\(title)</title></rect>\n"
                }
            }
            body += "</g>\n"
        }

        // Actions: a mark at each, its name beside it.
        if actionLayout.rows > 0 {
            body += "<g id=\"actions\">\n"
            for (action, place) in zip(analysis.actions, actionLayout.places) {
                let rowY = actionsTop + Double(place.row) * (markHeight + 4)
                var title = "#\(action.seq) \(seconds(action.time)) action \(action.name)"
                if let scene = action.scene { title += " {\(scene)}" }
                body += "<line class=\"action\" data-seq=\"\(action.seq)\" data-action=\"\(TimelineRecorder.xmlEscape(action.name))\" x1=\"\(f(place.x))\" y1=\"\(f(rowY))\" x2=\"\(f(place.x))\" y2=\"\(f(rowY + markHeight))\" stroke=\"\(TimelineStyle.colour(of: TraceEvent.Kind.action))\" stroke-width=\"2\"><title>\(TimelineRecorder.xmlEscape(title))</title></line>\n"
                if let label = place.label {
                    body += text(label.at(baseline: rowY + markHeight / 2 + 4), " class=\"action-label\" fill=\"#212121\"")
                }
            }
            body += "</g>\n"
        }

        // Plugin failures: a red triangle at each, the plugin and the cause beside it, and a red line
        // down the picture.
        if failureLayout.rows > 0 {
            body += "<g id=\"failures\">\n"
            for (failure, place) in zip(analysis.failures, failureLayout.places) {
                let rowY = failuresTop + Double(place.row) * (markHeight + 4)
                var title = "#\(failure.seq) \(seconds(failure.time)) \(failure.kind.rawValue) [\(failure.plugin)] \(failure.cause)"
                if let detail = failure.detail, !detail.isEmpty { title += " (\(detail))" }
                let escaped = TimelineRecorder.xmlEscape(title)
                body += "<line class=\"failure-line\" data-seq=\"\(failure.seq)\" x1=\"\(f(place.x))\" y1=\"\(f(stateTop))\" x2=\"\(f(place.x))\" y2=\"\(f(axisY))\" stroke=\"\(TimelineStyle.failureColour)\" stroke-width=\"1\" stroke-dasharray=\"3 2\" stroke-opacity=\"0.7\"/>\n"
                let points = "\(f(place.x - 5)),\(f(rowY + 2)) \(f(place.x + 5)),\(f(rowY + 2)) \(f(place.x)),\(f(rowY + markHeight - 1))"
                body += "<polygon class=\"failure\" data-seq=\"\(failure.seq)\" data-kind=\"\(failure.kind.rawValue)\" data-plugin=\"\(TimelineRecorder.xmlEscape(failure.plugin))\" points=\"\(points)\" fill=\"\(TimelineStyle.failureColour)\"><title>\(escaped)</title></polygon>\n"
                if let label = place.label {
                    body += text(label.at(baseline: rowY + markHeight / 2 + 4), " class=\"failure-label\" fill=\"\(TimelineStyle.failureColour)\"")
                }
            }
            body += "</g>\n"
        }

        // Budgeted phases.
        body += "<g id=\"budgets\">\n"
        for (phase, place) in zip(analysis.phases, phaseLayout.places) {
            let x0 = place.x0, x1 = place.x1
            let phaseTop = phaseTop + Double(place.row) * (phaseHeight + 4)
            var title = "\(phase.name) budget: \(seconds(phase.start)) – \(seconds(phase.end))"
            if let detail = phase.overrunDetail { title += " — overrun: \(detail)" }
            body += "<rect class=\"phase\" data-phase=\"\(TimelineRecorder.xmlEscape(phase.name))\" x=\"\(f(x0))\" y=\"\(f(phaseTop))\" width=\"\(f(x1 - x0))\" height=\"\(f(phaseHeight))\" fill=\"\(TimelineStyle.phaseColour)\" rx=\"2\"><title>\(TimelineRecorder.xmlEscape(title))</title></rect>\n"
            if let from = phase.overrunFrom {
                let r0 = min(max(x(from), x0), x1)
                body += "<rect class=\"overrun\" data-phase=\"\(TimelineRecorder.xmlEscape(phase.name))\" x=\"\(f(r0))\" y=\"\(f(phaseTop))\" width=\"\(f(max(x1 - r0, 2)))\" height=\"\(f(phaseHeight))\" fill=\"\(TimelineStyle.overrunColour)\" rx=\"2\"><title>\(TimelineRecorder.xmlEscape(title))</title></rect>\n"
            }
            if let label = place.label {
                body += text(label.at(baseline: phaseTop + phaseHeight / 2 + 4), " class=\"phase-label\" fill=\"#455a64\" pointer-events=\"none\"")
            }
        }
        body += "</g>\n"

        // Background tasks.
        body += "<g id=\"background-tasks\">\n"
        for task in analysis.tasks {
            let x0 = x(task.start)
            let x1 = max(x(task.end), x0 + 2)
            let rowY = taskTop + Double(task.lane) * (taskHeight + 4)
            var title = "background task \(task.label)"
            if !task.owner.isEmpty { title += " [\(task.owner)]" }
            title += ": \(seconds(task.start)) – " + (task.ended ? seconds(task.end) : "not ended")
            if let expiring = task.expiring { title += "; expiring at \(seconds(expiring))" }
            if task.endedByWatchdog { title += "; ended by the watchdog" }
            let stroke = task.endedByWatchdog ? TimelineStyle.overrunColour : TimelineStyle.taskStroke
            let dash = task.ended ? "" : " stroke-dasharray=\"4 2\""
            body += "<rect class=\"task\" data-task=\"\(TimelineRecorder.xmlEscape(task.id))\" x=\"\(f(x0))\" y=\"\(f(rowY))\" width=\"\(f(x1 - x0))\" height=\"\(f(taskHeight))\" fill=\"\(TimelineStyle.taskColour)\" stroke=\"\(stroke)\"\(dash) rx=\"3\"><title>\(TimelineRecorder.xmlEscape(title))</title></rect>\n"
            if let expiring = task.expiring {
                let ex = x(expiring)
                body += "<line class=\"expiring\" x1=\"\(f(ex))\" y1=\"\(f(rowY))\" x2=\"\(f(ex))\" y2=\"\(f(rowY + taskHeight))\" stroke=\"\(TimelineStyle.expiringColour)\" stroke-width=\"3\"><title>\(TimelineRecorder.xmlEscape(title))</title></line>\n"
            }
            // The task's name inside its bar, shortened to fit with 4 px to spare each side.
            let name = TimelineText.clip(task.label, toWidth: x1 - x0 - 8, size: 10)
            if x1 - x0 > 40, !name.isEmpty {
                body += text(TimelineLabel(name, x: x0 + 4, baseline: rowY + taskHeight / 2 + 4, size: 10), " fill=\"#0d47a1\" pointer-events=\"none\"")
            }
        }
        body += "</g>\n"

        // Event ticks.
        body += "<g id=\"events\" stroke-width=\"2\">\n"
        for (lane, _) in lanes.enumerated() where lane % 2 == 1 {
            body += "<rect x=\"\(f(left))\" y=\"\(f(eventsTop + Double(lane) * laneHeight))\" width=\"\(f(plotWidth))\" height=\"\(f(laneHeight))\" fill=\"#000000\" fill-opacity=\"0.03\"/>\n"
        }
        for event in events {
            let lane = Double(lanes.firstIndex(of: event.kind) ?? 0)
            let position = x(event.time.secondsDouble)
            let y0 = eventsTop + lane * laneHeight + 2
            body += "<line class=\"tick\" data-seq=\"\(event.seq)\" x1=\"\(f(position))\" y1=\"\(f(y0))\" x2=\"\(f(position))\" y2=\"\(f(y0 + laneHeight - 4))\" stroke=\"\(TimelineStyle.colour(of: event.kind))\"><title>\(TimelineRecorder.xmlEscape(tickTitle(event)))</title></line>\n"
        }
        body += "</g>\n"

        // Legend.
        let (legend, legendHeight) = self.legend(top: legendTop, text: text)
        body += legend
        let height = Int((legendTop + legendHeight + 12).rounded(.up))

        var svg = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
        svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"\(width)\" height=\"\(height)\" viewBox=\"0 0 \(width) \(height)\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
        let span = analysis.lastTime
        svg += "<title>AppLifecycle timeline</title>\n"
        svg += "<desc>\(events.count) trace events over \(seconds(span))</desc>\n"
        svg += "<rect x=\"0\" y=\"0\" width=\"\(width)\" height=\"\(height)\" fill=\"#ffffff\"/>\n"
        svg += text(TimelineLabel("AppLifecycle timeline", x: 12, baseline: 20, size: 14, bold: true), " fill=\"#212121\"")
        svg += text(TimelineLabel("\(events.count) events, \(seconds(span))", x: Double(width) - 12, baseline: 20, size: 11, anchor: .end),
                    " fill=\"#616161\"")
        svg += body
        svg += "</svg>\n"
        // The header's two texts were made last: put them first, in document order.
        labels = Array(labels.suffix(2)) + labels.dropLast(2)
        return (svg, labels)
    }

    private func tickTitle(_ event: TraceEvent) -> String {
        var text = "#\(event.seq) \(seconds(event.time.secondsDouble)) \(event.kind) \(event.name)"
        if let observer = event.observer, !observer.isEmpty { text += " [\(observer)]" }
        if let detail = event.detail, !detail.isEmpty { text += " (\(detail))" }
        return text + " → \(event.state)"
    }

    /// The legend, wrapped to the width; returns its markup and height. `text` makes each `<text>`.
    private func legend(top: Double, text: (TimelineLabel, String) -> String) -> (String, Double) {
        enum Swatch { case box, bar, tick, triangle }
        var items: [(String, String, Swatch)] = ApplicationState.allCases.map { ($0.rawValue, TimelineStyle.colour(of: $0), .box) }
        items += [("budgeted phase", TimelineStyle.phaseColour, .bar), ("over budget", TimelineStyle.overrunColour, .bar),
                  ("background task", TimelineStyle.taskColour, .bar), ("expiration warning", TimelineStyle.expiringColour, .tick)]
        if !analysis.failures.isEmpty { items.append(("plugin failure", TimelineStyle.failureColour, .triangle)) }
        items += lanes.map { ($0.rawValue, TimelineStyle.colour(of: $0), .tick) }
        var out = "<g id=\"legend\" fill=\"#212121\">\n"
        out += text(TimelineLabel("legend", x: 12, baseline: top + 12, size: 11, bold: true), "")
        var x = left
        var y = top
        for (name, colour, swatch) in items {
            let itemWidth = 22 + TimelineText.width(name, size: 11) + 16
            if x + itemWidth > Double(width) - right, x > left {
                x = left
                y += 18
            }
            switch swatch {
            case .box:
                out += "<rect x=\"\(f(x))\" y=\"\(f(y + 2))\" width=\"16\" height=\"12\" fill=\"\(colour)\"/>\n"
            case .bar:
                let stroke = name == "background task" ? " stroke=\"\(TimelineStyle.taskStroke)\"" : ""
                out += "<rect x=\"\(f(x))\" y=\"\(f(y + 4))\" width=\"16\" height=\"8\" fill=\"\(colour)\"\(stroke) rx=\"2\"/>\n"
            case .tick:
                out += "<line x1=\"\(f(x + 8))\" y1=\"\(f(y + 1))\" x2=\"\(f(x + 8))\" y2=\"\(f(y + 15))\" stroke=\"\(colour)\" stroke-width=\"2.5\"/>\n"
            case .triangle:
                out += "<polygon points=\"\(f(x + 3)),\(f(y + 2)) \(f(x + 13)),\(f(y + 2)) \(f(x + 8)),\(f(y + 14))\" fill=\"\(colour)\"/>\n"
            }
            out += text(TimelineLabel(name, x: x + 22, baseline: y + 12, size: 11), "")
            x += itemWidth
        }
        out += "</g>\n"
        return (out, y - top + 18)
    }

    /// Where each mark (an action, a failure) and its name go: `TimelineMarkRows` over the plot.
    private func layOutMarks(_ marks: [(x: Double, name: String)], halfWidth: Double) -> TimelineMarkRows {
        TimelineMarkRows(marks, halfWidth: halfWidth, size: 10, maxRows: maxMarkRows, rightEdge: Double(width) - 4,
                         maxLabelWidth: min(240, plotWidth / 2 - 10))
    }

    /// Where each budget bar goes: its row, its ends, and its name after it (or before it, near the
    /// right edge), in rows so that no bar or name overlaps another's; a phase no row can hold with its
    /// name (more than `maxPhaseRows` at one spot) is drawn without it, its name still in its `<title>`.
    private func layOutPhases() -> (places: [PhasePlace], rows: Int) {
        var rows = TimelineRows(maxRows: maxPhaseRows, gap: 6)
        var places: [PhasePlace] = []
        places.reserveCapacity(analysis.phases.count)
        for phase in analysis.phases {
            let x0 = x(phase.start)
            // At least 2 px, so that a phase of a few microseconds still shows.
            let x1 = max(x(phase.end), x0 + 2)
            let after = TimelineLabel(phase.name, x: x1 + 3, baseline: 0, size: 10)
            let label = after.box.maxX <= Double(width) - 4 ? after : TimelineLabel(phase.name, x: x0 - 3, baseline: 0, size: 10, anchor: .end)
            if let row = rows.place(min(x0, label.box.minX), max(x1, label.box.maxX)) {
                places.append(PhasePlace(row: row, x0: x0, x1: x1, label: label))
            } else {
                let row = rows.place(x0, x1) ?? rows.force(x1)
                places.append(PhasePlace(row: row, x0: x0, x1: x1, label: nil))
            }
        }
        return (places, rows.count)
    }
}

/// A budget bar's place: its row, its ends (pixels), and its name (placed on row 0's baseline), if shown.
private struct PhasePlace {
    let row: Int
    let x0: Double
    let x1: Double
    let label: TimelineLabel?
}

extension TimelineLabel {
    /// The same label on another baseline.
    func at(baseline: Double) -> TimelineLabel {
        TimelineLabel(text, x: x, baseline: baseline, size: size, anchor: anchor, bold: bold)
    }
}

/// A coordinate with at most two decimals, without trailing zeros.
private func f(_ value: Double) -> String { number(value, decimals: 2, trim: true) }

/// `value` with `decimals` digits after the point (Foundation-free).
private func number(_ value: Double, decimals: Int, trim: Bool = false) -> String {
    guard value.isFinite else { return "0" }
    let scale = pow(10, Double(decimals))
    let scaled = (abs(value) * scale).rounded()
    let whole = Int64(scaled / scale)
    var fraction = String(Int64(scaled - Double(whole) * scale))
    fraction = String(repeating: "0", count: max(decimals - fraction.count, 0)) + fraction
    if trim { while fraction.last == "0" { fraction.removeLast() } }
    let sign = value < 0 && scaled != 0 ? "-" : ""
    return fraction.isEmpty ? "\(sign)\(whole)" : "\(sign)\(whole).\(fraction)"
}
