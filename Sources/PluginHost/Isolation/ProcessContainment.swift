import CLifecycleSystem
import Glibc
import Synchronization

/// Everything an isolated plugin's process starts, ended with it: when the plugin fails, when it is
/// unloaded, and when the host ends (`IsolatedProcesses.endAll`). [thread-safe]
///
/// How far it reaches, strongest first:
/// 1. **A cgroup of the plugin's own** (`PluginCgroup`), where the host can make one: `cgroup.kill`
///    ends every process the plugin started, whatever it did (a session of its own, a double fork),
///    even after the plugin's process has died.
/// 2. **The runner's process group** (the runner leads it, `ChildProcess`): every process that did not
///    leave it, even after the runner has died.
/// 3. **The runner's tree.** The runner is a child subreaper (`PluginRunner`): an orphan of its plugin
///    is re-parented to it, not to init, so everything the plugin started stays below it while it
///    lives. Before the host kills a live runner it stops it (SIGSTOP: it starts nothing more) and
///    kills its tree (`lcs_kill_descendants`); a runner that ends on its own (`exit()`, a fatal signal)
///    kills its tree first (`lcs_kill_descendants_at_end`).
///
/// Out of reach without a cgroup: a process that left the process group (`setsid()`, `setpgid()`)
/// when the runner died in a way it cannot catch — SIGKILL from elsewhere (the OOM killer; the host's
/// own death, `PR_SET_PDEATHSIG`), `_exit()`, or a fatal signal whose handler the plugin replaced: the
/// kernel re-parented it to init, and nothing names it any more.
///
/// Cost: a plugin's start makes its cgroup (a `mkdir`, an `access`, an `open`) when there is one; ending it walks
/// `/proc` for the runner's tree only when there is none, in proportion to the processes found.
final class ProcessContainment: Sendable {
    /// The runner: its pid, and its process group's id.
    let runner: pid_t
    let cgroup: PluginCgroup?
    /// The v1 freezer's cgroup it was moved into (`FreezerChoice.cgroupV1`, or `auto` without a cgroup v2).
    let freezerV1: FreezerCgroupV1?
    /// How it is frozen while the application is suspended (nil: it cannot be, or was asked not to be).
    let freezer: FreezerMethod?

    /// The containments whose runner is not reaped yet, by its pid (what `endAll` kills).
    private static let live = Mutex<[pid_t: ProcessContainment]>([:])
    /// Registers `endAll` with `atexit` once: an `exit()` of the host's process ends them too.
    private static let exitHook: Void = { atexit { ProcessContainment.endAll() } }()

    /// Contains the just-started `runner` (it has run no plugin code yet), born in `cgroup` when it
    /// was given one, and frozen while the application is suspended as `choice` asks: the v1
    /// freezer's cgroup is made here (the runner moved into it) when that is the freezer it gets.
    init(runner: pid_t, cgroup: PluginCgroup?, freezer choice: FreezerChoice) {
        self.runner = runner
        self.cgroup = cgroup
        let freezesByCgroup = cgroup.map { access($0.path + "/cgroup.freeze", W_OK) == 0 } ?? false
        freezerV1 = choice == .cgroupV1 || (choice == .auto && !freezesByCgroup) ? FreezerCgroupV1.make(moving: runner) : nil
        freezer = switch choice {
        case .auto: freezesByCgroup ? .cgroup : freezerV1 != nil ? .cgroupV1 : .signal
        case .cgroup: freezesByCgroup ? .cgroup : nil
        case .cgroupV1: freezerV1 != nil ? .cgroupV1 : nil
        case .signal: .signal
        case .none: nil
        }
        _ = Self.exitHook
        Self.live.withLock { $0[runner] = self }
    }

    /// Kills the runner and everything it started. Only while the runner is not reaped: its pid (and
    /// its group's id) cannot have been reused. Idempotent.
    func killAll() {
        // A task frozen by the v1 freezer takes its SIGKILL only once thawed.
        defer { _ = freezerV1?.thaw() }
        if let cgroup, cgroup.killAll() {
            _ = kill(runner, SIGKILL)
            return
        }
        _ = kill(runner, SIGSTOP)
        lcs_kill_descendants(runner, 64)
        _ = kill(-runner, SIGKILL)
        _ = kill(runner, SIGKILL)
    }

    /// Freezes (`true`) or thaws everything the runner started, with `freezer`. Thawing what is not
    /// frozen does nothing. - Returns: whether the system took it (false without a freezer).
    func setFrozen(_ frozen: Bool) -> Bool {
        switch freezer {
        case .cgroup: return cgroup?.setFrozen(frozen) ?? false
        case .cgroupV1: return (frozen ? freezerV1?.freeze() : freezerV1?.thaw()) ?? false
        case .signal:
            let signal = frozen ? SIGSTOP : SIGCONT
            let group = kill(-runner, signal) == 0
            return kill(runner, signal) == 0 || group
        case nil: return false
        }
    }

    /// Kills what the runner started that is still there once the runner has ended (exited, not
    /// reaped yet): its cgroup, its process group.
    func killRemains() {
        cgroup?.killAll()
        _ = kill(-runner, SIGKILL)
        _ = freezerV1?.thaw()
    }

    /// The runner has been reaped: forgets it, and removes its cgroup once empty (at most 200 ms).
    func release() {
        Self.live.withLock { $0[runner] = nil }
        cgroup?.remove()
        freezerV1?.remove()
    }

    /// `killAll` for every containment whose runner is not reaped, then their cgroups' folders removed
    /// (at most 200 ms in all: killed processes leave a cgroup at once, reaped or not). [thread-safe]
    /// Skipped (nothing killed) if another thread holds the table at that moment: an ending process
    /// must not block.
    static func endAll() {
        let all = live.withLockIfAvailable({ Array($0.values) }) ?? []
        for containment in all { containment.killAll() }
        let deadline = ContinuousClock.now + .milliseconds(200)
        for containment in all {
            containment.cgroup?.remove(within: max(.zero, deadline - ContinuousClock.now))
            containment.freezerV1?.remove(within: max(.zero, deadline - ContinuousClock.now))
        }
    }
}

/// Ending isolated plugins' processes from outside the run loop.
package enum IsolatedProcesses {
    /// Kills every isolated plugin's process of this process, and everything each started: for a host
    /// that ends without unloading its plugins (an emergency exit from the watchdog thread, an
    /// intercepted `exit()`). [thread-safe] The plugins' deinit does not run.
    package static func endAll() { ProcessContainment.endAll() }
}
