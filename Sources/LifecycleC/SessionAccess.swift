import AppLifecycle
import CLifecycleABI
import Glibc

/// ABI 1.5: the connected scenes and the sessions as lists, and a session's role and userInfo, for C
/// callers (`lc_app_scenes`, `lc_app_sessions`, `lc_scene_get_session_role`, `lc_app_session_user_info`,
/// `lc_app_set_session_user_info`) and plugins (the host API's `scene_list`, `session_list`, …).
extension AppHandle {
    /// Up to `capacity` connected scenes' handles into `out`, in connection order; how many are
    /// connected into `count`. [loop-thread]
    package func listScenes(_ out: UnsafeMutablePointer<OpaquePointer?>?, capacity: Int, _ count: UnsafeMutablePointer<Int>?,
                            function: String) -> lc_status
    {
        guard let count else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): count is NULL") }
        guard capacity == 0 || out != nil else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): out is NULL with capacity \(capacity)") }
        let scenes = app.scenes
        for (index, scene) in scenes.prefix(capacity).enumerated() {
            remember(scene)
            out?[index] = OpaquePointer(bitPattern: scene.sender.rawValue)
        }
        count.pointee = scenes.count
        return lc_status(LC_OK)
    }

    /// Up to `capacity` session ids into `out`, oldest first (C strings owned by this handle); how many
    /// sessions the system keeps into `count`. [loop-thread]
    package func listSessions(_ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?, capacity: Int, _ count: UnsafeMutablePointer<Int>?,
                              function: String) -> lc_status
    {
        guard let count else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): count is NULL") }
        guard capacity == 0 || out != nil else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): out is NULL with capacity \(capacity)") }
        let sessions = app.sceneSessions
        for (index, session) in sessions.prefix(capacity).enumerated() { out?[index] = UnsafePointer(sessionCString(session.persistentIdentifier)) }
        count.pointee = sessions.count
        return lc_status(LC_OK)
    }

    /// Session `id`'s C string, made once.
    package func sessionCString(_ id: String) -> UnsafeMutablePointer<CChar> {
        if let string = sessionCStrings[id] { return string }
        let string = strdup(id)!
        sessionCStrings[id] = string
        return string
    }

    /// Session `session`'s userInfo as a read-only `lc_dict *` owned by this handle (the same one
    /// until the userInfo is set again). [loop-thread]
    package func sessionUserInfo(_ session: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?, function: String) -> lc_status {
        guard let session else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): session_id is NULL") }
        guard let out else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): out is NULL") }
        let id = String(cString: session)
        switch sessionUserInfo(id, function: function) {
        case .failure(let error): return lcFail(error.status, error.message)
        case .success(let info):
            out.pointee = userInfoBox(session: id, info).opaque
            return lc_status(LC_OK)
        }
    }

    /// The box handed out for session `id`'s userInfo `info`: the one kept while it has not changed.
    package func userInfoBox(session id: String, _ info: UserInfo) -> UserInfoBox {
        if let kept = sessionUserInfoBoxes[id], kept.value == info { return kept }
        let box = UserInfoBox(info)
        sessionUserInfoBoxes[id] = box
        return box
    }

    /// Session `id`'s userInfo, or the refusal naming `function`. [loop-thread]
    package func sessionUserInfo(_ id: String, function: String) -> Result<UserInfo, CStatusError> {
        guard let session = app.sceneSession(id: id) else { return .failure(Self.noSession(id, function, app)) }
        return .success(session.userInfo)
    }

    /// Replaces session `id`'s userInfo (NULL: empty). [loop-thread]
    package func setSessionUserInfo(_ session: UnsafePointer<CChar>?, _ info: OpaquePointer?, function: String) -> lc_status {
        guard let session else { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): session_id is NULL") }
        return setSessionUserInfo(String(cString: session), info.map { UserInfoBox.from($0).value } ?? UserInfo(), function: function)
    }

    package func setSessionUserInfo(_ id: String, _ info: UserInfo, function: String) -> lc_status {
        guard app.sceneSession(id: id) != nil else { let error = Self.noSession(id, function, app); return lcFail(error.status, error.message) }
        do throws(ApplicationError) { try app.setUserInfo(info, forSession: id) } catch { return lcFail(error) }
        return lc_status(LC_OK)
    }

    static func noSession(_ id: String, _ function: String, _ app: Application) -> CStatusError {
        let sessions = app.sceneSessions.map(\.persistentIdentifier)
        let known = sessions.isEmpty ? "none exists" : "sessions: " + sessions.joined(separator: ", ")
        return CStatusError(status: lc_status(LC_ERR_NOT_FOUND), message: "\(function): no scene session '\(id)' exists (\(known))")
    }
}
