import Glibc

/// What the loader learns from a plugin file's ELF header and program headers before anything maps
/// it: that it is a 64-bit little-endian shared object for this machine whose headers and loadable
/// segments lie inside the file (a segment past the end would be mapped beyond the file: SIGBUS in
/// `dlopen`), and where its segments will be, relative to the load base.
struct ELFImage {
    /// The readable `PT_LOAD` segments' memory ranges relative to the load base, flat: start, end,
    /// start, end, … In a buffer of its own (no array type to instantiate on a process's first load):
    /// the `PluginImage` made from it takes it over; whoever drops it instead calls `release()`.
    let readableRanges: UnsafeMutableBufferPointer<UInt>
    /// Where the dynamic section (`PT_DYNAMIC`) will be, relative to the load base, and its size in
    /// bytes; size 0 when the file has none. Unchecked: read only through `DynamicSymbols`, which
    /// checks every address it reads against the readable segments.
    let dynamicStart: UInt
    let dynamicSize: UInt

    /// Frees `readableRanges` (an image not made from this one).
    func release() { readableRanges.deallocate() }

    /// The size of an ELF64 file header and of one program header entry.
    static let headerSize = MemoryLayout<Elf64_Ehdr>.size
    static let programHeaderSize = MemoryLayout<Elf64_Phdr>.size
    /// How many bytes the loader reads at once from the start of a file: the ELF header and the
    /// program headers that follow it in the shared objects linkers write (up to 17 entries; a file
    /// with more costs a second read). At most 1 KiB: a larger buffer on the stack costs a check of
    /// the stack's bounds, and a first use of stack pages, on a process's first load.
    static let prefixSize = 1024

    /// Checks the header in `prefix` (the first bytes of a file of `fileSize` bytes). Calls `read` for
    /// the program headers only when they lie beyond `prefix`.
    /// - Throws: why the file is refused.
    static func check(prefix: UnsafeRawBufferPointer, fileSize: UInt64,
                      read: (_ offset: UInt64, _ into: UnsafeMutableRawBufferPointer) -> Bool) throws(Problem) -> ELFImage
    {
        guard prefix.count >= 4, prefix.loadUnaligned(as: UInt32.self) == UInt32(littleEndian: 0x464C_457F) else {
            throw .notELF  // "\x7FELF" in file order
        }
        guard prefix.count >= headerSize else { throw .truncatedHeader(fileSize: fileSize) }
        let header = prefix.loadUnaligned(as: Elf64_Ehdr.self)
        let elfClass = header.e_ident.4, data = header.e_ident.5
        guard elfClass == UInt8(ELFCLASS64) else { throw .elfClass(elfClass) }
        guard data == UInt8(ELFDATA2LSB) else { throw .byteOrder(data) }
        guard header.e_machine == hostMachine else { throw .machine(header.e_machine) }
        guard header.e_type == UInt16(ET_DYN) else { throw .fileType(header.e_type) }
        guard Int(header.e_phentsize) == programHeaderSize else { throw .programHeaderSize(header.e_phentsize) }
        let count = Int(header.e_phnum)
        guard count > 0 else { throw .noProgramHeaders }
        let tableSize = count * programHeaderSize
        let (tableEnd, overflow) = header.e_phoff.addingReportingOverflow(UInt64(tableSize))
        guard !overflow, tableEnd <= fileSize else {
            throw .programHeadersPastEnd(offset: header.e_phoff, count: count, fileSize: fileSize)
        }
        if tableEnd <= UInt64(prefix.count) {
            let table = UnsafeRawBufferPointer(rebasing: prefix[Int(header.e_phoff)..<Int(tableEnd)])
            try refuseHostLibrary(table, count, fileSize, read)
            return try segments(table, count, fileSize)
        }
        let table = UnsafeMutableRawBufferPointer.allocate(byteCount: tableSize, alignment: 8)
        defer { table.deallocate() }
        guard read(header.e_phoff, table) else { throw .unreadable(errno) }
        try refuseHostLibrary(UnsafeRawBufferPointer(table), count, fileSize, read)
        return try segments(UnsafeRawBufferPointer(table), count, fileSize)
    }

    /// The name every copy of the host's library starts with (`liblifecycle.so`, `liblifecycle.so.1`, …).
    static let hostLibraryStem = "liblifecycle.so"

    /// Refuses a file whose needed libraries (`DT_NEEDED`) include the host's library: such a plugin
    /// would load a second engine beside the host's (its `lc_*` calls reaching that one, not the
    /// application that loaded it), or fail in `dlopen` with a message that does not say why. Reads the
    /// dynamic section from the file (its first 4 KiB: linkers write the `DT_NEEDED` entries first) and
    /// each needed name (one read each, at most 64 bytes); what cannot be read is left to `dlopen`.
    private static func refuseHostLibrary(_ table: UnsafeRawBufferPointer, _ count: Int, _ fileSize: UInt64,
                                          _ read: (UInt64, UnsafeMutableRawBufferPointer) -> Bool) throws(Problem)
    {
        func entry(_ index: Int) -> Elf64_Phdr { table.loadUnaligned(fromByteOffset: index * programHeaderSize, as: Elf64_Phdr.self) }
        guard let dynamic = (0..<count).lazy.map(entry).first(where: { $0.p_type == UInt32(PT_DYNAMIC) }), dynamic.p_filesz >= 16,
              dynamic.p_offset < fileSize
        else { return }
        let size = Int(min(dynamic.p_filesz, 4096, fileSize - dynamic.p_offset)) / 16 * 16
        guard size >= 16 else { return }
        let found: String? = withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 8) { buffer in
            let entries = UnsafeMutableRawBufferPointer(rebasing: buffer[..<size])
            guard read(dynamic.p_offset, entries) else { return nil }
            var needed: [UInt64] = []
            var table: UInt64?, tableSize: UInt64 = 0
            for offset in stride(from: 0, to: size, by: 16) {
                let tag = entries.loadUnaligned(fromByteOffset: offset, as: Int64.self)
                let value = entries.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)
                if tag == Int64(DT_NULL) { break }
                if tag == Int64(DT_NEEDED), needed.count < 64 { needed.append(value) }
                if tag == Int64(DT_STRTAB) { table = value }
                if tag == Int64(DT_STRSZ) { tableSize = value }
            }
            // The string table's address, as a file offset: inside a PT_LOAD segment's file bytes.
            guard !needed.isEmpty, let address = table,
                  let segment = (0..<count).lazy.map(entry).first(where: {
                      $0.p_type == UInt32(PT_LOAD) && address >= $0.p_vaddr && address - $0.p_vaddr < $0.p_filesz
                  })
            else { return nil }
            let start = segment.p_offset &+ (address - segment.p_vaddr)
            let stem = Array(hostLibraryStem.utf8)
            for name in needed where name < tableSize {
                let (position, overflow) = start.addingReportingOverflow(name)
                guard !overflow, position < fileSize else { continue }
                let length = Int(min(64, tableSize - name, fileSize - position))
                guard length > stem.count else { continue }
                let text = UnsafeMutableRawBufferPointer(rebasing: buffer[..<length])
                guard read(position, text) else { continue }
                let bytes = Array(text.prefix { $0 != 0 })
                guard bytes.starts(with: stem), bytes.count == stem.count || bytes[stem.count] == UInt8(ascii: ".") else { continue }
                return String(decoding: bytes, as: UTF8.self)
            }
            return nil
        }
        if let found { throw .linksHostLibrary(found) }
    }

    /// The loadable segments of a program header table, each checked to lie inside the file.
    private static func segments(_ table: UnsafeRawBufferPointer, _ count: Int, _ fileSize: UInt64) throws(Problem) -> ELFImage {
        func entry(_ index: Int) -> Elf64_Phdr {
            table.loadUnaligned(fromByteOffset: index * programHeaderSize, as: Elf64_Phdr.self)
        }
        // First every check, then the ranges (nothing to free on a refusal).
        var loadable = 0, readable = 0
        var dynamic: (start: UInt, size: UInt) = (0, 0)
        for index in 0..<count {
            let header = entry(index)
            if header.p_type == UInt32(PT_DYNAMIC), header.p_vaddr <= UInt64(UInt.max), header.p_memsz <= UInt64(UInt.max) {
                dynamic = (UInt(header.p_vaddr), UInt(header.p_memsz))
            }
            guard header.p_type == UInt32(PT_LOAD) else { continue }
            loadable += 1
            let (fileEnd, fileOverflow) = header.p_offset.addingReportingOverflow(header.p_filesz)
            guard !fileOverflow, fileEnd <= fileSize else {
                throw .segmentPastEnd(index: index, offset: header.p_offset, size: header.p_filesz, fileSize: fileSize)
            }
            let (memoryEnd, memoryOverflow) = header.p_vaddr.addingReportingOverflow(header.p_memsz)
            guard !memoryOverflow, memoryEnd <= UInt64(UInt.max) else { throw .segmentAddress(index: index) }
            if header.p_flags & UInt32(PF_R) != 0 { readable += 1 }
        }
        guard loadable > 0 else { throw .noLoadableSegment }
        let ranges = UnsafeMutableBufferPointer<UInt>.allocate(capacity: 2 * readable)
        var next = 0
        for index in 0..<count {
            let header = entry(index)
            guard header.p_type == UInt32(PT_LOAD), header.p_flags & UInt32(PF_R) != 0 else { continue }
            ranges[next] = UInt(header.p_vaddr)
            ranges[next + 1] = UInt(header.p_vaddr + header.p_memsz)
            next += 2
        }
        return ELFImage(readableRanges: ranges, dynamicStart: dynamic.start, dynamicSize: dynamic.size)
    }

    /// Why a file is not a loadable plugin image. `reason` is the refusal's text.
    enum Problem: Error {
        case notELF
        case truncatedHeader(fileSize: UInt64)
        case elfClass(UInt8)
        case byteOrder(UInt8)
        case machine(UInt16)
        case fileType(UInt16)
        case programHeaderSize(UInt16)
        case noProgramHeaders
        case programHeadersPastEnd(offset: UInt64, count: Int, fileSize: UInt64)
        case segmentPastEnd(index: Int, offset: UInt64, size: UInt64, fileSize: UInt64)
        case segmentAddress(index: Int)
        case noLoadableSegment
        case unreadable(Int32)
        case linksHostLibrary(String)

        var reason: String {
            switch self {
            case .notELF: "not an ELF shared object"
            case .truncatedHeader(let size): "truncated ELF header: the file is \(size) bytes; an ELF64 header is \(ELFImage.headerSize)"
            case .elfClass(let value):
                "built for \(value == UInt8(ELFCLASS32) ? "32-bit ELF (ELFCLASS32, 1)" : "an unknown ELF class (\(value))"); this host is 64-bit (ELFCLASS64, 2)"
            case .byteOrder(let value):
                "built \(value == UInt8(ELFDATA2MSB) ? "big-endian (ELFDATA2MSB, 2)" : "with an unknown byte order (\(value))"); this host is little-endian (ELFDATA2LSB, 1)"
            case .machine(let value): "built for \(ELFImage.machineName(value)); this host is \(ELFImage.machineName(ELFImage.hostMachine))"
            case .fileType(let value): "\(ELFImage.typeName(value)), not a shared object (ET_DYN, 3)"
            case .programHeaderSize(let value):
                "program header entries are \(value) bytes (e_phentsize); ELF64's are \(ELFImage.programHeaderSize)"
            case .noProgramHeaders: "no program headers (e_phnum is 0)"
            case .programHeadersPastEnd(let offset, let count, let size):
                "truncated: the program headers (\(count) × \(ELFImage.programHeaderSize) bytes at offset \(offset)) end past the end of the file (\(size) bytes)"
            case .segmentPastEnd(let index, let offset, let length, let size):
                "truncated: segment \(index) (PT_LOAD, \(length) bytes at offset \(offset)) ends past the end of the file (\(size) bytes)"
            case .segmentAddress(let index): "segment \(index) (PT_LOAD): its address range overflows"
            case .noLoadableSegment: "no loadable segment (PT_LOAD)"
            case .unreadable(let code): "cannot read the ELF headers: \(String(cString: strerror(code)))"
            case .linksHostLibrary(let name):
                "it links \(name) (DT_NEEDED): a plugin must not link the host's library (it would run an engine of its own "
                    + "beside the host's); it reaches the host through lc_host_api_t only. Build it against lifecycle.h alone "
                    + "(cc -I…/include without -llifecycle; a Swift package: the LifecycleABI product, not lifecycle)"
            }
        }
    }

    /// The `e_machine` of this build's architecture.
    static let hostMachine: UInt16 = {
        #if arch(x86_64)
        UInt16(EM_X86_64)
        #elseif arch(arm64)
        UInt16(EM_AARCH64)
        #elseif arch(riscv64)
        UInt16(EM_RISCV)
        #elseif arch(powerpc64le)
        UInt16(EM_PPC64)
        #elseif arch(s390x)
        UInt16(EM_S390)
        #else
        #error("the plugin loader does not know this architecture's e_machine")
        #endif
    }()

    /// "AArch64 (EM_AARCH64, 183)": the common machines by name, the others by number.
    static func machineName(_ machine: UInt16) -> String {
        let name: (String, String)? = switch Int32(machine) {
        case EM_X86_64: ("x86-64", "EM_X86_64")
        case EM_AARCH64: ("AArch64", "EM_AARCH64")
        case EM_386: ("x86 (32-bit)", "EM_386")
        case EM_ARM: ("ARM (32-bit)", "EM_ARM")
        case EM_RISCV: ("RISC-V", "EM_RISCV")
        case EM_PPC64: ("PowerPC 64", "EM_PPC64")
        case EM_PPC: ("PowerPC", "EM_PPC")
        case EM_S390: ("IBM S/390", "EM_S390")
        case EM_MIPS: ("MIPS", "EM_MIPS")
        case EM_SPARCV9: ("SPARC V9", "EM_SPARCV9")
        case 258: ("LoongArch", "EM_LOONGARCH")
        default: nil
        }
        guard let name else { return "machine \(machine) (e_machine)" }
        return "\(name.0) (\(name.1), \(machine))"
    }

    static func typeName(_ type: UInt16) -> String {
        switch Int32(type) {
        case ET_EXEC: "an ELF executable (ET_EXEC, 2)"
        case ET_REL: "an ELF relocatable object (ET_REL, 1)"
        case ET_CORE: "an ELF core dump (ET_CORE, 4)"
        default: "an ELF file of type \(type) (e_type)"
        }
    }
}
