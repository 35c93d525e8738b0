import CLifecycleSystem
@preconcurrency import Glibc
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

    /// Runs `lifecycle-host` (this executable) with `arguments`, standard input from /dev/null,
    /// reading its three outputs until they end; past `deadline` its process group is killed.
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
        var buffer = [UInt8](repeating: 0, count: 65536)
        while live.contains(true) {
            let now = lcs_monotonic_ns()
            if drainUntil == nil, now >= end {
                result.timedOut = true
                _ = kill(-pid, SIGKILL)
                _ = kill(pid, SIGKILL)
                drainUntil = now + 2_000_000_000  // what escaped the group may hold a pipe: stop reading then
            }
            if let drainUntil, now >= drainUntil { break }
            var fds = pipes.indices.map { pollfd(fd: live[$0] ? pipes[$0][0] : -1, events: Int16(POLLIN), revents: 0) }
            let wait = Int32(min(((drainUntil ?? end) - min(now, drainUntil ?? end)) / 1_000_000 + 1, 1000))
            if poll(&fds, nfds_t(fds.count), wait) < 0, errno != EINTR { break }
            for index in fds.indices where live[index] && fds[index].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(pipes[index][0], $0.baseAddress, $0.count) }
                if n < 0, errno == EAGAIN || errno == EINTR { continue }
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
        result.status = ChildProcess.reap(pid, within: .seconds(2))
        result.records = reader.records
        return result
    }
}
