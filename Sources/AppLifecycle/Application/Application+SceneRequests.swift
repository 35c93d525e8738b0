/// The application's own scene requests (`UIApplication.requestSceneSessionActivation`,
/// `requestSceneSessionDestruction`, `requestSceneSessionRefresh`): checked when asked, performed by
/// the system later — on a later turn of the loop, after the action or callback that asked, one
/// after the other in the order asked (docs/lifecycle.md, decision 53).
/// What a scene request of the application asks (`Application.requestSceneSession…`).
public enum SceneRequestKind: String, Sendable, Hashable, CustomStringConvertible {
    /// Bring a session's scene to the foreground and make it active (connecting it if needed), or
    /// create a new session and connect its scene.
    case activation
    /// Dismiss a session's scene and remove the session (as the user closing it in the app switcher).
    case destruction
    /// Update the system's picture of the scene (its snapshot): no life-cycle step.
    case refresh
    public var description: String { rawValue }
}

extension Application {
    /// Asks the system to activate session `sessionID`'s scene — connected if it is not, brought to
    /// the foreground from the background, made active — or, with nil, to create a new session
    /// (`scene-1`, `scene-2`, …: the system names it) and connect its scene to the foreground.
    /// `userActivity` travels as `continue-activity` does: in the connection options of a scene that
    /// connects, else to the scene delegates' continue methods.
    ///
    /// [loop-thread] Checked now — a scene-based application, running, not suspended, the device
    /// unlocked; the session exists; a new one only with `supportsMultipleScenes` or no scene
    /// connected — and performed on a later turn of the loop, traced as a `scene-request` event then
    /// the actions it takes. `requester` names who asked in the trace (a plugin's id).
    /// - Returns: the session's id (the new one's, for nil).
    @discardableResult
    public func requestSceneSessionActivation(_ sessionID: String?, userActivity: UserActivity? = nil,
                                              requester: String = "") throws(ApplicationError) -> String
    {
        try requestSceneSessionActivation(sessionID, userActivity: userActivity, requester: requester, caller: "requestSceneSessionActivation")
    }

    /// `requestSceneSessionActivation` whose refusals name `caller` (the C face's function).
    @discardableResult
    package func requestSceneSessionActivation(_ sessionID: String?, userActivity: UserActivity?, requester: String,
                                               caller name: String) throws(ApplicationError) -> String
    {
        try checkSceneRequest(name)
        if isDeviceLocked { throw refusedRequest(name, "the device is locked; unlock it first") }
        let id: String
        if let sessionID {
            try requireSession(sessionID, name)
            id = sessionID
        } else {
            if configuration.sceneManifest?.supportsMultipleScenes == false, let other = connectedScenes.first {
                throw refusedRequest(name, "the application does not support multiple scenes and scene '\(other.id)' is connected")
            }
            id = newSessionID()
            reservedSessionIDs.insert(id)
        }
        schedule(.activation, id, requester) { [self] () throws(ApplicationError) in
            if let userActivity {
                try perform(.continueUserActivity(userActivity, scene: id))
                return
            }
            guard let scene = scene(id: id) else { return try perform(.connectScene(id)) }
            switch scene.state {
            case .background, .suspended: try perform(.bringSceneToForeground(id))
            case .foregroundInactive: try perform(.activateScene(id))
            case .foregroundActive, .unattached: break
            }
        }
        return id
    }

    /// Asks the system to dismiss session `sessionID`'s scene and discard the session: a foreground
    /// scene goes to the background first, then the session is discarded (`scene discard`:
    /// disconnected, `application:didDiscardSceneSessions:`). [loop-thread] Checked now, performed later.
    public func requestSceneSessionDestruction(_ sessionID: String, requester: String = "") throws(ApplicationError) {
        try requestSceneSessionDestruction(sessionID, requester: requester, caller: "requestSceneSessionDestruction")
    }

    package func requestSceneSessionDestruction(_ sessionID: String, requester: String, caller name: String) throws(ApplicationError) {
        try checkSceneRequest(name)
        try requireSession(sessionID, name)
        schedule(.destruction, sessionID, requester) { [self] () throws(ApplicationError) in
            if let scene = scene(id: sessionID), scene.state.isForeground { try perform(.moveSceneToBackground(sessionID)) }
            try perform(.discardSceneSession(sessionID))
        }
    }

    /// Asks the system to refresh its picture of session `sessionID`'s scene: traced, nothing else
    /// happens (the engine draws no snapshot). [loop-thread] Checked now, performed later.
    public func requestSceneSessionRefresh(_ sessionID: String, requester: String = "") throws(ApplicationError) {
        try requestSceneSessionRefresh(sessionID, requester: requester, caller: "requestSceneSessionRefresh")
    }

    package func requestSceneSessionRefresh(_ sessionID: String, requester: String, caller name: String) throws(ApplicationError) {
        try checkSceneRequest(name)
        try requireSession(sessionID, name)
        schedule(.refresh, sessionID, requester) { () throws(ApplicationError) in }
    }

    // MARK: Checks and scheduling

    private func checkSceneRequest(_ name: String) throws(ApplicationError) {
        try requireLoopThread(name)
        guard isSceneBased else { throw refusedRequest(name, "the application is not scene-based (no scene manifest; the host's --scenes)") }
        guard state.isRunning else { throw refusedRequest(name, "the application is \(state)") }
    }

    private func requireSession(_ id: String, _ name: String) throws(ApplicationError) {
        guard sessions.contains(key: id) else {
            let known = sessions.isEmpty ? "none exists" : "sessions: " + sessions.map(\.persistentIdentifier).joined(separator: ", ")
            throw ApplicationError(.unknownScene, "\(name): no scene session '\(id)' exists (\(known))", state: state)
        }
    }

    private func refusedRequest(_ name: String, _ why: String) -> ApplicationError {
        ApplicationError(.illegalAction, "\(name) is not allowed: \(why)", state: state)
    }

    /// The next free `scene-N` (a session or a pending request may hold one).
    private func newSessionID() -> String {
        while true {
            nextRequestedSession += 1
            let id = "scene-\(nextRequestedSession)"
            if !reservedSessionIDs.contains(id), !sessions.contains(key: id) { return id }
        }
    }

    /// Runs `body` on a later turn of the loop, traced first; a refusal then (the application moved
    /// on: stopped, locked, the session discarded) is traced as an error and performs nothing.
    private func schedule(_ kind: SceneRequestKind, _ session: String, _ requester: String,
                          _ body: @escaping () throws(ApplicationError) -> Void)
    {
        let run = generation
        let request = LoopBound(body, loop: loop, name: "scene request")
        loop.perform { [weak self] in
            guard let self else { return }
            reservedSessionIDs.remove(session)  // a new session's id: made below, or never
            guard run == generation else {
                return trace(.inScene(session, .sceneRequest(kind, session: session, requester: requester,
                                                             refusal: "the application stopped running since it asked")))
            }
            trace(.inScene(session, .sceneRequest(kind, session: session, requester: requester, refusal: nil)))
            do throws(ApplicationError) {
                try request.value()
            } catch {
                trace(.inScene(session, .sceneRequest(kind, session: session, requester: requester, refusal: error.message)))
            }
        }
    }
}
