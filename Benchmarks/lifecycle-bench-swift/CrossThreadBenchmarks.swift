import AppLifecycle
import BenchHarness
import CBenchAnchors
import Dispatch
import Foundation
@preconcurrency import Glibc
import Synchronization

// The cross-thread group, Swift API: posts from other threads to the main run loop through the public
// AppLifecycle API (a MainRunLoop made on this thread, an AppNotificationCenter on it, a Swift closure
// observer), as a Swift embedder writes them: throughput from 1 and 4 threads, and one-way latency
// (sender and loop on one CPU, then on two).
//
// Our path: `center.post(name)` on a producer thread takes the loop's one queue lock (shared by all
// threads), appends a four-word message (no allocation) and writes the loop's eventfd only when the
// loop was waiting; the loop takes the whole queue at once and calls the observer. A post refused by
// the queue's per-thread bound (65,536 waiting) returns false and is retried after sched_yield.
//
// Beside it:
// - the C anchors (CBenchAnchors), in this process, in alternation with ours run by run: one SPSC ring
//   per producer + one eventfd, consumer on the caller (anchor_rings_throughput), and the older ring
//   whose producers are serialised by one mutex (anchor_ring_throughput, 4 producers only); for
//   latency the C ring + eventfd + epoll (anchor_ring_latency);
// - DispatchQueue.main.async with dispatchMain(), and RunLoop.main.perform (+ CFRunLoopWakeUp). Neither
//   can run beside ours in this process (dispatchMain() never returns; RunLoop.main wants a clean main
//   thread), so each runs in a child: this executable again, with LC_BENCH_CHILD=<role> and
//   `--group cross-thread`, one child per run so that they too alternate with ours. It prints
//   `value KEY X` and `note TEXT` lines. On Linux dispatchMain() exits the main thread and a worker
//   thread drains the main queue; the child compares pthread_self() in the blocks with the thread that
//   called dispatchMain(), and the row says where they ran.
enum SwiftCrossThreadBenchmarks {
    static let group = "cross-thread"

    static func run(_ settings: Settings) -> [Row] {
        if let role = getenv(benchChildVariable) { Child.run(String(cString: role)) }
        var rows: [Row] = []
        rows.append(throughputRow(settings, producers: 1))
        rows.append(throughputRow(settings, producers: 4))
        rows += latencyRows(settings, sameCPU: true)
        rows += latencyRows(settings, sameCPU: false)
        return rows
    }

    static func rate(_ items: Int, _ nanoseconds: UInt64) -> Double { Double(items) / Double(max(nanoseconds, 1)) * 1e3 }

    // MARK: Throughput

    /// center.post from `producers` threads to a Swift closure observer on this thread's MainRunLoop,
    /// beside the C rings, Dispatch and RunLoop.perform.
    static func throughputRow(_ settings: Settings, producers: Int) -> Row {
        let runs = settings.quick ? 1 : settings.runs
        let warmup = settings.quick ? 0 : settings.warmup
        let perThread = (settings.quick ? 20_000 : 1_000_000) / producers
        let total = perThread * producers
        let dispatchCount = settings.quick ? 20_000 : 200_000
        let runLoopCount = settings.quick ? 4_000 : 20_000  // RunLoop.perform manages ~0.15 M/s: keep its runs short
        let ours = SwiftThroughput()
        var swift: [Double] = [], rings: [Double] = [], shared: [Double] = [], dispatch: [Double] = [], runLoop: [Double] = []
        var dispatchNotes: Set<String> = [], runLoopNotes: Set<String> = []
        for index in 0..<(warmup + runs) {
            let s = ours?.run(producers: producers, perThread: perThread)
            let r = anchor_rings_throughput(Int32(producers), Int32(total))
            let m = producers > 1 ? anchor_ring_throughput(Int32(producers), Int32(total)) : -1
            guard index >= warmup else { continue }
            // A child warms itself up (one round) before its measured one.
            let d = runChild("dispatch-throughput producers=\(producers) count=\(dispatchCount) runs=1 warmup=1")
            let l = runChild("runloop-throughput producers=\(producers) count=\(runLoopCount) runs=1 warmup=1")
            if let s { swift.append(rate(total, s)) }
            if r > 0 { rings.append(rate(total, UInt64(r))) }
            if m > 0 { shared.append(rate(total, UInt64(m))) }
            if let d { dispatch += d.values["rate"] ?? []; dispatchNotes.formUnion(d.notes) }
            if let l { runLoop += l.values["rate"] ?? []; runLoopNotes.formUnion(l.notes) }
        }
        let refused = ours?.refusals.load(ordering: .relaxed) ?? 0
        let oursFigure = summarize(swift, unit: "M posts/s",
                                   note: "MainRunLoop.run on the caller; one queue lock for all threads; \(refused) posts refused by the queue's bound and retried, in all runs")
        let ringsFigure = summarize(rings, unit: "M items/s",
                                    note: producers == 1 ? "one SPSC ring, consumer on the caller" : "one SPSC ring per producer, no shared lock, consumer on the caller")
        var anchors: [(label: String, figure: Figure)] = [
            (producers == 1 ? "C SPSC ring + eventfd" : "C rings + eventfd, one SPSC ring per producer", ringsFigure),
        ]
        var ratios = ["\(ratio(oursFigure.median, ringsFigure.median)) C \(producers == 1 ? "ring" : "rings per producer")"]
        if producers > 1 {
            let sharedFigure = summarize(shared, unit: "M items/s", note: "consumer on its own thread")
            anchors.append(("C ring + eventfd, producers serialised by one mutex", sharedFigure))
            ratios.append("\(ratio(oursFigure.median, sharedFigure.median)) C ring with one mutex")
        }
        let dispatchFigure = summarize(dispatch, unit: "M posts/s", note: dispatchNotes.sorted().joined(separator: "; "))
        let runLoopFigure = summarize(runLoop, unit: "M posts/s", note: runLoopNotes.sorted().joined(separator: "; "))
        anchors += [("DispatchQueue.main.async + dispatchMain()", dispatchFigure), ("RunLoop.main.perform + CFRunLoopWakeUp", runLoopFigure)]
        ratios += ["\(ratio(oursFigure.median, dispatchFigure.median)) Dispatch", "\(ratio(oursFigure.median, runLoopFigure.median)) RunLoop.perform"]
        return Row(group: group,
                   name: "Swift API: center.post from \(producers == 1 ? "1 thread" : "\(producers) threads") to the main loop, Swift closure observer: throughput (-c release)",
                   ours: oursFigure, anchors: anchors, target: "≥ 10 M posts/s",
                   met: settings.quick || swift.isEmpty ? nil : oursFigure.median >= 10,
                   ratios: ratios.joined(separator: ", "))
    }

    /// Loop-thread state of the throughput case.
    final class Counter: @unchecked Sendable {
        var delivered = 0
        var target = 0
        var end: UInt64 = 0
    }

    /// A MainRunLoop on this thread, a center on it and one closure observer that counts and stops the
    /// loop at the last post; reused run after run.
    final class SwiftThroughput: @unchecked Sendable {
        let loop: MainRunLoop
        let center: AppNotificationCenter
        let name = NotificationName.didReceiveMemoryWarning
        let counter = Counter()
        let go = Atomic<Int>(0)
        /// The last round whose loop has returned: its producers stop retrying (a bound on every wait).
        let over = Atomic<Int>(0)
        /// Posts refused by the queue's bound (and retried), over all runs.
        let refusals = Atomic<Int>(0)
        var round = 0

        init?() {
            guard let loop = try? MainRunLoop() else {
                warn("cross-thread: MainRunLoop() failed")
                return nil
            }
            self.loop = loop
            center = AppNotificationCenter(loop: loop)
            let counter = counter
            _ = center.observe(name) { _ in
                counter.delivered += 1
                if counter.delivered == counter.target {
                    counter.end = nowNanoseconds()
                    loop.stop()
                }
            }
        }

        /// Nanoseconds from the start signal to the last delivery; nil when a post was lost.
        func run(producers: Int, perThread: Int) -> UInt64? {
            counter.delivered = 0
            counter.target = producers * perThread
            round += 1
            let round = round
            let threads = (0..<producers).map { _ in
                xthreadSpawn { [self] in
                    while go.load(ordering: .acquiring) != round { sched_yield() }
                    let center = center, name = name
                    var refused = 0
                    for _ in 0..<perThread {
                        // Refused by the queue's per-thread bound: retried once the loop had a turn.
                        while !center.post(name) {
                            if over.load(ordering: .relaxed) == round { break }
                            refused += 1
                            sched_yield()
                        }
                    }
                    if refused > 0 { refusals.add(refused, ordering: .relaxed) }
                }
            }
            let start = nowNanoseconds()
            go.store(round, ordering: .releasing)
            try? loop.run(for: .seconds(60))  // stopped by the last delivery; the limit only bounds a lost post
            over.store(round, ordering: .releasing)
            for thread in threads { pthread_join(thread, nil) }
            guard counter.delivered == counter.target else {
                warn("cross-thread: center.post: \(counter.delivered) of \(counter.target) delivered")
                return nil
            }
            return counter.end - start
        }
    }

    // MARK: Latency

    /// center.post one-way latency p50 and p99 beside the C ring + eventfd + epoll and Dispatch; sender
    /// and loop on one CPU, or on two.
    static func latencyRows(_ settings: Settings, sameCPU: Bool) -> [Row] {
        let runs = settings.quick ? 1 : settings.runs
        let warmup = settings.quick ? 0 : 1
        let samples = settings.quick ? 50 : 300
        let pause = 100_000  // ns: long enough for the loop to be asleep in epoll_wait again
        guard let placed = LatencyPlacement(sameCPU: sameCPU, group: "cross-thread") else { return [] }
        let (loopCPU, senderCPU, placement) = (placed.loopCPU, placed.senderCPU, placed.text)
        var ours: [[Double]] = [], ring: [[Double]] = []
        var dispatch50: [Double] = [], dispatch99: [Double] = [], dispatchNotes: Set<String> = []
        var buffer = [Double](repeating: 0, count: samples)
        for index in 0..<(warmup + runs) {
            let o = oursLatency(senderCPU: senderCPU, loopCPU: loopCPU, samples: samples, runs: 1, warmup: 0, pauseNs: pause)
            let r = buffer.withUnsafeMutableBufferPointer { anchor_ring_latency(senderCPU, loopCPU, Int32(samples), pause, $0.baseAddress) }
            guard index >= warmup else { continue }
            let d = runChild("dispatch-latency sender=\(senderCPU) loop=\(loopCPU) samples=\(samples) runs=1 warmup=1 pause=\(pause)")
            ours += o
            if r == 0 { ring.append(buffer) }
            if let d {
                dispatch50 += d.values["p50"] ?? []
                dispatch99 += d.values["p99"] ?? []
                dispatchNotes.formUnion(d.notes)
            }
        }
        var rows: [Row] = []
        for (label, p) in [("p50", 50.0), ("p99", 99.0)] {
            let oursFigure = summarize(ours.map { percentile($0, p) / 1000 }, unit: "µs", note: "MainRunLoop.run on the caller, pinned")
            let ringFigure = summarize(ring.map { percentile($0, p) / 1000 }, unit: "µs", note: "consumer thread, pinned")
            let dispatchFigure = summarize(p == 50 ? dispatch50 : dispatch99, unit: "µs", note: dispatchNotes.sorted().joined(separator: "; "))
            let met = !ours.isEmpty && !ring.isEmpty && ringFigure.median > 0 && oursFigure.median <= 1.2 * ringFigure.median
            rows.append(Row(group: group, name: "Swift API: center.post one-way latency \(label), \(placement) (-c release)",
                            ours: oursFigure,
                            anchors: [("C ring + eventfd + epoll", ringFigure), ("DispatchQueue.main.async + dispatchMain()", dispatchFigure)],
                            target: "≤ 1.2× C ring", met: settings.quick ? nil : met,
                            ratios: "\(ratio(oursFigure.median, ringFigure.median)) C ring, \(ratio(oursFigure.median, dispatchFigure.median)) Dispatch"))
        }
        return rows
    }

    /// Loop-thread state of the latency case; `delivered` is what the sender waits on.
    final class LatencyLog: @unchecked Sendable {
        let samples: UnsafeMutablePointer<Double>
        var count = 0
        let total: Int
        let delivered = Atomic<Int>(0)
        let ready = Atomic<Bool>(false)
        /// The loop has returned: a sender still waiting for a delivery gives up.
        let over = Atomic<Bool>(false)

        init(total: Int) {
            self.total = total
            samples = .allocate(capacity: total)
        }

        deinit { samples.deallocate() }
    }

    /// Per run, the one-way latencies (ns) of `samples` ping-pong posts: a pinned sender thread stamps
    /// the clock into the sender field (`NotificationSender(rawValue:)`, so the post allocates nothing)
    /// and posts; the observer on this thread's loop (pinned) reads the clock.
    static func oursLatency(senderCPU: Int32, loopCPU: Int32, samples: Int, runs: Int, warmup: Int, pauseNs: Int) -> [[Double]] {
        let saved = anchor_ring_affinity_save()
        defer { anchor_ring_affinity_restore(saved) }
        _ = anchor_ring_pin_self(loopCPU)
        guard let loop = try? MainRunLoop() else {
            warn("cross-thread: MainRunLoop() failed")
            return []
        }
        let center = AppNotificationCenter(loop: loop)
        let name = NotificationName.significantTimeChange
        let total = samples * (warmup + runs)
        let log = LatencyLog(total: total)
        let token = center.observe(name) { notification in
            let now = nowNanoseconds()
            log.samples[log.count] = Double(now &- UInt64(notification.sender.rawValue))
            log.count += 1
            log.delivered.store(log.count, ordering: .releasing)
            if log.count == total { loop.stop() }
        }
        defer { center.removeObserver(token) }
        let sender = xthreadSpawn {
            _ = anchor_ring_pin_self(senderCPU)
            anchor_ring_timer_slack(1000)
            while !log.ready.load(ordering: .acquiring) { sched_yield() }
            var pause = timespec(tv_sec: 0, tv_nsec: pauseNs)
            for index in 0..<total {
                // As the C ring's producer and the Dispatch child: post, pause, then wait for the delivery.
                guard center.post(name, sender: NotificationSender(rawValue: UInt(nowNanoseconds()))) else { return }
                var remaining = timespec()
                while nanosleep(&pause, &remaining) != 0, errno == EINTR { pause = remaining }
                pause = timespec(tv_sec: 0, tv_nsec: pauseNs)
                while log.delivered.load(ordering: .acquiring) <= index {
                    if log.over.load(ordering: .acquiring) { return }
                    sched_yield()
                }
            }
        }
        log.ready.store(true, ordering: .releasing)
        try? loop.run(for: .seconds(60))  // the observer stops it after the last sample; the limit bounds a lost one
        log.over.store(true, ordering: .releasing)
        pthread_join(sender, nil)
        guard log.count == total else {
            warn("cross-thread: center.post latency: \(log.count) of \(total) delivered")
            return []
        }
        return (warmup..<(warmup + runs)).map { run in
            Array(UnsafeBufferPointer(start: log.samples + run * samples, count: samples))
        }
    }

    // MARK: Child processes

    /// What a child printed: `value KEY X` lines by key, and `note TEXT` lines.
    struct ChildResult {
        var values: [String: [Double]] = [:]
        var notes: [String] = []
    }

    /// Runs this executable again as `role` (LC_BENCH_CHILD) and parses its standard output; nil (with a
    /// warning) when it fails. A child kills itself after 120 s (alarm), so this never waits for ever.
    static func runChild(_ role: String) -> ChildResult? {
        // Its standard error joins its output (the lines it prints there, its progress line among them,
        // are shown only when it fails).
        guard let run = timedRun(executablePath(), ["--group", group], environment: ["\(benchChildVariable)=\(role)"],
                                 errorsToOutput: true) else {
            warn("cross-thread: cannot start the child '\(role)'")
            return nil
        }
        guard run.status == 0 else {
            warn("cross-thread: the child '\(role)' failed (status \(run.status)):\n\(run.output)")
            return nil
        }
        var result = ChildResult()
        for line in run.output.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 2)
            if fields.count == 3, fields[0] == "value", let value = Double(fields[2]) {
                result.values[String(fields[1]), default: []].append(value)
            } else if fields.first == "note" {
                result.notes.append(String(line.dropFirst(5)))
            }
        }
        return result
    }
}

// MARK: - The child side

/// The anchors that run in a child process (dispatchMain() never returns), and our cases alone for
/// profiling. Prints `value KEY X` and `note TEXT` lines, then exits. Roles (LC_BENCH_CHILD):
///   dispatch-throughput / runloop-throughput producers=P count=N runs=R warmup=W
///   dispatch-latency sender=CPU loop=CPU samples=N runs=R warmup=W pause=NS
///   ours-throughput producers=P count=N runs=R   (not used by the parent: for callgrind / perf stat)
///   ours-latency / ring-latency sender=CPU loop=CPU samples=N [dump=1]   (idem)
private enum Child {
    static func run(_ role: String) -> Never {
        alarm(120)  // a child that hangs dies (SIGALRM) and the parent reports it instead of waiting for ever
        let words = role.split(separator: " ")
        var parameters: [String: Int] = [:]
        for word in words.dropFirst() {
            let pair = word.split(separator: "=")
            if pair.count == 2, let value = Int(pair[1]) { parameters[String(pair[0])] = value }
        }
        switch words.first.map(String.init) {
        case "dispatch-throughput"?: dispatchThroughput(parameters)
        case "runloop-throughput"?: runLoopThroughput(parameters)
        case "dispatch-latency"?: dispatchLatency(parameters)
        case "ours-throughput"?:
            let producers = max(1, parameters["producers"] ?? 1), count = parameters["count"] ?? 100_000
            guard let ours = SwiftCrossThreadBenchmarks.SwiftThroughput() else { exit(70) }
            var lines: [String] = []
            for _ in 0..<max(1, parameters["runs"] ?? 1) {
                guard let ns = ours.run(producers: producers, perThread: count / producers) else { exit(1) }
                lines.append("value rate \(SwiftCrossThreadBenchmarks.rate(count / producers * producers, ns))")
            }
            finish(lines)
        case "ours-latency"?, "ring-latency"?:
            let sender = Int32(parameters["sender"] ?? 0), loop = Int32(parameters["loop"] ?? 0)
            let samples = parameters["samples"] ?? 1000
            var values: [Double]
            if words.first == "ours-latency" {
                values = SwiftCrossThreadBenchmarks.oursLatency(senderCPU: sender, loopCPU: loop, samples: samples, runs: 1,
                                                                warmup: 0, pauseNs: 100_000).first ?? []
            } else {
                values = [Double](repeating: 0, count: samples)
                _ = values.withUnsafeMutableBufferPointer { anchor_ring_latency(sender, loop, Int32(samples), 100_000, $0.baseAddress) }
            }
            var lines = [0.0, 10, 25, 50, 75, 90, 99].map { "value p\(Int($0)) \(percentile(values, $0))" }
            if parameters["dump"] == 1 { lines += values.map { "sample \(Int($0))" } }
            finish(lines)
        default:
            warn("lifecycle-bench-swift: unknown cross-thread child role '\(role)'")
            exit(70)
        }
    }

    static func finish(_ lines: [String]) -> Never {
        print(lines.joined(separator: "\n"))
        fflush(nil)
        exit(0)
    }

    /// State shared by the producer threads, the coordinating thread and the delivered blocks.
    final class Run: @unchecked Sendable {
        let mainThread = pthread_self()
        var delivered = 0
        var target = 0
        var end: UInt64 = 0
        var onMainThread = 0
        var onOtherThread = 0
        let go = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)

        /// Called by every delivered block (serially: the main queue or the main run loop).
        @inline(__always) func deliveredOne() {
            delivered += 1
            if delivered == target {
                end = nowNanoseconds()
                if pthread_equal(pthread_self(), mainThread) != 0 { onMainThread += 1 } else { onOtherThread += 1 }
                done.signal()
            }
        }

        var threadNote: String {
            onOtherThread == 0 ? "delivered on the main thread"
                : onMainThread == 0 ? "delivered on a worker thread, not the thread that called dispatchMain()"
                : "delivered on the main thread \(onMainThread)×, on another thread \(onOtherThread)×"
        }
    }

    /// Drives `warmup + runs` rounds from a coordinating thread: `producers` threads each call `post`
    /// count / producers times; prints a rate per measured round, then exits.
    static func throughputRounds(_ parameters: [String: Int], _ state: Run, post: @escaping @Sendable () -> Void) {
        let producers = max(1, parameters["producers"] ?? 1)
        let count = parameters["count"] ?? 100_000
        let runs = parameters["runs"] ?? 1
        let warmup = parameters["warmup"] ?? 0
        let share = count / producers
        _ = xthreadSpawn {
            var lines: [String] = []
            for index in 0..<(warmup + runs) {
                state.delivered = 0
                state.target = share * producers
                let signal = index + 1
                let threads = (0..<producers).map { _ in
                    xthreadSpawn {
                        while state.go.load(ordering: .acquiring) != signal { sched_yield() }
                        for _ in 0..<share { post() }
                    }
                }
                let start = nowNanoseconds()
                state.go.store(signal, ordering: .releasing)
                // Bounded: a lost block ends the child with a failure rather than a wait for the alarm.
                guard state.done.wait(timeout: .now() + .seconds(60)) == .success else {
                    warn("cross-thread child: \(state.delivered) of \(state.target) delivered")
                    exit(1)
                }
                for thread in threads { pthread_join(thread, nil) }
                if index >= warmup { lines.append("value rate \(SwiftCrossThreadBenchmarks.rate(state.target, state.end - start))") }
            }
            lines.append("note \(state.threadNote)")
            finish(lines)
        }
    }

    static func dispatchThroughput(_ parameters: [String: Int]) -> Never {
        let state = Run()
        throughputRounds(parameters, state) {
            DispatchQueue.main.async { state.deliveredOne() }
        }
        dispatchMain()
    }

    static func runLoopThroughput(_ parameters: [String: Int]) -> Never {
        let state = Run()
        // A far timer keeps the run loop from returning at once for want of sources.
        let keepAlive = Timer(timeInterval: 1e6, repeats: false) { _ in }
        RunLoop.main.add(keepAlive, forMode: .default)
        // RunLoop.perform (CFRunLoopPerformBlock) only enqueues; a run loop asleep in poll() runs the
        // block when something else wakes it. Apple's documented remedy: CFRunLoopWakeUp after it.
        guard anchor_ring_cf_wake_main_run_loop() == 0 else {
            warn("cross-thread child: CFRunLoopWakeUp not found")
            exit(71)
        }
        throughputRounds(parameters, state) {
            RunLoop.main.perform { state.deliveredOne() }
            _ = anchor_ring_cf_wake_main_run_loop()
        }
        while true { _ = RunLoop.main.run(mode: .default, before: .distantFuture) }
    }

    final class Latency: @unchecked Sendable {
        let mainThread = pthread_self()
        let samples: UnsafeMutablePointer<Double>
        var count = 0
        var onMainThread = 0
        var threads: Set<UInt> = []
        let delivered = Atomic<Int>(0)

        init(total: Int) { samples = .allocate(capacity: total) }
    }

    static func dispatchLatency(_ parameters: [String: Int]) -> Never {
        let senderCPU = Int32(parameters["sender"] ?? -1)
        let loopCPU = Int32(parameters["loop"] ?? -1)
        let samples = parameters["samples"] ?? 100
        let runs = parameters["runs"] ?? 1
        let warmup = parameters["warmup"] ?? 0
        let pauseNs = parameters["pause"] ?? 100_000
        let total = samples * (warmup + runs)
        // Threads inherit the affinity of their creator: pin before any exists. The main queue's worker
        // threads pin themselves on their first block (after reading the clock).
        _ = anchor_ring_pin_self(loopCPU)
        let state = Latency(total: total)
        _ = xthreadSpawn {
            _ = anchor_ring_pin_self(senderCPU)
            anchor_ring_timer_slack(1000)
            var pause = timespec(tv_sec: 0, tv_nsec: pauseNs)
            for index in 0..<total {
                let sent = nowNanoseconds()
                DispatchQueue.main.async {
                    let now = nowNanoseconds()
                    state.samples[state.count] = Double(now &- sent)
                    state.count += 1
                    let thread = pthread_self()
                    if pthread_equal(thread, state.mainThread) != 0 { state.onMainThread += 1 }
                    state.threads.insert(UInt(thread))
                    anchor_ring_pin_self_once(loopCPU)
                    state.delivered.store(state.count, ordering: .releasing)
                }
                var remaining = timespec()
                while nanosleep(&pause, &remaining) != 0, errno == EINTR { pause = remaining }
                pause = timespec(tv_sec: 0, tv_nsec: pauseNs)
                // The alarm bounds this wait: a lost block ends the child (SIGALRM), reported by the parent.
                while state.delivered.load(ordering: .acquiring) <= index { sched_yield() }
            }
            var lines: [String] = []
            for run in warmup..<(warmup + runs) {
                let slice = Array(UnsafeBufferPointer(start: state.samples + run * samples, count: samples))
                lines.append("value p50 \(percentile(slice, 50) / 1000)")
                lines.append("value p99 \(percentile(slice, 99) / 1000)")
            }
            let threadCount = state.threads.count
            lines.append(state.onMainThread == 0
                ? "note worker thread\(threadCount > 1 ? "s (\(threadCount))" : ""), not the dispatchMain() thread"
                : "note main thread \(state.onMainThread)× of \(total)")
            finish(lines)
        }
        dispatchMain()
    }
}
