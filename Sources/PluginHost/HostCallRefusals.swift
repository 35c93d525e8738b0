import CLifecycleABI
import LifecycleC
import Synchronization

/// One host-API call of a plugin that ended with an error status (`LC_ERR_NOT_FOUND` for another
/// plugin's observer or task, `LC_ERR_QUEUE_FULL`, `LC_ERR_NESTING_LIMIT`, a call after unloading, …).
package struct HostCallRefusal: Sendable {
    /// The calling plugin's id ("" when the plugin pointer was NULL).
    package let plugin: String
    /// The host-API function: `post`, `remove_observer`, `end_background_task`, …
    package let function: String
    package let status: lc_status
    /// The message the call left for `lc_last_error_message`.
    package let message: String
    /// Whether the plugin was unloaded (its deinit had run, or its init had failed) when it called.
    package let afterUnload: Bool
}

/// A watch on refused host-API calls, for `lifecycle-host validate`: the host itself never needs one
/// (a refused call is the plugin's to handle, with its status and `lc_last_error_message`).
///
/// Costs nothing on a call that succeeds; a refused call takes a lock and calls the watch on the
/// plugin's calling thread (the main thread or one of its own). [thread-safe]
package enum HostCallRefusals {
    /// The handler, in a box: a closure kept as a `Mutex`'s optional value and read out of it was
    /// wrapped in two more reabstraction thunks at every read (the N-th refusal ran through 2N of
    /// them: 20,000 refused calls took 7.6 s under `validate`); a box is read as a reference.
    private final class Watch: Sendable {
        let handler: @Sendable (HostCallRefusal) -> Void
        init(_ handler: @escaping @Sendable (HostCallRefusal) -> Void) { self.handler = handler }
    }

    private static let watch = Mutex<Watch?>(nil)

    /// Installs `handler` (nil: none) for every plugin of this process; called on the plugin's thread,
    /// after the refusal's message was recorded. It must not call the plugin.
    package static func watch(_ handler: (@Sendable (HostCallRefusal) -> Void)?) {
        let box = handler.map(Watch.init)
        watch.withLock { $0 = box }
    }

    /// A call of `function` by `plugin` ended with `status`. [thread-safe] O(1).
    static func refused(_ plugin: OpaquePointer?, _ function: String, _ status: lc_status) {
        guard let handler = watch.withLock({ $0 })?.handler else { return }
        let caller = PluginHandles.plugin(for: plugin)
        handler(HostCallRefusal(plugin: caller?.id ?? "", function: function, status: status,
                                message: String(cString: lcLastErrorMessage()), afterUnload: caller.map { !$0.isActive } ?? false))
    }
}
