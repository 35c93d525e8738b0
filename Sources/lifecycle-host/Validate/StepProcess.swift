import CLifecycleSystem
@preconcurrency import Glibc
import LifecycleRunLoop
import PluginHost

/// One validation step run to its end in a process of its own (`lifecycle-host validate-step …`,
/// started like an isolated plugin's runner, `ChildProcess`): its standard output (the JSON trace and
/// whatever the plugin printed), the tail of its standard error, its records (descriptor 3) and how
/// it ended.
struct StepResult {
    var records: [StepRecord] = []
    /// Standard output as written, at most `StepProcess.maximumOutput` bytes.
    var output: [UInt8] = []
    /// More was written than kept.
    var outputTruncated = false
    /// The last 4 KiB of standard error.
    var errorTail: [UInt8] = []
    /// The `waitpid` status.
    var status: Int32 = 0
    /// Killed by the validator at its deadline.
    var timedOut = false
    /// Processes the step's plugin started were still running when the step's process ended (killed
    /// then by the validator; what they held open was read no longer than `StepProcess.drain`).
    var leftRunning = false

    /// The signal that ended the process, if one did.
    var signal: Int32? {
        let signo = status & 0x7F
        return signo != 0 && signo != 0x7F ? signo : nil
    }

    /// The exit status, if it exited.
    var exitCode: Int32? { signal == nil ? (status >> 8) & 0xFF : nil }
}

enum StepProcess {
    /// Standard output kept from one step.
    static let maximumOutput = 16 << 20
    /// How long the outputs are read on after the step's process ended (or was killed at its
    /// deadline) and its leftovers were killed: what still holds them then is not waited for.
    static let drain: UInt64 = 1_000_000_000

    /// Runs `lifecycle-host` (this executable) with `arguments`, standard input from /dev/null,
    /// reading its three outputs until they end; past `deadline` its process group is killed.
    ///
    /// Bounded whatever the plugin starts: once the step's process has ended (seen at once through a
    /// pidfd), everything it left running is killed — the validator is a child subreaper
    /// (`becomeReaper`), so every process the plugin started, a double-forked daemon in a session of
    /// its own included, is below it by then — and the outputs are read for `drain` more at most.
    /// - Throws: the process could not be started.
    static func run(_ arguments: [String], deadline: Duration) throws(ChildProcessError) -> StepResult {
        var pipes: [[Int32]] = []
        defer { for pair in pipes { for fd in pair where fd >= 0 { close(fd) } } }
        for _ in 0..<3 {
            var pair: [Int32] = [-1, -1]
            guard pipe(&pair) == 0 else { throw ChildProcessError(program: "pipe", reason: String(cString: strerror(errno))) }
            for fd in pair { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            pipes.append(pair)
        }
        let null = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { if null >= 0 { close(null) } }
        let pid = try ChildProcess.spawn(["/proc/self/exe"] + arguments,
                                         descriptors: [(0, null), (1, pipes[0][1]), (2, pipes[1][1]), (3, pipes[2][1])])
        for index in pipes.indices {
            close(pipes[index][1])
            pipes[index][1] = -1
            _ = fcntl(pipes[index][0], F_SETFL, fcntl(pipes[index][0], F_GETFL) | O_NONBLOCK)
        }
        var result = StepResult()
        var reader = StepRecordReader()
        var live = [true, true, true]
        let end = lcs_monotonic_ns() + deadline.nanosecondCount
        var drainUntil: UInt64?
        var status: Int32?
        let exitWatch = lcs_pidfd_open(pid)
        defer { if exitWatch >= 0 { close(exitWatch) } }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while live.contains(true) {
            let now = lcs_monotonic_ns()
            if drainUntil == nil, now >= end {
                result.timedOut = true
                _ = kill(-pid, SIGKILL)
                _ = kill(pid, SIGKILL)
            }
            if status == nil, result.timedOut || lcs_child_has_exited(pid) == 1 {
                (status, result.leftRunning) = endStep(pid)
                drainUntil = lcs_monotonic_ns() + drain
            }
            if let drainUntil, lcs_monotonic_ns() >= drainUntil { break }
            var fds = pipes.indices.map { pollfd(fd: live[$0] ? pipes[$0][0] : -1, events: Int16(POLLIN), revents: 0) }
            fds.append(pollfd(fd: status == nil ? exitWatch : -1, events: Int16(POLLIN), revents: 0))
            let limit = drainUntil ?? end
            // Without a pidfd, the step's end is looked for every 100 ms. The wait is computed again
            // for each call (a retry after EINTR included).
            let polled = try? systemCall("poll") { () -> Int32 in
                let wait = Int32(min((limit - min(lcs_monotonic_ns(), limit)) / 1_000_000 + 1, exitWatch >= 0 ? 1000 : 100))
                return poll(&fds, nfds_t(fds.count), wait)
            }
            if polled == nil { break }
            for index in pipes.indices where live[index] && fds[index].revents != 0 {
                let n: Int
                do throws(SystemCallError) {
                    n = try systemCall("read") { buffer.withUnsafeMutableBytes { read(pipes[index][0], $0.baseAddress, $0.count) } }
                } catch {
                    if error.errno != EAGAIN { live[index] = false }
                    continue
                }
                guard n > 0 else {
                    live[index] = false
                    continue
                }
                buffer.withUnsafeBytes { bytes in
                    let chunk = UnsafeRawBufferPointer(rebasing: bytes[0..<n])
                    switch index {
                    case 0:
                        let room = max(0, maximumOutput - result.output.count)
                        result.output.append(contentsOf: chunk.prefix(room))
                        if n > room { result.outputTruncated = true }
                    case 1:
                        result.errorTail.append(contentsOf: chunk)
                        if result.errorTail.count > 4096 { result.errorTail.removeFirst(result.errorTail.count - 4096) }
                    default:
                        reader.append(chunk)
                    }
                }
            }
        }
        if status == nil { (status, result.leftRunning) = endStep(pid) }
        result.status = status ?? 0
        result.records = reader.records
        return result
    }

    /// The step's process `pid` has ended (or was just killed): kills what it left running — every
    /// descendant of the validator but the step (there is none other: the scan's runner was reaped;
    /// the step's orphans were re-parented here), then its process group — reaps the step, then
    /// those. - Returns: its `waitpid` status, and whether anything was left running.
    private static func endStep(_ pid: pid_t) -> (status: Int32, leftRunning: Bool) {
        // Dead before the walk (else it would count as a leftover), not reaped: its group's id stays its own.
        let dead = lcs_monotonic_ns() + 2_000_000_000
        while lcs_child_has_exited(pid) == 0, lcs_monotonic_ns() < dead { usleep(500) }
        let leftRunning = lcs_kill_descendants(getpid(), 64) > 0
        _ = kill(-pid, SIGKILL)
        let status = ChildProcess.reap(pid, within: .seconds(2))
        let deadline = lcs_monotonic_ns() + 1_000_000_000
        var ignored: Int32 = 0
        while lcs_monotonic_ns() < deadline {
            guard let reaped = try? systemCall("waitpid", { waitpid(-1, &ignored, WNOHANG) }) else { break }  // ECHILD: none left
            if reaped == 0 { usleep(1000) }
        }
        return (status, leftRunning)
    }

    /// Makes the validator a child subreaper, so that what a step's plugin starts stays below it
    /// whatever it does (a new session, a double fork) and is killed when the step ends. Call once,
    /// before the first step. [main-thread]
    static func becomeReaper() { _ = lcs_become_subreaper() }
}
