import BenchHarness
import CBenchAnchors
import CLifecycleABI
@preconcurrency import Glibc

// The "isolation" group: what running a plugin in a process of its own costs a C user (Ardour's
// objection to sandboxing plugins is the context switch), through the calls a C program makes: the
// plugin loaded with lc_app_load_plugin_with_options(LC_LOAD_ISOLATED) into an lc_app, beside the same
// plugin loaded with lc_app_load_plugin into another, and beside the floors of the transport (C socket
// pairs to a forked child) measured in the same runs.
//
// - A delegate call's round trip through an action: lc_app_perform(LC_ACTION_OPEN_URL) in the active
//   state calls application_openURL_options and nothing else (no state change, no notification);
//   the host waits for its answer (a delegate call with an answer waits; void ones and notifications
//   do not: docs/host.md, "What waits"), and the action's end settles the isolated plugin. Timed
//   action by action: p50 and p99 of each run. The floors: one byte there and back over a
//   SOCK_SEQPACKET and over a SOCK_STREAM socket pair (the runner's link is a stream socket pair).
// - Notifications one way: lc_app_post_name of "com.bench.tick" on the loop thread, N times, then
//   waiting the way a C program can: post "com.bench.flush"; the plugin's observer of it posts
//   "com.bench.flushed" back with its counts ({"ticks", "answers"}); notifications reach a plugin in
//   order, so when the reply arrives (lc_app_run_for, in slices, until it does, at most 30 s) every
//   tick has run. The reply also proves that every tick and every openURL reached the plugin.
//   Floor: 40-byte records over a stream socket pair to a child, 64 KiB writes (anchor_process_stream).
//
// The runner is `lifecycle-plugin-runner` beside liblifecycle.so (this executable's build folder).
// "One CPU": this thread and the plugin's process pinned to the same CPU (the runner inherits the
// affinity of the thread that loads it), so every round trip costs two context switches; "two CPUs":
// the runner and the floors' children pinned to another CPU.
enum IsolationBenchmarks {
    static let group = "isolation"

    /// The measured plugin (ABI 1.0 exported delegate function; observers by interned name).
    static let pluginSource = """
        #define LC_DECLARE_DELEGATE_FUNCTIONS
        #include "lifecycle.h"

        static const lc_host_api_t *bench_host;
        static lc_plugin *bench_plugin;
        static lc_name flushed;
        static int64_t ticks, answers, resumes;

        #ifdef BENCH_SLOW_MICROSECONDS
        #include <unistd.h>
        #endif

        static void tick(const lc_notification_t *note, void *ctx) {
            (void)note, (void)ctx;
            ticks++;
        #ifdef BENCH_SLOW_MICROSECONDS
            usleep(BENCH_SLOW_MICROSECONDS);  // the slow plugin of the "slow isolated observer" row
        #endif
        }

        // The reply to a flush: every notification sent before it has run.
        static void flush(const lc_notification_t *note, void *ctx) {
            (void)note, (void)ctx;
            lc_dict *info = bench_host->dict->create();
            bench_host->dict->set_int(info, "ticks", ticks);
            bench_host->dict->set_int(info, "answers", answers);
            bench_host->dict->set_int(info, "resumes", resumes);
            bench_host->post_name(bench_plugin, flushed, NULL, info);
            bench_host->dict->destroy(info);
        }

        // The first callback after a resume from suspension (the "resume" row).
        static void entering_foreground(const lc_notification_t *note, void *ctx) {
            (void)note, (void)ctx;
            resumes++;
        }

        bool application_openURL_options(lc_app *app, const char *url, const lc_dict *options) {
            (void)app, (void)url, (void)options;
            answers++;
            return true;
        }

        static lc_status bench_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
            (void)state;
            bench_host = host;
            bench_plugin = plugin;
            lc_name tick_name, flush_name;
            lc_status status;
            if ((status = host->name_intern(plugin, "com.bench.tick", &tick_name)) != LC_OK) return status;
            if ((status = host->name_intern(plugin, "com.bench.flush", &flush_name)) != LC_OK) return status;
            if ((status = host->name_intern(plugin, "com.bench.flushed", &flushed)) != LC_OK) return status;
            if ((status = host->observe_name(plugin, tick_name, NULL, tick, NULL, NULL)) != LC_OK) return status;
            if ((status = host->observe(plugin, "willEnterForeground", NULL, entering_foreground, NULL, NULL)) != LC_OK) return status;
            return host->observe_name(plugin, flush_name, NULL, flush, NULL, NULL);
        }

        static const lc_plugin_descriptor_t descriptor = {
            .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
            .abi_minor = LC_ABI_VERSION_MINOR, .id = "com.bench.isolated", .version = "1", .description = "isolation bench",
            .init = bench_init,
        };

        LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }

        """

    static func run(_ settings: Settings) -> [Row] {
        let runner = executableFolder() + "/lifecycle-plugin-runner"
        guard access(runner, X_OK) == 0 else {
            warn("isolation: no plugin runner at \(runner): liblifecycle.so looks for lifecycle-plugin-runner beside itself (build the bench package: swift build -c release --package-path Benchmarks)")
            return []
        }
        if let other = getenv("LC_PLUGIN_RUNNER") {
            warn("isolation: LC_PLUGIN_RUNNER is set (\(String(cString: other))): that runner is measured, not \(runner)")
        }
        guard let folder = makeTemporaryFolder("lc-bench-isolation") else {
            warn("isolation: cannot make a temporary folder")
            return []
        }
        defer { removeFolder(folder) }
        let source = folder + "/isolated.c"
        let image = folder + "/isolated.so"
        guard writeText(source, pluginSource), buildPlugin(source: source, image: image) else {
            warn("isolation: cc could not build the measured plugin")
            return []
        }
        let first = anchor_ring_allowed_cpu(0)
        let second = anchor_ring_allowed_cpu(1)
        var rows: [Row] = []
        let saved = anchor_ring_affinity_save()
        defer { anchor_ring_affinity_restore(saved) }
        for (label, childCPU) in [("one CPU", first), ("two CPUs", second)] where childCPU >= 0 {
            rows += measure(settings, image: image, label: label, hostCPU: first, childCPU: childCPU)
        }
        rows += resume(settings, image: image, cpu: first)
        let slowSource = folder + "/slow.c", slowImage = folder + "/slow.so"
        if writeText(slowSource, "#define BENCH_SLOW_MICROSECONDS 1000\n" + pluginSource), buildPlugin(source: slowSource, image: slowImage) {
            rows += slow(settings, image: slowImage, hostCPU: first, childCPU: second >= 0 ? second : first)
        } else {
            warn("isolation: cc could not build the slow plugin")
        }
        return rows
    }

    /// A slow isolated observer (1 ms a notification) fed a steady stream twenty times faster than it
    /// can take (20 posts with a 4 KiB userInfo, then 100 µs of `lc_app_run_for`, for 3 s): the longest
    /// `lc_app_post_name` the loop made, beside the same observer in the host's process; what the
    /// plugin ran of what was posted (the rest coalesced), and the `plugin-backlog` events the trace got.
    static func slow(_ settings: Settings, image: String, hostCPU: Int32, childCPU: Int32) -> [Row] {
        // The plugin's process on the other CPU (its work never preempts the loop's thread), as a
        // host with cores to spare runs it.
        guard let (isolated, inProcess) = sessions(image: image, hostCPU: hostCPU, childCPU: childCPU) else { return [] }
        defer {
            isolated.close()
            inProcess.close()
        }
        final class Events { var behind = 0, caughtUp = 0 }
        let events = Events()
        _ = lc_app_set_trace(isolated.app, { event, context in
            guard let event, let context, String(cString: event.pointee.kind) == "plugin-backlog" else { return }
            let events = Unmanaged<Events>.fromOpaque(context).takeUnretainedValue()
            if String(cString: event.pointee.name) == "behind" { events.behind += 1 } else { events.caughtUp += 1 }
        }, Unmanaged.passUnretained(events).toOpaque())
        defer { _ = lc_app_set_trace(isolated.app, nil, nil) }

        let info = lc_dict_create()
        defer { lc_dict_destroy(info) }
        _ = lc_dict_set_string(info, "pad", String(repeating: "x", count: 4096))
        let seconds = settings.quick ? 0.5 : 3.0
        let end = nowNanoseconds() + UInt64(seconds * 1e9)
        var longest: UInt64 = 0
        var posts: [Double] = []
        var sent: Int64 = 0
        while nowNanoseconds() < end {
            _ = lc_app_run_for(isolated.app, 0.0001)
            for _ in 0..<20 {
                let start = nowNanoseconds()
                if lc_app_post_name(isolated.app, isolated.tick, nil, info) != lc_status(LC_OK) { isolated.failures += 1 }
                let took = nowNanoseconds() - start
                longest = max(longest, took)
                posts.append(Double(took) / 1000)
                sent += 1
            }
        }
        let before = isolated.ticksSent
        guard isolated.flush() else { return [] }  // waits until it has caught up: the held ones are sent
        let ran = isolated.ticks - before
        // The same observer in the host's process: each post runs it.
        var local: [Double] = []
        for _ in 0..<20 {
            let start = nowNanoseconds()
            _ = lc_app_post_name(inProcess.app, inProcess.tick, nil, nil)
            local.append(Double(nowNanoseconds() - start) / 1000)
        }
        let longestMicroseconds = Double(longest) / 1000
        let figure = Figure(median: longestMicroseconds, min: percentile(posts, 50), max: longestMicroseconds, unit: "µs",
                            note: "the longest of \(sent) posts with a 4 KiB userInfo (min: the median post), 20 per 100 µs of lc_app_run_for, for \(Figure.format(seconds)) s")
        let coalesced = sent - ran
        return [
            Row(group: group,
                name: "slow isolated observer (1 ms a notification, its own process on the other CPU): the longest lc_app_post_name of a steady stream it cannot keep up with (C ABI, -c release)",
                ours: figure, anchors: [("the same observer in the host's process: each post runs it", summarize(local, unit: "µs"))],
                target: "never blocks the loop: the longest post shorter than the plugin's 1 ms a notification (a post that waited for it would take that); what it cannot take coalesced, with a trace line",
                met: settings.quick ? nil : longestMicroseconds < 1000 && events.behind >= 1 && events.caughtUp >= 1 && coalesced > 0,
                ratios: "\(sent) posted, \(ran) run by the plugin, \(coalesced) coalesced (the latest of each name kept); "
                    + "plugin-backlog events: \(events.behind) behind, \(events.caughtUp) caught up"),
        ]
    }

    /// The plugin isolated, its process on `childCPU` (the runner inherits the affinity of the thread
    /// that starts it: lc_app_load_plugin_with_options), and in this process; this thread left on
    /// `hostCPU`. nil when either set-up failed (it warned).
    static func sessions(image: String, hostCPU: Int32, childCPU: Int32) -> (isolated: Session, inProcess: Session)? {
        _ = anchor_ring_pin_self(childCPU)
        let isolatedSession = Session(image: image, isolated: true)
        _ = anchor_ring_pin_self(hostCPU)
        guard let isolated = isolatedSession else { return nil }
        guard let inProcess = Session(image: image, isolated: false) else {
            isolated.close()
            return nil
        }
        return (isolated, inProcess)
    }

    /// The rows of one placement: the plugin's process (and the floors' children) on `childCPU`, this
    /// thread on `hostCPU`.
    static func measure(_ settings: Settings, image: String, label: String, hostCPU: Int32, childCPU: Int32) -> [Row] {
        guard let (isolated, inProcess) = sessions(image: image, hostCPU: hostCPU, childCPU: childCPU) else { return [] }
        defer {
            isolated.close()
            inProcess.close()
        }
        let runs = settings.quick ? 1 : settings.runs
        var failed = false

        // One way: `count` notifications posted on the loop thread, then the flush's reply.
        let count = settings.quick ? 20_000 : 400_000
        var oneWay: [Double] = []
        var local: [Double] = []
        var stream: [Double] = []
        for _ in 0..<(runs + (settings.quick ? 0 : 1)) {
            guard let isolatedNs = isolated.post(count), let localNs = inProcess.post(count) else {
                failed = true
                break
            }
            oneWay.append(isolatedNs)
            local.append(localNs)
            stream.append(Double(anchor_process_stream(childCPU, Int32(count), 40, 64 << 10)) / Double(count))
        }
        if !settings.quick && oneWay.count > 1 {
            oneWay.removeFirst()
            local.removeFirst()
            stream.removeFirst()
        }

        // Memory under a sustained stream: the heap in use (this process, mallinfo2) sampled every
        // 65,536 posts of a stream of 4,000,000 (400,000 with --quick), its peak above the heap before.
        var streamPeak = 0.0
        if !failed {
            let total = settings.quick ? 400_000 : 4_000_000
            let before = Double(anchor_rings_heap_in_use())
            var peak = before
            var sent = 0
            while sent < total {
                guard isolated.post(65_536, flush: false) != nil else { failed = true; break }
                sent += 65_536
                peak = max(peak, Double(anchor_rings_heap_in_use()))
            }
            if !isolated.flush() { failed = true }
            streamPeak = (peak - before) / 1_048_576
        }

        // Round trips: `calls` actions a run, each timed; each run's p50 and p99, the median run
        // reported (min–max over runs), as the other groups do. The floors the same way.
        let calls = settings.quick ? 2_000 : 20_000
        var p50s: [Double] = []
        var p99s: [Double] = []
        var localP50s: [Double] = []
        var localP99s: [Double] = []
        var floors: [Int32: (p50: [Double], p99: [Double])] = [:]
        let socketTypes = [Int32(SOCK_SEQPACKET.rawValue), Int32(SOCK_STREAM.rawValue)]
        var floor = [Double](repeating: 0, count: calls)
        for _ in 0..<runs where !failed {
            let samples = isolated.roundTrips(calls)
            let localSamples = inProcess.roundTrips(calls)
            p50s.append(percentile(samples, 50) / 1000)
            p99s.append(percentile(samples, 99) / 1000)
            localP50s.append(percentile(localSamples, 50) / 1000)
            localP99s.append(percentile(localSamples, 99) / 1000)
            for type in socketTypes {
                let status = floor.withUnsafeMutableBufferPointer {
                    anchor_process_round_trips_type(childCPU, Int32(calls), $0.baseAddress, type)
                }
                if status != 0 { warn("isolation: the C socket-pair floor (type \(type)) failed") }
                floors[type, default: ([], [])].p50.append(percentile(floor, 50) / 1000)
                floors[type, default: ([], [])].p99.append(percentile(floor, 99) / 1000)
            }
        }
        // Every tick and every openURL reached the plugin, in both processes.
        for session in [isolated, inProcess] where !failed {
            guard session.flush() else {
                failed = true
                break
            }
            if session.ticks != session.ticksSent || session.answers != session.actionsPerformed {
                warn("isolation: the \(session.isolated ? "isolated" : "in-process") plugin ran \(session.ticks) of \(session.ticksSent) notifications and \(session.answers) of \(session.actionsPerformed) openURL calls")
            }
        }
        if isolated.failures + inProcess.failures > 0 {
            warn("isolation: \(isolated.failures + inProcess.failures) lc_app_perform(OPEN_URL) calls failed")
        }
        guard !failed, !oneWay.isEmpty, !p50s.isEmpty else { return [] }

        let oneWayFigure = summarize(oneWay, unit: "ns")
        let rate = 1e9 / oneWayFigure.median
        let localFigure = summarize(local, unit: "ns")
        let streamFigure = summarize(stream, unit: "ns")
        let p50 = summarize(p50s, unit: "µs")
        let p99 = summarize(p99s, unit: "µs")
        let localP50 = summarize(localP50s, unit: "µs")
        let localP99 = summarize(localP99s, unit: "µs")
        let seqpacket = socketTypes[0], streamType = socketTypes[1]
        let seqP50 = summarize(floors[seqpacket]!.p50, unit: "µs")
        let seqP99 = summarize(floors[seqpacket]!.p99, unit: "µs")
        let streamP50 = summarize(floors[streamType]!.p50, unit: "µs")
        let streamP99 = summarize(floors[streamType]!.p99, unit: "µs")
        let seqLabel = "C: one byte there and back over a SOCK_SEQPACKET socket pair to a child process"
        let streamLabel = "C: one byte there and back over a SOCK_STREAM socket pair to a child process"
        let oneCPU = label == "one CPU"

        return [
            Row(group: group, name: "isolated observer: notifications one way (lc_app_post_name on the loop thread, plugin in its own process, \(label), C ABI, -c release)",
                ours: Figure(median: rate / 1e6, min: 1e3 / oneWay.max()!, max: 1e3 / oneWay.min()!, unit: "M notifications/s",
                             note: "\(Figure.format(oneWayFigure.median)) ns each, \(count) posts then a flush's reply"),
                anchors: [("the same observer in the host's process (lc_app_load_plugin)", localFigure),
                          ("C: 40-byte records over a SOCK_STREAM socket pair to a child process, 64 KiB writes", streamFigure)],
                target: "≥ 10 M notifications/s on one CPU", met: settings.quick || !oneCPU ? nil : rate >= 10e6,
                ratios: "\(ratio(oneWayFigure.median, localFigure.median)) in-process, \(ratio(oneWayFigure.median, streamFigure.median)) the C stream"),
            Row(group: group, name: "host memory under a sustained one-way stream to an isolated observer (\(settings.quick ? "400000" : "4000000") lc_app_post_name, \(label), C ABI, -c release)",
                ours: .single(streamPeak, "MiB", note: "peak heap in use above the heap before (mallinfo2, sampled every 65,536 posts)"),
                anchors: [], target: "≤ 16 MiB above idle, whatever the stream's length", met: settings.quick ? nil : streamPeak <= 16,
                ratios: "\(Figure.format(streamPeak * 1_048_576 / Double(settings.quick ? 400_000 : 4_000_000))) bytes a notification at the peak"),
            Row(group: group, name: "isolated delegate through an action: lc_app_perform(OPEN_URL) → application_openURL_options round trip p50 (\(label), C ABI, -c release)",
                ours: p50, anchors: [("the same action, the plugin in the host's process (lc_app_load_plugin)", localP50),
                                     (seqLabel, seqP50), (streamLabel, streamP50)],
                // Issue 19: within 1.3× the SOCK_SEQPACKET ping-pong (the round trip's floor), on one CPU.
                target: oneCPU ? "≤ 1.3× the SOCK_SEQPACKET floor (p50, one CPU)" : "information",
                met: oneCPU && !settings.quick ? p50.median <= 1.3 * seqP50.median : nil,
                ratios: "\(ratio(p50.median, seqP50.median)) the SOCK_SEQPACKET floor, \(ratio(p50.median, streamP50.median)) the SOCK_STREAM floor, \(ratio(p50.median, localP50.median)) in-process"),
            Row(group: group, name: "isolated delegate through an action: lc_app_perform(OPEN_URL) → application_openURL_options round trip p99 (\(label), C ABI, -c release)",
                ours: p99, anchors: [("the same action, the plugin in the host's process (lc_app_load_plugin)", localP99),
                                     (seqLabel, seqP99), (streamLabel, streamP99)],
                target: "information", met: nil,
                ratios: "\(ratio(p99.median, seqP99.median)) the SOCK_SEQPACKET floor, \(ratio(p99.median, streamP99.median)) the SOCK_STREAM floor, \(ratio(p99.median, localP99.median)) in-process"),
        ]
    }

    /// Issue 23: the resume of a suspended application whose isolated plugin is frozen, beside the same
    /// resume unfrozen (`LC_FREEZER_NONE`) and in-process. Each sample: lc_app_perform(HOME) (active →
    /// background → suspended: no background task; the plugin is frozen there), untimed, then
    /// lc_app_perform(FOREGROUND) timed: the resume, the plugin thawed first, until the action's end has
    /// waited for the plugin's willEnterForeground observer to run. The plugin's process on this CPU.
    static func resume(_ settings: Settings, image: String, cpu: Int32) -> [Row] {
        _ = anchor_ring_pin_self(cpu)
        let cycles = settings.quick ? 20 : 200
        let runs = settings.quick ? 1 : settings.runs
        var figures: [[Double]] = [[], [], [], []]
        var method = "?"
        for (index, freezer) in [(0, LC_FREEZER_AUTO), (1, LC_FREEZER_NONE), (2, -1), (3, LC_FREEZER_SIGNAL)] {
            guard let session = Session(image: image, isolated: freezer >= 0, freezer: lc_freezer(max(freezer, 0))) else { return [] }
            defer { session.close() }
            for _ in 0..<runs {
                guard let samples = session.resumes(cycles) else { return [] }
                figures[index].append(percentile(samples, 50) / 1000)
            }
            if index == 0, let text = session.freezerTraced { method = text }
            if session.resumed != session.resumesPerformed {
                warn("isolation: the plugin saw \(session.resumed) of \(session.resumesPerformed) resumes")
            }
        }
        let frozen = summarize(figures[0], unit: "µs"), unfrozen = summarize(figures[1], unit: "µs"), local = summarize(figures[2], unit: "µs")
        let signalled = summarize(figures[3], unit: "µs")
        return [
            Row(group: group, name: "isolated plugin frozen while suspended: resume, lc_app_perform(FOREGROUND) until its willEnterForeground observer has run, p50 (LC_FREEZER_AUTO: \(method); one CPU, C ABI, -c release)",
                ours: frozen, anchors: [("the same resume unfrozen (LC_FREEZER_NONE)", unfrozen),
                                        ("the same resume frozen with signals (LC_FREEZER_SIGNAL: SIGSTOP, SIGCONT)", signalled),
                                        ("the same resume, the plugin in the host's process", local)],
                target: "information (issue 23: reported beside an unfrozen resume)", met: nil,
                ratios: "\(ratio(frozen.median, unfrozen.median)) unfrozen, \(ratio(frozen.median, local.median)) in-process"),
        ]
    }

    static func lastError() -> String { lc_last_error_message().map { String(cString: $0) } ?? "?" }

    /// One application (launched, active) with the measured plugin, in-process or isolated, and an
    /// observer of the plugin's flush replies.
    final class Session {
        let app: OpaquePointer
        let isolated: Bool
        let tick: lc_name
        let flushName: lc_name
        let url = strdup("app://bench/item/7")!
        /// What this side sent (from the plugin's counts at the start), and what the plugin says it ran
        /// (its last flush reply).
        var ticksSent: Int64 = 0
        var actionsPerformed: Int64 = 0
        var failures = 0
        var ticks: Int64 = -1
        var answers: Int64 = -1
        var replied = false
        var running = false
        /// Resumes performed, and the plugin's count of them (the "resume" row).
        var resumesPerformed: Int64 = 0
        var resumed: Int64 = 0
        /// The trace's word on the freezer (its `plugin-freezer` event), once one came.
        var freezerTraced: String?

        init?(image: String, isolated: Bool, freezer: lc_freezer = lc_freezer(LC_FREEZER_AUTO)) {
            self.isolated = isolated
            var made: OpaquePointer?
            guard lc_app_create(nil, &made) == lc_status(LC_OK), let app = made else {
                warn("isolation: lc_app_create failed: \(IsolationBenchmarks.lastError())")
                return nil
            }
            self.app = app
            var tick: lc_name = 0
            var flushID: lc_name = 0
            var flushed: lc_name = 0
            var status = lc_name_intern("com.bench.tick", &tick)
            if status == lc_status(LC_OK) { status = lc_name_intern("com.bench.flush", &flushID) }
            if status == lc_status(LC_OK) { status = lc_name_intern("com.bench.flushed", &flushed) }
            self.tick = tick
            self.flushName = flushID
            if status == lc_status(LC_OK) {
                var options = lc_load_options_t()
                options.struct_size = UInt32(MemoryLayout<lc_load_options_t>.size)
                options.flags = lc_load_flags(LC_LOAD_ISOLATED)
                options.freezer = freezer
                status = isolated ? lc_app_load_plugin_with_options(app, image, &options, nil) : lc_app_load_plugin(app, image, nil)
            }
            if status == lc_status(LC_OK) {
                let context = Unmanaged.passUnretained(self).toOpaque()
                status = lc_app_observe_name(app, flushed, nil, { note, context in
                    let session = Unmanaged<Session>.fromOpaque(context!).takeUnretainedValue()
                    if let info = note?.pointee.user_info {
                        var value: Int64 = 0
                        if lc_dict_get_int(info, "ticks", &value) == lc_status(LC_OK) { session.ticks = value }
                        if lc_dict_get_int(info, "answers", &value) == lc_status(LC_OK) { session.answers = value }
                        if lc_dict_get_int(info, "resumes", &value) == lc_status(LC_OK) { session.resumed = value }
                    }
                    session.replied = true
                    if session.running { _ = lc_app_stop(session.app) }
                }, context, nil)
            }
            if status == lc_status(LC_OK) { status = lc_app_perform_simple(app, lc_action_kind(LC_ACTION_LAUNCH)) }
            guard status == lc_status(LC_OK), lc_app_state(app) == lc_state(LC_STATE_ACTIVE) else {
                warn("isolation: \(isolated ? "isolated" : "in-process") set-up failed (\(String(cString: lc_status_name(status)))): \(IsolationBenchmarks.lastError())")
                lc_app_destroy(app)
                free(url)
                return nil
            }
            // The plugin's counts so far: an image loaded in this process before (the same path, kept
            // mapped) keeps its static counters.
            guard self.flush() else {
                lc_app_destroy(app)
                free(url)
                return nil
            }
            ticksSent = ticks
            actionsPerformed = answers
            resumesPerformed = resumed
        }

        /// Each resume's nanoseconds: `count` times lc_app_perform(HOME) (the application suspends:
        /// no background task), then lc_app_perform(FOREGROUND) timed. The trace is watched meanwhile
        /// for the freezer's word. nil (with a warning) when an action fails or the plugin's reply does
        /// not come.
        func resumes(_ count: Int) -> [Double]? {
            let context = Unmanaged.passUnretained(self).toOpaque()
            lc_app_set_trace(app, { event, context in
                guard let event, let kind = event.pointee.kind, String(cString: kind) == "plugin-freezer" else { return }
                let session = Unmanaged<Session>.fromOpaque(context!).takeUnretainedValue()
                let words = event.pointee.detail.map { String(cString: $0) } ?? ""
                // "… frozen with cgroup v2 (…), and thawed …": the freezer's name, for the row's label.
                if let with = words.range(of: "frozen with "), let end = words.range(of: " (", range: with.upperBound..<words.endIndex) {
                    session.freezerTraced = String(words[with.upperBound..<end.lowerBound])
                } else {
                    session.freezerTraced = String(cString: event.pointee.name)
                }
            }, context)
            defer { lc_app_set_trace(app, nil, nil) }
            var samples = [Double](repeating: 0, count: count)
            for index in 0..<count {
                guard lc_app_perform_simple(app, lc_action_kind(LC_ACTION_HOME)) == lc_status(LC_OK),
                      lc_app_state(app) == lc_state(LC_STATE_SUSPENDED)
                else {
                    warn("isolation: HOME did not suspend the application: \(IsolationBenchmarks.lastError())")
                    return nil
                }
                let start = nowNanoseconds()
                let status = lc_app_perform_simple(app, lc_action_kind(LC_ACTION_FOREGROUND))
                samples[index] = Double(nowNanoseconds() - start)
                guard status == lc_status(LC_OK) else {
                    warn("isolation: FOREGROUND failed: \(IsolationBenchmarks.lastError())")
                    return nil
                }
            }
            resumesPerformed += Int64(count)
            return flush() ? samples : nil
        }

        /// Posts the flush and runs the loop (slices of 50 ms, at most 30 s) until the plugin's reply
        /// arrives; false (with a warning) when it does not.
        func flush() -> Bool {
            replied = false
            guard lc_app_post_name(app, flushName, nil, nil) == lc_status(LC_OK) else {
                warn("isolation: lc_app_post_name failed: \(IsolationBenchmarks.lastError())")
                return false
            }
            let deadline = nowNanoseconds() + 30_000_000_000
            while !replied && nowNanoseconds() < deadline {
                running = true
                let status = lc_app_run_for(app, 0.05)
                running = false
                if status != lc_status(LC_OK) {
                    warn("isolation: lc_app_run_for failed: \(IsolationBenchmarks.lastError())")
                    return false
                }
            }
            if !replied { warn("isolation: no reply from the \(isolated ? "isolated" : "in-process") plugin within 30 s") }
            return replied
        }

        /// Nanoseconds a notification: `count` posts on the loop thread, until the plugin has run them all.
        func post(_ count: Int, flush flushing: Bool = true) -> Double? {
            let start = nowNanoseconds()
            for _ in 0..<count where lc_app_post_name(app, tick, nil, nil) != lc_status(LC_OK) { failures += 1 }
            if flushing { guard flush() else { return nil } }
            let elapsed = nowNanoseconds() - start
            ticksSent += Int64(count)
            return Double(elapsed) / Double(count)
        }

        /// Each action's nanoseconds: `count` lc_app_perform(OPEN_URL).
        func roundTrips(_ count: Int) -> [Double] {
            var action = lc_action_t()
            action.struct_size = UInt32(MemoryLayout<lc_action_t>.size)
            action.kind = lc_action_kind(LC_ACTION_OPEN_URL)
            action.url = UnsafePointer(url)
            var samples = [Double](repeating: 0, count: count)
            for index in 0..<count {
                let start = nowNanoseconds()
                let status = lc_app_perform(app, &action)
                samples[index] = Double(nowNanoseconds() - start)
                if status != lc_status(LC_OK) { failures += 1 }
            }
            actionsPerformed += Int64(count)
            return samples
        }

        func close() {
            lc_app_destroy(app)
            free(url)
        }
    }
}
