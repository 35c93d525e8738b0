// The archive binary format, version 1: encoding, decoding and the CRC-32 checksum.

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
/// most 64 levels (the top-level entries are level 0; `UserInfoLimits.maximumDepth`). Decoding checks
/// every length against the bytes that remain before using it, so no input can crash it, make it
/// recurse past its depth limit, or make it allocate more than the input's size; invalid UTF-8,
/// unknown tags, wrong fixed sizes and duplicate keys are refused. Encoding recurses once a level:
/// its callers hand it only values within a depth limit (`ArchiveStore.save`, the isolation
/// protocol's `FrameWriter`), checked in O(1) (`UserInfo.depth`).
package enum ArchiveFormat {
    static let magic: [UInt8] = Array("LCAR".utf8)
    static let version: UInt16 = 1
    package static let headerSize = 20
    /// How deep an archive's lists and dictionaries nest at most: 64.
    package static let maxDepth = 64

    enum Tag: UInt8 {
        case string = 0x73  // s
        case int = 0x69  // i
        case double = 0x64  // d
        case bool = 0x62  // b
        case bytes = 0x78  // x
        case list = 0x6C  // l
        case dict = 0x6D  // m
    }

    /// The complete archive (header and payload) holding `values`: `headerSize + values.encodedSize` bytes.
    ///
    /// Values nested deeper than `maxDepth` are encoded but will not decode; `ArchiveStore.save`
    /// refuses them first (`UserInfo.depth`). Recurses once a level of `values`.
    package static func encode(_ values: UserInfo) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: headerSize)  // the header, written by `seal`
        out.reserveCapacity(headerSize + min(values.encodedSize, 1 << 30))
        appendEntries(values, to: &out)
        seal(&out)
        return out
    }

    /// Writes the header into the first `headerSize` bytes of `archive` (which must be there) for the
    /// payload after them: magic, version, payload length and checksum.
    package static func seal(_ archive: inout [UInt8]) {
        precondition(archive.count >= headerSize, "an archive starts with its \(headerSize)-byte header")
        let checksum = archive.withUnsafeBufferPointer { crc32(buffer: UnsafeBufferPointer(rebasing: $0[headerSize...])) }
        for (offset, byte) in magic.enumerated() { archive[offset] = byte }
        storeLE(version, at: 4, in: &archive)
        storeLE(UInt16(0), at: 6, in: &archive)
        storeLE(UInt64(archive.count - headerSize), at: 8, in: &archive)
        storeLE(checksum, at: 16, in: &archive)
    }

    /// Decodes a complete archive.
    ///
    /// - Throws: `.archiveCorrupt` with the reason alone (no file name): `empty file`,
    ///   `not an archive (bad magic)`, `truncated: …`, `unsupported version …`, `malformed header: …`,
    ///   `trailing bytes: …`, `checksum mismatch`, or `malformed payload: …` saying what and at which byte.
    package static func decode(_ bytes: [UInt8]) throws(ApplicationError) -> UserInfo {
        try checkHeader(Array(bytes.prefix(headerSize)), fileSize: UInt64(bytes.count))
        let stored = loadLE(UInt32.self, bytes, at: 16)
        let computed = bytes.withUnsafeBufferPointer { crc32(buffer: UnsafeBufferPointer(rebasing: $0[headerSize...])) }
        guard stored == computed else { throw ApplicationError(.archiveCorrupt, "checksum mismatch") }
        var parser = Parser(bytes: bytes, offset: headerSize, maxDepth: maxDepth)
        return try parser.entries(end: bytes.count, depth: 0)
    }

    /// Checks an archive's header — its first `headerSize` bytes, or all of a shorter file — against
    /// the size of the whole file, before the payload is read: magic, version, reserved field, and
    /// a payload length that is exactly what follows the header.
    ///
    /// - Throws: `.archiveCorrupt` with the reason alone, as `decode` does (`empty file`,
    ///   `not an archive (bad magic)`, `truncated: …`, `unsupported version …`, `malformed header: …`,
    ///   `trailing bytes: …`).
    package static func checkHeader(_ header: [UInt8], fileSize: UInt64) throws(ApplicationError) {
        func corrupt(_ why: String) -> ApplicationError { ApplicationError(.archiveCorrupt, why) }
        guard fileSize > 0, !header.isEmpty else { throw corrupt("empty file") }
        let magicCount = min(header.count, magic.count)
        guard header[0..<magicCount].elementsEqual(magic[0..<magicCount]) else {
            throw corrupt("not an archive (bad magic)")
        }
        guard header.count >= headerSize, fileSize >= UInt64(headerSize) else {
            throw corrupt("truncated: the header has \(min(UInt64(header.count), fileSize)) of \(headerSize) bytes")
        }
        let fileVersion = loadLE(UInt16.self, header, at: 4)
        guard fileVersion == version else {
            throw corrupt("unsupported version \(fileVersion) (this build reads version \(version))")
        }
        let reserved = loadLE(UInt16.self, header, at: 6)
        guard reserved == 0 else { throw corrupt("malformed header: reserved field is \(reserved), expected 0") }
        let length = loadLE(UInt64.self, header, at: 8)
        let available = fileSize - UInt64(headerSize)
        guard length <= available else { throw corrupt("truncated: the payload has \(available) of \(length) bytes") }
        guard length == available else { throw corrupt("trailing bytes: \(available - length) after the payload") }
    }

    /// Appends `values` as the payload's entries (no header, no checksum): the encoding other
    /// carriers of a userInfo reuse (the isolation protocol's frames). `values.encodedSize` bytes;
    /// recurses once a level of `values` (check `values.depth` first).
    package static func appendEntries(of values: UserInfo, to out: inout [UInt8]) { appendEntries(values, to: &out) }

    /// Decodes entries written by `appendEntries(of:to:)` from `bytes[start..<end]`, with every check
    /// `decode` makes of a payload (lengths against the bytes left, UTF-8, tags, unique keys), the
    /// lists and dictionaries nesting at most `maxDepth` levels (`ArchiveFormat.maxDepth` by default).
    /// - Throws: `.archiveCorrupt`, `malformed payload: …`.
    package static func decodeEntries(_ bytes: [UInt8], from start: Int, to end: Int,
                                      maxDepth: Int = ArchiveFormat.maxDepth) throws(ApplicationError) -> UserInfo {
        guard start >= 0, start <= end, end <= bytes.count else { throw ApplicationError(.archiveCorrupt, "malformed payload: bad bounds") }
        var parser = Parser(bytes: bytes, offset: start, maxDepth: maxDepth)
        return try parser.entries(end: end, depth: 0)
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
    /// Recurses once a level, at most `maxDepth` levels. Each entry's footprint is what it read (its
    /// bytes) and the depth it saw, so the dictionaries it makes know their size and depth at no cost.
    private struct Parser {
        let bytes: [UInt8]
        var offset: Int
        let maxDepth: Int

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
                let (value, levels) = try self.value(end: end, depth: depth)
                // Appended directly: `seen` already rules out duplicates, and the subscript's linear
                // search would make a many-keyed (hostile) archive quadratic.
                info.appendNew(key: key, value: value, footprint: UserInfoFootprint(bytes: offset - start, depth: levels))
            }
            return info
        }

        /// Parses one value that must end by `end`; `depth` is the level of its enclosing container.
        /// - Returns: the value and its own depth (0 for a scalar).
        mutating func value(end: Int, depth: Int) throws(ApplicationError) -> (UserInfoValue, Int) {
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
                return (.string(string), 0)
            case .int, .double:
                guard length == 8 else {
                    throw malformed("\(tag == .int ? "int" : "double") at byte \(start) has length \(length), expected 8")
                }
                let raw = ArchiveFormat.loadLE(UInt64.self, bytes, at: offset)
                offset = bodyEnd
                return (tag == .int ? .int(Int64(bitPattern: raw)) : .double(Double(bitPattern: raw)), 0)
            case .bool:
                guard length == 1 else { throw malformed("bool at byte \(start) has length \(length), expected 1") }
                let byte = bytes[offset]
                guard byte <= 1 else { throw malformed("bool at byte \(start) is \(byte), expected 0 or 1") }
                offset = bodyEnd
                return (.bool(byte == 1), 0)
            case .bytes:
                let value = UserInfoValue.bytes(Array(bytes[offset..<bodyEnd]))
                offset = bodyEnd
                return (value, 0)
            case .list:
                guard depth < maxDepth else { throw tooDeep(start) }
                var items: [UserInfoValue] = []
                var deepest = 0
                while offset < bodyEnd {
                    let (item, levels) = try value(end: bodyEnd, depth: depth + 1)
                    items.append(item)
                    deepest = max(deepest, levels)
                }
                return (.list(items), deepest + 1)
            case .dict:
                guard depth < maxDepth else { throw tooDeep(start) }
                let info = try entries(end: bodyEnd, depth: depth + 1)
                return (.dict(info), info.depth + 1)
            }
        }

        private func tooDeep(_ start: Int) -> ApplicationError {
            malformed("lists and dictionaries nest deeper than \(maxDepth) levels at byte \(start)")
        }

        /// A key for a message: quoted, cut to 40 characters.
        private static func excerpt(_ key: String) -> String {
            key.count > 40 ? jsonQuoted(String(key.prefix(40))) + "…" : jsonQuoted(key)
        }
    }
}
