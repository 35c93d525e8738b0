import Glibc

/// What a C `lc_dict *` points at: a `UserInfo` plus the C strings and nested boxes handed out of it.
///
/// The C ABI promises that strings, bytes and nested dictionaries read out of a dictionary live as
/// long as it does and until it next changes; this box keeps them, and drops them on change and on
/// deinit. Not thread-safe: one box is used by one thread at a time (C ABI rule).
package final class UserInfoBox {
    package var value: UserInfo {
        didSet { invalidate() }
    }
    private var cStrings: [UnsafeMutablePointer<CChar>] = []
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
    package func keep(_ string: String) -> UnsafePointer<CChar> { keepCString(string, in: &cStrings) }

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
        for pointer in cStrings { free(pointer) }
        cStrings.removeAll()
        dictChildren.removeAll()
        listChildren.removeAll()
    }
}

/// What a C `lc_list *` points at; same lifetime rules as `UserInfoBox`.
package final class ListBox {
    package var value: [UserInfoValue] {
        didSet { invalidate() }
    }
    private var cStrings: [UnsafeMutablePointer<CChar>] = []
    private var dictChildren: [Int: UserInfoBox] = [:]

    package init(_ value: [UserInfoValue] = []) { self.value = value }

    deinit { invalidate() }

    package var opaque: OpaquePointer { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    package static func from(_ pointer: OpaquePointer) -> ListBox {
        Unmanaged<ListBox>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    package func keep(_ string: String) -> UnsafePointer<CChar> { keepCString(string, in: &cStrings) }

    package func child(_ index: Int) -> UserInfoBox? {
        if let box = dictChildren[index] { return box }
        guard value.indices.contains(index), let dict = value[index].dictValue else { return nil }
        let box = UserInfoBox(dict)
        dictChildren[index] = box
        return box
    }

    private func invalidate() {
        for pointer in cStrings { free(pointer) }
        cStrings.removeAll()
        dictChildren.removeAll()
    }
}

private func keepCString(_ string: String, in store: inout [UnsafeMutablePointer<CChar>]) -> UnsafePointer<CChar> {
    let pointer = string.withCString { strdup($0) }!
    store.append(pointer)
    return UnsafePointer(pointer)
}
