import AppLifecycle
import CLifecycleABI

/// ABI 1.5: the application's scene requests through the C face (`lc_app_request_scene_*`, the host
/// API's `request_scene_*`): the arguments checked, then the engine's `requestSceneSession…`, which
/// checks the rest and performs the request on a later turn of the loop (docs/lifecycle.md, decision 53).
extension AppHandle {
    /// - Parameters:
    ///   - session: the session's id; NULL asks for a new session (activation only).
    ///   - activity: a user activity dictionary (activation only; NULL: none).
    ///   - requester: who asked, for the trace (a plugin's id, or empty).
    package func requestScene(_ kind: SceneRequestKind, session: UnsafePointer<CChar>?, activity: OpaquePointer?,
                              requester: String, function: String) -> lc_status
    {
        requestScene(kind, sessionID: session.map { String(cString: $0) }, activity: activity.map { UserInfoBox.from($0).value },
                     requester: requester, function: function)
    }

    /// `requestScene` with Swift values (an isolated plugin's request, read from its frame).
    package func requestScene(_ kind: SceneRequestKind, sessionID: String?, activity: UserInfo?,
                              requester: String, function: String) -> lc_status
    {
        if kind != .activation, sessionID == nil { return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): session_id is NULL") }
        var userActivity: UserActivity?
        if let activity {
            guard let parsed = UserActivity(dictionary: activity) else {
                return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), "\(function): activity is not a user activity: it needs a non-empty "
                              + "string \"activityType\", and \"title\" (a string) and \"userInfo\" (a dictionary) when present")
            }
            userActivity = parsed
        }
        do throws(ApplicationError) {
            switch kind {
            case .activation: try app.requestSceneSessionActivation(sessionID, userActivity: userActivity, requester: requester, caller: function)
            case .destruction: try app.requestSceneSessionDestruction(sessionID ?? "", requester: requester, caller: function)
            case .refresh: try app.requestSceneSessionRefresh(sessionID ?? "", requester: requester, caller: function)
            }
        } catch {
            return lcFail(error)
        }
        return lc_status(LC_OK)
    }
}
