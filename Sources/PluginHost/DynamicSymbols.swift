import Glibc

/// A plugin image's own dynamic symbol table, read where the dynamic linker mapped it: the loader
/// looks up the entry symbol and the delegate functions a plugin exports here, through the image's
/// GNU (`DT_GNU_HASH`) or System V (`DT_HASH`) hash table, instead of with one `dlsym` each.
///
/// Why: most of the 38 delegate symbols are missing from any one plugin, and a `dlsym` that misses
/// searches the plugin and every library it needs, then formats and frees an error message — about
/// 1,100 instructions each, 56 of them a load. Here a missing name costs, in a plugin exporting at
/// most 64 symbols, one test of its length against the lengths of the names the plugin exports;
/// otherwise its hash and, nearly always, one word of the table's Bloom filter.
///
/// The answer is `dlsym(handle, name)`'s as far as the plugin's own image goes: the same hash table,
/// the same rules (an undefined, local or hidden symbol is not the plugin's; a weak one is). A name
/// the image does not define is `.absent` even when a library the plugin needs defines it: a
/// delegate function is the plugin's own. What this reader does not decide the way the dynamic
/// linker would — a versioned symbol, an indirect function (`STT_GNU_IFUNC`), a thread-local,
/// unique or absolute symbol, a table it cannot place — is `.unsure`: ask `dlsym`.
///
/// The tables are the plugin's data, read as hostile input: every address read is checked first
/// to lie inside one of the image's readable segments, and every walk along a chain is bounded.
/// [thread-safe: immutable]
struct DynamicSymbols {
    /// What a lookup found.
    enum Answer {
        case found(UnsafeMutableRawPointer)
        case absent
        case unsure
    }

    private enum Hash {
        /// No table this reader can use: every lookup is `.unsure`.
        case none
        case gnu(buckets: UInt, bucketCount: UInt32, symbolOffset: UInt32, bloom: UInt, bloomMask: UInt32, bloomShift: UInt32,
                 chain: UInt, chainCount: UInt)
        case sysv(buckets: UInt, bucketCount: UInt32, chain: UInt, chainCount: UInt32)
    }

    /// A table of the image and how many bytes of it lie inside its readable segment.
    private typealias Table = (address: UInt, room: UInt)

    private let hash: Hash
    private let base: UInt
    private let symbols: UInt
    /// How many symbol entries lie inside the segment of `symbols`.
    private let symbolCount: UInt
    private let strings: UInt
    /// How many string-table bytes may be read: `DT_STRSZ`, at most what lies inside the segment.
    private let stringSize: UInt
    /// The `DT_VERSYM` table (0: none), and how many of its entries lie inside the segment.
    private let versions: UInt
    private let versionCount: UInt
    /// Bit `n % 128` is set when a name the table can answer is `n` bytes long (every bit when the
    /// table exports more than 64 names or cannot be listed): a name of another length is absent.
    private var lengths = everyLength

    private static let everyLength = (UInt64.max, UInt64.max)

    private static func load<T>(_ address: UInt, as type: T.Type) -> T {
        UnsafeRawPointer(bitPattern: address)!.loadUnaligned(as: T.self)
    }

    private init(base: UInt, hash: Hash = .none, symbols: Table = (0, 0), strings: Table = (0, 0), stringSize: UInt = 0,
                 versions: Table = (0, 0))
    {
        self.hash = hash
        self.base = base
        self.symbols = symbols.address
        symbolCount = symbols.room / UInt(MemoryLayout<Elf64_Sym>.size)
        self.strings = strings.address
        self.stringSize = min(stringSize, strings.room)
        self.versions = versions.address
        versionCount = versions.room / 2
        lengths = nameLengths()
    }

    /// Reads the dynamic section of an image loaded at `base`, whose readable segments are
    /// `segments`; `dynamicStart` and `dynamicSize` are `PT_DYNAMIC`'s (relative to `base`). A
    /// section or table it cannot use gives a reader whose every answer is `.unsure`.
    static func read(base: UInt, dynamicStart: UInt, dynamicSize: UInt, segments: ReadableSegments) -> DynamicSymbols {
        let unusable = DynamicSymbols(base: base)
        let (dynamic, overflow) = base.addingReportingOverflow(dynamicStart)
        guard !overflow, dynamicSize >= 16, let readable = segments.room(at: dynamic) else { return unusable }
        var gnu: UInt = 0, sysv: UInt = 0, symtab: UInt = 0, strtab: UInt = 0, strsz: UInt = 0, versym: UInt = 0
        var entry = dynamic
        let end = dynamic + min(dynamicSize, readable) / 16 * 16
        scan: while entry < end {
            let value = UInt(load(entry + 8, as: UInt64.self))
            switch load(entry, as: Int64.self) {
            case Int64(DT_NULL): break scan
            case Int64(DT_GNU_HASH): gnu = value
            case Int64(DT_HASH): sysv = value
            case Int64(DT_SYMTAB): symtab = value
            case Int64(DT_STRTAB): strtab = value
            case Int64(DT_STRSZ): strsz = value
            case Int64(DT_VERSYM): versym = value
            case Int64(DT_SYMENT): guard value == UInt(MemoryLayout<Elf64_Sym>.size) else { return unusable }
            default: break
            }
            entry += 16
        }
        let table = gnu != 0 ? gnu : sysv
        guard symtab != 0, strtab != 0, table != 0 else { return unusable }
        // The dynamic linker may have added the load base to these addresses in place (glibc does
        // where the section is writable) or not: whichever reading puts every one of them inside
        // the image, and only that one. Both (with a base other than 0) or neither: not placed.
        func inside(_ shift: UInt) -> Bool {
            segments.room(at: table &+ shift) != nil && segments.room(at: symtab &+ shift) != nil
                && segments.room(at: strtab &+ shift) != nil && (versym == 0 || segments.room(at: versym &+ shift) != nil)
        }
        let asIs = inside(0), relative = base == 0 ? asIs : inside(base)
        guard asIs != relative || (asIs && base == 0) else { return unusable }
        let shift = asIs ? 0 : base
        func place(_ pointer: UInt) -> Table {
            pointer == 0 ? (0, 0) : (pointer &+ shift, segments.room(at: pointer &+ shift) ?? 0)
        }
        return DynamicSymbols(base: base, hash: gnu != 0 ? gnuTable(place(gnu)) : sysvTable(place(sysv)), symbols: place(symtab),
                              strings: place(strtab), stringSize: strsz, versions: place(versym))
    }

    /// `DT_GNU_HASH`: bucket count, symbol offset, Bloom words (a power of 2, as the dynamic linker
    /// masks with it), Bloom shift; then the Bloom words, the buckets and the chain.
    private static func gnuTable(_ table: Table) -> Hash {
        guard table.room >= 16 else { return .none }
        let bucketCount = load(table.address, as: UInt32.self), symbolOffset = load(table.address + 4, as: UInt32.self)
        let bloomWords = load(table.address + 8, as: UInt32.self), bloomShift = load(table.address + 12, as: UInt32.self)
        guard bucketCount > 0, bloomWords > 0, bloomWords & (bloomWords - 1) == 0, bloomShift < 64 else { return .none }
        let heads = 16 + 8 * UInt(bloomWords) + 4 * UInt(bucketCount)
        guard heads <= table.room else { return .none }
        return .gnu(buckets: table.address + 16 + 8 * UInt(bloomWords), bucketCount: bucketCount, symbolOffset: symbolOffset,
                    bloom: table.address + 16, bloomMask: bloomWords - 1, bloomShift: bloomShift,
                    chain: table.address + heads, chainCount: (table.room - heads) / 4)
    }

    /// `DT_HASH`: bucket count, chain count (the number of symbols), the buckets, the chain.
    private static func sysvTable(_ table: Table) -> Hash {
        guard table.room >= 8 else { return .none }
        let bucketCount = load(table.address, as: UInt32.self), chainCount = load(table.address + 4, as: UInt32.self)
        guard bucketCount > 0, 8 + 4 * (UInt(bucketCount) + UInt(chainCount)) <= table.room else { return .none }
        return .sysv(buckets: table.address + 8, bucketCount: bucketCount, chain: table.address + 8 + 4 * UInt(bucketCount),
                     chainCount: chainCount)
    }

    /// The lengths of the names the table can answer, when it has at most 64 (a small plugin): the
    /// symbols a GNU table hashes (from its symbol offset to the end of its last chain), or every
    /// symbol of a System V table.
    private func nameLengths() -> (UInt64, UInt64) {
        let first: UInt, end: UInt
        switch hash {
        case .none:
            return Self.everyLength
        case let .gnu(buckets, bucketCount, symbolOffset, _, _, _, chain, chainCount):
            guard bucketCount <= 64 else { return Self.everyLength }
            var last: UInt32 = 0  // the start of the last chain
            for bucket in 0..<UInt(bucketCount) { last = max(last, Self.load(buckets + 4 * bucket, as: UInt32.self)) }
            guard last != 0 else { return (0, 0) }  // no name at all
            guard last >= symbolOffset else { return Self.everyLength }
            var link = UInt(last - symbolOffset)
            while true {
                guard link < chainCount, link < 64 else { return Self.everyLength }
                if Self.load(chain + 4 * link, as: UInt32.self) & 1 != 0 { break }
                link += 1
            }
            (first, end) = (UInt(symbolOffset), UInt(symbolOffset) + link + 1)
        case let .sysv(_, _, _, chainCount):
            guard chainCount <= 64 else { return Self.everyLength }
            (first, end) = (0, UInt(chainCount))
        }
        var lengths: (UInt64, UInt64) = (0, 0)
        for index in first..<end {
            guard index < symbolCount else { return Self.everyLength }
            let offset = UInt(Self.load(symbols + index * UInt(MemoryLayout<Elf64_Sym>.size), as: UInt32.self))  // st_name
            guard offset < stringSize else { return Self.everyLength }
            let name = UnsafePointer<UInt8>(bitPattern: strings + offset)!
            var length = 0
            while name[length] != 0 {
                length += 1
                guard UInt(length) < stringSize - offset else { return Self.everyLength }
            }
            if length % 128 < 64 { lengths.0 |= 1 << UInt64(length % 64) } else { lengths.1 |= 1 << UInt64(length % 64) }
        }
        return lengths
    }

    /// Looks up `name` (`length` bytes, NUL-terminated) in the image's own table. O(1) for a length
    /// no name of a small table has; else O(`length` + the names sharing its bucket).
    func lookup(_ name: UnsafePointer<CChar>, length: Int) -> Answer {
        let word = length % 128 < 64 ? lengths.0 : lengths.1
        guard word & (1 << UInt64(length % 64)) != 0 else { return .absent }
        let bytes = UnsafeRawPointer(name)
        switch hash {
        case .none:
            return .unsure
        case let .gnu(buckets, bucketCount, symbolOffset, bloom, bloomMask, bloomShift, chain, chainCount):
            var h: UInt32 = 5381
            for index in 0..<length { h = h &* 33 &+ UInt32(bytes.load(fromByteOffset: index, as: UInt8.self)) }
            let word = Self.load(bloom + 8 * UInt((h / 64) & bloomMask), as: UInt64.self)
            guard (word >> (h % 64)) & (word >> ((UInt64(h) >> bloomShift) % 64)) & 1 != 0 else { return .absent }
            let bucket = Self.load(buckets + 4 * UInt(h % bucketCount), as: UInt32.self)
            guard bucket != 0 else { return .absent }
            guard bucket >= symbolOffset else { return .unsure }
            var index = UInt(bucket)
            while true {
                let link = index - UInt(symbolOffset)
                guard link < chainCount else { return .unsure }
                let other = Self.load(chain + 4 * link, as: UInt32.self)
                if (other ^ h) >> 1 == 0, let answer = match(bytes, length, index) { return answer }
                if other & 1 != 0 { return .absent }
                index += 1
            }
        case let .sysv(buckets, bucketCount, chain, chainCount):
            var h: UInt32 = 0
            for index in 0..<length {
                h = (h << 4) &+ UInt32(bytes.load(fromByteOffset: index, as: UInt8.self))
                h = (h ^ ((h & 0xF000_0000) >> 24)) & 0x0FFF_FFFF
            }
            var index = Self.load(buckets + 4 * UInt(h % bucketCount), as: UInt32.self)
            var steps: UInt32 = 0
            while index != 0 {  // STN_UNDEF ends a chain
                guard index < chainCount, steps < chainCount else { return .unsure }
                if let answer = match(bytes, length, UInt(index)) { return answer }
                index = Self.load(chain + 4 * UInt(index), as: UInt32.self)
                steps += 1
            }
            return .absent
        }
    }

    /// The symbol at `index` when its name is `name` (`length` bytes): what `dlsym` would make of
    /// it (glibc's `check_match`, then the binding), or nil to go on along the chain.
    private func match(_ name: UnsafeRawPointer, _ length: Int, _ index: UInt) -> Answer? {
        guard index < symbolCount else { return .unsure }
        let symbol = Self.load(symbols + index * UInt(MemoryLayout<Elf64_Sym>.size), as: Elf64_Sym.self)
        let offset = UInt(symbol.st_name)
        guard offset < stringSize, UInt(length) < stringSize - offset else { return .unsure }
        let stored = UnsafeRawPointer(bitPattern: strings + offset)!
        var same = 0  // memcmp, without a library call: the names are short
        while same < length, stored.load(fromByteOffset: same, as: UInt8.self) == name.load(fromByteOffset: same, as: UInt8.self) {
            same += 1
        }
        guard same == length, stored.load(fromByteOffset: length, as: UInt8.self) == 0 else { return nil }
        let type = Int32(symbol.st_info & 0xF), binding = Int32(symbol.st_info >> 4)
        if symbol.st_shndx == UInt16(SHN_ABS) || type == STT_TLS || type == STT_GNU_IFUNC { return .unsure }
        if symbol.st_value == 0 { return nil }  // no value: not a definition
        if symbol.st_shndx == UInt16(SHN_UNDEF) { return .unsure }  // undefined, with a value (a PLT address)
        guard type == STT_FUNC || type == STT_NOTYPE || type == STT_OBJECT || type == STT_COMMON else { return nil }
        if versions != 0 {
            guard index < versionCount else { return .unsure }
            if Self.load(versions + 2 * index, as: UInt16.self) & 0x7FFF >= 2 { return .unsure }  // a named version
        }
        let visibility = Int32(symbol.st_other & 0x3)
        if visibility == STV_HIDDEN || visibility == STV_INTERNAL { return .absent }
        switch binding {
        case STB_GLOBAL, STB_WEAK: return .found(UnsafeMutableRawPointer(bitPattern: base &+ UInt(symbol.st_value))!)
        case STB_GNU_UNIQUE: return .unsure
        default: return .absent  // a local symbol: the dynamic linker ignores it
        }
    }
}
