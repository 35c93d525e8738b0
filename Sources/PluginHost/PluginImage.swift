import CLifecycleSystem
import Glibc
import Synchronization

/// A plugin image mapped by the loader: its `dlopen` handle and where its loadable segments are.
///
/// Images are loaded through the checked descriptor (`dlopen("/proc/self/fd/N")`) and stay mapped for
/// the life of the process (`RTLD_NODELETE`). The descriptor is closed once `dlopen` returns: no
/// descriptor is kept per plugin. The dynamic linker knows an image by the name it was opened with and
/// answers a later `dlopen` of the same name with that image, without opening anything; so each load
/// uses a name no earlier load used — the same descriptor path with the load's number written into it
/// as empty (`//`) and current-folder (`/.`) components, which the kernel resolves to the same file
/// (`ProcFDName`). A file loaded again (found by device and inode) reuses its image and closes its new
/// descriptor. [thread-safe]
final class PluginImage: @unchecked Sendable {
    // @unchecked: immutable after init (ranges rebased before it is published); `handle`'s image is
    // never unmapped.
    let handle: UnsafeMutableRawPointer
    /// The readable segments' absolute address ranges (owned: the file's `ELFImage.readableRanges`,
    /// moved by the load base in place).
    let segments: ReadableSegments
    /// Its own dynamic symbol table, where `symbol(_:)` looks first.
    private let symbols: DynamicSymbols

    private init(handle: UnsafeMutableRawPointer, base: UInt, file: PluginFile) {
        self.handle = handle
        let ranges = file.image.readableRanges
        for index in ranges.indices { ranges[index] = base &+ ranges[index] }
        segments = ReadableSegments(ranges: UnsafeBufferPointer(ranges))
        symbols = DynamicSymbols.read(base: base, dynamicStart: file.image.dynamicStart, dynamicSize: file.image.dynamicSize,
                                      segments: segments)
    }

    deinit { segments.ranges.deallocate() }  // never, in practice: images stay mapped

    /// The images mapped, by file; under `busy`.
    // nonisolated(unsafe): read and written only inside withImages, under the `busy` spin lock.
    nonisolated(unsafe) private static var images = ImageTable()
    /// The table's lock: taken for a lookup or an insert, never across a system call, and contended
    /// only by two threads loading at once, so a spin (yielding the CPU) suffices. Not a pthread mutex
    /// or `Mutex`: their first calls cost a process's first load a lazy symbol binding each, and
    /// `Mutex` a `gettid` system call each time.
    private static let busy = Atomic<Bool>(false)
    /// How many loads reached `dlopen` in this process: each one's number makes its name unique.
    private static let loads = Atomic<UInt64>(0)

    private static func withImages<R>(_ body: (inout ImageTable) -> R) -> R {
        while !busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged { sched_yield() }
        defer { busy.store(false, ordering: .releasing) }
        return body(&images)
    }

    /// The image of `file`: the one already mapped for that file, else `dlopen` of its descriptor.
    /// Takes the descriptor and closes it. O(1) in the number
    /// of images mapped (the dynamic linker's own search of its objects aside).
    /// - Throws: the refusal's reason, naming `path` where the dynamic linker named the descriptor.
    static func load(_ file: PluginFile, path: String) throws(PluginFileProblem) -> PluginImage {
        if let image = withImages({ $0.find(device: file.device, inode: file.inode) }) {
            close(file.fd)
            file.image.release()
            return image
        }
        // RTLD_NODELETE: a dlclose'd Swift image would crash the runtime later; unloading only deactivates.
        // The name is this load's own (see the type's comment); the descriptor is closed either way.
        let number = loads.wrappingAdd(1, ordering: .relaxed).oldValue
        var failure: String?
        let opened = PluginFile.withProcFDPath(file.fd, load: number) { name in
            let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)
            if handle == nil {
                let error = dlerror().map { String(cString: $0) } ?? "unknown error"
                failure = error.replacing(String(cString: name) + ":", with: path + ":")
            }
            return handle
        }
        close(file.fd)
        guard let handle = opened else {
            file.image.release()
            throw PluginFileProblem("dlopen failed: \(failure ?? "unknown error")")
        }
        var base: UInt = 0
        guard lcs_dl_load_base(handle, &base) == 0 else {
            file.image.release()
            throw PluginFileProblem("dlopen gave no link map: \(dlerror().map { String(cString: $0) } ?? "unknown error")")
        }
        // Two threads loading one file at once both map it (the dynamic linker finds it once, by device
        // and inode); the first image published is kept.
        let loaded = PluginImage(handle: handle, base: base, file: file)
        return withImages { images in
            if let first = images.find(device: file.device, inode: file.inode) { return first }
            images.insert(device: file.device, inode: file.inode, loaded)
            return loaded
        }
    }

    /// The address of the symbol `name` defined by this image: `dlsym(handle, name)` as far as the
    /// image itself goes (a name only a library it needs defines is nil), read from its own hash
    /// table; `dlsym` answers what that table does not decide (see `DynamicSymbols`). A literal name
    /// is passed in place, without a copy.
    func symbol(_ name: String) -> UnsafeMutableRawPointer? {
        let length = name.utf8.count
        return name.withCString { symbol($0, length: length) }
    }

    /// `symbol(_:)` of a C string of `length` bytes.
    func symbol(_ name: UnsafePointer<CChar>, length: Int) -> UnsafeMutableRawPointer? {
        switch symbols.lookup(name, length: length) {
        case .found(let address): address
        case .absent: nil
        case .unsure: dlsym(handle, name)
        }
    }

    /// Whether `count` bytes at `pointer` lie inside one readable segment of the image.
    func contains(_ pointer: UnsafeRawPointer, count: Int) -> Bool {
        segments.room(at: UInt(bitPattern: pointer)).map { $0 >= UInt(count) } ?? false
    }

    /// The C string at `pointer` when it starts inside a readable segment and ends (NUL) before the
    /// segment does; nil otherwise.
    func string(at pointer: UnsafePointer<CChar>) -> String? {
        guard let room = segments.room(at: UInt(bitPattern: pointer)) else { return nil }
        var length = 0  // strnlen, without a library call: the strings are short
        while length < room, pointer[length] != 0 { length += 1 }
        guard length < room else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
    }
}

/// An image's readable segments: absolute address ranges, flat (start, end, start, end, …). [thread-safe]
struct ReadableSegments {
    let ranges: UnsafeBufferPointer<UInt>

    /// How many bytes lie from `address` to the end of the readable segment holding it; nil when
    /// none holds it. O(segments).
    func room(at address: UInt) -> UInt? {
        var index = 0
        while index + 1 < ranges.count {
            if ranges[index] <= address, address < ranges[index + 1] { return ranges[index + 1] - address }
            index += 2
        }
        return nil
    }
}

/// The mapped images by file (device, inode): open addressing with linear probing in a table kept at
/// most half full, doubled when it would not be. Holds each image for the life of the process. Plain
/// memory, no generic container or optional: nothing to instantiate on a process's first load.
private struct ImageTable {
    private struct Entry {
        var device: UInt64
        var inode: UInt64
        /// The image's reference, retained by the table (0: a free slot).
        var image: UInt
    }

    private var slots: UnsafeMutablePointer<Entry>?
    private var capacity = 0
    private var count = 0

    private static func hash(_ device: UInt64, _ inode: UInt64) -> Int {
        Int(truncatingIfNeeded: (inode &* 0x9E37_79B9_7F4A_7C15 ^ device &* 0xC2B2_AE3D_27D4_EB4F) >> 17)
    }

    func find(device: UInt64, inode: UInt64) -> PluginImage? {
        guard let slots else { return nil }
        var index = Self.hash(device, inode) & (capacity - 1)
        while slots[index].image != 0 {
            if slots[index].inode == inode, slots[index].device == device {
                return Unmanaged<PluginImage>.fromOpaque(UnsafeRawPointer(bitPattern: slots[index].image)!).takeUnretainedValue()
            }
            index = (index + 1) & (capacity - 1)
        }
        return nil
    }

    /// Adds `image` for a file not in the table.
    mutating func insert(device: UInt64, inode: UInt64, _ image: PluginImage) {
        if (count + 1) * 2 > capacity { grow() }
        place(Entry(device: device, inode: inode, image: UInt(bitPattern: Unmanaged.passRetained(image).toOpaque())))
        count += 1
    }

    private mutating func place(_ entry: Entry) {
        guard let slots else { return }
        var index = Self.hash(entry.device, entry.inode) & (capacity - 1)
        while slots[index].image != 0 { index = (index + 1) & (capacity - 1) }
        slots[index] = entry
    }

    private mutating func grow() {
        let old = slots, oldCapacity = capacity
        capacity = max(16, capacity * 2)
        let grown = UnsafeMutablePointer<Entry>.allocate(capacity: capacity)
        for index in 0..<capacity { (grown + index).initialize(to: Entry(device: 0, inode: 0, image: 0)) }
        slots = grown
        guard let old else { return }
        for index in 0..<oldCapacity where old[index].image != 0 { place(old[index]) }
        old.deallocate()
    }
}
