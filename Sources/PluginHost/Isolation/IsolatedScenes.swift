import AppLifecycle
import CLifecycleABI
import LifecycleC
import Synchronization

/// A scene as a frame carries it to an isolated plugin's process: what that process's proxy of the
/// scene needs to be current as of the frame (id, state, session id, configuration name, whether the
/// application has it connected), under the scene's identity in the host (its address there, the
/// sender of its notifications).
struct SceneSnapshot {
    var key: UInt64
    var id: String
    var state: SceneState
    var connected: Bool
    var sessionID: String
    var configurationName: String

    /// The scene as it is now. [loop-thread]
    init(_ scene: Scene, in app: Application) {
        key = UInt64(scene.sender.rawValue)
        id = scene.id
        state = scene.state
        connected = scene.state != .unattached || app.scene(id: scene.id) === scene
        sessionID = scene.session.persistentIdentifier
        configurationName = scene.session.configurationName ?? SceneConfiguration.default.name
    }

    func write(to out: inout FrameWriter) {
        out.u64(key)
        out.string(id)
        out.u8(UInt8(state.lcSceneState))
        out.u8(connected ? 1 : 0)
        out.string(sessionID)
        out.string(configurationName)
    }

    static func read(_ reader: inout FrameReader) throws(ProtocolViolation) -> SceneSnapshot {
        let key = try reader.u64("scene key")
        let id = try reader.string("scene id")
        let raw = try reader.u8("scene state")
        guard let state = SceneState(lcSceneState: UInt32(raw)) else { throw ProtocolViolation("scene state \(raw) is out of range") }
        let connected = try reader.u8("scene connected flag") != 0
        let sessionID = try reader.string("session id")
        let configurationName = try reader.string("configuration name")
        guard key != 0 else { throw ProtocolViolation("a scene with key 0") }
        return SceneSnapshot(key: key, id: id, state: state, connected: connected, sessionID: sessionID,
                             configurationName: configurationName)
    }

    private init(key: UInt64, id: String, state: SceneState, connected: Bool, sessionID: String, configurationName: String) {
        self.key = key
        self.id = id
        self.state = state
        self.connected = connected
        self.sessionID = sessionID
        self.configurationName = configurationName
    }
}

/// The proxies of the host's scenes in an isolated plugin's process: one `Scene` a host scene (a
/// reconnection of the same id is a new scene there, so a new proxy here), made the first time a frame
/// names it and kept for the process's life (its address is never reused for another scene), its state
/// set from each frame that names it. The proxies are remembered as scenes of the process's own
/// application, so the host table's `scene_get_*` answer them with the in-process checks and words.
/// [main-thread]
final class RunnerScenes: @unchecked Sendable {
    // @unchecked: main-thread state, except `keys` (under its lock).
    private let handle: AppHandle
    /// Proxies by the host's key.
    private var proxies: [UInt64: Scene] = [:]
    /// Host keys by a proxy's address (its `lc_scene *` here). [thread-safe] (a post's sender is
    /// translated on the posting thread)
    private let keys = Mutex<[UInt: UInt64]>([:])
    /// The scenes the host's application has connected, in connection order, as of the last frame that
    /// named each (what `scene_find` answers).
    private var connected = KeyedList<Scene>()

    init(handle: AppHandle) { self.handle = handle }

    /// The proxy of `snapshot`'s scene, made current.
    func proxy(_ snapshot: SceneSnapshot) -> Scene {
        let scene: Scene
        if let known = proxies[snapshot.key] {
            scene = known
        } else {
            scene = Scene.mirror(id: snapshot.id, sessionID: snapshot.sessionID, configurationName: snapshot.configurationName,
                                 application: handle.app)
            proxies[snapshot.key] = scene
            keys.withLock { $0[scene.sender.rawValue] = snapshot.key }
            handle.remember(scene)
        }
        scene.mirror(state: snapshot.state)
        let current = connected[scene.id]
        if snapshot.connected, current !== scene {
            connected.remove(key: scene.id)  // an older connection of the id, not heard of ending
            connected.append(scene)
        } else if !snapshot.connected, current === scene {
            connected.remove(key: scene.id)
        }
        return scene
    }

    /// The address a notification's sender has here: a scene's proxy for a scene of the host.
    func localSender(_ hostSender: UInt64, _ snapshot: SceneSnapshot?) -> UInt {
        guard let snapshot else { return UInt(truncatingIfNeeded: hostSender) }
        return proxy(snapshot).sender.rawValue
    }

    /// The sender the host knows for `sender` (an observer's filter, a post's sender): the host's
    /// scene for a proxy, anything else as it is. [thread-safe]
    func hostSender(_ sender: UnsafeRawPointer?) -> UInt64 {
        let address = UInt(bitPattern: sender)
        guard address != 0 else { return 0 }
        return keys.withLock { $0[address] } ?? UInt64(address)
    }

    /// The host's `scene_find` here: the connected scene `id` as of the frame being handled, with the
    /// in-process statuses and words.
    func find(_ id: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?, function: String) -> lc_status {
        SceneHandles.find(id, out, function: function, lookup: { connected[$0] }, connectedIDs: { connected.map(\.id) }) { _ in }
    }

    /// The host's `scene_list` here: the connected scenes this process has heard of, as of the frames
    /// handled, in connection order (as `find`).
    func list(_ out: UnsafeMutablePointer<OpaquePointer?>?, capacity: Int, _ count: UnsafeMutablePointer<Int>?, function: String) -> lc_status {
        guard let count else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): count is NULL") }
        guard capacity == 0 || out != nil else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): out is NULL with capacity \(capacity)") }
        for (index, scene) in connected.prefix(capacity).enumerated() { out?[index] = OpaquePointer(bitPattern: scene.sender.rawValue) }
        count.pointee = connected.count
        return lc_status(LC_OK)
    }
}
