// The control socket's requests: one line in, what it asks for, and the one line that answers it.
import AppLifecycle

/// One request line of the control socket (docs/host.md, "The control socket"): `status`, `help` or
/// `send ACTION [ARGS...]`, the action as a scenario line.
///
/// Parsing performs nothing; `response(status:perform:state:)` does what the request asks through the
/// closures it is given, so that the host (`HostRunner`) and the fuzz target answer with the same code.
package enum ControlRequest: Sendable {
    /// `status`: the host's state as one JSON object.
    case status
    /// `help`: the requests there are.
    case help
    /// `send ACTION [ARGS...]`: a command, parsed as a scenario line.
    case send(HostCommand)
    /// Not a request the host takes: why, answered as `error: WHY`.
    case invalid(String)

    /// The answer to `help`.
    package static let helpResponse = "ok requests: status | send ACTION [ARGS...] | help"

    /// Parses one request line (without its line feed); surrounding white space is ignored.
    ///
    /// [thread-safe] Costs O(length of the line).
    package init(line: String) {
        let words = line.trimmingWhitespace()
        if words == "status" {
            self = .status
        } else if words == "help" {
            self = .help
        } else if words.hasPrefix("send ") || words == "send" {
            let action = String(words.dropFirst(4)).trimmingWhitespace()
            do {
                if let command = try ScenarioParser.parse(line: action) {
                    self = .send(command)
                } else {
                    self = .invalid("'send' needs an action")
                }
            } catch {
                self = .invalid(error.message)
            }
        } else {
            self = .invalid("unknown request '\(words)' (status, send ACTION, help)")
        }
    }

    /// The response line (without its line feed).
    ///
    /// - Parameters:
    ///   - status: makes the answer to `status`.
    ///   - perform: performs a `send`'s command; returns why it failed, or nil.
    ///   - state: the application's state after a successful `send` (`ok STATE`).
    /// - Returns: `status()`, `helpResponse`, `ok STATE`, or `error: WHY`.
    package func response(status: () -> String, perform: (HostCommand) -> String?, state: () -> ApplicationState) -> String {
        switch self {
        case .status: return status()
        case .help: return Self.helpResponse
        case .send(let command):
            if let failure = perform(command) { return "error: \(failure)" }
            return "ok \(state().rawValue)"
        case .invalid(let why): return "error: \(why)"
        }
    }
}
