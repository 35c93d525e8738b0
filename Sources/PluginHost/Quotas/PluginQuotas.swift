import AppLifecycle

/// The most a plugin may make the host keep for it at once, by kind (`QuotaKind`), in both modes
/// (in the host's process, and isolated: counted by the host, and refused in the plugin's process
/// before a frame is sent). A call past a quota answers `LC_ERR_QUOTA` and changes nothing.
///
/// The numbers (the defaults): generous for a real plugin, small enough that a host with many
/// plugins stays bounded. Each quota times what one item costs the host (its resident set, measured
/// with the host's debug build; isolated costs more: the host keeps its own table of an isolated
/// plugin's registrations besides the engine's):
///
/// | kind | default | one costs the host, isolated (in its process) | a plugin at its quota |
/// |---|---|---|---|
/// | observers | 100,000 | 170 B (48 B) | 17 MB |
/// | timers | 10,000 | 510 B (450 B) | 5.1 MB |
/// | open background tasks | 1,000 | 90 B | 0.1 MB |
/// | custom notification names | 10,000 | 140 B for a 30-byte name, at most 400 B (255 bytes) | 1.4 to 4 MB |
///
/// so at most about 26 MB a plugin, whatever it does (10 plugins at every quota: 260 MB); without
/// quotas one plugin took the host to 2.7 GB in 32 s. 100,000 observers is the largest plugin the
/// project itself measures (unloading it in under 50 ms); `lifecycle-host run --plugin-quota
/// observers=N` (and the other kinds) lowers or raises a quota for every plugin of a run.
///
/// **Keeps pushing.** An isolated plugin refused `cutOffRefusals` times within `cutOffWindow`
/// (counted from the first refusal of a window; a window that ends below the count starts afresh)
/// is cut off: SIGKILL, reported as `PluginFailure.Cause.quotaExceeded`. A plugin in the host's
/// process cannot be cut off: it is refused, each time, at O(1) cost.
package struct PluginQuotas: Sendable, Equatable {
    package var observers = 100_000
    package var timers = 10_000
    package var backgroundTasks = 1_000
    package var customNames = 10_000

    /// Refusals within `cutOffWindow` that cut an isolated plugin off.
    package static let cutOffRefusals = 1_000
    package static let cutOffWindow: Duration = .seconds(10)
    /// The largest quota that may be set.
    package static let maximum = 10_000_000

    package init() {}

    package subscript(kind: QuotaKind) -> Int {
        get {
            switch kind {
            case .observers: observers
            case .timers: timers
            case .backgroundTasks: backgroundTasks
            case .customNames: customNames
            }
        }
        set {
            switch kind {
            case .observers: observers = newValue
            case .timers: timers = newValue
            case .backgroundTasks: backgroundTasks = newValue
            case .customNames: customNames = newValue
            }
        }
    }

    /// Sets one quota from `KIND=N` (`observers=500`, `custom-names=20000`), N from 1 to `maximum`.
    /// - Throws: the reason, in words naming what was given.
    package mutating func set(parsing text: String) throws(QuotaSettingError) {
        guard let equals = text.firstIndex(of: "=") else {
            throw QuotaSettingError("'\(text)' is not KIND=N (kinds: \(Self.kindList))")
        }
        let name = String(text[..<equals])
        guard let kind = QuotaKind(rawValue: name) else {
            throw QuotaSettingError("unknown quota '\(name)' (kinds: \(Self.kindList))")
        }
        guard let value = Int(text[text.index(after: equals)...]), value >= 1, value <= Self.maximum else {
            throw QuotaSettingError("\(name)=\(text[text.index(after: equals)...]): a whole number from 1 to \(Self.maximum)")
        }
        self[kind] = value
    }

    private static var kindList: String { QuotaKind.allCases.map(\.rawValue).joined(separator: ", ") }

    /// The quotas as a frame carries them to an isolated plugin's process (`proceed`): one u32 a kind,
    /// in `QuotaKind.allCases` order.
    func write(to out: inout FrameWriter) {
        for kind in QuotaKind.allCases { out.u32(UInt32(self[kind])) }
    }

    static func read(_ reader: inout FrameReader) throws(ProtocolViolation) -> PluginQuotas {
        var quotas = PluginQuotas()
        for kind in QuotaKind.allCases {
            let value = try reader.u32("\(kind) quota")
            guard value >= 1, value <= maximum else { throw ProtocolViolation("a \(kind) quota of \(value)") }
            quotas[kind] = Int(value)
        }
        return quotas
    }
}

/// Why a quota setting was refused (`PluginQuotas.set(parsing:)`).
package struct QuotaSettingError: Error, Sendable {
    package let message: String
    init(_ message: String) { self.message = message }
}
