import AppLifecycle
import CLifecycleABI

// What the host does with a frame its plugin's process would refuse (`FrameWriter.end` took it back):
// it is not sent. The limits are checked where dictionaries are built and posted, so only the host's
// own compositions can get here (connection options gathering many large URL contexts, a string over
// 64 KiB in an action, a scene's configuration name): the callback is skipped for this plugin alone —
// a call that waits answers what an unimplemented method answers, an archive being encoded is kept
// (`EncodingFailure.notDelivered`) — and the plugin's log says so. Nothing is counted against it.

extension IsolatedPlugin {
    /// Logs that `what` was not sent, and why. - Returns: nil (nothing was sent).
    func notSent(_ what: EventLog.What, why rule: String) -> (number: UInt64, entry: EventLog.Entry)? {
        plugin.log(lc_log_level(LC_LOG_ERROR), "isolated: \(what.description) was not sent to the plugin's process: \(rule)")
        return nil
    }
}
