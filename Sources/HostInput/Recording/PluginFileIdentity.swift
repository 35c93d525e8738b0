@preconcurrency import Glibc
import LifecycleRunLoop

/// What identifies a plugin file in a recording: its path, size, SHA-256 and ELF build-id. A replay
/// compares the file it finds with it.
package struct PluginFileIdentity: Equatable, Sendable {
    package var path: String
    package var size: UInt64
    /// 64 lowercase hexadecimal digits.
    package var sha256: String
    /// The `NT_GNU_BUILD_ID` note's bytes in lowercase hexadecimal; nil when the file has none.
    package var buildID: String?

    package init(path: String, size: UInt64, sha256: String, buildID: String?) {
        self.path = path
        self.size = size
        self.sha256 = sha256
        self.buildID = buildID
    }

    /// The largest plugin file identified: 1 GiB.
    package static let maxFileBytes: UInt64 = 1 << 30

    /// Reads `path` whole, checked for size first. A file that is not ELF, or whose
    /// headers point outside it, has no build-id; it is never read out of bounds.
    /// - Throws: `RecordingError` (`unreadable`, `tooLarge`) naming the path.
    package static func of(path: String) throws(RecordingError) -> PluginFileIdentity {
        let bytes = try WholeFile.read(path, atMost: maxFileBytes)
        var hash = SHA256()
        hash.update(bytes)
        return PluginFileIdentity(path: path, size: UInt64(bytes.count), sha256: SHA256.hex(hash.finalized()),
                                  buildID: ELFBuildID.read(bytes).map(SHA256.hex))
    }
}

/// The GNU build-id of an ELF64 little-endian file: the descriptor of the first `NT_GNU_BUILD_ID`
/// note (name "GNU") in a `PT_NOTE` segment. Every offset and length is checked against the bytes.
enum ELFBuildID {
    static func read(_ bytes: [UInt8]) -> [UInt8]? {
        func u16(_ at: Int) -> Int? { at >= 0 && at + 2 <= bytes.count ? Int(bytes[at]) | Int(bytes[at + 1]) << 8 : nil }
        func u32(_ at: Int) -> UInt64? {
            guard at >= 0, at + 4 <= bytes.count else { return nil }
            return (0..<4).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) }
        }
        func u64(_ at: Int) -> UInt64? {
            guard at >= 0, at + 8 <= bytes.count else { return nil }
            return (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) }
        }
        // "\x7fELF", 64-bit, little-endian.
        guard bytes.count >= 64, bytes[0] == 0x7F, bytes[1] == 0x45, bytes[2] == 0x4C, bytes[3] == 0x46, bytes[4] == 2, bytes[5] == 1,
              let phoff = u64(32), let phentsize = u16(54), let phnum = u16(56), phentsize >= 56, phoff < UInt64(bytes.count)
        else { return nil }
        for index in 0..<phnum {
            let header = Int(phoff) + index * phentsize
            guard let type = u32(header), let offset = u64(header + 8), let size = u64(header + 32) else { return nil }
            guard type == 4 /* PT_NOTE */, offset <= UInt64(bytes.count), size <= UInt64(bytes.count) - offset else { continue }
            var at = Int(offset)
            let end = Int(offset + size)
            while at + 12 <= end {
                guard let namesz = u32(at), let descsz = u32(at + 4), let noteType = u32(at + 8) else { return nil }
                let name = at + 12
                let desc = name + Int((namesz + 3) & ~3)
                guard namesz <= UInt64(end - name), descsz <= UInt64(end), desc <= end, Int(descsz) <= end - desc else { break }
                if noteType == 3 /* NT_GNU_BUILD_ID */, namesz == 4, bytes[name..<(name + 4)].elementsEqual([0x47, 0x4E, 0x55, 0]) {
                    return Array(bytes[desc..<(desc + Int(descsz))])
                }
                at = desc + Int((descsz + 3) & ~3)
            }
        }
        return nil
    }
}

/// A regular file read whole, its size checked (`fstat`) before anything is read.
enum WholeFile {
    /// - Throws: `RecordingError` (`unreadable`: not there, not a regular file, a read error;
    ///   `tooLarge` over `limit`) naming the path.
    static func read(_ path: String, atMost limit: UInt64) throws(RecordingError) -> [UInt8] {
        let fd: Int32
        do throws(SystemCallError) {
            fd = try systemCall("open") { open(path, O_RDONLY | O_CLOEXEC) }
        } catch {
            throw RecordingError(.unreadable(errno: error.errno), file: path)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw RecordingError(.unreadable(errno: errno), file: path) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw RecordingError(.unreadable(errno: EISDIR), file: path) }
        let size = UInt64(max(0, info.st_size))
        guard size <= limit else { throw RecordingError(.tooLarge(bytes: size, limit: limit), file: path) }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        var offset = 0
        while offset < bytes.count {
            let count: Int
            do throws(SystemCallError) {
                count = try systemCall("read") { bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + offset, min(1 << 16, $0.count - offset)) } }
            } catch {
                throw RecordingError(.unreadable(errno: error.errno), file: path)
            }
            if count == 0 { break }  // shorter than fstat said: what was read is the file
            offset += count
        }
        if offset < bytes.count { bytes.removeSubrange(offset...) }
        return bytes
    }
}
