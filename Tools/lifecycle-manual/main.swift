// lifecycle-manual: writes lifecycle-host's man page (man(7) roff) from the description of its commands
// that ArgumentParser prints with --experimental-dump-help, so the page is generated from the same
// definitions as --help.
//
//   lifecycle-host --experimental-dump-help | lifecycle-manual --version 1.2.0 > docs/man/lifecycle-host.1
//
// The output depends only on its input and the version (no date): regenerating an unchanged command
// line gives the same bytes, which is how the test checks that docs/man/ is in sync.
import FoundationEssentials
@preconcurrency import Glibc

/// The parts of ArgumentParser's ToolInfo (serialization version 0) the page uses.
struct ToolInfo: Decodable {
    let serializationVersion: Int
    let command: CommandInfo
}

struct CommandInfo: Decodable {
    let commandName: String
    let abstract: String?
    let discussion: String?
    let shouldDisplay: Bool?
    let arguments: [ArgumentInfo]?
    let subcommands: [CommandInfo]?
}

struct ArgumentInfo: Decodable {
    struct Name: Decodable {
        let kind: String
        let name: String
    }

    let kind: String
    let names: [Name]?
    let valueName: String?
    let defaultValue: String?
    let allValues: [String]?
    let isOptional: Bool
    let isRepeating: Bool
    let abstract: String?
    let discussion: String?
    let shouldDisplay: Bool

    var isHelp: Bool { names?.contains { $0.name == "help" } == true }
}

/// Text as roff reads it: backslashes escaped, characters past ASCII as `\[uXXXX]` (the page is
/// plain ASCII, whatever encoding the formatter assumes), a line starting with a control character
/// guarded.
func roff(_ text: String) -> String {
    text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
        var escaped = ""
        for scalar in line.unicodeScalars {
            switch scalar.value {
            case 0x5C: escaped += "\\e"
            case 0x20...0x7E: escaped.unicodeScalars.append(scalar)
            case 0x09: escaped += " "
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                escaped += "\\[u" + String(repeating: "0", count: max(4 - hex.count, 0)) + hex + "]"
            }
        }
        return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
    }.joined(separator: "\n")
}

/// A command-line word in bold (options, command names): hyphens as minus signs, so it can be copied.
func bold(_ word: String) -> String { "\\fB" + roff(word).replacing("-", with: "\\-") + "\\fR" }

func italic(_ word: String) -> String { "\\fI" + roff(word) + "\\fR" }

/// `--name`, `-n` for every name of an option or flag.
func spelled(_ name: ArgumentInfo.Name) -> String {
    name.kind == "short" ? "-" + name.name : (name.kind == "longWithSingleDash" ? "-" : "--") + name.name
}

/// How the argument is written: `--trace trace`, `--verbose`, `plugins`.
func usage(_ argument: ArgumentInfo) -> String {
    let value = italic(argument.valueName ?? "value")
    switch argument.kind {
    case "positional": return value
    case "flag": return (argument.names ?? []).map { bold(spelled($0)) }.joined(separator: ", ")
    default: return (argument.names ?? []).map { bold(spelled($0)) + " " + value }.joined(separator: ", ")
    }
}

/// The argument in a synopsis: optional ones in brackets, repeatable ones followed by "...".
func synopsisItem(_ argument: ArgumentInfo) -> String {
    let first = argument.names?.first.map { [$0] } ?? []
    let item = usage(ArgumentInfo(kind: argument.kind, names: first, valueName: argument.valueName, defaultValue: nil,
                                  allValues: nil, isOptional: argument.isOptional, isRepeating: argument.isRepeating,
                                  abstract: nil, discussion: nil, shouldDisplay: true))
    let repeated = argument.isRepeating ? item + " ..." : item
    return argument.isOptional ? "[" + repeated + "]" : repeated
}

/// The arguments a reader sees: not hidden, not the help flag (described once, at the top).
func shown(_ command: CommandInfo) -> [ArgumentInfo] {
    (command.arguments ?? []).filter { $0.shouldDisplay && !$0.isHelp }
}

/// One `.TP` entry per argument: how it is written, then what it does, its values and default.
func argumentList(_ arguments: [ArgumentInfo]) -> [String] {
    var lines: [String] = []
    for argument in arguments {
        lines += [".TP", usage(argument)]
        var text = roff(argument.abstract ?? "")
        if let discussion = argument.discussion, !discussion.isEmpty { text += "\n" + roff(discussion) }
        if let values = argument.allValues, !values.isEmpty { text += "\nValues: " + values.map(roff).joined(separator: ", ") + "." }
        if let value = argument.defaultValue, !value.isEmpty { text += "\nDefault: " + roff(value) + "." }
        lines.append(text)
    }
    return lines
}

func manual(_ info: ToolInfo, version: String) -> String {
    let root = info.command
    let name = root.commandName
    let subcommands = (root.subcommands ?? []).filter { $0.shouldDisplay != false && $0.commandName != "help" }
    var lines = [
        ".\\\" \(name)(1), generated by lifecycle-manual from \(name) --experimental-dump-help: do not edit.",
        ".\\\" Regenerate with: make man",
        ".TH \(name.uppercased().replacing("-", with: "\\-")) 1 \"\" \"AppLifecycle \(roff(version))\" \"User Commands\"",
        ".SH NAME",
        "\(bold(name)) \\- \(roff(root.abstract ?? ""))",
        ".SH SYNOPSIS",
    ]
    for command in subcommands {
        lines += [".PP", ([bold("\(name) \(command.commandName)")] + shown(command).map(synopsisItem)).joined(separator: " ")]
    }
    lines += [".PP", "\(bold(name)) \(bold("help")) [\(italic("subcommand"))]", ".PP", "\(bold(name)) \(bold("--help"))"]
    lines += [".SH DESCRIPTION", roff(root.abstract ?? "")]
    lines += [".PP", description]
    lines += [".PP", "Every subcommand takes \(bold("-h")), \(bold("--help")): show its help and exit."]
    lines.append(".SH COMMANDS")
    for command in subcommands {
        lines += [".SS \"\(roff(name)) \(roff(command.commandName))\"", roff(command.abstract ?? "")]
        if let discussion = command.discussion, !discussion.isEmpty { lines += [".PP", roff(discussion)] }
        lines += argumentList(shown(command))
    }
    lines += exitStatus(root.discussion ?? "")
    lines += sections
    return lines.joined(separator: "\n") + "\n"
}

/// What the tool is for, beyond its one-line abstract.
let description = """
    A host process runs one application's life cycle as iOS does \\(em states, scenes, transitions, time
    budgets, background tasks, notifications coalesced while suspended, state preservation, Handoff \\(em
    and loads observer plugins (shared objects built against \\fIlifecycle.h\\fR) into it, in its own
    process or each in a process of its own (\\fB\\-\\-isolate\\fR). Actions come from a scenario file, the
    prompt, the control socket (\\fBlifecycle\\-host send\\fR) and the operating system (signals, memory
    pressure, clock steps). Every event is written to a trace, as text or JSON lines.
    """

/// EXIT STATUS from the root command's discussion (`HostExit.summary`): a line that starts with a
/// number is an entry (`.TP`), any other line a paragraph.
func exitStatus(_ discussion: String) -> [String] {
    var lines = [".SH \"EXIT STATUS\""]
    for line in discussion.split(separator: "\n") {
        let text = line.drop { $0 == " " }
        if let space = text.firstIndex(of: " "), Int(text[..<space]) != nil {
            lines += [".TP", bold(String(text[..<space])), roff(String(text[space...].drop { $0 == " " }))]
        } else {
            lines += [".PP", roff(String(text))]
        }
    }
    return lines
}

/// ENVIRONMENT, FILES, EXAMPLES and SEE ALSO: the same for every version (docs/host.md has the detail).
let sections: [String] = [
    ".SH ENVIRONMENT",
    ".TP", bold("XDG_RUNTIME_DIR"), "The control socket's folder: \\fI$XDG_RUNTIME_DIR/lifecycle\\-host.sock\\fR.",
    ".TP", bold("TMPDIR"), "Without \\fBXDG_RUNTIME_DIR\\fR, the socket is \\fI${TMPDIR:\\-/tmp}/lifecycle\\-host\\-UID/lifecycle\\-host.sock\\fR (a folder of mode 0700 it makes); temporary files of \\fBdemo\\fR too.",
    ".TP", bold("XDG_CACHE_HOME") + ", " + bold("HOME"),
    "The plugin registry, which remembers what scanning each plugin file found: \\fI$XDG_CACHE_HOME/lifecycle\\-host/plugin\\-registry\\fR, else \\fI$HOME/.cache/lifecycle\\-host/plugin\\-registry\\fR; without either, nothing is remembered.",
    ".TP", bold("NOTIFY_SOCKET") + ", " + bold("WATCHDOG_USEC") + ", " + bold("WATCHDOG_PID"),
    "Set by systemd for a service of Type=notify: the host reports READY=1, STOPPING=1 and its keep\\-alive (taken out of the environment its plugins see).",
    ".TP", bold("LC_PLUGIN_RUNNER"), "The plugin runner (\\fBlifecycle\\-plugin\\-runner\\fR) the host, or a program linking \\fBliblifecycle\\fR, starts for an isolated plugin, before the one an installed host and library record (\\fIPREFIX/lib/lifecycle/lifecycle\\-plugin\\-runner\\fR) or the one beside them in a build folder.",
    ".TP", bold("NO_COLOR"), "Set: the text trace is never coloured.",
    ".SH FILES",
    ".TP", italic("PREFIX/lib/lifecycle/examples/"), "The example plugins the installed \\fBlifecycle\\-host demo\\fR runs.",
    ".TP", italic("PREFIX/lib/lifecycle/lifecycle-plugin-runner"), "The plugin runner the installed host and library start for an isolated plugin (\\fB\\-\\-isolate\\fR); started by a host only.",
    ".TP", italic("PREFIX/share/doc/lifecycle/"), "The documentation: \\fIhost.md\\fR (this command in full), \\fIlifecycle.md\\fR, \\fIwriting\\-a\\-plugin.md\\fR, \\fIc\\-api.md\\fR, and example scenarios in \\fIscenarios/\\fR.",
    ".TP", italic("PREFIX/include/lifecycle.h") + ", " + italic("PREFIX/lib/liblifecycle.so"),
    "The C ABI plugins and programs build against (\\fBpkg\\-config \\-\\-cflags \\-\\-libs lifecycle\\fR).",
    ".TP", italic("$XDG_CACHE_HOME/lifecycle-host/plugin-registry"), "See ENVIRONMENT.",
    ".SH EXAMPLES",
    "Run the bundled example plugins through every sequence:",
    ".PP", ".RS", ".nf", "lifecycle\\-host demo", ".fi", ".RE",
    ".PP", "Run two plugins through a scenario, with the JSON trace, drawing the timeline:",
    ".PP", ".RS", ".nf", "lifecycle\\-host run \\-\\-plugin ./libmine.so \\-\\-plugin\\-dir /opt/vendor/plugins \\\\",
    "    \\-\\-script launch.scenario \\-\\-trace json \\-\\-timeline run.svg", ".fi", ".RE",
    ".PP", "Validate a plugin before shipping it:",
    ".PP", ".RS", ".nf", "lifecycle\\-host validate ./libmine.so", ".fi", ".RE",
    ".PP", "Send a memory warning to a running host, then ask for its state:",
    ".PP", ".RS", ".nf", "lifecycle\\-host send memory\\-warning critical", "lifecycle\\-host status", ".fi", ".RE",
    ".SH \"SEE ALSO\"",
    "\\fBpkg\\-config\\fR(1), \\fBsystemd.service\\fR(5).",
    "The command line, scenarios, the trace and the control socket are described in",
    "\\fIdocs/host.md\\fR, the life cycle in \\fIdocs/lifecycle.md\\fR, writing a plugin in",
    "\\fIdocs/writing\\-a\\-plugin.md\\fR and the C library in \\fIdocs/c\\-api.md\\fR: installed under",
    "\\fIPREFIX/share/doc/lifecycle/\\fR by \\fBmake install\\fR.",
]

func fail(_ message: String) -> Never {
    fputs("lifecycle-manual: \(message)\n", stderr)
    exit(1)
}

var arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2, arguments.removeFirst() == "--version", let version = arguments.first, !version.isEmpty else {
    fail("usage: lifecycle-host --experimental-dump-help | lifecycle-manual --version VERSION > lifecycle-host.1")
}
var input: [UInt8] = []
var buffer = [UInt8](repeating: 0, count: 65536)
while true {
    let count = read(STDIN_FILENO, &buffer, buffer.count)
    if count < 0, errno == EINTR { continue }
    guard count >= 0 else { fail("reading standard input: \(String(cString: strerror(errno)))") }
    if count == 0 { break }
    guard input.count + count <= 16 << 20 else { fail("standard input is over 16 MiB: not a command description") }
    input += buffer[..<count]
}
let info: ToolInfo
do {
    info = try JSONDecoder().decode(ToolInfo.self, from: Data(input))
} catch {
    fail("standard input is not ArgumentParser's --experimental-dump-help output: \(error)")
}
guard info.serializationVersion == 0 else {
    fail("ToolInfo serialization version \(info.serializationVersion); this generator reads version 0")
}
fputs(manual(info, version: version), stdout)
