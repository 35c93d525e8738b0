@preconcurrency import Glibc
import LifecycleRunLoop

/// `run --watch`: the plugin files loaded, watched with inotify as a source of the host's run loop;
/// a file written or replaced is reloaded once it has been quiet for `settle` (docs/host.md,
/// "Reloading a plugin"). [loop-thread]
///
/// Each plugin's folder is watched, not the file: a file replaced by rename (how compilers,
/// `install` and `cp --remove-destination` write) is a new inode a watch on the old file would never
/// see, whereas the folder reports `IN_MOVED_TO` with the name. A file rewritten in place reports
/// `IN_CLOSE_WRITE`; one created anew `IN_CREATE` then `IN_CLOSE_WRITE`. Every such event (and
/// `IN_MODIFY`, `IN_ATTRIB` between them) only (re)starts that plugin's settle timer, so the many
/// events of one rebuild or copy make one reload. An event queue overflow (`IN_Q_OVERFLOW`: the
/// kernel dropped events) counts as a change of every file watched. Per event: two dictionary
/// lookups and a timer; the read buffer is one allocation for the life of the watch.
final class PluginWatch {
    private let loop: MainRunLoop
    /// How long a file must be quiet before it is reloaded.
    private let settle: Duration
    /// Called when a watched file settled after changing: the plugin's id and its file's path.
    private let changed: (_ id: String, _ path: String) -> Void
    private var fd: Int32 = -1
    private var reader: LoopSource?
    /// By watch descriptor: the watched names in that folder, each with its plugin's id.
    private var names: [Int32: [String: String]] = [:]
    /// By folder: its watch descriptor.
    private var folders: [String: Int32] = [:]
    /// By plugin id: its file's path and its settle timer, when one is running.
    private var files: [String: (path: String, timer: LoopSource?)] = [:]
    /// Where events are read to (one array for the life of the watch).
    private var buffer = [UInt8](repeating: 0, count: 64 << 10)

    /// The settle time when not told: a few writes of a linker or a copy fall well within it.
    static let defaultSettle: Duration = .milliseconds(200)

    init(loop: MainRunLoop, settle: Duration = defaultSettle, changed: @escaping (_ id: String, _ path: String) -> Void) {
        self.loop = loop
        self.settle = settle
        self.changed = changed
    }

    deinit {
        reader?.cancel()
        for (_, file) in files { file.timer?.cancel() }
        if fd >= 0 { close(fd) }
    }

    /// Watches the file at `path` (absolute) of the plugin `id`. [loop-thread]
    /// - Returns: why it cannot be watched, or nil.
    func watch(_ path: String, id: String) -> String? {
        if fd < 0 {
            let made = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            guard made >= 0 else { return "inotify_init1 failed: \(String(cString: strerror(errno)))" }
            fd = made
            do {
                reader = try loop.addReader(fd: fd) { [weak self] in self?.readable() }
            } catch {
                close(fd)
                fd = -1
                return "cannot watch the inotify descriptor: \(error.message)"
            }
        }
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "the path is not absolute" }
        let folder = slash == path.utf8.startIndex ? "/" : String(path[..<slash])
        let name = String(path[path.utf8.index(after: slash)...])
        let descriptor: Int32
        if let known = folders[folder] {
            descriptor = known
        } else {
            let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_MODIFY | IN_ATTRIB | IN_ONLYDIR)
            descriptor = inotify_add_watch(fd, folder, mask)
            guard descriptor >= 0 else { return "inotify_add_watch of \(folder) failed: \(String(cString: strerror(errno)))" }
            folders[folder] = descriptor
        }
        names[descriptor, default: [:]][name] = id
        files[id] = (path, nil)
        return nil
    }

    /// Reads every event queued; a change restarts its plugin's settle timer.
    private func readable() {
        while true {
            let count: Int
            do throws(SystemCallError) {
                count = try systemCall("read") { buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }
            } catch {
                return  // EAGAIN: all read (nothing else fails on an inotify descriptor the loop saw readable)
            }
            guard count > 0 else { return }
            var changed: [String] = []
            var overflow = false
            buffer.withUnsafeBytes { bytes in
                var offset = 0
                let header = 16  // wd, mask, cookie, len (struct inotify_event without its name)
                while offset + header <= count {
                    let descriptor = bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                    let mask = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let length = Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    guard length <= count - offset - header else { return }  // never, from the kernel: stop rather than trust it
                    let start = offset + header
                    offset = start + length
                    if mask & UInt32(IN_Q_OVERFLOW) != 0 { overflow = true }
                    guard length > 0, let watched = names[descriptor] else { continue }
                    let name = String(decoding: bytes[start..<(start + length)].prefix { $0 != 0 }, as: UTF8.self)
                    if let id = watched[name] { changed.append(id) }
                }
            }
            for id in overflow ? Array(files.keys) : changed { restart(id) }
        }
    }

    /// (Re)starts the settle timer of plugin `id`.
    private func restart(_ id: String) {
        guard let file = files[id] else { return }
        file.timer?.cancel()
        // Real time whatever the loop's clock: a file settles as the file system sees it (decision 58:
        // IO's own deadlines stay on the monotonic clock under --clock virtual).
        let timer = loop.addRealTimeTimer(after: settle) { [weak self] in
            guard let self, let file = self.files[id] else { return }
            self.files[id] = (file.path, nil)
            self.changed(id, file.path)
        }
        files[id] = (file.path, timer)
    }
}
