@preconcurrency import Glibc
import LifecycleRunLoop

/// The thermal level read from the kernel's thermal zones, coolest first: Foundation's
/// `ProcessInfo.ThermalState` levels, which the host maps one to one.
public enum ThermalLevel: Int, Hashable, Sendable, Comparable, CustomStringConvertible {
    case nominal, fair, serious, critical

    public var description: String {
        switch self {
        case .nominal: "nominal"
        case .fair: "fair"
        case .serious: "serious"
        case .critical: "critical"
        }
    }

    public static func < (a: ThermalLevel, b: ThermalLevel) -> Bool { a.rawValue < b.rawValue }
}

/// What the thermal zones say: the device's level (the hottest zone's), which zone gave it, and its
/// temperature in millidegrees Celsius.
public struct ThermalReading: Hashable, Sendable, CustomStringConvertible {
    public var level: ThermalLevel
    public var zone: String
    public var milliCelsius: Int

    /// `thermal serious (thermal_zone0 87.5 C)`.
    public var description: String {
        let whole = milliCelsius / 1000, tenth = abs(milliCelsius % 1000) / 100
        return "thermal \(level) (\(zone) \(milliCelsius < 0 && whole == 0 ? "-" : "")\(whole).\(tenth) C)"
    }
}

/// The kernel's thermal zones (`/sys/class/thermal/thermal_zone*/temp` and their trip points), polled
/// on a loop timer, as `ThermalReading`s when the device's level changes.
///
/// Levels, per zone (temperatures in millidegrees Celsius, as sysfs gives them):
/// - `critical` from the lowest `critical` or `hot` trip point (95 °C without one);
/// - `serious` from the lowest `passive` trip point, where the kernel starts to throttle (without one:
///   85 °C, or 10 °C below `critical` if that is lower);
/// - `fair` from 10 °C below `serious`;
/// - `nominal` below.
/// The device's level is the hottest zone's. A zone whose `temp` cannot be read, is not a decimal
/// integer, or is outside −273 °C…500 °C is left out (told once to the problem handler); so is a trip
/// point that cannot be read. At most 64 zones and 32 trip points a zone are read.
///
/// Guarantees: **thread** — reads and emits on the loop thread, inside a loop turn (the first reading
/// one turn after `start`); **time** — a read every `interval` (2 s by default), a few small files
/// each, never blocking on anything but sysfs; **order** — a reading is emitted only when the level
/// changes, the first one always.
public final class ThermalZoneSource: @unchecked Sendable {
    // @unchecked: every member is [loop-thread].

    private let sink: OSEventSink
    private let emitReading: (ThermalReading) -> Void
    private var timer: LoopSource?
    private var last: ThermalLevel?
    private var reported: Set<String> = []
    private(set) var folder = "/sys/class/thermal"

    static let maxZones = 64
    static let maxTrips = 32

    init(sink: OSEventSink, emit: @escaping (ThermalReading) -> Void) {
        self.sink = sink
        emitReading = emit
    }

    deinit { timer?.cancel() }

    /// Starts polling `folder` every `interval`; the first read is on the next loop turn. [loop-thread]
    func start(folder: String, interval: Duration) {
        guard timer == nil else { return }
        self.folder = folder
        last = nil
        sink.loop.performNext { [weak self] in self?.poll() }
        timer = sink.loop.addRealTimeTimer(after: interval, repeating: interval) { [weak self] in self?.poll() }
    }

    /// Stops polling; nothing is emitted again. [loop-thread] Idempotent.
    func stop() {
        timer?.cancel()
        timer = nil
    }

    private func poll() {
        guard timer != nil else { return }
        guard let reading = currentReading() else { return }
        if reading.level != last {
            last = reading.level
            emitReading(reading)
        }
    }

    /// The hottest zone's reading, or nil when no zone can be read.
    func currentReading() -> ThermalReading? {
        var best: ThermalReading?
        for index in 0..<Self.maxZones {
            let zone = "thermal_zone\(index)"
            let base = "\(folder)/\(zone)"
            guard access(base, F_OK) == 0 else { continue }
            guard let temp = Self.number(base + "/temp"), temp >= -273_000, temp <= 500_000 else {
                if reported.insert(zone).inserted {
                    sink.problem(OSEventError(.invalidArgument, "thermal: \(base)/temp is not a temperature in millidegrees; the zone is left out"))
                }
                continue
            }
            let reading = ThermalReading(level: level(temp, zone: base), zone: zone, milliCelsius: temp)
            if best == nil || reading.level > best!.level || (reading.level == best!.level && reading.milliCelsius > best!.milliCelsius) {
                best = reading
            }
        }
        return best
    }

    /// The zone's level at `temp`, from its trip points.
    private func level(_ temp: Int, zone base: String) -> ThermalLevel {
        var critical: Int?, passive: Int?
        for trip in 0..<Self.maxTrips {
            guard let type = Self.word("\(base)/trip_point_\(trip)_type") else { break }
            guard let value = Self.number("\(base)/trip_point_\(trip)_temp"), value > 0, value <= 500_000 else { continue }
            switch type {
            case "critical", "hot": critical = min(critical ?? value, value)
            case "passive": passive = min(passive ?? value, value)
            default: break
            }
        }
        let criticalAt = critical ?? 95_000
        let seriousAt = passive ?? min(85_000, criticalAt - 10_000)
        if temp >= criticalAt { return .critical }
        if temp >= seriousAt { return .serious }
        if temp >= seriousAt - 10_000 { return .fair }
        return .nominal
    }

    /// The first line of a sensor's file, or nil: when it cannot be read, is empty, holds more than a
    /// sysfs attribute can (a page, 4 KiB), or its first line is over 63 bytes.
    static func word(_ path: String) -> String? {
        // A sensor's driver may sleep in the read (a bus transfer): EINTR is retried (WholeFile).
        guard let bytes = try? WholeFile.read(path, atMost: 4096, flags: O_NONBLOCK), !bytes.isEmpty else { return nil }
        let line = bytes.prefix { $0 != 0x0A }
        guard line.count <= 63 else { return nil }
        return String(decoding: line, as: UTF8.self)
    }

    /// A file's first line as a decimal integer, or nil.
    static func number(_ path: String) -> Int? {
        guard let text = word(path), !text.isEmpty, text.count <= 12 else { return nil }
        return Int(text)
    }
}
