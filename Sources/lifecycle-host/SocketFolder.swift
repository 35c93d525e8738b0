// The private folder that holds the default control socket when XDG_RUNTIME_DIR is unset.
@preconcurrency import Glibc

/// The folder `${TMPDIR:-/tmp}/lifecycle-host-<euid>/` that holds the default control socket when
/// `XDG_RUNTIME_DIR` is unset: made by the host with mode 0700 and checked by host and client alike.
///
/// Rationale: a socket directly in `/tmp` can be bound first by another local user, who then gets
/// the requests of `status` and `send` and can forge the answers. A folder only its owner can enter
/// cannot be used that way, provided it is really ours: owned by our effective uid, mode exactly
/// 0700, and a folder itself rather than a symbolic link to one (checked with `lstat`, which does
/// not follow links). Anything else is refused with a message saying what is wrong; nothing is
/// repaired or removed, since someone else's folder is not ours to change.
///
/// [thread-safe] Plain file-system calls.
struct SocketFolder: Equatable {
    let path: String

    /// The socket file's name in the folder.
    static let socketName = "lifecycle-host.sock"

    /// `${TMPDIR:-/tmp}/lifecycle-host-<uid>` (a `TMPDIR` that is empty or not absolute counts as unset).
    static func fallback(uid: uid_t = geteuid()) -> SocketFolder {
        var base = "/tmp"
        if let value = getenv("TMPDIR") {
            let text = String(cString: value)
            if text.hasPrefix("/") { base = text }
        }
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        return SocketFolder(path: (base == "/" ? "" : base) + "/lifecycle-host-\(uid)")
    }

    /// The socket's path in the folder.
    var socketPath: String { path + "/" + Self.socketName }

    /// Creates the folder (mode 0700) unless it exists, then checks it (`check`). For the host.
    /// - Throws: `ControlSocketError` saying what is wrong with the folder, or why it cannot be made.
    func prepare() throws(ControlSocketError) {
        if mkdir(path, 0o700) == 0 {
            // The umask may have taken bits away; the folder is ours, brand new, so set them.
            guard chmod(path, 0o700) == 0 else { throw .system("chmod 0700 \(path)", errno) }
        } else if errno != EEXIST {
            throw .system("creating the control socket folder \(path)", errno)
        }
        try check()
    }

    /// Checks that the folder is a folder (not a symbolic link), owned by the effective uid, mode 0700.
    /// For the client (`status`, `send`): a missing folder means no host listens there.
    /// - Throws: `ControlSocketError`: `no lifecycle-host is listening on SOCKET` when the folder is
    ///   missing; otherwise a sentence naming the folder and the check that failed.
    func check() throws(ControlSocketError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { throw .notListening(socketPath, ENOENT) }
            throw .system("checking the control socket folder \(path)", errno)
        }
        let refuse = "; refusing to use it for the control socket (remove it, or set XDG_RUNTIME_DIR or --socket)"
        switch info.st_mode & S_IFMT {
        case S_IFDIR: break
        case S_IFLNK: throw ControlSocketError("the control socket folder \(path) is a symbolic link, not a folder\(refuse)")
        default: throw ControlSocketError("the control socket folder \(path) is not a folder\(refuse)")
        }
        let me = geteuid()
        guard info.st_uid == me else {
            throw ControlSocketError("the control socket folder \(path) belongs to uid \(info.st_uid), not to you (uid \(me))\(refuse)")
        }
        let mode = info.st_mode & 0o7777
        guard mode == 0o700 else {
            throw ControlSocketError("the control socket folder \(path) has mode \(String(mode, radix: 8)), not 700: others can reach it\(refuse)")
        }
    }
}
