import AppLifecycle
import CLifecycleABI
import LifecycleC

// ABI 1.2: scene handles (the "Scenes" part of include/lifecycle.h). Every function checks its handle
// (NULL, not a scene of a live application, the wrong thread) before reading it.

@c @implementation public func lc_scene_state_name(_ state: lc_scene_state) -> UnsafePointer<CChar>? {
    lcSceneStateName(state)
}

@c @implementation public func lc_app_scene(_ app: OpaquePointer?, _ id: UnsafePointer<CChar>?,
                                            _ out: UnsafeMutablePointer<OpaquePointer?>?) -> lc_status
{
    withApp(app, "lc_app_scene") { $0.findScene(id, out, function: "lc_app_scene") }
}

@c @implementation public func lc_scene_get_id(_ scene: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> lc_status {
    SceneAccessors.id(UnsafeRawPointer(scene), out, "lc_scene_get_id")
}

@c @implementation public func lc_scene_get_state(_ scene: OpaquePointer?, _ out: UnsafeMutablePointer<lc_scene_state>?) -> lc_status {
    SceneAccessors.state(UnsafeRawPointer(scene), out, "lc_scene_get_state")
}

@c @implementation public func lc_scene_get_session_id(_ scene: OpaquePointer?,
                                                       _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> lc_status
{
    SceneAccessors.id(UnsafeRawPointer(scene), out, "lc_scene_get_session_id")
}

@c @implementation public func lc_scene_get_configuration_name(_ scene: OpaquePointer?,
                                                               _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> lc_status
{
    SceneAccessors.configurationName(UnsafeRawPointer(scene), out, "lc_scene_get_configuration_name")
}

// ABI 1.5: the application's scene requests, performed on a later turn of the main loop.

@c @implementation public func lc_app_request_scene_activation(_ app: OpaquePointer?, _ sessionID: UnsafePointer<CChar>?,
                                                               _ activity: OpaquePointer?) -> lc_status
{
    withApp(app, "lc_app_request_scene_activation") {
        $0.requestScene(.activation, session: sessionID, activity: activity, requester: "", function: "lc_app_request_scene_activation")
    }
}

@c @implementation public func lc_app_request_scene_destruction(_ app: OpaquePointer?, _ sessionID: UnsafePointer<CChar>?) -> lc_status {
    withApp(app, "lc_app_request_scene_destruction") {
        $0.requestScene(.destruction, session: sessionID, activity: nil, requester: "", function: "lc_app_request_scene_destruction")
    }
}

@c @implementation public func lc_app_request_scene_refresh(_ app: OpaquePointer?, _ sessionID: UnsafePointer<CChar>?) -> lc_status {
    withApp(app, "lc_app_request_scene_refresh") {
        $0.requestScene(.refresh, session: sessionID, activity: nil, requester: "", function: "lc_app_request_scene_refresh")
    }
}

// ABI 1.5: the lists of scenes and sessions; a session's role and userInfo.

@c @implementation public func lc_app_scenes(_ app: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?, _ capacity: Int,
                                             _ count: UnsafeMutablePointer<Int>?) -> lc_status
{
    withApp(app, "lc_app_scenes") { $0.listScenes(out, capacity: capacity, count, function: "lc_app_scenes") }
}

@c @implementation public func lc_app_sessions(_ app: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?, _ capacity: Int,
                                               _ count: UnsafeMutablePointer<Int>?) -> lc_status
{
    withApp(app, "lc_app_sessions") { $0.listSessions(out, capacity: capacity, count, function: "lc_app_sessions") }
}

@c @implementation public func lc_scene_get_session_role(_ scene: OpaquePointer?,
                                                         _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> lc_status
{
    SceneAccessors.role(UnsafeRawPointer(scene), out, "lc_scene_get_session_role")
}

@c @implementation public func lc_app_session_user_info(_ app: OpaquePointer?, _ sessionID: UnsafePointer<CChar>?,
                                                        _ out: UnsafeMutablePointer<OpaquePointer?>?) -> lc_status
{
    withApp(app, "lc_app_session_user_info") { $0.sessionUserInfo(sessionID, out, function: "lc_app_session_user_info") }
}

@c @implementation public func lc_app_set_session_user_info(_ app: OpaquePointer?, _ sessionID: UnsafePointer<CChar>?,
                                                            _ info: OpaquePointer?) -> lc_status
{
    withApp(app, "lc_app_set_session_user_info") { $0.setSessionUserInfo(sessionID, info, function: "lc_app_set_session_user_info") }
}
