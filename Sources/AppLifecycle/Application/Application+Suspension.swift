import Synchronization

/// Suspension: notifications held while the application runs no code (coalesced by kind while
/// suspended, delivered on resume), suspending when idle, and every state change.
extension Application {
    /// Posts that arrive while the application runs no code. A post is for observers only: queued
    /// as a post, it is delivered on resume as a notification, never as a system event.
    func held(_ name: NotificationName, sender: UInt, userInfo: UserInfo?) {
        if state == .suspended, name.coalescingKind != nil {
            enqueue(name, sender: sender, userInfo: userInfo, systemEvent: false)
        } else {
            trace(.notificationDiscarded(name: name, reason: state == .suspended ? .suspendedNotCoalescing : .notRunning))
        }
    }

    /// Queues a notification of a coalescing kind while suspended. The system's own events (a time
    /// change, a protected-data change: delegates and state on resume) and posts (observers only)
    /// coalesce separately, so a post never stands for a system event nor the reverse.
    func enqueue(_ name: NotificationName, sender: UInt, userInfo: UserInfo?, systemEvent: Bool) {
        guard let kind = name.coalescingKind else { return }
        if let index = queued.firstIndex(where: { $0.kind == kind && $0.systemEvent == systemEvent }) {
            queued[index].name = name
            queued[index].sender = sender
            queued[index].userInfo = userInfo
            queued[index].count += 1
        } else {
            queued.append(QueuedNotification(kind: kind, name: name, sender: sender, userInfo: userInfo, count: 1,
                                             systemEvent: systemEvent))
        }
        trace(.notificationQueued(name: name, coalescingKind: kind))
    }

    /// The device's protected-data change while suspended. One that undoes the change still queued
    /// (a lock then an unlock, or the reverse) nets out: both are dropped and nothing is delivered on
    /// resume (iOS: coalesced events "net out").
    func enqueueProtectedDataChange(_ name: NotificationName) {
        if let index = queued.firstIndex(where: { $0.systemEvent && $0.kind == name.coalescingKind }), queued[index].name != name {
            let undone = queued.remove(at: index).name
            trace(.notificationDiscarded(name: name, reason: .nettedOut(undone)))
        } else {
            enqueue(name, sender: sender.rawValue, userInfo: nil, systemEvent: true)
        }
    }

    /// The notifications waiting for the application to resume: one per kind, the most recent, with
    /// how many it stands for. [loop-thread]
    public var queuedNotifications: [(name: NotificationName, count: Int)] {
        loop.preconditionOnLoopThread("Application.queuedNotifications")
        return queued.map { ($0.name, $0.count) }
    }

    func resumeIfSuspended() throws(Killed) {
        guard state == .suspended else { return }
        setState(.background)
        backgroundSince = loop.now
        let pending = queued
        queued.removeAll()
        for entry in pending {
            let count = entry.count
            switch (entry.systemEvent, entry.name) {
            case (true, .significantTimeChange): try deliverTimeChange(queuedCount: count)
            case (true, .protectedDataWillBecomeUnavailable): try deliverProtectedDataWillBecomeUnavailable(queuedCount: count)
            case (true, .protectedDataDidBecomeAvailable): try deliverProtectedDataDidBecomeAvailable(queuedCount: count)
            default:
                // A post: to observers only, with no delegate call and no change of state.
                try postLifecycle(entry.name, userInfo: entry.userInfo, sender: entry.sender, queuedCount: count)
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
        guard state.isRunning, currentAction == nil, tasks.isEmpty, requests.isEmpty,
              configuration.backgroundModes.isDisjoint(with: .continuous) else { return }
        // A scene in the background is suspended by the same rule as the application (whatever the
        // other scenes do); the application when every scene is (or none is connected).
        if connectedSceneCounts[.background] > 0 {
            for scene in connectedScenes where scene.state == .background { setSceneState(scene, .suspended) }
        }
        guard state == .background else { return }
        cancelBackgroundTimers()
        setState(.suspended)
    }

    func goNotRunning(_ reason: TraceEvent.StateChangeReason) {
        // The process is gone: its scenes are unattached with no callback (their sessions stay).
        for scene in connectedScenes { setSceneState(scene, .unattached, reason: reason) }
        disconnectAllScenes()
        resetRuntime()
        killSwitch.killed.store(false, ordering: .relaxed)
        setState(.notRunning, reason: reason)
    }

    func resetRuntime() {
        cancelBackgroundTimers()
        for request in requests { request.end() }
        requests.removeAll()
        forgetTasks()
        queued.removeAll()
        interrupted = false
        unrelievedMemoryWarnings = 0
        returningScenes.removeAll()
        interruptedScenes.removeAll()
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
        if oldState != newState, let stateChangeHandler { stateChangeHandler(oldState, newState) }
    }

    func setSceneState(_ scene: Scene, _ newState: SceneState, reason: TraceEvent.StateChangeReason? = nil) {
        let oldState = scene.state
        scene.state = newState
        if isConnected(scene) {
            connectedSceneCounts[oldState] -= 1
            connectedSceneCounts[newState] += 1
        }
        trace(.sceneStateChanged(scene: scene.id, from: oldState, to: newState, reason: reason))
    }
}

extension Application {
    /// A change of the device's power or thermal state, already recorded: posted to the observers of
    /// a running application (Apple has no delegate method for it); queued, coalesced to the most
    /// recent of its kind, while suspended (delivered on resume); nothing while not running (the new
    /// value is read at the next launch). [loop-thread]
    func deliverDeviceChange(_ name: NotificationName) throws(Killed) {
        switch state {
        case .notRunning: return
        case .suspended: enqueue(name, sender: sender.rawValue, userInfo: nil, systemEvent: true)
        default: try postLifecycle(name)
        }
    }
}
