// Small helpers of the host: absolute paths, reading and writing whole files.
@preconcurrency import Glibc
import LifecycleRunLoop

/// An absolute path for `path` (relative to the working directory).
func absolute(_ path: String) -> String {
    if path.hasPrefix("/") { return path }
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
    guard getcwd(&buffer, buffer.count) != nil else { return path }
    let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return (cwd == "/" ? "" : cwd) + "/" + path
}

/// The whole file as text, or nil (errno set; `EFBIG` when it holds more than `limit` bytes, which a
/// regular file's size shows before anything is read).
func readFile(_ path: String, atMost limit: Int) -> String? {
    let fd: Int32
    do throws(SystemCallError) {
        fd = try systemCall("open") { open(path, O_RDONLY | O_CLOEXEC) }
    } catch {
        errno = error.errno
        return nil
    }
    defer { close(fd) }
    var info = stat()
    if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int64(info.st_size) > Int64(limit) {
        errno = EFBIG
        return nil
    }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n: Int
        do throws(SystemCallError) {
            n = try systemCall("read") { chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }
        } catch {
            errno = error.errno
            return nil
        }
        if n == 0 { break }
        bytes.append(contentsOf: chunk[0..<n])
        // A pipe or a file that grows while read: stop once past the limit.
        if bytes.count > limit {
            errno = EFBIG
            return nil
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// Writes a whole file; false on failure (errno set).
func writeFile(_ path: String, _ text: String) -> Bool {
    let fd: Int32
    do throws(SystemCallError) {
        fd = try systemCall("open") { open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
    } catch {
        errno = error.errno
        return false
    }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n: Int
        do throws(SystemCallError) {
            n = try systemCall("write") { bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) } }
        } catch {
            errno = error.errno
            return false
        }
        offset += n
    }
    return true
}

/// A failure that is not the command line's (a file or folder the host could not make or read): the
/// command says it on standard error and exits `HostExit.failure`, not the usage status.
struct HostFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// Makes a new folder `${TMPDIR:-/tmp}/PREFIXxxxxxx` (mode 0700, `mkdtemp`) and returns its path.
func makeTemporaryFolder(prefix: String) throws(HostFailure) -> String {
    let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    var template = Array((base + "/" + prefix + "XXXXXX").utf8CString)
    guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
        throw HostFailure("cannot make a temporary folder in \(base): \(String(cString: strerror(errno)))")
    }
    return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

/// Removes `path` and everything under it (symbolic links are removed, never followed). Best
/// effort: what cannot be removed stays. Recursive, for the shallow folders the host makes.
func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    guard info.st_mode & S_IFMT == S_IFDIR else {
        unlink(path)
        return
    }
    var names: [String] = []
    if let dir = opendir(path) {
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != ".", name != ".." { names.append(name) }
        }
        closedir(dir)
    }
    for name in names { removeTree(path + "/" + name) }
    rmdir(path)
}
