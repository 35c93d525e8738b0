import AppLifecycle
import CLifecycleABI
import LifecycleC

// The checks a host-API call makes of the `lc_plugin *` it is given: that the host gave it out
// (`PluginHandles`), and, on the main thread, that it is the handle of the plugin whose callback runs.

extension PluginHandles {
    /// The refusal of a handle this process never gave out (or one retired): `LC_ERR_INVALID_ARGUMENT`,
    /// the handle's bits in the message; it is never dereferenced. [thread-safe]
    static func refuse(_ handle: OpaquePointer, _ function: String) -> lc_status {
        let bits = String(UInt(bitPattern: handle), radix: 16)
        return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT),
                      "\(function): 0x\(bits) is not a plugin handle this host gave out (forged, damaged, or of a plugin whose application is gone)")
    }
}

extension LoadedPlugin {
    /// On the main thread, inside a callback the loop marked as a plugin's (an observer, a delegate
    /// method, a timer, posted work, `init`, an expiration handler), the calling plugin is that
    /// callback's owner: a call naming another plugin's handle is refused (`LC_ERR_INVALID_ARGUMENT`)
    /// and traced (`handle-refused`), nothing changed. Nil when the call may go on: no marked callback
    /// runs, it has no owner, or it is this plugin's (by id, or by path during its `init`).
    /// [loop-thread] A few loads, and an owner lookup the first time.
    func callerMismatch(in handle: AppHandle, _ function: String) -> lc_status? {
        let center = handle.app.center
        guard let running = center.probe.innermostOwner(), running != 0 else { return nil }
        let mine: (id: UInt32, path: UInt32)
        if let known = callerIndices { mine = known } else {
            mine = (center.ownerID(id), center.ownerID(path))
            callerIndices = mine
        }
        guard running != mine.id, running != mine.path else { return nil }
        let caller = center.probe.running()?.innermost.owner ?? ""
        handle.app.record(.handleRefused(function: function, handleOf: id, caller: caller))
        return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT),
                      "\(function): called with the handle of plugin '\(id)' while a callback of '\(caller)' runs; a plugin calls with its own lc_plugin *")
    }
}
