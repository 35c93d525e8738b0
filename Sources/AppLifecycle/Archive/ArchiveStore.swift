// The archive file store: ids and paths, atomic save (temp file, fsync, rename, fsync folder), load, remove.
import CLifecycleSystem
import Glibc
import LifecycleRunLoop

/// Reads and writes one archive file per observer id in a folder: `<directory>/<id>.lcarchive`, in
/// the format of ``ArchiveFormat``.
///
/// Guarantees:
/// - `save` is atomic: whatever happens to the process (a crash, `SIGKILL`, a purge), the archive file
///   holds either the previous complete save or the new one, never a mix. A failed save leaves the
///   previous archive untouched and removes its temporary file.
/// - `load` returns exactly what the last completed `save` stored, or nil when nothing was saved; a
///   damaged file is reported as an error, never half-decoded.
/// - Bounded: an archive is at most `maxBytes` (64 MiB by default). `load` checks the file's size
///   (`fstat`) and then its 20-byte header (magic, version, payload length = the rest of the file)
///   before it reads the payload, so a huge or foreign file costs one `fstat` and one 20-byte read;
///   `save` refuses values whose archive would be larger.
/// - Temporary files left behind by a killed process (`.<id>.lcarchive.<pid>.tmp`) are never read and
///   never disturb a later save; `removeStaleTemporaryFiles()` removes them (the engine calls it before
///   each round of saves and at launch). A save holds an exclusive `flock` on its temporary file from
///   creation to rename, so a file whose lock can be taken belongs to no save in progress — whatever
///   process or pid namespace made it — and is stale.
///
/// [thread-safe] for different ids. Saves of one id must not overlap within one process: they share
/// the temporary file name (the engine saves from its loop thread only).
///
/// `package`, not internal, so that the package's helper executables (the archive tests' child
/// process) can use it without `@testable`, which release builds do not allow.
package struct ArchiveStore: Sendable {
    /// The folder holding the archives (trailing slashes removed).
    package let directory: String

    /// The longest id, in UTF-8 bytes; keeps the temporary file name under the 255-byte limit.
    static let maxIDBytes = 200
    /// The largest archive file by default: 64 MiB.
    package static let defaultMaxBytes = 64 << 20

    /// The largest archive file `load` reads and `save` writes, in bytes.
    package let maxBytes: Int
    /// The suffix of every archive file.
    static let fileExtension = ".lcarchive"

    /// A store over `directory`, for archives of at most `maxBytes`; nothing is touched on disk until
    /// the first save.
    package init(directory: String, maxBytes: Int = ArchiveStore.defaultMaxBytes) {
        var directory = directory
        while directory.utf8.count > 1, directory.hasSuffix("/") { directory.removeLast() }
        self.directory = directory
        self.maxBytes = maxBytes
    }

    /// The path of the archive of `id`: `<directory>/<id>.lcarchive`.
    ///
    /// - Throws: `.invalidArgument` when `id` is empty, longer than 200 bytes, starts with `.`, or holds
    ///   a character other than `A-Z a-z 0-9 . _ -`; or when the folder is empty or holds a NUL byte.
    package func path(for id: String) throws(ApplicationError) -> String {
        try Self.validate(id: id)
        guard !directory.isEmpty else {
            throw ApplicationError(.invalidArgument, "archive folder for id \(jsonQuoted(id)) is empty")
        }
        guard !directory.utf8.contains(0) else {
            throw ApplicationError(.invalidArgument, "archive folder \(jsonQuoted(directory)) contains a NUL byte")
        }
        return Self.join(directory, id + Self.fileExtension)
    }

    /// Reads the archive of `id`.
    ///
    /// - Returns: the stored values, or nil when there is no archive file (nor folder).
    /// - Throws: `.invalidArgument` for a bad id (see `path(for:)`); `.archiveUnreadable` when the file
    ///   exists but cannot be read (a directory, a FIFO, no permission, an I/O error);
    ///   `.archiveCorrupt` when its contents are not a valid archive, it is larger than `maxBytes`
    ///   (`too large: N bytes, the limit is M`, nothing read), or it changed size while read. Messages
    ///   name the file and the reason.
    package func load(id: String) throws(ApplicationError) -> UserInfo? {
        let path = try path(for: id)
        guard let bytes = try readArchive(path) else { return nil }
        do throws(ApplicationError) {
            return try ArchiveFormat.decode(bytes)
        } catch {
            throw ApplicationError(.archiveCorrupt, "archive \(path) is corrupt: \(error.message)")
        }
    }

    /// Replaces the archive of `id` with `values`, atomically and durably.
    ///
    /// Its depth and size are checked first, in O(1), and nothing is encoded past them.
    ///
    /// Creates the folder (and missing parents, mode 0700) if needed, writes the whole archive to
    /// `<directory>/.<id>.lcarchive.<pid>.tmp` (mode 0600), fsyncs it, renames it over the archive and
    /// fsyncs the folder. Blocks for the time of the write and both fsyncs.
    ///
    /// - Throws: `.invalidArgument` for a bad id, or values nesting lists and dictionaries deeper than
    ///   64 levels (nothing is written); `.archiveWriteFailed` when any step fails: the temporary file is
    ///   removed and the previous archive is untouched — except when only the final folder fsync fails,
    ///   where the new archive is in place but may revert to the previous one after a power loss (the
    ///   message says so).
    package func save(_ values: UserInfo, id: String) throws(ApplicationError) {
        let path = try path(for: id)
        // Both checked in O(1) before anything is encoded (`UserInfo.depth`, `.encodedSize`).
        guard values.depth <= ArchiveFormat.maxDepth else {
            throw ApplicationError(.invalidArgument,
                                   "archive \(path) was not saved: its lists and dictionaries nest deeper than \(ArchiveFormat.maxDepth) levels")
        }
        let size = ArchiveFormat.headerSize + values.encodedSize
        guard size <= maxBytes else {
            throw ApplicationError(.invalidArgument,
                                   "archive \(path) was not saved: it would be \(size) bytes, the limit is \(maxBytes)")
        }
        let bytes = ArchiveFormat.encode(values)
        func failed(_ step: String, _ code: Int32) -> ApplicationError {
            ApplicationError(.archiveWriteFailed, "archive \(path) could not be saved: \(step): \(SystemCallError.reason(code))")
        }

        let folderCode = Self.makeDirectory(directory)
        guard folderCode == 0 else { throw failed("cannot create folder \(directory)", folderCode) }

        let temp = Self.join(directory, Self.temporaryName(id: id, pid: getpid()))
        let fd: Int32
        do throws(SystemCallError) { fd = try Self.createLocked(temp) } catch {
            throw failed("cannot create temporary file \(temp)", error.errno)
        }

        var failure: (step: String, code: Int32)?
        do throws(SystemCallError) { try Self.writeAll(fd, bytes) } catch {
            failure = ("cannot write temporary file \(temp)", error.errno)
        }
        if failure == nil {
            do throws(SystemCallError) { _ = try systemCall("fsync") { fsync(fd) } } catch {
                failure = ("cannot fsync temporary file \(temp)", error.errno)
            }
        }
        // close() is never retried on Linux: the descriptor is released even when it reports EINTR.
        if close(fd) != 0, errno != EINTR, failure == nil {
            failure = ("cannot close temporary file \(temp)", errno)
        }
        if failure == nil {
            do throws(SystemCallError) { _ = try systemCall("rename") { rename(temp, path) } } catch {
                failure = ("cannot rename \(temp) over the archive", error.errno)
            }
        }
        if let failure {
            unlink(temp)
            throw failed(failure.step, failure.code)
        }

        if let error = Self.syncDirectory(directory) {
            throw ApplicationError(.archiveWriteFailed,
                                   "archive \(path) was replaced, but syncing folder \(directory) failed: \(error.reason); after a power loss it may revert to the previous archive")
        }
    }

    /// Removes the archive of `id`, durably; does nothing when there is none.
    ///
    /// - Throws: `.invalidArgument` for a bad id; `.archiveWriteFailed` when the file exists but cannot be
    ///   removed, or its folder cannot be synced afterwards.
    package func remove(id: String) throws(ApplicationError) {
        let path = try path(for: id)
        do throws(SystemCallError) { _ = try systemCall("unlink") { unlink(path) } } catch {
            if error.errno == ENOENT || error.errno == ENOTDIR { return }
            throw ApplicationError(.archiveWriteFailed, "archive \(path) could not be removed: \(error.reason)")
        }
        if let error = Self.syncDirectory(directory) {
            throw ApplicationError(.archiveWriteFailed,
                                   "archive \(path) was removed, but syncing folder \(directory) failed: \(error.reason); after a power loss it may reappear")
        }
    }

    // MARK: - Ids and paths

    /// Checks an archive id; see `path(for:)`.
    static func validate(id: String) throws(ApplicationError) {
        func invalid(_ why: String) -> ApplicationError {
            let shown = id.utf8.count > 64 ? jsonQuoted(String(id.prefix(32))) + "…" : jsonQuoted(id)
            return ApplicationError(.invalidArgument, "archive id \(shown) is invalid: \(why)")
        }
        if id.isEmpty { throw invalid("it is empty") }
        if id.utf8.count > maxIDBytes { throw invalid("it is \(id.utf8.count) bytes long, the limit is \(maxIDBytes)") }
        if id.utf8.first == UInt8(ascii: ".") { throw invalid("it must not start with '.'") }
        for scalar in id.unicodeScalars {
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9", ".", "_", "-": continue
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                let shown = scalar.value < 0x21 || scalar.value > 0x7E
                    ? "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex : "'\(scalar)'"
                throw invalid("it contains \(shown); only A-Z a-z 0-9 . _ - are allowed")
            }
        }
    }

    private static func join(_ directory: String, _ name: String) -> String {
        directory == "/" ? "/" + name : directory + "/" + name
    }

    // MARK: - File I/O (every call through `systemCall`: EINTR retried, failures as `SystemCallError`)

    /// Reads the archive at `path` after checking its size and header; nil when it does not exist.
    ///
    /// `fstat` first: not a regular file, or larger than `maxBytes`, is refused before anything is read.
    /// Then the 20-byte header alone (`ArchiveFormat.checkHeader`: magic, version, payload length
    /// against the file's size), then exactly the rest; a file that grows or shrinks meanwhile is
    /// refused. The bytes read are at most the checked size.
    private func readArchive(_ path: String) throws(ApplicationError) -> [UInt8]? {
        func unreadable(_ why: String) -> ApplicationError {
            ApplicationError(.archiveUnreadable, "archive \(path) is unreadable: \(why)")
        }
        func unreadable(errno code: Int32) -> ApplicationError {
            unreadable(SystemCallError.reason(code))
        }
        func corrupt(_ why: String) -> ApplicationError {
            ApplicationError(.archiveCorrupt, "archive \(path) is corrupt: \(why)")
        }
        // O_NONBLOCK: opening a FIFO planted at the path must not block; regular files ignore it.
        let fd: Int32
        do throws(SystemCallError) { fd = try systemCall("open") { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) } } catch {
            if error.errno == ENOENT { return nil }
            throw unreadable(errno: error.errno)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw unreadable(errno: errno) }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw unreadable("it is a directory")
        default: throw unreadable("it is not a regular file")
        }
        let size = Int(info.st_size)
        guard size <= maxBytes else { throw corrupt("too large: \(size) bytes, the limit is \(maxBytes); not read") }
        var bytes = [UInt8](repeating: 0, count: size)
        let headerCount = Swift.min(size, ArchiveFormat.headerSize)
        // One more byte than the file holds: finding it means the file grew after fstat.
        func fill(_ range: Range<Int>) throws(ApplicationError) -> Int {
            var offset = range.lowerBound
            while offset < range.upperBound {
                let count: Int
                do throws(SystemCallError) {
                    count = try systemCall("read") {
                        bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + offset, range.upperBound - offset) }
                    }
                } catch { throw unreadable(errno: error.errno) }
                if count == 0 { break }
                offset += count
            }
            return offset
        }
        guard try fill(0..<headerCount) == headerCount else { throw corrupt("changed while being read (it shrank)") }
        do throws(ApplicationError) {
            try ArchiveFormat.checkHeader(Array(bytes[0..<headerCount]), fileSize: UInt64(size))
        } catch {
            throw corrupt(error.message)
        }
        guard try fill(headerCount..<size) == size else { throw corrupt("changed while being read (it shrank)") }
        var extra: UInt8 = 0
        let more: Int
        do throws(SystemCallError) { more = try systemCall("read") { read(fd, &extra, 1) } } catch {
            throw unreadable(errno: error.errno)
        }
        guard more == 0 else { throw corrupt("changed while being read (it grew)") }
        return bytes
    }

    /// Writes every byte. - Throws: the failed `write` (`EIO` for one that wrote nothing).
    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(SystemCallError) {
        var offset = 0
        while offset < bytes.count {
            let written = try systemCall("write") { bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) } }
            if written == 0 { throw SystemCallError("write", errno: EIO) }
            offset += written
        }
    }

    /// fsyncs a folder so that a rename or unlink in it is durable; nil, or the call that failed.
    /// File systems that cannot fsync a folder (EINVAL) count as success.
    private static func syncDirectory(_ directory: String) -> SystemCallError? {
        do throws(SystemCallError) {
            let fd = try systemCall("open") { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            defer { close(fd) }
            do throws(SystemCallError) { _ = try systemCall("fsync") { fsync(fd) } } catch {
                if error.errno != EINVAL { throw error }
            }
            return nil
        } catch {
            return error
        }
    }

    /// Creates `path` (truncated if it exists) for writing and takes an exclusive `flock` on it, which
    /// tells `removeStaleTemporaryFiles` that a save is in progress; the descriptor.
    ///
    /// A sweep may unlink the file between the open and the lock (it had no lock yet): the link count
    /// is then 0 once the lock is ours, and the file is made again.
    /// - Throws: the failed `open`; `EAGAIN` when eight files in a row were unlinked before the lock.
    private static func createLocked(_ path: String) throws(SystemCallError) -> Int32 {
        for _ in 0..<8 {
            let fd = try systemCall("open") { open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600) }
            var info = stat()
            if (try? systemCall("flock", { flock(fd, LOCK_EX) })) != nil, fstat(fd, &info) == 0, info.st_nlink > 0 { return fd }
            close(fd)
        }
        throw SystemCallError("flock", errno: EAGAIN)
    }

    /// Creates `directory` and its missing parents with mode 0700; 0 when it exists (as a folder)
    /// afterwards, else an errno value (ENOTDIR when a file is in the way).
    private static func makeDirectory(_ directory: String) -> Int32 {
        if mkdir(directory, 0o700) == 0 { return 0 }
        var code = errno
        if code == ENOENT, let slash = directory.utf8.lastIndex(of: UInt8(ascii: "/")) {
            let parent = slash == directory.utf8.startIndex ? "/" : String(directory[..<slash])
            if parent != directory {
                let parentCode = makeDirectory(parent)
                if parentCode != 0 { return parentCode }
                if mkdir(directory, 0o700) == 0 { return 0 }
                code = errno
            }
        }
        if code == EEXIST {
            var info = stat()
            guard stat(directory, &info) == 0 else { return errno }
            return info.st_mode & S_IFMT == S_IFDIR ? 0 : ENOTDIR
        }
        return code
    }
}

