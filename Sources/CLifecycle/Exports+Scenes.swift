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
