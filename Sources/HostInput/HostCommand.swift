import AppLifecycle

/// One thing the host can be told to do: from a scenario line, a line typed at the prompt, a
/// control-socket request, or an OS event. Parsed by `ScenarioParser`.
package enum HostCommand: Sendable, CustomStringConvertible {
    /// An engine action (launch, home, lock, …).
    case action(Action)
    /// Post a notification (`post NAME [KEY=VALUE...]`).
    case post(NotificationName, UserInfo)
    /// Let the loop run for a while (`wait DURATION`): timers, sockets and signals are served meanwhile.
    case wait(Duration)
    /// Check the state (`expect-state STATE`); a mismatch is a script error.
    case expectState(ApplicationState)
    /// Check a scene's state (`expect-scene ID STATE`; `unattached`: not connected); a mismatch is a script error.
    case expectScene(String, SceneState)
    /// Replace the plugin `id` with a new build of its file, or of the file at `path` (`reload ID [PATH]
    /// [--force]`; `force`: even with something of it outstanding). Done by the host, which has the
    /// plugins: `perform(on:fromScript:)` refuses it.
    case reload(id: String, path: String?, force: Bool)

    package var description: String {
        switch self {
        case .action(let action): return action.description
        case .post(let name, let info): return info.isEmpty ? "post \(name)" : "post \(name) \(info)"
        case .wait(let duration): return "wait \(formatDuration(duration))"
        case .expectState(let state): return "expect-state \(state)"
        case .expectScene(let id, let state): return "expect-scene \(id) \(state)"
        case .reload(let id, let path, let force):
            return "reload \(id)" + (path.map { " \($0)" } ?? "") + (force ? " --force" : "")
        }
    }
}

/// `1.5s`, `200ms`.
package func formatDuration(_ d: Duration) -> String {
    let ms = d.secondsDouble * 1000
    return ms >= 1000 && ms.truncatingRemainder(dividingBy: 1000) == 0 ? "\(Int(ms / 1000))s" : "\(Int(ms.rounded()))ms"
}

extension HostCommand {
    /// Does the command to `app`: performs an action, posts a notification, or checks a state.
    ///
    /// [loop-thread of `app`] Delegates and observers run inside this call.
    /// - Parameters:
    ///   - fromScript: whether the command is a scenario line; only there may it `wait` (the caller
    ///     lets the time pass).
    ///   - beforePost: called just before a post is delivered (the host writes its `post` trace line).
    /// - Returns: why it failed (an illegal action, a check that does not hold, a `wait` outside a
    ///   scenario), or nil.
    package func perform(on app: Application, fromScript: Bool,
                         beforePost: (NotificationName, UserInfo) -> Void = { _, _ in }) -> String? {
        switch self {
        case .action(let action):
            do { try app.perform(action) } catch { return error.message }
        case .post(let name, let info):
            beforePost(name, info)
            app.center.post(name, userInfo: info.isEmpty ? nil : info)
        case .wait:
            if !fromScript { return "'wait' is for scenario files" }
        case .expectState(let expected):
            if app.state != expected { return "expected state \(expected), found \(app.state)" }
        case .expectScene(let id, let expected):
            let found = app.scene(id: id)?.state ?? .unattached
            if found != expected { return "expected scene \(id) \(expected), found \(found)" }
        case .reload:
            return "'reload' is done by the plugin host (lifecycle-host), which has the plugins"
        }
        return nil
    }
}
