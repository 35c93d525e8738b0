import CLifecycleSystem
import Glibc

/// Reads and writes one archive file per observer id in a folder: `<directory>/<id>.lcarchive`, in
/// the format of ``ArchiveFormat``.
///
/// Guarantees:
/// - `save` is atomic: whatever happens to the process (a crash, `SIGKILL`, a purge), the archive file
///   holds either the previous complete save or the new one, never a mix. A failed save leaves the
///   previous archive untouched and removes its temporary file.
/// - `load` returns exactly what the last completed `save` stored, or nil when nothing was saved; a
///   damaged file is reported as an error, never half-decoded.
/// - Temporary files left behind by a killed process (`.<id>.lcarchive.<pid>.tmp`) are never read and
///   never disturb a later save; they are not swept either (a live process in another pid namespace
///   could own one): a process with the same pid overwrites its own when it saves that id again.
///
/// [thread-safe] for different ids. Saves of one id must not overlap within one process: they share
/// the temporary file name (the engine saves from its loop thread only).
///
/// `package`, not internal, so that the package's helper executables (the archive tests' child
/// process) can use it without `@testable`, which release builds do not allow.
package struct ArchiveStore: Sendable {
    /// The folder holding the archives (trailing slashes removed).
    package let directory: String

    /// The longest id, in UTF-8 bytes; keeps the temporary file name under the 255-byte limit.
    static let maxIDBytes = 200
    /// The suffix of every archive file.
    static let fileExtension = ".lcarchive"

    /// A store over `directory`; nothing is touched on disk until the first save.
    package init(directory: String) {
        var directory = directory
        while directory.utf8.count > 1, directory.hasSuffix("/") { directory.removeLast() }
        self.directory = directory
    }

    /// The path of the archive of `id`: `<directory>/<id>.lcarchive`.
    ///
    /// - Throws: `.invalidArgument` when `id` is empty, longer than 200 bytes, starts with `.`, or holds
    ///   a character other than `A-Z a-z 0-9 . _ -`; or when the folder is empty or holds a NUL byte.
    package func path(for id: String) throws(ApplicationError) -> String {
        try Self.validate(id: id)
        guard !directory.isEmpty else {
            throw ApplicationError(.invalidArgument, "archive folder for id \(jsonQuoted(id)) is empty")
        }
        guard !directory.utf8.contains(0) else {
            throw ApplicationError(.invalidArgument, "archive folder \(jsonQuoted(directory)) contains a NUL byte")
        }
        return Self.join(directory, id + Self.fileExtension)
    }

    /// Reads the archive of `id`.
    ///
    /// - Returns: the stored values, or nil when there is no archive file (nor folder).
    /// - Throws: `.invalidArgument` for a bad id (see `path(for:)`); `.archiveUnreadable` when the file
    ///   exists but cannot be read (a directory, a FIFO, no permission, an I/O error);
    ///   `.archiveCorrupt` when its contents are not a valid archive. Messages name the file and the reason.
    package func load(id: String) throws(ApplicationError) -> UserInfo? {
        let path = try path(for: id)
        guard let bytes = try Self.readFile(path) else { return nil }
        do throws(ApplicationError) {
            return try ArchiveFormat.decode(bytes)
        } catch {
            throw ApplicationError(.archiveCorrupt, "archive \(path) is corrupt: \(error.message)")
        }
    }

    /// Replaces the archive of `id` with `values`, atomically and durably.
    ///
    /// Creates the folder (and missing parents, mode 0700) if needed, writes the whole archive to
    /// `<directory>/.<id>.lcarchive.<pid>.tmp` (mode 0600), fsyncs it, renames it over the archive and
    /// fsyncs the folder. Blocks for the time of the write and both fsyncs.
    ///
    /// - Throws: `.invalidArgument` for a bad id, or values nesting lists and dictionaries deeper than
    ///   64 levels (nothing is written); `.archiveWriteFailed` when any step fails: the temporary file is
    ///   removed and the previous archive is untouched — except when only the final folder fsync fails,
    ///   where the new archive is in place but may revert to the previous one after a power loss (the
    ///   message says so).
    package func save(_ values: UserInfo, id: String) throws(ApplicationError) {
        let path = try path(for: id)
        guard !ArchiveFormat.nestsTooDeep(values) else {
            throw ApplicationError(.invalidArgument,
                                   "archive \(path) was not saved: its lists and dictionaries nest deeper than \(ArchiveFormat.maxDepth) levels")
        }
        let bytes = ArchiveFormat.encode(values)
        func failed(_ step: String, _ code: Int32) -> ApplicationError {
            ApplicationError(.archiveWriteFailed,
                             "archive \(path) could not be saved: \(step): \(errnoDescription(code)) (errno \(code))")
        }

        let folderCode = Self.makeDirectory(directory)
        guard folderCode == 0 else { throw failed("cannot create folder \(directory)", folderCode) }

        let temp = Self.join(directory, ".\(id)\(Self.fileExtension).\(getpid()).tmp")
        let fd = retryingEINTR { open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        guard fd >= 0 else { throw failed("cannot create temporary file \(temp)", errno) }

        var step = ""
        var code: Int32 = 0
        if let writeCode = Self.writeAll(fd, bytes) {
            (step, code) = ("cannot write temporary file \(temp)", writeCode)
        } else if retryingEINTR({ fsync(fd) }) != 0 {
            (step, code) = ("cannot fsync temporary file \(temp)", errno)
        }
        // close() is never retried on Linux: the descriptor is released even when it reports EINTR.
        if close(fd) != 0, errno != EINTR, step.isEmpty {
            (step, code) = ("cannot close temporary file \(temp)", errno)
        }
        if step.isEmpty, retryingEINTR({ rename(temp, path) }) != 0 {
            (step, code) = ("cannot rename \(temp) over the archive", errno)
        }
        guard step.isEmpty else {
            unlink(temp)
            throw failed(step, code)
        }

        let syncCode = Self.syncDirectory(directory)
        guard syncCode == 0 else {
            throw ApplicationError(.archiveWriteFailed,
                                   "archive \(path) was replaced, but syncing folder \(directory) failed: \(errnoDescription(syncCode)) (errno \(syncCode)); after a power loss it may revert to the previous archive")
        }
    }

    /// Removes the archive of `id`, durably; does nothing when there is none.
    ///
    /// - Throws: `.invalidArgument` for a bad id; `.archiveWriteFailed` when the file exists but cannot be
    ///   removed, or its folder cannot be synced afterwards.
    package func remove(id: String) throws(ApplicationError) {
        let path = try path(for: id)
        if retryingEINTR({ unlink(path) }) != 0 {
            let code = errno
            if code == ENOENT || code == ENOTDIR { return }
            throw ApplicationError(.archiveWriteFailed,
                                   "archive \(path) could not be removed: \(errnoDescription(code)) (errno \(code))")
        }
        let syncCode = Self.syncDirectory(directory)
        guard syncCode == 0 else {
            throw ApplicationError(.archiveWriteFailed,
                                   "archive \(path) was removed, but syncing folder \(directory) failed: \(errnoDescription(syncCode)) (errno \(syncCode)); after a power loss it may reappear")
        }
    }

    // MARK: - Ids and paths

    /// Checks an archive id; see `path(for:)`.
    static func validate(id: String) throws(ApplicationError) {
        func invalid(_ why: String) -> ApplicationError {
            let shown = id.utf8.count > 64 ? jsonQuoted(String(id.prefix(32))) + "…" : jsonQuoted(id)
            return ApplicationError(.invalidArgument, "archive id \(shown) is invalid: \(why)")
        }
        if id.isEmpty { throw invalid("it is empty") }
        if id.utf8.count > maxIDBytes { throw invalid("it is \(id.utf8.count) bytes long, the limit is \(maxIDBytes)") }
        if id.utf8.first == UInt8(ascii: ".") { throw invalid("it must not start with '.'") }
        for scalar in id.unicodeScalars {
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9", ".", "_", "-": continue
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                let shown = scalar.value < 0x21 || scalar.value > 0x7E
                    ? "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex : "'\(scalar)'"
                throw invalid("it contains \(shown); only A-Z a-z 0-9 . _ - are allowed")
            }
        }
    }

    private static func join(_ directory: String, _ name: String) -> String {
        directory == "/" ? "/" + name : directory + "/" + name
    }

    // MARK: - File I/O (every call retries EINTR; errors come back as errno values)

    /// Reads the whole file at `path`; nil when it does not exist.
    private static func readFile(_ path: String) throws(ApplicationError) -> [UInt8]? {
        func unreadable(_ why: String) -> ApplicationError {
            ApplicationError(.archiveUnreadable, "archive \(path) is unreadable: \(why)")
        }
        func unreadable(errno code: Int32) -> ApplicationError {
            unreadable("\(errnoDescription(code)) (errno \(code))")
        }
        // O_NONBLOCK: opening a FIFO planted at the path must not block; regular files ignore it.
        let fd = retryingEINTR { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            throw unreadable(errno: code)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw unreadable(errno: errno) }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw unreadable("it is a directory")
        default: throw unreadable("it is not a regular file")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(max(Int(info.st_size), 0), 64 << 20))
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { buffer in
                retryingEINTR { read(fd, buffer.baseAddress, buffer.count) }
            }
            if count < 0 { throw unreadable(errno: errno) }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
        }
    }

    /// Writes every byte; returns nil on success or the errno of the failure.
    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
        bytes.withUnsafeBytes { buffer -> Int32? in
            guard let base = buffer.baseAddress else { return nil }
            var offset = 0
            while offset < buffer.count {
                let written = retryingEINTR { write(fd, base + offset, buffer.count - offset) }
                if written < 0 { return errno }
                if written == 0 { return EIO }
                offset += written
            }
            return nil
        }
    }

    /// fsyncs a folder so that a rename or unlink in it is durable; 0 or an errno value.
    /// File systems that cannot fsync a folder (EINVAL) count as success.
    private static func syncDirectory(_ directory: String) -> Int32 {
        let fd = retryingEINTR { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        if retryingEINTR({ fsync(fd) }) != 0, errno != EINVAL { return errno }
        return 0
    }

    /// Creates `directory` and its missing parents with mode 0700; 0 when it exists (as a folder)
    /// afterwards, else an errno value (ENOTDIR when a file is in the way).
    private static func makeDirectory(_ directory: String) -> Int32 {
        if mkdir(directory, 0o700) == 0 { return 0 }
        var code = errno
        if code == ENOENT, let slash = directory.utf8.lastIndex(of: UInt8(ascii: "/")) {
            let parent = slash == directory.utf8.startIndex ? "/" : String(directory[..<slash])
            if parent != directory {
                let parentCode = makeDirectory(parent)
                if parentCode != 0 { return parentCode }
                if mkdir(directory, 0o700) == 0 { return 0 }
                code = errno
            }
        }
        if code == EEXIST {
            var info = stat()
            guard stat(directory, &info) == 0 else { return errno }
            return info.st_mode & S_IFMT == S_IFDIR ? 0 : ENOTDIR
        }
        return code
    }
}

/// Calls `call` again while it fails with EINTR.
@inline(__always)
private func retryingEINTR<T: BinaryInteger>(_ call: () -> T) -> T {
    while true {
        let result = call()
        if result == -1, errno == EINTR { continue }
        return result
    }
}

/// The archive file format, version 1. All integers are little-endian.
///
/// ```
/// header (20 bytes)
///   0  4  magic "LCAR"
///   4  2  u16 version = 1
///   6  2  u16 reserved = 0
///   8  8  u64 payload length
///  16  4  u32 CRC-32 (IEEE 802.3, as zlib) of the payload
/// payload: the top-level entries, back to back
///   entry = u64 key length, key (UTF-8), value
///   value = u8 tag, u64 body length, body
///     's' string  body: UTF-8
///     'i' int     body: 8 bytes, two's complement
///     'd' double  body: 8 bytes, the IEEE 754 bit pattern (keeps -0.0 and NaN payloads)
///     'b' bool    body: 1 byte, 0 or 1
///     'x' bytes   body: the raw bytes
///     'l' list    body: values, back to back
///     'm' dict    body: entries, back to back
/// ```
///
/// Keys keep their order; a key appears at most once per dictionary. Lists and dictionaries nest at
/// most 64 levels (the top-level entries are level 0). Decoding checks every length against the bytes
/// that remain before using it, so no input can crash it, make it recurse past 64 levels, or make it
/// allocate more than the input's size; invalid UTF-8, unknown tags, wrong fixed sizes and duplicate
/// keys are refused.
enum ArchiveFormat {
    static let magic: [UInt8] = Array("LCAR".utf8)
    static let version: UInt16 = 1
    static let headerSize = 20
    static let maxDepth = 64

    enum Tag: UInt8 {
        case string = 0x73  // s
        case int = 0x69  // i
        case double = 0x64  // d
        case bool = 0x62  // b
        case bytes = 0x78  // x
        case list = 0x6C  // l
        case dict = 0x6D  // m
    }

    /// The complete archive (header and payload) holding `values`.
    ///
    /// Values nested deeper than `maxDepth` are encoded but will not decode; `ArchiveStore.save`
    /// refuses them first (see `nestsTooDeep`).
    static func encode(_ values: UserInfo) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(headerSize + encodedSize(values))
        out.append(contentsOf: magic)
        appendLE(version, to: &out)
        appendLE(UInt16(0), to: &out)
        appendLE(UInt64(0), to: &out)  // payload length, patched below
        appendLE(UInt32(0), to: &out)  // checksum, patched below
        appendEntries(values, to: &out)
        let checksum = out.withUnsafeBufferPointer { crc32(buffer: UnsafeBufferPointer(rebasing: $0[headerSize...])) }
        storeLE(UInt64(out.count - headerSize), at: 8, in: &out)
        storeLE(checksum, at: 16, in: &out)
        return out
    }

    /// Decodes a complete archive.
    ///
    /// - Throws: `.archiveCorrupt` with the reason alone (no file name): `empty file`,
    ///   `not an archive (bad magic)`, `truncated: …`, `unsupported version …`, `malformed header: …`,
    ///   `trailing bytes: …`, `checksum mismatch`, or `malformed payload: …` saying what and at which byte.
    static func decode(_ bytes: [UInt8]) throws(ApplicationError) -> UserInfo {
        func corrupt(_ why: String) -> ApplicationError { ApplicationError(.archiveCorrupt, why) }
        guard !bytes.isEmpty else { throw corrupt("empty file") }
        let magicCount = min(bytes.count, magic.count)
        guard bytes[0..<magicCount].elementsEqual(magic[0..<magicCount]) else {
            throw corrupt("not an archive (bad magic)")
        }
        guard bytes.count >= headerSize else {
            throw corrupt("truncated: the header has \(bytes.count) of \(headerSize) bytes")
        }
        let fileVersion = loadLE(UInt16.self, bytes, at: 4)
        guard fileVersion == version else {
            throw corrupt("unsupported version \(fileVersion) (this build reads version \(version))")
        }
        let reserved = loadLE(UInt16.self, bytes, at: 6)
        guard reserved == 0 else { throw corrupt("malformed header: reserved field is \(reserved), expected 0") }
        let length = loadLE(UInt64.self, bytes, at: 8)
        let available = UInt64(bytes.count - headerSize)
        guard length <= available else { throw corrupt("truncated: the payload has \(available) of \(length) bytes") }
        guard length == available else { throw corrupt("trailing bytes: \(available - length) after the payload") }
        let stored = loadLE(UInt32.self, bytes, at: 16)
        let computed = bytes.withUnsafeBufferPointer { crc32(buffer: UnsafeBufferPointer(rebasing: $0[headerSize...])) }
        guard stored == computed else { throw corrupt("checksum mismatch") }
        var parser = Parser(bytes: bytes, offset: headerSize)
        return try parser.entries(end: bytes.count, depth: 0)
    }

    /// Whether `values` nests lists and dictionaries deeper than `maxDepth`. Stops at the first level
    /// past the limit, so it cannot overflow the stack on absurd input.
    static func nestsTooDeep(_ values: UserInfo) -> Bool {
        func tooDeep(_ value: UserInfoValue, level: Int) -> Bool {
            switch value {
            case .list(let items):
                return level >= maxDepth || items.contains { tooDeep($0, level: level + 1) }
            case .dict(let info):
                return level >= maxDepth || info.values_.contains { tooDeep($0, level: level + 1) }
            default:
                return false
            }
        }
        return values.values_.contains { tooDeep($0, level: 0) }
    }

    // MARK: CRC-32

    /// Slicing-by-8 tables: `crcTables[k * 256 + b]` is the CRC of byte `b` followed by `k` zero bytes.
    private static let crcTables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for index in 0..<256 {
            var crc = UInt32(index)
            for _ in 0..<8 { crc = crc & 1 != 0 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
            tables[index] = crc
        }
        for slice in 1..<8 {
            for index in 0..<256 {
                let previous = tables[(slice - 1) * 256 + index]
                tables[slice * 256 + index] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// CRC-32 (IEEE 802.3, reflected, as zlib's `crc32`): `crc32("123456789") == 0xCBF43926`.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBufferPointer { crc32(buffer: $0) }
    }

    /// CRC-32 of `buffer`, eight bytes per step (slicing-by-8), so that multi-megabyte archives stay
    /// cheap to check even in unoptimized builds.
    static func crc32(buffer: UnsafeBufferPointer<UInt8>) -> UInt32 {
        guard let base = buffer.baseAddress else { return 0 }
        return crcTables.withUnsafeBufferPointer { tables -> UInt32 in
            guard let table = tables.baseAddress else { return 0 }
            let raw = UnsafeRawPointer(base)
            var crc: UInt32 = 0xFFFF_FFFF
            var offset = 0
            let end8 = buffer.count & ~7
            while offset < end8 {
                let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) ^ UInt64(crc)
                let low = Int(truncatingIfNeeded: word)
                let high = Int(truncatingIfNeeded: word >> 32)
                crc = table[7 * 256 + (low & 0xFF)] ^ table[6 * 256 + ((low >> 8) & 0xFF)]
                    ^ table[5 * 256 + ((low >> 16) & 0xFF)] ^ table[4 * 256 + ((low >> 24) & 0xFF)]
                    ^ table[3 * 256 + (high & 0xFF)] ^ table[2 * 256 + ((high >> 8) & 0xFF)]
                    ^ table[1 * 256 + ((high >> 16) & 0xFF)] ^ table[(high >> 24) & 0xFF]
                offset += 8
            }
            while offset < buffer.count {
                crc = table[Int((crc ^ UInt32(base[offset])) & 0xFF)] ^ (crc >> 8)
                offset += 1
            }
            return crc ^ 0xFFFF_FFFF
        }
    }

    // MARK: Encoding

    private static func encodedSize(_ info: UserInfo) -> Int {
        var size = 0
        for index in 0..<info.count {
            size += 8 + info.keys_[index].utf8.count + encodedSize(info.values_[index])
        }
        return size
    }

    private static func encodedSize(_ value: UserInfoValue) -> Int {
        switch value {
        case .string(let s): return 9 + s.utf8.count
        case .int, .double: return 17
        case .bool: return 10
        case .bytes(let b): return 9 + b.count
        case .list(let items): return items.reduce(9) { $0 + encodedSize($1) }
        case .dict(let info): return 9 + encodedSize(info)
        }
    }

    private static func appendEntries(_ info: UserInfo, to out: inout [UInt8]) {
        for index in 0..<info.count {
            let key = info.keys_[index]
            appendLE(UInt64(key.utf8.count), to: &out)
            out.append(contentsOf: key.utf8)
            appendValue(info.values_[index], to: &out)
        }
    }

    private static func appendValue(_ value: UserInfoValue, to out: inout [UInt8]) {
        switch value {
        case .string(let s):
            appendHeader(.string, UInt64(s.utf8.count), to: &out)
            out.append(contentsOf: s.utf8)
        case .int(let i):
            appendHeader(.int, 8, to: &out)
            appendLE(UInt64(bitPattern: i), to: &out)
        case .double(let d):
            appendHeader(.double, 8, to: &out)
            appendLE(d.bitPattern, to: &out)
        case .bool(let b):
            appendHeader(.bool, 1, to: &out)
            out.append(b ? 1 : 0)
        case .bytes(let b):
            appendHeader(.bytes, UInt64(b.count), to: &out)
            out.append(contentsOf: b)
        case .list(let items):
            appendHeader(.list, 0, to: &out)
            let bodyStart = out.count
            for item in items { appendValue(item, to: &out) }
            storeLE(UInt64(out.count - bodyStart), at: bodyStart - 8, in: &out)
        case .dict(let info):
            appendHeader(.dict, 0, to: &out)
            let bodyStart = out.count
            appendEntries(info, to: &out)
            storeLE(UInt64(out.count - bodyStart), at: bodyStart - 8, in: &out)
        }
    }

    private static func appendHeader(_ tag: Tag, _ length: UInt64, to out: inout [UInt8]) {
        out.append(tag.rawValue)
        appendLE(length, to: &out)
    }

    private static func appendLE<T: FixedWidthInteger>(_ value: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    private static func storeLE<T: FixedWidthInteger>(_ value: T, at offset: Int, in out: inout [UInt8]) {
        for index in 0..<MemoryLayout<T>.size {
            out[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index))
        }
    }

    /// Reads a little-endian integer; the caller has checked that the bytes are there.
    fileprivate static func loadLE<T: FixedWidthInteger>(_ type: T.Type, _ bytes: [UInt8], at offset: Int) -> T {
        var value: T = 0
        for index in 0..<MemoryLayout<T>.size {
            value |= T(truncatingIfNeeded: bytes[offset + index]) << (8 * index)
        }
        return value
    }

    // MARK: Decoding

    /// Walks the payload; every read is preceded by a check against `end` of the enclosing body.
    private struct Parser {
        let bytes: [UInt8]
        var offset: Int

        private func malformed(_ what: String) -> ApplicationError {
            ApplicationError(.archiveCorrupt, "malformed payload: \(what)")
        }

        /// Parses entries until `end`; `depth` is the nesting level of the dictionary they belong to.
        mutating func entries(end: Int, depth: Int) throws(ApplicationError) -> UserInfo {
            var info = UserInfo()
            var seen = Set<String>()
            while offset < end {
                let start = offset
                guard end - offset >= 8 else { throw malformed("truncated key length at byte \(start)") }
                let keyLength = ArchiveFormat.loadLE(UInt64.self, bytes, at: offset)
                offset += 8
                guard keyLength <= UInt64(end - offset) else {
                    throw malformed("key at byte \(start) claims \(keyLength) bytes but only \(end - offset) remain")
                }
                let keyEnd = offset + Int(keyLength)
                guard let key = String(validating: bytes[offset..<keyEnd], as: UTF8.self) else {
                    throw malformed("key at byte \(start) is not valid UTF-8")
                }
                offset = keyEnd
                guard seen.insert(key).inserted else {
                    throw malformed("duplicate key \(Self.excerpt(key)) at byte \(start)")
                }
                guard offset < end else { throw malformed("key \(Self.excerpt(key)) at byte \(start) has no value") }
                let value = try self.value(end: end, depth: depth)
                // Appended directly: `seen` already rules out duplicates, and the subscript's linear
                // search would make a many-keyed (hostile) archive quadratic.
                info.keys_.append(key)
                info.values_.append(value)
            }
            return info
        }

        /// Parses one value that must end by `end`; `depth` is the level of its enclosing container.
        mutating func value(end: Int, depth: Int) throws(ApplicationError) -> UserInfoValue {
            let start = offset
            guard end - offset >= 9 else { throw malformed("truncated value header at byte \(start)") }
            let tagByte = bytes[offset]
            let length = ArchiveFormat.loadLE(UInt64.self, bytes, at: offset + 1)
            offset += 9
            guard length <= UInt64(end - offset) else {
                throw malformed("value at byte \(start) claims \(length) bytes but only \(end - offset) remain")
            }
            let bodyEnd = offset + Int(length)
            guard let tag = Tag(rawValue: tagByte) else {
                throw malformed("unknown value tag 0x\(String(tagByte, radix: 16)) at byte \(start)")
            }
            switch tag {
            case .string:
                guard let string = String(validating: bytes[offset..<bodyEnd], as: UTF8.self) else {
                    throw malformed("string at byte \(start) is not valid UTF-8")
                }
                offset = bodyEnd
                return .string(string)
            case .int, .double:
                guard length == 8 else {
                    throw malformed("\(tag == .int ? "int" : "double") at byte \(start) has length \(length), expected 8")
                }
                let raw = ArchiveFormat.loadLE(UInt64.self, bytes, at: offset)
                offset = bodyEnd
                return tag == .int ? .int(Int64(bitPattern: raw)) : .double(Double(bitPattern: raw))
            case .bool:
                guard length == 1 else { throw malformed("bool at byte \(start) has length \(length), expected 1") }
                let byte = bytes[offset]
                guard byte <= 1 else { throw malformed("bool at byte \(start) is \(byte), expected 0 or 1") }
                offset = bodyEnd
                return .bool(byte == 1)
            case .bytes:
                let value = UserInfoValue.bytes(Array(bytes[offset..<bodyEnd]))
                offset = bodyEnd
                return value
            case .list:
                guard depth < ArchiveFormat.maxDepth else { throw tooDeep(start) }
                var items: [UserInfoValue] = []
                while offset < bodyEnd { items.append(try value(end: bodyEnd, depth: depth + 1)) }
                return .list(items)
            case .dict:
                guard depth < ArchiveFormat.maxDepth else { throw tooDeep(start) }
                return .dict(try entries(end: bodyEnd, depth: depth + 1))
            }
        }

        private func tooDeep(_ start: Int) -> ApplicationError {
            malformed("lists and dictionaries nest deeper than \(ArchiveFormat.maxDepth) levels at byte \(start)")
        }

        /// A key for a message: quoted, cut to 40 characters.
        private static func excerpt(_ key: String) -> String {
            key.count > 40 ? jsonQuoted(String(key.prefix(40))) + "…" : jsonQuoted(key)
        }
    }
}
