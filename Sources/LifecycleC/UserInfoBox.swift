import AppLifecycle
import Glibc

/// What a C `lc_dict *` points at: a `UserInfo` plus the C strings, bytes and nested boxes handed out of it.
///
/// The C ABI promises that strings, bytes and nested dictionaries read out of a dictionary live as
/// long as it does and until it next changes; this box keeps them, and drops them on change and on
/// deinit. Reading the same slot twice returns the same pointer (nothing piles up while a C caller
/// reads in a loop). Not thread-safe: one box is used by one thread at a time (C ABI rule).
package final class UserInfoBox {
    package var value: UserInfo {
        didSet { invalidate() }
    }
    private var memory = KeptMemory()
    private var dictChildren: [String: UserInfoBox] = [:]
    private var listChildren: [String: ListBox] = [:]

    package init(_ value: UserInfo = UserInfo()) { self.value = value }

    deinit { invalidate() }

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
    }
}

/// What a C `lc_list *` points at; same lifetime rules as `UserInfoBox`.
package final class ListBox {
    package var value: [UserInfoValue] {
        didSet { invalidate() }
    }
    private var memory = KeptMemory()
    private var dictChildren: [Int: UserInfoBox] = [:]

    package init(_ value: [UserInfoValue] = []) { self.value = value }

    deinit { invalidate() }

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
    /// The string or bytes value under a key.
    case value(String)
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
