@preconcurrency import Glibc

// A small benchmark harness: every case measures ours and its anchors in the same run, on the same
// machine, and reports medians with min–max over repeated runs. Not a test: nothing here asserts.

/// One measured figure: median and range over runs, in `unit`.
public struct Figure: Sendable, Codable {
    public var median: Double
    public var min: Double
    public var max: Double
    public var unit: String
    /// Where the code ran (e.g. "main thread", "worker thread"), for anchors that do not run on the caller.
    public var note: String? = nil

    public init(median: Double, min: Double, max: Double, unit: String, note: String? = nil) {
        self.median = median
        self.min = min
        self.max = max
        self.unit = unit
        self.note = note
    }

    public static func single(_ value: Double, _ unit: String, note: String? = nil) -> Figure {
        Figure(median: value, min: value, max: value, unit: unit, note: note)
    }

    public var text: String {
        let range = min == max ? "" : " (\(Self.format(min))–\(Self.format(max)))"
        return "\(Self.format(median)) \(unit)\(range)"
    }

    public static func format(_ x: Double) -> String {
        if x >= 100 { return String(Int(x.rounded())) }
        if x >= 10 { return String(Double(Int(x * 10)) / 10) }
        return String(Double(Int(x * 100)) / 100)
    }
}

/// One row of the report: a case, our figure, the anchors, the target and whether it is met.
public struct Row: Sendable {
    public var group: String
    public var name: String
    public var ours: Figure
    public var anchors: [(label: String, figure: Figure)]
    /// e.g. "≤ 30 ns", "≤ 2× C loop"; "information" for a row without a target of its own.
    public var target: String
    /// nil when the row has no target of its own (or when `--quick` cannot judge it).
    public var met: Bool?
    /// Ratios worth printing, e.g. "0.42× C loop, 31× faster than Foundation".
    public var ratios: String
    /// Instruction count per operation (callgrind), when measured.
    public var instructions: Double? = nil

    public init(group: String, name: String, ours: Figure, anchors: [(label: String, figure: Figure)], target: String,
                met: Bool?, ratios: String, instructions: Double? = nil)
    {
        self.group = group
        self.name = name
        self.ours = ours
        self.anchors = anchors
        self.target = target
        self.met = met
        self.ratios = ratios
        self.instructions = instructions
    }
}

/// How long and how often to measure.
public struct Settings: Sendable {
    public var runs = 11
    public var warmup = 2
    /// `--quick` (CI): one short run per case, only to prove it runs.
    public var quick = false
    public var filter: String?

    public init() {}

    public func wants(_ group: String) -> Bool {
        guard let filter else { return true }
        return group.lowercased().contains(filter.lowercased())
    }

    /// The arguments that give another bench process these settings.
    public var arguments: [String] {
        var list = ["--runs", String(runs)]
        if quick { list.append("--quick") }
        return list
    }

    /// Reads `--quick`, `--runs N`, `--filter WORD` from `arguments`, and hands every other argument
    /// to `other` (with the remaining ones, so that it can take a value); exits 64 on an unknown one.
    public static func parse(_ arguments: inout ArraySlice<String>, usage: String,
                             other: (String, inout ArraySlice<String>) -> Bool) -> Settings
    {
        var settings = Settings()
        while let argument = arguments.popFirst() {
            switch argument {
            case "--quick": settings.quick = true
            case "--filter": settings.filter = arguments.popFirst()
            case "--runs":
                guard let text = arguments.popFirst(), let runs = Int(text), (1...1_000).contains(runs) else {
                    fputs("\(CommandLine.arguments[0]): --runs takes a number from 1 to 1000\n", stderr)
                    exit(64)
                }
                settings.runs = runs
            case "-h", "--help":
                print(usage)
                exit(0)
            default:
                if !other(argument, &arguments) {
                    fputs("\(CommandLine.arguments[0]): unknown argument '\(argument)'\n\(usage)\n", stderr)
                    exit(64)
                }
            }
        }
        return settings
    }
}

/// The clock the harness times with (monotonic, nanoseconds).
@inline(__always) public func nowNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Times `body` (which performs `operations` operations per call) over repeated runs; returns
/// nanoseconds per operation.
public func measure(_ settings: Settings, operations: Int, _ body: () -> Void) -> Figure {
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

/// Measures several bodies in alternation, run by run: each performs `k` operations (k calibrated per
/// body so that a run takes a few milliseconds); ns per operation, in order.
public func measureTogether(_ settings: Settings, _ bodies: [(Int) -> Void]) -> [Figure] {
    measureTimed(settings, bodies.map { body in
        { k in
            let start = nowNanoseconds()
            body(k)
            return nowNanoseconds() - start
        }
    })
}

/// Like `measureTogether`, for bodies that time themselves (the peers time only their emit loop):
/// each body performs `k` operations and returns the nanoseconds they took; in alternation, run by
/// run; ns per operation, in order.
public func measureTimed(_ settings: Settings, _ bodies: [(Int) -> UInt64]) -> [Figure] {
    measureTimedSamples(settings, bodies).map { summarize($0, unit: "ns") }
}

/// `measureTimed`'s runs, each run's ns per operation kept, so that a caller can take differences run
/// by run (an action with N plugins minus the same action with none).
public func measureTimedSamples(_ settings: Settings, _ bodies: [(Int) -> UInt64]) -> [[Double]] {
    let runs = settings.quick ? 1 : settings.runs
    let warmup = settings.quick ? 0 : settings.warmup
    let target: UInt64 = settings.quick ? 150_000 : 4_000_000
    let counts: [Int] = bodies.map { body in
        var k = 1
        while true {
            let elapsed = max(body(k), 1)
            if elapsed >= target / 16 || k >= 1 << 28 { return max(1, Int(Double(k) * Double(target) / Double(elapsed))) }
            k *= 4
        }
    }
    for _ in 0..<warmup { for (body, k) in zip(bodies, counts) { _ = body(k) } }
    var samples = [[Double]](repeating: [], count: bodies.count)
    for _ in 0..<runs {
        for (index, (body, k)) in zip(bodies, counts).enumerated() {
            samples[index].append(Double(body(k)) / Double(k))
        }
    }
    return samples
}

/// `measureTogether`'s runs, each kept (see `measureTimedSamples`).
public func measureTogetherSamples(_ settings: Settings, _ bodies: [(Int) -> Void]) -> [[Double]] {
    measureTimedSamples(settings, bodies.map { body in { k in timed { body(k) } } })
}

/// Times `body` and returns the elapsed nanoseconds.
@inline(__always) public func timed(_ body: () -> Void) -> UInt64 {
    let start = nowNanoseconds()
    body()
    return nowNanoseconds() - start
}

/// Median and range of samples.
public func summarize(_ samples: [Double], unit: String, note: String? = nil) -> Figure {
    let sorted = samples.sorted()
    guard !sorted.isEmpty else { return Figure(median: 0, min: 0, max: 0, unit: unit, note: note) }
    let median = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    return Figure(median: median, min: sorted[0], max: sorted[sorted.count - 1], unit: unit, note: note)
}

/// The p-th percentile (0…100) of samples.
public func percentile(_ samples: [Double], _ p: Double) -> Double {
    let sorted = samples.sorted()
    guard !sorted.isEmpty else { return 0 }
    let index = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count - 1)).rounded())))
    return sorted[index]
}

/// Keeps a value alive and opaque to the optimiser.
@inline(never) public func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }

/// A ratio as text: "2.1×".
public func ratio(_ a: Double, _ b: Double) -> String {
    guard b > 0 else { return "–" }
    let r = a / b
    return r >= 10 ? "\(Int(r.rounded()))×" : "\(Double(Int(r * 100)) / 100)×"
}

/// A warning on standard error (a case that went wrong: a lost post, a failed child).
public func warn(_ message: String) {
    var text = message + "\n"
    text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}
