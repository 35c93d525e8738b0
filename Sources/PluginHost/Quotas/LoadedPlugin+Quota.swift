import AppLifecycle
import CLifecycleABI
import LifecycleC

/// The quota checks of the host-API calls (`PluginQuotas`): what the host table and the isolated
/// plugin's process table call before they register anything.
extension LoadedPlugin {
    /// Nil when the plugin, which has `used` of `kind`, may have one more; else the call is refused:
    /// `LC_ERR_QUOTA`, its message set, the refusal reported (`refuseAtQuota`). O(1). [thread-safe]
    func quotaRefusal(_ kind: QuotaKind, used: Int, _ function: String) -> lc_status? {
        used < quota.limits[kind] ? nil : refuseAtQuota(kind, function)
    }

    /// Refuses a call of `function` at the quota of `kind`: returns `LC_ERR_QUOTA` with the message
    /// set (`QuotaLedger.message`), and reports it — traced by the host; in an isolated plugin's
    /// process, told to the host in a frame (which traces it, and counts it towards the cut-off).
    /// [thread-safe]
    func refuseAtQuota(_ kind: QuotaKind, _ function: String) -> lc_status {
        let status = lcFail(LC_ERR_QUOTA, QuotaLedger.message(function, plugin: id, kind, limit: quota.limits[kind]))
        if let runner = PluginRunner.current {
            runner.reportQuotaRefusal(kind)
        } else if let owner {
            quota.refused(kind, handle: owner)
        }
        return status
    }

    /// What `internName` found.
    enum NameLookup {
        case name(NotificationName)
        /// The call's status (its message set): the name was NULL or invalid, or the quota refused it.
        case failed(lc_status)
    }

    /// The notification name `cString` spells, for `function`: a name already interned as it is; a
    /// new one (a custom name this plugin is the first to use) interned and charged to its quota of
    /// custom names, or refused past it (`LC_ERR_QUOTA`). An invalid name costs nothing. [thread-safe]
    func internName(_ cString: UnsafePointer<CChar>?, _ function: String) -> NameLookup {
        guard let cString else { return .failed(lcFail(LC_ERR_INVALID_ARGUMENT, "\(function): name is NULL")) }
        if let known = NotificationName(existingCString: cString) { return .name(known) }
        guard quota.chargeCustomName() else { return .failed(refuseAtQuota(.customNames, function)) }
        do throws(ApplicationError) {
            return .name(try NotificationName(cString: cString))
        } catch {
            quota.refundCustomName()
            return .failed(lcFail(error))
        }
    }
}
