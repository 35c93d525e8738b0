/// A scene's session (`UISceneSession`): what outlives the scene's connection. The system keeps it
/// from the first connection of a scene id until the session is discarded, across disconnections and
/// across runs of the application.
public struct SceneSession: Sendable, Hashable, CustomStringConvertible {
    /// The scene id the session belongs to.
    public let persistentIdentifier: String
    /// The session's role; always `application` (a window scene of the application).
    public let role: String
    /// The name of the configuration `application:configurationForConnectingSceneSession:options:`
    /// chose, once a scene connected to it.
    public internal(set) var configurationName: String?
    /// In `scene:willConnectToSession:options:`, the activity this scene delegate returned from
    /// `stateRestorationActivityForScene:` when the scene last moved to the background (read back from
    /// its archive); nil elsewhere, when nothing was saved, and while protected data is unavailable
    /// (the device locked: `scene:restoreInteractionStateWithUserActivity:` then brings it, decision 48).
    public internal(set) var stateRestorationActivity: UserActivity?
    /// `UISceneSession.userInfo`: the application's own data about the session, kept with it — across
    /// disconnections and launches — until it is discarded. Set it with
    /// `Application.setUserInfo(_:forSession:)`.
    public internal(set) var userInfo = UserInfo()

    init(persistentIdentifier: String, configurationName: String? = nil) {
        self.persistentIdentifier = persistentIdentifier
        role = "application"
        self.configurationName = configurationName
    }

    /// A copy of a session of another process's application (an isolated plugin's process is handed
    /// the sessions its host's application has).
    package static func mirror(_ persistentIdentifier: String, configurationName: String?,
                               stateRestorationActivity: UserActivity? = nil) -> SceneSession
    {
        var session = SceneSession(persistentIdentifier: persistentIdentifier, configurationName: configurationName)
        session.stateRestorationActivity = stateRestorationActivity
        return session
    }

    public var description: String { "session \(persistentIdentifier)" }
}

/// What a scene is connected for (`UIScene.ConnectionOptions`): the URLs to open and the activities
/// to continue that caused the connection. Empty for a plain connection.
public struct SceneConnectionOptions: Sendable, Hashable {
    /// URLs to open (`open-url` that connected the scene).
    public var urlContexts: [OpenURLContext] = []
    /// Activities to continue (`continue-activity` that connected the scene).
    public var userActivities: [UserActivity] = []

    public init(urlContexts: [OpenURLContext] = [], userActivities: [UserActivity] = []) {
        self.urlContexts = urlContexts
        self.userActivities = userActivities
    }

    /// Whether the options hold nothing.
    public var isEmpty: Bool { urlContexts.isEmpty && userActivities.isEmpty }
}

/// One URL to open in a scene (`UIOpenURLContext`): the URL and its options (`OpenURLOptionsKey`).
public struct OpenURLContext: Sendable, Hashable, CustomStringConvertible {
    public let url: String
    /// `sourceApplication` and `annotation`, when the request has them.
    public let options: UserInfo

    public init(url: String, options: UserInfo = UserInfo()) {
        self.url = url
        self.options = options
    }

    public var description: String { url }
}

/// The configuration `application:configurationForConnectingSceneSession:options:` returns for a
/// connecting scene (`UISceneConfiguration`): its name.
public struct SceneConfiguration: Sendable, Hashable {
    public var name: String
    public init(name: String) { self.name = name }
    /// UIKit's template name, used when no delegate answers.
    public static let `default` = SceneConfiguration(name: "Default Configuration")
}

/// The scene manifest of a scene-based application (`UIApplicationSceneManifest`): set
/// `Configuration.sceneManifest` to make the application scene-based.
public struct SceneManifest: Sendable, Hashable {
    /// `UIApplicationSupportsMultipleScenes`: whether more than one scene may be connected at a time.
    public var supportsMultipleScenes = true
    /// The id of the scene a launch connects when the launch names none.
    public var defaultSceneID = "main"

    public init(supportsMultipleScenes: Bool = true) {
        self.supportsMultipleScenes = supportsMultipleScenes
    }
}
