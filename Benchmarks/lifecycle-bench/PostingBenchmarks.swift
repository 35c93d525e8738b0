import BenchHarness
import CBenchAnchors
import CBenchPeers
import CLifecycleABI
import Foundation

// Posting on the main thread through the public C ABI, the path a C user takes: lc_app_create,
// lc_name_intern, lc_app_observe_name, lc_app_post_name (the exported functions of
// include/lifecycle.h, called through liblifecycle.so's PLT as any C program calls them), beside the
// peers a C developer would pick instead (GLib g_signal_emit, libsigc++ signal.emit), a plain C loop
// over the same function pointers, and Foundation's NotificationCenter (this process links Foundation
// anyway), with the same observer counts, measured in alternation in the same run. The peers time
// their own emit loop (set-up and tear-down outside it); ours is timed around its loop of calls.
// The Swift API's posting rows come from lifecycle-bench-swift (SwiftPostingBenchmarks).
//
// Instruction counts (callgrind, BenchHarness/Callgrind.swift): in a normal (not --quick) run this
// group re-runs this executable under callgrind with `--quick --filter posting` and
// LC_BENCH_CALLGRIND=1, which runs each of `jobs` once between two marks; then once more with only
// "abiname1", a second process whose count per post must be the same. The counts alone, and the
// profile parts kept for callgrind_annotate (then the Swift API's, from lifecycle-bench-swift):
//
//   LC_BENCH_CALLGRIND=report LC_BENCH_CALLGRIND_KEEP=/tmp/cg .build/release/lifecycle-bench --filter posting
//   callgrind_annotate --inclusive=yes /tmp/cg/lifecycle-bench/callgrind.out.5   # part 2i+3 is job i

enum PostingBenchmarks {
    static let observerCounts = [1, 10, 100, 1_000]
    static let crowdNames = 100_000
    static let memoryObservers = 10_000

    static func run(_ settings: Settings) -> [Row] {
        switch Callgrind.mode {
        case .workload:
            workload()
            return []
        case .report:
            report()
            return []
        case .measure: break
        }
        let counts = settings.quick ? nil : instructionCounts()
        // Said in the rows whose targets need the counts (they are then not judged).
        let missing = settings.quick || counts != nil ? "" : "; no instruction counts (valgrind is missing or its run failed)"
        let fixture = Fixture(crowd: crowdNames)
        var rows = postRows(settings, fixture, counts?.all, again: counts?.again, missing: missing)
        rows += crowdRow(settings, fixture, counts?.all, missing: missing)
        rows += userInfoRow(settings, fixture, counts?.all)
        rows += addRemoveRows(settings, fixture, counts?.all)
        rows += memoryRow(fixture)
        rows += instructionRows(counts?.all)
        return rows
    }

    // MARK: lc_app_post_name and lc_app_post to N C observers, beside the C loop, GLib, libsigc++, Foundation

    static func postRows(_ settings: Settings, _ f: Fixture, _ instructions: [String: Double]?, again: Double?, missing: String) -> [Row] {
        var named: [Row] = []
        var strings: [Row] = []
        for n in observerCounts {
            let set = f.sets[n]!
            let figures = measureTimed(settings, [
                { k in timed { f.postName(n, k) } },
                { k in timed { set.cLoop(k) } },
                { k in
                    var ns: UInt64 = 0
                    if peer_glib_emit(n, k, &ns) != UInt64(n * k) { warn("posting: GLib emit reached the wrong count") }
                    return ns
                },
                { k in
                    var ns: UInt64 = 0
                    if peer_sigcpp_emit(n, k, &ns) != UInt64(n * k) { warn("posting: libsigc++ emit reached the wrong count") }
                    return ns
                },
                { k in timed { f.postString(n, k) } },
                { k in timed { set.postFoundation(k) } },
            ])
            let (ours, cLoop, glib, sigc, byString, foundation) = (figures[0], figures[1], figures[2], figures[3], figures[4], figures[5])
            f.verify(n)
            let plural = n == 1 ? "" : "s"

            // lc_app_post_name: the C user's fast path (an interned id, no string lookup, no allocation).
            var target = "–"
            var met: Bool?
            var text = "\(ratio(ours.median, cLoop.median)) C loop, \(ratio(ours.median, glib.median)) GLib, \(ratio(ours.median, sigc.median)) libsigc++"
            let mine = instructions?["abiname\(n)"]
            if let mine, let loop = instructions?["loop\(n)"] {
                text += "; instructions/post \(Figure.format(mine)) vs C loop \(Figure.format(loop))"
                if let g = instructions?["glib\(n)"], let s = instructions?["sigc\(n)"] {
                    text += ", GLib \(Figure.format(g)), libsigc++ \(Figure.format(s))"
                }
            }
            if n == 1 {
                target = "≤ 150 instructions and ≤ 30 ns, identical instruction count in every process"
                if let mine, let again {
                    // Per post, to the instruction: the process's marks and loop set-up may add a handful
                    // of instructions to a part of 20,050 posts, never one per post.
                    let same = again.rounded() == mine.rounded()
                    text += "; a second process: \(String(format: "%.2f", again)) vs \(String(format: "%.2f", mine)) (\(same ? "identical per post" : "DIFFERENT"))"
                    met = ours.median <= 30 && mine <= 150 && same
                } else {
                    text += missing  // met stays nil: the instruction targets cannot be judged without both counts
                }
            } else if n == 1_000 {
                target = "≤ 1.3× C loop"
                met = ours.median <= 1.3 * cLoop.median
            }
            named.append(Row(group: "posting", name: "C ABI: lc_app_post_name to \(n) C observer\(plural) (-c release)", ours: ours,
                             anchors: [("plain C loop over the same function pointers", cLoop),
                                       ("GLib g_signal_emit, \(n) handler\(plural) (libglib2.0 from Debian)", glib),
                                       ("libsigc++ 3 signal.emit(), \(n) slot\(plural) (libsigc++-3.0 from Debian)", sigc)],
                             target: target, met: settings.quick ? nil : met, ratios: text, instructions: mine))

            // lc_app_post: the same observers by name string (looked up in the intern table at each post).
            var informative = "≥ 25× faster than Foundation"
            if n == 1 { informative = "≤ 30 ns; " + informative }
            if n == 1_000 { informative = "≤ 2× C loop; " + informative }
            var stringText = "\(ratio(byString.median, cLoop.median)) C loop, \(ratio(foundation.median, byString.median)) faster than Foundation"
            if let byName = instructions?["abi\(n)"], let theirs = instructions?["foundation\(n)"] {
                stringText += "; instructions/post \(Figure.format(byName)) vs Foundation \(Figure.format(theirs))"
            }
            strings.append(Row(group: "posting", name: "C ABI: lc_app_post(name string) to C observers, \(n) observer\(plural) (-c release)",
                               ours: byString,
                               anchors: [("plain C loop", cLoop), ("Foundation NotificationCenter", foundation)],
                               target: "– (informative: \(informative))", met: nil, ratios: stringText,
                               instructions: instructions?["abi\(n)"]))
        }
        return named + strings
    }

    // MARK: 1 observer among 100,000 observers of other names

    static func crowdRow(_ settings: Settings, _ f: Fixture, _ instructions: [String: Double]?, missing: String) -> [Row] {
        let figures = measureTimed(settings, [
            { k in timed { f.postCrowded(k) } },
            { k in timed { f.postName(1, k) } },
        ])
        let (crowded, alone) = (figures[0], figures[1])
        var text = "\(ratio(crowded.median, alone.median)) alone"
        // "The same": the same instruction count (callgrind), within 1%; the times only show it.
        var met: Bool?
        let mine = instructions?["abiname1-crowd"]
        if let mine, let single = instructions?["abiname1"] {
            text += "; instructions/post \(Figure.format(mine)) vs \(Figure.format(single)) alone"
            met = abs(mine - single) <= 0.01 * single
        } else {
            text += missing
        }
        return [Row(group: "posting",
                    name: "C ABI: lc_app_post_name to 1 C observer among \(crowdNames) observers of \(crowdNames) other names (-c release)",
                    ours: crowded, anchors: [("C ABI, the same post alone (1 observer, no others)", alone)],
                    target: "costs the same as alone (same instructions/post)", met: settings.quick ? nil : met,
                    ratios: text, instructions: mine)]
    }

    // MARK: A 3-entry userInfo (lc_dict, built once), 1 C observer reading one key (lc_dict_get_int)

    static func userInfoRow(_ settings: Settings, _ f: Fixture, _ instructions: [String: Double]?) -> [Row] {
        let figures = measureTimed(settings, [
            { k in timed { f.postUserInfo(k) } },
            { k in timed { f.postFoundationUserInfo(k) } },
        ])
        let (ours, foundation) = (figures[0], figures[1])
        f.verifyUserInfo()
        var text = "\(ratio(foundation.median, ours.median)) faster than Foundation"
        let mine = instructions?["abiname-info"]
        if let mine, let theirs = instructions?["foundation-info"] {
            text += "; instructions/post \(Figure.format(mine)) vs \(Figure.format(theirs)) (\(ratio(theirs, mine)))"
        }
        return [Row(group: "posting",
                    name: "C ABI: lc_app_post_name with a 3-entry userInfo (lc_dict, built once), 1 C observer reading one key (lc_dict_get_int) (-c release)",
                    ours: ours, anchors: [("Foundation NotificationCenter, [AnyHashable: Any] built once", foundation)],
                    target: "≤ 100 ns", met: settings.quick ? nil : ours.median <= 100, ratios: text, instructions: mine)]
    }

    // MARK: add + remove an observer

    static func addRemoveRows(_ settings: Settings, _ f: Fixture, _ instructions: [String: Double]?) -> [Row] {
        let figures = measureTimed(settings, [
            { k in timed { f.addRemoveByString(k) } },
            { k in timed { f.addRemoveByName(k) } },
            { k in timed { f.addRemoveFoundation(k) } },
        ])
        let (byString, byName, foundation) = (figures[0], figures[1], figures[2])
        f.verifyAddRemove()
        func row(_ label: String, _ ours: Figure, key: String, informative: Bool) -> Row {
            var text = "\(ratio(foundation.median, ours.median)) faster than Foundation"
            if let mine = instructions?[key], let theirs = instructions?["addremove-foundation"] {
                text += "; instructions \(Figure.format(mine)) vs \(Figure.format(theirs)) (\(ratio(theirs, mine)))"
            }
            return Row(group: "posting", name: "add + remove an observer: \(label) (-c release)", ours: ours,
                       anchors: [("Foundation addObserver(forName:…) + removeObserver", foundation)],
                       target: informative ? "– (informative: ≥ 5× faster than Foundation)" : "≥ 5× faster than Foundation",
                       met: informative || settings.quick ? nil : foundation.median / ours.median >= 5, ratios: text,
                       instructions: instructions?[key])
        }
        return [row("C ABI, interned name (lc_app_observe_name / lc_app_remove_observer)", byName, key: "addremove-abiname", informative: false),
                row("C ABI (lc_app_observe / lc_app_remove_observer, name string)", byString, key: "addremove-abi", informative: true)]
    }

    // MARK: memory per observer

    static func memoryRow(_ f: Fixture) -> [Row] {
        let (ours, foundation) = f.memoryPerObserver(memoryObservers)
        return [Row(group: "posting", name: "memory per observer (\(memoryObservers) observers of one name): C ABI, C functions (lc_app_observe_name)",
                    ours: .single(ours, "B"), anchors: [("Foundation", .single(foundation, "B", note: "Foundation addObserver(forName:…)"))],
                    target: "≤ Foundation", met: ours <= foundation, ratios: "\(ratio(ours, foundation)) Foundation (malloc in use, mallinfo2)")]
    }

    // MARK: instructions per post (callgrind)

    static func instructionRows(_ instructions: [String: Double]?) -> [Row] {
        guard let instructions else { return [] }
        var rows: [Row] = []
        for n in [1, 1_000] {
            guard let ours = instructions["abiname\(n)"], let cLoop = instructions["loop\(n)"] else { continue }
            var anchors: [(label: String, figure: Figure)] = [("plain C loop", .single(cLoop, "instr"))]
            if n == 1, let crowd = instructions["abiname1-crowd"] {
                anchors.append(("ours among \(crowdNames) observers of other names", .single(crowd, "instr")))
            }
            if let abi = instructions["abi\(n)"] { anchors.append(("ours, lc_app_post(name string)", .single(abi, "instr"))) }
            if let glib = instructions["glib\(n)"] { anchors.append(("GLib g_signal_emit", .single(glib, "instr"))) }
            if let sigc = instructions["sigc\(n)"] { anchors.append(("libsigc++ 3 signal.emit()", .single(sigc, "instr"))) }
            if let foundation = instructions["foundation\(n)"] { anchors.append(("Foundation NotificationCenter", .single(foundation, "instr"))) }
            rows.append(Row(group: "posting",
                            name: "instructions per post, \(n) observer\(n == 1 ? "" : "s"): C ABI lc_app_post_name to C observers (callgrind, -c release)",
                            ours: .single(ours, "instr"), anchors: anchors, target: "–", met: nil,
                            ratios: "\(ratio(ours, cLoop)) C loop, \(Figure.format(ours / Double(n))) per observer", instructions: ours))
        }
        return rows
    }
}

// MARK: Callgrind

extension PostingBenchmarks {
    /// What one callgrind job runs, `posts` times (posts, or add + remove pairs).
    enum Kind {
        case empty
        /// lc_app_post_name to n C observers; to 1 among 100,000 of other names; with a userInfo.
        case postName, postCrowded, postUserInfo
        /// lc_app_post (name string) to n C observers; the plain C loop; Foundation to n observers, with a userInfo.
        case postString, cLoop, foundation, foundationUserInfo
        /// The peers: `posts` emits to n handlers, and the same call with no emit (its set-up and tear-down,
        /// subtracted: the "-base" job).
        case glib, glibBase, sigc, sigcBase
        case addRemoveByString, addRemoveByName, addRemoveFoundation
    }

    /// The jobs, in run order. Posts are chosen so that the whole run takes a few seconds under valgrind.
    static let jobs: [(key: String, n: Int, posts: Int, kind: Kind)] = {
        var list: [(key: String, n: Int, posts: Int, kind: Kind)] = [("empty", 1, 0, .empty)]
        for n in observerCounts {
            let posts = 20_000 / n + 50
            list += [("abiname\(n)", n, posts, .postName), ("loop\(n)", n, posts, .cLoop), ("abi\(n)", n, posts / 4, .postString),
                     ("glib\(n)-base", n, 0, .glibBase), ("glib\(n)", n, posts / 4, .glib),
                     ("sigc\(n)-base", n, 0, .sigcBase), ("sigc\(n)", n, posts, .sigc),
                     ("foundation\(n)", n, posts / 20, .foundation)]
        }
        list += [("abiname1-crowd", 1, 20_050, .postCrowded), ("abiname-info", 1, 5_000, .postUserInfo),
                 ("foundation-info", 1, 1_000, .foundationUserInfo), ("addremove-abiname", 1, 5_000, .addRemoveByName),
                 ("addremove-abi", 1, 5_000, .addRemoveByString), ("addremove-foundation", 1, 1_000, .addRemoveFoundation)]
        return list
    }()

    static var configurations: [Callgrind.Configuration] { jobs.map { Callgrind.Configuration($0.key, $0.posts) } }

    /// The child's side (LC_BENCH_CALLGRIND=1): make the fixtures (the crowd only when its job runs),
    /// then run each job between two marks.
    static func workload() {
        let crowd = Callgrind.selected.map { $0.contains("abiname1-crowd") } ?? true
        let f = Fixture(crowd: crowd ? crowdNames : 0)
        Callgrind.workload(configurations, mark: anchor_post_callgrind_mark) { index in
            let (_, n, k, kind) = jobs[index]
            switch kind {
            case .empty: break
            case .postName: f.postName(n, k)
            case .postCrowded: f.postCrowded(k)
            case .postUserInfo: f.postUserInfo(k)
            case .postString: f.postString(n, k)
            case .cLoop: f.sets[n]!.cLoop(k)
            case .foundation: f.sets[n]!.postFoundation(k)
            case .foundationUserInfo: f.postFoundationUserInfo(k)
            case .glib: blackHole(peer_glib_emit(n, k, nil))
            case .glibBase: blackHole(peer_glib_emit(n, 0, nil))
            case .sigc: blackHole(peer_sigcpp_emit(n, k, nil))
            case .sigcBase: blackHole(peer_sigcpp_emit(n, 0, nil))
            case .addRemoveByString: f.addRemoveByString(k)
            case .addRemoveByName: f.addRemoveByName(k)
            case .addRemoveFoundation: f.addRemoveFoundation(k)
            }
        }
    }

    /// Instructions per post by job key (the peers' less their "-base" call), and "abiname1" counted
    /// again in a second process; nil when valgrind is missing or a run failed. The second process
    /// runs first, so that LC_BENCH_CALLGRIND_KEEP keeps the full run's parts.
    static func instructionCounts() -> (all: [String: Double], again: Double?)? {
        guard Callgrind.valgrind != nil else {
            warn("posting: valgrind not found; no instruction counts (the targets that need them are not judged)")
            return nil
        }
        let arguments = ["--quick", "--filter", "posting"], libraries = ["liblifecycle.so"]
        let again = Callgrind.count(configurations, arguments: arguments, libraries: libraries, only: ["abiname1"], label: "posting")
        guard let counts = Callgrind.count(configurations, arguments: arguments, libraries: libraries, label: "posting") else { return nil }
        var all: [String: Double] = [:]
        for job in jobs where job.posts > 0 {
            all[job.key] = counts.perOperation(job.key, minus: [.glib, .sigc].contains(job.kind) ? job.key + "-base" : nil)
        }
        return (all, again?.perOperation("abiname1"))
    }

    /// LC_BENCH_CALLGRIND=report: the counts of this process, then lifecycle-bench-swift's (Swift API).
    static func report() {
        guard let counts = instructionCounts() else { exit(1) }
        var lines = jobs.compactMap { job in counts.all[job.key].map { (key: job.key, instructions: $0) } }
        if let again = counts.again { lines.append((key: "abiname1-second-process", instructions: again)) }
        Callgrind.printReport(lines)
        let program = executableFolder() + "/lifecycle-bench-swift"
        guard access(program, X_OK) == 0, let pid = spawn(program, ["--group", "posting"]) else {
            warn("posting: no \(program): no Swift API counts")
            return
        }
        if waitExit(pid) != 0 { warn("posting: \(program) --group posting failed") }
    }
}

// MARK: Fixtures

extension PostingBenchmarks {
    /// A counter C observers bump through their context: `++*(uint64_t *)ctx`.
    final class Counter: @unchecked Sendable {
        let pointer = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
        init() { pointer.initialize(to: 0) }
        deinit { pointer.deallocate() }
        var context: UnsafeMutableRawPointer { UnsafeMutableRawPointer(pointer) }
        var value: UInt64 { pointer.pointee }
        func add(_ x: UInt64) { pointer.pointee &+= x }
    }

    /// N observers of one name: C observers through the C ABI, the plain C loop's function pointers,
    /// Foundation closures. Each way has its own counter, so each can be checked.
    final class PostSet {
        let n: Int
        /// The name as a C string (static storage, for lc_app_post) and interned (lc_app_post_name).
        let string: UnsafeMutablePointer<CChar>
        let name: lc_name
        let counter = Counter()
        let fns: UnsafeMutablePointer<anchor_post_fn?>
        let ctxs: UnsafeMutablePointer<UnsafeMutableRawPointer?>
        let loopCounter = Counter()
        let foundation = NotificationCenter()
        let foundationName: Notification.Name
        let foundationCounter = Counter()
        private var foundationTokens: [any NSObjectProtocol] = []

        init(_ n: Int, app: OpaquePointer) {
            self.n = n
            let text = "com.example.bench.abi.post\(n)"
            string = strdup(text)!
            name = Fixture.intern(text)
            foundationName = Notification.Name("bench.abi.post\(n)")
            fns = .allocate(capacity: n)
            ctxs = .allocate(capacity: n)
            let foundationCounter = foundationCounter
            for i in 0..<n {
                Fixture.observe(app, name, Fixture.count, counter.context)
                fns[i] = anchor_post_count
                ctxs[i] = loopCounter.context
                foundationTokens.append(foundation.addObserver(forName: foundationName, object: nil, queue: nil) { _ in
                    foundationCounter.add(1)
                })
            }
        }

        /// The plain C anchor: `k` times, builds a record like a post does and calls the n function pointers.
        @inline(never) func cLoop(_ k: Int) { blackHole(anchor_post_c_loop(fns, ctxs, n, k)) }

        @inline(never) func postFoundation(_ k: Int) {
            let center = foundation, name = foundationName
            for _ in 0..<k { center.post(name: name, object: nil) }
        }
    }

    /// Applications made through the C ABI: `app` with N observers of one name per N, a userInfo reader
    /// and the add + remove name; `crowded` with 1 observer among `crowd` observers of as many other names.
    final class Fixture {
        let app: OpaquePointer
        let crowded: OpaquePointer
        let sets: [Int: PostSet]
        let crowdedName: lc_name
        let crowdedCounter = Counter()
        let otherCounter = Counter()
        let infoName: lc_name
        let infoCounter = Counter()
        /// A 3-entry userInfo ("s": "hello", "i": 42, "b": true) built once with lc_dict_*.
        let userInfo: OpaquePointer
        let foundationInfo = NotificationCenter()
        let foundationInfoName = Notification.Name("bench.abi.userinfo")
        let foundationUserInfo: [AnyHashable: Any] = ["s": "hello", "i": 42, "b": true]
        private var foundationInfoToken: (any NSObjectProtocol)?
        /// add + remove: the name as a C string and interned; observers that must never be called.
        let addRemoveString: UnsafeMutablePointer<CChar>
        let addRemoveName: lc_name
        let addRemoveCounter = Counter()
        let foundationAddRemove = NotificationCenter()
        let foundationAddRemoveName = Notification.Name("bench.abi.addremove")

        /// anchor_post_count as an lc_observer_fn (the same shape; the record is not read).
        static let count: lc_observer_fn = unsafeBitCast(anchor_post_count as anchor_post_fn, to: lc_observer_fn.self)

        /// A C observer reading key "i" of the userInfo with lc_dict_get_int.
        static let readInt: lc_observer_fn = { notification, context in
            guard let notification, let context else { return }
            var value: Int64 = 0
            if lc_dict_get_int(notification.pointee.user_info, "i", &value) == lc_status(LC_OK) {
                context.assumingMemoryBound(to: UInt64.self).pointee &+= UInt64(value)
            }
        }

        static func makeApp() -> OpaquePointer {
            var app: OpaquePointer?
            guard lc_app_create(nil, &app) == lc_status(LC_OK), let app else { fatalError("posting: lc_app_create failed") }
            guard lc_app_perform_simple(app, lc_action_kind(LC_ACTION_LAUNCH)) == lc_status(LC_OK) else {
                fatalError("posting: launch failed: \(lc_last_error_message().map { String(cString: $0) } ?? "?")")
            }
            return app
        }

        static func intern(_ string: String) -> lc_name {
            var id: lc_name = 0
            guard lc_name_intern(string, &id) == lc_status(LC_OK) else { fatalError("posting: lc_name_intern(\(string)) failed") }
            return id
        }

        static func observe(_ app: OpaquePointer, _ name: lc_name, _ fn: lc_observer_fn, _ context: UnsafeMutableRawPointer) {
            guard lc_app_observe_name(app, name, nil, fn, context, nil) == lc_status(LC_OK) else {
                fatalError("posting: lc_app_observe_name failed")
            }
        }

        init(crowd: Int) {
            app = Self.makeApp()
            crowded = Self.makeApp()
            var sets: [Int: PostSet] = [:]
            for n in PostingBenchmarks.observerCounts { sets[n] = PostSet(n, app: app) }
            self.sets = sets
            for i in 0..<crowd {
                Self.observe(crowded, Self.intern("com.example.bench.abi.crowd\(i)"), Self.count, otherCounter.context)
            }
            crowdedName = Self.intern("com.example.bench.abi.crowded")
            Self.observe(crowded, crowdedName, Self.count, crowdedCounter.context)
            infoName = Self.intern("com.example.bench.abi.userinfo")
            Self.observe(app, infoName, Self.readInt, infoCounter.context)
            guard let dict = lc_dict_create() else { fatalError("posting: lc_dict_create failed") }
            _ = lc_dict_set_string(dict, "s", "hello")
            _ = lc_dict_set_int(dict, "i", 42)
            _ = lc_dict_set_bool(dict, "b", true)
            userInfo = dict
            let infoCounter = infoCounter
            foundationInfoToken = foundationInfo.addObserver(forName: foundationInfoName, object: nil, queue: nil) { notification in
                if let i = notification.userInfo?["i"] as? Int { infoCounter.add(UInt64(i)) }
            }
            addRemoveString = strdup("com.example.bench.abi.addremove")!
            addRemoveName = Self.intern("com.example.bench.abi.addremove")
            for n in PostingBenchmarks.observerCounts { verify(n) }
            let before = crowdedCounter.value, others = otherCounter.value
            _ = lc_app_post_name(crowded, crowdedName, nil, nil)
            if crowdedCounter.value - before != 1 || otherCounter.value != others {
                warn("posting: the post among \(crowd) other names reached the wrong observers")
            }
            verifyUserInfo()
        }

        // The measured loops, each `k` operations. Not inlined into the closures that time them, so the
        // timed code is the same in the measuring run and in the callgrind child.

        @inline(never) func postName(_ n: Int, _ k: Int) {
            let app = app, name = sets[n]!.name
            for _ in 0..<k { _ = lc_app_post_name(app, name, nil, nil) }
        }

        @inline(never) func postString(_ n: Int, _ k: Int) {
            let app = app, string = sets[n]!.string
            for _ in 0..<k { _ = lc_app_post(app, string, nil, nil) }
        }

        @inline(never) func postCrowded(_ k: Int) {
            let app = crowded, name = crowdedName
            for _ in 0..<k { _ = lc_app_post_name(app, name, nil, nil) }
        }

        @inline(never) func postUserInfo(_ k: Int) {
            let app = app, name = infoName, info = userInfo
            for _ in 0..<k { _ = lc_app_post_name(app, name, nil, info) }
        }

        @inline(never) func postFoundationUserInfo(_ k: Int) {
            let center = foundationInfo, name = foundationInfoName, info = foundationUserInfo
            for _ in 0..<k { center.post(name: name, object: nil, userInfo: info) }
        }

        @inline(never) func addRemoveByString(_ k: Int) {
            let app = app, string = addRemoveString, context = addRemoveCounter.context
            var token: lc_observer_token = 0
            for _ in 0..<k {
                _ = lc_app_observe(app, string, nil, Self.count, context, &token)
                _ = lc_app_remove_observer(app, token)
            }
        }

        @inline(never) func addRemoveByName(_ k: Int) {
            let app = app, name = addRemoveName, context = addRemoveCounter.context
            var token: lc_observer_token = 0
            for _ in 0..<k {
                _ = lc_app_observe_name(app, name, nil, Self.count, context, &token)
                _ = lc_app_remove_observer(app, token)
            }
        }

        @inline(never) func addRemoveFoundation(_ k: Int) {
            let center = foundationAddRemove, name = foundationAddRemoveName, counter = addRemoveCounter
            for _ in 0..<k {
                center.removeObserver(center.addObserver(forName: name, object: nil, queue: nil) { _ in counter.add(1) })
            }
        }

        /// One post each way to N observers must reach exactly N (catches held delivery, a wrong name...).
        func verify(_ n: Int) {
            let set = sets[n]!
            let counters = [set.counter, set.loopCounter, set.foundationCounter]
            var before = counters.map(\.value)
            postName(n, 1)
            set.cLoop(1)
            set.postFoundation(1)
            for (counter, old) in zip(counters, before) where counter.value - old != UInt64(n) {
                warn("posting: a post to \(n) observers reached \(counter.value - old)")
            }
            before[0] = set.counter.value
            postString(n, 1)
            if set.counter.value - before[0] != UInt64(n) { warn("posting: lc_app_post to \(n) observers reached \(set.counter.value - before[0])") }
        }

        /// One post with the userInfo each way: each observer must have read 42.
        func verifyUserInfo() {
            let before = infoCounter.value
            postUserInfo(1)
            postFoundationUserInfo(1)
            if infoCounter.value - before != 2 * 42 { warn("posting: the userInfo observers did not both read userInfo[\"i\"]") }
        }

        /// After add + remove, nothing is left observing: a post reaches nobody.
        func verifyAddRemove() {
            let before = addRemoveCounter.value
            _ = lc_app_post_name(app, addRemoveName, nil, nil)
            foundationAddRemove.post(name: foundationAddRemoveName, object: nil)
            if addRemoveCounter.value != before { warn("posting: add + remove left observers behind") }
        }

        /// Heap bytes per observer: `count` C observers of one name (lc_app_observe_name), and Foundation's.
        func memoryPerObserver(_ count: Int) -> (ours: Double, foundation: Double) {
            let name = Self.intern("com.example.bench.abi.memory")
            let counter = Counter()
            var tokens = [lc_observer_token](repeating: 0, count: count)
            let ours = tokens.withUnsafeMutableBufferPointer { buffer in
                heapDelta {
                    for i in 0..<count { _ = lc_app_observe_name(app, name, nil, Self.count, counter.context, &buffer[i]) }
                }
            }
            _ = lc_app_post_name(app, name, nil, nil)
            if counter.value != UInt64(count) { warn("posting: \(count) observers for memory reached \(counter.value)") }
            for token in tokens { _ = lc_app_remove_observer(app, token) }

            let center = NotificationCenter()
            let foundationName = Notification.Name("bench.abi.memory")
            var foundationTokens: [any NSObjectProtocol] = []
            foundationTokens.reserveCapacity(count)
            let theirs = heapDelta {
                for _ in 0..<count {
                    foundationTokens.append(center.addObserver(forName: foundationName, object: nil, queue: nil) { _ in counter.add(1) })
                }
            }
            for token in foundationTokens { center.removeObserver(token) }
            return (Double(ours) / Double(count), Double(theirs) / Double(count))
        }
    }
}
