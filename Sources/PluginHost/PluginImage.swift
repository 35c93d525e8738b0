import CLifecycleSystem
import Glibc
import Synchronization

/// A plugin image mapped by the loader: its `dlopen` handle and where its loadable segments are.
///
/// Images are loaded through the checked descriptor (`dlopen("/proc/self/fd/N")`) and stay mapped for
/// the life of the process (`RTLD_NODELETE`). The dynamic linker knows an image by that name, so the
/// descriptor stays open as long as the image is mapped: a later file opened as the same descriptor
/// number would otherwise be taken for the image already loaded under that name. A file loaded again
/// (found by device and inode) reuses its image and closes its new descriptor. [thread-safe]
final class PluginImage: @unchecked Sendable {
    // @unchecked: immutable once published (`next` is set before); `handle` names an image that is
    // never unmapped.
    let handle: UnsafeMutableRawPointer
    /// The readable segments' absolute address ranges (owned: the file's `ELFImage.readableRanges`,
    /// moved by the load base in place).
    let segments: ReadableSegments
    /// Its own dynamic symbol table, where `symbol(_:)` looks first.
    private let symbols: DynamicSymbols
    private let device: UInt64
    private let inode: UInt64
    /// The image loaded before this one (a list, newest first: no dictionary type to instantiate on a
    /// process's first load; a few hundred images are searched in a few microseconds). Set before the
    /// image is published, never after.
    private var next: PluginImage?

    private init(handle: UnsafeMutableRawPointer, base: UInt, file: PluginFile) {
        self.handle = handle
        let ranges = file.image.readableRanges
        for index in ranges.indices { ranges[index] = base &+ ranges[index] }
        segments = ReadableSegments(ranges: UnsafeBufferPointer(ranges))
        symbols = DynamicSymbols.read(base: base, dynamicStart: file.image.dynamicStart, dynamicSize: file.image.dynamicSize,
                                      segments: segments)
        device = file.device
        inode = file.inode
    }

    deinit { segments.ranges.deallocate() }  // never, in practice: images stay mapped

    /// The newest image loaded, as the bits of a reference the list holds forever (0: none yet).
    /// Prepended to with a compare-and-exchange, read with one load: no lock (Synchronization's
    /// `Mutex` makes a `gettid` system call each time it is taken, on Linux).
    private static let newest = Atomic<UInt>(0)

    private static func image(_ bits: UInt) -> PluginImage? {
        UnsafeRawPointer(bitPattern: bits).map { Unmanaged<PluginImage>.fromOpaque($0).takeUnretainedValue() }
    }

    private static func find(device: UInt64, inode: UInt64, from image: PluginImage?) -> PluginImage? {
        var image = image
        while let candidate = image {
            if candidate.inode == inode, candidate.device == device { return candidate }
            image = candidate.next
        }
        return nil
    }

    /// The image of `file`: the one already mapped for that file, else `dlopen` of its descriptor.
    /// Takes the descriptor: kept open while the image is mapped, closed otherwise.
    /// - Throws: the refusal's reason, naming `path` where the dynamic linker named the descriptor.
    static func load(_ file: PluginFile, path: String) throws(PluginFileProblem) -> PluginImage {
        var head = newest.load(ordering: .acquiring)
        if let image = find(device: file.device, inode: file.inode, from: image(head)) {
            close(file.fd)
            file.image.release()
            return image
        }
        // RTLD_NODELETE: a dlclose'd Swift image would crash the runtime later; unloading only deactivates.
        let opened = PluginFile.withProcFDPath(file.fd) { dlopen($0, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) }
        guard let handle = opened else {
            let error = dlerror().map { String(cString: $0) } ?? "unknown error"
            close(file.fd)
            file.image.release()
            throw PluginFileProblem("dlopen failed: \(error.replacing("/proc/self/fd/\(file.fd):", with: path + ":"))")
        }
        var base: UInt = 0
        guard lcs_dl_load_base(handle, &base) == 0 else {
            // The descriptor stays open: the dynamic linker knows the image by its name.
            file.image.release()
            throw PluginFileProblem("dlopen gave no link map: \(dlerror().map { String(cString: $0) } ?? "unknown error")")
        }
        // Two threads loading one file at once both map it (the dynamic linker finds it once); the
        // first image published is kept, and both descriptors stay open (each is a name of the image).
        let loaded = PluginImage(handle: handle, base: base, file: file)
        let bits = UInt(bitPattern: Unmanaged.passRetained(loaded).toOpaque())
        while true {
            loaded.next = image(head)
            let (published, current) = newest.compareExchange(expected: head, desired: bits, ordering: .acquiringAndReleasing)
            if published { return loaded }
            head = current
            if let image = find(device: file.device, inode: file.inode, from: image(head)) {
                Unmanaged.passUnretained(loaded).release()
                return image
            }
        }
    }

    /// The address of the symbol `name` defined by this image: `dlsym(handle, name)` as far as the
    /// image itself goes (a name only a library it needs defines is nil), read from its own hash
    /// table; `dlsym` answers what that table does not decide (see `DynamicSymbols`). A literal name
    /// is passed in place, without a copy.
    func symbol(_ name: String) -> UnsafeMutableRawPointer? {
        let length = name.utf8.count
        return name.withCString { name in
            switch symbols.lookup(name, length: length) {
            case .found(let address): address
            case .absent: nil
            case .unsure: dlsym(handle, name)
            }
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
