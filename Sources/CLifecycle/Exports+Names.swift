import AppLifecycle
import CLifecycleABI
import LifecycleC

// ABI 1.1: interned notification names (the "Interned names" part of include/lifecycle.h).
//
// `lc_app_post_name` is the fast path of the C ABI: on the main thread, with no user_info, it checks
// its arguments with a few compares and calls the center without retaining the handle, building a
// String, or taking a lock. Every failure is recorded by an out-of-line function, so the checks cost
// a branch each.

@c @implementation public func lc_name_intern(_ name: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<lc_name>?) -> lc_status {
    guard let name else { return lcNull("lc_name_intern", "name") }
    guard let out else { return lcNull("lc_name_intern", "out") }
    do {
        out.pointee = try NotificationName(cString: name).id
        return lc_status(LC_OK)
    } catch {
        return lcFail(error)
    }
}

@c @implementation public func lc_name_string(_ name: lc_name) -> UnsafePointer<CChar>? {
    NotificationName(internedID: name)?.cString
}

@c @implementation public func lc_app_observe_name(_ app: OpaquePointer?, _ name: lc_name, _ sender: UnsafeRawPointer?,
                                                   _ fn: lc_observer_fn?, _ ctx: UnsafeMutableRawPointer?,
                                                   _ out: UnsafeMutablePointer<lc_observer_token>?) -> lc_status
{
    withApp(app, "lc_app_observe_name") {
        $0.observe(nameID: name, sender: sender, fn: fn, ctx: ctx, owner: "", out: out, function: "lc_app_observe_name")
    }
}

@c @implementation public func lc_app_post_name(_ app: OpaquePointer?, _ name: lc_name, _ sender: UnsafeRawPointer?,
                                                _ userInfo: OpaquePointer?) -> lc_status
{
    guard let app, userInfo == nil else { return postNameOffFastPath(app, name, sender, userInfo) }
    // The caller's handle is alive for the call (the header's contract), and the application owns
    // its center: neither is retained. The center checks the id (see `post(nameID:)`).
    let center = Unmanaged<AppHandle>.fromOpaque(UnsafeRawPointer(app))._withUnsafeGuaranteedRef { $0.center }
    let outcome = center._withUnsafeGuaranteedRef { $0.post(nameID: name, sender: UInt(bitPattern: sender)) }
    if case .posted = outcome { return lc_status(LC_OK) }
    return lcStatus(outcome, name: name, userInfo: nil, "lc_app_post_name")
}

/// `lc_app_post_name` with a userInfo or a NULL app: out of line, so that the common post (no
/// userInfo) saves no registers and keeps no frame around its one call.
@inline(never)
private func postNameOffFastPath(_ app: OpaquePointer?, _ name: lc_name, _ sender: UnsafeRawPointer?,
                                 _ userInfo: OpaquePointer?) -> lc_status
{
    guard let app else { return lcNull("lc_app_post_name", "app") }
    let center = Unmanaged<AppHandle>.fromOpaque(UnsafeRawPointer(app))._withUnsafeGuaranteedRef { $0.center }
    let outcome = center._withUnsafeGuaranteedRef { center in
        guard let userInfo else { return center.post(nameID: name, sender: UInt(bitPattern: sender)) }
        // The poster's own dictionary reaches C observers on this thread (no copy, no new handle).
        let box = UserInfoBox.from(userInfo)
        return center.post(nameID: name, sender: UInt(bitPattern: sender), userInfo: box.current, rawUserInfo: box)
    }
    if case .posted = outcome { return lc_status(LC_OK) }
    return lcStatus(outcome, name: name, userInfo: userInfo, "lc_app_post_name")
}
