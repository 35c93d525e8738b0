import Foundation

/// A program run to its end with every wait bounded: its standard output and error are read until
/// they end, but never past the deadlines, so that a test of a host that hangs, or whose outputs a
/// leftover process keeps open, fails instead of waiting for ever.
public struct BoundedRun {
    /// The exit status (128 + the signal when a signal ended it); nil when the program was still
    /// running at `timeout` (it was then killed).
    public var status: Int32?
    /// Standard output as read (the JSON trace of `run --trace json`).
    public var output = ""
    /// Standard error as read.
    public var errorText = ""
    /// Seconds from the start until the program exited (or was killed).
    public var exitedAfter = 0.0
    /// Seconds from the exit until both outputs ended; nil when they were still open `drain` seconds
    /// after it (something else keeps them open).
    public var outputsEndedAfterExit: Double?

    /// The output's lines that are JSON objects, parsed.
    public var records: [[String: Any]] {
        output.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Runs `program` with `arguments` (standard input /dev/null; `XDG_CACHE_HOME` as `CBuild.run`
    /// sets it). Waits at most `timeout` seconds for it to exit (SIGKILL then), then at most `drain`
    /// seconds for its outputs to end. Started with `posix_spawn` and reaped here with `waitpid`
    /// (Foundation's `Process` is not used: its wait for an exit can miss one and never return).
    public static func run(_ program: String, _ arguments: [String], environment: [String: String] = [:],
                           timeout: Double, drain: Double = 3) throws -> BoundedRun {
        var variables = ProcessInfo.processInfo.environment
        variables["XDG_CACHE_HOME"] = CBuild.testCacheFolder
        variables.merge(environment) { $1 }
        var outputs: [[Int32]] = []
        for _ in 0..<2 {
            var pair: [Int32] = [-1, -1]
            guard pipe(&pair) == 0 else { throw POSIXError(.EMFILE) }
            for fd in pair { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            outputs.append(pair)
        }
        defer { for pair in outputs { for fd in pair where fd >= 0 { close(fd) } } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outputs[0][1], 1)
        posix_spawn_file_actions_adddup2(&actions, outputs[1][1], 2)
        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let started = Date()
        let spawned = posix_spawn(&pid, program, &actions, nil, argv, envp)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
        // The write ends are the child's alone now, or the outputs never end.
        for index in outputs.indices {
            close(outputs[index][1])
            outputs[index][1] = -1
            _ = fcntl(outputs[index][0], F_SETFL, fcntl(outputs[index][0], F_GETFL) | O_NONBLOCK)
        }
        var open = [true, true]
        var texts = [Data(), Data()]
        var result = BoundedRun()
        var exitedAt: Date?
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let now = Date()
            if exitedAt == nil {
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid {
                    exitedAt = now
                    result.exitedAfter = now.timeIntervalSince(started)
                    result.status = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
                } else if now.timeIntervalSince(started) >= timeout {
                    kill(pid, SIGKILL)
                    while waitpid(pid, &status, 0) < 0, errno == EINTR {}
                    exitedAt = Date()
                    result.exitedAfter = exitedAt!.timeIntervalSince(started)
                }
            }
            if let exitedAt {
                if !open.contains(true) {
                    result.outputsEndedAfterExit = now.timeIntervalSince(exitedAt)
                    break
                }
                if now.timeIntervalSince(exitedAt) >= drain { break }
            }
            var polls = outputs.indices.map { pollfd(fd: open[$0] ? outputs[$0][0] : -1, events: Int16(POLLIN), revents: 0) }
            _ = poll(&polls, nfds_t(polls.count), 20)
            for index in outputs.indices where open[index] {
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(outputs[index][0], $0.baseAddress, $0.count) }
                    if n > 0 {
                        texts[index].append(contentsOf: buffer[0..<n])
                        continue
                    }
                    if n == 0 { open[index] = false }
                    break
                }
            }
        }
        result.output = String(decoding: texts[0], as: UTF8.self)
        result.errorText = String(decoding: texts[1], as: UTF8.self)
        return result
    }
}
