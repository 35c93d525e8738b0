import CBenchAnchors
import CBenchPeers
import CLifecycleABI
@preconcurrency import Glibc
import Synchronization

// Cross-thread posts through the public C ABI: producer threads call lc_app_post_name on an lc_app
// made (lc_app_create) on this thread, whose C observer runs in lc_app_run / lc_app_run_for here;
// beside the peers a C developer would pick (libuv's uv_async_send, sd-event with an eventfd) and the
// C ring + eventfd, measured in alternation, run by run, in the same process.

/// An lc_app pointer handed to producer threads (lc_app_post_name is [thread-safe]).
struct SendableApp: @unchecked Sendable {
    let app: OpaquePointer
}

/// The loop-thread state of the C-ABI throughput case (plain memory: the C observer touches no ARC).
struct ABIThroughputState {
    var delivered = 0
    var target = 0
    var end: UInt64 = 0
    var app: OpaquePointer?
}

extension CrossThreadBenchmarks {
    static func makeABIApp() -> OpaquePointer? {
        var app: OpaquePointer?
        guard lc_app_create(nil, &app) == lc_status(LC_OK), let app else { return nil }
        guard lc_app_perform_simple(app, lc_action_kind(LC_ACTION_LAUNCH)) == lc_status(LC_OK) else { return nil }
        return app
    }

    static func internName(_ string: String) -> lc_name {
        var id: lc_name = 0
        _ = lc_name_intern(string, &id)
        return id
    }

    /// The C observer of the throughput case: counts, and stops the loop at the last one.
    static let throughputObserver: lc_observer_fn = { _, context in
        let state = context!.assumingMemoryBound(to: ABIThroughputState.self)
        state.pointee.delivered += 1
        if state.pointee.delivered == state.pointee.target {
            state.pointee.end = nowNanoseconds()
            _ = lc_app_stop(state.pointee.app)
        }
    }

    /// M posts/s of one run: `producers` threads call lc_app_post_name `count` times in all; from the
    /// start signal to the last delivery in lc_app_run_for on this thread. nil when posts were lost.
    final class ABIThroughput: @unchecked Sendable {
        let app: OpaquePointer
        let name: lc_name
        let state = UnsafeMutablePointer<ABIThroughputState>.allocate(capacity: 1)
        let go = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        /// Posts refused by the queue's per-thread bound (and retried), over all runs.
        let refusals = Atomic<Int>(0)
        var signal = 0

        init?() {
            guard let app = CrossThreadBenchmarks.makeABIApp() else { return nil }
            self.app = app
            name = CrossThreadBenchmarks.internName("com.example.bench.abi.xthread")
            state.initialize(to: ABIThroughputState(app: app))
            guard lc_app_observe_name(app, name, nil, CrossThreadBenchmarks.throughputObserver, UnsafeMutableRawPointer(state), nil)
                == lc_status(LC_OK) else { return nil }
        }

        deinit {
            lc_app_destroy(app)
            state.deallocate()
        }

        func run(producers: Int, count: Int) -> Double? {
            let share = count / producers
            state.pointee.delivered = 0
            state.pointee.target = share * producers
            signal += 1
            let signal = signal, target = SendableApp(app: app), name = name
            let threads = (0..<producers).map { _ in
                xthreadSpawn { [self] in
                    while go.load(ordering: .acquiring) != signal { sched_yield() }
                    var failed = 0, refused = 0
                    for _ in 0..<share {
                        var status = lc_app_post_name(target.app, name, nil, nil)
                        // Refused by the queue's per-thread bound: retry once the loop had a turn.
                        while status == lc_status(LC_ERR_QUEUE_FULL) {
                            refused += 1
                            sched_yield()
                            status = lc_app_post_name(target.app, name, nil, nil)
                        }
                        if status != lc_status(LC_OK) { failed += 1 }
                    }
                    if failed > 0 { failures.add(failed, ordering: .relaxed) }
                    if refused > 0 { refusals.add(refused, ordering: .relaxed) }
                }
            }
            let start = nowNanoseconds()
            go.store(signal, ordering: .releasing)
            _ = lc_app_run_for(app, 60)  // bound: a lost post shows as a missing sample, not a hang
            for thread in threads { pthread_join(thread, nil) }
            guard state.pointee.delivered == state.pointee.target else { return nil }
            return Double(state.pointee.target) / Double(state.pointee.end - start) * 1e3
        }
    }

    static func abiThroughputRow(_ settings: Settings, producers: Int) -> Row {
        let runs = settings.quick ? 1 : settings.runs
        let warmup = settings.quick ? 0 : settings.warmup
        let count = settings.quick ? 20_000 : 1_000_000
        let share = count / producers * producers
        let ours = ABIThroughput()
        var abi: [Double] = [], ring: [Double] = [], uv: [Double] = [], sd: [Double] = []
        for index in 0..<(warmup + runs) {
            let a = ours?.run(producers: producers, count: count)
            let r = anchor_ring_throughput(Int32(producers), Int32(count))
            var uvNs: UInt64 = 0, sdNs: UInt64 = 0
            let u = peer_uv_throughput(Int32(producers), UInt64(share), &uvNs)
            let s = peer_sdevent_throughput(Int32(producers), UInt64(share), &sdNs)
            guard index >= warmup else { continue }
            if let a { abi.append(a) }
            if r > 0 { ring.append(Double(share) / Double(r) * 1e3) }
            if u == 0, uvNs > 0 { uv.append(Double(share) / Double(uvNs) * 1e3) }
            if s == 0, sdNs > 0 { sd.append(Double(share) / Double(sdNs) * 1e3) }
        }
        if let ours, ours.failures.load(ordering: .relaxed) > 0 {
            PostingBenchmarks.warn("cross-thread: lc_app_post_name failed \(ours.failures.load(ordering: .relaxed)) times")
        }
        let refused = ours?.refusals.load(ordering: .relaxed) ?? 0
        let figure = summarize(abi, unit: "M posts/s",
                               note: "lc_app_run_for on the caller; \(refused) posts refused by the per-thread bound and retried, in all runs")
        let ringFigure = summarize(ring, unit: "M items/s", note: producers > 1 ? "SPSC ring, producers serialised by a mutex" : "SPSC ring")
        let uvFigure = summarize(uv, unit: "M items/s", note: "uv_run on the caller; mutex queue, send after every push")
        let sdFigure = summarize(sd, unit: "M items/s", note: "sd_event_loop on the caller; mutex queue, eventfd when it was empty")
        let met = !abi.isEmpty && !uv.isEmpty && figure.median >= 0.5 * uvFigure.median && figure.median >= 15
        return Row(group: group,
                   name: "C ABI: lc_app_post_name from \(producers) thread\(producers > 1 ? "s" : "") to a C observer on the lc_app_run loop: throughput (-c release)",
                   ours: figure,
                   anchors: [("C ring + eventfd", ringFigure), ("libuv uv_async_send (libuv1 from Debian)", uvFigure),
                             ("sd-event + eventfd (libsystemd from Debian)", sdFigure)],
                   target: "≥ 0.5× libuv and ≥ 15 M posts/s", met: settings.quick ? nil : met,
                   ratios: "\(ratio(figure.median, uvFigure.median)) libuv, \(ratio(figure.median, sdFigure.median)) sd-event, \(ratio(figure.median, ringFigure.median)) C ring")
    }

    /// The loop-thread log of the C-ABI latency case; `delivered` is what the sender waits on.
    final class ABILatencyLog: @unchecked Sendable {
        var samples: UnsafeMutablePointer<Double>
        var count = 0
        var total = 0
        var app: OpaquePointer?
        let delivered = Atomic<Int>(0)
        let ready = Atomic<Bool>(false)

        init(capacity: Int) { samples = .allocate(capacity: capacity) }
        deinit { samples.deallocate() }
    }

    /// The C observer of the latency case: the sender field carries the send time.
    static let latencyObserver: lc_observer_fn = { notification, context in
        let now = nowNanoseconds()
        let log = Unmanaged<ABILatencyLog>.fromOpaque(context!).takeUnretainedValue()
        let sent = UInt64(UInt(bitPattern: notification!.pointee.sender))
        if log.count < log.total { log.samples[log.count] = Double(now &- sent) }
        log.count += 1
        log.delivered.store(log.count, ordering: .releasing)
        if log.count == log.total { _ = lc_app_stop(log.app) }
    }

    /// One-way latency of lc_app_post_name: one pinned producer, the loop (lc_app_run) on this thread,
    /// pinned; ping-pong as the C ring and the peers do it.
    final class ABILatency {
        let app: OpaquePointer
        let name: lc_name
        let log = ABILatencyLog(capacity: 1)

        init?() {
            guard let app = CrossThreadBenchmarks.makeABIApp() else { return nil }
            self.app = app
            log.app = app
            name = CrossThreadBenchmarks.internName("com.example.bench.abi.latency")
            guard lc_app_observe_name(app, name, nil, CrossThreadBenchmarks.latencyObserver,
                                      Unmanaged.passUnretained(log).toOpaque(), nil) == lc_status(LC_OK) else { return nil }
        }

        deinit { lc_app_destroy(app) }

        func run(senderCPU: Int32, loopCPU: Int32, samples: Int, pauseNs: Int) -> [Double]? {
            log.samples.deallocate()
            log.samples = .allocate(capacity: samples)
            log.count = 0
            log.total = samples
            log.delivered.store(0, ordering: .releasing)
            log.ready.store(false, ordering: .releasing)
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
                    _ = lc_app_post_name(target.app, name, stamp, nil)
                    while log.delivered.load(ordering: .acquiring) <= index { sched_yield() }
                    var remaining = timespec()
                    while nanosleep(&pause, &remaining) != 0, errno == EINTR { pause = remaining }
                    pause = timespec(tv_sec: 0, tv_nsec: pauseNs)
                }
            }
            log.ready.store(true, ordering: .releasing)
            _ = lc_app_run_for(app, 60)  // the observer stops it after the last sample
            pthread_join(sender, nil)
            guard log.count == samples else { return nil }
            return Array(UnsafeBufferPointer(start: log.samples, count: samples))
        }
    }
}
