import AppLifecycle
import CBenchAnchors
import CBenchPeers
import CLifecycleABI
import Dispatch
import Foundation
@preconcurrency import Glibc
import Synchronization

// Posts from another thread to the main run loop: throughput (1 and 4 producers) and one-way latency
// (sender and loop on one CPU, then on two), beside a C SPSC ring + eventfd, DispatchQueue.main with
// dispatchMain(), and RunLoop.main.perform.
//
// Ours is the real cross-thread path: `center.post(name)` from a producer thread → `loop.enqueuePost`
// → the loop thread's observer. The latency sample carries its send time in the sender field
// (`NotificationSender(rawValue:)`), so posting it allocates nothing.
//
// dispatchMain() never returns, so the Dispatch anchors (and, for symmetry and a clean main thread,
// the RunLoop one) run in a child process: the bench re-executes itself with LC_BENCH_CHILD set and
// reads the figures from the child's stdout. On Linux dispatchMain() exits the main thread and the
// main queue is drained by a worker thread; the child compares pthread_self() in the blocks with the
// thread that called dispatchMain() and the row says where they ran.
enum CrossThreadBenchmarks {
    static let group = "cross-thread"
    static let childVariable = "LC_BENCH_CHILD"

    static func run(_ settings: Settings) -> [Row] {
        if let role = getenv(childVariable) { Child.run(String(cString: role)) }
        var rows: [Row] = []
        rows.append(abiThroughputRow(settings, producers: 1))
        rows.append(abiThroughputRow(settings, producers: 4))
        rows.append(throughputRow(settings, producers: 1))
        rows.append(throughputRow(settings, producers: 4))
        rows += latencyRows(settings, sameCPU: true)
        rows += latencyRows(settings, sameCPU: false)
        return rows
    }

    // MARK: Throughput

    private static func throughputRow(_ settings: Settings, producers: Int) -> Row {
        let runs = settings.quick ? 1 : settings.runs
        let warmup = settings.quick ? 0 : settings.warmup
        let oursCount = settings.quick ? 20_000 : 1_000_000
        let anchorCount = settings.quick ? 20_000 : 200_000
        let runLoopCount = 20_000  // RunLoop.perform manages ~0.15 M/s: keep its runs short

        let ours = summarize(oursThroughput(producers: producers, count: oursCount, runs: runs, warmup: warmup),
                             unit: "M posts/s", note: "loop thread = caller")

        var ringSamples: [Double] = []
        for index in 0..<(warmup + runs) {
            let elapsed = anchor_ring_throughput(Int32(producers), Int32(oursCount))
            if index >= warmup, elapsed > 0 { ringSamples.append(Double(oursCount / producers * producers) / Double(elapsed) * 1e3) }
        }
        let ring = summarize(ringSamples, unit: "M items/s",
                             note: producers > 1 ? "SPSC ring, producers serialised by a mutex" : "SPSC ring")

        var anchors: [(label: String, figure: Figure)] = [("C ring + eventfd", ring)]
        var dispatch: Figure?
        var runLoop: Figure?
        if !settings.quick {
            let parameters = "producers=\(producers) runs=\(runs) warmup=\(warmup)"
            dispatch = childFigure("dispatch-throughput \(parameters) count=\(anchorCount)", key: "rate", unit: "M posts/s")
            runLoop = childFigure("runloop-throughput \(parameters) count=\(runLoopCount)", key: "rate", unit: "M posts/s")
            if let dispatch { anchors.append(("DispatchQueue.main.async + dispatchMain()", dispatch)) }
            if let runLoop { anchors.append(("RunLoop.main.perform + CFRunLoopWakeUp", runLoop)) }
        }
        var ratios = ["\(ratio(ours.median, ring.median)) C ring"]
        if let dispatch { ratios.append("\(ratio(ours.median, dispatch.median)) Dispatch") }
        if let runLoop { ratios.append("\(ratio(ours.median, runLoop.median)) RunLoop.perform") }
        return Row(group: group, name: "Swift API: center.post from \(producers) thread\(producers > 1 ? "s" : "") to the main loop, Swift closure observer: throughput (-c release)",
                   ours: ours, anchors: anchors, target: "≥ 10 M posts/s", met: ours.median >= 10,
                   ratios: ratios.joined(separator: ", "))
    }

    /// Loop-thread state of the throughput case.
    private final class Counter: @unchecked Sendable {
        var delivered = 0
        var target = 0
        var end: UInt64 = 0
        let go = Atomic<Int>(0)
    }

    /// M posts/s per run: `producers` threads post `count` notifications in all; from the start signal
    /// to the last delivery on the loop (this) thread.
    fileprivate static func oursThroughput(producers: Int, count: Int, runs: Int, warmup: Int) -> [Double] {
        guard let loop = try? MainRunLoop() else { return [] }
        let center = AppNotificationCenter(loop: loop)
        let name = NotificationName.didReceiveMemoryWarning
        let counter = Counter()
        let token = center.observe(name) { _ in
            counter.delivered += 1
            if counter.delivered == counter.target {
                counter.end = nowNanoseconds()
                loop.stop()
            }
        }
        defer { center.removeObserver(token) }
        let share = count / producers
        var samples: [Double] = []
        for index in 0..<(warmup + runs) {
            counter.delivered = 0
            counter.target = share * producers
            let signal = index + 1
            let threads = (0..<producers).map { _ in
                xthreadSpawn {
                    while counter.go.load(ordering: .acquiring) != signal { sched_yield() }
                    // A post refused by the queue's per-thread bound is retried once the loop had a turn.
                    for _ in 0..<share { while !center.post(name) { sched_yield() } }
                }
            }
            let start = nowNanoseconds()
            counter.go.store(signal, ordering: .releasing)
            try? loop.run(for: .seconds(60))  // bound: a lost post shows as a missing sample, not a hang
            for thread in threads { pthread_join(thread, nil) }
            if index >= warmup, counter.delivered == counter.target {
                samples.append(Double(counter.target) / Double(counter.end - start) * 1e3)
            }
        }
        return samples
    }

    // MARK: Latency

    private static func latencyRows(_ settings: Settings, sameCPU: Bool) -> [Row] {
        let runs = settings.quick ? 1 : settings.runs
        let warmup = settings.quick ? 0 : 1
        let samples = settings.quick ? 50 : 300
        let pause = 100_000  // ns: long enough for the loop to be asleep in epoll_wait again
        let loopCPU = anchor_ring_allowed_cpu(0)
        let second = anchor_ring_allowed_cpu(1)
        guard loopCPU >= 0, sameCPU || second >= 0 else { return [] }
        let senderCPU = sameCPU ? loopCPU : second
        let placement = sameCPU ? "sender and loop on CPU \(loopCPU)" : "sender on CPU \(senderCPU), loop on CPU \(loopCPU)"

        // Ours and the C ring alternate run by run, so that both see the same background load.
        var ours: [[Double]] = []
        var ring: [[Double]] = []
        var abi: [[Double]] = [], uv: [[Double]] = [], sdevent: [[Double]] = []
        var buffer = [Double](repeating: 0, count: samples)
        var uvBuffer = buffer, sdBuffer = buffer
        let abiRunner = ABILatency()
        for index in 0..<(warmup + runs) {
            let oursRun = oursLatency(senderCPU: senderCPU, loopCPU: loopCPU, samples: samples, runs: 1, warmup: 0,
                                      pauseNs: pause)
            let status = buffer.withUnsafeMutableBufferPointer {
                anchor_ring_latency(senderCPU, loopCPU, Int32(samples), pause, $0.baseAddress)
            }
            let abiRun = abiRunner?.run(senderCPU: senderCPU, loopCPU: loopCPU, samples: samples, pauseNs: pause)
            let uvStatus = uvBuffer.withUnsafeMutableBufferPointer {
                peer_uv_latency(senderCPU, loopCPU, Int32(samples), pause, $0.baseAddress)
            }
            let sdStatus = sdBuffer.withUnsafeMutableBufferPointer {
                peer_sdevent_latency(senderCPU, loopCPU, Int32(samples), pause, $0.baseAddress)
            }
            guard index >= warmup else { continue }
            ours += oursRun
            if status == 0 { ring.append(buffer) }
            if let abiRun { abi.append(abiRun) }
            if uvStatus == 0 { uv.append(uvBuffer) }
            if sdStatus == 0 { sdevent.append(sdBuffer) }
        }
        var dispatch: (p50: Figure, p99: Figure)?
        if !settings.quick {
            let role = "dispatch-latency sender=\(senderCPU) loop=\(loopCPU) samples=\(samples) runs=\(runs) warmup=\(warmup) pause=\(pause)"
            if let result = runChild(role), let p50 = result.values["p50"], let p99 = result.values["p99"] {
                let note = result.notes.joined(separator: "; ")
                dispatch = (summarize(p50, unit: "µs", note: note), summarize(p99, unit: "µs", note: note))
            }
        }
        var rows: [Row] = []
        for (label, p) in [("p50", 50.0), ("p99", 99.0)] {
            let abiFigure = summarize(abi.map { percentile($0, p) / 1000 }, unit: "µs", note: "lc_app_run on the caller, pinned")
            let ringFigure = summarize(ring.map { percentile($0, p) / 1000 }, unit: "µs", note: "consumer thread, pinned")
            let uvFigure = summarize(uv.map { percentile($0, p) / 1000 }, unit: "µs", note: "uv_run on the caller, pinned")
            let sdFigure = summarize(sdevent.map { percentile($0, p) / 1000 }, unit: "µs", note: "sd_event_loop on the caller, pinned")
            rows.append(Row(group: group, name: "C ABI: lc_app_post_name one-way latency \(label), \(placement) (-c release)",
                            ours: abiFigure,
                            anchors: [("C ring + eventfd + epoll", ringFigure),
                                      ("libuv uv_async_send (libuv1 from Debian)", uvFigure),
                                      ("sd-event + eventfd (libsystemd from Debian)", sdFigure)],
                            target: "≤ 1.2× C ring",
                            met: settings.quick || abi.isEmpty ? nil : ringFigure.median > 0 && abiFigure.median <= 1.2 * ringFigure.median,
                            ratios: "\(ratio(abiFigure.median, ringFigure.median)) C ring, \(ratio(abiFigure.median, uvFigure.median)) libuv, \(ratio(abiFigure.median, sdFigure.median)) sd-event"))
        }
        for (label, p) in [("p50", 50.0), ("p99", 99.0)] {
            let oursFigure = summarize(ours.map { percentile($0, p) / 1000 }, unit: "µs", note: "loop thread = caller, pinned")
            let ringFigure = summarize(ring.map { percentile($0, p) / 1000 }, unit: "µs", note: "consumer thread, pinned")
            var anchors: [(label: String, figure: Figure)] = [("C ring + eventfd + epoll", ringFigure)]
            var ratios = ["\(ratio(oursFigure.median, ringFigure.median)) C ring"]
            if let dispatch {
                let figure = p == 50 ? dispatch.p50 : dispatch.p99
                anchors.append(("DispatchQueue.main.async + dispatchMain()", figure))
                ratios.append("\(ratio(oursFigure.median, figure.median)) Dispatch")
            }
            rows.append(Row(group: group, name: "Swift API: center.post one-way latency \(label), \(placement) (-c release)", ours: oursFigure,
                            anchors: anchors, target: "≤ 1.2× C ring",
                            met: ringFigure.median > 0 && oursFigure.median <= 1.2 * ringFigure.median,
                            ratios: ratios.joined(separator: ", ")))
        }
        return rows
    }

    /// Loop-thread state of the latency case; `delivered` is what the sender waits on.
    private final class LatencyLog: @unchecked Sendable {
        let samples: UnsafeMutablePointer<Double>
        var count = 0
        let total: Int
        let delivered = Atomic<Int>(0)
        let ready = Atomic<Bool>(false)

        init(total: Int) {
            self.total = total
            samples = .allocate(capacity: total)
        }

        deinit { samples.deallocate() }
    }

    /// Per run, the one-way latencies (ns) of `samples` ping-pong posts; the loop runs on this thread.
    fileprivate static func oursLatency(senderCPU: Int32, loopCPU: Int32, samples: Int, runs: Int, warmup: Int,
                                    pauseNs: Int) -> [[Double]]
    {
        let saved = anchor_ring_affinity_save()
        defer { anchor_ring_affinity_restore(saved) }
        _ = anchor_ring_pin_self(loopCPU)
        guard let loop = try? MainRunLoop() else { return [] }
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
                center.post(name, sender: NotificationSender(rawValue: UInt(nowNanoseconds())))
                var remaining = timespec()
                while nanosleep(&pause, &remaining) != 0, errno == EINTR { pause = remaining }
                pause = timespec(tv_sec: 0, tv_nsec: pauseNs)
                while log.delivered.load(ordering: .acquiring) <= index { sched_yield() }
            }
        }
        log.ready.store(true, ordering: .releasing)
        try? loop.run()  // the observer stops it after the last sample
        pthread_join(sender, nil)
        guard log.count == total else { return [] }
        return (warmup..<(warmup + runs)).map { run in
            Array(UnsafeBufferPointer(start: log.samples + run * samples, count: samples))
        }
    }

    // MARK: Child processes

    /// What a child printed: `value KEY X` lines by key, and `note TEXT` lines.
    private struct ChildResult {
        var values: [String: [Double]] = [:]
        var notes: [String] = []
    }

    private static func childFigure(_ role: String, key: String, unit: String) -> Figure? {
        guard let result = runChild(role), let values = result.values[key], !values.isEmpty else { return nil }
        return summarize(values, unit: unit, note: result.notes.isEmpty ? nil : result.notes.joined(separator: "; "))
    }

    /// Runs this executable again as `role` and parses its stdout; nil (with a message) when it fails.
    private static func runChild(_ role: String) -> ChildResult? {
        var path = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &path, path.count - 1)
        guard length > 0 else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: String(decoding: path[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self))
        process.arguments = ["--filter", group]
        var environment = ProcessInfo.processInfo.environment
        environment[childVariable] = role
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            writeError("cross-thread: cannot start child '\(role)': \(error)\n")
            return nil
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            writeError("cross-thread: child '\(role)' failed (status \(process.terminationStatus))\n")
            return nil
        }
        var result = ChildResult()
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
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

// MARK: - Threads

/// Writes to fd 2 (Foundation's re-exported `stderr` is not concurrency-safe in Swift 6 mode).
private func writeError(_ text: String) {
    var text = text
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

final class XThreadBody {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// Starts a joinable pthread running `body`.
func xthreadSpawn(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    let context = Unmanaged.passRetained(XThreadBody(body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(&thread, nil, { raw in
        Unmanaged<XThreadBody>.fromOpaque(raw!).takeRetainedValue().body()
        return nil
    }, context)
    precondition(status == 0, "pthread_create failed: \(status)")
    return thread
}

// MARK: - The child side

/// The anchors that run in a child process (dispatchMain() never returns). Prints `value KEY X` and
/// `note TEXT` lines, then exits.
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
            // Not used by the parent: our case alone, for `valgrind --tool=callgrind` (instructions per post).
            let rates = CrossThreadBenchmarks.oursThroughput(
                producers: parameters["producers"] ?? 1, count: parameters["count"] ?? 100_000,
                runs: parameters["runs"] ?? 1, warmup: parameters["warmup"] ?? 0)
            finish(rates.map { "value rate \($0)" })
        case "ours-latency"?, "ring-latency"?:
            // Not used by the parent either: one latency configuration alone, for callgrind / perf stat.
            let sender = Int32(parameters["sender"] ?? 0), loop = Int32(parameters["loop"] ?? 0)
            let samples = parameters["samples"] ?? 1000
            var values: [Double]
            if words.first == "ours-latency" {
                values = CrossThreadBenchmarks.oursLatency(senderCPU: sender, loopCPU: loop, samples: samples, runs: 1,
                                                           warmup: 0, pauseNs: 100_000).first ?? []
            } else {
                values = [Double](repeating: 0, count: samples)
                _ = values.withUnsafeMutableBufferPointer {
                    anchor_ring_latency(sender, loop, Int32(samples), 100_000, $0.baseAddress)
                }
            }
            var lines = [0.0, 10, 25, 50, 75, 90, 99].map { "value p\(Int($0)) \(percentile(values, $0))" }
            if parameters["dump"] == 1 { lines += values.map { "sample \(Int($0))" } }
            finish(lines)
        default:
            writeError("lifecycle-bench: unknown child role '\(role)'\n")
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
        @inline(__always) func delivered1() {
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

    /// Drives `runs` rounds from a coordinating thread: `producers` threads each call `post` share times.
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
                state.done.wait()
                for thread in threads { pthread_join(thread, nil) }
                if index >= warmup { lines.append("value rate \(Double(state.target) / Double(state.end - start) * 1e3)") }
            }
            lines.append("note \(state.threadNote)")
            finish(lines)
        }
    }

    static func dispatchThroughput(_ parameters: [String: Int]) -> Never {
        let state = Run()
        throughputRounds(parameters, state) {
            DispatchQueue.main.async { state.delivered1() }
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
            writeError("cross-thread: CFRunLoopWakeUp not found\n")
            exit(71)
        }
        throughputRounds(parameters, state) {
            RunLoop.main.perform { state.delivered1() }
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
