// CacheTrimmer: a plugin written in Swift against the C header (module CLifecycleABI).
//
// * Keeps an in-memory cache and trims it on memory warnings: by half at "normal" and "warning",
//   completely at "critical".
// * On didEnterBackground it begins a background task, flushes the cache on a timer, and ends the
//   task: the application stays in the background until then.
//
// Rules it follows: only C structs and function pointers cross the boundary; every callback runs on
// the host's main thread, so the plain globals below need no lock.

import CLifecycleABI

nonisolated(unsafe) private var host: UnsafePointer<lc_host_api_t>?
nonisolated(unsafe) private var plugin: OpaquePointer?
nonisolated(unsafe) private var cacheEntries = 1_000
nonisolated(unsafe) private var flushTask: lc_task_id = 0

private func say(_ line: String) {
    print("cachetrimmer: \(line)")
    fflushStandardOutput()
}

private func fflushStandardOutput() {
    // print() buffers; plugins share the host's stdout, so flush after each line.
    _ = fflush(nil)
}

@_silgen_name("fflush") private func fflush(_ stream: OpaquePointer?) -> Int32

private let onMemoryWarning: lc_observer_fn = { note, _ in
    guard let host, let note else { return }
    var level: UnsafePointer<CChar>?
    if let info = note.pointee.user_info {
        _ = host.pointee.dict.pointee.get_string(info, "level", &level)
    }
    let levelName = level.map { String(cString: $0) } ?? "warning"
    cacheEntries = levelName == "critical" ? 0 : cacheEntries / 2
    say("trimmed the cache to \(cacheEntries) entries (\(levelName))")
}

private let flushDone: @convention(c) (UnsafeMutableRawPointer?) -> Void = { _ in
    guard let host, flushTask != 0 else { return }
    say("flushed \(cacheEntries) entries")
    _ = host.pointee.end_background_task(plugin, flushTask)
    flushTask = 0
}

private let onExpiration: @convention(c) (UnsafeMutableRawPointer?) -> Void = { _ in
    // Out of background time: stop flushing and end the task, as iOS asks.
    flushDone(nil)
}

private let onDidEnterBackground: lc_observer_fn = { _, _ in
    guard let host, flushTask == 0 else { return }
    var task: lc_task_id = 0
    guard host.pointee.begin_background_task(plugin, "flush cache", onExpiration, nil, &task) == 0 else { return }
    flushTask = task
    say("flushing in the background")
    _ = host.pointee.add_timer(plugin, 0.05, flushDone, nil, nil)
}

private let initialise: @convention(c) (UnsafePointer<lc_host_api_t>?, OpaquePointer?,
                                        UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> lc_status = { api, me, _ in
    guard let api, let me else { return -1 }
    host = api
    plugin = me
    cacheEntries = 1_000
    if api.pointee.observe(me, "didReceiveMemoryWarning", nil, onMemoryWarning, nil, nil) != 0
        || api.pointee.observe(me, "didEnterBackground", nil, onDidEnterBackground, nil, nil) != 0
    {
        _ = api.pointee.set_error(me, "could not observe its notifications")
        return -1
    }
    return 0
}

/// A C string with static storage.
private func staticCString(_ s: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
}

// The descriptor's storage is a global of the plugin, so it lies in the plugin's own image: the host
// refuses a descriptor anywhere else (allocated on the heap, say). Initialised once, on first use (a
// global's initialiser runs once, thread-safely), then only read.
nonisolated(unsafe) private var descriptor = lc_plugin_descriptor_t(
    struct_size: UInt32(MemoryLayout<lc_plugin_descriptor_t>.size),
    magic: LC_PLUGIN_MAGIC,
    abi_major: UInt32(LC_ABI_VERSION_MAJOR),
    abi_minor: UInt32(LC_ABI_VERSION_MINOR),
    id: staticCString("org.applifecycle.cachetrimmer"),
    version: staticCString("1.0.0"),
    description: staticCString("Trims its cache on memory warnings; flushes it in a background task"),
    init: initialise,
    deinit: nil)

/// The plugin's one exported symbol: the address of the global itself (never a copy).
@c public func lc_plugin_entry() -> UnsafePointer<lc_plugin_descriptor_t>? { withUnsafePointer(to: &descriptor) { $0 } }
