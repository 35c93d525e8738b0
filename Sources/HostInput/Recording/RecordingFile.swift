@preconcurrency import Glibc
import LifecycleRunLoop

/// A recording read whole and checked (docs/recording.md, "The format").
package struct Recording: Equatable, Sendable {
    /// The format this host writes and reads.
    package static let formatVersion = 1
    /// The largest recording read: 256 MiB.
    package static let maxFileBytes: UInt64 = 256 << 20
    /// The longest line: 1 MiB.
    package static let maxLineBytes = 1 << 20
    static let magic = "lifecycle-recording"

    package var version: Int
    package var hostVersion: String
    /// The recorded run's command line after `run`.
    package var arguments: [String]
    package var plugins: [PluginFileIdentity]
    package var entries: [RecordingEntry]
    /// The recorded run's exit status.
    package var status: Int32

    /// Reads and checks `path`: its size before its content.
    /// - Throws: `RecordingError` naming the file.
    package static func read(path: String) throws(RecordingError) -> Recording {
        let bytes = try WholeFile.recordingInput(path, atMost: maxFileBytes)
        return try parse(bytes, file: path)
    }

    /// Checks and reads a recording's bytes: the version first (a file of another version is that,
    /// whatever follows), then every line, then the checksum.
    package static func parse(_ bytes: [UInt8], file: String) throws(RecordingError) -> Recording {
        func damaged(_ line: Int, _ why: String) -> RecordingError { RecordingError(.damaged(line: line, why: why), file: file) }
        // The first line, looked at alone.
        let firstEnd = bytes.prefix(256).firstIndex(of: 10) ?? min(bytes.count, 256)
        let first = String(decoding: bytes[0..<firstEnd], as: UTF8.self).split(separator: "\t", omittingEmptySubsequences: false)
        guard first.count == 2, first[0] == magic else { throw RecordingError(.notARecording, file: file) }
        guard first[1] == String(formatVersion) else { throw RecordingError(.unsupportedVersion(found: String(first[1])), file: file) }

        var recording = Recording(version: formatVersion, hostVersion: "", arguments: [], plugins: [], entries: [], status: 0)
        var hash = SHA256()
        var start = 0, number = 0
        var seenHost = false, seenArgv = false, inEntries = false, ended = false
        while start < bytes.count {
            number += 1
            let limit = min(bytes.count, start + maxLineBytes + 1)
            guard let end = bytes[start..<limit].firstIndex(of: 10) else {
                if limit - start > maxLineBytes { throw damaged(number, "a line longer than \(maxLineBytes) bytes") }
                throw RecordingError(.truncated(lines: number - 1), file: file)
            }
            guard !ended else { throw damaged(number, "a line after the end line") }
            guard let line = String(validating: bytes[start..<end], as: UTF8.self) else { throw damaged(number, "not UTF-8") }
            let fields: [String?]
            do throws(RecordLineError) { fields = try RecordLine.decode(line) } catch { throw damaged(number, error.why) }
            defer { start = end + 1 }
            if number == 1 {
                bytes.withUnsafeBytes { hash.update(UnsafeRawBufferPointer(rebasing: $0[start...end])) }
                continue
            }
            switch fields[0] {
            case "host":
                guard !seenHost, !inEntries, fields.count == 2, let version = fields[1] else { throw damaged(number, "a misplaced or malformed host line") }
                seenHost = true
                recording.hostVersion = version
            case "argv":
                guard !seenArgv, !inEntries else { throw damaged(number, "a misplaced argv line") }
                guard fields.dropFirst().allSatisfy({ $0 != nil }) else { throw damaged(number, "an absent argument") }
                seenArgv = true
                recording.arguments = fields.dropFirst().map { $0! }
            case "plugin":
                guard !inEntries, fields.count == 5, let path = fields[1], let sizeText = fields[2], let sha = fields[3] else {
                    throw damaged(number, "a misplaced or malformed plugin line")
                }
                let size: UInt64
                do throws(RecordLineError) { size = try RecordLine.number(sizeText, UInt64.self, "size") } catch { throw damaged(number, error.why) }
                guard sha.utf8.count == 64, sha.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
                    throw damaged(number, "a plugin's sha256 '\(sha)' is not 64 lowercase hex digits")
                }
                recording.plugins.append(PluginFileIdentity(path: path, size: size, sha256: sha, buildID: fields[4]))
            case "end":
                guard fields.count == 3, let statusText = fields[1], let sum = fields[2] else { throw damaged(number, "a malformed end line") }
                do throws(RecordLineError) { recording.status = try RecordLine.number(statusText, Int32.self, "status") } catch {
                    throw damaged(number, error.why)
                }
                guard SHA256.hex(hash.finalized()) == sum else { throw RecordingError(.checksumMismatch, file: file) }
                ended = true
            default:
                guard seenHost, seenArgv else { throw damaged(number, "an entry before the host and argv lines") }
                inEntries = true
                do throws(RecordLineError) { recording.entries.append(try RecordingEntry(fields: fields)) } catch {
                    throw damaged(number, error.why)
                }
            }
            if !ended { bytes.withUnsafeBytes { hash.update(UnsafeRawBufferPointer(rebasing: $0[start...end])) } }
        }
        guard ended else { throw RecordingError(.truncated(lines: number), file: file) }
        return recording
    }
}

/// Writes a recording as the run goes: the header at once, each entry as one line (one `write`), the
/// end line with the checksum at the end.
///
/// [not thread-safe] One thread at a time (the host holds it under a lock). A write error is kept,
/// not thrown, and `finish` reports it; nothing more is written after it.
package final class RecordingWriter {
    private let fd: Int32
    private let path: String
    private var hash = SHA256()
    private var failure: Int32?

    /// Creates (or truncates) `path`, mode 0644, and writes the header.
    /// - Throws: `RecordingError.writeFailed`.
    package init(path: String, hostVersion: String, arguments: [String], plugins: [PluginFileIdentity]) throws(RecordingError) {
        self.path = path
        do throws(SystemCallError) {
            fd = try systemCall("open") { open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        } catch {
            throw RecordingError(.writeFailed(errno: error.errno), file: path)
        }
        write([Recording.magic, String(Recording.formatVersion)])
        write(["host", hostVersion])
        write(["argv"] + arguments)
        for plugin in plugins { write(["plugin", plugin.path, String(plugin.size), plugin.sha256, plugin.buildID]) }
        if let failure {
            close(fd)
            throw RecordingError(.writeFailed(errno: failure), file: path)
        }
    }

    deinit { if fd >= 0 { close(fd) } }

    package func append(_ entry: RecordingEntry) { write(entry.fields) }

    /// Writes the end line (the run's status and the checksum of everything before it) and closes.
    /// - Throws: the first write error of the file's life.
    package func finish(status: Int32) throws(RecordingError) {
        let sum = SHA256.hex(hash.finalized())
        write(["end", String(status), sum], hashed: false)
        if fsync(fd) != 0, failure == nil, errno != EINVAL { failure = errno }
        if let failure { throw RecordingError(.writeFailed(errno: failure), file: path) }
    }

    private func write(_ fields: [String?], hashed: Bool = true) {
        guard failure == nil else { return }
        var bytes = Array(RecordLine.encode(fields).utf8)
        bytes.append(10)
        if hashed { hash.update(bytes) }
        var offset = 0
        while offset < bytes.count {
            do throws(SystemCallError) {
                offset += try systemCall("write") { bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) } }
            } catch {
                failure = error.errno
                return
            }
        }
    }
}
