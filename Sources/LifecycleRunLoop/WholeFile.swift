// The one bounded whole-file read: every small file the host reads (scripts, recordings, plugin
// identities, /proc and cgroup files, thermal sensors, the plugin scan registry) goes through it.
import Glibc

/// Why `WholeFile.read` failed: a structured cause, for the caller to word in its own terms.
package enum WholeFileProblem: Error, Equatable, Sendable {
    /// `open`, `fstat` or `read` failed (the call and its errno; EINTR was retried).
    case system(SystemCallError)
    /// Not a regular file (asked with `regularOnly`): its `st_mode`'s type bits. Nothing was read.
    case notRegular(mode: UInt32)
    /// More than `limit` bytes. `bytes`: the size `fstat` gave a regular file, seen before anything
    /// was read; nil when the reading itself passed the limit (a pipe, a `/proc` file, a file that grew).
    case tooLarge(bytes: UInt64?, limit: Int)
}

/// A whole file read into memory, bounded: its size checked before its content, and never more than
/// `limit + 1` bytes read whatever the file says of itself.
package enum WholeFile {
    /// Reads the file at `path` whole. [thread-safe]
    ///
    /// Opens it `O_RDONLY | O_CLOEXEC | flags` (`O_NONBLOCK`: a FIFO put where a file is expected is
    /// not waited on; `O_NOFOLLOW`: not through a symbolic link). A regular file whose size (`fstat`)
    /// is over `limit` is refused before anything is read. Then reads to the end of the file, at most
    /// `limit + 1` bytes: a file whose size says nothing (`/proc`, cgroup files), a pipe, or a file that
    /// grows while read is refused once past `limit`. A file shorter than its size said is what was read.
    /// Memory: one buffer, of the file's size + 1 (a regular file) or growing from 4 KiB, at most
    /// `limit + 1` bytes. EINTR is retried; the descriptor is closed on every path.
    /// - Parameter regularOnly: refuse anything but a regular file (`notRegular`), before reading.
    /// - Throws: `WholeFileProblem`.
    package static func read(_ path: String, atMost limit: Int, flags: Int32 = 0, regularOnly: Bool = false)
        throws(WholeFileProblem) -> [UInt8]
    {
        precondition(limit >= 0 && limit < Int.max, "WholeFile.read: the limit is out of range")
        let fd: Int32
        do throws(SystemCallError) { fd = try systemCall("open") { open(path, O_RDONLY | O_CLOEXEC | flags) } } catch {
            throw .system(error)
        }
        defer { close(fd) }
        var info = stat()
        do throws(SystemCallError) { _ = try systemCall("fstat") { fstat(fd, &info) } } catch { throw .system(error) }
        let regular = info.st_mode & S_IFMT == S_IFREG
        if regularOnly, !regular { throw .notRegular(mode: UInt32(info.st_mode & S_IFMT)) }
        let size = UInt64(max(0, info.st_size))
        if regular, size > UInt64(limit) { throw .tooLarge(bytes: size, limit: limit) }
        // A regular file's size + 1, so that its end is read in the same buffer; else a page to begin.
        var bytes = [UInt8](repeating: 0, count: regular && size > 0 ? Int(size) + 1 : min(limit + 1, 4096))
        var count = 0
        while true {
            if count == bytes.count {
                if count > limit { throw .tooLarge(bytes: nil, limit: limit) }
                bytes.append(contentsOf: repeatElement(0, count: min(bytes.count, limit + 1 - bytes.count)))
            }
            let got: Int
            do throws(SystemCallError) {
                got = try systemCall("read") { bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) } }
            } catch {
                throw .system(error)
            }
            if got == 0 { break }
            count += got
        }
        bytes.removeSubrange(count...)
        return bytes
    }
}
