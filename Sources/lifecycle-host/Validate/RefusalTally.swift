import LifecycleC
import PluginHost
import Synchronization

/// The `host-api` check's eyes in the step process: every refused host-API call of the plugin
/// (`HostCallRefusals`), by function, status and whether the plugin was unloaded. The first of each
/// kind is recorded at once, with its message (a crash after it loses nothing); the rest are only
/// counted as seen.
///
/// O(1) a refusal: a flooding thread refused a million times costs a million set look-ups and one
/// record. [thread-safe]
final class RefusalTally: Sendable {
    private struct Kind: Hashable {
        let function: String
        let status: String
        let afterUnload: Bool
    }

    private let records: StepRecordWriter
    private let seen = Mutex<Set<Kind>>([])

    init(records: StepRecordWriter) { self.records = records }

    /// Starts watching this process's plugins.
    func install() {
        HostCallRefusals.watch { [self] refusal in add(refusal) }
    }

    private func add(_ refusal: HostCallRefusal) {
        let kind = Kind(function: refusal.function, status: String(cString: lcStatusName(refusal.status)), afterUnload: refusal.afterUnload)
        guard seen.withLock({ $0.insert(kind).inserted }) else { return }
        records.write(.refused(function: kind.function, status: kind.status, message: refusal.message, afterUnload: kind.afterUnload))
    }
}
