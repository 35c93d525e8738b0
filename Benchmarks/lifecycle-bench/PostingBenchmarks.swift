import AppLifecycle
import CBenchAnchors
import CBenchPeers
import CLifecycleABI
import CLifecycleSystem
import CoreMetrics
import Foundation
import LifecycleC

// Posting on the main thread: our notification center (C observers through the C ABI's function
// pointers, and Swift closures) beside Foundation's NotificationCenter, a plain C loop over function
// pointers and a plain Swift loop over closures, measured in the same run and in alternation.
//
// Instruction counts (callgrind): in a normal (not --quick) run the group re-runs itself once under
// `valgrind --tool=callgrind` with LC_BENCH_CALLGRIND=1, which runs every configuration of
// `Callgrind.configurations` once between two calls of `anchor_post_callgrind_mark`; valgrind's
// `--dump-before=anchor_post_callgrind_mark` splits the profile there, so each part holds exactly one
// configuration's posts (instructions/post = part total minus an empty part, over the posts).
// The counts alone, and the profile parts kept for callgrind_annotate:
//
//   LC_BENCH_CALLGRIND=report LC_BENCH_CALLGRIND_KEEP=/tmp/cg .build/release/lifecycle-bench --filter posting
//   LC_BENCH_METRICS=1 LC_BENCH_CALLGRIND=report …   the same counts with a metrics backend bootstrapped
//   callgrind_annotate --inclusive=yes /tmp/cg/callgrind.out.5     # part 2i+3 is configuration i

enum PostingBenchmarks {
    static let observerCounts = [1, 10, 100, 1_000]
    static let otherNames = 1_000

    static func run(_ settings: Settings) -> [Row] {
        switch ProcessInfo.processInfo.environment[Callgrind.environmentKey] {
        case "1"?:
            // LC_BENCH_METRICS=1: a metrics backend is bootstrapped (one that keeps nothing, but is not
            // swift-metrics' no-op), so every application of the run holds the engine's metrics.
            if ProcessInfo.processInfo.environment["LC_BENCH_METRICS"] == "1" { MetricsSystem.bootstrap(MultiplexMetricsHandler(factories: [])) }
            Callgrind.workload()
            return []
        case "report"?:
            Callgrind.report()
            return []
        default: break
        }
        let fixtures = PostFixtures()
        var rows: [Row] = []
        let instructions = settings.quick ? nil : Callgrind.instructionsPerPost()
        // "Identical in every process": the C-ABI post counted again in a second, separate process.
        let again = settings.quick || instructions == nil ? nil : Callgrind.instructionsPerPost(only: ["abiname1"])
        rows += abiRows(settings, fixtures, instructions, again)
        rows += postRows(settings, fixtures, instructions)
        rows += userInfoRows(settings, fixtures, instructions)
        rows += addRemoveRows(settings, fixtures, instructions)
        rows += memoryRows(fixtures)
        rows += instructionRows(instructions)
        return rows
    }

    // MARK: Cases 1 and 2: post to N observers, with and without observers of other names

    static func postRows(_ settings: Settings, _ fixtures: PostFixtures, _ instructions: [String: Double]?) -> [Row] {
        var rows: [Row] = []
        var withOthers: [Row] = []
        for n in observerCounts {
            let set = fixtures.set(n)
            let figures = measureTogether(settings, [
                { k in for _ in 0..<k { set.centerA.post(set.cName) } },
                { k in for _ in 0..<k { _ = lc_app_post(fixtures.appA, set.cString, nil, nil) } },
                { k in for _ in 0..<k { set.centerA.post(set.swiftName) } },
                { k in blackHole(anchor_post_c_loop(set.fns, set.ctxs, n, k)) },
                { k in for _ in 0..<k { set.foundationA.post(name: set.foundationName, object: nil) } },
                { k in for _ in 0..<k { set.centerB.post(set.cName) } },
                { k in for _ in 0..<k { set.foundationB.post(name: set.foundationName, object: nil) } },
                { k in set.swiftLoop(k) },
            ])
            let (cPath, cABI, swift, cLoop) = (figures[0], figures[1], figures[2], figures[3])
            let (foundation, cPathOthers, foundationOthers, swiftLoop) = (figures[4], figures[5], figures[6], figures[7])
            set.verifyCounts()

            func row(_ label: String, _ ours: Figure, instructionsKey: String, strictTarget: Bool = true,
                     swiftAnchor: Bool = false) -> Row
            {
                let vsFoundation = foundation.median / ours.median
                var target = "≥ 25× faster than Foundation"
                var met = vsFoundation >= 25
                if n == 1 {
                    target = "≤ 30 ns; " + target
                    met = met && ours.median <= 30
                }
                if n == 1_000 {
                    target = "≤ 2× C loop; " + target
                    met = met && ours.median <= 2 * cLoop.median
                }
                var anchors: [(label: String, figure: Figure)] = [("plain C loop", cLoop), ("Foundation NotificationCenter", foundation)]
                var text = "\(ratio(ours.median, cLoop.median)) C loop, \(ratio(foundation.median, ours.median)) faster than Foundation"
                if swiftAnchor {
                    anchors.append(("plain Swift loop over \(n) closure\(n == 1 ? "" : "s")", swiftLoop))
                    text += ", \(ratio(ours.median, swiftLoop.median)) plain Swift loop"
                }
                return Row(group: "posting", name: "\(label), \(n) observer\(n == 1 ? "" : "s") (-c release)", ours: ours,
                           anchors: anchors,
                           target: strictTarget ? target : "– (informative: \(target))", met: strictTarget ? met : nil,
                           ratios: text,
                           instructions: instructions?[instructionsKey])
            }
            rows.append(row("Swift API: center.post(interned name) to C observers", cPath, instructionsKey: "c\(n)"))
            rows.append(row("C ABI: lc_app_post(name string) to C observers", cABI, instructionsKey: "abi\(n)", strictTarget: false))
            rows.append(row("Swift API: center.post to Swift closures", swift, instructionsKey: "swift\(n)", swiftAnchor: true))

            // Case 2: the same names, in centers that also hold 1,000 observers of 1,000 other names.
            let delta = cPathOthers.median - cPath.median
            let foundationDelta = foundationOthers.median - foundation.median
            // "No measurable change": the same instruction count (callgrind) when measured; otherwise
            // within the run-to-run range of the case without them, or within 5%.
            var within = cPathOthers.median <= max(cPath.max, cPath.median * 1.05)
                && cPathOthers.median >= min(cPath.min, cPath.median * 0.95)
            let instrWith = instructions?["c\(n)-others"], instrWithout = instructions?["c\(n)"]
            var instrText = ""
            if let instrWith, let instrWithout {
                within = abs(instrWith - instrWithout) <= 0.01 * instrWithout
                instrText = "; instructions/post \(Figure.format(instrWith)) vs \(Figure.format(instrWithout))"
                if let fWith = instructions?["foundation\(n)-others"], let fWithout = instructions?["foundation\(n)"] {
                    instrText += " (Foundation \(Figure.format(fWith)) vs \(Figure.format(fWithout)))"
                }
            }
            withOthers.append(Row(
                group: "posting", name: "Swift API: center.post to \(n) C observer\(n == 1 ? "" : "s") + \(otherNames) observers of other names (-c release)",
                ours: cPathOthers,
                anchors: [("ours without the others", cPath), ("Foundation with the others", foundationOthers),
                          ("Foundation without", foundation)],
                target: "no measurable change from without (same instructions/post)", met: within,
                ratios: "Δ ours \(signed(delta)) ns (\(signed(100 * delta / cPath.median))%), Δ Foundation \(signed(foundationDelta)) ns (\(signed(100 * foundationDelta / foundation.median))%)\(instrText)",
                instructions: instrWith))
        }
        return rows + withOthers
    }

    // MARK: Case 3: a 3-entry userInfo, one observer reading one key

    static func userInfoRows(_ settings: Settings, _ fixtures: PostFixtures, _ instructions: [String: Double]?) -> [Row] {
        let f = UserInfoFixture(fixtures)
        defer { f.remove() }
        let center = f.center, swiftName = f.swiftName, cName = f.cName, counter = f.counter
        let foundation = f.foundation, foundationName = f.foundationName
        let prebuilt = f.prebuilt, foundationPrebuilt = f.foundationPrebuilt

        let figures = measureTogether(settings, [
            { k in for _ in 0..<k { center.post(swiftName, userInfo: ["s": "hello", "i": 42, "b": true]) } },
            { k in
                for _ in 0..<k { foundation.post(name: foundationName, object: nil, userInfo: ["s": "hello", "i": 42, "b": true]) }
            },
            { k in for _ in 0..<k { center.post(swiftName, userInfo: prebuilt) } },
            { k in for _ in 0..<k { center.post(cName, userInfo: prebuilt) } },
            { k in for _ in 0..<k { foundation.post(name: foundationName, object: nil, userInfo: foundationPrebuilt) } },
        ])
        let (built, foundationBuilt, ready, cReady, foundationReady) = (figures[0], figures[1], figures[2], figures[3], figures[4])
        let before = counter.value
        center.post(swiftName, userInfo: prebuilt)
        center.post(cName, userInfo: prebuilt)
        foundation.post(name: foundationName, object: nil, userInfo: foundationPrebuilt)
        if counter.value - before != 3 * 42 { PostingBenchmarks.warn("posting: userInfo observers did not all read the key") }

        func row(_ label: String, _ ours: Figure, _ anchorLabel: String, _ anchor: Figure, key: String, anchorKey: String,
                 informative: Bool = false) -> Row
        {
            let r = anchor.median / ours.median
            var text = "\(ratio(anchor.median, ours.median)) faster than Foundation"
            if let mine = instructions?[key], let theirs = instructions?[anchorKey] {
                text += "; instructions/post \(Figure.format(mine)) vs \(Figure.format(theirs)) (\(ratio(theirs, mine)))"
            }
            return Row(group: "posting", name: "\(label): post with a 3-entry userInfo, 1 observer reading one key (-c release)", ours: ours,
                       anchors: [(anchorLabel, anchor)],
                       target: informative ? "– (informative: ≥ 10× faster than Foundation)" : "≥ 10× faster than Foundation",
                       met: informative ? nil : r >= 10, ratios: text, instructions: instructions?[key])
        }
        return [
            row("Swift API, Swift closure", ready, "Foundation, [AnyHashable: Any]", foundationReady, key: "info-swift1",
                anchorKey: "info-foundation1"),
            row("Swift API, Swift closure, UserInfo built at each post", built, "Foundation, dictionary built at each post", foundationBuilt,
                key: "info-built-swift1", anchorKey: "info-built-foundation1", informative: true),
            row("Swift API post (center.post, prebuilt UserInfo), C observer (lc_dict_get_int)", cReady, "Foundation, [AnyHashable: Any]", foundationReady, key: "info-c1",
                anchorKey: "info-foundation1", informative: true),
        ]
    }

    // MARK: Case 4: add + remove an observer

    static func addRemoveRows(_ settings: Settings, _ fixtures: PostFixtures, _ instructions: [String: Double]?) -> [Row] {
        let center = fixtures.centerA
        let name = fixtures.name("com.example.bench.post.addremove")
        let cString = strdup("com.example.bench.post.addremove")!
        defer { free(cString) }
        let counter = Counter()
        let foundation = NotificationCenter()
        let foundationName = Notification.Name("bench.post.addremove")

        let figures = measureTogether(settings, [
            { k in for _ in 0..<k { center.removeObserver(center.observe(name) { _ in counter.add(1) }) } },
            { k in
                for _ in 0..<k { center.removeObserver(center.observeRaw(name, function: PostFixtures.rawCount, context: counter.context)) }
            },
            { k in
                var token: lc_observer_token = 0
                for _ in 0..<k {
                    _ = lc_app_observe(fixtures.appA, cString, nil, PostFixtures.count, counter.context, &token)
                    _ = lc_app_remove_observer(fixtures.appA, token)
                }
            },
            { k in
                for _ in 0..<k {
                    foundation.removeObserver(foundation.addObserver(forName: foundationName, object: nil, queue: nil) { _ in counter.add(1) })
                }
            },
        ])
        let (swift, raw, cABI, reference) = (figures[0], figures[1], figures[2], figures[3])
        if center.observerCount(for: name) != 0 { PostingBenchmarks.warn("posting: add + remove left observers behind") }

        func row(_ label: String, _ ours: Figure, key: String?, informative: Bool = false) -> Row {
            var text = "\(ratio(reference.median, ours.median)) faster than Foundation"
            if let key, let mine = instructions?[key], let theirs = instructions?["addremove-foundation"] {
                text += "; instructions \(Figure.format(mine)) vs \(Figure.format(theirs)) (\(ratio(theirs, mine)))"
            }
            return Row(group: "posting", name: "add + remove an observer: \(label) (-c release)", ours: ours,
                       anchors: [("Foundation addObserver(forName:…) + removeObserver", reference)],
                       target: informative ? "– (informative: ≥ 5× faster than Foundation)" : "≥ 5× faster than Foundation",
                       met: informative ? nil : reference.median / ours.median >= 5, ratios: text,
                       instructions: key.flatMap { instructions?[$0] })
        }
        return [row("Swift API, Swift closure (observe / removeObserver)", swift, key: "addremove-swift"),
                row("Swift API, raw C function (observeRaw / removeObserver)", raw, key: "addremove-raw"),
                row("C ABI (lc_app_observe / lc_app_remove_observer, name string)", cABI, key: nil, informative: true)]
    }

    // MARK: Case 5: memory per observer

    static func memoryRows(_ fixtures: PostFixtures) -> [Row] {
        let count = 10_000
        let center = fixtures.centerA
        let counter = Counter()

        var tokens: [ObserverToken] = []
        tokens.reserveCapacity(count)
        let swiftName = fixtures.name("com.example.bench.post.memory.swift")
        let swift = heapDelta {
            for _ in 0..<count { tokens.append(center.observe(swiftName) { _ in counter.add(1) }) }
        }
        for token in tokens { center.removeObserver(token) }
        tokens.removeAll(keepingCapacity: true)

        let rawName = fixtures.name("com.example.bench.post.memory.raw")
        let raw = heapDelta {
            for _ in 0..<count { tokens.append(center.observeRaw(rawName, function: PostFixtures.rawCount, context: counter.context)) }
        }
        for token in tokens { center.removeObserver(token) }

        let foundation = NotificationCenter()
        let foundationName = Notification.Name("bench.post.memory")
        var foundationTokens: [any NSObjectProtocol] = []
        foundationTokens.reserveCapacity(count)
        let reference = heapDelta {
            for _ in 0..<count {
                foundationTokens.append(foundation.addObserver(forName: foundationName, object: nil, queue: nil) { _ in counter.add(1) })
            }
        }
        for token in foundationTokens { foundation.removeObserver(token) }

        let perSwift = Double(swift) / Double(count), perRaw = Double(raw) / Double(count)
        let perFoundation = Double(reference) / Double(count)
        let anchor = Figure.single(perFoundation, "B", note: "Foundation addObserver(forName:…)")
        func row(_ label: String, _ ours: Double) -> Row {
            Row(group: "posting", name: "memory per observer (\(count) observers of one name): Swift API, \(label)", ours: .single(ours, "B"),
                anchors: [("Foundation", anchor)], target: "≤ Foundation", met: ours <= perFoundation,
                ratios: "\(ratio(ours, perFoundation)) Foundation (malloc in use, mallinfo2)")
        }
        return [row("Swift closures", perSwift), row("raw C functions", perRaw)]
    }

    /// Heap bytes `body` leaves allocated.
    static func heapDelta(_ body: () -> Void) -> Int {
        let before = anchor_post_heap_in_use()
        body()
        return Int(anchor_post_heap_in_use()) - Int(before)
    }

    // MARK: Case 6: instructions per post (callgrind)

    static func instructionRows(_ instructions: [String: Double]?) -> [Row] {
        guard let instructions else { return [] }
        var rows: [Row] = []
        for n in [1, 1_000] {
            guard let ours = instructions["c\(n)"], let cLoop = instructions["loop\(n)"] else { continue }
            var anchors: [(label: String, figure: Figure)] = [("plain C loop", .single(cLoop, "instr"))]
            if let others = instructions["c\(n)-others"] { anchors.append(("ours + 1,000 observers of other names", .single(others, "instr"))) }
            if let swift = instructions["swift\(n)"] { anchors.append(("ours, Swift closures", .single(swift, "instr"))) }
            if let loop = instructions["swiftloop\(n)"] { anchors.append(("plain Swift loop over closures", .single(loop, "instr"))) }
            if let abi = instructions["abi\(n)"] { anchors.append(("ours, lc_app_post(name string)", .single(abi, "instr"))) }
            if let foundation = instructions["foundation\(n)"] { anchors.append(("Foundation NotificationCenter", .single(foundation, "instr"))) }
            rows.append(Row(group: "posting", name: "instructions per post, \(n) observer\(n == 1 ? "" : "s"): Swift API center.post to C observers (callgrind, -c release)",
                            ours: .single(ours, "instr"), anchors: anchors, target: "–", met: nil,
                            ratios: "\(ratio(ours, cLoop)) C loop, \(Figure.format(ours / Double(n))) per observer",
                            instructions: ours))
        }
        return rows
    }

    // MARK: Helpers

    /// A line on standard error.
    static func warn(_ message: String) {
        let line = message + "\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }

    /// Measures several bodies (ours and its anchors) in alternation, one run of each in turn, so
    /// that a change in machine load (two shared cores) hits all of them alike. Each body performs
    /// `k` operations per call, `k` calibrated per body; returns ns per operation, in order.
    static func measureTogether(_ settings: Settings, _ bodies: [(Int) -> Void]) -> [Figure] {
        let runs = settings.quick ? 1 : settings.runs
        let warmup = settings.quick ? 0 : settings.warmup
        let counts = bodies.map { calibrate(settings, $0) }
        for _ in 0..<warmup { for (body, k) in zip(bodies, counts) { body(k) } }
        var samples = [[Double]](repeating: [], count: bodies.count)
        for _ in 0..<runs {
            for (index, (body, k)) in zip(bodies, counts).enumerated() {
                let start = nowNanoseconds()
                body(k)
                samples[index].append(Double(nowNanoseconds() - start) / Double(k))
            }
        }
        return samples.map { summarize($0, unit: "ns") }
    }

    /// An operation count for which one call of `body` takes a few milliseconds (less in `--quick`).
    static func calibrate(_ settings: Settings, _ body: (Int) -> Void) -> Int {
        let target: UInt64 = settings.quick ? 150_000 : 4_000_000
        var k = 1
        while true {
            let start = nowNanoseconds()
            body(k)
            let elapsed = max(nowNanoseconds() - start, 1)
            if elapsed >= target / 16 || k >= 1 << 28 { return max(1, Int(Double(k) * Double(target) / Double(elapsed))) }
            k *= 4
        }
    }

    static func signed(_ x: Double) -> String { (x >= 0 ? "+" : "−") + Figure.format(abs(x)) }
}

extension PostingBenchmarks {

/// A counter observers bump: through its raw pointer (C observers) or a method (closures).
final class Counter: @unchecked Sendable {
    let pointer = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
    init() { pointer.initialize(to: 0) }
    deinit { pointer.deallocate() }
    var context: UnsafeMutableRawPointer { UnsafeMutableRawPointer(pointer) }
    var value: UInt64 { pointer.pointee }
    @inline(__always) func add(_ x: UInt64) { pointer.pointee &+= x }
}

/// One observer of a userInfo key each way: a Swift closure, a C function (lc_dict_get_int), Foundation.
final class UserInfoFixture {
    let center: AppNotificationCenter
    let swiftName: NotificationName
    let cName: NotificationName
    let counter = Counter()
    let foundation = NotificationCenter()
    let foundationName = Notification.Name("bench.post.userinfo")
    let prebuilt: UserInfo = ["s": "hello", "i": 42, "b": true]
    let foundationPrebuilt: [AnyHashable: Any] = ["s": "hello", "i": 42, "b": true]
    private var tokens: [ObserverToken] = []
    private var foundationToken: (any NSObjectProtocol)?

    init(_ fixtures: PostFixtures) {
        center = fixtures.centerA
        swiftName = fixtures.name("com.example.bench.post.userinfo.swift")
        cName = fixtures.name("com.example.bench.post.userinfo.c")
        let counter = counter
        tokens.append(center.observe(swiftName) { notification in
            if case .int(let i)? = notification.userInfo["i"] { counter.add(UInt64(i)) }
        })
        tokens.append(center.observeRaw(cName, function: PostFixtures.readInt, context: counter.context))
        foundationToken = foundation.addObserver(forName: foundationName, object: nil, queue: nil) { notification in
            if let i = notification.userInfo?["i"] as? Int { counter.add(UInt64(i)) }
        }
    }

    func remove() {
        for token in tokens { center.removeObserver(token) }
        tokens.removeAll()
        if let foundationToken { foundation.removeObserver(foundationToken) }
        foundationToken = nil
    }
}

/// Everything the posting cases need: two applications through the C ABI (the second with 1,000
/// observers of other names), two Foundation centers likewise, and per N the registered observers.
final class PostFixtures {
    let appA: OpaquePointer
    let appB: OpaquePointer
    let centerA: AppNotificationCenter
    let centerB: AppNotificationCenter
    private var sets: [Int: PostSet] = [:]
    private let othersA = NotificationCenter()  // keeps Foundation's "other names" observers alive with foundationB
    let foundationB = NotificationCenter()
    private var foundationOtherTokens: [any NSObjectProtocol] = []
    let otherCounter = Counter()

    static let count: lc_observer_fn = unsafeBitCast(anchor_post_count as anchor_post_fn, to: lc_observer_fn.self)
    static let rawCount: RawObserverFunction = anchor_post_count
    /// A C-convention observer reading key "i" through the C ABI's dictionary accessor.
    static let readInt: RawObserverFunction = { record, context in
        guard let record, let context else { return }
        var value: Int64 = 0
        let userInfo = record.assumingMemoryBound(to: lc_notification_t.self).pointee.user_info
        if lc_dict_get_int(userInfo, "i", &value) == lc_status(LC_OK) {
            context.assumingMemoryBound(to: UInt64.self).pointee &+= UInt64(value)
        }
    }

    init() {
        func makeApp() -> OpaquePointer {
            var app: OpaquePointer?
            guard lc_app_create(nil, &app) == lc_status(LC_OK), let app else { fatalError("posting: lc_app_create failed") }
            guard lc_app_perform_simple(app, lc_action_kind(LC_ACTION_LAUNCH)) == lc_status(LC_OK) else {
                fatalError("posting: launch failed: \(lc_last_error_message().map { String(cString: $0) } ?? "?")")
            }
            return app
        }
        appA = makeApp()
        appB = makeApp()
        centerA = AppHandle.from(appA).app.center
        centerB = AppHandle.from(appB).app.center
        for i in 0..<PostingBenchmarks.otherNames {
            let other = "com.example.bench.post.other\(i)"
            _ = other.withCString { name in lc_app_observe(appB, name, nil, Self.count, otherCounter.context, nil) }
            let counter = otherCounter
            foundationOtherTokens.append(foundationB.addObserver(forName: Notification.Name(other), object: nil, queue: nil) { _ in
                counter.add(1)
            })
        }
        _ = othersA
    }

    func name(_ string: String) -> NotificationName {
        do { return try NotificationName(string) } catch { fatalError("posting: \(error)") }
    }

    func set(_ n: Int) -> PostSet {
        if let existing = sets[n] { return existing }
        let set = PostSet(n, self)
        sets[n] = set
        return set
    }
}

/// N observers of one name, registered each way.
final class PostSet {
    let n: Int
    let centerA: AppNotificationCenter
    let centerB: AppNotificationCenter
    /// The C path's name, interned, and as a C string (static storage) for lc_app_post.
    let cName: NotificationName
    let cString: UnsafeMutablePointer<CChar>
    let swiftName: NotificationName
    let foundationA = NotificationCenter()
    let foundationB: NotificationCenter
    let foundationName: Notification.Name
    private var foundationTokens: [any NSObjectProtocol] = []
    let fns: UnsafeMutablePointer<anchor_post_fn?>
    let ctxs: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    /// One counter per way, so each can be checked.
    /// The plain Swift loop's closures: the same body as the Swift observers'.
    let closures: [(AppNotification) -> Void]
    let cCounter = Counter(), cCounterB = Counter(), swiftCounter = Counter(), loopCounter = Counter(), swiftLoopCounter = Counter()
    let foundationCounter = Counter(), foundationCounterB = Counter()

    init(_ n: Int, _ fixtures: PostFixtures) {
        self.n = n
        centerA = fixtures.centerA
        centerB = fixtures.centerB
        foundationB = fixtures.foundationB
        let string = "com.example.bench.post.c\(n)"
        cName = fixtures.name(string)
        cString = strdup(string)!
        swiftName = fixtures.name("com.example.bench.post.swift\(n)")
        foundationName = Notification.Name("bench.post.\(n)")
        fns = .allocate(capacity: n)
        ctxs = .allocate(capacity: n)
        let swiftCounter = swiftCounter, foundationCounter = foundationCounter, foundationCounterB = foundationCounterB
        let swiftLoopCounter = swiftLoopCounter
        closures = (0..<n).map { _ in { _ in swiftLoopCounter.add(1) } }
        for i in 0..<n {
            _ = lc_app_observe(fixtures.appA, cString, nil, PostFixtures.count, cCounter.context, nil)
            _ = lc_app_observe(fixtures.appB, cString, nil, PostFixtures.count, cCounterB.context, nil)
            centerA.observe(swiftName) { _ in swiftCounter.add(1) }
            foundationTokens.append(foundationA.addObserver(forName: foundationName, object: nil, queue: nil) { _ in
                foundationCounter.add(1)
            })
            foundationTokens.append(foundationB.addObserver(forName: foundationName, object: nil, queue: nil) { _ in
                foundationCounterB.add(1)
            })
            fns[i] = anchor_post_count
            ctxs[i] = loopCounter.context
        }
        verifyCounts()
    }

    /// The plain Swift anchor: `k` times, builds the notification once and calls the `n` closures in order.
    @inline(never)
    func swiftLoop(_ k: Int) {
        for _ in 0..<k {
            let notification = AppNotification(name: swiftName)
            closures.withUnsafeBufferPointer { buffer in
                for closure in buffer { closure(notification) }
            }
        }
    }

    /// One post each way must reach exactly N observers (catches held delivery, a wrong name...).
    func verifyCounts() {
        let counters = [cCounter, cCounterB, swiftCounter, loopCounter, swiftLoopCounter, foundationCounter, foundationCounterB]
        let before = counters.map(\.value)
        centerA.post(cName)
        centerB.post(cName)
        centerA.post(swiftName)
        blackHole(anchor_post_c_loop(fns, ctxs, n, 1))
        swiftLoop(1)
        foundationA.post(name: foundationName, object: nil)
        foundationB.post(name: foundationName, object: nil)
        for (counter, old) in zip(counters, before) where counter.value - old != UInt64(n) {
            PostingBenchmarks.warn("posting: a post to \(n) observers reached \(counter.value - old)")
        }
    }
}

// MARK: Callgrind

/// Instruction counts: the bench re-runs itself under callgrind with LC_BENCH_CALLGRIND=1, which runs
/// each configuration's posts once between two calls of `anchor_post_callgrind_mark`; valgrind's
/// `--dump-before=anchor_post_callgrind_mark` writes one profile part per call, so the part ending at
/// a configuration's second mark holds exactly its posts. An empty configuration gives the overhead.
enum Callgrind {
    static let environmentKey = "LC_BENCH_CALLGRIND"

    /// What one configuration runs: `posts` posts (or add + remove pairs) of one kind to `n` observers.
    enum Kind {
        case empty, ours, oursWithOthers, swift, cABI, cLoop, swiftLoop, foundation, foundationWithOthers
        case userInfoSwift, userInfoC, userInfoFoundation, userInfoBuiltSwift, userInfoBuiltFoundation
        case addRemoveSwift, addRemoveRaw, addRemoveFoundation
        /// The C ABI: lc_app_post_name to n C observers; to 1 among 100,000 of other names; with a userInfo.
        case abiName, abiNameCrowd, abiInfo
        /// The peers: `posts` emits to n handlers, and the same call with no emit (its set-up and
        /// tear-down, subtracted: the "-base" configuration).
        case glib, glibBase, sigc, sigcBase
    }

    /// The configurations, in run order. Posts are chosen so that the whole run takes a second or
    /// two under valgrind; each figure is the instructions of the posts divided by their number.
    static let configurations: [(key: String, n: Int, posts: Int, kind: Kind)] = {
        var list: [(key: String, n: Int, posts: Int, kind: Kind)] = [("empty", 1, 0, .empty)]
        for n in PostingBenchmarks.observerCounts {
            let posts = 20_000 / n + 50
            list += [("abiname\(n)", n, posts, .abiName), ("glib\(n)-base", n, 1, .glibBase), ("glib\(n)", n, posts / 4, .glib),
                     ("sigc\(n)-base", n, 1, .sigcBase), ("sigc\(n)", n, posts, .sigc)]
            list += [("c\(n)", n, posts, .ours), ("c\(n)-others", n, posts, .oursWithOthers), ("swift\(n)", n, posts, .swift),
                     ("loop\(n)", n, posts, .cLoop), ("swiftloop\(n)", n, posts, .swiftLoop), ("abi\(n)", n, posts / 4, .cABI),
                     ("foundation\(n)", n, posts / 20, .foundation), ("foundation\(n)-others", n, posts / 20, .foundationWithOthers)]
        }
        list += [("info-swift1", 1, 5_000, .userInfoSwift), ("info-c1", 1, 5_000, .userInfoC),
                 ("info-foundation1", 1, 1_000, .userInfoFoundation), ("info-built-swift1", 1, 2_000, .userInfoBuiltSwift),
                 ("info-built-foundation1", 1, 1_000, .userInfoBuiltFoundation), ("addremove-swift", 1, 5_000, .addRemoveSwift),
                 ("addremove-raw", 1, 5_000, .addRemoveRaw), ("addremove-foundation", 1, 1_000, .addRemoveFoundation),
                 ("abiname1-crowd", 1, 20_050, .abiNameCrowd), ("abiname-info", 1, 5_000, .abiInfo)]
        return list
    }()

    /// The child's side: set everything up, then run each configuration between two marks.
    static let onlyKey = "LC_BENCH_CALLGRIND_ONLY"

    /// The child's side: set everything up, then run each configuration between two marks. With
    /// LC_BENCH_CALLGRIND_ONLY=key,key… only those configurations run (the others keep their marks,
    /// empty) and only their fixtures are made.
    static func workload() {
        let only = ProcessInfo.processInfo.environment[onlyKey].map { Set($0.split(separator: ",").map(String.init)) }
        let selected = configurations.filter { only?.contains($0.key) ?? true }
        let needsEngine = selected.contains { ![.abiName, .abiNameCrowd, .abiInfo, .glib, .glibBase, .sigc, .sigcBase].contains($0.kind) }
        let fixtures = needsEngine ? PostFixtures() : nil
        if let fixtures { for n in PostingBenchmarks.observerCounts { _ = fixtures.set(n) } }
        let info = fixtures.map { UserInfoFixture($0) }
        let abi = PostingBenchmarks.ABIFixture(crowd: selected.contains { $0.kind == .abiNameCrowd } ? PostingBenchmarks.crowdNames : 0)
        let addRemoveName = fixtures?.name("com.example.bench.post.addremove")
        let foundationAddRemove = Notification.Name("bench.post.addremove")
        let counter = Counter()
        anchor_post_callgrind_mark(0)
        for (index, configuration) in configurations.enumerated() {
            let k = configuration.posts
            anchor_post_callgrind_mark(Int32(2 * index + 1))
            defer { anchor_post_callgrind_mark(Int32(2 * index + 2)) }
            guard only?.contains(configuration.key) ?? true else { continue }
            switch configuration.kind {
            case .empty: continue
            case .abiName: abi.post(configuration.n, k); continue
            case .abiNameCrowd: abi.postCrowded(k); continue
            case .abiInfo: abi.postUserInfo(k); continue
            case .glib: blackHole(peer_glib_emit(configuration.n, k, nil)); continue
            case .glibBase: blackHole(peer_glib_emit(configuration.n, 0, nil)); continue
            case .sigc: blackHole(peer_sigcpp_emit(configuration.n, k, nil)); continue
            case .sigcBase: blackHole(peer_sigcpp_emit(configuration.n, 0, nil)); continue
            default: break
            }
            guard let fixtures, let info, let addRemoveName else { continue }
            let set = fixtures.set(configuration.n)
            switch configuration.kind {
            case .empty, .abiName, .abiNameCrowd, .abiInfo, .glib, .glibBase, .sigc, .sigcBase: break
            case .ours: for _ in 0..<k { set.centerA.post(set.cName) }
            case .oursWithOthers: for _ in 0..<k { set.centerB.post(set.cName) }
            case .swift: for _ in 0..<k { set.centerA.post(set.swiftName) }
            case .cABI: for _ in 0..<k { _ = lc_app_post(fixtures.appA, set.cString, nil, nil) }
            case .cLoop: blackHole(anchor_post_c_loop(set.fns, set.ctxs, set.n, k))
            case .swiftLoop: set.swiftLoop(k)
            case .foundation: for _ in 0..<k { set.foundationA.post(name: set.foundationName, object: nil) }
            case .foundationWithOthers: for _ in 0..<k { set.foundationB.post(name: set.foundationName, object: nil) }
            case .userInfoSwift: for _ in 0..<k { info.center.post(info.swiftName, userInfo: info.prebuilt) }
            case .userInfoC: for _ in 0..<k { info.center.post(info.cName, userInfo: info.prebuilt) }
            case .userInfoFoundation:
                for _ in 0..<k { info.foundation.post(name: info.foundationName, object: nil, userInfo: info.foundationPrebuilt) }
            case .userInfoBuiltSwift:
                for _ in 0..<k { info.center.post(info.swiftName, userInfo: ["s": "hello", "i": 42, "b": true]) }
            case .userInfoBuiltFoundation:
                for _ in 0..<k { info.foundation.post(name: info.foundationName, object: nil, userInfo: ["s": "hello", "i": 42, "b": true]) }
            case .addRemoveSwift:
                for _ in 0..<k { set.centerA.removeObserver(set.centerA.observe(addRemoveName) { _ in counter.add(1) }) }
            case .addRemoveRaw:
                for _ in 0..<k {
                    set.centerA.removeObserver(set.centerA.observeRaw(addRemoveName, function: PostFixtures.rawCount, context: counter.context))
                }
            case .addRemoveFoundation:
                for _ in 0..<k {
                    info.foundation.removeObserver(info.foundation.addObserver(forName: foundationAddRemove, object: nil, queue: nil) { _ in
                        counter.add(1)
                    })
                }
            }
        }
    }

    /// The parent's side: runs the child under callgrind; instructions per post by configuration key,
    /// or nil when valgrind is not installed or the run fails. Valgrind 3.19 cannot read the DWARF 5
    /// the toolchain writes, so the child is a copy of this executable without its debug sections
    /// (symbols stay, for callgrind_annotate). LC_BENCH_CALLGRIND_KEEP=DIR keeps the profile parts there.
    static func instructionsPerPost(only: [String]? = nil) -> [String: Double]? {
        let candidates: [String] = ["/usr/bin/valgrind", "/usr/local/bin/valgrind"]
        guard let valgrind = candidates.first(where: { access($0, X_OK) == 0 }) else {
            PostingBenchmarks.warn("posting: valgrind not found; no instruction counts")
            return nil
        }
        let files = FileManager.default
        let environment = ProcessInfo.processInfo.environment
        let keep = environment["LC_BENCH_CALLGRIND_KEEP"]
        let directory = keep ?? files.temporaryDirectory.appendingPathComponent("lc-bench-callgrind-\(getpid())").path
        try? files.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { if keep == nil { try? files.removeItem(atPath: directory) } }
        for file in (try? files.contentsOfDirectory(atPath: directory)) ?? [] where file.hasPrefix("callgrind.out") {
            try? files.removeItem(atPath: directory + "/" + file)
        }
        let executable = (try? files.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let copy = directory + "/lifecycle-bench"
        try? files.removeItem(atPath: copy)
        var child = executable
        let strippers: [String] = ["/usr/bin/strip", "/usr/bin/objcopy", "/usr/bin/llvm-strip"]
        if (try? files.copyItem(atPath: executable, toPath: copy)) != nil,
           let strip = strippers.first(where: { access($0, X_OK) == 0 }),
           run(strip, ["--strip-debug", copy], environment: environment) == 0
        {
            child = copy
        }
        var childEnvironment = environment
        childEnvironment[environmentKey] = "1"
        if let only { childEnvironment[onlyKey] = only.joined(separator: ",") } else { childEnvironment[onlyKey] = nil }
        let status = run(valgrind, ["--tool=callgrind", "--callgrind-out-file=\(directory)/callgrind.out",
                                    "--dump-before=anchor_post_callgrind_mark", "--dump-instr=no",
                                    child, "--quick", "--filter", "posting"], environment: childEnvironment)
        guard status == 0 else {
            PostingBenchmarks.warn("posting: the callgrind run failed (status \(status))")
            return nil
        }
        // Part j (1-based) is written before the j-th mark and holds what ran since the mark before;
        // configuration i's posts run between marks 2i+2 and 2i+3 (the first mark is mark(0)).
        var parts: [Int: Double] = [:]
        for file in (try? files.contentsOfDirectory(atPath: directory)) ?? [] where file.hasPrefix("callgrind.out.") {
            guard let part = Int(file.dropFirst("callgrind.out.".count)),
                  let text = try? String(contentsOfFile: directory + "/" + file, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") where line.hasPrefix("summary:") || line.hasPrefix("totals:") {
                if let value = Double(line.split(separator: " ").dropFirst().first ?? "") { parts[part] = value }
            }
        }
        guard let overhead = parts[3] else {
            PostingBenchmarks.warn("posting: the callgrind run wrote no profile parts")
            return nil
        }
        var net: [String: Double] = [:]
        for (index, configuration) in configurations.enumerated() where configuration.posts > 0 {
            guard only?.contains(configuration.key) ?? true, let total = parts[2 * index + 3] else { continue }
            net[configuration.key] = total - overhead
        }
        var result: [String: Double] = [:]
        for configuration in configurations where configuration.posts > 0 {
            guard var instructions = net[configuration.key] else { continue }
            if configuration.key.hasSuffix("-base") { continue }
            // A peer's call includes its set-up and tear-down: subtract the same call without emits.
            if let base = net[configuration.key + "-base"] { instructions -= base } else if [.glib, .sigc].contains(configuration.kind) { continue }
            result[configuration.key] = max(0, instructions) / Double(configuration.posts)
        }
        return result
    }

    /// Runs a program to completion, its output discarded; its exit status, or -1.
    static func run(_ path: String, _ arguments: [String], environment: [String: String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationReason == .exit ? process.terminationStatus : -1
    }

    /// LC_BENCH_CALLGRIND=report: print the instruction counts only (see docs/benchmarks.md).
    static func report() {
        guard let counts = instructionsPerPost() else { exit(1) }
        for (key, _, posts, _) in configurations where posts > 0 {
            if let count = counts[key] { print("\(key)\t\(Figure.format(count)) instructions/post") }
        }
    }
}

}  // extension PostingBenchmarks
