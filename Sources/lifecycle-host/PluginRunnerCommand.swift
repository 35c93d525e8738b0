@preconcurrency import Glibc
import PluginHost

/// `lifecycle-host plugin-runner --fd N --progress-fd M`: the isolated plugin's process (hidden; the
/// host starts it, see docs/host.md "Isolated plugins"). Parsed by hand before anything else starts.
enum PluginRunnerCommand {
    static let name = "plugin-runner"

    /// Runs the role and returns the exit status; 64 (usage) for anything but the exact arguments.
    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count == 5, arguments[1] == "--fd", arguments[3] == "--progress-fd",
              let socket = Int32(arguments[2]), socket >= 3, let progress = Int32(arguments[4]), progress >= 3, progress != socket
        else {
            fputs("lifecycle-host plugin-runner: started by the host only (--fd N --progress-fd M)\n", stderr)
            return 64
        }
        return PluginRunner.main(socket: socket, progress: progress)
    }

    /// `lifecycle-host plugin-runner-server --fd 3`: the runners' fork server (hidden; see
    /// `RunnerServer`). Runs the role and returns the exit status; 64 (usage) for anything but the
    /// exact arguments.
    static func serve(_ arguments: [String]) -> Int32 {
        guard arguments.count == 3, arguments[1] == "--fd", let socket = Int32(arguments[2]), socket >= 3 else {
            fputs("lifecycle-host plugin-runner-server: started by the host only (--fd N)\n", stderr)
            return 64
        }
        return PluginRunner.serve(socket: socket)
    }
}
