// The lc_list functions of the C ABI (boxes and ownership as described in CDict.swift). An append
// that would make the list, as any dictionary's value, deeper or larger than `UserInfoLimits` allows
// is refused (`LC_ERR_INVALID_ARGUMENT`, naming the limit); nothing changes.
import AppLifecycle
import CLifecycleABI

/// A new, empty list, owned by the caller (`lcListDestroy`). [thread-safe]
package func lcListCreate() -> OpaquePointer? {
    makeList([])
}

/// Releases a list made by create; NULL is ignored. Passing a list read out of a dictionary is a
/// caller bug. [thread-safe]
package func lcListDestroy(_ list: OpaquePointer?) {
    guard let list else { return }
    Unmanaged<ListBox>.fromOpaque(UnsafeRawPointer(list)).release()
}

/// The number of items; 0 for NULL. [thread-safe]
package func lcListCount(_ list: OpaquePointer?) -> Int {
    guard let list else {
        lcNull("lc_list_count", "list")
        return 0
    }
    return ListBox.from(list).value.count
}

/// The type of the item at `index`; `LC_VALUE_NONE` when out of range or for NULL. [thread-safe]
package func lcListTypeAt(_ list: OpaquePointer?, _ index: Int) -> lc_value_type {
    guard let list else {
        lcNull("lc_list_type_at", "list")
        return lc_value_type(LC_VALUE_NONE)
    }
    let items = ListBox.from(list).value
    guard index >= 0, index < items.count else { return lc_value_type(LC_VALUE_NONE) }
    return lcValueType(of: items[index])
}

/// Hands the item at `index` to `write` (see `dictGet`). Records NOT_FOUND / TYPE_MISMATCH messages.
private func listGet(
    _ function: String, _ list: OpaquePointer, _ index: Int, wanted: String,
    _ write: (ListBox, UserInfoValue) -> Bool
) -> lc_status {
    let box = ListBox.from(list)
    guard index >= 0, index < box.value.count else {
        return lcFail(LC_ERR_NOT_FOUND,
                      "\(function): index \(UInt(bitPattern: index)) out of range (count \(box.value.count))")
    }
    let value = box.value[index]
    guard write(box, value) else {
        return lcFail(LC_ERR_TYPE_MISMATCH, "\(function): item \(index) holds \(value.kindPhrase), not \(wanted)")
    }
    return ok
}

/// The string at `index`, owned by the list. [thread-safe]
package func lcListGetString(_ list: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?)
    -> lc_status
{
    let function = "lc_list_get_string"
    guard let list else { return lcNull(function, "list") }
    guard let out else { return lcNull(function, "out") }
    return listGet(function, list, index, wanted: "a string") { box, value in
        guard case .string(let string) = value else { return false }
        out.pointee = box.keep(string, as: .item(index))
        return true
    }
}

/// The integer at `index`. [thread-safe]
package func lcListGetInt(_ list: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<Int64>?) -> lc_status {
    let function = "lc_list_get_int"
    guard let list else { return lcNull(function, "list") }
    guard let out else { return lcNull(function, "out") }
    return listGet(function, list, index, wanted: "an int") { _, value in
        guard case .int(let int) = value else { return false }
        out.pointee = int
        return true
    }
}

/// The number at `index` (an integer converts). [thread-safe]
package func lcListGetDouble(_ list: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<Double>?) -> lc_status {
    let function = "lc_list_get_double"
    guard let list else { return lcNull(function, "list") }
    guard let out else { return lcNull(function, "out") }
    return listGet(function, list, index, wanted: "a double") { _, value in
        guard let double = value.doubleValue else { return false }
        out.pointee = double
        return true
    }
}

/// The boolean at `index`. [thread-safe]
package func lcListGetBool(_ list: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<Bool>?) -> lc_status {
    let function = "lc_list_get_bool"
    guard let list else { return lcNull(function, "list") }
    guard let out else { return lcNull(function, "out") }
    return listGet(function, list, index, wanted: "a bool") { _, value in
        guard case .bool(let bool) = value else { return false }
        out.pointee = bool
        return true
    }
}

/// The dictionary at `index`, owned by the list; do not change or destroy it. [thread-safe]
package func lcListGetDict(_ list: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?)
    -> lc_status
{
    let function = "lc_list_get_dict"
    guard let list else { return lcNull(function, "list") }
    guard let out else { return lcNull(function, "out") }
    return listGet(function, list, index, wanted: "a dict") { box, _ in
        guard let child = box.child(index) else { return false }
        out.pointee = child.opaque
        return true
    }
}

/// Appends a copy of `value` (UTF-8). [thread-safe]
package func lcListAppendString(_ list: OpaquePointer?, _ value: UnsafePointer<CChar>?) -> lc_status {
    let function = "lc_list_append_string"
    guard let list else { return lcNull(function, "list") }
    guard let value else { return lcNull(function, "value") }
    guard let string = lcString(value, function, "value") else { return lc_status(LC_ERR_INVALID_ARGUMENT) }
    return listAppend(function, list, .string(string))
}

/// Appends an integer. [thread-safe]
package func lcListAppendInt(_ list: OpaquePointer?, _ value: Int64) -> lc_status {
    guard let list else { return lcNull("lc_list_append_int", "list") }
    return listAppend("lc_list_append_int", list, .int(value))
}

/// Appends a double. [thread-safe]
package func lcListAppendDouble(_ list: OpaquePointer?, _ value: Double) -> lc_status {
    guard let list else { return lcNull("lc_list_append_double", "list") }
    return listAppend("lc_list_append_double", list, .double(value))
}

/// Appends a boolean. [thread-safe]
package func lcListAppendBool(_ list: OpaquePointer?, _ value: Bool) -> lc_status {
    guard let list else { return lcNull("lc_list_append_bool", "list") }
    return listAppend("lc_list_append_bool", list, .bool(value))
}

/// Appends a copy of the dictionary `value`. [thread-safe]
package func lcListAppendDict(_ list: OpaquePointer?, _ value: OpaquePointer?) -> lc_status {
    let function = "lc_list_append_dict"
    guard let list else { return lcNull(function, "list") }
    guard let value else { return lcNull(function, "value") }
    return listAppend(function, list, .dict(UserInfoBox.from(value).value))
}

/// Appends `item`, unless the list would then be over `UserInfoLimits` as a dictionary's value:
/// `LC_ERR_INVALID_ARGUMENT`, "`function`: the list would be 65 levels deep (at most 64); nothing was
/// appended". O(1).
private func listAppend(_ function: String, _ list: OpaquePointer, _ item: UserInfoValue) -> lc_status {
    guard let excess = ListBox.from(list).append(item) else { return ok }
    return lcFail(LC_ERR_INVALID_ARGUMENT, "\(function): the list would be \(excess); nothing was appended")
}
