import AppLifecycle
@preconcurrency import Glibc

/// Collects trace events during a run and draws them as a standalone SVG 1.1 timeline.
///
/// The picture, top to bottom, over one time axis in seconds since the first launch:
/// - **state**: the application state as coloured bands — not running grey, inactive yellow,
///   active green, background blue, suspended purple; one band per interval between state changes.
/// - **budgets**: the watchdog-budgeted phases (launch, didEnterBackground, willTerminate) as bars from
///   the first to the last event of the phase; the part past the budget of a phase that overran it
///   (a watchdog overrun reports that budget) is red. Phases, overruns and tasks are read from the
///   events' typed payloads, never from their words.
/// - **background tasks**: one bar per task from its `begin` to its `end` event (or to the end of the
///   run or of the process), stacked when they overlap; an expiration warning is an orange mark, an
///   end forced by the watchdog a red one.
/// - **events**: one tick per trace event, in a lane per kind, coloured by kind; hovering a tick shows
///   its sequence number, time, kind, name, observer, detail and the state after it (`<title>`).
/// - a time axis, and a legend.
///
/// Not thread-safe: record from one thread (the trace handler runs on the loop thread).
final class TimelineRecorder {
    /// The recorded events, in order.
    private(set) var events: [TraceEvent] = []

    init() {}

    /// Adds one event; feed it every event of the trace handler, in order.
    func record(_ event: TraceEvent) {
        events.append(event)
    }

    /// The timeline of the events recorded so far, as an SVG 1.1 document.
    /// - Parameter width: the picture's width in pixels (at least 480); the height follows the content.
    func svg(width: Int = 1200) -> String {
        TimelineDrawing(events: events, width: max(width, 480)).render()
    }

    /// Escapes text for XML character data and attribute values, and replaces the characters XML 1.0
    /// cannot hold (most C0 controls, U+FFFE, U+FFFF) with U+FFFD.
    static func xmlEscape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}

// MARK: - Colours and names

enum TimelineStyle {
    static func colour(of state: ApplicationState) -> String {
        switch state {
        case .notRunning: return "#9e9e9e"
        case .inactive: return "#f2c94c"
        case .active: return "#43a047"
        case .background: return "#1e88e5"
        case .suspended: return "#8e44ad"
        }
    }

    /// The known kinds, in lane order, with their colours.
    static let kinds: [(TraceEvent.Kind, String)] = [
        (.action, "#212121"), (.state, "#6d4c41"), (.delegate, "#1565c0"), (.notification, "#00897b"),
        (.queued, "#7b1fa2"), (.discarded, "#9e9e9e"), (.skipped, "#bdbdbd"), (.backgroundTask, "#3949ab"),
        (.completion, "#2e7d32"), (.archive, "#ef6c00"), (.watchdog, "#e53935"), (.error, "#b71c1c"),
    ]
    static let otherKind = "#757575"

    static func colour(of kind: TraceEvent.Kind) -> String {
        kinds.first { $0.0 == kind }?.1 ?? otherKind
    }

    static let phaseColour = "#90a4ae"
    static let overrunColour = "#e53935"
    static let taskColour = "#90caf9"
    static let taskStroke = "#1565c0"
    static let expiringColour = "#fb8c00"
}

// MARK: - What the trace says

/// Reads intervals, phases and tasks out of a trace.
struct TimelineAnalysis {
    /// A state band: `state` from `start` to `end` (seconds).
    struct StateInterval: Equatable {
        var state: ApplicationState
        var start: Double
        var end: Double
    }

    /// A budgeted phase seen in the trace.
    struct BudgetPhase: Equatable {
        var name: String
        var start: Double
        var end: Double
        /// When the budget ran out (start + budget), if a watchdog event reported an overrun.
        var overrunFrom: Double?
        var overrunDetail: String?
    }

    /// A background task seen in the trace.
    struct TaskBar: Equatable {
        var id: String
        var label: String
        var owner: String
        var start: Double
        var end: Double
        /// False while the task had no end in the trace (the bar runs to the end of the run, or of the process).
        var ended: Bool
        var expiring: Double?
        var endedByWatchdog = false
        var lane = 0
    }

    var intervals: [StateInterval] = []
    var phases: [BudgetPhase] = []
    var tasks: [TaskBar] = []
    /// The last event's time.
    var lastTime: Double = 0

    /// The budgeted phases after launch: the budget, and the delegate method and notification that
    /// belong to it; the notification is the phase's last event.
    static let phaseMembers: [(budget: WatchdogReport.Budget, method: DelegateMethod, notification: NotificationName)] = [
        (.didEnterBackground, .didEnterBackground, .didEnterBackground),
        (.willTerminate, .willTerminate, .willTerminate),
    ]

    /// - Parameter finish: the end of the axis (seconds): the last band, and tasks never ended, run to it.
    ///
    /// Everything is read from the events' typed payloads (`TraceEvent.payload`), never from their
    /// words: rewording a trace message changes no phase, overrun or task.
    init(_ events: [TraceEvent], finish: Double) {
        guard let first = events.first else { return }
        lastTime = events.map { $0.time.secondsDouble }.max() ?? 0

        // States.
        var current = StateInterval(state: first.state, start: first.time.secondsDouble, end: 0)
        for event in events.dropFirst() where event.state != current.state {
            current.end = event.time.secondsDouble
            intervals.append(current)
            current = StateInterval(state: event.state, start: event.time.secondsDouble, end: 0)
        }
        current.end = finish
        intervals.append(current)

        // Phases.
        var open: BudgetPhase?
        var launchPending = false
        var lastClosed: Int?
        for event in events {
            let time = event.time.secondsDouble
            if case .watchdogOverrun(let report) = event.payload {
                guard Self.isPhase(report.budgetKind) else { continue }
                let name = report.budgetKind.rawValue
                let budget = report.budget.secondsDouble
                if var phase = open, phase.name == name {
                    phase.end = time
                    phase.overrunFrom = phase.start + budget
                    phase.overrunDetail = report.description
                    phases.append(phase)
                    lastClosed = phases.count - 1
                    open = nil
                } else if let index = lastClosed, phases[index].name == name {
                    // Reported as the phase closed (the usual order: its last event, then the report).
                    phases[index].end = max(phases[index].end, time)
                    phases[index].overrunFrom = phases[index].start + budget
                    phases[index].overrunDetail = report.description
                }
                continue
            }
            if case .stateChanged(let from, let to, _) = event.payload {
                if from == .notRunning, to != .notRunning { launchPending = true }
                if to == .notRunning, var phase = open {
                    // Killed or terminated inside the phase.
                    phase.end = time
                    phases.append(phase)
                    lastClosed = phases.count - 1
                    open = nil
                }
                continue
            }
            if launchPending, open == nil {
                launchPending = false
                open = BudgetPhase(name: WatchdogReport.Budget.launch.rawValue, start: time, end: time)
            }
            if open == nil {
                for member in Self.phaseMembers where Self.belongs(event, to: member) {
                    open = BudgetPhase(name: member.budget.rawValue, start: time, end: time)
                }
            }
            if var phase = open {
                phase.end = time
                let last = phase.name == WatchdogReport.Budget.launch.rawValue ? NotificationName.didFinishLaunching
                    : Self.phaseMembers.first { $0.budget.rawValue == phase.name }?.notification
                if case .notificationDelivered(let name, _, _) = event.payload, name == last {
                    phases.append(phase)
                    lastClosed = phases.count - 1
                    open = nil
                } else {
                    open = phase
                }
            }
        }
        if let phase = open { phases.append(phase) }

        // Background tasks.
        var openTasks: [BackgroundTaskID: Int] = [:]
        for event in events {
            let time = event.time.secondsDouble
            switch event.payload {
            case .stateChanged(_, .notRunning, _):
                // The process went away: its tasks with it.
                for index in openTasks.values { tasks[index].end = time }
                openTasks.removeAll()
            case .watchdogOverrun(let report):
                if case .backgroundTask(let id, _) = report.subject, let index = openTasks[id] {
                    tasks[index].endedByWatchdog = true
                }
            case .backgroundTask(let id, let step, let name, let owner):
                switch step {
                case .began:
                    let label = name.isEmpty ? "#\(id)" : "#\(id) \(name)"
                    tasks.append(TaskBar(id: id.description, label: label, owner: owner, start: time, end: finish,
                                         ended: false, expiring: nil))
                    openTasks[id] = tasks.count - 1
                case .expiring:
                    if let index = openTasks[id] { tasks[index].expiring = time }
                case .ended, .endedByWatchdog:
                    if let index = openTasks[id] {
                        tasks[index].end = time
                        tasks[index].ended = true
                        if step == .endedByWatchdog { tasks[index].endedByWatchdog = true }
                        openTasks[id] = nil
                    }
                }
            default:
                continue
            }
        }
        // Lanes: the first lane free at the task's start.
        var laneEnds: [Double] = []
        for index in tasks.indices {
            if let lane = laneEnds.firstIndex(where: { $0 <= tasks[index].start }) {
                tasks[index].lane = lane
                laneEnds[lane] = tasks[index].end
            } else {
                tasks[index].lane = laneEnds.count
                laneEnds.append(tasks[index].end)
            }
        }
    }

    /// Whether the watchdog budget is one of the phases drawn (launch, didEnterBackground, willTerminate).
    static func isPhase(_ budget: WatchdogReport.Budget) -> Bool {
        budget == .launch || phaseMembers.contains { $0.budget == budget }
    }

    /// Whether `event` is the delegate call or the notification of a phase's `member`.
    static func belongs(_ event: TraceEvent,
                        to member: (budget: WatchdogReport.Budget, method: DelegateMethod, notification: NotificationName)) -> Bool
    {
        switch event.payload {
        case .delegateCalled(let method, _): return method == member.method
        case .notificationDelivered(let name, _, _): return name == member.notification
        default: return false
        }
    }
}

// MARK: - Drawing

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

    /// A round axis end a little past `last`, and a step giving 5–10 labels.
    static func axis(for last: Double) -> (end: Double, step: Double) {
        let span = max(last * 1.02, 0.01)
        let rough = span / 8
        let magnitude = pow(10, (log10(rough)).rounded(.down))
        let step = [1.0, 2.0, 2.5, 5.0, 10.0].map { $0 * magnitude }.first { $0 >= rough } ?? 10 * magnitude
        return ((span / step).rounded(.up) * step, step)
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

    private func seconds(_ value: Double) -> String { number(value, decimals: 3) + " s" }

    func render() -> String {
        var body = ""
        var y = top

        // Rows.
        let stateTop = y
        y += stateHeight + rowGap
        let phaseTop = y
        y += phaseHeight + rowGap
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
        while tick <= end + step / 1000 {
            let position = x(tick)
            body += "<line class=\"grid\" x1=\"\(f(position))\" y1=\"\(f(stateTop))\" x2=\"\(f(position))\" y2=\"\(f(axisY))\" stroke=\"#eeeeee\" stroke-width=\"1\"/>\n"
            body += "<line x1=\"\(f(position))\" y1=\"\(f(axisY))\" x2=\"\(f(position))\" y2=\"\(f(axisY + 5))\" stroke=\"#424242\"/>\n"
            body += "<text class=\"axis-label\" x=\"\(f(position))\" y=\"\(f(axisY + 17))\" text-anchor=\"middle\">\(number(tick, decimals: decimals)) s</text>\n"
            index += 1
            tick = Double(index) * step
        }
        body += "<line x1=\"\(f(left))\" y1=\"\(f(axisY))\" x2=\"\(f(left + plotWidth))\" y2=\"\(f(axisY))\" stroke=\"#424242\"/>\n"
        body += "<text x=\"\(f(left + plotWidth))\" y=\"\(f(axisY + 30))\" text-anchor=\"end\">time since launch (s)</text>\n"
        body += "</g>\n"

        // Row labels.
        body += "<g id=\"row-labels\" font-size=\"11\" fill=\"#212121\" text-anchor=\"end\">\n"
        body += label("state", left - 8, stateTop + stateHeight / 2)
        body += label("budgets", left - 8, phaseTop + phaseHeight / 2)
        body += label("background tasks", left - 8, taskTop + taskHeight / 2)
        for (lane, kind) in lanes.enumerated() {
            body += label(kind.rawValue, left - 8, eventsTop + Double(lane) * laneHeight + laneHeight / 2,
                          colour: TimelineStyle.colour(of: kind))
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
            if x1 - x0 > Double(interval.state.rawValue.count) * 6.5 + 8 {
                body += "<text x=\"\(f((x0 + x1) / 2))\" y=\"\(f(stateTop + stateHeight / 2 + 4))\" font-size=\"11\" text-anchor=\"middle\" fill=\"\(interval.state == .inactive ? "#212121" : "#ffffff")\" pointer-events=\"none\">\(interval.state.rawValue)</text>\n"
            }
        }
        body += slivers
        body += "</g>\n"

        // Budgeted phases.
        body += "<g id=\"budgets\">\n"
        for phase in analysis.phases {
            let x0 = x(phase.start)
            // At least 2 px, so that a phase of a few microseconds still shows.
            let x1 = max(x(phase.end), x0 + 2)
            var title = "\(phase.name) budget: \(seconds(phase.start)) – \(seconds(phase.end))"
            if let detail = phase.overrunDetail { title += " — overrun: \(detail)" }
            body += "<rect class=\"phase\" data-phase=\"\(TimelineRecorder.xmlEscape(phase.name))\" x=\"\(f(x0))\" y=\"\(f(phaseTop))\" width=\"\(f(x1 - x0))\" height=\"\(f(phaseHeight))\" fill=\"\(TimelineStyle.phaseColour)\" rx=\"2\"><title>\(TimelineRecorder.xmlEscape(title))</title></rect>\n"
            if let from = phase.overrunFrom {
                let r0 = min(max(x(from), x0), x1)
                body += "<rect class=\"overrun\" data-phase=\"\(TimelineRecorder.xmlEscape(phase.name))\" x=\"\(f(r0))\" y=\"\(f(phaseTop))\" width=\"\(f(max(x1 - r0, 2)))\" height=\"\(f(phaseHeight))\" fill=\"\(TimelineStyle.overrunColour)\" rx=\"2\"><title>\(TimelineRecorder.xmlEscape(title))</title></rect>\n"
            }
            // The name after the bar, or before it near the right edge.
            let fits = x1 + 3 + Double(phase.name.count) * 6 < Double(width) - 4
            let anchor = fits ? "start" : "end"
            body += "<text x=\"\(f(fits ? x1 + 3 : x0 - 3))\" y=\"\(f(phaseTop + phaseHeight / 2 + 4))\" font-size=\"10\" text-anchor=\"\(anchor)\" fill=\"#455a64\" pointer-events=\"none\">\(TimelineRecorder.xmlEscape(phase.name))</text>\n"
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
            if x1 - x0 > 40 {
                body += "<text x=\"\(f(x0 + 4))\" y=\"\(f(rowY + taskHeight / 2 + 4))\" font-size=\"10\" fill=\"#0d47a1\" pointer-events=\"none\">\(TimelineRecorder.xmlEscape(clip(task.label, to: Int((x1 - x0 - 8) / 6))))</text>\n"
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
        let (legend, legendHeight) = self.legend(top: legendTop)
        body += legend
        let height = Int((legendTop + legendHeight + 12).rounded(.up))

        var svg = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
        svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"\(width)\" height=\"\(height)\" viewBox=\"0 0 \(width) \(height)\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
        let span = analysis.lastTime
        svg += "<title>AppLifecycle timeline</title>\n"
        svg += "<desc>\(events.count) trace events over \(seconds(span))</desc>\n"
        svg += "<rect x=\"0\" y=\"0\" width=\"\(width)\" height=\"\(height)\" fill=\"#ffffff\"/>\n"
        svg += "<text x=\"12\" y=\"20\" font-size=\"14\" font-weight=\"bold\" fill=\"#212121\">AppLifecycle timeline</text>\n"
        svg += "<text x=\"\(width - 12)\" y=\"20\" font-size=\"11\" text-anchor=\"end\" fill=\"#616161\">\(events.count) events, \(seconds(span))</text>\n"
        svg += body
        svg += "</svg>\n"
        return svg
    }

    private func tickTitle(_ event: TraceEvent) -> String {
        var text = "#\(event.seq) \(seconds(event.time.secondsDouble)) \(event.kind) \(event.name)"
        if let observer = event.observer, !observer.isEmpty { text += " [\(observer)]" }
        if let detail = event.detail, !detail.isEmpty { text += " (\(detail))" }
        return text + " → \(event.state)"
    }

    private func label(_ text: String, _ x: Double, _ y: Double, colour: String? = nil) -> String {
        let fill = colour.map { " fill=\"\($0)\"" } ?? ""
        return "<text x=\"\(f(x))\" y=\"\(f(y + 4))\"\(fill)>\(TimelineRecorder.xmlEscape(text))</text>\n"
    }

    /// The legend, wrapped to the width; returns its markup and height.
    private func legend(top: Double) -> (String, Double) {
        enum Swatch { case box, bar, tick }
        var items: [(String, String, Swatch)] = ApplicationState.allCases.map { ($0.rawValue, TimelineStyle.colour(of: $0), .box) }
        items += [("budgeted phase", TimelineStyle.phaseColour, .bar), ("over budget", TimelineStyle.overrunColour, .bar),
                  ("background task", TimelineStyle.taskColour, .bar), ("expiration warning", TimelineStyle.expiringColour, .tick)]
        items += lanes.map { ($0.rawValue, TimelineStyle.colour(of: $0), .tick) }
        var out = "<g id=\"legend\" font-size=\"11\" fill=\"#212121\">\n"
        out += "<text x=\"12\" y=\"\(f(top + 12))\" font-weight=\"bold\">legend</text>\n"
        var x = left
        var y = top
        for (name, colour, swatch) in items {
            let itemWidth = 22 + Double(name.count) * 6.5 + 16
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
            }
            out += "<text x=\"\(f(x + 22))\" y=\"\(f(y + 12))\">\(TimelineRecorder.xmlEscape(name))</text>\n"
            x += itemWidth
        }
        out += "</g>\n"
        return (out, y - top + 18)
    }

    private func clip(_ text: String, to count: Int) -> String {
        text.count <= count ? text : String(text.prefix(max(count - 1, 0))) + "…"
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
