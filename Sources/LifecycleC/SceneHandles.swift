import AppLifecycle
import CLifecycleABI
import Glibc
import Synchronization

/// What an `lc_scene *` stands for (ABI 1.2): a scene of a live application, with the C strings its
/// accessors hand out.
///
/// An `lc_scene *` is the scene's address (`NotificationSender(scene)`, the sender of its
/// notifications), never dereferenced by C. Each scene a C caller can meet — through a trace event
/// about it (delegate calls and notifications are traced before they happen) or `lc_app_scene` — is
/// remembered here with its application, and kept alive until `lc_app_destroy`: so a handle is
/// checked by looking it up (a foreign pointer is not found), and the address of a disconnected scene
/// is never reused for another scene while its application lives.
package final class SceneHandle: @unchecked Sendable {
    // @unchecked: immutable after init; the thread check reads its own strong `loop`, never `owner`
    // (which only the owner's loop thread dereferences, after that check).
    package let scene: Scene
    /// The application; the entry is forgotten before it goes (at its shutdown, at the latest in its
    /// deinit), so this reference is valid on the application's loop thread whenever the entry is
    /// found there. Another thread must not touch it: the application may be going meanwhile.
    package unowned(unsafe) let owner: AppHandle
    /// The application's loop, held here: the thread check of a call from any thread reads this, not
    /// `owner` (a caller on another thread could meet an entry whose application is being destroyed).
    let loop: MainRunLoop
    /// The application's identity, compared without touching it.
    let ownerID: ObjectIdentifier
    /// The id (also the session's persistent identifier) and the configuration name, owned here.
    package let cID: UnsafeMutablePointer<CChar>
    package let cConfigurationName: UnsafeMutablePointer<CChar>

    init(_ scene: Scene, owner: AppHandle) {
        self.scene = scene
        self.owner = owner
        loop = owner.loop
        ownerID = ObjectIdentifier(owner)
        cID = strdup(scene.id)!
        cConfigurationName = strdup(scene.session.configurationName ?? SceneConfiguration.default.name)!
    }

    deinit {
        free(cID)
        free(cConfigurationName)
    }
}

/// The scene handles of every live application, by address. [thread-safe]
package enum SceneHandles {
    private static let table = Mutex<[UInt: SceneHandle]>([:])

    /// Remembers `scene` of `owner` (once; later calls find it). [loop-thread of `owner`]
    static func remember(_ scene: Scene, owner: AppHandle) {
        let address = scene.sender.rawValue
        table.withLock { table in
            if table[address] == nil { table[address] = SceneHandle(scene, owner: owner) }
        }
    }

    /// Forgets the scenes of the application `owner` (it is shutting down or being deallocated).
    /// Compares identities only: never reads an application, live or gone. [thread-safe]
    static func forget(owner: ObjectIdentifier) {
        table.withLock { table in table = table.filter { $0.value.ownerID != owner } }
    }

    /// The entry of an `lc_scene *`, checked: NULL, not a scene of a live application (foreign, or of
    /// a destroyed application), the wrong thread, or (with `application`) a scene of another
    /// application each fail with their own status and message.
    package static func withScene(_ pointer: UnsafeRawPointer?, _ function: String, application: AppHandle? = nil,
                                  _ body: (SceneHandle) -> lc_status) -> lc_status
    {
        guard let pointer else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): scene is NULL") }
        guard let entry = table.withLock({ $0[UInt(bitPattern: pointer)] }) else {
            return lcFail(lc_status(LC_ERR_NOT_FOUND),
                          "\(function): not a scene handle (no live application has a scene at this address)")
        }
        guard entry.loop.isOnLoopThread else {
            return lcFail(lc_status(LC_ERR_WRONG_THREAD), "\(function) must be called on the main run loop's thread")
        }
        if let application, application !== entry.owner {
            return lcFail(lc_status(LC_ERR_NOT_FOUND), "\(function): scene '\(entry.scene.id)' belongs to another application")
        }
        return body(entry)
    }

    /// The scene remembered at `address` if it is one of `owner`'s, else nil (any other sender). [loop-thread of `owner`]
    package static func scene(at address: UInt, of owner: AppHandle) -> Scene? {
        guard address != 0, let entry = table.withLock({ $0[address] }), entry.owner === owner else { return nil }
        return entry.scene
    }

    /// How many scene handles are remembered (tests). [thread-safe]
    package static var count: Int { table.withLock { $0.count } }
}

extension AppHandle {
    /// Remembers the connected scene `id`, if any (called for every trace event about a scene).
    func rememberScene(_ id: String) {
        guard let scene = app.scene(id: id) else { return }
        remember(scene)
    }

    /// Remembers `scene` as this application's (once): its handle is then checked and answered by
    /// `SceneAccessors` until the application goes. [loop-thread]
    package func remember(_ scene: Scene) {
        let key = ObjectIdentifier(scene)
        guard !rememberedScenes.contains(key) else { return }
        rememberedScenes.insert(key)
        SceneHandles.remember(scene, owner: self)
    }

    /// `lc_app_scene` and the host's `scene_find`: the connected scene `id`. [loop-thread] (the caller checks)
    package func findScene(_ id: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?, function: String) -> lc_status {
        SceneHandles.find(id, out, function: function, lookup: { app.scene(id: $0) }, connectedIDs: { app.scenes.map(\.id) }) { remember($0) }
    }
}

extension SceneHandles {
    /// `scene_find`'s answer: the connected scene `id` (`lookup`, O(1))'s handle (after `found` ran
    /// with it), or the refusal naming the connected ones (`connectedIDs`, in connection order).
    package static func find(_ id: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?, function: String,
                             lookup: (String) -> Scene?, connectedIDs: () -> [String], found: (Scene) -> Void) -> lc_status
    {
        guard let id else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): id is NULL") }
        guard let out else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): out is NULL") }
        let name = String(cString: id)
        guard let scene = lookup(name) else {
            let ids = connectedIDs()
            let list = ids.isEmpty ? "none is connected" : "connected: " + ids.joined(separator: ", ")
            return lcFail(lc_status(LC_ERR_NOT_FOUND), "\(function): no scene '\(name)' is connected (\(list))")
        }
        found(scene)
        out.pointee = OpaquePointer(FFIDelegates.handle(scene))
        return lc_status(LC_OK)
    }
}

extension SceneState {
    /// The state of a header's `LC_SCENE_STATE_*` value; nil out of range.
    package init?(lcSceneState value: UInt32) {
        guard value < UInt32(Self.allCases.count) else { return nil }
        self = Self.allCases[Int(value)]
    }

    /// The header's `LC_SCENE_STATE_*`.
    package var lcSceneState: lc_scene_state {
        switch self {
        case .unattached: lc_scene_state(LC_SCENE_STATE_UNATTACHED)
        case .foregroundInactive: lc_scene_state(LC_SCENE_STATE_FOREGROUND_INACTIVE)
        case .foregroundActive: lc_scene_state(LC_SCENE_STATE_FOREGROUND_ACTIVE)
        case .background: lc_scene_state(LC_SCENE_STATE_BACKGROUND)
        case .suspended: lc_scene_state(LC_SCENE_STATE_SUSPENDED)
        }
    }
}

/// `lc_scene_state_name`: static storage. [thread-safe]
package func lcSceneStateName(_ state: lc_scene_state) -> UnsafePointer<CChar> {
    let names: [StaticString] = ["unattached", "foreground-inactive", "foreground-active", "background", "suspended"]
    let name: StaticString = Int(state) < names.count ? names[Int(state)] : "unknown"
    return UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// The accessors behind `lc_scene_get_*` and the host's `scene_get_*`: the entry checked, `out` required.
package enum SceneAccessors {
    package static func id(_ scene: UnsafeRawPointer?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?, _ function: String,
                           application: AppHandle? = nil) -> lc_status
    {
        SceneHandles.withScene(scene, function, application: application) { entry in
            guard let out else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): out is NULL") }
            out.pointee = UnsafePointer(entry.cID)
            return lc_status(LC_OK)
        }
    }

    package static func configurationName(_ scene: UnsafeRawPointer?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                                          _ function: String, application: AppHandle? = nil) -> lc_status
    {
        SceneHandles.withScene(scene, function, application: application) { entry in
            guard let out else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): out is NULL") }
            out.pointee = UnsafePointer(entry.cConfigurationName)
            return lc_status(LC_OK)
        }
    }

    /// The session role: "application" (`UISceneSession.Role.windowApplication`), static storage.
    package static func role(_ scene: UnsafeRawPointer?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?, _ function: String,
                             application: AppHandle? = nil) -> lc_status
    {
        SceneHandles.withScene(scene, function, application: application) { _ in
            guard let out else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): out is NULL") }
            let role: StaticString = "application"  // a literal: NUL-terminated, static storage
            out.pointee = UnsafeRawPointer(role.utf8Start).assumingMemoryBound(to: CChar.self)
            return lc_status(LC_OK)
        }
    }

    package static func state(_ scene: UnsafeRawPointer?, _ out: UnsafeMutablePointer<lc_scene_state>?, _ function: String,
                              application: AppHandle? = nil) -> lc_status
    {
        SceneHandles.withScene(scene, function, application: application) { entry in
            guard let out else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): out is NULL") }
            out.pointee = entry.scene.state.lcSceneState
            return lc_status(LC_OK)
        }
    }
}
