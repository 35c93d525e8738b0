import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc
import Logging

/// What an `lc_app *` points at: one application with its loop, its plugins, its C delegates and
/// the C callbacks registered on it.
///
/// Bound to the thread that created it (the loop's thread), like the `Application` it wraps.
package final class AppHandle: @unchecked Sendable {
    package let loop: MainRunLoop
    package let app: Application
    /// `app.center`, unretained (the application owns it for as long as this handle lives): the
    /// posting fast path calls it without a retain/release pair.
    package let center: Unmanaged<AppNotificationCenter>
    /// Loaded plugins in load order.
    package private(set) var plugins: [LoadedPlugin] = []
    /// Unloaded plugins, kept so that a stale `lc_plugin *` is answered, not dereferenced freed.
    var retired: [LoadedPlugin] = []
    /// The C function pointers handed to ABI 1.0 plugins' completion-taking delegate functions (the
    /// process-wide pool: its closures are never freed).
    package var closures: CompletionClosurePool { CompletionClosurePool.shared }
    private var timers: [UInt64: LoopSource] = [:]
    private var nextTimerID: UInt64 = 1
    private var traceCallback: (fn: @convention(c) (UnsafePointer<lc_trace_event_t>?, UnsafeMutableRawPointer?) -> Void,
                                ctx: UnsafeMutableRawPointer?)?

    /// Creates the application on the calling thread, which becomes its main thread.
    package init(configuration: Configuration) throws(ApplicationError) {
        do { loop = try MainRunLoop() } catch { throw ApplicationError(error) }
        app = Application(configuration: configuration, loop: loop)
        center = Unmanaged.passUnretained(app.center)
        app.traceHandler = { [unowned self] event in self.forwardTrace(event) }
        precondition(Self.recordLayoutMatches, "the engine's NotificationRecord no longer has lc_notification_t's layout")
        // C observers read a notification's userInfo through lc_dict accessors: a box per post owns
        // the C strings they are handed.
        app.center.rawUserInfoBridge = { UserInfoBox($0) }
    }

    /// Whether the engine's record is laid out exactly as the header's `lc_notification_t`, field by
    /// field: C observers receive the engine's record directly, as an `lc_notification_t *`.
    static let recordLayoutMatches: Bool = {
        typealias R = NotificationRecord
        typealias C = lc_notification_t
        return MemoryLayout<R>.size == MemoryLayout<C>.size && MemoryLayout<R>.alignment == MemoryLayout<C>.alignment
            && MemoryLayout<R>.offset(of: \R.structSize) == MemoryLayout<C>.offset(of: \C.struct_size)
            && MemoryLayout<R>.offset(of: \R.nameID) == MemoryLayout<C>.offset(of: \C.name_id)
            && MemoryLayout<R>.offset(of: \R.name) == MemoryLayout<C>.offset(of: \C.name)
            && MemoryLayout<R>.offset(of: \R.sender) == MemoryLayout<C>.offset(of: \C.sender)
            && MemoryLayout<R>.offset(of: \R.userInfo) == MemoryLayout<C>.offset(of: \C.user_info)
    }()

    /// Unloads the plugins (newest first) before the application goes.
    package func shutdown() {
        for plugin in plugins.reversed() { unload(plugin) }
        for timer in timers.values { timer.cancel() }
        timers.removeAll()
    }

    package var opaque: OpaquePointer { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    package static func from(_ pointer: OpaquePointer) -> AppHandle {
        Unmanaged<AppHandle>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    // MARK: Trace

    package func setTrace(_ fn: (@convention(c) (UnsafePointer<lc_trace_event_t>?, UnsafeMutableRawPointer?) -> Void)?,
                          ctx: UnsafeMutableRawPointer?)
    {
        traceCallback = fn.map { ($0, ctx) }
    }

    /// Other Swift code (the host) that wants the trace too.
    package var swiftTraceHandler: ((TraceEvent) -> Void)?

    private func forwardTrace(_ event: TraceEvent) {
        swiftTraceHandler?(event)
        guard let callback = traceCallback else { return }
        event.kind.rawValue.withCString { kind in
            event.name.withCString { name in
                withOptionalCString(event.observer) { observer in
                    withOptionalCString(event.detail) { detail in
                        var record = lc_trace_event_t(
                            struct_size: UInt32(MemoryLayout<lc_trace_event_t>.size), seq: event.seq,
                            time: event.time.secondsDouble, kind: kind, name: name,
                            state: event.state.lcState, observer: observer, detail: detail)
                        callback.fn(&record, callback.ctx)
                    }
                }
            }
        }
    }

    // MARK: Timers (for C callers and plugins)

    package func addTimer(seconds: Double, owner: LoadedPlugin?, _ body: @escaping () -> Void) -> UInt64 {
        let id = nextTimerID
        nextTimerID += 1
        let delay = Duration.nanoseconds(Int64(max(0, min(seconds, 1e9)) * 1e9))
        timers[id] = loop.addTimer(after: delay) { [weak self, weak owner] in
            self?.timers[id] = nil
            owner?.timers.remove(id)
            body()
        }
        owner?.timers.insert(id)
        return id
    }

    @discardableResult
    package func cancelTimer(_ id: UInt64) -> Bool {
        guard let source = timers.removeValue(forKey: id) else { return false }
        source.cancel()
        return true
    }

    // MARK: Plugins

    /// The loaded plugins sorted by id (ids are unique among loaded plugins), searched by halving: the
    /// duplicate check of each load stays cheap with a thousand plugins. (A dictionary would do as
    /// well later, but instantiating its type costs the first load of a process more than a search.)
    private var pluginsByID: [LoadedPlugin] = []

    /// Where `id` is, or would be inserted, in `pluginsByID`.
    private func sortedIndex(of id: String) -> (index: Int, found: Bool) {
        var low = 0
        var high = pluginsByID.count
        while low < high {
            let middle = (low + high) / 2
            if pluginsByID[middle].id < id { low = middle + 1 } else { high = middle }
        }
        return (low, low < pluginsByID.count && pluginsByID[low].id == id)
    }

    package func plugin(id: String) -> LoadedPlugin? {
        let position = sortedIndex(of: id)
        return position.found ? pluginsByID[position.index] : nil
    }

    func register(_ plugin: LoadedPlugin) {
        plugins.append(plugin)
        pluginsByID.insert(plugin, at: sortedIndex(of: plugin.id).index)
    }

    /// Deactivates a plugin: its observers, delegate functions, timers and background tasks are
    /// removed, then its deinit runs. The image stays mapped (RTLD_NODELETE).
    package func unload(_ plugin: LoadedPlugin) {
        guard let index = plugins.firstIndex(where: { $0 === plugin }) else { return }
        plugins.remove(at: index)
        let position = sortedIndex(of: plugin.id)
        if position.found, pluginsByID[position.index] === plugin { pluginsByID.remove(at: position.index) }
        plugin.deactivate(in: self)
    }
}

/// Calls `body` with a C string for `string`, or NULL.
func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
