import AppLifecycle
import CLifecycleABI

/// A plugin as the C layer sees it: what the delegate bridge and the completion table need to know of
/// the plugin behind an `lc_plugin *`. The plugins module's `LoadedPlugin` is the conforming type; the
/// C layer never loads, finds or unloads a plugin itself.
package protocol PluginIdentity: AnyObject {
    /// Its reverse-DNS id, for messages and labels.
    var id: String { get }
    /// The `void *state` its init stored, passed to its ABI 1.1 delegate functions. [loop-thread]
    var state: UnsafeMutableRawPointer? { get }
    /// The application it was loaded in; nil once that application is gone.
    var owner: AppHandle? { get }
    /// The `lc_complete_fn` its ABI 1.1 delegate functions receive: it turns the `lc_plugin *` back
    /// into the plugin and calls `Completions.complete(_:_:caller:function:)` with it.
    static var completeFunction: @convention(c) (OpaquePointer?, UInt64, lc_fetch_result) -> lc_status { get }
    /// The `lc_plugin *` C code holds for it: a handle only the plugins module turns back into the
    /// plugin (never the object's address). Immutable for the object's life. [thread-safe]
    var handle: OpaquePointer { get }
}
