// The dictionary-API table handed to plugins (`lc_host_api_t.dict`).
import CLifecycleABI

/// The dictionary functions for plugins (`lc_host_api_t.dict`): allocated once, never freed,
/// never changed. [thread-safe]
// nonisolated(unsafe): built once by the lazy global init, never written or freed afterwards; only read.
nonisolated(unsafe) package let lcDictAPI: UnsafePointer<lc_dict_api_t> = {
    let table = UnsafeMutablePointer<lc_dict_api_t>.allocate(capacity: 1)
    table.initialize(to: lcDictAPIContents())
    return UnsafePointer(table)
}()

/// What `lcDictAPI` holds, as a value: for the host-API tables' own copies, made in place.
package func lcDictAPIContents() -> lc_dict_api_t {
    lc_dict_api_t(
        struct_size: UInt32(MemoryLayout<lc_dict_api_t>.size),
        create: { lcDictCreate() },
        copy: { lcDictCopy($0) },
        destroy: { lcDictDestroy($0) },
        count: { lcDictCount($0) },
        key_at: { lcDictKeyAt($0, $1) },
        type: { lcDictType($0, $1) },
        json: { lcDictJSON($0) },
        get_string: { lcDictGetString($0, $1, $2) },
        get_int: { lcDictGetInt($0, $1, $2) },
        get_double: { lcDictGetDouble($0, $1, $2) },
        get_bool: { lcDictGetBool($0, $1, $2) },
        get_bytes: { lcDictGetBytes($0, $1, $2, $3) },
        get_dict: { lcDictGetDict($0, $1, $2) },
        set_string: { lcDictSetString($0, $1, $2) },
        set_int: { lcDictSetInt($0, $1, $2) },
        set_double: { lcDictSetDouble($0, $1, $2) },
        set_bool: { lcDictSetBool($0, $1, $2) },
        set_bytes: { lcDictSetBytes($0, $1, $2, $3) },
        set_dict: { lcDictSetDict($0, $1, $2) },
        remove: { lcDictRemove($0, $1) },
        get_list: { lcDictGetList($0, $1, $2) },
        list_count: { lcListCount($0) },
        list_type_at: { lcListTypeAt($0, $1) },
        list_get_string: { lcListGetString($0, $1, $2) },
        list_get_int: { lcListGetInt($0, $1, $2) },
        list_get_double: { lcListGetDouble($0, $1, $2) },
        list_get_bool: { lcListGetBool($0, $1, $2) },
        list_get_dict: { lcListGetDict($0, $1, $2) }
    )
}
