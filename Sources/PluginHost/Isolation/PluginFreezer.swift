import Glibc
import Synchronization

/// Which freezer stops an isolated plugin's processes while the application is suspended (issue 23:
/// on iOS "a suspended app does not execute any code" (seed 000)). `auto` takes the first that
/// works here, strongest first; the others ask for one (and fall back to none, said in the trace, when
/// it cannot be used). docs/lifecycle.md, "Suspended means frozen".
package enum FreezerChoice: String, Sendable, Equatable, CaseIterable {
    /// cgroup v2, then cgroup v1, then signals.
    case auto
    /// The plugin's own cgroup v2 (`cgroup.freeze`): everything in it, whatever it started.
    case cgroup
    /// A cgroup of the v1 freezer hierarchy made for the plugin (`freezer.state`), the runner moved
    /// into it when it starts: what it starts afterwards is born in it.
    case cgroupV1 = "cgroup-v1"
    /// `SIGSTOP` and `SIGCONT` to the runner's process group: what left the group runs on.
    case signal
    /// Never frozen: a suspended application's plugins run on (the model only).
    case none
}

/// How one runner is frozen, once chosen. [value]
package enum FreezerMethod: Sendable, Equatable {
    case cgroup, cgroupV1, signal

    /// The words of the trace: what is written where.
    package var description: String {
        switch self {
        case .cgroup: "cgroup v2 (cgroup.freeze of the plugin's own cgroup)"
        case .cgroupV1: "cgroup v1 freezer (freezer.state of the plugin's own cgroup)"
        case .signal: "signals (SIGSTOP and SIGCONT to the plugin's process group)"
        }
    }
}

/// A cgroup of the v1 freezer hierarchy of one runner's own, below the host's, named
/// `lifecycle-freezer-HOST-N`. Made only where the host may (the hierarchy mounted read-write, a folder
/// it can make); the runner is moved into it right after it starts. Removed once empty; a host
/// killed outright leaves its empty folder, which the next host that makes one there removes. [thread-safe]
struct FreezerCgroupV1: Sendable {
    let path: String

    /// The folder of this process's cgroup in the v1 freezer hierarchy, if one is mounted read-write.
    static let home: String? = findHome()
    private static let made = Atomic<Int>(0)
    /// Removes, once, the empty folders left by hosts that are gone (a host killed outright).
    private static let swept: Void = PluginCgroup.sweepLeftovers(in: home, prefix: "lifecycle-freezer-")

    /// Makes the cgroup and moves `pid` into it. - Returns: nil (nothing left behind) when it cannot.
    static func make(moving pid: pid_t) -> FreezerCgroupV1? {
        guard let home else { return nil }
        _ = swept
        let count = made.wrappingAdd(1, ordering: .relaxed).newValue
        let path = home + "/lifecycle-freezer-\(getpid())-\(count)"
        guard mkdir(path, 0o755) == 0 else { return nil }
        let cgroup = FreezerCgroupV1(path: path)
        guard PluginCgroup.writeSmallFile(path + "/cgroup.procs", "\(pid)") else {
            rmdir(path)
            return nil
        }
        return cgroup
    }

    func freeze() -> Bool { PluginCgroup.writeSmallFile(path + "/freezer.state", "FROZEN") }
    func thaw() -> Bool { PluginCgroup.writeSmallFile(path + "/freezer.state", "THAWED") }

    /// Removes the folder once its processes are gone (at most `limit`).
    func remove(within limit: Duration = .milliseconds(200)) {
        let deadline = ContinuousClock.now + limit
        while rmdir(path) != 0, errno == EBUSY, ContinuousClock.now < deadline { usleep(1000) }
    }

    /// `/proc/self/cgroup`'s `N:...freezer...:PATH` line below the mount point of the v1 hierarchy
    /// whose super options name `freezer` (`/proc/self/mountinfo`), if mounted read-write.
    private static func findHome() -> String? {
        guard let own = PluginCgroup.readSmallFile("/proc/self/cgroup")?.split(separator: "\n").lazy.map({ $0.split(separator: ":", maxSplits: 2) })
                .first(where: { $0.count == 3 && $0[1].split(separator: ",").contains("freezer") })?[2],
              let home = PluginCgroup.folder(of: String(own), inMount: { type, options in type == "cgroup" && options.contains("freezer") })
        else { return nil }
        return access(home, W_OK) == 0 ? home : nil
    }
}
