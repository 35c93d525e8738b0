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
        let bytes = try WholeFile.recordingInput(path, atMost: maxFileBytes)
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

extension WholeFile {
    /// A recording's or a plugin file's bytes (`WholeFile.read`): a regular file only, opened without
    /// blocking (a FIFO at the path is refused, not waited on), its size checked before anything is read.
    /// - Throws: `RecordingError` naming the path: `unreadable` (not there, a read error),
    ///   `notRegularFile`, `tooLarge` over `limit` (seen before reading, or a file that grew past it).
    static func recordingInput(_ path: String, atMost limit: UInt64) throws(RecordingError) -> [UInt8] {
        do throws(WholeFileProblem) {
            return try read(path, atMost: Int(limit), flags: O_NONBLOCK, regularOnly: true)
        } catch {
            switch error {
            case .system(let failure): throw RecordingError(.unreadable(errno: failure.errno), file: path)
            case .notRegular: throw RecordingError(.notRegularFile, file: path)
            case .tooLarge(let bytes, _): throw RecordingError(.tooLarge(bytes: bytes ?? limit + 1, limit: limit), file: path)
            }
        }
    }
}
