@preconcurrency import Glibc

// A small benchmark harness: every case measures ours and its anchors in the same run, on the same
// machine, and reports medians with min–max over repeated runs. Not a test: nothing here asserts.

/// One measured figure: median and range over runs, in `unit`.
struct Figure: Sendable {
    var median: Double
    var min: Double
    var max: Double
    var unit: String
    /// Where the code ran (e.g. "main thread", "worker thread"), for anchors that do not run on the caller.
    var note: String? = nil

    static func single(_ value: Double, _ unit: String, note: String? = nil) -> Figure {
        Figure(median: value, min: value, max: value, unit: unit, note: note)
    }

    var text: String {
        let range = min == max ? "" : " (\(Self.format(min))–\(Self.format(max)))"
        return "\(Self.format(median)) \(unit)\(range)"
    }

    static func format(_ x: Double) -> String {
        if x >= 100 { return String(Int(x.rounded())) }
        if x >= 10 { return String(Double(Int(x * 10)) / 10) }
        return String(Double(Int(x * 100)) / 100)
    }
}

/// One row of the report: a case, our figure, the anchors, the target and whether it is met.
struct Row: Sendable {
    var group: String
    var name: String
    var ours: Figure
    var anchors: [(label: String, figure: Figure)]
    /// e.g. "≤ 30 ns", "≤ 2× C loop".
    var target: String
    /// nil when the row has no target of its own.
    var met: Bool?
    /// Ratios worth printing, e.g. "0.42× C loop, 31× faster than Foundation".
    var ratios: String
    /// Instruction count per operation (callgrind), when measured.
    var instructions: Double? = nil
}

/// How long and how often to measure.
struct Settings: Sendable {
    var runs = 11
    var warmup = 2
    /// `--quick` (CI): one short run per case, only to prove it runs.
    var quick = false
    var filter: String?

    func wants(_ group: String) -> Bool {
        guard let filter else { return true }
        return group.lowercased().contains(filter.lowercased())
    }
}

/// The clock the harness times with (monotonic, nanoseconds).
@inline(__always) func nowNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Times `body` (which performs `operations` operations per call) over repeated runs; returns
/// nanoseconds per operation.
func measure(_ settings: Settings, operations: Int, _ body: () -> Void) -> Figure {
    let runs = settings.quick ? 1 : settings.runs
    let warmup = settings.quick ? 0 : settings.warmup
    for _ in 0..<warmup { body() }
    var samples: [Double] = []
    for _ in 0..<runs {
        let start = nowNanoseconds()
        body()
        let elapsed = nowNanoseconds() - start
        samples.append(Double(elapsed) / Double(max(operations, 1)))
    }
    return summarize(samples, unit: "ns")
}

/// Median and range of samples.
func summarize(_ samples: [Double], unit: String, note: String? = nil) -> Figure {
    let sorted = samples.sorted()
    guard !sorted.isEmpty else { return Figure(median: 0, min: 0, max: 0, unit: unit, note: note) }
    let median = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    return Figure(median: median, min: sorted[0], max: sorted[sorted.count - 1], unit: unit, note: note)
}

/// The p-th percentile (0…100) of samples.
func percentile(_ samples: [Double], _ p: Double) -> Double {
    let sorted = samples.sorted()
    guard !sorted.isEmpty else { return 0 }
    let index = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count - 1)).rounded())))
    return sorted[index]
}

/// Keeps a value alive and opaque to the optimiser.
@inline(never) func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }

/// A ratio as text: "2.1×".
func ratio(_ a: Double, _ b: Double) -> String {
    guard b > 0 else { return "–" }
    let r = a / b
    return r >= 10 ? "\(Int(r.rounded()))×" : "\(Double(Int(r * 100)) / 100)×"
}
