import AppLifecycle
import Glibc

/// What a C `lc_dict *` points at: a `UserInfo` plus the C strings, bytes and nested boxes handed out of it.
///
/// The C ABI promises that strings, bytes and nested dictionaries read out of a dictionary live as
/// long as it does and until it next changes; this box keeps them, and drops them on change and on
/// deinit. Reading the same slot twice returns the same pointer (nothing piles up while a C caller
/// reads in a loop). Not thread-safe: one box is used by one thread at a time (C ABI rule).
package final class UserInfoBox {
    /// Unchecked exclusivity: a box is used by one thread at a time (above) and no access to `value`
    /// spans a call out, so the dynamic check (`swift_beginAccess`, ~75 instructions, on every C read)
    /// had nothing to catch.
    @exclusivity(unchecked) package var value: UserInfo {
        didSet { invalidate() }
    }
    // The box's own memory, unchecked for the reason above: a box made for one delegate call paid
    // three dynamic checks (~230 instructions) in its deinit alone.
    @exclusivity(unchecked) private var memory = KeptMemory()
    @exclusivity(unchecked) private var dictChildren: [String: UserInfoBox] = [:]
    @exclusivity(unchecked) private var listChildren: [String: ListBox] = [:]
    /// The keys' UTF-8 bytes laid out for C-string lookups (see `KeyIndex`); made by the second
    /// lookup since the last change (a box read once, like one made for a single post, compares the
    /// keys in place), dropped on change.
    @exclusivity(unchecked) private var keyIndex: KeyIndex?
    @exclusivity(unchecked) private var lookups = 0
    /// The first setter refused on this box (its function and the message it left), kept for good:
    /// a coder with a refused write holds less than its plugin meant to save (see `StateArchive.failure`).
    @exclusivity(unchecked) package private(set) var refusedWrite: (function: String, message: String)?

    package init(_ value: UserInfo = UserInfo()) { self.value = value }

    /// The children die with the box; only the kept C memory is freed by hand.
    deinit { memory.free() }

    /// `value`, read here: another module reading `value` itself would emit the dynamic exclusivity
    /// check that this module's `@exclusivity(unchecked)` leaves out.
    package var current: UserInfo { value }

    /// The index of the key spelled by the C string `key`, or nil. A found key costs a length compare
    /// and a memcmp per entry: no String, no allocation (after the first lookup since the last change).
    package func index(ofCKey key: UnsafePointer<CChar>) -> Int? {
        if let keyIndex { return keyIndex.find(key) }
        lookups += 1
        if lookups > 1 {
            keyIndex = KeyIndex(value)
            return keyIndex!.find(key)
        }
        let length = strlen(key)
        for index in 0..<value.count {
            let stored = value.key(at: index)
            guard stored.utf8.count == length else { continue }
            if length == 0 || stored.withCString({ memcmp($0, key, length) == 0 }) { return index }
        }
        return nil
    }

    /// The value at `index` (insertion order).
    package func value(at index: Int) -> UserInfoValue { value.value(at: index) }

    /// Remembers that a setter of `function` was refused, with the message it just recorded (the
    /// first refusal only). [the box's thread]
    package func noteRefusedWrite(_ function: String) {
        if refusedWrite == nil { refusedWrite = (function, String(cString: lcLastErrorMessage())) }
    }

    /// The key at `index` (insertion order).
    package func key(at index: Int) -> String { value.key(at: index) }

    /// The box as the opaque `lc_dict *` pointer (not retained).
    package var opaque: OpaquePointer { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    /// The box behind an `lc_dict *` (not retained).
    package static func from(_ pointer: OpaquePointer) -> UserInfoBox {
        Unmanaged<UserInfoBox>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    /// A C copy of `string` that lives until the box changes or dies.
    package func keep(_ string: String) -> UnsafePointer<CChar> { memory.keep(string) }

    /// A C copy of `string` kept under `slot`: a second call for the same slot returns the first
    /// pointer (the caller guarantees the slot still means the same text, which holds until the box changes).
    package func keep(_ string: String, as slot: KeptSlot) -> UnsafePointer<CChar> { memory.keep(string, as: slot) }

    /// A copy of `bytes` kept under `slot` (never NULL, even when empty); same rules as `keep(_:as:)`.
    package func keep(bytes: [UInt8], as slot: KeptSlot) -> UnsafePointer<UInt8> { memory.keep(bytes: bytes, as: slot) }

    /// The nested dictionary under `key` as a box owned by this one.
    package func child(_ key: String) -> UserInfoBox? {
        if let box = dictChildren[key] { return box }
        guard let dict = value[key]?.dictValue else { return nil }
        let box = UserInfoBox(dict)
        dictChildren[key] = box
        return box
    }

    /// The nested list under `key` as a box owned by this one.
    package func list(_ key: String) -> ListBox? {
        if let box = listChildren[key] { return box }
        guard let list = value[key]?.listValue else { return nil }
        let box = ListBox(list)
        listChildren[key] = box
        return box
    }

    private func invalidate() {
        memory.free()
        dictChildren.removeAll()
        listChildren.removeAll()
        keyIndex = nil
        lookups = 0
    }
}

/// The keys of a dictionary as one block of memory, for lookups by C string: per key its length and
/// the offset of its bytes, then the bytes. Immutable once made.
private final class KeyIndex {
    private let count: Int
    /// `count` (offset, length) pairs, then the key bytes.
    private let block: UnsafeMutableRawPointer

    init(_ info: UserInfo) {
        count = info.count
        var total = 0
        for index in 0..<count { total += info.key(at: index).utf8.count }
        block = .allocate(byteCount: max(count * 16 + total, 1), alignment: 8)
        let pairs = block.bindMemory(to: Int.self, capacity: count * 2)
        var offset = count * 16
        for index in 0..<count {
            let key = info.key(at: index)
            let length = key.utf8.count
            pairs[2 * index] = offset
            pairs[2 * index + 1] = length
            UnsafeMutableRawBufferPointer(start: block + offset, count: length).copyBytes(from: key.utf8)
            offset += length
        }
    }

    deinit { block.deallocate() }

    func find(_ key: UnsafePointer<CChar>) -> Int? {
        let length = strlen(key)
        let pairs = block.assumingMemoryBound(to: Int.self)
        for index in 0..<count where pairs[2 * index + 1] == length {
            if length == 0 || memcmp(block + pairs[2 * index], key, length) == 0 { return index }
        }
        return nil
    }
}

/// What a C `lc_list *` points at; same lifetime rules as `UserInfoBox`. It keeps the footprint of
/// its items (`UserInfoFootprint`: their bytes summed, the deepest), so that an append is checked
/// against `UserInfoLimits` in O(1).
package final class ListBox {
    package private(set) var value: [UserInfoValue] {
        didSet { invalidate() }
    }
    @exclusivity(unchecked) private var memory = KeptMemory()
    @exclusivity(unchecked) private var dictChildren: [Int: UserInfoBox] = [:]
    /// The items' footprint, kept by `append`.
    @exclusivity(unchecked) private var items: UserInfoFootprint

    package init(_ value: [UserInfoValue] = []) {
        self.value = value
        var items = UserInfoFootprint()
        for item in value { items.add(UserInfoFootprint(value: item)) }
        self.items = items
    }

    /// Appends `item` unless the list, as any dictionary's value, would be over `UserInfoLimits`:
    /// then nothing changes and the excess is returned. O(1) (a dictionary item's footprint is kept).
    package func append(_ item: UserInfoValue) -> UserInfoLimitExceeded? {
        var after = items
        after.add(UserInfoFootprint(value: item))
        if let excess = UserInfoLimitExceeded.check(listItems: after) { return excess }
        items = after
        value.append(item)
        return nil
    }

    deinit { memory.free() }

    package var opaque: OpaquePointer { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    package static func from(_ pointer: OpaquePointer) -> ListBox {
        Unmanaged<ListBox>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    package func keep(_ string: String) -> UnsafePointer<CChar> { memory.keep(string) }

    /// See `UserInfoBox.keep(_:as:)`.
    package func keep(_ string: String, as slot: KeptSlot) -> UnsafePointer<CChar> { memory.keep(string, as: slot) }

    package func child(_ index: Int) -> UserInfoBox? {
        if let box = dictChildren[index] { return box }
        guard value.indices.contains(index), let dict = value[index].dictValue else { return nil }
        let box = UserInfoBox(dict)
        dictChildren[index] = box
        return box
    }

    private func invalidate() {
        memory.free()
        dictChildren.removeAll()
    }
}

/// Where a kept C value came from, so that reading it again returns the same pointer.
package enum KeptSlot: Hashable {
    /// The key at an index (insertion order).
    case key(Int)
    /// The string or bytes value at an index (insertion order).
    case value(Int)
    /// The string value at a list index.
    case item(Int)
    /// The JSON rendering of the whole box.
    case json
}

/// malloc'd memory handed out to C; freed together.
private struct KeptMemory {
    private var loose: [UnsafeMutableRawPointer] = []
    private var slots: [KeptSlot: UnsafeMutableRawPointer] = [:]

    mutating func keep(_ string: String) -> UnsafePointer<CChar> {
        let pointer = string.withCString { strdup($0) }!
        loose.append(UnsafeMutableRawPointer(pointer))
        return UnsafePointer(pointer)
    }

    mutating func keep(_ string: String, as slot: KeptSlot) -> UnsafePointer<CChar> {
        if let kept = slots[slot] { return UnsafePointer(kept.assumingMemoryBound(to: CChar.self)) }
        let pointer = string.withCString { strdup($0) }!
        slots[slot] = UnsafeMutableRawPointer(pointer)
        return UnsafePointer(pointer)
    }

    mutating func keep(bytes: [UInt8], as slot: KeptSlot) -> UnsafePointer<UInt8> {
        if let kept = slots[slot] { return UnsafePointer(kept.assumingMemoryBound(to: UInt8.self)) }
        let pointer = malloc(max(bytes.count, 1))!
        bytes.withUnsafeBytes { if let base = $0.baseAddress { pointer.copyMemory(from: base, byteCount: $0.count) } }
        slots[slot] = pointer
        return UnsafePointer(pointer.bindMemory(to: UInt8.self, capacity: max(bytes.count, 1)))
    }

    mutating func free() {
        for pointer in loose { Glibc.free(pointer) }
        for pointer in slots.values { Glibc.free(pointer) }
        loose.removeAll()
        slots.removeAll()
    }
}
