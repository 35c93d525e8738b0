// The lc_dict functions of the C ABI, and the value helpers shared with lists and the rest of the host.
import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc

// The dictionaries and lists of the C ABI (`lc_dict_*`, `lc_list_*` in include/lifecycle.h).
//
// An `lc_dict *` points at a `UserInfoBox`, an `lc_list *` at a `ListBox`. Dictionaries and lists made
// here (create, copy) are retained boxes the caller releases with destroy; nested ones read out of a
// box are owned by it. Every function is [thread-safe] on distinct dictionaries: a box is used by
// one thread at a time (the C ABI's rule), and the only shared state is the thread-local last error.
// Each function records a message for `lc_last_error_message` before returning an error.
//
// Limits: a setter that would make the dictionary deeper than 64 levels or larger than 64 MiB − 20
// bytes of entries (`UserInfoLimits`, checked in O(1) from the footprint every dictionary keeps) is
// refused with `LC_ERR_INVALID_ARGUMENT`, naming the key and the limit; nothing changes. A refused
// setter is remembered by the box (`UserInfoBox.refusedWrite`): in a coder, the state was not encoded.

// MARK: - Helpers for the rest of the host

/// A new dictionary holding `info`: a retained box the caller releases with `lcDictDestroy`. [thread-safe]
package func makeDict(_ info: UserInfo) -> OpaquePointer {
    OpaquePointer(Unmanaged.passRetained(UserInfoBox(info)).toOpaque())
}

/// A copy of the contents of an `lc_dict *`; nil for NULL. [thread-safe, one thread per dictionary]
package func userInfo(from dict: OpaquePointer?) -> UserInfo? {
    dict.map { UserInfoBox.from($0).value }
}

/// A new list holding `items`: a retained box the caller releases with `lcListDestroy`. [thread-safe]
package func makeList(_ items: [UserInfoValue]) -> OpaquePointer {
    OpaquePointer(Unmanaged.passRetained(ListBox(items)).toOpaque())
}

/// A copy of the items of an `lc_list *`; nil for NULL. [thread-safe, one thread per list]
package func listItems(from list: OpaquePointer?) -> [UserInfoValue]? {
    list.map { ListBox.from($0).value }
}

/// The `lc_value_type` of a value.
package func lcValueType(of value: UserInfoValue) -> lc_value_type {
    switch value {
    case .string: lc_value_type(LC_VALUE_STRING)
    case .int: lc_value_type(LC_VALUE_INT)
    case .double: lc_value_type(LC_VALUE_DOUBLE)
    case .bool: lc_value_type(LC_VALUE_BOOL)
    case .bytes: lc_value_type(LC_VALUE_BYTES)
    case .list: lc_value_type(LC_VALUE_LIST)
    case .dict: lc_value_type(LC_VALUE_DICT)
    }
}

extension UserInfoValue {
    /// "a string", "an int", ...: for type-mismatch messages.
    var kindPhrase: String {
        switch self {
        case .string: "a string"
        case .int: "an int"
        case .double: "a double"
        case .bool: "a bool"
        case .bytes: "bytes"
        case .list: "a list"
        case .dict: "a dict"
        }
    }
}

/// `LC_OK`: the status the lc_dict and lc_list functions return on success.
let ok = lc_status(LC_OK)

// MARK: - Dictionaries: life cycle and inspection

/// A new, empty dictionary, owned by the caller (`lcDictDestroy`). [thread-safe]
package func lcDictCreate() -> OpaquePointer? {
    makeDict(UserInfo())
}

/// A deep copy owned by the caller; NULL (and a recorded error) when `dict` is NULL. [thread-safe]
package func lcDictCopy(_ dict: OpaquePointer?) -> OpaquePointer? {
    guard let dict else {
        lcNull("lc_dict_copy", "dict")
        return nil
    }
    return makeDict(UserInfoBox.from(dict).value)
}

/// Releases a dictionary made by create or copy; NULL is ignored. Passing a dictionary the host
/// owns (one handed to a callback, or read out of another dictionary) is a caller bug. [thread-safe]
package func lcDictDestroy(_ dict: OpaquePointer?) {
    guard let dict else { return }
    Unmanaged<UserInfoBox>.fromOpaque(UnsafeRawPointer(dict)).release()
}

/// The number of keys; 0 for NULL. [thread-safe]
package func lcDictCount(_ dict: OpaquePointer?) -> Int {
    guard let dict else {
        lcNull("lc_dict_count", "dict")
        return 0
    }
    return UserInfoBox.from(dict).value.count
}

/// The key at `index` in insertion order, owned by the dictionary; NULL when out of range. [thread-safe]
package func lcDictKeyAt(_ dict: OpaquePointer?, _ index: Int) -> UnsafePointer<CChar>? {
    guard let dict else {
        lcNull("lc_dict_key_at", "dict")
        return nil
    }
    let box = UserInfoBox.from(dict)
    guard index >= 0, index < box.value.count else { return nil }
    return box.keep(box.value.keys[index], as: .key(index))
}

/// The type under `key`; `LC_VALUE_NONE` when absent (or on a NULL / non-UTF-8 argument). [thread-safe]
package func lcDictType(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?) -> lc_value_type {
    let function = "lc_dict_type"
    let none = lc_value_type(LC_VALUE_NONE)
    guard let dict else { lcNull(function, "dict"); return none }
    guard let key else { lcNull(function, "key"); return none }
    guard let name = lcString(key, function, "key") else { return none }
    return UserInfoBox.from(dict).value[name].map(lcValueType(of:)) ?? none
}

/// A JSON rendering (`UserInfo.description`) owned by the dictionary, valid until it changes or is
/// destroyed; NULL for NULL. [thread-safe]
package func lcDictJSON(_ dict: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let dict else {
        lcNull("lc_dict_json", "dict")
        return nil
    }
    let box = UserInfoBox.from(dict)
    return box.keep(box.value.description, as: .json)
}

// MARK: - Dictionaries: getters

/// Looks `key` up and hands the value (and its index) to `write`, which stores it and returns true,
/// or returns false when the value has another type. Records NOT_FOUND / TYPE_MISMATCH /
/// INVALID_ARGUMENT messages.
///
/// The key is compared as bytes with the stored keys: a found key costs no String and no allocation;
/// only a miss validates it (so that a key that is not UTF-8 gets its own error).
@inline(__always)
private func dictGet(
    _ function: String, _ dict: OpaquePointer, _ key: UnsafePointer<CChar>, wanted: String,
    _ write: (UserInfoBox, Int, UserInfoValue) -> Bool
) -> lc_status {
    // The caller's handle is alive for the call: the box is used without a retain.
    Unmanaged<UserInfoBox>.fromOpaque(UnsafeRawPointer(dict))._withUnsafeGuaranteedRef { box in
        guard let index = box.index(ofCKey: key) else {
            guard let name = lcString(key, function, "key") else { return lc_status(LC_ERR_INVALID_ARGUMENT) }
            return lcFail(LC_ERR_NOT_FOUND, "\(function): no key '\(name)'")
        }
        let value = box.value(at: index)
        guard write(box, index, value) else {
            return lcFail(LC_ERR_TYPE_MISMATCH, "\(function): '\(box.key(at: index))' holds \(value.kindPhrase), not \(wanted)")
        }
        return ok
    }
}

/// The string under `key`, owned by the dictionary. [thread-safe]
package func lcDictGetString(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> lc_status {
    let function = "lc_dict_get_string"
    guard let dict else { return lcNull(function, "dict") }
    guard let key else { return lcNull(function, "key") }
    guard let out else { return lcNull(function, "out") }
    return dictGet(function, dict, key, wanted: "a string") { box, index, value in
        guard case .string(let string) = value else { return false }
        out.pointee = box.keep(string, as: .value(index))
        return true
    }
}

/// The integer under `key`. [thread-safe]
package func lcDictGetInt(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Int64>?)
    -> lc_status
{
    let function = "lc_dict_get_int"
    guard let dict else { return lcNull(function, "dict") }
    guard let key else { return lcNull(function, "key") }
    guard let out else { return lcNull(function, "out") }
    return dictGet(function, dict, key, wanted: "an int") { _, _, value in
        guard case .int(let int) = value else { return false }
        out.pointee = int
        return true
    }
}

/// The number under `key` (an integer converts). [thread-safe]
package func lcDictGetDouble(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Double>?
) -> lc_status {
    let function = "lc_dict_get_double"
    guard let dict else { return lcNull(function, "dict") }
    guard let key else { return lcNull(function, "key") }
    guard let out else { return lcNull(function, "out") }
    return dictGet(function, dict, key, wanted: "a double") { _, _, value in
        guard let double = value.doubleValue else { return false }
        out.pointee = double
        return true
    }
}

/// The boolean under `key`. [thread-safe]
package func lcDictGetBool(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Bool>?)
    -> lc_status
{
    let function = "lc_dict_get_bool"
    guard let dict else { return lcNull(function, "dict") }
    guard let key else { return lcNull(function, "key") }
    guard let out else { return lcNull(function, "out") }
    return dictGet(function, dict, key, wanted: "a bool") { _, _, value in
        guard case .bool(let bool) = value else { return false }
        out.pointee = bool
        return true
    }
}

/// The bytes under `key`, owned by the dictionary (never NULL, even when empty). [thread-safe]
package func lcDictGetBytes(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ data: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
    _ length: UnsafeMutablePointer<Int>?
) -> lc_status {
    let function = "lc_dict_get_bytes"
    guard let dict else { return lcNull(function, "dict") }
    guard let key else { return lcNull(function, "key") }
    guard let data else { return lcNull(function, "data") }
    guard let length else { return lcNull(function, "length") }
    return dictGet(function, dict, key, wanted: "bytes") { box, index, value in
        guard case .bytes(let bytes) = value else { return false }
        data.pointee = box.keep(bytes: bytes, as: .value(index))
        length.pointee = bytes.count
        return true
    }
}

/// The nested dictionary under `key`, owned by the dictionary; do not change or destroy it. [thread-safe]
package func lcDictGetDict(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> lc_status {
    let function = "lc_dict_get_dict"
    guard let dict else { return lcNull(function, "dict") }
    guard let key else { return lcNull(function, "key") }
    guard let out else { return lcNull(function, "out") }
    return dictGet(function, dict, key, wanted: "a dict") { box, index, _ in
        guard let child = box.child(box.key(at: index)) else { return false }
        out.pointee = child.opaque
        return true
    }
}

/// The list under `key`, owned by the dictionary; do not change or destroy it. [thread-safe]
package func lcDictGetList(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> lc_status {
    let function = "lc_dict_get_list"
    guard let dict else { return lcNull(function, "dict") }
    guard let key else { return lcNull(function, "key") }
    guard let out else { return lcNull(function, "out") }
    return dictGet(function, dict, key, wanted: "a list") { box, index, _ in
        guard let list = box.list(box.key(at: index)) else { return false }
        out.pointee = list.opaque
        return true
    }
}

// MARK: - Dictionaries: setters

/// Stores `value` under `key` (replacing in place, or appending), unless the dictionary would then be
/// over `UserInfoLimits` (refused, naming the key and the limit; nothing changes). The value is built
/// before the dictionary changes, so it may come from the dictionary itself.
private func dictSet(_ function: String, _ dict: OpaquePointer, _ key: UnsafePointer<CChar>, _ value: UserInfoValue)
    -> lc_status
{
    guard let name = lcString(key, function, "key") else { return lc_status(LC_ERR_INVALID_ARGUMENT) }
    let box = UserInfoBox.from(dict)
    if let excess = box.value.limitExceeded(setting: value, forKey: name) { return limitRefusal(function, name, excess) }
    box.value[name] = value
    return ok
}

/// The refusal of a string or bytes value of `body` bytes under `key` that would make the dictionary
/// larger than `UserInfoLimits` allows, made before the value is copied (size before content); nil
/// when it fits (or the key is not UTF-8: `dictSet` says so). The words are `dictSet`'s.
private func sizeRefused(_ function: String, _ dict: OpaquePointer, _ key: UnsafePointer<CChar>, body: Int) -> lc_status? {
    guard let name = String(validatingCString: key) else { return nil }
    let entry = UserInfoFootprint(key: name, scalarBody: body)
    guard let excess = UserInfoBox.from(dict).value.limitExceeded(settingEntry: entry, forKey: name) else { return nil }
    return limitRefusal(function, name, excess)
}

/// Records "`function`: 'KEY' would make the dictionary 65 levels deep (at most 64); nothing was set"
/// and returns `LC_ERR_INVALID_ARGUMENT`.
private func limitRefusal(_ function: String, _ key: String, _ excess: UserInfoLimitExceeded) -> lc_status {
    lcFail(LC_ERR_INVALID_ARGUMENT, "\(function): '\(key)' would make the dictionary \(excess); nothing was set")
}

/// Runs a setter's `body` on `dict`; a refusal is remembered by the box (`UserInfoBox.noteRefusedWrite`).
@inline(__always)
private func setting(_ dict: OpaquePointer, _ function: String, _ body: () -> lc_status) -> lc_status {
    let status = body()
    if status != ok { UserInfoBox.from(dict).noteRefusedWrite(function) }
    return status
}

/// Copies `value` (UTF-8) in under `key`. [thread-safe]
package func lcDictSetString(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?)
    -> lc_status
{
    let function = "lc_dict_set_string"
    guard let dict else { return lcNull(function, "dict") }
    return setting(dict, function) {
        guard let key else { return lcNull(function, "key") }
        guard let value else { return lcNull(function, "value") }
        if let refused = sizeRefused(function, dict, key, body: strlen(value)) { return refused }
        guard let string = lcString(value, function, "value") else { return lc_status(LC_ERR_INVALID_ARGUMENT) }
        return dictSet(function, dict, key, .string(string))
    }
}

/// Stores an integer under `key`. [thread-safe]
package func lcDictSetInt(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Int64) -> lc_status {
    let function = "lc_dict_set_int"
    guard let dict else { return lcNull(function, "dict") }
    return setting(dict, function) {
        guard let key else { return lcNull(function, "key") }
        return dictSet(function, dict, key, .int(value))
    }
}

/// Stores a double under `key`. [thread-safe]
package func lcDictSetDouble(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Double) -> lc_status {
    let function = "lc_dict_set_double"
    guard let dict else { return lcNull(function, "dict") }
    return setting(dict, function) {
        guard let key else { return lcNull(function, "key") }
        return dictSet(function, dict, key, .double(value))
    }
}

/// Stores a boolean under `key`. [thread-safe]
package func lcDictSetBool(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Bool) -> lc_status {
    let function = "lc_dict_set_bool"
    guard let dict else { return lcNull(function, "dict") }
    return setting(dict, function) {
        guard let key else { return lcNull(function, "key") }
        return dictSet(function, dict, key, .bool(value))
    }
}

/// Copies `length` bytes in under `key`; `data` may be NULL only when `length` is 0. [thread-safe]
package func lcDictSetBytes(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ data: UnsafeRawPointer?, _ length: Int
) -> lc_status {
    let function = "lc_dict_set_bytes"
    guard let dict else { return lcNull(function, "dict") }
    return setting(dict, function) {
        guard let key else { return lcNull(function, "key") }
        guard data != nil || length == 0 else { return lcNull(function, "data") }
        guard length >= 0 else { return lcFail(LC_ERR_INVALID_ARGUMENT, "\(function): length \(UInt(bitPattern: length)) is too large") }
        if let refused = sizeRefused(function, dict, key, body: length) { return refused }
        let bytes = data.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: length)) } ?? []
        return dictSet(function, dict, key, .bytes(bytes))
    }
}

/// Copies the dictionary `value` in under `key` (`value` may be `dict` itself or a part of it). [thread-safe]
package func lcDictSetDict(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: OpaquePointer?)
    -> lc_status
{
    let function = "lc_dict_set_dict"
    guard let dict else { return lcNull(function, "dict") }
    return setting(dict, function) {
        guard let key else { return lcNull(function, "key") }
        guard let value else { return lcNull(function, "value") }
        return dictSet(function, dict, key, .dict(UserInfoBox.from(value).value))
    }
}

/// Copies the list `value` in under `key`. [thread-safe]
package func lcDictSetList(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: OpaquePointer?)
    -> lc_status
{
    let function = "lc_dict_set_list"
    guard let dict else { return lcNull(function, "dict") }
    return setting(dict, function) {
        guard let key else { return lcNull(function, "key") }
        guard let value else { return lcNull(function, "value") }
        return dictSet(function, dict, key, .list(ListBox.from(value).value))
    }
}

/// Removes `key`; `LC_ERR_NOT_FOUND` when absent. [thread-safe]
package func lcDictRemove(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?) -> lc_status {
    let function = "lc_dict_remove"
    guard let dict else { return lcNull(function, "dict") }
    guard let key else { return lcNull(function, "key") }
    guard let name = lcString(key, function, "key") else { return lc_status(LC_ERR_INVALID_ARGUMENT) }
    let box = UserInfoBox.from(dict)
    guard box.value[name] != nil else { return lcFail(LC_ERR_NOT_FOUND, "\(function): no key '\(name)'") }
    box.value[name] = nil
    return ok
}
