import Glibc
import LifecycleRunLoop
import Synchronization

/// A cgroup (v2) of one isolated plugin's own, below the host's cgroup: every process the plugin's
/// process starts is born in it and cannot leave it (`setsid()` and double forks included), and
/// writing `cgroup.kill` ends them all at once, even after the plugin's process itself has died.
///
/// Made only where the host may: its own cgroup is on a cgroup v2 hierarchy mounted read-write, the
/// host can make a folder in it (root, or a delegated subtree: a systemd unit with `Delegate=yes`, a
/// container's namespace) and the kernel has `cgroup.kill` (Linux 5.14). Anywhere else `make` answers
/// nil, once refused for good (the process group and the runner's subreaper are the containment then).
///
/// Named `lifecycle-plugin-HOST-N` (the host's pid, then its count of cgroups made). The runner is
/// born in it (`RunnerServer`: `clone3` with `CLONE_INTO_CGROUP`), never moved there: a move
/// (`cgroup.procs`) costs the kernel an RCU grace period the first time, ~10 ms. Removed once empty:
/// when its runner is reaped, or at the host's emergency end (`ProcessContainment.endAll`). A host
/// killed outright (SIGKILL) leaves its empty folders; the next host that makes a cgroup there removes
/// those of hosts that are gone. [thread-safe]
struct PluginCgroup: Sendable {
    /// The cgroup's folder.
    let path: String

    /// The folder of this process's cgroup v2, if it has one mounted read-write (found once).
    static let home: String? = findHome()
    /// Turned off for good when the host may not make cgroups (no permission, read-only, no `cgroup.kill`).
    private static let allowed = Atomic<Bool>(true)
    /// How many this process has made (their names' last part).
    private static let made = Atomic<Int>(0)
    /// Removes, once, the empty folders left by hosts that are gone (`sweepLeftovers`).
    private static let swept: Void = sweepLeftovers(in: home, prefix: "lifecycle-plugin-")

    /// Makes an empty cgroup for a runner about to start. - Returns: nil when the host cannot (see the
    /// type's note); nothing is left behind then.
    static func make() -> PluginCgroup? {
        guard allowed.load(ordering: .relaxed), let home else { return nil }
        _ = swept
        let count = made.wrappingAdd(1, ordering: .relaxed).newValue
        let path = home + "/lifecycle-plugin-\(getpid())-\(count)"
        guard mkdir(path, 0o755) == 0 else {
            if errno == EACCES || errno == EPERM || errno == EROFS || errno == ENOENT { refuse() }
            return nil
        }
        guard access(path + "/cgroup.kill", W_OK) == 0 else {
            refuse()
            rmdir(path)
            return nil
        }
        return PluginCgroup(path: path)
    }

    /// No cgroups from now on: the system refused one (`make`, or a process born into one).
    static func refuse() { allowed.store(false, ordering: .relaxed) }

    /// Whether a `clone3(CLONE_INTO_CGROUP)` failing with `errno` means this system starts no process
    /// in such a cgroup (an old kernel, no permission, a cgroup that takes no process) rather than a
    /// passing shortage (`EAGAIN`, `ENOMEM`), which does not turn cgroups off.
    static func refusesBirths(_ errno: Int32) -> Bool {
        [ENOSYS, E2BIG, EINVAL, EPERM, EACCES, EOPNOTSUPP, EBUSY, EBADF].contains(errno)
    }

    /// A descriptor of the folder (close-on-exec; the caller closes it), or -1 and errno.
    func openFolder() -> Int32 { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }

    /// Kills every process in it (`cgroup.kill`). - Returns: whether the kernel took the request.
    @discardableResult
    func killAll() -> Bool { write("cgroup.kill", "1") }

    /// Removes the folder once the cgroup is empty, waiting at most `limit` for its killed processes to
    /// go. - Returns: whether it is gone.
    @discardableResult
    func remove(within limit: Duration = .milliseconds(200)) -> Bool {
        let deadline = ContinuousClock.now + limit
        while rmdir(path) != 0 {
            guard errno == EBUSY, ContinuousClock.now < deadline else { return errno == ENOENT }
            usleep(1000)
        }
        return true
    }

    /// Removes the folders named `prefix`HOST-N in `home` whose host is no longer running (a host killed
    /// outright leaves them, empty); a folder still in use is left (`rmdir` refuses a populated cgroup).
    static func sweepLeftovers(in home: String?, prefix: String) {
        guard let home, let folder = opendir(home) else { return }
        defer { closedir(folder) }
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            guard name.hasPrefix(prefix), let host = name.dropFirst(prefix.count).split(separator: "-").first.flatMap({ pid_t($0) }),
                  host != getpid(), kill(host, 0) != 0, errno == ESRCH
            else { continue }
            rmdir(home + "/" + name)
        }
    }

    private func write(_ file: String, _ text: String) -> Bool { Self.writeSmallFile(path + "/" + file, text) }

    /// Writes `text` to a control file in one `write`. - Returns: whether the kernel took all of it.
    static func writeSmallFile(_ file: String, _ text: String) -> Bool {
        guard let fd = try? systemCall("open", { open(file, O_WRONLY | O_CLOEXEC) }) else { return false }
        defer { close(fd) }
        let written = try? systemCall("write") { text.withCString { Glibc.write(fd, $0, strlen($0)) } }
        return written == text.utf8.count
    }

    /// Freezes (`true`) or thaws the cgroup (`cgroup.freeze`). - Returns: whether the kernel took it.
    func setFrozen(_ frozen: Bool) -> Bool { write("cgroup.freeze", frozen ? "1" : "0") }

    /// This process's cgroup v2 folder: its path in `/proc/self/cgroup` (`0::PATH`) below the mount
    /// point of the cgroup2 file system that holds it (`/proc/self/mountinfo`), if mounted read-write.
    private static func findHome() -> String? {
        guard let own = readSmallFile("/proc/self/cgroup").flatMap(lines)?.first(where: { $0.hasPrefix("0::") })?.dropFirst(3)
        else { return nil }
        return folder(of: String(own)) { type, _ in type == "cgroup2" }
    }

    /// `text` split at `separator`, an ASCII byte, empty parts dropped. By bytes, not characters: a
    /// `Character` split asks for grapheme breaks at every step (a mountinfo of 30 lines took 1.4 M
    /// instructions that way, on the isolated cold start's path).
    static func parts(_ text: Substring, _ separator: Unicode.Scalar) -> [Substring] {
        let byte = UInt8(ascii: separator)
        let utf8 = text.utf8
        var result: [Substring] = []
        var start = utf8.startIndex
        var index = start
        while index != utf8.endIndex {
            if utf8[index] == byte {
                if start != index { result.append(text[start..<index]) }
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        if start != utf8.endIndex { result.append(text[start...]) }
        return result
    }

    private static func lines(_ text: String) -> [Substring] { parts(Substring(text), "\n") }

    /// The folder of the cgroup `path` (as `/proc/self/cgroup` gives it) below the first read-write
    /// mount in `/proc/self/mountinfo` whose file-system type and super options `mount` accepts and
    /// whose root holds `path`; nil when there is none.
    static func folder(of path: String, inMount mount: (_ type: Substring, _ superOptions: [Substring]) -> Bool) -> String? {
        guard let mounts = readSmallFile("/proc/self/mountinfo") else { return nil }
        return folder(of: path, in: mounts, inMount: mount)
    }

    /// `folder(of:inMount:)` with `mounts` as the text of a mountinfo file.
    static func folder(of path: String, in mounts: String, inMount mount: (_ type: Substring, _ superOptions: [Substring]) -> Bool) -> String? {
        for line in lines(mounts) {
            // id parent major:minor root mount-point options [optional fields] - type source super-options
            let fields = parts(line, " ")
            guard let dash = fields.firstIndex(of: "-"), dash >= 6, dash + 1 < fields.count,
                  mount(fields[dash + 1], dash + 3 < fields.count ? parts(fields[dash + 3], ",") : []),
                  parts(fields[5], ",").contains("rw")
            else { continue }
            let root = unescaped(fields[3]), point = unescaped(fields[4])
            guard root == "/" || path == root || path.hasPrefix(root + "/") else { continue }
            let below = root == "/" ? path : String(path.dropFirst(root.count))
            return below == "/" || below.isEmpty ? point : point + below
        }
        return nil
    }

    /// A mountinfo field with its octal escapes (`\040` a space, `\011`, `\012`, `\134`) undone.
    static func unescaped(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var index = field.utf8.startIndex
        let utf8 = field.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "\\"), let end = utf8.index(index, offsetBy: 4, limitedBy: utf8.endIndex),
               let value = UInt8(String(decoding: utf8[utf8.index(after: index)..<end], as: UTF8.self), radix: 8) {
                bytes.append(value)
                index = end
                continue
            }
            bytes.append(byte)
            index = utf8.index(after: index)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A small file's text (`/proc`, cgroup files: at most 1 MiB), nil when it cannot be read or holds more.
    static func readSmallFile(_ path: String) -> String? {
        (try? WholeFile.read(path, atMost: 1 << 20)).map { String(decoding: $0, as: UTF8.self) }
    }
}
