import CLifecycleSystem
import Glibc
import LifecycleRunLoop

/// Starting and ending the host's helper processes — the runners' server (`RunnerServer`, which makes
/// the isolated plugins' processes), `validate`'s steps — the one way: `posix_spawn` of an executable with chosen descriptors, in a process group of its own
/// (the terminal's Ctrl-C and Ctrl-Z go to the host), an empty signal mask, default signal actions,
/// and the Swift runtime's backtracer off (a plugin's fatal signal is the host's to report, at once).
package enum ChildProcess {
    /// Starts `arguments[0]` with `arguments`; each `descriptors` pair gives the child descriptor
    /// `target` a copy of this process's `source` (every other descriptor of this process should be
    /// close-on-exec). Its environment is this process's without `withoutVariables` (and with the
    /// backtracer off). - Returns: the pid. - Throws: the reason in words.
    package static func spawn(_ arguments: [String], descriptors: [(target: Int32, source: Int32)],
                              withoutVariables: [String] = []) throws(ChildProcessError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, source) in descriptors { posix_spawn_file_actions_adddup2(&actions, source, target) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        // The Swift runtime's backtracer would catch the plugin's fatal signals in the child (and let
        // a raised one return); the host reports them instead.
        var environment: [UnsafeMutablePointer<CChar>?] = [strdup("SWIFT_BACKTRACE=enable=no")]
        var entry = environ
        while let variable = entry.pointee {
            if strncmp(variable, "SWIFT_BACKTRACE=", 16) != 0 && !withoutVariables.contains(where: { Self.names(variable, $0) }) {
                environment.append(strdup(variable))
            }
            entry += 1
        }
        environment.append(nil)
        defer { for pointer in environment { free(pointer) } }
        var pid = pid_t()
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, &environment)
        guard status == 0 else { throw ChildProcessError(program: arguments[0], reason: String(cString: strerror(status))) }
        return pid
    }

    /// Whether the environment entry `entry` ("NAME=value") sets `name`.
    private static func names(_ entry: UnsafeMutablePointer<CChar>, _ name: String) -> Bool {
        name.withCString { name in
            let length = strlen(name)
            return strncmp(entry, name, length) == 0 && entry[length] == CChar(UInt8(ascii: "="))
        }
    }

    /// Waits for `pid` to end, up to `limit`; after that it is killed (SIGKILL) and waited for.
    /// - Returns: the `waitpid` status (0 when it cannot be waited for: not a child of this process).
    package static func reap(_ pid: pid_t, within limit: Duration) -> Int32 {
        let deadline = lcs_monotonic_ns() + limit.nanosecondCount
        var status: Int32 = 0
        while true {
            guard let result = try? systemCall("waitpid", { waitpid(pid, &status, WNOHANG) }) else { return 0 }
            if result == pid { return status }
            if lcs_monotonic_ns() >= deadline {
                _ = kill(pid, SIGKILL)
                _ = try? systemCall("waitpid") { waitpid(pid, &status, 0) }
                return status
            }
            usleep(500)
        }
    }
}

/// Why a helper process could not be started.
package struct ChildProcessError: Error, CustomStringConvertible {
    package let program: String
    /// The system's words (`strerror`).
    package let reason: String

    package init(program: String, reason: String) {
        self.program = program
        self.reason = reason
    }

    package var description: String { "cannot start \(program): \(reason)" }
}
