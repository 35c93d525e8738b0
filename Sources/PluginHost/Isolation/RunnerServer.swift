import AppLifecycle
import CLifecycleSystem
import Glibc
import LifecycleC
import LifecycleRunLoop
import Synchronization

/// The plugin runners' fork server: how every isolated plugin's process is made.
///
/// Starting a runner with `exec` costs a whole Swift process start each time (the dynamic loader,
/// the Swift runtime: ~3 ms of CPU). Instead, the first runner a thread asks for starts one server
/// (`lifecycle-plugin-runner plugin-runner-server --fd 3`, with `ChildProcess.spawn`, so with a fresh address
/// space: a runner learns nothing of the host's memory, layout or secrets), and every runner after
/// is a copy of that server made by `clone(CLONE_PARENT)` — a fork whose child is the *caller's*
/// child, not the server's (`lcs_runner_server`): the caller waits for it, hears its `SIGCHLD`, and
/// its death kills it (`PR_SET_PDEATHSIG`), exactly as a spawned runner. The copy gets the asking
/// thread's working folder and CPU affinity, and runs the runner on a thread of its own
/// (`lcs_run_on_new_thread`), so that glibc's and Swift's per-thread state (the thread id they cache,
/// the random state) are its own, not the server's. Runners are copies of one server, so they share
/// its address layout among themselves.
///
/// The server is single-threaded: before its first fork it runs the command's own dispatch and makes
/// what every runner would otherwise make for itself (`Application.prepareForCopies`), no thread;
/// it lives as long as the thread that started it (its parent-death signal; a thread's runners die
/// with that thread too), or until its socket closes. One server per thread that starts runners,
/// because the parent of a runner — whose end kills it — is that thread. A server found gone is
/// reaped (at the next start or prepare) and replaced; one that took a request and did not answer is
/// ended, and that start fails (the runner it may have made sees its socket close and ends).
///
/// Built with a sanitizer, the copy `exec`s the runner instead (the sanitizers' runtimes keep
/// threads and locks a fork without `exec` does not carry over): the same processes, slower.
///
/// Several runners at once (`startSeveral`, the host's start of its isolated plugins) are asked back
/// to back, up to `window` requests ahead of their answers: the server makes one after another
/// without waiting for the host between two.
///
/// [thread-safe]: one lock over the table of servers, held through a start (one request and its
/// answer, ~0.2 ms, at most 2 s each; a server's own start, ~3 ms, the first time).
package enum RunnerServer {
    private struct Server {
        let pid: pid_t
        let fd: Int32
        let runner: String
    }

    /// The servers, by the thread that started each (its kernel thread id: reused only once the pid
    /// counter wraps, unlike a thread pointer, which glibc gives a new thread as soon as the old ends).
    private static let servers = Mutex<[pid_t: Server]>([:])

    /// How long an answer may take before the server is taken for stuck.
    static let answerLimitMilliseconds: Int32 = 2_000

    /// Starts the calling thread's server for `runner` now, if it has none, so that its start overlaps
    /// the caller's other work; its environment is this process's without `withoutVariables`. A
    /// failure is left for `start` to report.
    static func prepare(runner: String, withoutVariables: [String] = []) {
        servers.withLock { table in
            reapGone(in: &table)
            _ = try? server(for: runner, in: &table, withoutVariables: withoutVariables)
        }
    }

    /// How many requests `startSeveral` sends ahead of their answers.
    static let window = 8

    /// A runner for each of `requests` (as `start`: a child of the calling thread, handed its
    /// descriptors, born in its cgroup), asked of the calling thread's server back to back — up to
    /// `window` requests ahead of their answers — so that the server makes them one after another
    /// instead of waiting for this thread between two.
    /// - Returns: each request's pid, or nil for one that did not start (the caller starts it again
    ///   with `start`, which says why). A server that breaks or does not answer is ended, and what it
    ///   had not answered is nil.
    static func startSeveral(runner: String, requests: [(socket: Int32, progress: Int32, cgroup: PluginCgroup?)]) -> [pid_t?] {
        var pids = [pid_t?](repeating: nil, count: requests.count)
        guard !requests.isEmpty else { return pids }
        let folders = requests.map { $0.cgroup?.openFolder() ?? -1 }
        defer { for folder in folders where folder >= 0 { close(folder) } }
        servers.withLock { table in
            reapGone(in: &table)
            guard let server = try? server(for: runner, in: &table) else { return }
            var inFlight: [Int] = []  // the requests asked and not yet answered, in order
            var next = 0
            var asking = true
            while true {
                while asking, next < requests.count, inFlight.count < window {
                    let index = next
                    next += 1
                    let request = requests[index]
                    if request.cgroup != nil && folders[index] < 0 { continue }  // its own start says why
                    guard lcs_runner_server_send(server.fd, request.socket, request.progress, folders[index]) == 0 else {
                        asking = false  // the answers already due are still read
                        break
                    }
                    inFlight.append(index)
                }
                guard !inFlight.isEmpty else { break }
                let index = inFlight.removeFirst()
                let answer = lcs_runner_server_answer(server.fd, answerLimitMilliseconds)
                if answer > 0 {
                    pids[index] = pid_t(answer)
                    continue
                }
                switch -answer {
                case EPIPE, ECONNRESET, ETIMEDOUT, EPROTO:
                    // Gone or stuck: a runner it may have made for what it took is lost (it sees its
                    // socket close and ends); the server is never asked again.
                    inFlight.removeAll()
                    asking = false
                default:
                    break  // this one's clone failed; the next is answered as usual
                }
            }
            if !asking { retire(server, in: &table) }
        }
        // The runner makes its group itself; this is for the moment before it has.
        for pid in pids { if let pid { _ = setpgid(pid, pid) } }
        return pids
    }

    /// Ends every server of this process (their runners are not touched: they are the caller's
    /// children, not the servers'); the next start starts a new one. For a process that has no more
    /// runners to start and will check what it left running (`validate` after its scan).
    static func stopAll() {
        servers.withLock { table in
            for server in table.values { retire(server, in: &table) }
        }
    }

    /// A new runner process (`lifecycle-plugin-runner`, a child of the calling thread), handed
    /// copies of `socket` (as its descriptor 3) and `progress` (as 4), leading a process group of its
    /// own, born in `cgroup` (nil: the server's). A server found gone is replaced, once.
    /// - Returns: its pid. - Throws: what failed, in words; `cloneFailure` when the system would not
    ///   make the process.
    static func start(runner: String, socket: Int32, progress: Int32, cgroup: PluginCgroup?) throws(IsolationStartError) -> pid_t {
        let folder = cgroup?.openFolder() ?? -1
        defer { if folder >= 0 { close(folder) } }
        if cgroup != nil && folder < 0 {
            throw IsolationStartError("cannot open the plugin's cgroup: \(String(cString: strerror(errno)))")
        }
        let pid = try servers.withLock { (table) throws(IsolationStartError) -> pid_t in
            reapGone(in: &table)
            var attempt = 0
            while true {
                attempt += 1
                let server = try server(for: runner, in: &table)
                let sent = lcs_runner_server_send(server.fd, socket, progress, folder)
                if sent == -EPIPE || sent == -ECONNRESET || sent == -ENOTCONN {
                    // The server is gone and took nothing: replace it and ask again, once.
                    retire(server, in: &table)
                    if attempt < 2 { continue }
                    throw IsolationStartError("the plugin runner server \(runner) is gone: \(String(cString: strerror(-sent)))")
                }
                if sent < 0 { throw IsolationStartError("cannot ask the plugin runner server: \(String(cString: strerror(-sent)))") }
                let answer = lcs_runner_server_answer(server.fd, answerLimitMilliseconds)
                if answer > 0 { return pid_t(answer) }
                switch -answer {
                case EPIPE, ECONNRESET, ETIMEDOUT, EPROTO:
                    // It took the request and may have made a runner whose pid is lost (it sees its
                    // socket close and ends): never asked again with the same socket.
                    retire(server, in: &table)
                    throw IsolationStartError("the plugin runner server \(runner) did not answer: \(String(cString: strerror(-answer)))")
                case let failure:
                    throw IsolationStartError("cannot start a plugin runner: clone failed: \(String(cString: strerror(failure)))",
                                              cloneFailure: failure)
                }
            }
        }
        // The runner makes its group itself; this is for the moment before it has.
        _ = setpgid(pid, pid)
        return pid
    }

    /// The calling thread's server for `runner`, started when there is none (or one for another runner).
    private static func server(for runner: String, in table: inout [pid_t: Server],
                               withoutVariables: [String] = []) throws(IsolationStartError) -> Server {
        let thread = lcs_gettid()
        if let server = table[thread] {
            if server.runner == runner { return server }
            retire(server, in: &table)
        }
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw IsolationStartError("socketpair failed: \(String(cString: strerror(errno)))")
        }
        defer { close(pair[1]) }
        let pid: pid_t
        do {
            pid = try ChildProcess.spawn([runner, serverCommand, "--fd", "3"], descriptors: [(3, pair[1])], withoutVariables: withoutVariables)
        } catch {
            close(pair[0])
            throw IsolationStartError("cannot start the plugin runner \(runner): \(error.reason)")
        }
        let server = Server(pid: pid, fd: pair[0], runner: runner)
        table[thread] = server
        return server
    }

    /// The hidden command of the runner executable that serves (`PluginRunner.serve`).
    package static let serverCommand = "plugin-runner-server"

    /// Ends `server` (closing its socket ends it; SIGKILL if it does not go within 1 s) and forgets it.
    private static func retire(_ server: Server, in table: inout [pid_t: Server]) {
        close(server.fd)
        _ = ChildProcess.reap(server.pid, within: .seconds(1))
        for (thread, entry) in table where entry.pid == server.pid { table[thread] = nil }
    }

    /// Reaps the servers that have ended (their thread ended, or they were killed), so that none stays a
    /// zombie. One `waitid` a server: there is one a thread that starts runners.
    private static func reapGone(in table: inout [pid_t: Server]) {
        // `retire` reaps an ended server at once (and one that is no child of this process, too).
        for server in table.values where lcs_child_has_exited(server.pid) != 0 { retire(server, in: &table) }
    }
}

extension PluginRunner {
    /// The fork server's whole life (`lifecycle-plugin-runner plugin-runner-server --fd 3`, started by
    /// `RunnerServer`): serves on `socket` until the host closes it. In each process it makes, runs
    /// the runner (`main`) on a new thread and returns its status. - Returns: the exit status.
    package static func serve(socket: Int32) -> Int32 {
        _ = lcs_die_with_parent()
        if getppid() == 1 { return 0 }  // the host went before the request took
        lcs_close_from(socket + 1)
        // What every runner would otherwise make for itself, made once here (no thread starts).
        Application.prepareForCopies()
        _ = FFIDelegates.functions
        _ = FFIDelegates.symbolNames
        let prepared = PluginRunner.typesOfAStart()
        let served: Int32
        if lcs_built_with_sanitizer() != 0 {
            served = lcs_runner_server(socket, "/proc/self/exe", PluginRunner.command)
        } else {
            served = lcs_runner_server(socket, nil, nil)
        }
        withExtendedLifetime(prepared) {}
        guard served == 0 else { return 0 }  // the server: the host closed its end
        renameProcess(to: "plugin-runner")
        // A runner, the host's child: descriptors 3 and 4 are its own.
        return lcs_run_on_new_thread { PluginRunner.main(socket: 3, progress: 4) }
    }

    /// The types whose metadata a runner's start makes by name (generic types instantiated at run time:
    /// each a demangling and a search of the conformances, 10,000 to 110,000 instructions the first time,
    /// and pages written that each copy would duplicate), made here so that the server's copies find
    /// them made: the answer of the plugin's init, the table of its delegate functions' invokers.
    static func typesOfAStart() -> [Any.Type] {
        var invokers: [RunnerDelegates.Invoker?] = []
        invokers.append(nil)
        return [Result<LoadedPlugin, PluginRefusal>.self, type(of: invokers), type(of: QuotaKind.allCases)]
    }

    /// Makes `ps` show this process as `… NAME` (a runner copied from the server): the arguments after the first are overwritten in place (their bytes are what
    /// `/proc/PID/cmdline` shows); nothing happens when they have too little room.
    private static func renameProcess(to name: String) {
        let argv = CommandLine.unsafeArgv
        guard CommandLine.argc >= 2, let first = argv[1] else { return }
        var end = first
        for index in 1..<Int(CommandLine.argc) {
            guard let argument = argv[index] else { break }
            end = max(end, argument + strlen(argument))
        }
        let room = end - first
        guard room >= name.utf8.count else { return }
        memset(first, 0, room)
        name.withCString { _ = memcpy(first, $0, name.utf8.count) }
    }
}
