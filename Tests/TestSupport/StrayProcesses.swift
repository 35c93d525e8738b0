import Foundation

/// Processes a hostile plugin leaves behind, and how a test finds and ends them: the C a fixture
/// includes to start them, and the checks a test makes on them afterwards.
///
/// A stray spins at 100 % CPU under the name `lc-stray` (`PR_SET_NAME`), keeping every descriptor
/// of the plugin's process (an isolated plugin's socket, the host's standard output and error). It
/// writes its pid to `FOLDER/stray-PID` (atomically) before it spins, and the plugin waits for that
/// file (at most 2 s), so that a test reads every stray's pid once the host is done.
public enum StrayProcesses {
    /// The name a stray runs under (`/proc/PID/comm`).
    public static let name = "lc-stray"

    /// C defining `static void start_stray(int leave_group)`: forks a stray that stays in the
    /// plugin's process group (`leave_group` 0), or a daemon that leaves it (1: fork, `setsid()`,
    /// fork again, the middle process exits at once), and returns once the stray has recorded its pid.
    public static func source(folder: String) -> String {
        """
        #include <errno.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <sys/prctl.h>
        #include <sys/wait.h>
        #include <unistd.h>
        static void start_stray(int leave_group) {
            int ready[2];
            if (pipe(ready) != 0) return;
            pid_t child = fork();
            if (child < 0) { close(ready[0]); close(ready[1]); return; }
            if (child == 0) {
                close(ready[0]);
                if (leave_group) {
                    if (setsid() < 0) _exit(1);
                    pid_t daemon = fork();
                    if (daemon != 0) _exit(daemon < 0);
                }
                prctl(PR_SET_NAME, "\(name)", 0, 0, 0);
                char path[512], temporary[520];
                snprintf(path, sizeof path, "\(folder)/stray-%d", (int)getpid());
                snprintf(temporary, sizeof temporary, "%s.tmp", path);
                FILE *file = fopen(temporary, "w");
                if (file) { fprintf(file, "%d\\n", (int)getpid()); fclose(file); rename(temporary, path); }
                pid_t me = getpid();
                if (write(ready[1], &me, sizeof me) != sizeof me) _exit(1);
                close(ready[1]);
                for (volatile unsigned long i = 0;; i++) {}
            }
            close(ready[1]);
            pid_t stray = 0;
            while (read(ready[0], &stray, sizeof stray) < 0 && errno == EINTR) {}
            close(ready[0]);
            if (leave_group) { int status; while (waitpid(child, &status, 0) < 0 && errno == EINTR) {} }
        }
        """
    }

    /// The pids the strays recorded in `folder`.
    public static func recorded(in folder: String) -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasPrefix("stray-") && !$0.hasSuffix(".tmp") }.compactMap { Int32($0.dropFirst(6)) }.sorted()
    }

    /// Whether `pid` is a stray still running: its name is the strays' and it is not a zombie.
    public static func isRunning(_ pid: Int32) -> Bool {
        guard let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
              comm.trimmingCharacters(in: .newlines) == name,
              let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(close, offsetBy: 2)...].prefix(1)
        return state != "Z" && state != "X"
    }

    /// The strays of `folder` still running, after waiting up to `grace` seconds for them to go.
    public static func running(in folder: String, grace: Double = 1) -> [Int32] {
        let deadline = Date().addingTimeInterval(grace)
        while true {
            let alive = recorded(in: folder).filter(isRunning)
            if alive.isEmpty || Date() >= deadline { return alive }
            usleep(10_000)
        }
    }

    /// Ends every stray of `folder` that still runs (a test's cleanup, whatever it found).
    public static func killAll(in folder: String) {
        for pid in recorded(in: folder) where isRunning(pid) { kill(pid, SIGKILL) }
    }
}
