@preconcurrency import Glibc

// Processes for the benchmarks: spawning (the bench re-executes itself for jobs that need a fresh
// process, runs the host, cc and swiftc), waiting, timing a child from spawn to exit.

/// The variable a bench process reads to know it is a child with one job (each group its own format).
public let benchChildVariable = "LC_BENCH_CHILD"

/// Starts a process with standard output (and error, when `errorsToOutput` is set) to `output`; the
/// environment is this one's without `LC_BENCH_CHILD`, plus `extra` ("NAME=value").
public func spawn(_ program: String, _ arguments: [String], search: Bool = false, environment extra: [String] = [],
                  output: Int32? = nil, errorsToOutput: Bool = false) -> pid_t?
{
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if let output {
        posix_spawn_file_actions_adddup2(&actions, output, STDOUT_FILENO)
        if errorsToOutput { posix_spawn_file_actions_adddup2(&actions, output, STDERR_FILENO) }
        posix_spawn_file_actions_addclose(&actions, output)
    }
    var environment: [String] = []
    var index = 0
    while let entry = environ[index] {
        let text = String(cString: entry)
        if !text.hasPrefix(benchChildVariable + "=") { environment.append(text) }
        index += 1
    }
    environment += extra
    let argv = ([program] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup($0) } + [nil]
    defer {
        for pointer in argv { free(pointer) }
        for pointer in envp { free(pointer) }
    }
    var pid: pid_t = 0
    let status = search ? posix_spawnp(&pid, program, &actions, nil, argv, envp) : posix_spawn(&pid, program, &actions, nil, argv, envp)
    guard status == 0 else {
        warn("lifecycle-bench: cannot start \(program): \(String(cString: strerror(status)))")
        return nil
    }
    return pid
}

/// Waits for `pid`; its exit status, 128 + the signal that killed it, or -1.
public func waitExit(_ pid: pid_t) -> Int32 {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        if errno != EINTR { return -1 }
    }
    // WIFEXITED / WEXITSTATUS by hand (macros are not imported).
    return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
}

/// What `timedRun` saw: nanoseconds from just before the spawn to the first line holding the marker
/// and to the exit, the exit status and everything the child wrote.
public struct TimedRun {
    public var marker: UInt64?
    public var exit: UInt64
    public var status: Int32
    public var output: String
}

/// Spawns a process, reads its standard output to the end and waits for it, timing from just before
/// the spawn to the first line containing `marker` and to the exit.
public func timedRun(_ program: String, _ arguments: [String], environment: [String] = [], marker: String? = nil,
                     errorsToOutput: Bool = false) -> TimedRun?
{
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { return nil }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    let start = nowNanoseconds()
    guard let pid = spawn(program, arguments, environment: environment, output: fds[1], errorsToOutput: errorsToOutput) else {
        close(fds[0])
        close(fds[1])
        return nil
    }
    close(fds[1])
    var output: [UInt8] = []
    var markerTime: UInt64?
    let needle = marker.map { Array($0.utf8) }
    var searched = 0
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
        if n < 0 { if errno == EINTR { continue }; break }
        if n == 0 { break }
        output += chunk[0..<n]
        if let needle, markerTime == nil {
            if find(needle, in: Array(output[max(0, searched - needle.count)...])) != nil { markerTime = nowNanoseconds() - start }
            searched = output.count
        }
    }
    close(fds[0])
    let status = waitExit(pid)
    let exit = nowNanoseconds() - start
    return TimedRun(marker: markerTime, exit: exit, status: status, output: String(decoding: output, as: UTF8.self))
}

/// Runs a program to completion and returns its status; its output is shown only when it fails.
public func runQuietly(_ program: String, _ arguments: [String], search: Bool = true) -> Bool {
    guard let run = timedRun(program, arguments, errorsToOutput: true) else { return false }
    if run.status != 0 { warn("lifecycle-bench: \(([program] + arguments).joined(separator: " ")) failed (\(run.status)):\n\(run.output)") }
    return run.status == 0
}

/// This executable's path.
public func executablePath() -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buffer, Int(PATH_MAX))
    guard n > 0 else { return CommandLine.arguments[0] }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The folder of this executable (the build folder: the host, the runner and liblifecycle.so sit there).
public func executableFolder() -> String {
    let path = executablePath()
    return String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
}

/// The first index of `needle` in `haystack`.
public func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
    guard !needle.isEmpty, needle.count <= haystack.count else { return nil }
    outer: for start in 0...(haystack.count - needle.count) {
        for index in 0..<needle.count where haystack[start + index] != needle[index] { continue outer }
        return start
    }
    return nil
}

/// The rows another bench executable measured: runs it with `arguments` and reads its `row ` lines
/// (its progress goes to standard error, shown as it comes). A failure is reported and gives no rows.
public func rowsFromChild(_ program: String, _ arguments: [String]) -> [Row] {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { return [] }
    for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    guard let pid = spawn(program, arguments, output: fds[1]) else {
        close(fds[0])
        close(fds[1])
        return []
    }
    close(fds[1])
    var output: [UInt8] = []
    var rows: [Row] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    func take(final: Bool) {
        while let newline = output.firstIndex(of: 10) {
            let line = String(decoding: output[..<newline], as: UTF8.self)
            output.removeSubrange(...newline)
            if let row = Row(line: Substring(line)) {
                printRow(row)
                rows.append(row)
            }
        }
    }
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
        if n < 0 { if errno == EINTR { continue }; break }
        if n == 0 { break }
        output += chunk[0..<n]
        take(final: false)
    }
    close(fds[0])
    let status = waitExit(pid)
    if status != 0 { warn("lifecycle-bench: \(program) \(arguments.joined(separator: " ")) failed (status \(status))") }
    return rows
}
