// Small helpers of the host: absolute paths, reading and writing whole files.
@preconcurrency import Glibc

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
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var info = stat()
    if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int64(info.st_size) > Int64(limit) {
        errno = EFBIG
        return nil
    }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 { if errno == EINTR { continue }; return nil }
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
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n < 0 { if errno == EINTR { continue }; return false }
        offset += n
    }
    return true
}
