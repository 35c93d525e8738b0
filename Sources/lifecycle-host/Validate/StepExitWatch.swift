@preconcurrency import Glibc
import Synchronization

/// In a validation step's process: an `exit()` that is not the step's own — the plugin's, from any
/// thread — is recorded (`StepRecord.exit`, with the status asked for) and the process ends with
/// `HostExit.pluginExit`, as the host would (`EmergencyExit`, whose trace and socket a step has none of).
enum StepExitWatch {
    private static let state = Mutex<(records: StepRecordWriter?, armed: Bool)>((nil, false))

    /// From now on an `exit()` is the plugin's. [thread-safe]
    static func arm(_ records: StepRecordWriter) {
        state.withLock { $0 = (records, true) }
        _ = on_exit({ status, _ in StepExitWatch.exiting(status) }, nil)
    }

    /// The step's own exit follows. [thread-safe]
    static func disarm() { state.withLock { $0.armed = false } }

    private static func exiting(_ status: Int32) {
        guard let records = state.withLock({ $0.armed ? $0.records : nil }) else { return }
        records.write(.exit(status))
        _exit(HostExit.pluginExit)
    }
}
