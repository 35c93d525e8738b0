import AppLifecycle

// An isolated plugin's quotas on the host's side (`PluginQuotas`): its process refuses a call past a
// quota itself and tells the host (`quotaRefused`); the host counts what the process registered in
// its own tables and holds every registration frame to the quota as well, so that a process that
// writes frames around its runner cannot make the host keep more.

extension IsolatedPlugin {
    /// Throws when a registration frame would take `kind` past its quota (the process has `used`):
    /// its runner refuses those calls, so such a frame was written around it — cut off. [loop-thread]
    func checkQuota(_ kind: QuotaKind, used: Int) throws(ProtocolViolation) {
        let limit = plugin.quota.limits[kind]
        guard used >= limit else { return }
        throw ProtocolViolation("a registration past its quota of \(limit) \(kind.noun), which its process refuses")
    }

    /// A call of the plugin was refused at the quota of `kind` (in its process, or here: a background
    /// task): traced, and counted towards the cut-off — the refusal that makes
    /// `PluginQuotas.cutOffRefusals` within `PluginQuotas.cutOffWindow` cuts the plugin off (SIGKILL,
    /// `PluginFailure.Cause.quotaExceeded`), naming the callback that made the last refused call
    /// (`during`: its frame's number; 0 or a frame no longer in the log: what the page says now).
    /// [loop-thread]
    func quotaRefused(_ kind: QuotaKind, during: UInt64 = 0) {
        guard let handle, status == .running || status == .loading else { return }
        plugin.quota.refused(kind, handle: handle)
        if let cut = plugin.quota.cutOff() {
            plugin.quota.flushAll(handle)  // every refusal in the trace before the failure
            fail(.quotaExceeded(kind, limit: plugin.quota.limits[kind], refusals: cut.refusals, window: cut.window),
                 during: events.what(of: during)?.description)
        }
    }
}
