import Synchronization

/// Suspension: notifications held while the application runs no code (coalesced by kind while
/// suspended, delivered on resume), suspending when idle, and every state change.
extension Application {
    /// Posts that arrive while the application runs no code.
    func held(_ name: NotificationName, sender: UInt, userInfo: UserInfo?) {
        if state == .suspended, name.coalescingKind != nil {
            enqueue(name, sender: sender, userInfo: userInfo)
        } else {
            trace(.notificationDiscarded(name: name, reason: state == .suspended ? .suspendedNotCoalescing : .notRunning))
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
        trace(.notificationQueued(name: name, coalescingKind: kind))
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
            let count = entry.count
            switch entry.name {
            case .significantTimeChange: try deliverTimeChange(queuedCount: count)
            case .protectedDataWillBecomeUnavailable: try deliverProtectedDataWillBecomeUnavailable(queuedCount: count)
            case .protectedDataDidBecomeAvailable: try deliverProtectedDataDidBecomeAvailable(queuedCount: count)
            default: try postLifecycle(entry.name, userInfo: entry.userInfo, sender: entry.sender, queuedCount: count)
            }
        }
    }

    /// A suspended application woken to handle an event (fetch, remote notification): it resumes into
    /// the background (queued notifications first), then gets didEnterBackground before the event, as
    /// after a background launch (Apple, "About the background execution sequence"). A running
    /// application is left as it is.
    func wakeIntoBackground() throws(Killed) {
        guard state == .suspended else { return }
        try resumeIfSuspended()
        try didEnterBackground()
    }

    func suspendIfIdle() {
        guard state == .background, currentAction == nil, tasks.isEmpty, requests.isEmpty,
              configuration.backgroundModes.isDisjoint(with: .continuous) else { return }
        cancelBackgroundTimers()
        setState(.suspended)
    }

    func goNotRunning(_ reason: TraceEvent.StateChangeReason) {
        resetRuntime()
        killSwitch.killed.store(false, ordering: .relaxed)
        setState(.notRunning, reason: reason)
    }

    func resetRuntime() {
        cancelBackgroundTimers()
        for request in requests { request.end() }
        requests.removeAll()
        tasks.removeAll()
        queued.removeAll()
        interrupted = false
        // The device lock belongs to the device, not to this run: it outlives a termination, a purge
        // or a watchdog kill, and a launch while locked starts with protected data unavailable.
        lockedFromForeground = false
        isProtectedDataAvailable = !isDeviceLocked
        backgroundSince = nil
        generation &+= 1
    }

    func setState(_ newState: ApplicationState, reason: TraceEvent.StateChangeReason? = nil) {
        let oldState = state
        state = newState
        center.heldDeliveryHandler = newState.isRunning ? nil : heldHandler
        trace(.stateChanged(from: oldState, to: newState, reason: reason))
    }
}
