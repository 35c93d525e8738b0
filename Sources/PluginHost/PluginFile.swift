import Glibc
import LifecycleRunLoop

/// A plugin file opened and checked before anything maps it: a regular file (never through a
/// symbolic link, never a FIFO, device, directory or socket), safe permissions and owner on it and on
/// every folder of its real path up to `/` (unless allowed), and an ELF image for this host whose
/// headers and loadable segments lie inside the file.
///
/// One `open`, one `fstat`, one `pread` of the headers (a second only when the program headers lie
/// beyond the first KiB); the permission check adds an `lstat` of the file's folder, and of each
/// folder above it unless that folder was checked with its chain lately and is unchanged
/// (`CheckedFolders`) (and a `readlink` of the descriptor when the path given is not the real one). The loader then loads this descriptor itself
/// (`/proc/self/fd/N`), so a file swapped after the checks is not the one loaded. The success path builds no `String`: a process's first load
/// pays for no type it would not use anyway.
struct PluginFile {
    /// The open descriptor; the caller owns it.
    let fd: Int32
    let device: UInt64
    let inode: UInt64
    let image: ELFImage

    /// Opens and checks `path`. No descriptor is left open when it throws.
    /// - Throws: the refusal's reason.
    /// With `options` holding `.privateCopy`, the checks of the path (kind, permissions, folders) are
    /// made on the file, then its bytes are copied into an anonymous file in memory and everything
    /// after (the ELF checks, device and inode, the load) is that copy's (`privateCopy(of:size:)`).
    static func open(_ path: String, options: PluginLoadOptions) throws(PluginFileProblem) -> PluginFile {
        let opened = path.withCString { name in
            Result { () throws(SystemCallError) in try systemCall("open") { Glibc.open(name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) } }
        }
        var fd: Int32
        switch opened {
        case .success(let descriptor): fd = descriptor
        case .failure(let error): throw openProblem(path, error.errno)
        }
        do throws(PluginFileProblem) {
            var info = stat()
            guard fstatat(fd, "", &info, atEmptyPath) == 0 else { throw PluginFileProblem("cannot stat: \(String(cString: strerror(errno)))") }
            guard info.st_mode & Mode.type == Mode.regular else { throw PluginFileProblem("it is \(kindName(info.st_mode)), not a regular file") }
            if !options.contains(.allowUnsafePermissions) {
                if let problem = unsafety(of: info, folder: nil) { throw PluginFileProblem(problem) }
                try checkFolders(path, fd)
            }
            if options.contains(.privateCopy) {
                let copy = try privateCopy(of: fd, size: UInt64(info.st_size))
                close(fd)
                fd = copy
                guard fstatat(fd, "", &info, atEmptyPath) == 0 else { throw PluginFileProblem("cannot stat its copy: \(String(cString: strerror(errno)))") }
            }
            let fileSize = UInt64(info.st_size)
            let image = try withUnsafeTemporaryAllocation(byteCount: ELFImage.prefixSize, alignment: 8) { buffer throws(PluginFileProblem) in
                let count = readFully(fd, into: buffer, at: 0)
                do throws(ELFImage.Problem) {
                    guard count >= 0 else { throw ELFImage.Problem.unreadable(errno) }
                    return try ELFImage.check(prefix: UnsafeRawBufferPointer(rebasing: buffer[..<count]), fileSize: fileSize) { offset, table in
                        readFully(fd, into: table, at: offset) == table.count
                    }
                } catch {
                    throw PluginFileProblem(error.reason)
                }
            }
            return PluginFile(fd: fd, device: UInt64(info.st_dev), inode: UInt64(info.st_ino), image: image)
        } catch {
            close(fd)
            throw error
        }
    }

    /// This process's effective user, read once: the owner a plugin file and its folders may have
    /// besides root. (A process that changes its user later is still checked against this one.)
    private static let user = geteuid()

    /// `AT_EMPTY_PATH` (Linux's value; Glibc declares it only for _GNU_SOURCE): `fstatat` of the
    /// descriptor itself, so that the file and its folders are read with one function.
    private static let atEmptyPath: Int32 = 0x1000

    /// The `st_mode` bits the checks read, as the kernel defines them (Glibc's `S_IFMT`… are function
    /// calls into another library in Swift: each costs a process's first load a symbol binding).
    private enum Mode {
        static let type: mode_t = 0o170000
        static let regular: mode_t = 0o100000
        static let directory: mode_t = 0o040000
        static let symbolicLink: mode_t = 0o120000
        static let fifo: mode_t = 0o010000
        static let characterDevice: mode_t = 0o020000
        static let blockDevice: mode_t = 0o060000
        static let socket: mode_t = 0o140000
        static let sticky: mode_t = 0o1000
        static let groupWritable: mode_t = 0o020
        static let othersWritable: mode_t = 0o002
    }

    /// Why `open` failed, in the host's words: a symbolic link (O_NOFOLLOW) or a socket by name.
    private static func openProblem(_ path: String, _ code: Int32) -> PluginFileProblem {
        var info = stat()
        if code == ELOOP || code == ENXIO, fstatat(AT_FDCWD, path, &info, AT_SYMLINK_NOFOLLOW) == 0 {
            if info.st_mode & Mode.type == Mode.symbolicLink {
                var target = [UInt8](repeating: 0, count: Int(PATH_MAX))
                let length = target.withUnsafeMutableBufferPointer { bytes in
                    bytes.withMemoryRebound(to: CChar.self) { readlink(path, $0.baseAddress!, $0.count) }
                }
                let to = length > 0 ? " to '\(String(decoding: target[..<length], as: UTF8.self))'" : ""
                return PluginFileProblem("it is a symbolic link\(to); plugins are loaded from regular files only, never through a link")
            }
            if info.st_mode & Mode.type == Mode.socket { return PluginFileProblem("it is a socket, not a regular file") }
        }
        return PluginFileProblem("cannot open: \(String(cString: strerror(code)))")
    }

    /// "a FIFO (named pipe)", "a directory", … for a mode that is not a regular file's.
    private static func kindName(_ mode: mode_t) -> String {
        switch mode & Mode.type {
        case Mode.fifo: "a FIFO (named pipe)"
        case Mode.directory: "a directory"
        case Mode.characterDevice: "a character device"
        case Mode.blockDevice: "a block device"
        case Mode.socket: "a socket"
        default: "not a regular file (mode 0\(String(mode, radix: 8)))"
        }
    }

    /// Why a file (`folder` nil) or a folder is unsafe to load code from, or nil: writable by group or
    /// others (a sticky folder owned by root, like /tmp, is safe: others cannot replace what is in it),
    /// or owned by another user than this process's or root.
    private static func unsafety(of info: stat, folder: UnsafePointer<CChar>?) -> String? {
        let mode = info.st_mode
        let group = mode & Mode.groupWritable != 0, others = mode & Mode.othersWritable != 0
        let stickyRoot = folder != nil && mode & Mode.sticky != 0 && info.st_uid == 0
        if group || others, !stickyRoot {
            let who = group && others ? "group- and world-writable" : group ? "group-writable" : "world-writable"
            let octal = String(mode & 0o7777, radix: 8)
            let sticky = folder != nil ? " and not a sticky folder owned by root" : ""
            return "unsafe permissions: \(what(folder)) is \(who) (mode \(String(repeating: "0", count: max(0, 4 - octal.count)) + octal))\(sticky)"
        }
        if info.st_uid != 0, info.st_uid != user {  // root first: a root-owned file needs no geteuid
            return "unsafe owner: \(what(folder)) is owned by uid \(info.st_uid), neither this process's user (uid \(user)) nor root"
        }
        return nil
    }

    private static func what(_ folder: UnsafePointer<CChar>?) -> String {
        folder.map { "the folder \(String(cString: $0))" } ?? "the file"
    }

    /// Checks every folder of the opened file's real path, innermost first, up to `/`. The folders of
    /// `path` as given when none is a symbolic link (nor `.`, `..` or an empty name): the kernel
    /// resolved the same folders (a folder swapped meanwhile needs a writable parent, which is refused
    /// itself). Otherwise the path the kernel resolved, read back through `/proc/self/fd` (slower on
    /// a process's first load).
    private static func checkFolders(_ path: String, _ fd: Int32) throws(PluginFileProblem) {
        var path = path
        if !hasDotOrEmptyName(path) {
            // A copy to cut (on the stack: paths are short); no strlen, no larger buffer than the path.
            var problem: PluginFileProblem?
            let plain = path.withUTF8 { bytes in
                let length = bytes.firstIndex(of: 0) ?? bytes.count  // what open() read of it
                return withUnsafeTemporaryAllocation(of: CChar.self, capacity: length + 1) { buffer in
                    UnsafeMutableRawPointer(buffer.baseAddress!).copyMemory(from: bytes.baseAddress!, byteCount: length)
                    buffer[length] = 0
                    do throws(PluginFileProblem) { return try checkFolders(buffer.baseAddress!, length, symlinks: false) } catch {
                        problem = error
                        return true
                    }
                }
            }
            if let problem { throw problem }
            if plain { return }
        }
        let size = Int(PATH_MAX) + 1
        try withUnsafeTemporaryAllocation(of: CChar.self, capacity: size) { buffer throws(PluginFileProblem) in
            let base = buffer.baseAddress!
            let length = withProcFDPath(fd) { readlink($0, base, size - 1) }
            guard length > 0, base[0] == 0x2F else {
                throw PluginFileProblem("cannot find the file's folder through /proc/self/fd: \(String(cString: strerror(errno))) (the loader needs /proc)")
            }
            base[length] = 0
            _ = try checkFolders(base, length, symlinks: true)
        }
    }

    /// Whether a folder name in `path` is `.`, `..` or empty ("a//b").
    private static func hasDotOrEmptyName(_ path: String) -> Bool {
        var length = -1, dots = 0  // -1: before the leading '/'
        for byte in path.utf8 {
            if byte == 0x2F {
                if length == 0 || (length > 0 && length <= 2 && dots == length) { return true }
                length = 0
                dots = 0
            } else {
                length += 1
                if byte == 0x2E { dots += 1 }
            }
        }
        return false
    }

    /// Checks the folders of the absolute path in `base` (cut in place at each '/': "/a/b/file" → "/a/b",
    /// "/a", "/"). With `symlinks` false, returns false at the first folder that is a symbolic link.
    private static func checkFolders(_ base: UnsafeMutablePointer<CChar>, _ length: Int, symlinks: Bool)
        throws(PluginFileProblem) -> Bool
    {
        var end = length
        var innermost: (path: [CChar], stamp: CheckedFolders.Stamp)?
        while end > 0 {
            end -= 1
            while base[end] != 0x2F { end -= 1 }  // stops at index 0 at the latest: the path is absolute
            let cut = end == 0 ? 1 : end
            base[cut] = 0
            var info = stat()
            guard fstatat(AT_FDCWD, base, &info, symlinks ? 0 : AT_SYMLINK_NOFOLLOW) == 0 else {
                throw PluginFileProblem("cannot check the folder \(String(cString: base)): \(String(cString: strerror(errno)))")
            }
            if info.st_mode & Mode.type == Mode.symbolicLink { return false }
            if let problem = unsafety(of: info, folder: base) { throw PluginFileProblem(problem) }
            if innermost == nil, info.st_mode & Mode.type == Mode.directory {
                // The file's own folder: checked with its chain lately and unchanged since, the chain stands.
                let stamp = CheckedFolders.Stamp(info)
                if CheckedFolders.shared.withLock({ $0.contains(base, length: cut, stamp) }) { return true }
                innermost = (Array(UnsafeBufferPointer(start: base, count: cut)), stamp)
            }
        }
        if let innermost { CheckedFolders.shared.withLock { $0.insert(innermost.path, innermost.stamp) } }
        return true
    }

    /// Calls `body` with "/proc/self/fd/<fd>" as a C string built on the stack; with `load` > 0, the
    /// same path with `load`'s bits written between "fd" and the number, lowest first, as `//` (0) or
    /// `/.` (1) up to its highest set bit: "/proc/self/fd/./5" for load 1, "/proc/self/fd///./5" for 2.
    /// The kernel resolves every such name to the same descriptor; no two loads share a name (the
    /// highest bit's `/.` ends each, so names of different lengths differ too).
    static func withProcFDPath<R, E: Error>(_ fd: Int32, load: UInt64 = 0, _ body: (UnsafePointer<CChar>) throws(E) -> R) throws(E) -> R {
        try withUnsafeTemporaryAllocation(of: CChar.self, capacity: 32 + 2 * 64) { buffer throws(E) in
            let prefix: StaticString = "/proc/self/fd"
            let base = buffer.baseAddress!
            var length = prefix.utf8CodeUnitCount
            prefix.utf8Start.withMemoryRebound(to: CChar.self, capacity: length) { base.update(from: $0, count: length) }
            var bits = load
            while bits != 0 {
                base[length] = 0x2F
                base[length + 1] = bits & 1 == 1 ? 0x2E : 0x2F
                length += 2
                bits >>= 1
            }
            base[length] = 0x2F
            length += 1
            var digits = UInt32(bitPattern: fd), scale: UInt32 = 1
            while digits / scale >= 10 { scale *= 10 }
            repeat {
                base[length] = CChar(0x30 + (digits / scale))
                digits %= scale
                scale /= 10
                length += 1
            } while scale > 0
            base[length] = 0
            return try body(base)
        }
    }

    /// Reads up to `buffer.count` bytes at `offset`, retrying on EINTR and short reads; stops at the
    /// end of the file. Returns the count, or -1 (errno says why).
    static func readFully(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) -> Int {
        var done = 0
        while done < buffer.count {
            let count: Int
            do {
                count = try systemCall("pread") { pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done)) }
            } catch {
                errno = error.errno  // this function's contract: -1, errno says why
                return -1
            }
            if count == 0 {
                errno = EIO  // the file ended early: for a caller that needed more
                break
            }
            done += count
        }
        return done
    }
}

/// Why a plugin file was refused before it was mapped: the refusal's reason.
struct PluginFileProblem: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
