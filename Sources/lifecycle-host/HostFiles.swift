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

/// The whole file as text (`WholeFile.read`: a regular file's size is checked before anything is
/// read). Blocking: a pipe (`/dev/stdin`) is read to its end, at most `limit` bytes.
/// - Throws: `WholeFileProblem`.
func readFile(_ path: String, atMost limit: Int) throws(WholeFileProblem) -> String {
    String(decoding: try WholeFile.read(path, atMost: limit), as: UTF8.self)
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
