import CoreMetrics
import Synchronization

/// The host's metrics backend: a swift-metrics `MetricsFactory` that keeps every metric in memory and
/// renders them in the Prometheus text exposition format (version 0.0.4), for `--metrics` and
/// `--metrics-file`.
///
/// Mapping: a `Counter` (and a floating-point counter) is a Prometheus `counter`; a `Gauge`, a
/// non-aggregating `Recorder` and a `Meter` a `gauge` (the last value); a `Timer` a `histogram` in
/// seconds (`Buckets.seconds`); an aggregating `Recorder` a `histogram` of its values
/// (`Buckets.values`). A label becomes the metric's name and the dimensions its labels, both made
/// valid Prometheus names (`[a-zA-Z_:][a-zA-Z0-9_:]*`, anything else `_`). Handlers of the same name
/// and dimensions share one series; a name made again with another type gets a handler that is not
/// exported (the first type holds).
///
/// [thread-safe] Handlers record with atomics (counters, gauges) or a lock of their own
/// (histograms), never the registry's lock; `render()` takes the registry's lock, then each
/// histogram's in turn. Per record O(1); per render O(series · buckets) plus sorting.
final class PrometheusRegistry: MetricsFactory, @unchecked Sendable {
    // @unchecked: `families` is behind `lock`; handlers are Sendable.

    enum Kind: String, Sendable { case counter, gauge, histogram }

    /// Histogram upper bounds.
    enum Buckets {
        /// Durations, seconds: 10 µs to 10 s.
        static let seconds: [Double] = [0.000_01, 0.000_05, 0.000_1, 0.000_5, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10]
        /// Other recorded values.
        static let values: [Double] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 10_000, 100_000]
    }

    private struct Family {
        let kind: Kind
        /// By the rendered label set (`{a="x",b="y"}` or ""), each series' handler.
        var series: [String: any AnyObject & Sendable] = [:]
    }

    private let lock = Mutex<[String: Family]>([:])
    /// HELP lines by metric name (`MetricCatalog`).
    private let help: [String: String]

    init(help: [String: String] = MetricCatalog.help) {
        self.help = help
    }

    // MARK: MetricsFactory

    func makeCounter(label: String, dimensions: [(String, String)]) -> CounterHandler {
        series(label, dimensions, .counter) { IntegerCounter() } ?? IntegerCounter()
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> FloatingPointCounterHandler {
        series(label, dimensions, .counter) { GaugeValue() } ?? GaugeValue()
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> MeterHandler {
        series(label, dimensions, .gauge) { GaugeValue() } ?? GaugeValue()
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> RecorderHandler {
        if aggregate {
            return series(label, dimensions, .histogram) { Histogram(bounds: Buckets.values, scale: 1) } ?? Histogram(bounds: Buckets.values, scale: 1)
        }
        return series(label, dimensions, .gauge) { GaugeValue() } ?? GaugeValue()
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> TimerHandler {
        series(label, dimensions, .histogram) { Histogram(bounds: Buckets.seconds, scale: 1e-9) }
            ?? Histogram(bounds: Buckets.seconds, scale: 1e-9)
    }

    /// A series without labels whose value its owner sets from what it reads elsewhere: a gauge, or
    /// a counter another keeps (the CPU seconds the kernel counts: `ProcessMetrics`), exported as
    /// `kind`. A name that already has another kind gets a value that is not exported (the first
    /// kind holds, as for every handler). [thread-safe]
    func value(_ label: String, kind: Kind) -> GaugeValue {
        series(label, [], kind) { GaugeValue() } ?? GaugeValue()
    }

    func destroyCounter(_ handler: CounterHandler) { remove(handler) }
    func destroyFloatingPointCounter(_ handler: FloatingPointCounterHandler) { remove(handler) }
    func destroyMeter(_ handler: MeterHandler) { remove(handler) }
    func destroyRecorder(_ handler: RecorderHandler) { remove(handler) }
    func destroyTimer(_ handler: TimerHandler) { remove(handler) }

    /// The series `label` + `dimensions` of `kind`, made by `make` the first time; nil when the name
    /// already has another kind, or the series a handler of another class.
    private func series<H: AnyObject & Sendable>(_ label: String, _ dimensions: [(String, String)], _ kind: Kind, _ make: () -> H) -> H? {
        let name = Self.metricName(label)
        let labels = Self.labelSet(dimensions)
        return lock.withLock { families -> H? in
            var family = families[name] ?? Family(kind: kind)
            guard family.kind == kind else { return nil }
            if let existing = family.series[labels] { return existing as? H }
            let handler = make()
            family.series[labels] = handler
            families[name] = family
            return handler
        }
    }

    private func remove(_ handler: AnyObject) {
        let handler = ObjectIdentifier(handler)
        lock.withLock { families in
            for (name, family) in families {
                guard let key = family.series.first(where: { ObjectIdentifier($0.value) == handler })?.key else { continue }
                families[name]?.series[key] = nil
                if families[name]?.series.isEmpty == true { families[name] = nil }
                return
            }
        }
    }

    // MARK: Exposition

    /// Every metric in the text exposition format: families by name, series by labels, each family's
    /// `# HELP` (when the catalog has it) and `# TYPE` first.
    func render() -> String {
        let snapshot = lock.withLock { families in families.map { ($0.key, $0.value) } }.sorted { $0.0 < $1.0 }
        var out = ""
        for (name, family) in snapshot {
            if let text = help[name] { out += "# HELP \(name) \(Self.escapeHelp(text))\n" }
            out += "# TYPE \(name) \(family.kind.rawValue)\n"
            for (labels, handler) in family.series.sorted(by: { $0.key < $1.key }) {
                switch handler {
                case let counter as IntegerCounter: out += "\(name)\(labels) \(counter.value)\n"
                case let gauge as GaugeValue: out += "\(name)\(labels) \(Self.number(gauge.value))\n"
                case let histogram as Histogram: out += histogram.render(name, labels)
                default: break
                }
            }
        }
        return out
    }

    /// A metric or label name made valid: `[a-zA-Z_:][a-zA-Z0-9_:]*` (labels: no `:`), other bytes `_`.
    static func metricName(_ text: String, colons: Bool = true) -> String {
        var bytes = Array(text.utf8).map { byte -> UInt8 in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "_"):
                return byte
            case UInt8(ascii: ":") where colons: return byte
            default: return UInt8(ascii: "_")
            }
        }
        if bytes.isEmpty || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[0]) { bytes.insert(UInt8(ascii: "_"), at: 0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `{a="x",b="y"}` in the dimensions' order, values escaped (`\\`, `\"`, `\n`); "" for none.
    static func labelSet(_ dimensions: [(String, String)]) -> String {
        guard !dimensions.isEmpty else { return "" }
        let pairs = dimensions.map { "\(metricName($0.0, colons: false))=\"\(escapeLabel($0.1))\"" }
        return "{" + pairs.joined(separator: ",") + "}"
    }

    static func escapeLabel(_ value: String) -> String {
        var out = ""
        for character in value.unicodeScalars {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    private static func escapeHelp(_ text: String) -> String {
        text.replacingAll("\\", with: "\\\\").replacingAll("\n", with: "\\n")
    }

    /// A sample value: integers without a fraction, `+Inf`, `-Inf`, `NaN` as Prometheus spells them.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}

extension String {
    /// Every `target` replaced by `replacement` (no Foundation here).
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for character in self { if character == target { out += replacement } else { out.append(character) } }
        return out
    }
}

// MARK: Handlers

/// A counter: an atomic 64-bit count (a negative increment is ignored: counters only go up).
final class IntegerCounter: CounterHandler, Sendable {
    private let count = Atomic<Int64>(0)
    var value: Int64 { count.load(ordering: .relaxed) }
    func increment(by amount: Int64) {
        guard amount > 0 else { return }
        count.wrappingAdd(amount, ordering: .relaxed)
    }
    func reset() { count.store(0, ordering: .relaxed) }
}

/// A gauge (or a floating-point counter): the last value, a Double's bits in one atomic word.
final class GaugeValue: RecorderHandler, MeterHandler, FloatingPointCounterHandler, Sendable {
    private let bits = Atomic<UInt64>(0)
    var value: Double { Double(bitPattern: bits.load(ordering: .relaxed)) }
    func record(_ value: Int64) { set(Double(value)) }
    func record(_ value: Double) { set(value) }
    func set(_ value: Int64) { set(Double(value)) }
    func set(_ value: Double) { bits.store(value.bitPattern, ordering: .relaxed) }
    func increment(by amount: Double) { add(amount) }
    func decrement(by amount: Double) { add(-amount) }
    func reset() { set(0.0) }
    private func add(_ amount: Double) {
        var old = bits.load(ordering: .relaxed)
        while true {
            let new = (Double(bitPattern: old) + amount).bitPattern
            let (exchanged, original) = bits.compareExchange(expected: old, desired: new, ordering: .relaxed)
            if exchanged { return }
            old = original
        }
    }
}

/// A histogram: cumulative bucket counts, the sum and the count, behind its own lock. `scale` turns a
/// recorded value into the exported unit (nanoseconds → seconds for a timer).
final class Histogram: TimerHandler, RecorderHandler, Sendable {
    private struct Counts {
        var buckets: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    let bounds: [Double]
    private let scale: Double
    private let counts: Mutex<Counts>

    init(bounds: [Double], scale: Double) {
        self.bounds = bounds
        self.scale = scale
        counts = Mutex(Counts(buckets: Array(repeating: 0, count: bounds.count)))
    }

    func recordNanoseconds(_ duration: Int64) { observe(Double(duration) * scale) }
    func record(_ value: Int64) { observe(Double(value) * scale) }
    func record(_ value: Double) { observe(value * scale) }

    /// One value: the first bucket whose bound holds it (by halving), counted; cumulated at render.
    private func observe(_ value: Double) {
        guard !value.isNaN else { return }
        var low = 0, high = bounds.count
        while low < high {
            let middle = (low + high) / 2
            if bounds[middle] < value { low = middle + 1 } else { high = middle }
        }
        counts.withLock { counts in
            if low < counts.buckets.count { counts.buckets[low] += 1 }
            counts.sum += value
            counts.count += 1
        }
    }

    /// The `_bucket` lines (cumulative, `le` last among the labels), `_sum` and `_count`.
    func render(_ name: String, _ labels: String) -> String {
        let counts = counts.withLock { $0 }
        let inner = labels.isEmpty ? "" : String(labels.dropFirst().dropLast()) + ","
        var out = ""
        var cumulative: UInt64 = 0
        for (index, bound) in bounds.enumerated() {
            cumulative += counts.buckets[index]
            out += "\(name)_bucket{\(inner)le=\"\(PrometheusRegistry.number(bound))\"} \(cumulative)\n"
        }
        out += "\(name)_bucket{\(inner)le=\"+Inf\"} \(counts.count)\n"
        out += "\(name)_sum\(labels) \(PrometheusRegistry.number(counts.sum))\n"
        out += "\(name)_count\(labels) \(counts.count)\n"
        return out
    }
}
