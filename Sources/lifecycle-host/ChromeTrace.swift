// A run's trace as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and chrome://tracing open.
import AppLifecycle

/// Renders the engine's events of one run in the Trace Event Format's JSON object form:
/// `{"traceEvents":[…],"displayTimeUnit":"ms","otherData":{…}}`.
///
/// Guarantees:
/// - **Tracks.** One process (pid 1, named `lifecycle-host`); thread 1 is `application state`, then one
///   thread per scene (`scene ID`, in the order the scenes first appear), then one per plugin: those the
///   events name (`plugin ID`, in the order they first appear), then the loaded plugins they never
///   name (an observer: notifications are traced once, not per observer), in load order. Each is named by a `thread_name`
///   metadata event (ph `M`) and kept in that order by a `thread_sort_index` one.
/// - **Slices** (ph `X`, `ts` and `dur` in microseconds since the first launch): the application's
///   states on thread 1, each scene's states on its thread (none while unattached), and every
///   delegate call on its plugin's thread, from its `delegate` event to the next event of the trace
///   (`TimelineAnalysis.CallbackSpan`: never longer than the call).
/// - **Instants** (ph `i`, thread scope `s: "t"`): actions (category `action`) and notifications
///   (`notification`) on thread 1, or a scene notification on its scene's thread; plugin failures and
///   refusals (`failure`: a crash, an exit, a kill at a budget's end, a protocol violation, a quota, a
///   refused handle) and watchdog overruns (`watchdog`) on the plugin's thread (an overrun naming no
///   plugin on thread 1).
/// - **One analysis.** States, scenes, actions, failures and calls come from `TimelineAnalysis`, the
///   timeline's own reading of the typed payloads; nothing is read from the events' words (their
///   detail is copied into `args.detail` for a person, never parsed).
/// - **Valid JSON.** Every string goes through `jsonQuoted` (quotes, backslashes and control
///   characters escaped); numbers are plain decimals. Every event has `name`, `ph`, `ts`, `pid` and
///   `tid`; an `X` has `dur`, an `i` has `s`.
enum ChromeTrace {
    /// The one process of the export.
    static let pid = 1
    /// The application state's thread.
    static let applicationThread = 1

    /// The JSON document for `events` (the engine's events of a run, in order); `plugins`: the ids of
    /// the plugins loaded at the end of the run, in load order.
    static func json(_ events: [TraceEvent], plugins: [String] = []) -> String {
        let finish = events.map { $0.time.secondsDouble }.max() ?? 0
        let analysis = TimelineAnalysis(events, finish: finish)

        // Tracks.
        var tracks: [(tid: Int, name: String)] = [(applicationThread, "application state")]
        var sceneThreads: [String: Int] = [:]
        for lane in analysis.sceneLanes {
            sceneThreads[lane.scene] = tracks.count + 1
            tracks.append((tracks.count + 1, "scene \(lane.scene)"))
        }
        // Scenes that only a notification names still get their thread.
        for event in events {
            guard case .inScene(let scene, .notificationDelivered) = event.payload, sceneThreads[scene] == nil else { continue }
            sceneThreads[scene] = tracks.count + 1
            tracks.append((tracks.count + 1, "scene \(scene)"))
        }
        var pluginThreads: [String: Int] = [:]
        func pluginThread(_ plugin: String) -> Int {
            if let tid = pluginThreads[plugin] { return tid }
            let tid = tracks.count + 1
            pluginThreads[plugin] = tid
            tracks.append((tid, "plugin \(plugin)"))
            return tid
        }
        // In the order the plugins first appear: calls, failures and overruns merged by sequence number.
        var firstSeen: [(seq: UInt64, plugin: String)] = analysis.callbacks.map { ($0.seq, $0.plugin) }
        firstSeen += analysis.failures.map { ($0.seq, $0.plugin) }
        for event in events {
            if case .watchdogOverrun(let report) = event.payload, !report.observer.isEmpty { firstSeen.append((event.seq, report.observer)) }
        }
        for entry in firstSeen.sorted(by: { $0.seq < $1.seq }) { _ = pluginThread(entry.plugin) }
        for plugin in plugins { _ = pluginThread(plugin) }

        var records: [Record] = []
        for interval in analysis.intervals {
            records.append(Record(ts: interval.start, order: 0, body: slice(interval.state.rawValue, category: "state", tid: applicationThread,
                                                                            start: interval.start, end: interval.end, args: [])))
        }
        for lane in analysis.sceneLanes {
            let tid = sceneThreads[lane.scene] ?? applicationThread
            for interval in lane.intervals {
                records.append(Record(ts: interval.start, order: 0, body: slice(interval.state.rawValue, category: "scene-state", tid: tid,
                                                                                start: interval.start, end: interval.end,
                                                                                args: [("scene", .text(lane.scene))])))
            }
        }
        for call in analysis.callbacks {
            var args: [(String, Argument)] = [("seq", .number(call.seq))]
            if let scene = call.scene { args.append(("scene", .text(scene))) }
            records.append(Record(ts: call.start, order: 1, body: slice(call.method, category: "delegate", tid: pluginThread(call.plugin),
                                                                        start: call.start, end: call.end, args: args)))
        }
        for action in analysis.actions {
            var args: [(String, Argument)] = [("seq", .number(action.seq))]
            if let scene = action.scene { args.append(("scene", .text(scene))) }
            records.append(Record(ts: action.time, order: 2, body: instant(action.name, category: "action", tid: applicationThread,
                                                                          at: action.time, args: args)))
        }
        for failure in analysis.failures {
            var args: [(String, Argument)] = [("seq", .number(failure.seq)), ("kind", .text(failure.kind.rawValue))]
            if let detail = failure.detail, !detail.isEmpty { args.append(("detail", .text(detail))) }
            records.append(Record(ts: failure.time, order: 2, body: instant(failure.cause, category: "failure", tid: pluginThread(failure.plugin),
                                                                           at: failure.time, args: args)))
        }
        for event in events {
            let time = event.time.secondsDouble
            switch event.payload {
            case .notificationDelivered(let name, _, _):
                records.append(Record(ts: time, order: 2, body: instant(name.rawValue, category: "notification", tid: applicationThread,
                                                                        at: time, args: [("seq", .number(event.seq))])))
            case .inScene(let scene, .notificationDelivered(let name, _, _)):
                records.append(Record(ts: time, order: 2, body: instant(name.rawValue, category: "notification",
                                                                        tid: sceneThreads[scene] ?? applicationThread, at: time,
                                                                        args: [("seq", .number(event.seq)), ("scene", .text(scene))])))
            case .watchdogOverrun(let report):
                let tid = report.observer.isEmpty ? applicationThread : pluginThread(report.observer)
                records.append(Record(ts: time, order: 2, body: instant("overran \(report.budgetName) budget", category: "watchdog", tid: tid,
                                                                        at: time, args: [("seq", .number(event.seq)),
                                                                                         ("detail", .text(report.description))])))
            default:
                continue
            }
        }
        // In time order; at one instant, slices before instants, each kind in the order made.
        let ordered = records.enumerated().sorted {
            ($0.element.ts, $0.element.order, $0.offset) < ($1.element.ts, $1.element.order, $1.offset)
        }

        var lines = [metadata("process_name", tid: 0, [("name", .text("lifecycle-host"))])]
        for (index, track) in tracks.enumerated() {
            lines.append(metadata("thread_name", tid: track.tid, [("name", .text(track.name))]))
            lines.append(metadata("thread_sort_index", tid: track.tid, [("sort_index", .number(UInt64(index)))]))
        }
        lines += ordered.map(\.element.body)
        return "{\"traceEvents\":[\n" + lines.joined(separator: ",\n") + "\n],\n\"displayTimeUnit\":\"ms\",\n"
            + "\"otherData\":{\"generator\":\(jsonQuoted("lifecycle-host \(HostVersion.version)")),\"events\":\(events.count)}}\n"
    }

    /// One event of the array, with what orders it.
    private struct Record {
        var ts: Double
        /// Slices (0: states, 1: calls) before instants (2) at one time.
        var order: Int
        var body: String
    }

    private enum Argument {
        case text(String)
        case number(UInt64)

        var json: String {
            switch self {
            case .text(let text): return jsonQuoted(text)
            case .number(let number): return String(number)
            }
        }
    }

    private static func arguments(_ args: [(String, Argument)]) -> String {
        "{" + args.map { "\(jsonQuoted($0.0)):\($0.1.json)" }.joined(separator: ",") + "}"
    }

    private static func slice(_ name: String, category: String, tid: Int, start: Double, end: Double, args: [(String, Argument)]) -> String {
        "{\"name\":\(jsonQuoted(name)),\"cat\":\(jsonQuoted(category)),\"ph\":\"X\",\"ts\":\(microseconds(start)),"
            + "\"dur\":\(microseconds(max(end - start, 0))),\"pid\":\(pid),\"tid\":\(tid),\"args\":\(arguments(args))}"
    }

    private static func instant(_ name: String, category: String, tid: Int, at time: Double, args: [(String, Argument)]) -> String {
        "{\"name\":\(jsonQuoted(name)),\"cat\":\(jsonQuoted(category)),\"ph\":\"i\",\"s\":\"t\",\"ts\":\(microseconds(time)),"
            + "\"pid\":\(pid),\"tid\":\(tid),\"args\":\(arguments(args))}"
    }

    private static func metadata(_ name: String, tid: Int, _ args: [(String, Argument)]) -> String {
        "{\"name\":\(jsonQuoted(name)),\"ph\":\"M\",\"ts\":0,\"pid\":\(pid),\"tid\":\(tid),\"args\":\(arguments(args))}"
    }

    /// `seconds` in microseconds with three decimals (nanoseconds): `1234.567`; 0 for anything not a
    /// finite number at or above 0.
    static func microseconds(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds > 0 else { return "0" }
        let nanoseconds = Int64(min(seconds * 1e9, 9.2e18).rounded())
        let fraction = String(nanoseconds % 1000)
        return "\(nanoseconds / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}
