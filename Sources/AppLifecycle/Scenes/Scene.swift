/// A handle to one connected scene (`UIScene`): its id, state and session.
///
/// The engine makes one when it connects a scene and keeps it until the scene is disconnected; a
/// reconnection of the same id makes a new handle over the same session. The handle is the sender of
/// the scene's notifications (`NotificationSender(scene)`), so observers can filter by scene.
///
/// [loop-thread: checked] Read it on the application's loop thread, as the `Application` itself: its
/// `state` and `session` are `LoopBound`, a use from another thread stops the program naming them.
public final class Scene: @unchecked Sendable, CustomStringConvertible {
    // @unchecked: `state`, `session` and `restoration` are LoopBound (every access checks the thread); the rest are lets
    // and a weak reference.
    /// The scene's id (its session's `persistentIdentifier`): `main` for the scene a launch connects
    /// unless told otherwise.
    public let id: String
    /// The current state; `unattached` once disconnected.
    public internal(set) var state: SceneState {
        get { boundState.value }
        _modify { yield &boundState.value }
    }
    /// The session the scene is connected to.
    public internal(set) var session: SceneSession {
        get { boundSession.value }
        _modify { yield &boundSession.value }
    }
    private var boundState: LoopBound<SceneState>
    private var boundSession: LoopBound<SceneSession>
    private var boundRestoration: LoopBound<Restoration>

    /// The restoration activities of this connection, until `scene:restoreInteractionStateWithUserActivity:`
    /// hands them over (decision 48).
    struct Restoration {
        /// The archives were not read at the connection: protected data was unavailable (the device
        /// was locked). They are read when it becomes available.
        var deferred = false
        /// The restored activity of each scene delegate (by id) that implements
        /// `scene:restoreInteractionStateWithUserActivity:`, not yet handed over.
        var activities: [String: UserActivity] = [:]
        /// Whether the scene has yet to reach the foreground for the first time in this connection.
        var beforeFirstForeground = true
    }

    var restoration: Restoration {
        get { boundRestoration.value }
        _modify { yield &boundRestoration.value }
    }
    /// Whether the user asked for the scene (it goes to the foreground) or the system did (it goes to
    /// the background, to handle an event).
    public let requestedByUser: Bool
    /// The application the scene belongs to (nil once the application is gone).
    public private(set) weak var application: Application?

    init(id: String, session: SceneSession, requestedByUser: Bool, application: Application) {
        self.id = id
        boundState = LoopBound(.unattached, loop: application.loop, name: "Scene.state")
        boundSession = LoopBound(session, loop: application.loop, name: "Scene.session")
        boundRestoration = LoopBound(Restoration(), loop: application.loop, name: "Scene.restoration")
        self.requestedByUser = requestedByUser
        self.application = application
    }

    /// The scene's identity as the sender of its notifications.
    public var sender: NotificationSender { NotificationSender(self) }

    public var description: String { "scene \(id) (\(state))" }

    /// A scene standing for a scene of an application in another process (what an isolated plugin's
    /// process hands its plugin): never connected to `application`, kept current with `mirror(state:)`.
    /// [loop-thread]
    package static func mirror(id: String, sessionID: String, configurationName: String, application: Application) -> Scene {
        Scene(id: id, session: .mirror(sessionID, configurationName: configurationName),
              requestedByUser: false, application: application)
    }

    /// Sets a mirrored scene's state (see `mirror(id:sessionID:configurationName:application:)`). [loop-thread]
    package func mirror(state: SceneState) { self.state = state }
}
