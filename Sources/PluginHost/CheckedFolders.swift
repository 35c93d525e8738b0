import Glibc
import Synchronization

/// The folders whose whole chain up to `/` passed the loader's owner-and-mode checks lately, each with
/// what `stat` said of it then, so that the plugins of one folder pay for its chain once: a later
/// plugin from a folder found here re-reads that folder alone (the one `stat` the check makes anyway)
/// and skips its parents when the folder is still the same object with the same owner, mode and
/// change time (`st_ctim`: any `chmod`, `chown`, rename or entry added or removed in it is a change).
/// A parent changed since is not seen until that folder misses; the decision is in
/// docs/writing-a-plugin.md ("Why the loader refuses what it refuses").
///
/// Eight entries, replaced in turn: a lookup compares at most eight paths, whatever the number of
/// plugins or folders. [thread-safe]
struct CheckedFolders: ~Copyable {
    /// What a folder's `stat` said: the object, its owner and mode, and its change time.
    struct Stamp: Equatable {
        let device: UInt64
        let inode: UInt64
        let mode: UInt32
        let owner: UInt32
        let changed: Int
        let changedNanoseconds: Int

        init(_ info: stat) {
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            mode = UInt32(info.st_mode)
            owner = UInt32(info.st_uid)
            changed = Int(info.st_ctim.tv_sec)
            changedNanoseconds = Int(info.st_ctim.tv_nsec)
        }
    }

    private struct Entry {
        let path: [CChar]
        let stamp: Stamp
    }

    private static let capacity = 8
    private var entries: [Entry] = []
    private var next = 0

    static let shared = Mutex(CheckedFolders())

    /// Whether the folder `path[0..<length]` passed with its whole chain when it looked as `stamp` does.
    func contains(_ path: UnsafePointer<CChar>, length: Int, _ stamp: Stamp) -> Bool {
        for entry in entries where entry.stamp == stamp && entry.path.count == length {
            if entry.path.withUnsafeBufferPointer({ memcmp($0.baseAddress!, path, length) == 0 }) { return true }
        }
        return false
    }

    /// Remembers that the folder `path` passed with its whole chain, looking as `stamp` does.
    mutating func insert(_ path: [CChar], _ stamp: Stamp) {
        let entry = Entry(path: path, stamp: stamp)
        if entries.count < Self.capacity {
            entries.append(entry)
        } else {
            entries[next] = entry
            next = (next + 1) % Self.capacity
        }
    }
}
