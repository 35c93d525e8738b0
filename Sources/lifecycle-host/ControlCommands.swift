import ArgumentParser
@preconcurrency import Glibc
import HostInput

// The control socket's client commands: `send` and `status`.

struct SocketOption: ParsableArguments {
    static let help = "The control socket's path (default: $XDG_RUNTIME_DIR/lifecycle-host.sock, else ${TMPDIR:-/tmp}/lifecycle-host-UID/lifecycle-host.sock)."

    @Option(name: .customLong("socket"), help: ArgumentHelp(SocketOption.help, valueName: "PATH"), completion: .file())
    var socket: String?

    var path: String { socket ?? ControlServer.defaultPath() }
}


struct Send: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send an action to a running host, e.g. 'send memory-warning critical'.",
        discussion: "ACTION is one line of a scenario file, as typed at 'run --interactive' (whose 'help' describes each): "
            + ScenarioParser.commands.filter { $0 != "wait" }.joined(separator: ", ")
            + ". 'wait' is for scenario files only. Prints the host's reply, 'ok STATE' or 'error: ...' (exit status 1). "
            + "--help or -h anywhere before a '--' word shows this help and sends nothing; every word after '--' is the action's.")

    @OptionGroup var socket: SocketOption

    @Argument(parsing: .captureForPassthrough, help: ArgumentHelp("The action and its arguments, as in a scenario file.", valueName: "ACTION"),
              completion: .list(ScenarioParser.commands.filter { $0 != "wait" }))
    var action: [String] = []

    func run() throws {
        // The action's words are captured as they come, options after it included: `--help` is
        // answered here, never sent, and `--socket` is taken out of them (it was ignored there, and
        // the action sent to the default socket).
        if Self.asksForHelp(action) { throw CleanExit.helpRequest(self) }
        let (words, given) = try Self.splitSocketOption(action)
        guard !words.isEmpty else { Usage.fail("send needs an action, e.g. 'lifecycle-host send home'", showingHelpOf: Send.self) }
        if given != nil, socket.socket != nil { throw ValidationError("--socket given twice") }
        let line = words.map(ScenarioParser.quote).joined(separator: " ")
        try request("send " + line, given ?? socket.path)
    }

    /// Whether `--help` or `-h` is one of the words before a `--` word.
    static func asksForHelp(_ words: [String]) -> Bool {
        words.prefix { $0 != "--" }.contains { $0 == "--help" || $0 == "-h" }
    }

    /// The action's words without `--socket PATH` / `--socket=PATH`, and that path. A `--` word ends
    /// the options: every word after it belongs to the action (`send -- post com.example.x --socket`).
    static func splitSocketOption(_ words: [String]) throws -> (action: [String], socket: String?) {
        var action: [String] = []
        var path: String?
        var index = 0
        while index < words.count {
            let word = words[index]
            index += 1
            if word == "--" {
                action += words[index...]
                break
            }
            var value: String?
            if word == "--socket" {
                guard index < words.count else { throw ValidationError("--socket needs a path") }
                value = words[index]
                index += 1
            } else if word.hasPrefix("--socket=") {
                value = String(word.dropFirst("--socket=".count))
            }
            guard let value else {
                action.append(word)
                continue
            }
            guard path == nil else { throw ValidationError("--socket given twice") }
            guard !value.isEmpty else { throw ValidationError("--socket needs a path") }
            path = value
        }
        return (action, path)
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a running host's state, plugins, queued notifications and background tasks (JSON).")

    @OptionGroup var socket: SocketOption

    func run() throws { try request("status", socket.path) }
}

/// Sends one request and prints the reply; a reply starting with "error" exits 1. A default path in
/// the private folder is used only once the folder passes its checks (`SocketFolder.check`).
private func request(_ line: String, _ path: String) throws {
    do {
        let location = ControlServer.defaultLocation()
        if path == location.path { try location.folder?.check() }
        let reply = try ControlClient.request(path: path, line: line)
        print(reply)
        if reply.hasPrefix("error") { throw ExitCode(1) }
    } catch let error as ControlSocketError {
        fputs("lifecycle-host: \(error.description)\n", stderr)
        throw ExitCode(1)
    }
}
