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
    // @unchecked: immutable; `handle` names an image that is never unmapped.
    let handle: UnsafeMutableRawPointer
    /// The readable segments' absolute address ranges, flat: start, end, start, end, …
    let ranges: [UInt]
    private let device: UInt64
    private let inode: UInt64
    /// The image loaded before this one (a list, newest first: no dictionary type to instantiate on a
    /// process's first load; a few hundred images are searched in a few microseconds).
    private let next: PluginImage?

    private init(handle: UnsafeMutableRawPointer, base: UInt, file: PluginFile, next: PluginImage?) {
        self.handle = handle
        ranges = file.image.readableRanges.map { base &+ $0 }
        device = file.device
        inode = file.inode
        self.next = next
    }

    /// The newest image loaded.
    private static let newest = Mutex<PluginImage?>(nil)

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
        let head = newest.withLock { $0 }
        if let image = find(device: file.device, inode: file.inode, from: head) {
            close(file.fd)
            return image
        }
        // RTLD_NODELETE: a dlclose'd Swift image would crash the runtime later; unloading only deactivates.
        let opened = PluginFile.withProcFDPath(file.fd) { dlopen($0, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) }
        guard let handle = opened else {
            let error = dlerror().map { String(cString: $0) } ?? "unknown error"
            close(file.fd)
            throw PluginFileProblem("dlopen failed: \(error.replacing("/proc/self/fd/\(file.fd):", with: path + ":"))")
        }
        var base: UInt = 0
        guard lcs_dl_load_base(handle, &base) == 0 else {
            // The descriptor stays open: the dynamic linker knows the image by its name.
            throw PluginFileProblem("dlopen gave no link map: \(dlerror().map { String(cString: $0) } ?? "unknown error")")
        }
        // Two threads loading one file at once both map it (the dynamic linker finds it once); the
        // first image is kept, and both descriptors stay open (each is a name of the image).
        return newest.withLock { newest in
            if let image = find(device: file.device, inode: file.inode, from: newest) { return image }
            let image = PluginImage(handle: handle, base: base, file: file, next: newest)
            newest = image
            return image
        }
    }

    /// Whether `count` bytes at `pointer` lie inside one readable segment of the image.
    func contains(_ pointer: UnsafeRawPointer, count: Int) -> Bool {
        let start = UInt(bitPattern: pointer)
        let (end, overflow) = start.addingReportingOverflow(UInt(count))
        guard !overflow else { return false }
        var index = 0
        while index < ranges.count {
            if ranges[index] <= start, end <= ranges[index + 1] { return true }
            index += 2
        }
        return false
    }

    /// The C string at `pointer` when it starts inside a readable segment and ends (NUL) before the
    /// segment does; nil otherwise.
    func string(at pointer: UnsafePointer<CChar>) -> String? {
        let start = UInt(bitPattern: pointer)
        var index = 0
        while index < ranges.count {
            if ranges[index] <= start, start < ranges[index + 1] {
                let room = Int(ranges[index + 1] - start)
                let length = strnlen(pointer, room)
                guard length < room else { return nil }
                return String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
            }
            index += 2
        }
        return nil
    }
}
