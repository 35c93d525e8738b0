import AppLifecycle

/// One thing the host can be told to do: from a scenario line, a line typed at the prompt, a
/// control-socket request, or an OS event. Parsed by `ScenarioParser`.
enum HostCommand: Sendable, CustomStringConvertible {
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

    var description: String {
        switch self {
        case .action(let action): return action.description
        case .post(let name, let info): return info.isEmpty ? "post \(name)" : "post \(name) \(info)"
        case .wait(let duration): return "wait \(formatDuration(duration))"
        case .expectState(let state): return "expect-state \(state)"
        case .expectScene(let id, let state): return "expect-scene \(id) \(state)"
        }
    }
}

/// `1.5s`, `200ms`.
func formatDuration(_ d: Duration) -> String {
    let ms = d.secondsDouble * 1000
    return ms >= 1000 && ms.truncatingRemainder(dividingBy: 1000) == 0 ? "\(Int(ms / 1000))s" : "\(Int(ms.rounded()))ms"
}
