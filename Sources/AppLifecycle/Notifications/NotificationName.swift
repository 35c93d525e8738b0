import Glibc
import Synchronization

/// An interned notification name.
///
/// Every name is interned once into a small integer (`id`); observers are kept in one contiguous
/// array per id, so a post costs the same whatever the number of observers of *other* names.
/// The standard names are predefined with fixed ids; UIKit's long names
/// (`UIApplicationDidEnterBackgroundNotification`) are accepted as aliases of the short ones.
/// Custom names must be reverse-DNS style (contain a dot), so that a misspelt standard name is an
/// error instead of a silent observer that never fires.
public struct NotificationName: Hashable, Sendable, CustomStringConvertible {
    /// The interned id; stable for the life of the process (standard names: for ever).
    public let id: UInt32

    init(id: UInt32) { self.id = id }

    /// Interns `string`: a standard short name, a UIKit alias, or a custom dotted name.
    ///
    /// [thread-safe]
    /// - Throws: `ApplicationError` `.unknownNotificationName` for an undotted name that is not standard
    ///   (with a suggestion when one is close), `.invalidNotificationName` for an empty, over-long or
    ///   white-space-containing name.
    public init(_ string: String) throws(ApplicationError) {
        self = try NameRegistry.shared.intern(string)
    }

    /// Looks up a name already interned (standard, alias, or a custom name seen before); nil otherwise. [thread-safe]
    public init?(existing string: String) {
        guard let found = NameRegistry.shared.lookup(string) else { return nil }
        self = found
    }

    /// The canonical spelling (the short name for standard names). [thread-safe]
    public var rawValue: String { NameRegistry.shared.string(for: id) }

    /// The UIKit spelling of a standard name, if it has one.
    public var uikitName: String? {
        guard let index = standardIndex else { return nil }
        return StandardName.table[index].alias
    }

    public var description: String { rawValue }

    /// Whether this name is one of the predefined standard names.
    public var isStandard: Bool { standardIndex != nil }

    var standardIndex: Int? {
        id >= 1 && Int(id) <= StandardName.table.count ? Int(id) - 1 : nil
    }

    /// The coalescing kind of this name while the application is suspended, if it has one (seed 000,
    /// table 4-1). Names of one kind coalesce to the most recent one.
    public var coalescingKind: String? {
        guard let index = standardIndex else { return nil }
        return StandardName.table[index].kind
    }

    public static let didFinishLaunching = NotificationName(id: 1)
    public static let didBecomeActive = NotificationName(id: 2)
    public static let willResignActive = NotificationName(id: 3)
    public static let didEnterBackground = NotificationName(id: 4)
    public static let willEnterForeground = NotificationName(id: 5)
    public static let willTerminate = NotificationName(id: 6)
    public static let didReceiveMemoryWarning = NotificationName(id: 7)
    public static let significantTimeChange = NotificationName(id: 8)
    public static let protectedDataWillBecomeUnavailable = NotificationName(id: 9)
    public static let protectedDataDidBecomeAvailable = NotificationName(id: 10)
    public static let currentLocaleDidChange = NotificationName(id: 11)
    public static let userDefaultsDidChange = NotificationName(id: 12)
    public static let batteryLevelDidChange = NotificationName(id: 13)
    public static let batteryStateDidChange = NotificationName(id: 14)
    public static let orientationDidChange = NotificationName(id: 15)
    public static let proximityStateDidChange = NotificationName(id: 16)
    public static let accessoryDidConnect = NotificationName(id: 17)
    public static let accessoryDidDisconnect = NotificationName(id: 18)
    public static let screenDidConnect = NotificationName(id: 19)
    public static let screenDidDisconnect = NotificationName(id: 20)
    public static let screenModeDidChange = NotificationName(id: 21)
    public static let ubiquityIdentityDidChange = NotificationName(id: 22)

    /// Every standard name, in id order.
    public static var standard: [NotificationName] {
        (1...StandardName.table.count).map { NotificationName(id: UInt32($0)) }
    }
}

/// The predefined names: short name, UIKit alias, coalescing kind (nil: delivered only while running).
enum StandardName {
    static let table: [(name: String, alias: String, kind: String?)] = [
        ("didFinishLaunching", "UIApplicationDidFinishLaunchingNotification", nil),
        ("didBecomeActive", "UIApplicationDidBecomeActiveNotification", nil),
        ("willResignActive", "UIApplicationWillResignActiveNotification", nil),
        ("didEnterBackground", "UIApplicationDidEnterBackgroundNotification", nil),
        ("willEnterForeground", "UIApplicationWillEnterForegroundNotification", nil),
        ("willTerminate", "UIApplicationWillTerminateNotification", nil),
        ("didReceiveMemoryWarning", "UIApplicationDidReceiveMemoryWarningNotification", nil),
        ("significantTimeChange", "UIApplicationSignificantTimeChangeNotification", "time"),
        ("protectedDataWillBecomeUnavailable", "UIApplicationProtectedDataWillBecomeUnavailable", "protected-data"),
        ("protectedDataDidBecomeAvailable", "UIApplicationProtectedDataDidBecomeAvailable", "protected-data"),
        ("currentLocaleDidChange", "NSCurrentLocaleDidChangeNotification", "locale"),
        ("userDefaultsDidChange", "NSUserDefaultsDidChangeNotification", "settings"),
        ("batteryLevelDidChange", "UIDeviceBatteryLevelDidChangeNotification", "battery-level"),
        ("batteryStateDidChange", "UIDeviceBatteryStateDidChangeNotification", "battery-state"),
        ("orientationDidChange", "UIDeviceOrientationDidChangeNotification", "orientation"),
        ("proximityStateDidChange", "UIDeviceProximityStateDidChangeNotification", "proximity"),
        ("accessoryDidConnect", "EAAccessoryDidConnectNotification", "accessory"),
        ("accessoryDidDisconnect", "EAAccessoryDidDisconnectNotification", "accessory"),
        ("screenDidConnect", "UIScreenDidConnectNotification", "screen"),
        ("screenDidDisconnect", "UIScreenDidDisconnectNotification", "screen"),
        ("screenModeDidChange", "UIScreenModeDidChangeNotification", "screen-mode"),
        ("ubiquityIdentityDidChange", "NSUbiquityIdentityDidChangeNotification", "ubiquity-identity"),
    ]
}

/// The process-wide intern table. Interning takes a lock; posting never does (it uses the id).
final class NameRegistry: Sendable {
    static let shared = NameRegistry()

    private struct Table {
        var ids: [String: UInt32] = [:]
        var names: [String] = [""]  // index 0 unused: ids start at 1
        /// C copies of `names`, made on first use and never freed (names live for the process).
        var cNames: [UInt32: UnsafePointer<CChar>] = [:]
    }

    private let table: Mutex<Table>

    /// The longest name accepted, in UTF-8 bytes.
    static let maximumLength = 255

    private init() {
        var t = Table()
        for (index, entry) in StandardName.table.enumerated() {
            let id = UInt32(index + 1)
            t.names.append(entry.name)
            t.ids[entry.name] = id
            t.ids[entry.alias] = id
        }
        table = Mutex(t)
    }

    func lookup(_ string: String) -> NotificationName? {
        table.withLock { t in t.ids[string].map { NotificationName(id: $0) } }
    }

    func string(for id: UInt32) -> String {
        table.withLock { t in Int(id) < t.names.count ? t.names[Int(id)] : "#\(id)" }
    }

    /// The canonical name as a C string with static storage. [thread-safe]
    func cString(for id: UInt32) -> UnsafePointer<CChar> {
        table.withLock { t in
            if let existing = t.cNames[id] { return existing }
            let name = Int(id) < t.names.count ? t.names[Int(id)] : "#\(id)"
            let copy = UnsafePointer(name.withCString { strdup($0) }!)
            t.cNames[id] = copy
            return copy
        }
    }

    func intern(_ string: String) throws(ApplicationError) -> NotificationName {
        if let found = lookup(string) { return found }
        try Self.validate(string)
        guard string.contains(".") else {
            var message = "unknown notification name '\(string)'"
            if let suggestion = Self.suggestion(for: string) { message += " (did you mean '\(suggestion)'?)" }
            message += "; custom names must be reverse-DNS style, e.g. 'com.example.\(string)'"
            throw ApplicationError(.unknownNotificationName, message)
        }
        return table.withLock { t in
            if let id = t.ids[string] { return NotificationName(id: id) }
            let id = UInt32(t.names.count)
            t.names.append(string)
            t.ids[string] = id
            return NotificationName(id: id)
        }
    }

    static func validate(_ string: String) throws(ApplicationError) {
        if string.isEmpty { throw ApplicationError(.invalidNotificationName, "notification name is empty") }
        if string.utf8.count > maximumLength {
            throw ApplicationError(.invalidNotificationName,
                                   "notification name is \(string.utf8.count) bytes long; the limit is \(maximumLength)")
        }
        if string.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7f }) {
            throw ApplicationError(.invalidNotificationName,
                                   "notification name '\(string)' contains white space or control characters")
        }
    }

    /// The standard name closest to `string` (edit distance ≤ 3, case-insensitive), if any.
    static func suggestion(for string: String) -> String? {
        let lowered = Array(string.lowercased().utf8)
        var best: (String, Int)?
        for entry in StandardName.table {
            for candidate in [entry.name, entry.alias] {
                let distance = editDistance(lowered, Array(candidate.lowercased().utf8))
                if distance <= 3, distance < (best?.1 ?? .max) { best = (entry.name, distance) }
            }
        }
        return best?.0
    }

    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = Swift.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
