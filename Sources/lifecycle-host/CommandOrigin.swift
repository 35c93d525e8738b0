import LifecycleOSEvents

/// Where a command came from. The host decides from the case (a scenario line may `wait`, its
/// actions need no `input` line); `description` gives the words of the trace's `input` lines.
enum CommandOrigin: Equatable, CustomStringConvertible {
    /// A scenario line, at `FILE:LINE`.
    case script(location: String)
    /// A line typed at the prompt.
    case stdin
    /// The end of standard input, which terminates a running application.
    case stdinClosed
    /// The end of a scenario (`FILE`) that left the application running, with no prompt to follow:
    /// the host terminates it.
    case scriptEnded(file: String)
    /// A `send` request on the control socket.
    case socket
    /// An OS event (rendered `signal SIGTSTP`, `psi warning`, `clock`).
    case os(OSOrigin)
    /// A plugin file watched with `--watch` changed and settled (rendered `watch PATH changed`).
    case watch(path: String)

    var description: String {
        switch self {
        case .script(let location): return "script \(location)"
        case .stdin: return "stdin"
        case .stdinClosed: return "stdin closed"
        case .scriptEnded(let file): return "script \(file) ended"
        case .socket: return "socket"
        case .os(let origin): return origin.description
        case .watch(let path): return "watch \(path) changed"
        }
    }

    var isScript: Bool {
        if case .script = self { return true }
        return false
    }
}
