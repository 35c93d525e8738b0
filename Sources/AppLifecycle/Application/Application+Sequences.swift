/// The sequences of the life cycle (Apple, `UIApplicationDelegate`): launch, activation, entering and leaving the
/// background, locking, termination, and the notifications they post, in iOS order.
extension Application {
    /// - Parameter deliver: runs after the launch methods (and a launch URL or activity), before the
    ///   application becomes active or enters the background (an opened remote notification).
    func launch(options: UserInfo, inBackground: Bool, scene: String? = nil, connection: SceneConnectionOptions = SceneConnectionOptions(),
                handoff: Handoff? = nil, deliver: (() throws(Killed) -> Void)? = nil) throws(Killed)
    {
        if isSceneBased {
            try launchScenes(options: options, inBackground: inBackground, scene: scene, connection: connection, handoff: handoff)
            return
        }
        resetRuntime()
        setState(inBackground ? .background : .inactive)
        if inBackground { backgroundSince = loop.now }
        var accepted = true
        try withBudget(.launch, configuration.budgets.launch) { () throws(Killed) in
            let willFinish = try askAll(.willFinishLaunching, { $0.willFinishLaunching }) { $0(self, options) }
            try restoreState()
            let didFinish = try didFinishLaunchingAll(options)
            try postLifecycle(.didFinishLaunching, userInfo: options)
            accepted = willFinish != false && didFinish != false
        }
        if let url = options[LaunchOptionsKey.url]?.stringValue {
            if accepted {
                try openURL(url, options[LaunchOptionsKey.sourceApplication]?.stringValue, options[LaunchOptionsKey.annotation])
            } else {
                for method in openURLForms() { trace(.delegateSkipped(method: method, reason: .launchDeclined)) }
            }
        }
        if let handoff {
            if accepted {
                try deliverHandoff(handoff)
            } else {
                for method in handoff.methods where slots.contains(where: { $0.handlers.implements(method) }) {
                    trace(.delegateSkipped(method: method, reason: .launchDeclined))
                }
            }
        }
        try deliver?()
        if inBackground {
            try didEnterBackground()
        } else {
            try becomeActive()
        }
    }

    /// The user opened the application from a remote notification's alert (decision 51): to the
    /// foreground — launched (the payload in launch option `remoteNotification`), or brought back
    /// (`willEnterForeground`) — and, in state inactive before `didBecomeActive`, each delegate gets
    /// `application:didReceiveRemoteNotification:fetchCompletionHandler:` again, or the plain
    /// `application:didReceiveRemoteNotification:` unless the application was launched for it. Already
    /// in the foreground, the method only. A scene-based application brings its scenes back as
    /// `foreground` does (or launches), then the application delegate is told.
    func openRemoteNotification(_ payload: UserInfo) throws(Killed) {
        let launched = state == .notRunning
        try openFromAlert(launchOptions: [LaunchOptionsKey.remoteNotification: .dict(payload)]) { () throws(Killed) in
            try self.deliverRemoteNotification(payload, plainToo: !launched)
        }
    }

    /// The user opens the application from a notification's alert (decisions 51 and 54): launched into
    /// the foreground with `launchOptions`, `deliver` after the launch methods; or brought back from the
    /// background, `deliver` in state inactive before `didBecomeActive`; already in the foreground,
    /// `deliver` alone. A scene-based application brings its scenes back as `foreground` does (or
    /// launches), then `deliver` runs.
    func openFromAlert(launchOptions: UserInfo, _ deliver: @escaping () throws(Killed) -> Void) throws(Killed) {
        if isSceneBased {
            if state == .notRunning {
                try launch(options: launchOptions, inBackground: false)
            } else if !state.isForeground {
                try scenesReturnToForeground()
            }
            return try deliver()
        }
        switch state {
        case .notRunning: try launch(options: launchOptions, inBackground: false, deliver: deliver)
        case .background, .suspended: try enterForeground(deliver: deliver)
        case .active, .inactive: try deliver()
        }
    }

    /// `application:didReceiveRemoteNotification:fetchCompletionHandler:` to each delegate implementing
    /// it (a request with its completion handler); the plain method to the others when `plainToo`.
    func deliverRemoteNotification(_ payload: UserInfo, plainToo: Bool) throws(Killed) {
        for slot in slots where isRegistered(slot) {
            if let handler = slot.handlers.didReceiveRemoteNotificationWithCompletion {
                try startRequest(.didReceiveRemoteNotificationWithCompletion, slot) { handler(self, payload, $0) }
            } else if plainToo, let handler = slot.handlers.didReceiveRemoteNotification {
                try call(.didReceiveRemoteNotification, slot) { handler(self, payload) }
            }
        }
    }

    /// `application:didFinishLaunchingWithOptions:` to each delegate implementing it (their answers
    /// combined), or — to a delegate implementing only the oldest form — `applicationDidFinishLaunching:`
    /// (no options, no answer), in registration order (decision 54).
    func didFinishLaunchingAll(_ options: UserInfo) throws(Killed) -> Bool? {
        var answer: Bool?
        for slot in slots where isRegistered(slot) {
            if let body = slot.handlers.didFinishLaunching {
                let yes = try call(.didFinishLaunching, slot) { body(self, options) }
                answer = (answer ?? true) && yes
            } else if let legacy = slot.handlers.applicationDidFinishLaunching {
                try call(.applicationDidFinishLaunching, slot) { legacy(self) }
            }
        }
        return answer
    }

    /// A local notification (decision 54): in the foreground `application:didReceiveLocalNotification:`
    /// at once; opened from its alert, the application comes to the foreground as for a push's alert
    /// (launched with the userInfo in launch option `localNotification`, the method after the launch
    /// methods; or brought back, the method in state inactive); in the background and not opened,
    /// nothing runs (the system shows the alert).
    func localNotification(_ info: UserInfo, opened: Bool) throws(Killed) {
        let deliver = { () throws(Killed) in
            for slot in self.slots where self.isRegistered(slot) {
                guard let handler = slot.handlers.didReceiveLocalNotification else { continue }
                try self.call(.didReceiveLocalNotification, slot) { handler(self, info) }
            }
        }
        if state.isForeground { return try deliver() }
        guard opened else { return }
        try openFromAlert(launchOptions: [LaunchOptionsKey.localNotification: .dict(info)], deliver)
    }

    func resignActive() throws(Killed) {
        if isSceneBased { return try scenesResignActive() }
        try callDelegates(.willResignActive, { $0.willResignActive != nil }, { $0.willResignActive?($1) })
        try postLifecycle(.willResignActive)
        setState(.inactive)
    }

    func becomeActive() throws(Killed) {
        if isSceneBased { return try scenesBecomeActive() }
        setState(.active)
        try callDelegates(.didBecomeActive, { $0.didBecomeActive != nil }, { $0.didBecomeActive?($1) })
        try postLifecycle(.didBecomeActive)
    }

    /// From inactive: to the background, or out altogether when the application exits on suspend.
    func leaveForeground() throws(Killed) {
        if configuration.exitsOnSuspend {
            try terminateSequence(.exitsOnSuspend)
        } else {
            try enterBackground()
        }
    }

    /// From inactive to the background: the state, the background time, then didEnterBackground.
    func enterBackground() throws(Killed) {
        if isSceneBased { return try scenesEnterBackground() }
        setState(.background)
        backgroundSince = loop.now
        try didEnterBackground()
    }

    /// didEnterBackground (budgeted), then state preservation; the state is already background.
    /// This is the only place state is preserved: at the transition to the background (as on iOS),
    /// never again before willTerminate.
    func didEnterBackground() throws(Killed) {
        if isSceneBased { return try scenesApplicationDidEnterBackground() }
        try withBudget(.didEnterBackground, configuration.budgets.didEnterBackground) { () throws(Killed) in
            try callDelegates(.didEnterBackground, { $0.didEnterBackground != nil }, { $0.didEnterBackground?($1) })
            try postLifecycle(.didEnterBackground)
        }
        try preserveState()
        scheduleBackgroundTimers()
    }

    /// From background or suspended to active; `deliver` (open a URL, continue an activity) runs in
    /// state inactive, before didBecomeActive.
    func enterForeground(deliver: (() throws(Killed) -> Void)? = nil) throws(Killed) {
        if isSceneBased { return try scenesReturnToForeground() }
        try resumeIfSuspended()
        cancelBackgroundTimers()
        backgroundSince = nil
        tasks.updateAll { $0.expirationCalled = false }
        try postLifecycle(.willEnterForeground)  // posted before the delegate method (Apple, `UIApplicationDelegate`)
        try callDelegates(.willEnterForeground, { $0.willEnterForeground != nil }, { $0.willEnterForeground?($1) })
        setState(.inactive)
        try deliver?()
        try becomeActive()
    }

    /// Each delegate gets `application:openURL:options:` if it implements it (Apple, "Managing your app's life cycle"), otherwise the
    /// older `application:openURL:sourceApplication:annotation:`.
    @discardableResult
    func openURL(_ url: String, _ source: String?, _ annotation: UserInfoValue?) throws(Killed) -> Bool {
        var handled = false
        var options: UserInfo?
        for slot in slots {
            if let handler = slot.handlers.openURLWithOptions {
                guard isRegistered(slot) else { continue }
                let given = options ?? openURLOptions(source, annotation)
                options = given
                handled = try call(.openURLWithOptions, slot) { handler(self, url, given) } || handled
            } else if let handler = slot.handlers.openURL {
                guard isRegistered(slot) else { continue }
                handled = try call(.openURL, slot) { handler(self, url, source, annotation) } || handled
            } else if let handler = slot.handlers.handleOpenURL {
                // The oldest form (decision 54): the URL alone, to a delegate with neither newer one.
                guard isRegistered(slot) else { continue }
                handled = try call(.handleOpenURL, slot) { handler(self, url) } || handled
            }
        }
        return handled
    }

    /// The options of `application:openURL:options:` and of a scene's `OpenURLContext`.
    func openURLOptions(_ source: String?, _ annotation: UserInfoValue?) -> UserInfo {
        var options = UserInfo()
        if let source { options[OpenURLOptionsKey.sourceApplication] = .string(source) }
        if let annotation { options[OpenURLOptionsKey.annotation] = annotation }
        return options
    }

    /// The forms of openURL the delegates would have been called with, newer first: what a declined
    /// launch skips. The older form alone when no delegate implements the newer one.
    private func openURLForms() -> [DelegateMethod] {
        let newer = slots.contains { $0.handlers.openURLWithOptions != nil }
        let older = slots.contains { $0.handlers.openURLWithOptions == nil && $0.handlers.openURL != nil }
        let oldest = slots.contains { $0.handlers.openURLWithOptions == nil && $0.handlers.openURL == nil && $0.handlers.handleOpenURL != nil }
        var forms: [DelegateMethod] = newer ? (older ? [.openURLWithOptions, .openURL] : [.openURLWithOptions]) : [.openURL]
        if oldest { forms.append(.handleOpenURL) }
        return forms
    }

    func lock() throws(Killed) {
        isDeviceLocked = true
        lockedFromForeground = state.isForeground
        switch state {
        case .active, .inactive:
            if state == .active { try resignActive() }
            interrupted = false
            if configuration.exitsOnSuspend {
                try terminateSequence(.exitsOnSuspend)
                return
            }
            try enterBackground()
            try deliverProtectedDataWillBecomeUnavailable(queuedCount: nil)
        case .background:
            try deliverProtectedDataWillBecomeUnavailable(queuedCount: nil)
        case .suspended:
            enqueueProtectedDataChange(.protectedDataWillBecomeUnavailable)
        case .notRunning:
            isProtectedDataAvailable = false  // the device's state; no code runs to be told
        }
    }

    func unlock() throws(Killed) {
        isDeviceLocked = false
        let returnToForeground = lockedFromForeground
        lockedFromForeground = false
        if state == .notRunning {
            isProtectedDataAvailable = true
        } else if state == .suspended {
            // Delivered first on resume, before willEnterForeground.
            enqueueProtectedDataChange(.protectedDataDidBecomeAvailable)
        } else {
            try deliverProtectedDataDidBecomeAvailable(queuedCount: nil)
        }
        if returnToForeground, state == .background || state == .suspended { try enterForeground() }
    }

    /// willTerminate (budgeted), then not running. No state preservation here: it ran when the
    /// application entered the background, and an application that exits on suspend never does.
    func terminateSequence(_ reason: TraceEvent.StateChangeReason = .terminated) throws(Killed) {
        try withBudget(.willTerminate, configuration.budgets.willTerminate) { () throws(Killed) in
            try callDelegates(.willTerminate, { $0.willTerminate != nil }, { $0.willTerminate?($1) })
            try postLifecycle(.willTerminate)
        }
        goNotRunning(reason)
    }

    func deliverTimeChange(queuedCount: Int?) throws(Killed) {
        try postLifecycle(.significantTimeChange, queuedCount: queuedCount)  // posted before the delegate method (Apple, `UIApplicationDelegate`)
        try callDelegates(.significantTimeChange, { $0.significantTimeChange != nil }, { $0.significantTimeChange?($1) })
    }

    func deliverProtectedDataWillBecomeUnavailable(queuedCount: Int?) throws(Killed) {
        try callDelegates(.protectedDataWillBecomeUnavailable, { $0.protectedDataWillBecomeUnavailable != nil }, { $0.protectedDataWillBecomeUnavailable?($1) })
        try postLifecycle(.protectedDataWillBecomeUnavailable, queuedCount: queuedCount)
        isProtectedDataAvailable = false
    }

    func deliverProtectedDataDidBecomeAvailable(queuedCount: Int?) throws(Killed) {
        isProtectedDataAvailable = true
        // The scenes' restoration archives their connection deferred are read now (decision 48).
        for scene in connectedScenes where scene.restoration.deferred { readDeferredRestoration(scene) }
        try callDelegates(.protectedDataDidBecomeAvailable, { $0.protectedDataDidBecomeAvailable != nil }, { $0.protectedDataDidBecomeAvailable?($1) })
        try postLifecycle(.protectedDataDidBecomeAvailable, queuedCount: queuedCount)
    }
}
