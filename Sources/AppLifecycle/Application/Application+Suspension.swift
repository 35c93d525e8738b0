import Synchronization

/// Suspension: notifications held while the application runs no code (coalesced by kind while
/// suspended, delivered on resume), suspending when idle, and every state change.
extension Application {
    /// Posts that arrive while the application runs no code.
    func held(_ name: NotificationName, sender: UInt, userInfo: UserInfo?) {
        if state == .suspended, name.coalescingKind != nil {
            enqueue(name, sender: sender, userInfo: userInfo)
        } else {
            trace(.discarded, name.rawValue, detail: state == .suspended
                ? "suspended: only notifications of the coalescing kinds are queued"
                : "the application is not running")
        }
    }

    func enqueue(_ name: NotificationName, sender: UInt, userInfo: UserInfo?) {
        guard let kind = name.coalescingKind else { return }
        if let index = queued.firstIndex(where: { $0.kind == kind }) {
            queued[index].name = name
            queued[index].sender = sender
            queued[index].userInfo = userInfo
            queued[index].count += 1
        } else {
            queued.append(QueuedNotification(kind: kind, name: name, sender: sender, userInfo: userInfo, count: 1))
        }
        trace(.queued, name.rawValue, detail: "coalescing kind \(kind)")
    }

    /// The notifications waiting for the application to resume: one per kind, the most recent, with
    /// how many it stands for. [loop-thread]
    public var queuedNotifications: [(name: NotificationName, count: Int)] { queued.map { ($0.name, $0.count) } }

    func resumeIfSuspended() throws(Killed) {
        guard state == .suspended else { return }
        setState(.background)
        backgroundSince = .now
        let pending = queued
        queued.removeAll()
        for entry in pending {
            let detail = entry.count > 1 ? "coalesced from \(entry.count)" : nil
            switch entry.name {
            case .significantTimeChange: try deliverTimeChange(detail: detail)
            case .protectedDataWillBecomeUnavailable: try deliverProtectedDataWillBecomeUnavailable(detail: detail)
            case .protectedDataDidBecomeAvailable: try deliverProtectedDataDidBecomeAvailable(detail: detail)
            default: try postLifecycle(entry.name, userInfo: entry.userInfo, sender: entry.sender, detail: detail)
            }
        }
    }

    func suspendIfIdle() {
        guard state == .background, currentAction == nil, tasks.isEmpty, requests.isEmpty,
              configuration.backgroundModes.isDisjoint(with: .continuous) else { return }
        cancelBackgroundTimers()
        setState(.suspended)
    }

    func goNotRunning(_ detail: String?) {
        resetRuntime()
        killSwitch.killed.store(false, ordering: .relaxed)
        setState(.notRunning, detail: detail)
    }

    func resetRuntime() {
        cancelBackgroundTimers()
        for request in requests { request.end() }
        requests.removeAll()
        tasks.removeAll()
        queued.removeAll()
        interrupted = false
        isDeviceLocked = false
        lockedFromForeground = false
        isProtectedDataAvailable = true
        backgroundSince = nil
        generation &+= 1
    }

    func setState(_ newState: ApplicationState, detail: String? = nil) {
        state = newState
        center.heldDeliveryHandler = newState.isRunning ? nil : heldHandler
        trace(.state, newState.rawValue, detail: detail)
    }
}
