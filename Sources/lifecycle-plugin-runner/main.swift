// `lifecycle-plugin-runner`: the isolated plugins' processes (docs/host.md, "Isolated plugins"). Started
// by a host only — `lifecycle-host`, or a program linking liblifecycle.so — never by hand:
//
//   lifecycle-plugin-runner plugin-runner-server --fd 3              the runners' fork server (RunnerServer)
//   lifecycle-plugin-runner plugin-runner --fd N --progress-fd M     one runner (the server's sanitizer builds exec it)
//
// An executable of its own, not a role of lifecycle-host: it links the runner's code and the Swift
// runtime only (no command-line parser, no Foundation), so that its server starts, and copies itself into
// each runner, with as little to map, relocate and copy as a process can have. The arguments are read by
// hand; anything but these exact forms is a usage error (64).
@preconcurrency import Glibc
import PluginHost

/// A descriptor number given on the command line: 3 or more (0 to 2 are the standard ones).
func descriptor(_ text: String) -> Int32? {
    guard let value = Int32(text), value >= 3 else { return nil }
    return value
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case RunnerServer.serverCommand?:
    guard arguments.count == 3, arguments[1] == "--fd", let socket = descriptor(arguments[2]) else { break }
    exit(PluginRunner.serve(socket: socket))
case PluginRunner.command?:
    guard arguments.count == 5, arguments[1] == "--fd", arguments[3] == "--progress-fd",
          let socket = descriptor(arguments[2]), let progress = descriptor(arguments[4]), progress != socket
    else { break }
    exit(PluginRunner.main(socket: socket, progress: progress))
default:
    break
}
fputs("""
    lifecycle-plugin-runner: started by a host only, to run isolated plugins (docs/host.md, "Isolated plugins"):
      lifecycle-plugin-runner \(RunnerServer.serverCommand) --fd N
      lifecycle-plugin-runner \(PluginRunner.command) --fd N --progress-fd M

    """, stderr)
exit(64)
