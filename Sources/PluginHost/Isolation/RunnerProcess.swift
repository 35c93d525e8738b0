import CLifecycleSystem
import Glibc
import LifecycleRunLoop
import Synchronization

/// An isolated plugin's process: the runner executable in its plugin-runner role
/// (`lifecycle-plugin-runner`), made by the runners' fork server (`RunnerServer`) as a child of
/// the starting thread, with its end of the socket pair as descriptor 3 and the progress page as
/// descriptor 4.
///
/// The process gets its own process group (the terminal's Ctrl-C and Ctrl-Z go to the host, which
/// turns them into actions; the plugins hear of them as notifications), an empty signal mask and
/// default signal actions, and dies with the host (`PR_SET_PDEATHSIG`, set by the runner). What it
/// starts is contained (`ProcessContainment`): killing the process kills all of it, and so does the
/// process's end once it is reaped.
///
/// Its end is seen by itself, not only through the socket (which a child of the plugin may keep
/// open): `exitWatch` (a pidfd the loop watches) becomes readable, `hasExited` turns true.
///
/// The progress page is shared memory the runner writes and the host only reads: before it runs the
/// callback of the n-th frame the host sent, the runner stores n in `handling`; after, n in
/// `completed`. The host reads it to tell how far the process got (its deadlines) and which callback
/// it was running when it died. [loop-thread]
final class RunnerProcess: @unchecked Sendable {
    // @unchecked: used on the host's loop thread only.
    let pid: pid_t
    let channel: FrameChannel
    private let page: UnsafeMutableRawPointer
    /// Everything the process starts.
    let containment: ProcessContainment
    /// A descriptor that becomes readable when the process exits (a pidfd); -1 where the kernel has
    /// none (before Linux 5.3: `hasExited` is then asked at deadlines only).
    let exitWatch: Int32
    /// The `waitpid` status, once reaped.
    private(set) var exitStatus: Int32?

    static let pageSize = 4096

    private init(pid: pid_t, channel: FrameChannel, page: UnsafeMutableRawPointer, containment: ProcessContainment) {
        self.pid = pid
        self.channel = channel
        self.page = page
        self.containment = containment
        exitWatch = lcs_pidfd_open(pid)
    }

    deinit {
        if exitStatus == nil {
            kill()
            _ = reap(within: .seconds(1))
        }
        if exitWatch >= 0 { close(exitWatch) }
        munmap(page, Self.pageSize)
    }

    /// Whether the process has ended (reaped or not). One system call.
    var hasExited: Bool { exitStatus != nil || lcs_child_has_exited(pid) != 0 }

    /// The frame the runner says it is running (0: none yet). Hostile: check it before use.
    var handling: UInt64 { lcs_load_acquire_u64(page.assumingMemoryBound(to: UInt64.self)) }
    /// How many frames the runner says it has run. Hostile: check it before use.
    var completed: UInt64 { lcs_load_acquire_u64(page.assumingMemoryBound(to: UInt64.self) + 1) }

    /// Starts a runner, in a cgroup of its own when `cgroups` and the host can make one
    /// (`ProcessContainment`). - Throws: what failed, in words (no runner found, a system call).
    static func start(runner: String, cgroups: Bool, freezer: FreezerChoice) throws(IsolationStartError) -> RunnerProcess {
        let pieces = try Pieces(cgroups: cgroups, freezer: freezer)
        do throws(IsolationStartError) {
            do throws(IsolationStartError) {
                return pieces.finish(pid: try RunnerServer.start(runner: runner, socket: pieces.runnerEnd, progress: pieces.memory,
                                                                 cgroup: pieces.cgroup))
            } catch where pieces.cgroup != nil && error.cloneFailure.map(PluginCgroup.refusesBirths) == true {
                // The system would not start a process in the cgroup: without one, from now on.
                PluginCgroup.refuse()
                pieces.dropCgroup()
                return pieces.finish(pid: try RunnerServer.start(runner: runner, socket: pieces.runnerEnd, progress: pieces.memory,
                                                                 cgroup: nil))
            }
        } catch {
            pieces.discard()
            throw error
        }
    }

    /// Runners for `count` plugins at once, in cgroups of their own as `start` makes them, asked of the
    /// runners' server back to back (`RunnerServer.startSeveral`); `first(index, channel)` queues each
    /// one's first frames before its process is asked for, so that it finds them as it starts. nil for
    /// one that did not start: `start` starts it again, and says why.
    static func startSeveral(runner: String, count: Int, cgroups: Bool, freezer: FreezerChoice,
                             first: (Int, FrameChannel) -> Void) -> [RunnerProcess?] {
        let pieces = (0..<count).map { _ in try? Pieces(cgroups: cgroups, freezer: freezer) }
        for (index, piece) in pieces.enumerated() {
            guard let piece else { continue }
            first(index, piece.channel)
            _ = piece.channel.writeSome()
        }
        let made = pieces.compactMap { $0 }
        let pids = RunnerServer.startSeveral(runner: runner, requests: made.map { ($0.runnerEnd, $0.memory, $0.cgroup) })
        var next = 0
        return pieces.map { piece in
            guard let piece else { return nil }
            defer { next += 1 }
            guard let pid = pids[next] else {
                piece.discard()
                return nil
            }
            return piece.finish(pid: pid)
        }
    }

    /// What a runner gets before its process exists: the socket pair, the progress page, its cgroup.
    private final class Pieces {
        /// The host's end of the socket pair (closed with it).
        let channel: FrameChannel
        let runnerEnd: Int32
        let memory: Int32
        let page: UnsafeMutableRawPointer
        private(set) var cgroup: PluginCgroup?

        /// How the runner will be frozen while the application is suspended.
        let freezer: FreezerChoice

        init(cgroups: Bool, freezer: FreezerChoice) throws(IsolationStartError) {
            self.freezer = freezer
            var pair: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
                throw IsolationStartError("socketpair failed: \(String(cString: strerror(errno)))")
            }
            let memory = lcs_memfd_create("lifecycle-plugin-progress")
            guard memory >= 0 else {
                close(pair[0]); close(pair[1])
                throw IsolationStartError("memfd_create failed: \(String(cString: strerror(errno)))")
            }
            guard ftruncate(memory, off_t(RunnerProcess.pageSize)) == 0,
                  let page = mmap(nil, RunnerProcess.pageSize, PROT_READ | PROT_WRITE, MAP_SHARED, memory, 0), page != MAP_FAILED
            else {
                let reason = String(cString: strerror(errno))
                close(pair[0]); close(pair[1]); close(memory)
                throw IsolationStartError("cannot map the progress page: \(reason)")
            }
            channel = FrameChannel(fd: pair[0])
            runnerEnd = pair[1]
            self.memory = memory
            self.page = page
            // Born in its cgroup (made first) where the host can make one.
            cgroup = cgroups ? PluginCgroup.make() : nil
        }

        func dropCgroup() {
            cgroup?.remove()
            cgroup = nil
        }

        /// The runner `pid` has copies of what it needs: the host keeps its end and the page.
        func finish(pid: pid_t) -> RunnerProcess {
            close(runnerEnd)
            close(memory)
            // Before the hello: the runner runs no plugin code until then.
            let containment = ProcessContainment(runner: pid, cgroup: cgroup, freezer: freezer)
            return RunnerProcess(pid: pid, channel: channel, page: page, containment: containment)
        }

        /// No runner came (or none is known: a server that died after taking the request may have
        /// made one, which sees its socket close): everything is given back, the cgroup emptied first.
        func discard() {
            cgroup?.killAll()
            dropCgroup()
            munmap(page, RunnerProcess.pageSize)
            close(runnerEnd); close(memory)  // the host's end closes with the channel
        }
    }

    /// Kills the process and everything it started (`ProcessContainment.killAll`). Idempotent.
    func kill() {
        if exitStatus == nil { containment.killAll() }
    }

    /// Waits for the process to end, up to `limit`; after that it is killed (with everything it
    /// started) and waited for. Once it has ended, what it started and left is killed, then it is
    /// reaped. - Returns: the `waitpid` status.
    @discardableResult
    func reap(within limit: Duration) -> Int32 {
        if let exitStatus { return exitStatus }
        let deadline = lcs_monotonic_ns() + limit.nanosecondCount
        while lcs_child_has_exited(pid) == 0 {
            if lcs_monotonic_ns() >= deadline {
                containment.killAll()
                break
            }
            usleep(500)
        }
        // Ended (or killed): not reaped yet, so its group's id cannot have been reused meanwhile.
        containment.killRemains()
        var status: Int32 = 0
        _ = try? systemCall("waitpid") { waitpid(pid, &status, 0) }
        exitStatus = status
        containment.release()
        return status
    }
}

/// Why an isolated plugin's process could not be started.
package struct IsolationStartError: Error, CustomStringConvertible {
    package let message: String
    /// The errno of the system's refusal to make the process (`clone`), when that was the failure.
    let cloneFailure: Int32?
    init(_ message: String, cloneFailure: Int32? = nil) {
        self.message = message
        self.cloneFailure = cloneFailure
    }
    package var description: String { message }
}

/// Where the plugin-runner executable is: `lifecycle-plugin-runner`, a small executable of its own
/// (the runner code and the Swift runtime, without the host's command line and Foundation), so that its
/// fork server starts and copies itself as fast as a process can.
package enum IsolationRunner {
    private static let chosen = Mutex<String?>(nil)

    /// The runner executable's file name: in a build folder beside `lifecycle-host` and
    /// `liblifecycle.so`; installed in `PREFIX/lib/lifecycle/` (the Makefile's `RUNNER`).
    package static let executableName = "lifecycle-plugin-runner"

    /// The runner to start, when set (a test names the build folder's); it comes before every other
    /// place `resolve` looks. [thread-safe]
    package static var executable: String? {
        get { chosen.withLock { $0 } }
        set { chosen.withLock { $0 = newValue } }
    }

    /// Starts the calling thread's runner server now (`RunnerServer`), ahead of the first isolated
    /// plugin, so that its process start overlaps what the caller does meanwhile. Call from the thread
    /// that will load the isolated plugins (their parent). Nothing happens when no runner is found (the
    /// loads report it). [thread-safe]
    package static func prepare() {
        guard let runner = try? resolve() else { return }
        RunnerServer.prepare(runner: runner)
    }

    /// `prepare` before this process has settled what its runners inherit: for an executable that
    /// starts the server first thing, so that its process start overlaps the caller's own. The runners
    /// still get the caller's standard descriptors and working folder as they are at each start
    /// (`lcs_runner_server_send`); their environment is the server's, this process's now without
    /// `withoutVariables` — the variables the caller will take out of its own before any runner starts.
    /// [thread-safe]
    package static func prepareEarly(withoutVariables: [String]) {
        guard let runner = try? resolve() else { return }
        RunnerServer.prepare(runner: runner, withoutVariables: withoutVariables)
    }

    /// Ends the runner servers this process started (`RunnerServer.stopAll`): for a process that will
    /// look for what it left running. [thread-safe]
    package static func stopServers() { RunnerServer.stopAll() }

    /// The runner, the first of:
    /// 1. `executable`, when set;
    /// 2. `$LC_PLUGIN_RUNNER`;
    /// 3. the path `make install` recorded in the installed `liblifecycle.so` and `lifecycle-host`
    ///    (`lcs_installed_runner`: `PREFIX/lib/lifecycle/lifecycle-plugin-runner`, the Makefile's
    ///    `$(RUNNER)`), when it names an executable file;
    /// 4. `lifecycle-plugin-runner` in the folder of the binary this code is linked into (a SwiftPM build
    ///    folder, where `liblifecycle.so` and `lifecycle-host` sit beside it).
    package static func resolve() throws(IsolationStartError) -> String {
        if let executable { return executable }
        if let variable = getenv("LC_PLUGIN_RUNNER"), variable.pointee != 0 { return String(cString: variable) }
        var looked: [String] = []
        if let recorded = lcs_installed_runner() {
            let path = String(cString: recorded)
            if access(path, X_OK) == 0 { return path }
            looked.append(path)
        }
        if let own = lcs_own_object_path() {
            let path = String(cString: own)
            if let slash = path.lastIndex(of: "/") {
                let candidate = String(path[..<slash]) + "/" + executableName
                if access(candidate, X_OK) == 0 { return candidate }
                looked.append(candidate)
            }
        }
        let places = looked.isEmpty ? "" : " (no executable at \(looked.joined(separator: " or ")))"
        throw IsolationStartError("no plugin runner\(places): set LC_PLUGIN_RUNNER to the lifecycle-plugin-runner executable")
    }
}
