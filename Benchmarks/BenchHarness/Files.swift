@preconcurrency import Glibc

// Files for the benchmarks: temporary folders, whole-file reads and writes.

public func makeTemporaryFolder(_ stem: String = "lc-bench") -> String? {
    var template = Array("/tmp/\(stem)-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { return nil }
    return String(cString: made)
}

/// Removes a folder and the files in it (one level: the bench makes no deeper ones).
public func removeFolder(_ folder: String) {
    guard let dir = opendir(folder) else { return }
    var names: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        if name != "." && name != ".." { names.append(name) }
    }
    closedir(dir)
    for name in names { unlink(folder + "/" + name) }
    rmdir(folder)
}

public func readBytes(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 { if errno == EINTR { continue }; return nil }
        if n == 0 { return bytes }
        bytes += chunk[0..<n]
    }
}

public func readText(_ path: String) -> String? { readBytes(path).map { String(decoding: $0, as: UTF8.self) } }

public func writeBytes(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o755) -> Bool {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n < 0 { if errno == EINTR { continue }; return false }
        offset += n
    }
    return true
}

public func writeText(_ path: String, _ text: String) -> Bool { writeBytes(path, Array(text.utf8), mode: 0o644) }

/// A temporary file listing `paths`, one a line (how a parent hands a child its plugins).
public func writeList(_ paths: [String]) -> String? {
    var template = Array("/tmp/lc-bench-list-XXXXXX".utf8CString)
    let fd = mkstemp(&template)
    guard fd >= 0 else { return nil }
    close(fd)
    let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    return writeText(path, paths.joined(separator: "\n") + "\n") ? path : nil
}
