import CLifecycleABI
import CLifecycleSystem
import LifecycleC

// The exported lc_dict_* and lc_list_* functions of include/lifecycle.h: one-line calls into
// LifecycleC/CDict.swift. `@c @implementation`: the compiler checks each signature against the
// header's declaration. Every one is [thread-safe] on distinct dictionaries and lists.

// MARK: Dictionaries

@c @implementation public func lc_dict_create() -> OpaquePointer? { lcDictCreate() }
@c @implementation public func lc_dict_copy(_ dict: OpaquePointer?) -> OpaquePointer? { lcDictCopy(dict) }
@c @implementation public func lc_dict_destroy(_ dict: OpaquePointer?) { lcDictDestroy(dict) }
@c @implementation public func lc_dict_count(_ dict: OpaquePointer?) -> Int { lcDictCount(dict) }
@c @implementation public func lc_dict_key_at(_ dict: OpaquePointer?, _ index: Int) -> UnsafePointer<CChar>? { lcDictKeyAt(dict, index) }
@c @implementation public func lc_dict_type(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?) -> lc_value_type { lcDictType(dict, key) }
@c @implementation public func lc_dict_json(_ dict: OpaquePointer?) -> UnsafePointer<CChar>? { lcDictJSON(dict) }

@c @implementation public func lc_dict_get_string(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?
) -> lc_status { lcDictGetString(dict, key, out) }
@c @implementation public func lc_dict_get_int(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Int64>?
) -> lc_status { lcDictGetInt(dict, key, out) }
@c @implementation public func lc_dict_get_double(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Double>?
) -> lc_status { lcDictGetDouble(dict, key, out) }
@c @implementation public func lc_dict_get_bool(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Bool>?
) -> lc_status { lcDictGetBool(dict, key, out) }
@c @implementation public func lc_dict_get_bytes(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ data: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
    _ length: UnsafeMutablePointer<Int>?
) -> lc_status { lcDictGetBytes(dict, key, data, length) }
@c @implementation public func lc_dict_get_dict(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> lc_status { lcDictGetDict(dict, key, out) }
@c @implementation public func lc_dict_get_list(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> lc_status { lcDictGetList(dict, key, out) }

@c @implementation public func lc_dict_set_string(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: UnsafePointer<CChar>?) -> lc_status {
    lcDictSetString(dict, key, value)
}
@c @implementation public func lc_dict_set_int(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Int64) -> lc_status {
    lcDictSetInt(dict, key, value)
}
@c @implementation public func lc_dict_set_double(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Double) -> lc_status {
    lcDictSetDouble(dict, key, value)
}
@c @implementation public func lc_dict_set_bool(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: Bool) -> lc_status {
    lcDictSetBool(dict, key, value)
}
@c @implementation public func lc_dict_set_bytes(
    _ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ data: UnsafeRawPointer?, _ length: Int
) -> lc_status { lcDictSetBytes(dict, key, data, length) }
@c @implementation public func lc_dict_set_dict(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: OpaquePointer?) -> lc_status {
    lcDictSetDict(dict, key, value)
}
@c @implementation public func lc_dict_set_list(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ value: OpaquePointer?) -> lc_status {
    lcDictSetList(dict, key, value)
}
@c @implementation public func lc_dict_remove(_ dict: OpaquePointer?, _ key: UnsafePointer<CChar>?) -> lc_status {
    lcDictRemove(dict, key)
}

// MARK: Lists

@c @implementation public func lc_list_create() -> OpaquePointer? { lcListCreate() }
@c @implementation public func lc_list_destroy(_ list: OpaquePointer?) { lcListDestroy(list) }
@c @implementation public func lc_list_count(_ list: OpaquePointer?) -> Int { lcListCount(list) }
@c @implementation public func lc_list_type_at(_ list: OpaquePointer?, _ index: Int) -> lc_value_type {
    lcListTypeAt(list, index)
}
@c @implementation public func lc_list_get_string(_ list: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?)
    -> lc_status
{ lcListGetString(list, index, out) }
@c @implementation public func lc_list_get_int(_ list: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<Int64>?)
    -> lc_status
{ lcListGetInt(list, index, out) }
@c @implementation public func lc_list_get_double(_ list: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<Double>?)
    -> lc_status
{ lcListGetDouble(list, index, out) }
@c @implementation public func lc_list_get_bool(_ list: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<Bool>?)
    -> lc_status
{ lcListGetBool(list, index, out) }
@c @implementation public func lc_list_get_dict(
    _ list: OpaquePointer?, _ index: Int, _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> lc_status { lcListGetDict(list, index, out) }
@c @implementation public func lc_list_append_string(_ list: OpaquePointer?, _ value: UnsafePointer<CChar>?) -> lc_status {
    lcListAppendString(list, value)
}
@c @implementation public func lc_list_append_int(_ list: OpaquePointer?, _ value: Int64) -> lc_status {
    lcListAppendInt(list, value)
}
@c @implementation public func lc_list_append_double(_ list: OpaquePointer?, _ value: Double) -> lc_status {
    lcListAppendDouble(list, value)
}
@c @implementation public func lc_list_append_bool(_ list: OpaquePointer?, _ value: Bool) -> lc_status {
    lcListAppendBool(list, value)
}
@c @implementation public func lc_list_append_dict(_ list: OpaquePointer?, _ value: OpaquePointer?) -> lc_status {
    lcListAppendDict(list, value)
}
