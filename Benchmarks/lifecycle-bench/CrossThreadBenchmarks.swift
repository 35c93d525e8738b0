import BenchHarness
import CBenchAnchors
import CBenchPeers
import CLifecycleABI
@preconcurrency import Glibc
import Synchronization

// The cross-thread group, C ABI: work handed from other threads to the main loop of an lc_app, through
// liblifecycle.so and include/lifecycle.h only, as a C program would hand it. The lc_app is made here
// (lc_app_create, so this thread is its main thread) and its loop runs here in lc_app_run_for; the
// producers are plain pthreads. Beside it, measured in alternation run by run in this process:
//
// - the C anchors: one SPSC ring per producer + one eventfd (anchor_rings_throughput: no lock shared by
//   the producers, the fair anchor for several of them), the old shared ring whose producers are
//   serialised by one mutex (anchor_ring_throughput, 4 producers only: with one it is the same ring),
//   and the C ring + eventfd + epoll for latency (anchor_ring_latency);
// - the peers a C developer would pick: libuv (uv_async_send) and sd-event (an eventfd io source), each
//   with a mutex-protected queue that the loop swaps out whole (CBenchPeers).
//
// Our path, for both kinds of work: the producer's call takes the loop's one queue lock (shared by all
// threads: a spin, then a park), appends a four-word message to a chunked FIFO and writes the loop's
// eventfd only when the loop was waiting; the loop takes the whole queue at once and runs each message.
// lc_app_post_name's message names an interned name; lc_app_perform_async's holds fn and ctx in place
// (and, for a plugin, a reference to its owner, made once): neither allocates. The loop runs fn marked
// for the hang watchdog. A producer refused by the queue's bound (LC_ERR_QUEUE_FULL: 65,536 of its messages
// waiting, or 1,048,576 in all) retries after sched_yield, as the header tells a C caller to.
//
// Instructions a call (callgrind, BenchHarness/Callgrind.swift), in a normal (not --quick) run: this
// group re-runs this executable under callgrind with `--quick --filter cross-thread`, which runs one
// producer thread making 10,000 and then 110,000 calls of each function, each run between two marks;
// a call's count is the difference over 100,000 — the producer's side and the loop's together (under
// valgrind the two threads take turns, so a lock that would spin counts its spins).
//
// The Swift API's rows of the group (center.post, DispatchQueue.main, RunLoop.main.perform) come from
// lifecycle-bench-swift (its CrossThreadBenchmarks.swift).
enum CrossThreadBenchmarks {
    static let group = "cross-thread"

    static func run(_ settings: Settings) -> [Row] {
        // A child started to profile one case alone (see `ProfileRole`); other groups' roles are not ours.
        if let role = getenv(benchChildVariable).map({ String(cString: $0) }), role.hasPrefix(ProfileRole.prefix) {
            ProfileRole.run(role)
        }
        switch Callgrind.mode {
        case .workload:
            workload()
            return []
        case .report: return []  // the counts alone are the posting group's
        case .measure: break
        }
        let instructions = settings.quick ? nil : instructionCounts()
        var rows: [Row] = []
        rows.append(postThroughputRow(settings, producers: 1, instructions: instructions?["post"]))
        rows.append(postThroughputRow(settings, producers: 4, instructions: nil))
        rows += latencyRows(settings, sameCPU: true)
        rows += latencyRows(settings, sameCPU: false)
        rows.append(performThroughputRow(settings, producers: 1, instructions: instructions?["perform"]))
        rows.append(performThroughputRow(settings, producers: 4, instructions: nil))
        rows.append(floodMemoryRow(settings))
        return rows
    }

    // MARK: Instructions a call (callgrind)

    static let configurations: [Callgrind.Configuration] = [
        .init("empty", 0), .init("post-base", 0), .init("post", 100_000), .init("perform-base", 0), .init("perform", 100_000),
    ]

    /// The child's side: each path with one producer, 10,000 calls (the base: set-up, threads, the
    /// loop's start and stop) and 110,000.
    static func workload() {
        guard let post = ABIThroughput(.postName), let perform = ABIThroughput(.performAsync) else { exit(70) }
        Callgrind.workload(configurations, mark: anchor_post_callgrind_mark) { index in
            switch configurations[index].key {
            case "post-base": _ = post.run(producers: 1, perThread: 10_000)
            case "post": _ = post.run(producers: 1, perThread: 110_000)
            case "perform-base": _ = perform.run(producers: 1, perThread: 10_000)
            case "perform": _ = perform.run(producers: 1, perThread: 110_000)
            default: break
            }
        }
    }

    /// Instructions a call by path ("post", "perform"), or nil without valgrind.
    static func instructionCounts() -> [String: Double]? {
        guard let counts = Callgrind.count(configurations, arguments: ["--quick", "--filter", group], libraries: ["liblifecycle.so"],
                                           label: group) else { return nil }
        var result: [String: Double] = [:]
        result["post"] = counts.perOperation("post", minus: "post-base")
        result["perform"] = counts.perOperation("perform", minus: "perform-base")
        return result
    }

    // MARK: The application and its loop

    /// An lc_app pointer handed to producer threads (lc_app_post_name and lc_app_perform_async are
    /// [thread-safe]).
    struct SendableApp: @unchecked Sendable {
        let app: OpaquePointer
    }

    /// A launched lc_app whose main thread is the calling thread; nil when the library refuses.
    static func makeApp() -> OpaquePointer? {
        var app: OpaquePointer?
        guard lc_app_create(nil, &app) == lc_status(LC_OK), let app else {
            warn("cross-thread: lc_app_create failed: \(String(cString: lc_last_error_message()))")
            return nil
        }
        guard lc_app_perform_simple(app, lc_action_kind(LC_ACTION_LAUNCH)) == lc_status(LC_OK) else {
            warn("cross-thread: launching the lc_app failed: \(String(cString: lc_last_error_message()))")
            lc_app_destroy(app)
            return nil
        }
        return app
    }

    static func internName(_ string: String) -> lc_name {
        var id: lc_name = 0
        _ = lc_name_intern(string, &id)
        return id
    }

    /// The loop-thread state of the throughput cases, in plain memory (the C callbacks touch no ARC).
    struct LoopCounter {
        var delivered = 0
        var target = 0
        var end: UInt64 = 0
        var app: OpaquePointer?
        /// The flood: every this many deliveries, sample the heap in use (0: never).
        var sampleEvery = 0
        var peakHeap = 0
    }

    /// Counts one delivery; at the last, notes the time and stops the loop.
    @inline(__always) static func countOne(_ context: UnsafeMutableRawPointer?) {
        let state = context.unsafelyUnwrapped.assumingMemoryBound(to: LoopCounter.self)
        state.pointee.delivered += 1
        if state.pointee.sampleEvery > 0, state.pointee.delivered % state.pointee.sampleEvery == 0 {
            state.pointee.peakHeap = max(state.pointee.peakHeap, anchor_rings_heap_in_use())
        }
        if state.pointee.delivered == state.pointee.target {
            state.pointee.end = nowNanoseconds()
            _ = lc_app_stop(state.pointee.app)
        }
    }

    /// The C observer of the lc_app_post_name cases.
    static let countObserver: lc_observer_fn = { _, context in countOne(context) }
    /// The function lc_app_perform_async runs on the loop thread.
    static let countWork: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in countOne(context) }

    /// One lc_app and its loop on this thread, fed by producer threads through lc_app_post_name (to one
    /// C observer of an interned custom name) or lc_app_perform_async (fn = `countWork`); reused run
    /// after run.
    final class ABIThroughput: @unchecked Sendable {
        enum Path { case postName, performAsync }

        let app: OpaquePointer
        let path: Path
        let name: lc_name
        let state = UnsafeMutablePointer<LoopCounter>.allocate(capacity: 1)
        let go = Atomic<Int>(0)
        /// The last round whose loop has returned: its producers stop retrying (a bound on every wait).
        let over = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        /// Calls refused with LC_ERR_QUEUE_FULL (and retried), over all runs.
        let refusals = Atomic<Int>(0)
        var round = 0

        init?(_ path: Path) {
            state.initialize(to: LoopCounter())
            guard let app = CrossThreadBenchmarks.makeApp() else { return nil }
            self.app = app
            self.path = path
            state.pointee.app = app
            name = CrossThreadBenchmarks.internName("com.example.bench.xthread")
            if path == .postName {
                guard lc_app_observe_name(app, name, nil, CrossThreadBenchmarks.countObserver, UnsafeMutableRawPointer(state), nil)
                    == lc_status(LC_OK) else { return nil }
            }
        }

        deinit {
            lc_app_destroy(app)
            state.deallocate()
        }

        /// One more short turn of the loop with nothing queued: whatever it does after a batch (handing
        /// drained chunks back to its pool) is done before memory is measured.
        func settle() { _ = lc_app_run_for(app, 0.01) }

        /// Nanoseconds of one run: `producers` threads make `perThread` calls each, from the start
        /// signal to the last delivery on this thread; nil when a call was lost or failed, or the loop
        /// gave up after `limit` seconds.
        func run(producers: Int, perThread: Int, limit: Double = 60, sampleEvery: Int = 0) -> UInt64? {
            state.pointee.delivered = 0
            state.pointee.target = producers * perThread
            state.pointee.sampleEvery = sampleEvery
            let failedBefore = failures.load(ordering: .relaxed)
            round += 1
            let round = round
            let threads = (0..<producers).map { _ in xthreadSpawn { [self] in produce(round: round, count: perThread) } }
            let start = nowNanoseconds()
            go.store(round, ordering: .releasing)
            _ = lc_app_run_for(app, limit)  // stopped by the last delivery; the limit only bounds a lost one
            over.store(round, ordering: .releasing)
            for thread in threads { pthread_join(thread, nil) }
            guard state.pointee.delivered == state.pointee.target, failures.load(ordering: .relaxed) == failedBefore else {
                warn("cross-thread: \(path == .postName ? "lc_app_post_name" : "lc_app_perform_async"): \(state.pointee.delivered) of \(state.pointee.target) delivered")
                return nil
            }
            return state.pointee.end - start
        }

        private func produce(round: Int, count: Int) {
            while go.load(ordering: .acquiring) != round { sched_yield() }
            let app = app, name = name, context = UnsafeMutableRawPointer(state), work = CrossThreadBenchmarks.countWork
            var failed = 0, refused = 0
            /// Retries a refusal by the queue's bound until the loop has made room (or the run is over).
            @inline(__always) func settle(_ first: lc_status, _ call: () -> lc_status) {
                var status = first
                while status == lc_status(LC_ERR_QUEUE_FULL), over.load(ordering: .relaxed) != round {
                    refused += 1
                    sched_yield()
                    status = call()
                }
                if status != lc_status(LC_OK) { failed += 1 }
            }
            switch path {
            case .postName:
                for _ in 0..<count {
                    let status = lc_app_post_name(app, name, nil, nil)
                    if status != lc_status(LC_OK) { settle(status) { lc_app_post_name(app, name, nil, nil) } }
                }
            case .performAsync:
                for _ in 0..<count {
                    let status = lc_app_perform_async(app, work, context)
                    if status != lc_status(LC_OK) { settle(status) { lc_app_perform_async(app, work, context) } }
                }
            }
            if failed > 0 { failures.add(failed, ordering: .relaxed) }
            if refused > 0 { refusals.add(refused, ordering: .relaxed) }
        }
    }

    /// Millions of items per second.
    static func rate(_ items: Int, _ nanoseconds: UInt64) -> Double { Double(items) / Double(max(nanoseconds, 1)) * 1e3 }

    static func threads(_ n: Int) -> String { n == 1 ? "1 thread" : "\(n) threads" }

    // MARK: lc_app_post_name throughput

    /// lc_app_post_name from `producers` threads to one C observer on the lc_app_run_for loop, beside the
    /// per-producer rings, the shared-mutex ring (several producers), libuv and sd-event.
    static func postThroughputRow(_ settings: Settings, producers: Int, instructions: Double?) -> Row {
        let runs = settings.quick ? 1 : settings.runs
        let warmup = settings.quick ? 0 : settings.warmup
        let perThread = (settings.quick ? 20_000 : 1_000_000) / producers
        let total = perThread * producers
        let ours = ABIThroughput(.postName)
        var abi: [Double] = [], rings: [Double] = [], shared: [Double] = [], uv: [Double] = [], sd: [Double] = []
        for index in 0..<(warmup + runs) {
            let a = ours?.run(producers: producers, perThread: perThread)
            let r = anchor_rings_throughput(Int32(producers), Int32(total))
            let m = producers > 1 ? anchor_ring_throughput(Int32(producers), Int32(total)) : -1
            var uvNs: UInt64 = 0, sdNs: UInt64 = 0
            let u = peer_uv_throughput(Int32(producers), UInt64(total), &uvNs)
            let s = peer_sdevent_throughput(Int32(producers), UInt64(total), &sdNs)
            guard index >= warmup else { continue }
            if let a { abi.append(rate(total, a)) }
            if r > 0 { rings.append(rate(total, UInt64(r))) }
            if m > 0 { shared.append(rate(total, UInt64(m))) }
            if u == 0, uvNs > 0 { uv.append(rate(total, uvNs)) }
            if s == 0, sdNs > 0 { sd.append(rate(total, sdNs)) }
        }
        let refused = ours?.refusals.load(ordering: .relaxed) ?? 0
        let oursFigure = summarize(abi, unit: "M posts/s",
                                   note: "lc_app_run_for on the caller; one queue lock for all threads; \(refused) posts refused by the queue's bound and retried, in all runs")
        let ringsFigure = summarize(rings, unit: "M items/s",
                                    note: producers == 1 ? "one SPSC ring, consumer on the caller" : "one SPSC ring per producer, no shared lock, consumer on the caller")
        let uvFigure = summarize(uv, unit: "M items/s", note: "uv_run on the caller; mutex queue, uv_async_send after every push")
        let sdFigure = summarize(sd, unit: "M items/s", note: "sd_event_loop on the caller; mutex queue, eventfd when it was empty")
        var anchors: [(label: String, figure: Figure)] = [
            (producers == 1 ? "C SPSC ring + eventfd" : "C rings + eventfd, one SPSC ring per producer", ringsFigure),
        ]
        var ratios = ["\(ratio(oursFigure.median, uvFigure.median)) libuv", "\(ratio(oursFigure.median, sdFigure.median)) sd-event",
                      "\(ratio(oursFigure.median, ringsFigure.median)) C \(producers == 1 ? "ring" : "rings per producer")"]
        if producers > 1 {
            let sharedFigure = summarize(shared, unit: "M items/s", note: "consumer on its own thread")
            anchors.append(("C ring + eventfd, producers serialised by one mutex", sharedFigure))
            ratios.append("\(ratio(oursFigure.median, sharedFigure.median)) C ring with one mutex")
        }
        anchors += [("libuv uv_async_send (libuv1 from Debian)", uvFigure), ("sd-event + eventfd (libsystemd from Debian)", sdFigure)]
        // Issue 19's target: at least either peer's rate, and (one producer) ≤ 150 instructions a post.
        var met = !abi.isEmpty && !uv.isEmpty && !sd.isEmpty && oursFigure.median >= uvFigure.median && oursFigure.median >= sdFigure.median
        var target = "≥ 1× libuv and sd-event"
        if producers == 1 {
            target += "; ≤ 150 instructions a post"
            if let instructions {
                ratios.append("\(Figure.format(instructions)) instructions a post (both threads, callgrind)")
                met = met && instructions <= 150
            } else {
                ratios.append("no instruction count (valgrind is missing, its run failed, or --quick)")
            }
        }
        return Row(group: group,
                   name: "C ABI: lc_app_post_name from \(threads(producers)) to a C observer on the lc_app_run loop: throughput (-c release)",
                   ours: oursFigure, anchors: anchors, target: target,
                   met: settings.quick || (producers == 1 && instructions == nil) ? nil : met, ratios: ratios.joined(separator: ", "),
                   instructions: instructions)
    }

    // MARK: lc_app_post_name latency

    /// The loop-thread log of the latency case; `delivered` is what the sender waits on.
    final class LatencyLog: @unchecked Sendable {
        var samples: UnsafeMutablePointer<Double>
        var count = 0
        var total = 0
        var app: OpaquePointer?
        let delivered = Atomic<Int>(0)
        let ready = Atomic<Bool>(false)
        /// The loop has returned: a sender still waiting for a delivery gives up.
        let over = Atomic<Bool>(false)

        init(capacity: Int) { samples = .allocate(capacity: capacity) }
        deinit { samples.deallocate() }
    }

    /// The C observer of the latency case: the sender field carries the send time.
    static let latencyObserver: lc_observer_fn = { notification, context in
        let now = nowNanoseconds()
        let log = Unmanaged<LatencyLog>.fromOpaque(context!).takeUnretainedValue()
        let sent = UInt64(UInt(bitPattern: notification!.pointee.sender))
        if log.count < log.total { log.samples[log.count] = Double(now &- sent) }
        log.count += 1
        log.delivered.store(log.count, ordering: .releasing)
        if log.count == log.total { _ = lc_app_stop(log.app) }
    }

    /// One-way latency of lc_app_post_name: one pinned sender thread stamps the clock into the sender
    /// field and posts; the loop (lc_app_run_for on this thread, pinned) reads the clock in the C
    /// observer. Ping-pong with a pause after each delivery, as the C ring and the peers do it, so that
    /// every sample includes the loop's wake-up from epoll_wait.
    final class ABILatency {
        let app: OpaquePointer
        let name: lc_name
        let log = LatencyLog(capacity: 1)

        init?() {
            guard let app = CrossThreadBenchmarks.makeApp() else { return nil }
            self.app = app
            log.app = app
            name = CrossThreadBenchmarks.internName("com.example.bench.xthread.latency")
            guard lc_app_observe_name(app, name, nil, CrossThreadBenchmarks.latencyObserver,
                                      Unmanaged.passUnretained(log).toOpaque(), nil) == lc_status(LC_OK) else { return nil }
        }

        deinit { lc_app_destroy(app) }

        /// The samples (ns) of one run, or nil when one was lost.
        func run(senderCPU: Int32, loopCPU: Int32, samples: Int, pauseNs: Int) -> [Double]? {
            log.samples.deallocate()
            log.samples = .allocate(capacity: samples)
            log.count = 0
            log.total = samples
            log.delivered.store(0, ordering: .releasing)
            log.ready.store(false, ordering: .releasing)
            log.over.store(false, ordering: .releasing)
            let saved = anchor_ring_affinity_save()
            defer { anchor_ring_affinity_restore(saved) }
            _ = anchor_ring_pin_self(loopCPU)
            let target = SendableApp(app: app), name = name, log = log
            let sender = xthreadSpawn {
                _ = anchor_ring_pin_self(senderCPU)
                anchor_ring_timer_slack(1000)
                while !log.ready.load(ordering: .acquiring) { sched_yield() }
                var pause = timespec(tv_sec: 0, tv_nsec: pauseNs)
                for index in 0..<samples {
                    let stamp = UnsafeRawPointer(bitPattern: UInt(nowNanoseconds()))
                    guard lc_app_post_name(target.app, name, stamp, nil) == lc_status(LC_OK) else { return }
                    while log.delivered.load(ordering: .acquiring) <= index {
                        if log.over.load(ordering: .acquiring) { return }
                        sched_yield()
                    }
                    var remaining = timespec()
                    while nanosleep(&pause, &remaining) != 0, errno == EINTR { pause = remaining }
                    pause = timespec(tv_sec: 0, tv_nsec: pauseNs)
                }
            }
            log.ready.store(true, ordering: .releasing)
            _ = lc_app_run_for(app, 60)  // the observer stops it after the last sample; the limit bounds a lost one
            log.over.store(true, ordering: .releasing)
            pthread_join(sender, nil)
            guard log.count == samples else {
                warn("cross-thread: lc_app_post_name latency: \(log.count) of \(samples) delivered")
                return nil
            }
            return Array(UnsafeBufferPointer(start: log.samples, count: samples))
        }
    }

    /// lc_app_post_name one-way latency p50 and p99 beside the C ring + eventfd + epoll, libuv and
    /// sd-event; sender and loop on one CPU, or on two.
    static func latencyRows(_ settings: Settings, sameCPU: Bool) -> [Row] {
        let runs = settings.quick ? 1 : settings.runs
        let warmup = settings.quick ? 0 : 1
        let samples = settings.quick ? 50 : 300
        let pause = 100_000  // ns: long enough for the loop to be asleep in epoll_wait again
        guard let placed = LatencyPlacement(sameCPU: sameCPU, group: "cross-thread") else { return [] }
        let (loopCPU, senderCPU, placement) = (placed.loopCPU, placed.senderCPU, placed.text)
        var abi: [[Double]] = [], ring: [[Double]] = [], uv: [[Double]] = [], sd: [[Double]] = []
        var ringBuffer = [Double](repeating: 0, count: samples)
        var uvBuffer = ringBuffer, sdBuffer = ringBuffer
        let ours = ABILatency()
        for index in 0..<(warmup + runs) {
            let a = ours?.run(senderCPU: senderCPU, loopCPU: loopCPU, samples: samples, pauseNs: pause)
            let r = ringBuffer.withUnsafeMutableBufferPointer { anchor_ring_latency(senderCPU, loopCPU, Int32(samples), pause, $0.baseAddress) }
            let u = uvBuffer.withUnsafeMutableBufferPointer { peer_uv_latency(senderCPU, loopCPU, Int32(samples), pause, $0.baseAddress) }
            let s = sdBuffer.withUnsafeMutableBufferPointer { peer_sdevent_latency(senderCPU, loopCPU, Int32(samples), pause, $0.baseAddress) }
            guard index >= warmup else { continue }
            if let a { abi.append(a) }
            if r == 0 { ring.append(ringBuffer) }
            if u == 0 { uv.append(uvBuffer) }
            if s == 0 { sd.append(sdBuffer) }
        }
        var rows: [Row] = []
        for (label, p) in [("p50", 50.0), ("p99", 99.0)] {
            let oursFigure = summarize(abi.map { percentile($0, p) / 1000 }, unit: "µs", note: "lc_app_run_for on the caller, pinned")
            let ringFigure = summarize(ring.map { percentile($0, p) / 1000 }, unit: "µs", note: "consumer thread, pinned")
            let uvFigure = summarize(uv.map { percentile($0, p) / 1000 }, unit: "µs", note: "uv_run on the caller, pinned")
            let sdFigure = summarize(sd.map { percentile($0, p) / 1000 }, unit: "µs", note: "sd_event_loop on the caller, pinned")
            let met = !abi.isEmpty && !ring.isEmpty && ringFigure.median > 0 && oursFigure.median <= 1.2 * ringFigure.median
            rows.append(Row(group: group, name: "C ABI: lc_app_post_name one-way latency \(label), \(placement) (-c release)",
                            ours: oursFigure,
                            anchors: [("C ring + eventfd + epoll", ringFigure),
                                      ("libuv uv_async_send (libuv1 from Debian)", uvFigure),
                                      ("sd-event + eventfd (libsystemd from Debian)", sdFigure)],
                            target: "≤ 1.2× C ring", met: settings.quick ? nil : met,
                            ratios: "\(ratio(oursFigure.median, ringFigure.median)) C ring, \(ratio(oursFigure.median, uvFigure.median)) libuv, \(ratio(oursFigure.median, sdFigure.median)) sd-event"))
        }
        return rows
    }

    // MARK: lc_app_perform_async

    /// lc_app_perform_async(app, fn, ctx) from `producers` threads, fn counting on the loop thread and
    /// stopping the loop at the last; beside libuv and sd-event, whose mutex queue drained by the loop is
    /// what a C developer would hand work through. Information: no target.
    static func performThroughputRow(_ settings: Settings, producers: Int, instructions: Double?) -> Row {
        let runs = settings.quick ? 1 : settings.runs
        let warmup = settings.quick ? 0 : settings.warmup
        let perThread = (settings.quick ? 20_000 : 1_000_000) / producers
        let total = perThread * producers
        let ours = ABIThroughput(.performAsync)
        var abi: [Double] = [], uv: [Double] = [], sd: [Double] = []
        for index in 0..<(warmup + runs) {
            let a = ours?.run(producers: producers, perThread: perThread)
            var uvNs: UInt64 = 0, sdNs: UInt64 = 0
            let u = peer_uv_throughput(Int32(producers), UInt64(total), &uvNs)
            let s = peer_sdevent_throughput(Int32(producers), UInt64(total), &sdNs)
            guard index >= warmup else { continue }
            if let a { abi.append(rate(total, a)) }
            if u == 0, uvNs > 0 { uv.append(rate(total, uvNs)) }
            if s == 0, sdNs > 0 { sd.append(rate(total, sdNs)) }
        }
        let refused = ours?.refusals.load(ordering: .relaxed) ?? 0
        let oursFigure = summarize(abi, unit: "M calls/s",
                                   note: "lc_app_run_for on the caller; fn and ctx in the queue's message, nothing allocated per call, one queue lock for all threads; \(refused) calls refused by the queue's bound and retried, in all runs")
        let uvFigure = summarize(uv, unit: "M items/s",
                                 note: "uv_run on the caller; mutex queue of 64-bit items handled inline (no call through a pointer), uv_async_send after every push")
        let sdFigure = summarize(sd, unit: "M items/s",
                                 note: "sd_event_loop on the caller; mutex queue of 64-bit items handled inline, eventfd when it was empty")
        return Row(group: group,
                   name: "C ABI: lc_app_perform_async from \(threads(producers)), fn on the lc_app_run loop: throughput (-c release)",
                   ours: oursFigure,
                   anchors: [("libuv uv_async_send + mutex queue (libuv1 from Debian)", uvFigure),
                             ("sd-event + eventfd + mutex queue (libsystemd from Debian)", sdFigure)],
                   target: producers == 1 ? "≤ 600 instructions a call" : "information",
                   met: producers == 1 && !settings.quick ? instructions.map { $0 <= 600 } : nil,
                   ratios: "\(ratio(oursFigure.median, uvFigure.median)) libuv, \(ratio(oursFigure.median, sdFigure.median)) sd-event"
                       + (producers == 1 ? "; " + (instructions.map { "\(Figure.format($0)) instructions a call (both threads, callgrind)" }
                           ?? "no instruction count (valgrind is missing, its run failed, or --quick)") : ""),
                   instructions: instructions)
    }

    /// The memory an lc_app keeps after 16 threads flooded it with lc_app_perform_async and the loop
    /// drained everything: heap in use (mallinfo2, all arenas) and RSS, after one flood and after a
    /// second (growth between the two would be a leak), the heap's peak during the first (sampled on
    /// the loop every 65,536 calls), and the RSS left once malloc_trim(0) has handed malloc's free
    /// memory back. Each flood is at most the queue's bound (1,048,576 calls) ahead of the loop: past
    /// it, calls are refused and retried. Information: no target.
    static func floodMemoryRow(_ settings: Settings) -> Row {
        let producers = 16
        let perThread = settings.quick ? 20_000 : 1_000_000
        let mib = 1024.0 * 1024.0
        let name = "C ABI: memory kept after \(producers) threads flood lc_app_perform_async (\(perThread) calls each), drained"
        guard let ours = ABIThroughput(.performAsync) else {
            return Row(group: group, name: name, ours: summarize([], unit: "MiB"), anchors: [], target: "information", met: nil, ratios: "–")
        }
        // A short round first, so that what any use of the loop keeps (its queue's first chunks, the
        // producers' thread-local tallies) is in the baseline, not in the flood's figure.
        _ = ours.run(producers: 1, perThread: 10_000)
        ours.settle()
        let heapBefore = Double(anchor_rings_heap_in_use()), rssBefore = Double(anchor_rings_rss_bytes())
        let first = ours.run(producers: producers, perThread: perThread, limit: 300, sampleEvery: 65_536)
        let peak = Double(max(ours.state.pointee.peakHeap, anchor_rings_heap_in_use()))
        ours.settle()
        let heapFirst = Double(anchor_rings_heap_in_use()), rssFirst = Double(anchor_rings_rss_bytes())
        let second = ours.run(producers: producers, perThread: perThread, limit: 300)
        ours.settle()
        let heapSecond = Double(anchor_rings_heap_in_use()), rssSecond = Double(anchor_rings_rss_bytes())
        let arenaFree = Double(anchor_rings_arena_free())
        // What of the RSS kept is malloc's free memory, which the program could hand back itself.
        _ = anchor_rings_trim()
        let rssTrimmed = Double(anchor_rings_rss_bytes())
        let delivered = first != nil && second != nil
        let floodRates = [first, second].map { $0.map { Figure.format(rate(producers * perThread, $0)) } ?? "–" }
        let refused = ours.refusals.load(ordering: .relaxed)
        return Row(group: group, name: name,
                   ours: .single((heapFirst - heapBefore) / mib, "MiB",
                                 note: "heap in use after the first flood − before (mallinfo2, all arenas)\(delivered ? "" : "; CALLS LOST")"),
                   anchors: [("heap kept after a second flood (growth = a leak)", .single((heapSecond - heapBefore) / mib, "MiB")),
                             ("peak heap in use during the first flood", .single((peak - heapBefore) / mib, "MiB", note: "above the baseline, sampled every 65,536 calls")),
                             ("RSS kept after the first flood", .single((rssFirst - rssBefore) / mib, "MiB")),
                             ("RSS kept after the second flood", .single((rssSecond - rssBefore) / mib, "MiB",
                                                                          note: "\(Figure.format(arenaFree / mib)) MiB free inside malloc's arenas")),
                             ("RSS kept after malloc_trim(0)", .single((rssTrimmed - rssBefore) / mib, "MiB"))],
                   // Given back: what stays in use is the queue's pool of spare chunks (32 of 32 KiB, kept
                   // for the next burst), and a second flood adds nothing.
                   target: "memory given back after a drain: ≤ 1.5 MiB of heap kept (the queue's 1 MiB pool), none more after a second flood",
                   met: settings.quick || !delivered ? nil : (heapFirst - heapBefore) / mib <= 1.5 && heapSecond - heapFirst <= 64 * 1024,
                   ratios: "baseline heap \(Figure.format(heapBefore / mib)) MiB, RSS \(Figure.format(rssBefore / mib)) MiB; floods at \(floodRates.joined(separator: " and ")) M calls/s, \(refused) calls refused by the queue's bound and retried")
    }
}

// MARK: - Profiling one case alone

/// `LC_BENCH_CHILD="xthread-post producers=1 count=1000000" lifecycle-bench --filter cross-thread` runs
/// one case alone and prints its M items/s, for `valgrind --tool=callgrind` or `perf stat` (not used by
/// the report). Roles: xthread-post, xthread-perform.
enum ProfileRole {
    static let prefix = "xthread-"

    static func run(_ role: String) -> Never {
        alarm(300)  // a hang ends the process
        let words = role.split(separator: " ")
        var parameters: [String: Int] = [:]
        for word in words.dropFirst() {
            let pair = word.split(separator: "=")
            if pair.count == 2, let value = Int(pair[1]) { parameters[String(pair[0])] = value }
        }
        let producers = max(1, parameters["producers"] ?? 1), count = parameters["count"] ?? 1_000_000
        let path: CrossThreadBenchmarks.ABIThroughput.Path
        switch words.first {
        case "xthread-post"?: path = .postName
        case "xthread-perform"?: path = .performAsync
        default:
            warn("lifecycle-bench: unknown cross-thread role '\(role)' (xthread-post, xthread-perform)")
            exit(64)
        }
        guard let runner = CrossThreadBenchmarks.ABIThroughput(path) else { exit(70) }
        for _ in 0..<max(1, parameters["runs"] ?? 1) {
            guard let ns = runner.run(producers: producers, perThread: count / producers) else { exit(1) }
            print("value rate \(CrossThreadBenchmarks.rate(count / producers * producers, ns))")
        }
        exit(0)
    }
}
