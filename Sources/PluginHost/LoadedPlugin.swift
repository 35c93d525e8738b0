import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc

/// A plugin the host has loaded: its descriptor, its image, and what it registered.
///
/// What an `lc_plugin *` points at. After unloading, the object stays alive (inactive) until its
/// application is destroyed, so that a stale `lc_plugin *` gets an error instead of a crash.
package final class LoadedPlugin {
    package let id: String
    package let version: String
    package let summary: String
    package let path: String
    package let abiMajor: UInt32
    package let abiMinor: UInt32
    /// The delegate methods the plugin exports, in seed order.
    package internal(set) var implementedMethods: [DelegateMethod] = []
    /// Whether it is loaded (false once unloaded or while its init failed).
    package internal(set) var isActive = true

    let handle: UnsafeMutableRawPointer
    let descriptor: lc_plugin_descriptor_t
    var state: UnsafeMutableRawPointer?
    var delegateToken: Application.DelegateToken?
    var timers: Set<UInt64> = []
    /// The message a failing init left with `set_error`.
    var initError: String?
    weak var owner: AppHandle?

    init(id: String, version: String, summary: String, path: String, handle: UnsafeMutableRawPointer,
         descriptor: lc_plugin_descriptor_t, owner: AppHandle)
    {
        self.id = id
        self.version = version
        self.summary = summary
        self.path = path
        self.handle = handle
        self.descriptor = descriptor
        abiMajor = descriptor.abi_major
        abiMinor = descriptor.abi_minor
        self.owner = owner
    }

    /// The id as a C string, for `lc_plugin_id`; lives as long as this object.
    package private(set) lazy var cID: UnsafePointer<CChar> = UnsafePointer(id.withCString { strdup($0) }!)

    deinit { free(UnsafeMutableRawPointer(mutating: cID)) }

    package var opaque: OpaquePointer { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    package static func from(_ pointer: OpaquePointer) -> LoadedPlugin {
        Unmanaged<LoadedPlugin>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    /// The notification names the plugin observes.
    package var observedNames: [NotificationName] { owner?.app.center.observedNames(owner: id) ?? [] }

    /// Removes everything the plugin registered. [loop-thread]
    func removeRegistrations(in handle: AppHandle) {
        handle.app.center.removeObservers(owner: id)
        if let token = delegateToken { handle.app.removeDelegate(token) }
        delegateToken = nil
        for timer in timers { handle.cancelTimer(timer) }
        timers.removeAll()
        handle.app.endBackgroundTasks(owner: id)
    }

    /// Unloading: registrations removed first, then `deinit`. The image stays mapped. [loop-thread]
    func deactivate(in handle: AppHandle) {
        guard isActive else { return }
        removeRegistrations(in: handle)
        isActive = false
        descriptor.deinit?(state)
        state = nil
        handle.retire(self)
    }
}

extension AppHandle {
    /// Keeps an unloaded plugin object alive until the application goes (stale handles stay safe).
    func retire(_ plugin: LoadedPlugin) { retired.append(plugin) }
}
