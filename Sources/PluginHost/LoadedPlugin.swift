import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc
import LifecycleC
import Logging
import Synchronization

/// A plugin the host has loaded: its descriptor, its image, and what it registered.
///
/// What an `lc_plugin *` points at. After unloading, the object stays alive (inactive) until its
/// application is destroyed, so that a stale `lc_plugin *` gets an error instead of a crash.
package final class LoadedPlugin: PluginIdentity {
    package let id: String
    package let version: String
    package let summary: String
    package let path: String
    package let abiMajor: UInt32
    package let abiMinor: UInt32
    /// The delegate methods the plugin implements, in table order.
    package var implementedMethods: [DelegateMethod] { implementedRows.methods }
    /// The rows of `FFIDelegates.functions` it implements.
    var implementedRows = FFIDelegates.Rows()
    /// The scene delegate rows an isolated plugin's process reported (in-process: bound when registered).
    var isolatedSceneRows = FFIDelegates.Rows()
    /// Whether it is loaded (false once unloaded or while its init failed). Written on the loop
    /// thread, read by host-API calls from any of the plugin's threads (a plain variable here was a
    /// data race ThreadSanitizer found: a plugin thread posting while the host unloads it). [thread-safe]
    package internal(set) var isActive: Bool {
        get { active.load(ordering: .acquiring) }
        set { active.store(newValue, ordering: .releasing) }
    }
    private let active = Atomic<Bool>(true)
    /// Its place in its application's load order (`PluginSet.register`: ascending, never reused).
    var loadNumber: UInt64 = 0

    /// Where its image's readable segments (its code among them) are mapped, as address ranges;
    /// empty for an isolated plugin. Immutable: the image stays mapped for the life of the process.
    /// [thread-safe]
    package var imageRanges: [Range<UInt>] {
        guard let ranges = image?.segments.ranges else { return [] }
        return stride(from: 0, to: ranges.count - 1, by: 2).map { ranges[$0]..<ranges[$0 + 1] }
    }

    /// Its image (mapped for the life of the process); nil for an isolated plugin (its image is in
    /// its own process).
    let image: PluginImage?
    let descriptor: lc_plugin_descriptor_t
    /// The `void *state` its init stored (kept in `stateCell`, which its 1.1 delegates read).
    package internal(set) var state: UnsafeMutableRawPointer? {
        get { stateCell.value }
        set { stateCell.value = newValue }
    }
    package let stateCell = PluginStateCell()
    var delegateToken: Application.DelegateToken?
    /// Its background tasks begun and not yet ended through the host API (an id the engine has
    /// ended meanwhile may linger; the engine answers for it). Read from any thread.
    private let tasks = Mutex<Set<UInt64>>([])
    /// Its own read-only copy of the host-API table (or the table its loader chose), handed back when
    /// this object goes.
    package let hostTable: UnsafePointer<lc_host_api_t>
    private let ownsHostTable: Bool
    /// Whether its init is running (`set_delegate` is accepted only then). [loop-thread]
    var inInit = false
    /// The delegate table its init registered (ABI 1.1), one address per `FFIDelegates.functions` row.
    var delegateTable: [UnsafeMutableRawPointer?]?
    /// The message a failing init left with `set_error`.
    var initError: String?
    /// The proxy of a plugin isolated in a process of its own (nil: in this process).
    var isolation: IsolatedPlugin?
    package internal(set) weak var owner: AppHandle?
    /// Its quotas, the custom names charged to it, its refused calls (`PluginQuotas`).
    let quota: QuotaLedger
    /// Its log lines' rate limit.
    let logLimit: LogRateLimit
    /// What its `perform_async` work carries to name it (made once: queuing work hashes no string).
    package let workOwner: WorkOwner
    /// Its `lc_plugin *` (`PluginHandles`): issued as the object is made, retired as it goes.
    package private(set) var handle = OpaquePointer(bitPattern: 0x1)!
    /// Its owner indices in the center's owner table — by id, and by path (its `init` runs marked with
    /// the path: it has no id yet) — for the check of a host-API call against the running callback;
    /// made on first use. [loop-thread]
    var callerIndices: (id: UInt32, path: UInt32)?

    /// A plugin opened in this process; `hostTable` nil: its own copy of the host's table.
    init(_ opened: OpenedPlugin, owner: AppHandle, hostTable: UnsafePointer<lc_host_api_t>?) {
        id = opened.id
        version = opened.version
        summary = opened.summary
        path = opened.path
        image = opened.image
        descriptor = opened.descriptor
        abiMajor = opened.abiMajor
        abiMinor = opened.abiMinor
        self.owner = owner
        self.hostTable = hostTable ?? HostAPITable.make()
        ownsHostTable = hostTable == nil
        quota = QuotaLedger(plugin: opened.id, limits: owner.pluginQuotas)
        logLimit = LogRateLimit(plugin: opened.id, logger: owner.app.configuration.logger, loop: owner.loop)
        workOwner = WorkOwner(opened.id)
        handle = PluginHandles.issue(for: self)
    }

    /// An isolated plugin, as its process described it: no image, no host table of its own here.
    init(isolated id: String, version: String, summary: String, path: String, abiMajor: UInt32, abiMinor: UInt32, owner: AppHandle) {
        self.id = id
        self.version = version
        self.summary = summary
        self.path = path
        image = nil
        descriptor = lc_plugin_descriptor_t()
        self.abiMajor = abiMajor
        self.abiMinor = abiMinor
        self.owner = owner
        hostTable = HostAPITable.make()
        ownsHostTable = true
        quota = QuotaLedger(plugin: id, limits: owner.pluginQuotas)
        logLimit = LogRateLimit(plugin: id, logger: owner.app.configuration.logger, loop: owner.loop)
        workOwner = WorkOwner(id)
        handle = PluginHandles.issue(for: self)
    }

    /// The id as a C string, for `lc_plugin_id`; lives as long as this object.
    package private(set) lazy var cID: UnsafePointer<CChar> = UnsafePointer(id.withCString { strdup($0) }!)

    deinit {
        PluginHandles.retire(handle)
        free(UnsafeMutableRawPointer(mutating: cID))
        if ownsHostTable { HostAPITable.free(hostTable) }
    }

    /// A line in the application's log, attributed to the plugin, within its rate (`LogRateLimit`:
    /// lines over it are dropped and counted in one "suppressed" line). [thread-safe]
    package func log(_ level: lc_log_level, _ message: String) {
        guard owner != nil else { return }
        let logLevel: Logger.Level = switch Int(level) {
        case LC_LOG_DEBUG: .debug
        case LC_LOG_INFO: .info
        case LC_LOG_WARNING: .warning
        default: .error
        }
        logLimit.log(logLevel, message)
    }

    /// Ends a background task this plugin began (else LC_ERR_NOT_FOUND naming the plugin, nothing
    /// changed). [thread-safe]: checked on the calling thread; from another thread the end is applied on the loop.
    func endOwnBackgroundTask(_ task: lc_task_id, in handle: AppHandle, function: String) -> lc_status {
        guard removeTask(task) else {
            return lcFail(lc_status(LC_ERR_NOT_FOUND), "\(function): plugin '\(id)' has no open background task \(task)")
        }
        return handle.endBackgroundTask(task, function: function)
    }

    /// Cancels a timer this plugin added (else LC_ERR_NOT_FOUND naming the plugin, nothing changed). [loop-thread]
    func cancelOwnTimer(_ source: lc_source_id, in handle: AppHandle, function: String) -> lc_status {
        guard handle.hasTimer(source, owner: id) else {
            return lcFail(lc_status(LC_ERR_NOT_FOUND), "\(function): plugin '\(id)' has no timer \(source)")
        }
        return handle.cancelTimer(source, function: function)
    }

    func addTask(_ id: UInt64) { tasks.withLock { _ = $0.insert(id) } }
    /// Forgets every task it began (the engine ended them). [thread-safe]
    func tasksForgotten() { tasks.withLock { $0.removeAll() } }
    /// Whether `id` was its task; forgets it. [thread-safe]
    func removeTask(_ id: UInt64) -> Bool { tasks.withLock { $0.remove(id) != nil } }


    /// The notification names the plugin observes.
    package var observedNames: [NotificationName] { owner?.app.center.observedNames(owner: id) ?? [] }

    /// `lc_complete_fn`: what its ABI 1.1 delegate functions receive as `complete`.
    package static let completeFunction: @convention(c) (OpaquePointer?, UInt64, lc_fetch_result) -> lc_status = { plugin, token, result in
        guard let plugin else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "complete: plugin is NULL") }
        guard let caller = PluginHandles.plugin(for: plugin) else { return PluginHandles.refuse(plugin, "complete") }
        return Completions.complete(token, result, caller: caller, function: "complete")
    }

    /// `lc_complete_void_fn`: what its URL-session delegate function receives as `complete` (no result).
    package static let completeVoidFunction: @convention(c) (OpaquePointer?, UInt64) -> lc_status = { plugin, token in
        guard let plugin else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "complete: plugin is NULL") }
        guard let caller = PluginHandles.plugin(for: plugin) else { return PluginHandles.refuse(plugin, "complete") }
        return Completions.complete(token, lc_fetch_result(LC_FETCH_NO_DATA), caller: caller, function: "complete")
    }

    /// Removes everything the plugin registered: its observers, timers and background tasks are those
    /// held under `owner` (nil: its id; a plugin being reloaded holds them under the name they were
    /// parked under, `PluginReload`). [loop-thread]
    func removeRegistrations(in handle: AppHandle, owner: String? = nil) {
        let owner = owner ?? id
        handle.app.center.removeObservers(owner: owner)
        if let token = delegateToken { handle.app.removeDelegate(token) }
        delegateToken = nil
        handle.cancelTimers(owner: owner)
        handle.app.endBackgroundTasks(owner: owner)
        tasksForgotten()
    }

    /// Unloading: registrations removed first (held under `owner`, nil: its id), then `deinit`. The
    /// image stays mapped. [loop-thread]
    func deactivate(in handle: AppHandle, owner: String? = nil) {
        guard isActive else { return }
        removeRegistrations(in: handle, owner: owner)
        isActive = false
        quota.flushAll(handle)
        isolation?.unload()
        descriptor.deinit?(state)
        state = nil
        // After deinit: its lines, and an isolated runner's read while waiting for `unloaded`, are
        // in the note.
        logLimit.flush()
        handle.pluginSet.retire(self)
    }
}
