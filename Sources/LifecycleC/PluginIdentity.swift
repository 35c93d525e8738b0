import AppLifecycle
import CLifecycleABI
import Synchronization

/// A plugin as the C layer sees it: what the delegate bridge and the completion table need to know of
/// the plugin behind an `lc_plugin *`. The plugins module's `LoadedPlugin` is the conforming type; the
/// C layer never loads, finds or unloads a plugin itself.
package protocol PluginIdentity: AnyObject {
    /// Its reverse-DNS id, for messages and labels.
    var id: String { get }
    /// Where the `void *state` its init stored is kept: passed to its ABI 1.1 delegate functions,
    /// read at each call. Immutable reference.
    var stateCell: PluginStateCell { get }
    /// The application it was loaded in; nil once that application is gone.
    var owner: AppHandle? { get }
    /// The `lc_complete_fn` its ABI 1.1 delegate functions receive: it turns the `lc_plugin *` back
    /// into the plugin and calls `Completions.complete(_:_:caller:function:)` with it.
    static var completeFunction: @convention(c) (OpaquePointer?, UInt64, lc_fetch_result) -> lc_status { get }
    /// The `lc_complete_void_fn` (ABI 1.5) its URL-session delegate function receives: as
    /// `completeFunction`, with no result.
    static var completeVoidFunction: @convention(c) (OpaquePointer?, UInt64) -> lc_status { get }
    /// The `lc_plugin *` C code holds for it: a handle only the plugins module turns back into the
    /// plugin (never the object's address). Immutable for the object's life. [thread-safe]
    var handle: OpaquePointer { get }
}

/// A plugin's `void *state` (what its init stored), in a cell of its own: the delegate bridge holds
/// the cell and reads it at each call without touching the plugin object (whose reference count,
/// behind weak references, is a side table: a retain and release per call cost ~130 instructions).
/// [thread-safe] (a relaxed atomic word; written on the loop thread after init, read there).
package final class PluginStateCell: Sendable {
    private let word = Atomic<UInt>(0)

    package init() {}

    package var value: UnsafeMutableRawPointer? {
        get { UnsafeMutableRawPointer(bitPattern: word.load(ordering: .relaxed)) }
        set { word.store(UInt(bitPattern: newValue), ordering: .relaxed) }
    }
}
