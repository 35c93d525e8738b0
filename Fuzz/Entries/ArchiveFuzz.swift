// Fuzz target `archive`: the bytes as a state-preservation archive, decoded from memory and loaded
// from a file by the store.
import AppLifecycle
@preconcurrency import Glibc

enum ArchiveFuzz {
    /// The first byte chooses: bit 0, the rest is a payload to seal with a correct header (length and
    /// checksum; otherwise almost every input would stop at the checksum) or a whole archive as it is;
    /// bit 1, load it from a file through `ArchiveStore` too; bit 2, with a store limit of 4096 bytes.
    static func run(_ bytes: [UInt8]) -> FuzzOutcome {
        var outcome = FuzzOutcome()
        guard let mode = bytes.first else { return outcome }
        var archive = Array(bytes.dropFirst())
        if mode & 1 == 1 {
            archive.insert(contentsOf: repeatElement(0, count: ArchiveFormat.headerSize), at: 0)
            ArchiveFormat.seal(&archive)
        }
        var decoded: UserInfo?
        var reason: String?
        do {
            let values = try ArchiveFormat.decode(archive)
            decoded = values
            outcome.accepted = values.count
            // The format is canonical: what decodes encodes to the very same bytes.
            outcome.check(ArchiveFormat.encode(values) == archive, "re-encoding a decoded archive changed its bytes")
        } catch {
            reason = error.message
            outcome.refused(error.message)
            outcome.check(error.code == .archiveCorrupt, "a decoding error of kind \(error.code)")
        }
        // The header alone refuses what decode refuses for its header, with the same words.
        do {
            try ArchiveFormat.checkHeader(Array(archive.prefix(ArchiveFormat.headerSize)), fileSize: UInt64(archive.count))
        } catch {
            outcome.check(reason == error.message, "checkHeader says '\(error.message)', decode '\(reason ?? "fine")'")
        }
        if mode & 2 == 2 { load(archive, limit: mode & 4 == 4 ? 4096 : ArchiveStore.defaultMaxBytes, decoded: decoded, reason: reason, into: &outcome) }
        return outcome
    }

    /// Writes `archive` where the store keeps id `fuzz` (in a folder of its own under `$TMPDIR`, removed
    /// after) and loads it: the same values or the same reason as decoding it from memory (or "too
    /// large" past the limit).
    private static func load(_ archive: [UInt8], limit: Int, decoded: UserInfo?, reason: String?, into outcome: inout FuzzOutcome) {
        let temporary = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(temporary)/lifecycle-fuzz-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { return outcome.check(false, "no temporary folder: errno \(errno)") }
        let folder = String(cString: made)
        defer { rmdir(folder) }
        let store = ArchiveStore(directory: folder, maxBytes: limit)
        guard let path = try? store.path(for: "fuzz") else { return outcome.check(false, "no path for id fuzz") }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return outcome.check(false, "cannot write \(path): errno \(errno)") }
        defer { unlink(path) }
        let written = archive.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == archive.count else { return outcome.check(false, "wrote \(written) of \(archive.count) bytes") }
        do {
            let loaded = try store.load(id: "fuzz")
            // Compared by their encodings: bit for bit (a NaN is not == itself).
            outcome.check(archive.count <= limit && loaded.map(ArchiveFormat.encode) == decoded.map(ArchiveFormat.encode),
                          "the store loaded what decoding refused, or other values")
        } catch {
            let expected = archive.count > limit ? "too large: \(archive.count) bytes, the limit is \(limit); not read" : reason ?? "nothing"
            outcome.check(error.message == "archive \(path) is corrupt: \(expected)", "the store says '\(error.message)', expected '\(expected)'")
        }
    }
}
