@preconcurrency import Glibc

/// Why a recording (or a plugin file's identity) cannot be read or written: a structured cause, and a
/// message naming the file that a user can act on.
package struct RecordingError: Error, Equatable, CustomStringConvertible {
    package enum Cause: Equatable, Sendable {
        /// `open`, `fstat` or `read` failed with this errno.
        case unreadable(errno: Int32)
        /// Not a regular file (a folder, a FIFO, a device, a socket): refused before anything was read.
        case notRegularFile
        /// Over the size allowed (`limit`: a recording's `Recording.maxFileBytes`, a plugin file's
        /// `PluginFileIdentity.maxFileBytes`), seen before anything was read (`bytes`: its size), or a
        /// file that grew past the limit while read (`bytes`: the limit + 1, as much as was read).
        case tooLarge(bytes: UInt64, limit: UInt64)
        /// Its first line is not `lifecycle-recording<TAB>VERSION`.
        case notARecording
        /// A recording of another format version (the version as written).
        case unsupportedVersion(found: String)
        /// It has no end line: `lines` complete lines, then nothing or half a line.
        case truncated(lines: Int)
        /// A line breaks the format (its number, from 1, and what is wrong).
        case damaged(line: Int, why: String)
        /// The end line's SHA-256 is not that of the bytes before it.
        case checksumMismatch
        /// Creating or writing the file failed with this errno.
        case writeFailed(errno: Int32)
    }

    package let cause: Cause
    /// The file, as given.
    package let file: String

    package init(_ cause: Cause, file: String) {
        self.cause = cause
        self.file = file
    }

    package var message: String {
        switch cause {
        case .unreadable(let code): "\(file): cannot be read: \(String(cString: strerror(code)))"
        case .notRegularFile: "\(file): not a regular file"
        case .tooLarge(let bytes, let limit): "\(file): \(bytes) bytes, more than the \(limit) allowed"
        case .notARecording: "\(file): not a lifecycle recording (its first line is not 'lifecycle-recording<TAB>VERSION')"
        case .unsupportedVersion(let found):
            "\(file): a recording of format version \(found); this lifecycle-host reads version \(Recording.formatVersion)"
        case .truncated(let lines): "\(file): truncated: \(lines) lines and no end line (was the recorded run killed?)"
        case .damaged(let line, let why): "\(file): damaged at line \(line): \(why)"
        case .checksumMismatch: "\(file): damaged: its checksum does not match its content"
        case .writeFailed(let code): "\(file): cannot be written: \(String(cString: strerror(code)))"
        }
    }

    package var description: String { message }
}
