@preconcurrency import Glibc
import LifecycleRunLoop

/// Where the trace goes (`--trace-output`), and, with it, everything else the process writes to
/// standard output.
enum TraceOutput {
    /// The file descriptor the trace is written to.
    ///
    /// - `path` nil (or `-` on the command line): standard output. With the JSON trace, file
    ///   descriptor 1 is then pointed at standard error (`dup2`) and the trace keeps a duplicate of the
    ///   original standard output (close-on-exec): whatever else writes to standard output — plugins,
    ///   the processes of isolated plugins and scans, which inherit it — goes to standard error, and
    ///   every line of standard output is one JSON object. Called before any plugin is loaded.
    /// - a path: that file, created (mode 0644) or truncated, close-on-exec; standard output is left
    ///   to the plugins.
    static func open(_ path: String?, format: TraceWriter.Format) -> Result<Int32, HostFailure> {
        if let path {
            do throws(SystemCallError) {
                return .success(try systemCall("open") { Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) })
            } catch {
                return .failure(HostFailure("cannot open the trace output \(path): \(String(cString: strerror(error.errno)))"))
            }
        }
        guard format == .json else { return .success(STDOUT_FILENO) }
        fflush(stdout)
        let trace = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3)
        guard trace >= 0, dup2(STDERR_FILENO, STDOUT_FILENO) == STDOUT_FILENO else {
            return .failure(HostFailure("cannot keep standard output for the trace: \(String(cString: strerror(errno)))"))
        }
        return .success(trace)
    }
}
