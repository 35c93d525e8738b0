/// The device's thermal state (Apple: `ProcessInfo.ThermalState`), from coolest to hottest.
///
/// The host reads it from the kernel's thermal zones (docs/host.md, "Session events"); a plugin
/// reads it with `Application.thermalState` (C: `lc_app_thermal_state`) and hears its changes as
/// `thermalStateDidChange`.
public enum ThermalState: UInt8, Sendable, CaseIterable, Comparable, CustomStringConvertible {
    /// Within normal limits: no action is needed.
    case nominal = 0
    /// Slightly elevated: reduce work the user does not see (prefetching, background work).
    case fair = 1
    /// High: reduce CPU, GPU and I/O use, the system's performance is impaired.
    case serious = 2
    /// Critical: cut work to the minimum, the system is about to throttle or shut down.
    case critical = 3

    /// `nominal`, `fair`, `serious`, `critical` (the scenario's spelling).
    public var description: String {
        switch self {
        case .nominal: "nominal"
        case .fair: "fair"
        case .serious: "serious"
        case .critical: "critical"
        }
    }

    /// The state spelt `text` (`description`), or nil.
    public init?(name text: String) {
        guard let found = Self.allCases.first(where: { $0.description == text }) else { return nil }
        self = found
    }

    public static func < (a: ThermalState, b: ThermalState) -> Bool { a.rawValue < b.rawValue }
}
