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

    /// Interns a NUL-terminated UTF-8 name, as `init(_:)` does. A name already interned is found from
    /// its bytes (no `String` is built, no lock taken); only a new or erroneous name is decoded.
    ///
    /// [thread-safe] `cString` is only read during the call.
    /// - Throws: as `init(_:)`; `.invalidNotificationName` also for bytes that are not valid UTF-8.
    public init(cString: UnsafePointer<CChar>) throws(ApplicationError) {
        if let found = NotificationName(existingCString: cString) {
            self = found
            return
        }
        guard let string = String(validatingCString: cString) else {
            throw ApplicationError(.invalidNotificationName, "notification name is not valid UTF-8")
        }
        self = try NameRegistry.shared.intern(string)
    }

    /// Looks up a name already interned from its NUL-terminated UTF-8 bytes, without building a
    /// `String` and without a lock; nil when it is not interned. Reads at most 256 bytes of `cString`.
    /// [thread-safe]
    @inline(__always)
    public init?(existingCString cString: UnsafePointer<CChar>) {
        let id = NameRegistry.shared.id(cString: cString)
        guard id != 0 else { return nil }
        self.id = id
    }

    /// The name whose id is `id`, if that id was issued by this process's intern table (standard
    /// names: 1...30, for ever); nil for 0 or an id never issued. Lock-free. [thread-safe]
    @inline(__always)
    public init?(internedID id: UInt32) {
        guard NameRegistry.shared.isInterned(id) else { return nil }
        self.id = id
    }

    /// The canonical spelling (the short name for standard names). [thread-safe]
    public var rawValue: String { NameRegistry.shared.string(for: id) }

    /// The canonical spelling as a NUL-terminated C string with static storage (never freed).
    /// [thread-safe, lock-free]
    public var cString: UnsafePointer<CChar> {
        NameRegistry.shared.cString(for: id) ?? UnsafeRawPointer(("" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// The UIKit spelling of a standard name, if it has one.
    public var uikitName: String? {
        guard let index = standardIndex else { return nil }
        return StandardName.table[index].alias
    }

    public var description: String { rawValue }

    /// Whether this name is one of the predefined standard names.
    public var isStandard: Bool { standardIndex != nil }

    /// Whether `id` is a standard name's (1 to the number of standard names, the same in every process,
    /// for ever), without building the name. The one place that range is stated. [thread-safe]
    package static func isStandardID(_ id: UInt32) -> Bool { id >= 1 && Int(id) <= StandardName.table.count }

    /// The standard name's place in `StandardName.table`, nil for any other name.
    var standardIndex: Int? { Self.isStandardID(id) ? Int(id) - 1 : nil }

    /// The coalescing kind of this name while the application is suspended, if it has one
    /// (Apple, "Strategies for Handling App State Transitions", table 4-1). Names of one kind coalesce to the most recent one.
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
    /// `UIScene.willConnectNotification`: a scene connected (sender: the scene).
    public static let sceneWillConnect = NotificationName(id: 23)
    /// `UIScene.didDisconnectNotification`: a scene was disconnected (sender: the scene).
    public static let sceneDidDisconnect = NotificationName(id: 24)
    /// `UIScene.didActivateNotification`: a scene became foreground-active (sender: the scene).
    public static let sceneDidActivate = NotificationName(id: 25)
    /// `UIScene.willDeactivateNotification`: a scene is leaving foreground-active (sender: the scene).
    public static let sceneWillDeactivate = NotificationName(id: 26)
    /// `UIScene.willEnterForegroundNotification`: a scene is coming to the foreground (sender: the scene).
    public static let sceneWillEnterForeground = NotificationName(id: 27)
    /// `UIScene.didEnterBackgroundNotification`: a scene moved to the background (sender: the scene).
    public static let sceneDidEnterBackground = NotificationName(id: 28)
    /// `NSProcessInfoPowerStateDidChangeNotification`: Low Power Mode turned on or off; read
    /// `Application.isLowPowerModeEnabled` (sender: the application). Coalesced while suspended.
    public static let powerStateDidChange = NotificationName(id: 29)
    /// `NSProcessInfoThermalStateDidChangeNotification`: the thermal state changed; read
    /// `Application.thermalState` (sender: the application). Coalesced while suspended.
    public static let thermalStateDidChange = NotificationName(id: 30)

    /// The standard application and device names (ids 1...22), in id order: UIKit's application and
    /// device notifications. The scene names (`sceneNames`, ids 23...28) and the ProcessInfo names
    /// (`processInfoNames`, 29 and 30) are predefined too, but not in this list.
    public static var standard: [NotificationName] {
        (1...StandardName.applicationNames).map { NotificationName(id: UInt32($0)) }
    }

    /// The six UIScene names (Apple, "Managing your app's life cycle"), ids 23...28, in id order; posted per scene with the scene
    /// as sender.
    public static var sceneNames: [NotificationName] {
        (StandardName.applicationNames + 1...StandardName.sceneNamesEnd).map { NotificationName(id: UInt32($0)) }
    }

    /// The two ProcessInfo names (Apple, Foundation), ids 29 and 30: `powerStateDidChange`,
    /// `thermalStateDidChange`. Predefined, but in neither `standard` nor `sceneNames`.
    public static var processInfoNames: [NotificationName] {
        (StandardName.sceneNamesEnd + 1...StandardName.table.count).map { NotificationName(id: UInt32($0)) }
    }
}

/// The predefined names: short name, UIKit alias, coalescing kind (nil: delivered only while running).
enum StandardName {
    /// How many of the table's names are application and device names (the rest are scene names).
    static let applicationNames = 22
    /// The id of the last scene name; the ProcessInfo names follow.
    static let sceneNamesEnd = 28

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
        ("sceneWillConnect", "UISceneWillConnectNotification", nil),
        ("sceneDidDisconnect", "UISceneDidDisconnectNotification", nil),
        ("sceneDidActivate", "UISceneDidActivateNotification", nil),
        ("sceneWillDeactivate", "UISceneWillDeactivateNotification", nil),
        ("sceneWillEnterForeground", "UISceneWillEnterForegroundNotification", nil),
        ("sceneDidEnterBackground", "UISceneDidEnterBackgroundNotification", nil),
        ("powerStateDidChange", "NSProcessInfoPowerStateDidChangeNotification", "power-state"),
        ("thermalStateDidChange", "NSProcessInfoThermalStateDidChangeNotification", "thermal-state"),
    ]
}

/// The process-wide intern table: spellings to ids, ids to canonical spellings.
///
/// **Deterministic cost.** An open-addressing hash table (linear probing, load ≤ 1/2) on a fixed
/// hash of the UTF-8 bytes (FNV-1a's step over 8-byte words, see `hash`): a lookup costs the same
/// in every process (Swift's `Dictionary` seeds its hash per process), and a C string is looked up
/// straight from its bytes, without building a Swift `String`.
/// A C string is scanned at most `maximumLength + 1` bytes.
///
/// **Threads.** Lookups (`id(cString:)`, `lookup(_:)`, `cString(for:)`, `isInterned(_:)`) take no
/// lock: a slot is published with a release store and read with an acquire load, and entries are
/// immutable once published. Interning a new spelling takes `writer`, one lock. Growing the table
/// publishes a new slot array; the old one is kept (a reader may still be probing it) and never
/// freed; the retired arrays together are smaller than the live one.
///
/// **Ownership.** Entries (and so every `cString(for:)`) live for the life of the process.
final class NameRegistry: @unchecked Sendable {
    // @unchecked: inserts under `writer`; lookups read atomics, entries published (release) before `nextID`.
    static let shared = NameRegistry()

    /// The longest name accepted, in UTF-8 bytes.
    static let maximumLength = 255

    /// The header of one spelling; `length` UTF-8 bytes and a NUL follow it (at `Entry.textOffset`).
    private struct Entry {
        var hash: UInt32
        var id: UInt32
        var length: Int
        static let textOffset = MemoryLayout<Entry>.stride
    }

    /// A slot array: element 0 holds the mask (capacity − 1), elements 1...capacity the addresses of
    /// entries (0: empty).
    private typealias Slots = UnsafeMutablePointer<Atomic<UInt>>

    /// The address of the live slot array.
    private let slots: Atomic<UInt>
    /// The next id to issue: every id in 1..<nextID is interned. Stored (release) after the id's
    /// canonical entry, and before any slot that names the id.
    private let nextID: Atomic<UInt32>
    /// Id to canonical entry, in chunks that never move: chunk k holds ids n − 64 for n in
    /// [2^(k+6), 2^(k+7)). Written under `writer` before `nextID` publishes the id; read only for ids
    /// below `nextID` (acquire), so plain memory suffices.
    private let chunks: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeRawPointer?>?>
    private static let chunkCount = 27  // covers every UInt32 id

    private struct WriterState {
        var spellings = 0
        var retired: [UInt] = []
    }
    private let writer = Mutex(WriterState())

    private init() {
        chunks = .allocate(capacity: Self.chunkCount)
        chunks.initialize(repeating: nil, count: Self.chunkCount)
        slots = Atomic(UInt(bitPattern: Self.makeSlots(capacity: 128)))
        nextID = Atomic(1)
        writer.withLock { state in
            for entry in StandardName.table {
                let id = self.insertNew(entry.name, state: &state)
                _ = self.insert(entry.alias, id: id, state: &state)
            }
        }
    }

    // MARK: Lookups [thread-safe, lock-free]

    /// A hash of `length` bytes, the same in every process: FNV-1a's step taken over 8-byte words
    /// (unaligned loads, the last word overlapping the previous one), then murmur3's 64-bit
    /// finalizer so that every input bit reaches the low bits the table masks. About 4 instructions
    /// per 8 bytes plus 15: a 20-byte name costs a tenth of byte-wise FNV-1a.
    @inline(__always)
    static func hash(_ bytes: UnsafeRawPointer, _ length: Int) -> UInt32 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(truncatingIfNeeded: length)
        if length >= 8 {
            var i = 0
            while i &+ 8 < length {
                h = (h ^ bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0x0000_0100_0000_01b3
                i &+= 8
            }
            h = (h ^ bytes.loadUnaligned(fromByteOffset: length &- 8, as: UInt64.self)) &* 0x0000_0100_0000_01b3
        } else {
            var tail: UInt64 = 0
            var i = 0
            while i < length {
                tail |= UInt64(bytes.load(fromByteOffset: i, as: UInt8.self)) << (UInt64(i) &* 8)
                i &+= 1
            }
            h = (h ^ tail) &* 0x0000_0100_0000_01b3
        }
        h ^= h >> 33
        h &*= 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h &*= 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return UInt32(truncatingIfNeeded: h)
    }

    /// The id of the spelling `bytes[0..<length]`, or 0.
    @inline(__always)
    private func find(_ bytes: UnsafeRawPointer, _ length: Int, _ hash: UInt32) -> UInt32 {
        let table = Slots(bitPattern: slots.load(ordering: .acquiring))!
        let mask = Int(table[0].load(ordering: .relaxed))
        var i = Int(hash) & mask
        while true {
            let address = table[i &+ 1].load(ordering: .acquiring)
            if address == 0 { return 0 }
            let entry = UnsafeRawPointer(bitPattern: address)!
            let header = entry.load(as: Entry.self)
            if header.hash == hash, header.length == length, memcmp(entry + Entry.textOffset, bytes, length) == 0 {
                return header.id
            }
            i = (i &+ 1) & mask
        }
    }

    /// The id of an interned spelling given as a NUL-terminated C string, or 0. Builds no `String`;
    /// reads at most `maximumLength + 1` bytes.
    func id(cString: UnsafePointer<CChar>) -> UInt32 {
        let length = strnlen(cString, Self.maximumLength + 1)  // libc's vectorised scan
        guard length != 0, length <= Self.maximumLength else { return 0 }  // longer than any name
        return find(cString, length, Self.hash(cString, length))
    }

    /// The id of an interned spelling, or 0.
    func id(_ string: String) -> UInt32 {
        var string = string
        return string.withUTF8 { utf8 in
            guard let base = utf8.baseAddress, utf8.count <= Self.maximumLength else { return 0 }
            return find(base, utf8.count, Self.hash(base, utf8.count))
        }
    }

    func lookup(_ string: String) -> NotificationName? {
        let id = id(string)
        return id == 0 ? nil : NotificationName(id: id)
    }

    /// Whether `id` was issued (0 never is).
    @inline(__always)
    func isInterned(_ id: UInt32) -> Bool { id != 0 && id < nextID.load(ordering: .acquiring) }

    /// The canonical spelling of `id` as a NUL-terminated C string (static storage), or nil for an id
    /// never issued.
    func cString(for id: UInt32) -> UnsafePointer<CChar>? {
        guard isInterned(id) else { return nil }
        let n = UInt64(id) &+ 64
        let k = 63 - n.leadingZeroBitCount - 6
        let entry = chunks[k]![Int(n - (1 << (k + 6)))]!
        return (entry + Entry.textOffset).assumingMemoryBound(to: CChar.self)
    }

    /// The canonical spelling of `id` ("#id" for an id never issued).
    func string(for id: UInt32) -> String {
        guard let text = cString(for: id) else { return "#\(id)" }
        return String(cString: text)
    }

    // MARK: Interning [thread-safe, one lock]

    func intern(_ string: String) throws(ApplicationError) -> NotificationName {
        if let found = lookup(string) { return found }
        try Self.validate(string)
        guard string.contains(".") else {
            var message = "unknown notification name '\(string)'"
            if let suggestion = Self.suggestion(for: string) { message += " (did you mean '\(suggestion)'?)" }
            message += "; custom names must be reverse-DNS style, e.g. 'com.example.\(string)'"
            throw ApplicationError(.unknownNotificationName, message)
        }
        let id = writer.withLock { state in insertNew(string, state: &state) }
        return NotificationName(id: id)
    }

    /// Interns `string` under a new id unless it is there already; returns its id. Holds `writer`.
    private func insertNew(_ string: String, state: inout WriterState) -> UInt32 {
        if let existing = lookup(string) { return existing.id }
        let id = nextID.load(ordering: .relaxed)
        precondition(id < UInt32.max, "notification name table full")
        let entry = Self.makeEntry(string, id: id)
        let n = UInt64(id) &+ 64
        let k = 63 - n.leadingZeroBitCount - 6
        if chunks[k] == nil {
            let size = 1 << (k + 6)
            chunks[k] = .allocate(capacity: size)
            chunks[k]!.initialize(repeating: nil, count: size)
        }
        chunks[k]![Int(n - (1 << (k + 6)))] = entry
        nextID.store(id + 1, ordering: .releasing)  // before any slot names the id
        publish(entry, state: &state)
        return id
    }

    /// Adds another spelling (an alias) of the interned `id`. Holds `writer`.
    private func insert(_ string: String, id: UInt32, state: inout WriterState) -> UInt32 {
        if let existing = lookup(string) { return existing.id }
        publish(Self.makeEntry(string, id: id), state: &state)
        return id
    }

    /// Puts an entry in the table, growing it first when it would be more than half full. Holds `writer`.
    private func publish(_ entry: UnsafeRawPointer, state: inout WriterState) {
        var table = Slots(bitPattern: slots.load(ordering: .relaxed))!
        var capacity = Int(table[0].load(ordering: .relaxed)) + 1
        if (state.spellings + 1) * 2 > capacity {
            let grown = Self.makeSlots(capacity: capacity * 2)
            for i in 1...capacity {
                let address = table[i].load(ordering: .relaxed)
                if address != 0 { Self.place(address, in: grown, publishing: false) }
            }
            state.retired.append(UInt(bitPattern: table))
            slots.store(UInt(bitPattern: grown), ordering: .releasing)
            table = grown
            capacity *= 2
        }
        Self.place(UInt(bitPattern: entry), in: table, publishing: true)
        state.spellings += 1
    }

    /// Stores an entry's address in its first free slot; `publishing`: with a release store (the
    /// table is live), else relaxed (a table not yet published).
    private static func place(_ address: UInt, in table: Slots, publishing: Bool) {
        let mask = Int(table[0].load(ordering: .relaxed))
        var i = Int(UnsafeRawPointer(bitPattern: address)!.load(as: Entry.self).hash) & mask
        while table[i + 1].load(ordering: .relaxed) != 0 { i = (i + 1) & mask }
        if publishing { table[i + 1].store(address, ordering: .releasing) } else { table[i + 1].store(address, ordering: .relaxed) }
    }

    private static func makeSlots(capacity: Int) -> Slots {
        let table = Slots.allocate(capacity: capacity + 1)
        table.initialize(to: Atomic(UInt(capacity - 1)))
        for i in 1...capacity { (table + i).initialize(to: Atomic(0)) }
        return table
    }

    /// A new entry for `string` (never freed).
    private static func makeEntry(_ string: String, id: UInt32) -> UnsafeRawPointer {
        var string = string
        return string.withUTF8 { utf8 in
            let raw = UnsafeMutableRawPointer.allocate(byteCount: Entry.textOffset + utf8.count + 1,
                                                       alignment: MemoryLayout<Entry>.alignment)
            let hash = Self.hash(utf8.baseAddress.map { UnsafeRawPointer($0) } ?? UnsafeRawPointer(raw), utf8.count)
            raw.initializeMemory(as: Entry.self, to: Entry(hash: hash, id: id, length: utf8.count))
            let text = raw + Entry.textOffset
            if let base = utf8.baseAddress { text.copyMemory(from: base, byteCount: utf8.count) }
            text.storeBytes(of: 0, toByteOffset: utf8.count, as: UInt8.self)
            return UnsafeRawPointer(raw)
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
                guard let distance = editDistance(lowered, Array(candidate.lowercased().utf8), atMost: 3) else { continue }
                if distance < (best?.1 ?? .max) { best = (entry.name, distance) }
            }
        }
        return best?.0
    }
}
