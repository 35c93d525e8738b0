import AppLifecycle
import ArgumentParser
@preconcurrency import Glibc

/// Bad command lines: every one ends with `HostExit.usage` (64, `EX_USAGE`) and `Error: …` on
/// standard error, as ArgumentParser ends the ones it finds itself.
enum Usage {
    /// `Error: message`, a blank line, then `command`'s whole help, on standard error; exits 64.
    /// For a command line that says nothing of what to do (a bare `send`).
    static func fail(_ message: String, showingHelpOf command: ParsableCommand.Type) -> Never {
        fflush(stdout)
        fputs("Error: \(message)\n\n\(LifecycleHost.helpMessage(for: command))\n", stderr)
        exit(HostExit.usage)
    }

    /// The error for a first word that names no subcommand (`lifecycle-host rn`), with the closest
    /// name; nil when the first word is an option, a subcommand or `help`.
    static func unknownSubcommand(_ arguments: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-") else { return nil }
        let names = LifecycleHost.configuration.subcommands.map { $0._commandName } + ["help"]
        guard !names.contains(first) else { return nil }
        return "unknown command '\(first)'\(didYouMean(first, among: names)); the commands: \(names.joined(separator: ", "))"
    }
}
