import AppLifecycle
import Synchronization
import CLifecycleABI
import CLifecycleSystem
import Glibc
import Logging

/// What an `lc_app *` points at: one application with its loop, its C delegates and the C callbacks
/// registered on it.
///
/// Bound to the thread that created it (the loop's thread), like the `Application` it wraps. It knows
/// nothing of plugins: the plugins module keeps its loaded plugins in `attachment`.
package final class AppHandle: @unchecked Sendable {
    // @unchecked: vars loop-only ([main-thread] C calls check); the thread-safe C paths read only the lets.
    package let loop: MainRunLoop
    package let app: Application
    /// `app.center`, unretained (the application owns it for as long as this handle lives): the
    /// posting fast path calls it without a retain/release pair.
    package let center: Unmanaged<AppNotificationCenter>
    /// What a module above keeps on this application (the plugins module: its loaded plugins); told
    /// first when the application shuts down. [loop-thread]
    package var attachment: (any AppHandleAttachment)?
    /// How many C calls of its main thread are under way on it (`withApp`), and whether
    /// `lc_app_destroy` came during one: its last reference is then dropped when the outermost
    /// returns, not under the calls still using it. [loop-thread] (Atomics with relaxed order, plain
    /// loads and stores on the loop thread: a stored `var` would cost a dynamic exclusivity check at
    /// each of a call's three accesses, ~110 instructions.)
    package let callDepth = Atomic<Int>(0)
    package let destroyPending = Atomic<Bool>(false)
    /// The C function pointers handed to ABI 1.0 plugins' completion-taking delegate functions (the
    /// process-wide pool: its closures are never freed).
    package var closures: CompletionClosurePool { CompletionClosurePool.shared }
    /// Live timers and who added them (a plugin's id, or nil for a C caller).
    private var timers: [UInt64: (source: LoopSource, owner: String?)] = [:]
    /// How many of `timers` each owner added (kept with `timers`: `timerCount(owner:)`).
    private var timerCounts: [String: Int] = [:]
    private var nextTimerID: UInt64 = 1
    /// The scenes remembered as `lc_scene *` handles (`SceneHandles`). [loop-thread]
    var rememberedScenes: Set<ObjectIdentifier> = []
    /// The session ids handed out as C strings (`lc_app_sessions`), kept until the handle goes: one per
    /// id ever listed. [loop-thread]
    var sessionCStrings: [String: UnsafeMutablePointer<CChar>] = [:]
    /// The session userInfo boxes handed out (`lc_app_session_user_info`), each kept until the
    /// session's userInfo is set again or the handle goes. [loop-thread]
    var sessionUserInfoBoxes: [String: UserInfoBox] = [:]
    private var traceCallback: (fn: @convention(c) (UnsafePointer<lc_trace_event_t>?, UnsafeMutableRawPointer?) -> Void,
                                ctx: UnsafeMutableRawPointer?)?

    /// Creates the application on the calling thread, which becomes its main thread, with its loop on
    /// `clock`.
    package init(configuration: Configuration, clock: LoopClock = .monotonic) throws(ApplicationError) {
        do { loop = try MainRunLoop(clock: clock) } catch { throw ApplicationError(error) }
        app = Application(configuration: configuration, loop: loop)
        center = Unmanaged.passUnretained(app.center)
        updateTraceHandler()
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

    /// Lets the attachment go first (the plugins module unloads the plugins, newest first), then
    /// cancels the timers, before the application goes.
    package func shutdown() {
        attachment?.shutdown(self)
        for timer in timers.values { timer.source.cancel() }
        timers.removeAll()
        timerCounts.removeAll()
        SceneHandles.forget(owner: ObjectIdentifier(self))
        rememberedScenes.removeAll()
    }

    /// A handle dropped without `shutdown` (a Swift caller that forgets it, an error path) still takes
    /// its scene handles with it: none is left pointing at a freed application.
    deinit {
        if !rememberedScenes.isEmpty { SceneHandles.forget(owner: ObjectIdentifier(self)) }
        for string in sessionCStrings.values { free(string) }
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
        updateTraceHandler()
    }

    /// Other Swift code (the host) that wants the trace too.
    package var swiftTraceHandler: ((TraceEvent) -> Void)? {
        didSet { updateTraceHandler() }
    }

    /// Hands the engine a trace handler only while something reads the trace — a C trace callback, the
    /// host, or the scene handles of a scene-based application (`forwardTrace` remembers a scene as
    /// its events pass) — so that an application nobody traces renders no event: a delegate call or a
    /// notification then costs the trace one increment of its sequence number.
    private func updateTraceHandler() {
        let wanted = traceCallback != nil || swiftTraceHandler != nil || app.isSceneBased
        if wanted, app.traceHandler == nil {
            app.traceHandler = { [unowned self] event in self.forwardTrace(event) }
        } else if !wanted {
            app.traceHandler = nil
        }
    }

    private func forwardTrace(_ event: TraceEvent) {
        // A scene's delegate calls and notifications are traced before they happen: its handle is
        // remembered before C code can meet it.
        if let scene = event.scene { rememberScene(scene) }
        swiftTraceHandler?(event)
        guard let callback = traceCallback else { return }
        event.kind.rawValue.withCString { kind in
            event.name.withCString { name in
                withOptionalCString(event.observer) { observer in
                    withOptionalCString(event.detail) { detail in
                        withOptionalCString(event.scene) { scene in
                            var record = lc_trace_event_t(
                                struct_size: UInt32(MemoryLayout<lc_trace_event_t>.size), seq: event.seq,
                                time: event.time.secondsDouble, kind: kind, name: name,
                                state: event.state.lcState, observer: observer, detail: detail, scene: scene)
                            callback.fn(&record, callback.ctx)
                        }
                    }
                }
            }
        }
    }

    // MARK: Timers (for C callers and plugins)

    /// Adds a one-shot timer on the loop; `owner` (a plugin's id) may later cancel it by id. `body`
    /// runs marked as a callback of `owner` (the hang budget watches it).
    package func addTimer(seconds: Double, owner: String?, _ body: @escaping () -> Void) -> UInt64 {
        let id = nextTimerID
        nextTimerID += 1
        let delay = CSeconds.duration(seconds, atMost: 1e9)
        let source = loop.addTimer(after: delay) { [weak self] in
            guard let self else { return }
            forgetTimer(id)
            app.runMarked("timer", owner: owner ?? "", body)
        }
        timers[id] = (source, owner)
        if let owner { timerCounts[owner, default: 0] += 1 }
        return id
    }

    @discardableResult
    package func cancelTimer(_ id: UInt64) -> Bool {
        guard let timer = forgetTimer(id) else { return false }
        timer.source.cancel()
        return true
    }

    /// Takes timer `id` out of the table (it fired, or is being cancelled), and out of its owner's count.
    @discardableResult
    private func forgetTimer(_ id: UInt64) -> (source: LoopSource, owner: String?)? {
        guard let timer = timers.removeValue(forKey: id) else { return nil }
        if let owner = timer.owner {
            let left = (timerCounts[owner] ?? 1) - 1
            timerCounts[owner] = left > 0 ? left : nil
        }
        return timer
    }

    /// How many live timers (added, neither fired nor cancelled) `owner` added. O(1). [loop-thread]
    package func timerCount(owner: String) -> Int { timerCounts[owner] ?? 0 }

    /// Whether timer `id` is live and was added by `owner`.
    package func hasTimer(_ id: UInt64, owner: String) -> Bool { timers[id]?.owner == owner }

    /// Cancels every live timer `owner` added.
    package func cancelTimers(owner: String) {
        for (id, timer) in timers where timer.owner == owner { cancelTimer(id) }
    }
}

/// What a module above the C layer keeps on an application (`AppHandle.attachment`): the plugins
/// module keeps its loaded plugins there, so that the C layer needs no plugin type.
package protocol AppHandleAttachment: AnyObject {
    /// Called first by `AppHandle.shutdown()`, on the loop thread, while the application still works.
    func shutdown(_ handle: AppHandle)
}

/// Calls `body` with a C string for `string`, or NULL.
func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
