import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc
import LifecycleC
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
    /// Whether it is loaded (false once unloaded or while its init failed).
    package internal(set) var isActive = true

    /// Its image (mapped for the life of the process).
    let image: PluginImage
    let descriptor: lc_plugin_descriptor_t
    package internal(set) var state: UnsafeMutableRawPointer?
    var delegateToken: Application.DelegateToken?
    /// Its background tasks begun and not yet ended through the host API (an id the engine has
    /// ended meanwhile may linger; the engine answers for it). Read from any thread.
    private let tasks = Mutex<Set<UInt64>>([])
    /// Its own read-only copy of the host-API table, handed back when this object goes.
    package let hostTable: UnsafePointer<lc_host_api_t> = HostAPITable.make()
    /// Whether its init is running (`set_delegate` is accepted only then). [loop-thread]
    var inInit = false
    /// The delegate table its init registered (ABI 1.1), one address per `FFIDelegates.functions` row.
    var delegateTable: [UnsafeMutableRawPointer?]?
    /// The message a failing init left with `set_error`.
    var initError: String?
    package internal(set) weak var owner: AppHandle?

    init(id: String, version: String, summary: String, path: String, image: PluginImage,
         descriptor: lc_plugin_descriptor_t, owner: AppHandle)
    {
        self.id = id
        self.version = version
        self.summary = summary
        self.path = path
        self.image = image
        self.descriptor = descriptor
        abiMajor = descriptor.abi_major
        abiMinor = descriptor.abi_minor
        self.owner = owner
    }

    /// The id as a C string, for `lc_plugin_id`; lives as long as this object.
    package private(set) lazy var cID: UnsafePointer<CChar> = UnsafePointer(id.withCString { strdup($0) }!)

    deinit {
        free(UnsafeMutableRawPointer(mutating: cID))
        HostAPITable.free(hostTable)
    }

    func addTask(_ id: UInt64) { tasks.withLock { _ = $0.insert(id) } }
    /// Whether `id` was its task; forgets it. [thread-safe]
    func removeTask(_ id: UInt64) -> Bool { tasks.withLock { $0.remove(id) != nil } }

    package static func from(_ pointer: OpaquePointer) -> LoadedPlugin {
        Unmanaged<LoadedPlugin>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    /// The notification names the plugin observes.
    package var observedNames: [NotificationName] { owner?.app.center.observedNames(owner: id) ?? [] }

    /// `lc_complete_fn`: what its ABI 1.1 delegate functions receive as `complete`.
    package static let completeFunction: @convention(c) (OpaquePointer?, UInt64, lc_fetch_result) -> lc_status = { plugin, token, result in
        guard let plugin else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "complete: plugin is NULL") }
        return Completions.complete(token, result, caller: LoadedPlugin.from(plugin), function: "complete")
    }

    /// Removes everything the plugin registered. [loop-thread]
    func removeRegistrations(in handle: AppHandle) {
        handle.app.center.removeObservers(owner: id)
        if let token = delegateToken { handle.app.removeDelegate(token) }
        delegateToken = nil
        handle.cancelTimers(owner: id)
        handle.app.endBackgroundTasks(owner: id)
        tasks.withLock { $0.removeAll() }
    }

    /// Unloading: registrations removed first, then `deinit`. The image stays mapped. [loop-thread]
    func deactivate(in handle: AppHandle) {
        guard isActive else { return }
        removeRegistrations(in: handle)
        isActive = false
        descriptor.deinit?(state)
        state = nil
        handle.pluginSet.retire(self)
    }
}
