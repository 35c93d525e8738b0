import AppLifecycle
import BenchHarness
import CBenchAnchors
import CoreMetrics
import Foundation

// Posting on the main thread through the Swift API, as a Swift embedder posts: an
// `Application(loop: MainRunLoop())`, launched, and its `AppNotificationCenter` (`center.observe`,
// `center.post`, `removeObserver`), Swift closures as observers, beside Foundation's
// NotificationCenter, a plain C loop over function pointers and a plain Swift loop over closures,
// measured in the same run and in alternation. The C ABI's posting rows (C observers, the peers) come
// from lifecycle-bench (PostingBenchmarks), a separate process.
//
// Instruction counts (callgrind, BenchHarness/Callgrind.swift): in a normal (not --quick) run this
// group re-runs this executable under callgrind with `--quick --group posting` and
// LC_BENCH_CALLGRIND=1, which runs each of `jobs` once between two marks. The counts alone, and the
// profile parts kept for callgrind_annotate:
//
//   LC_BENCH_CALLGRIND=report LC_BENCH_CALLGRIND_KEEP=/tmp/cg .build/release/lifecycle-bench-swift --group posting
//   LC_BENCH_METRICS=1 LC_BENCH_CALLGRIND=report …   the same counts with a metrics backend bootstrapped
//   callgrind_annotate --inclusive=yes /tmp/cg/lifecycle-bench-swift/callgrind.out.5   # part 2i+3 is job i

enum SwiftPostingBenchmarks {
    static let observerCounts = [1, 10, 100, 1_000]
    static let otherNames = 1_000
    static let memoryObservers = 10_000

    static func run(_ settings: Settings) -> [Row] {
        switch Callgrind.mode {
        case .workload:
            // LC_BENCH_METRICS=1: a metrics backend is bootstrapped (one that keeps nothing, but is not
            // swift-metrics' no-op), so every application of the run holds the engine's metrics.
            if ProcessInfo.processInfo.environment["LC_BENCH_METRICS"] == "1" { MetricsSystem.bootstrap(MultiplexMetricsHandler(factories: [])) }
            workload()
            return []
        case .report:
            guard let counts = instructionCounts() else { exit(1) }
            Callgrind.printReport(jobs.compactMap { job in counts[job.key].map { (key: job.key, instructions: $0) } })
            return []
        case .measure: break
        }
        let instructions = settings.quick ? nil : instructionCounts()
        // Said in the rows whose targets need the counts (they are then not judged).
        let missing = settings.quick || instructions != nil ? "" : "; no instruction counts (valgrind is missing or its run failed)"
        let f = Fixture()
        var rows = postRows(settings, f, instructions, missing: missing)
        rows += userInfoRows(settings, f, instructions)
        rows += addRemoveRow(settings, f, instructions)
        rows += memoryRow(f)
        rows += instructionRows(instructions)
        return rows
    }

    // MARK: center.post to N Swift closures, with and without 1,000 observers of other names

    static func postRows(_ settings: Settings, _ f: Fixture, _ instructions: [String: Double]?, missing: String) -> [Row] {
        var rows: [Row] = []
        var withOthers: [Row] = []
        for n in observerCounts {
            let set = f.sets[n]!
            let figures = measureTogether(settings, [
                { k in set.post(k) },
                { k in set.cLoop(k) },
                { k in set.postFoundation(k) },
                { k in set.swiftLoop(k) },
                { k in set.postWithOthers(k) },
                { k in set.postFoundationWithOthers(k) },
            ])
            let (ours, cLoop, foundation, swiftLoop) = (figures[0], figures[1], figures[2], figures[3])
            let (oursOthers, foundationOthers) = (figures[4], figures[5])
            set.verify()
            let plural = n == 1 ? "" : "s"

            // center.post(name) on the loop thread: every closure has run when it returns.
            var target = "≥ 25× faster than Foundation"
            var met = foundation.median / ours.median >= 25
            if n == 1 {
                target = "≤ 30 ns; " + target
                met = met && ours.median <= 30
            }
            if n == 1_000 {
                target = "≤ 2× C loop; " + target
                met = met && ours.median <= 2 * cLoop.median
            }
            var text = "\(ratio(ours.median, cLoop.median)) C loop, \(ratio(foundation.median, ours.median)) faster than Foundation, "
                + "\(ratio(ours.median, swiftLoop.median)) plain Swift loop"
            if let mine = instructions?["swift\(n)"], let theirs = instructions?["foundation\(n)"] {
                text += "; instructions/post \(Figure.format(mine)) vs Foundation \(Figure.format(theirs))"
            }
            rows.append(Row(group: "posting", name: "Swift API: center.post to Swift closures, \(n) observer\(plural) (-c release)", ours: ours,
                            anchors: [("plain C loop", cLoop), ("Foundation NotificationCenter", foundation),
                                      ("plain Swift loop over \(n) closure\(plural)", swiftLoop)],
                            target: target, met: settings.quick ? nil : met, ratios: text, instructions: instructions?["swift\(n)"]))

            // The same post in a second application whose center also holds 1,000 observers of 1,000
            // other names (and Foundation likewise). "No measurable change": the same instruction count
            // (callgrind), within 1%; the times only show it.
            let delta = oursOthers.median - ours.median
            let foundationDelta = foundationOthers.median - foundation.median
            var within: Bool?
            let instrWith = instructions?["swift\(n)-others"]
            var instrText = missing
            if let instrWith, let instrWithout = instructions?["swift\(n)"] {
                within = abs(instrWith - instrWithout) <= 0.01 * instrWithout
                instrText = "; instructions/post \(Figure.format(instrWith)) vs \(Figure.format(instrWithout))"
                if let fWith = instructions?["foundation\(n)-others"], let fWithout = instructions?["foundation\(n)"] {
                    instrText += " (Foundation \(Figure.format(fWith)) vs \(Figure.format(fWithout)))"
                }
            }
            withOthers.append(Row(
                group: "posting", name: "Swift API: center.post to \(n) Swift closure\(plural) + \(otherNames) observers of other names (-c release)",
                ours: oursOthers,
                anchors: [("ours without the others", ours), ("Foundation with the others", foundationOthers), ("Foundation without", foundation)],
                target: "no measurable change from without (same instructions/post)", met: settings.quick ? nil : within,
                ratios: "Δ ours \(signed(delta)) ns (\(signed(100 * delta / ours.median))%), "
                    + "Δ Foundation \(signed(foundationDelta)) ns (\(signed(100 * foundationDelta / foundation.median))%)\(instrText)",
                instructions: instrWith))
        }
        return rows + withOthers
    }

    // MARK: A 3-entry userInfo, 1 Swift closure reading one key

    static func userInfoRows(_ settings: Settings, _ f: Fixture, _ instructions: [String: Double]?) -> [Row] {
        let info = f.info
        let figures = measureTogether(settings, [
            { k in info.post(k) },
            { k in info.postFoundation(k) },
            { k in info.postBuilt(k) },
            { k in info.postFoundationBuilt(k) },
        ])
        let (ready, foundationReady, built, foundationBuilt) = (figures[0], figures[1], figures[2], figures[3])
        info.verify()

        func row(_ label: String, _ ours: Figure, _ anchorLabel: String, _ anchor: Figure, key: String, anchorKey: String,
                 informative: Bool) -> Row
        {
            var text = "\(ratio(anchor.median, ours.median)) faster than Foundation"
            if let mine = instructions?[key], let theirs = instructions?[anchorKey] {
                text += "; instructions/post \(Figure.format(mine)) vs \(Figure.format(theirs)) (\(ratio(theirs, mine)))"
            }
            return Row(group: "posting", name: "\(label): post with a 3-entry userInfo, 1 observer reading one key (-c release)", ours: ours,
                       anchors: [(anchorLabel, anchor)],
                       target: informative ? "– (informative: ≥ 10× faster than Foundation)" : "≥ 10× faster than Foundation",
                       met: informative || settings.quick ? nil : anchor.median / ours.median >= 10, ratios: text,
                       instructions: instructions?[key])
        }
        return [
            row("Swift API, Swift closure", ready, "Foundation, [AnyHashable: Any]", foundationReady, key: "info-swift1",
                anchorKey: "info-foundation1", informative: false),
            row("Swift API, Swift closure, UserInfo built at each post", built, "Foundation, dictionary built at each post", foundationBuilt,
                key: "info-built-swift1", anchorKey: "info-built-foundation1", informative: true),
        ]
    }

    // MARK: add + remove an observer

    static func addRemoveRow(_ settings: Settings, _ f: Fixture, _ instructions: [String: Double]?) -> [Row] {
        let figures = measureTogether(settings, [
            { k in f.addRemove(k) },
            { k in f.addRemoveFoundation(k) },
        ])
        let (ours, foundation) = (figures[0], figures[1])
        if f.center.observerCount(for: f.addRemoveName) != 0 { warn("posting: add + remove left observers behind") }
        var text = "\(ratio(foundation.median, ours.median)) faster than Foundation"
        if let mine = instructions?["addremove-swift"], let theirs = instructions?["addremove-foundation"] {
            text += "; instructions \(Figure.format(mine)) vs \(Figure.format(theirs)) (\(ratio(theirs, mine)))"
        }
        return [Row(group: "posting", name: "add + remove an observer: Swift API, Swift closure (observe / removeObserver) (-c release)",
                    ours: ours, anchors: [("Foundation addObserver(forName:…) + removeObserver", foundation)],
                    target: "≥ 5× faster than Foundation", met: settings.quick ? nil : foundation.median / ours.median >= 5, ratios: text,
                    instructions: instructions?["addremove-swift"])]
    }

    // MARK: memory per observer

    static func memoryRow(_ f: Fixture) -> [Row] {
        let count = memoryObservers
        let counter = Counter()
        let center = f.center
        let name = Fixture.name("com.example.bench.post.memory")
        var tokens: [ObserverToken] = []
        tokens.reserveCapacity(count)
        let ours = heapDelta {
            for _ in 0..<count { tokens.append(center.observe(name) { _ in counter.add(1) }) }
        }
        if center.observerCount(for: name) != count { warn("posting: \(count) observers for memory: \(center.observerCount(for: name)) registered") }
        for token in tokens { center.removeObserver(token) }

        let foundation = NotificationCenter()
        let foundationName = Notification.Name("bench.post.memory")
        var foundationTokens: [any NSObjectProtocol] = []
        foundationTokens.reserveCapacity(count)
        let theirs = heapDelta {
            for _ in 0..<count {
                foundationTokens.append(foundation.addObserver(forName: foundationName, object: nil, queue: nil) { _ in counter.add(1) })
            }
        }
        for token in foundationTokens { foundation.removeObserver(token) }

        let perOurs = Double(ours) / Double(count), perFoundation = Double(theirs) / Double(count)
        return [Row(group: "posting", name: "memory per observer (\(count) observers of one name): Swift API, Swift closures",
                    ours: .single(perOurs, "B"), anchors: [("Foundation", .single(perFoundation, "B", note: "Foundation addObserver(forName:…)"))],
                    target: "≤ Foundation", met: perOurs <= perFoundation, ratios: "\(ratio(perOurs, perFoundation)) Foundation (malloc in use, mallinfo2)")]
    }

    // MARK: instructions per post (callgrind)

    static func instructionRows(_ instructions: [String: Double]?) -> [Row] {
        guard let instructions else { return [] }
        var rows: [Row] = []
        for n in [1, 1_000] {
            guard let ours = instructions["swift\(n)"], let cLoop = instructions["loop\(n)"] else { continue }
            var anchors: [(label: String, figure: Figure)] = [("plain C loop", .single(cLoop, "instr"))]
            if let loop = instructions["swiftloop\(n)"] { anchors.append(("plain Swift loop over closures", .single(loop, "instr"))) }
            if let others = instructions["swift\(n)-others"] {
                anchors.append(("ours + \(otherNames) observers of other names", .single(others, "instr")))
            }
            if let foundation = instructions["foundation\(n)"] { anchors.append(("Foundation NotificationCenter", .single(foundation, "instr"))) }
            rows.append(Row(group: "posting",
                            name: "instructions per post, \(n) observer\(n == 1 ? "" : "s"): Swift API center.post to Swift closures (callgrind, -c release)",
                            ours: .single(ours, "instr"), anchors: anchors, target: "–", met: nil,
                            ratios: "\(ratio(ours, cLoop)) C loop, \(Figure.format(ours / Double(n))) per observer", instructions: ours))
        }
        return rows
    }

    static func signed(_ x: Double) -> String { (x >= 0 ? "+" : "−") + Figure.format(abs(x)) }
}

// MARK: Callgrind

extension SwiftPostingBenchmarks {
    /// What one callgrind job runs, `posts` times (posts, or add + remove pairs).
    enum Kind {
        case empty, post, postWithOthers, swiftLoop, cLoop, foundation, foundationWithOthers
        case userInfo, userInfoFoundation, userInfoBuilt, userInfoBuiltFoundation
        case addRemove, addRemoveFoundation
    }

    /// The jobs, in run order. Posts are chosen so that the whole run takes a few seconds under valgrind.
    static let jobs: [(key: String, n: Int, posts: Int, kind: Kind)] = {
        var list: [(key: String, n: Int, posts: Int, kind: Kind)] = [("empty", 1, 0, .empty)]
        for n in observerCounts {
            let posts = 20_000 / n + 50
            list += [("swift\(n)", n, posts, .post), ("swift\(n)-others", n, posts, .postWithOthers),
                     ("swiftloop\(n)", n, posts, .swiftLoop), ("loop\(n)", n, posts, .cLoop),
                     ("foundation\(n)", n, posts / 20, .foundation), ("foundation\(n)-others", n, posts / 20, .foundationWithOthers)]
        }
        list += [("info-swift1", 1, 5_000, .userInfo), ("info-foundation1", 1, 1_000, .userInfoFoundation),
                 ("info-built-swift1", 1, 2_000, .userInfoBuilt), ("info-built-foundation1", 1, 1_000, .userInfoBuiltFoundation),
                 ("addremove-swift", 1, 5_000, .addRemove), ("addremove-foundation", 1, 1_000, .addRemoveFoundation)]
        return list
    }()

    static var configurations: [Callgrind.Configuration] { jobs.map { Callgrind.Configuration($0.key, $0.posts) } }

    /// The child's side (LC_BENCH_CALLGRIND=1): make the fixtures, then run each job between two marks.
    static func workload() {
        let f = Fixture()
        Callgrind.workload(configurations, mark: anchor_post_callgrind_mark) { index in
            let (_, n, k, kind) = jobs[index]
            let set = f.sets[n]!
            switch kind {
            case .empty: break
            case .post: set.post(k)
            case .postWithOthers: set.postWithOthers(k)
            case .swiftLoop: set.swiftLoop(k)
            case .cLoop: set.cLoop(k)
            case .foundation: set.postFoundation(k)
            case .foundationWithOthers: set.postFoundationWithOthers(k)
            case .userInfo: f.info.post(k)
            case .userInfoFoundation: f.info.postFoundation(k)
            case .userInfoBuilt: f.info.postBuilt(k)
            case .userInfoBuiltFoundation: f.info.postFoundationBuilt(k)
            case .addRemove: f.addRemove(k)
            case .addRemoveFoundation: f.addRemoveFoundation(k)
            }
        }
    }

    /// Instructions per post (or add + remove) by job key; nil when valgrind is missing or the run failed.
    static func instructionCounts() -> [String: Double]? {
        guard let counts = Callgrind.count(configurations, arguments: ["--quick", "--group", "posting"], label: "posting (Swift API)") else {
            return nil
        }
        var result: [String: Double] = [:]
        for job in jobs { result[job.key] = counts.perOperation(job.key) }
        return result
    }
}

// MARK: Fixtures

extension SwiftPostingBenchmarks {
    /// A counter observers bump: through its raw pointer (the C loop's functions) or a method (closures).
    final class Counter: @unchecked Sendable {
        let pointer = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
        init() { pointer.initialize(to: 0) }
        deinit { pointer.deallocate() }
        var context: UnsafeMutableRawPointer { UnsafeMutableRawPointer(pointer) }
        var value: UInt64 { pointer.pointee }
        @inline(__always) func add(_ x: UInt64) { pointer.pointee &+= x }
    }

    /// Two launched applications on this thread (the second with 1,000 observers of 1,000 other names),
    /// two Foundation centers likewise, and per N the registered observers.
    final class Fixture {
        let app: Application
        let appWithOthers: Application
        var center: AppNotificationCenter { app.center }
        let foundationWithOthers = NotificationCenter()
        private var foundationOtherTokens: [any NSObjectProtocol] = []
        let otherCounter = Counter()
        private(set) var sets: [Int: PostSet] = [:]
        let info: UserInfoFixture
        let addRemoveName = Fixture.name("com.example.bench.post.addremove")
        let addRemoveCounter = Counter()
        let foundationAddRemove = NotificationCenter()
        let foundationAddRemoveName = Notification.Name("bench.post.addremove")

        static func name(_ string: String) -> NotificationName {
            do { return try NotificationName(string) } catch { fatalError("posting: \(error)") }
        }

        static func makeApp() -> Application {
            do {
                let app = Application(loop: try MainRunLoop())
                try app.perform(.launch())
                return app
            } catch {
                fatalError("posting: cannot make and launch an application: \(error)")
            }
        }

        init() {
            app = Self.makeApp()
            appWithOthers = Self.makeApp()
            let otherCounter = otherCounter
            for i in 0..<SwiftPostingBenchmarks.otherNames {
                let other = "com.example.bench.post.other\(i)"
                appWithOthers.center.observe(Self.name(other)) { _ in otherCounter.add(1) }
                foundationOtherTokens.append(foundationWithOthers.addObserver(forName: Notification.Name(other), object: nil, queue: nil) { _ in
                    otherCounter.add(1)
                })
            }
            info = UserInfoFixture(app.center)
            for n in SwiftPostingBenchmarks.observerCounts { sets[n] = PostSet(n, self) }
        }

        @inline(never) func addRemove(_ k: Int) {
            let center = center, name = addRemoveName, counter = addRemoveCounter
            for _ in 0..<k { center.removeObserver(center.observe(name) { _ in counter.add(1) }) }
        }

        @inline(never) func addRemoveFoundation(_ k: Int) {
            let center = foundationAddRemove, name = foundationAddRemoveName, counter = addRemoveCounter
            for _ in 0..<k {
                center.removeObserver(center.addObserver(forName: name, object: nil, queue: nil) { _ in counter.add(1) })
            }
        }
    }

    /// N observers of one name, registered each way: Swift closures in both applications, Foundation
    /// closures in a center of its own and in the one with the other names, the plain loops' functions.
    final class PostSet {
        let n: Int
        let center: AppNotificationCenter
        let centerWithOthers: AppNotificationCenter
        let name: NotificationName
        let foundation = NotificationCenter()
        let foundationWithOthers: NotificationCenter
        let foundationName: Notification.Name
        private var foundationTokens: [any NSObjectProtocol] = []
        let fns: UnsafeMutablePointer<anchor_post_fn?>
        let ctxs: UnsafeMutablePointer<UnsafeMutableRawPointer?>
        /// The plain Swift loop's closures: the same body as the Swift observers'.
        let closures: [(AppNotification) -> Void]
        /// One counter per way, so each can be checked.
        let counter = Counter(), counterWithOthers = Counter(), loopCounter = Counter(), swiftLoopCounter = Counter()
        let foundationCounter = Counter(), foundationCounterWithOthers = Counter()

        init(_ n: Int, _ fixture: Fixture) {
            self.n = n
            center = fixture.app.center
            centerWithOthers = fixture.appWithOthers.center
            foundationWithOthers = fixture.foundationWithOthers
            name = Fixture.name("com.example.bench.post.swift\(n)")
            foundationName = Notification.Name("bench.post.\(n)")
            fns = .allocate(capacity: n)
            ctxs = .allocate(capacity: n)
            let counter = counter, counterWithOthers = counterWithOthers, swiftLoopCounter = swiftLoopCounter
            let foundationCounter = foundationCounter, foundationCounterWithOthers = foundationCounterWithOthers
            closures = (0..<n).map { _ in { _ in swiftLoopCounter.add(1) } }
            for i in 0..<n {
                center.observe(name) { _ in counter.add(1) }
                centerWithOthers.observe(name) { _ in counterWithOthers.add(1) }
                foundationTokens.append(foundation.addObserver(forName: foundationName, object: nil, queue: nil) { _ in
                    foundationCounter.add(1)
                })
                foundationTokens.append(foundationWithOthers.addObserver(forName: foundationName, object: nil, queue: nil) { _ in
                    foundationCounterWithOthers.add(1)
                })
                fns[i] = anchor_post_count
                ctxs[i] = loopCounter.context
            }
            verify()
        }

        // The measured loops, each `k` posts; not inlined, so the measuring run and the callgrind child
        // run the same code.

        @inline(never) func post(_ k: Int) {
            let center = center, name = name
            for _ in 0..<k { center.post(name) }
        }

        @inline(never) func postWithOthers(_ k: Int) {
            let center = centerWithOthers, name = name
            for _ in 0..<k { center.post(name) }
        }

        /// The plain C anchor: `k` times, builds a record like a post does and calls the n function pointers.
        @inline(never) func cLoop(_ k: Int) { blackHole(anchor_post_c_loop(fns, ctxs, n, k)) }

        /// The plain Swift anchor: `k` times, builds the notification once and calls the n closures in order.
        @inline(never) func swiftLoop(_ k: Int) {
            for _ in 0..<k {
                let notification = AppNotification(name: name)
                closures.withUnsafeBufferPointer { buffer in
                    for closure in buffer { closure(notification) }
                }
            }
        }

        @inline(never) func postFoundation(_ k: Int) {
            let center = foundation, name = foundationName
            for _ in 0..<k { center.post(name: name, object: nil) }
        }

        @inline(never) func postFoundationWithOthers(_ k: Int) {
            let center = foundationWithOthers, name = foundationName
            for _ in 0..<k { center.post(name: name, object: nil) }
        }

        /// One post each way must reach exactly N observers (catches held delivery, a wrong name...).
        func verify() {
            let counters = [counter, counterWithOthers, loopCounter, swiftLoopCounter, foundationCounter, foundationCounterWithOthers]
            let before = counters.map(\.value)
            post(1)
            postWithOthers(1)
            cLoop(1)
            swiftLoop(1)
            postFoundation(1)
            postFoundationWithOthers(1)
            for (counter, old) in zip(counters, before) where counter.value - old != UInt64(n) {
                warn("posting: a post to \(n) observers reached \(counter.value - old)")
            }
        }
    }

    /// One observer of a userInfo key each way: a Swift closure reading `userInfo["i"]`, and Foundation's.
    final class UserInfoFixture {
        let center: AppNotificationCenter
        let name = Fixture.name("com.example.bench.post.userinfo")
        let counter = Counter()
        let foundation = NotificationCenter()
        let foundationName = Notification.Name("bench.post.userinfo")
        let prebuilt: UserInfo = ["s": "hello", "i": 42, "b": true]
        let foundationPrebuilt: [AnyHashable: Any] = ["s": "hello", "i": 42, "b": true]
        private var foundationToken: (any NSObjectProtocol)?

        init(_ center: AppNotificationCenter) {
            self.center = center
            let counter = counter
            center.observe(name) { notification in
                if case .int(let i)? = notification.userInfo["i"] { counter.add(UInt64(i)) }
            }
            foundationToken = foundation.addObserver(forName: foundationName, object: nil, queue: nil) { notification in
                if let i = notification.userInfo?["i"] as? Int { counter.add(UInt64(i)) }
            }
            verify()
        }

        /// Posts with the userInfo built once.
        @inline(never) func post(_ k: Int) {
            let center = center, name = name, info = prebuilt
            for _ in 0..<k { center.post(name, userInfo: info) }
        }

        @inline(never) func postFoundation(_ k: Int) {
            let center = foundation, name = foundationName, info = foundationPrebuilt
            for _ in 0..<k { center.post(name: name, object: nil, userInfo: info) }
        }

        /// Posts with the userInfo built at each post, as a caller writes it inline.
        @inline(never) func postBuilt(_ k: Int) {
            let center = center, name = name
            for _ in 0..<k { center.post(name, userInfo: ["s": "hello", "i": 42, "b": true]) }
        }

        @inline(never) func postFoundationBuilt(_ k: Int) {
            let center = foundation, name = foundationName
            for _ in 0..<k { center.post(name: name, object: nil, userInfo: ["s": "hello", "i": 42, "b": true]) }
        }

        /// One post each way: each observer must have read 42.
        func verify() {
            let before = counter.value
            post(1)
            postFoundation(1)
            postBuilt(1)
            postFoundationBuilt(1)
            if counter.value - before != 4 * 42 { warn("posting: the userInfo observers did not all read userInfo[\"i\"]") }
        }
    }
}
