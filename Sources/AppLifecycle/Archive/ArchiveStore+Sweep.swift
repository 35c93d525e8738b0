// Temporary files of saves: their names, and removing the ones killed saves left behind.
import Glibc
import LifecycleRunLoop

extension ArchiveStore {
    /// The temporary file a save of `id` by process `pid` writes before renaming it over the archive:
    /// `.<id>.lcarchive.<pid>.tmp` (hidden, so never taken for an archive).
    static func temporaryName(id: String, pid: pid_t) -> String {
        ".\(id)\(fileExtension).\(pid).tmp"
    }

    /// Whether `name` is a temporary file of a save: `.` + an id + `.lcarchive.` + decimal digits +
    /// `.tmp`. Nothing else in the folder is ever touched by a sweep.
    static func isTemporaryName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        let suffix = Array(".tmp".utf8)
        let marker = Array("\(fileExtension).".utf8)
        guard bytes.count > 1 + marker.count + suffix.count, bytes[0] == UInt8(ascii: "."),
              bytes.suffix(suffix.count).elementsEqual(suffix) else { return false }
        let body = bytes[1..<(bytes.count - suffix.count)]  // <id>.lcarchive.<pid>
        var digits = body.endIndex
        while digits > body.startIndex, body[digits - 1] >= UInt8(ascii: "0"), body[digits - 1] <= UInt8(ascii: "9") { digits -= 1 }
        guard digits < body.endIndex, digits - body.startIndex > marker.count else { return false }
        return body[(digits - marker.count)..<digits].elementsEqual(marker)
    }

    /// Removes the temporary files that saves killed before their rename left in the folder, and
    /// returns their names.
    ///
    /// A file is stale when its `flock` can be taken: a save holds that lock on its temporary file from
    /// creation to rename (and the kernel drops it when the process dies), so a live save — of this
    /// process, another one, or one in another pid namespace — is never disturbed. Only names of the
    /// form `.<id>.lcarchive.<pid>.tmp` that are regular files are considered. Failures (a folder that
    /// does not exist or cannot be read, a file that cannot be opened) are skipped silently: nothing
    /// depends on the sweep. Cost: one pass over the folder's entries.
    ///
    /// [thread-safe] A save of any id may run meanwhile on another thread.
    @discardableResult
    package func removeStaleTemporaryFiles() -> [String] {
        guard let folder = opendir(directory) else { return [] }
        defer { closedir(folder) }
        let folderFD = dirfd(folder)
        var removed: [String] = []
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard Self.isTemporaryName(name) else { continue }
            guard let fd = try? systemCall("openat", { openat(folderFD, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK) })
            else { continue }
            defer { close(fd) }
            var opened = stat()
            guard fstat(fd, &opened) == 0, opened.st_mode & S_IFMT == S_IFREG else { continue }
            // A save in progress holds the lock: leave its file alone.
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            // Still the file at that name (not renamed away and replaced since we opened it)?
            var named = stat()
            guard fstatat(folderFD, name, &named, AT_SYMLINK_NOFOLLOW) == 0,
                  named.st_dev == opened.st_dev, named.st_ino == opened.st_ino else { continue }
            if unlinkat(folderFD, name, 0) == 0 { removed.append(name) }
        }
        return removed
    }
}
