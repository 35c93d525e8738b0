import BenchHarness
import CBenchAnchors
import CBenchPeers
import CLifecycleABI

// Removing observers one by one through the public C ABI, the path a C user (and every plugin's
// remove_observer) takes: N observers of one name registered with lc_app_observe_name, then N calls of
// lc_app_remove_observer, in registration order, in reverse and in a shuffled order, beside Qt 5's
// QObject::disconnect(connection) over N functor connections to one signal, taken in the same order, in
// the same run. Only the removal loop is timed, on both sides; one post (one emit) afterwards must reach
// no observer. The per-removal cost at N = 10,000 and at N = 100,000 shows whether a removal grows with
// the list (a shift or a scan per removal grows 10×; O(1) or O(log n) does not).

enum RemovalBenchmarks {
    static let counts = [10_000, 100_000]

    enum Order: CaseIterable {
        case registration, reverse, shuffled

        var label: String {
            switch self {
            case .registration: return "in registration order"
            case .reverse: return "in reverse order"
            case .shuffled: return "in a shuffled order"
            }
        }

        /// The permutation of 0..<n this order removes in (shuffled: the same fixed seed every run).
        func permutation(_ n: Int) -> [UInt32] {
            switch self {
            case .registration: return (0..<n).map { UInt32($0) }
            case .reverse: return (0..<n).reversed().map { UInt32($0) }
            case .shuffled:
                var list = (0..<n).map { UInt32($0) }
                var state: UInt64 = 0x9E37_79B9_7F4A_7C15
                for i in stride(from: n - 1, to: 0, by: -1) {
                    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    list.swapAt(i, Int((state >> 33) % UInt64(i + 1)))
                }
                return list
            }
        }
    }

    static func run(_ settings: Settings) -> [Row] {
        var rows: [Row] = []
        for order in Order.allCases {
            var perRemoval: [Int: (ours: Figure, qt: Figure)] = [:]
            for n in counts {
                let permutation = order.permutation(n)
                let runs = settings.quick ? 1 : settings.runs
                var ours: [Double] = []
                var qt: [Double] = []
                for _ in 0..<runs + (settings.quick ? 0 : 1) {  // the first pair warms up, unless --quick
                    let mine = removeThroughABI(permutation)
                    var theirs: UInt64 = 0
                    if peer_qt_disconnect(n, permutation, &theirs) != UInt64(n) { warn("removal: Qt disconnected the wrong count") }
                    ours.append(Double(mine))
                    qt.append(Double(theirs))
                }
                if !settings.quick {
                    ours.removeFirst()
                    qt.removeFirst()
                }
                perRemoval[n] = (summarize(ours.map { $0 / Double(n) }, unit: "ns"), summarize(qt.map { $0 / Double(n) }, unit: "ns"))
            }
            let large = counts.last!, small = counts.first!
            let (ours, qt) = perRemoval[large]!
            let growth = ours.median / max(perRemoval[small]!.ours.median, 0.001)
            let total = Figure(median: ours.median * Double(large) / 1e6, min: ours.min * Double(large) / 1e6,
                               max: ours.max * Double(large) / 1e6, unit: "ms")
            let qtTotal = Figure(median: qt.median * Double(large) / 1e6, min: qt.min * Double(large) / 1e6,
                                 max: qt.max * Double(large) / 1e6, unit: "ms")
            // O(1) or O(log n): from 10,000 to 100,000 observers a removal may grow by the logarithm's
            // step and the caches', never by the list's 10×.
            let flat = growth <= 3
            rows.append(Row(group: "removal",
                            name: "remove \(large) observers \(order.label): C ABI lc_app_remove_observer (-c release)",
                            ours: total,
                            anchors: [("Qt 5 QObject::disconnect(connection), \(large) functor connections (qtbase5-dev from Debian)", qtTotal)],
                            target: "≤ 2× Qt's disconnect; each removal O(1) or O(log n)",
                            met: settings.quick ? nil : ours.median <= 2 * qt.median && flat,
                            ratios: "\(ratio(ours.median, qt.median)) Qt; \(Figure.format(ours.median)) ns a removal at \(large), "
                                + "\(Figure.format(perRemoval[small]!.ours.median)) ns at \(small) (\(ratio(growth, 1)) \(flat ? "— flat" : "— GROWS with the list"))"))
        }
        return rows
    }

    /// Registers `order.count` C observers of one name on a fresh application, removes them in `order`
    /// (timed), then posts once and checks that no observer ran. Returns the removal loop's nanoseconds.
    static func removeThroughABI(_ order: [UInt32]) -> UInt64 {
        var app: OpaquePointer?
        guard lc_app_create(nil, &app) == lc_status(LC_OK), let app else { fatalError("removal: lc_app_create failed") }
        defer { lc_app_destroy(app) }
        var name: lc_name = 0
        guard lc_name_intern("bench.removal", &name) == lc_status(LC_OK) else { fatalError("removal: lc_name_intern failed") }
        let counter = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
        counter.initialize(to: 0)
        defer { counter.deallocate() }
        let observer: lc_observer_fn = unsafeBitCast(anchor_post_count as anchor_post_fn, to: lc_observer_fn.self)
        var tokens = [lc_observer_token](repeating: 0, count: order.count)
        for i in tokens.indices {
            guard lc_app_observe_name(app, name, nil, observer, counter, &tokens[i]) == lc_status(LC_OK) else {
                fatalError("removal: lc_app_observe_name failed")
            }
        }
        var refused = 0
        let elapsed = tokens.withUnsafeBufferPointer { tokens in
            order.withUnsafeBufferPointer { order in
                timed {
                    for index in order where lc_app_remove_observer(app, tokens[Int(index)]) != lc_status(LC_OK) { refused += 1 }
                }
            }
        }
        _ = lc_app_post_name(app, name, nil, nil)
        if refused != 0 || counter.pointee != 0 {
            warn("removal: \(refused) removals refused, \(counter.pointee) observers still called after removal")
        }
        return elapsed
    }
}
