// Builds the timeline's state bands, budgeted phases and task lanes from typed trace events (and,
// in TimelineMarks.swift, its actions, plugin failures and delegate calls).
import AppLifecycle

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

    /// A scene's band: `state` from `start` to `end` (seconds); none while unattached.
    struct SceneInterval: Equatable {
        var state: SceneState
        var start: Double
        var end: Double
    }

    /// One lane per scene, in the order the scenes first appear in the trace.
    struct SceneLane: Equatable {
        var scene: String
        var intervals: [SceneInterval] = []
    }

    var intervals: [StateInterval] = []
    var sceneLanes: [SceneLane] = []
    var phases: [BudgetPhase] = []
    var tasks: [TaskBar] = []
    /// The actions, the plugin failures and the delegate calls (`TimelineMarks.swift`).
    var actions: [ActionMark] = []
    var failures: [FailureMark] = []
    var callbacks: [CallbackSpan] = []
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
        actions = Self.actions(in: events)
        failures = Self.failures(in: events)
        callbacks = Self.callbacks(in: events)

        // States.
        var current = StateInterval(state: first.state, start: first.time.secondsDouble, end: 0)
        for event in events.dropFirst() where event.state != current.state {
            current.end = event.time.secondsDouble
            intervals.append(current)
            current = StateInterval(state: event.state, start: event.time.secondsDouble, end: 0)
        }
        current.end = finish
        intervals.append(current)

        // Scenes: read from the typed scene-state changes.
        var attached: [String: (state: SceneState, since: Double)] = [:]
        for event in events {
            guard case .sceneStateChanged(let scene, _, let to, _) = event.payload else { continue }
            let time = event.time.secondsDouble
            var lane = sceneLanes.firstIndex { $0.scene == scene }
            if lane == nil {
                sceneLanes.append(SceneLane(scene: scene))
                lane = sceneLanes.count - 1
            }
            if let current = attached[scene] {
                sceneLanes[lane!].intervals.append(SceneInterval(state: current.state, start: current.since, end: time))
            }
            attached[scene] = to == .unattached ? nil : (to, time)
        }
        for (index, lane) in sceneLanes.enumerated() {
            if let current = attached[lane.scene] {
                sceneLanes[index].intervals.append(SceneInterval(state: current.state, start: current.since, end: finish))
            }
        }

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
