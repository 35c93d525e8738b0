import AppLifecycle
import Logging
import CoreMetrics
import CLifecycleABI
import Glibc
import LifecycleC
import LifecycleRunLoop

/// Scanning plugins before they are loaded in the host's process, as GStreamer's plugin scanner does:
/// the plugin is opened and its init run in a process of its own (`IsolatedPlugin`), within a time
/// budget, then unloaded there. A plugin whose process crashed, exited or overran is remembered in the
/// registry (`PluginScanRegistry`) and refused without running again until its file changes (or
/// `--rescan`); one that scanned clean is remembered too, and not scanned again while its file is
/// unchanged.
package enum PluginScan {
    /// What scanning a plugin found.
    package enum Outcome: Sendable {
        /// It loaded and unloaded cleanly; its id.
        case clean(id: String)
        /// Its process failed while it was opened or initialised: the refusal's words (they name the
        /// signal, status or budget and what it was doing), and the plugin's id when its descriptor
        /// was read (a failure in init).
        case crashed(String, id: String?)
        /// Its process exited while it was opened or initialised — the plugin called `exit()` (or
        /// `_exit()`): the refusal's words (they name the status and what it was doing), and its id.
        case exited(String, id: String?)
        /// It was refused in words (a loader check, a failing init): not remembered, refused as ever.
        case refused(PluginRefusal)
    }

    /// Scans `path` in a process of its own, within `budget` for opening it and running its init.
    /// [loop-thread] of a throwaway application made here on the calling thread.
    package static func scan(_ path: String, budget: Duration, options: PluginLoadOptions = []) -> Outcome {
        switch inspect(path, budget: budget, options: options) {
        case .success(let id): return .clean(id: id)
        case .failure(let error):
            guard let cause = error.processFailure else { return .refused(error) }
            let why = error.reason.hasPrefix("isolated: ") ? String(error.reason.dropFirst(10)) : error.reason
            if case .exited = cause { return .exited(why, id: error.id) }
            return .crashed(why, id: error.id)
        }
    }

    /// Opens `path`, runs its init and unloads it, in a process of its own (the plugin runner), within
    /// `budget` for opening and init. - Returns: the plugin's id, or the refusal — its `stage` says
    /// whether opening or init failed, its `processFailure` how the process ended if it did.
    /// [loop-thread] of a throwaway application made here on the calling thread.
    package static func inspect(_ path: String, budget: Duration, options: PluginLoadOptions = []) -> Result<String, PluginRefusal> {
        let scratch: AppHandle
        // Silent, as its process is (`PluginLoadOptions.silent`): what the plugin logs through the host
        // in this init is seen once, from the load that follows.
        var configuration = Configuration()
        configuration.logger = Logger(label: "lifecycle.scan") { _ in SwiftLogNoOpLogHandler() }
        // Nor in the metrics: the scan is the host's probe, not the application's plugin (its series
        // would otherwise appear under the plugin's id, a failure series for one loaded in-process).
        configuration.metricsFactory = NOOPMetricsHandler.instance
        do { scratch = try AppHandle(configuration: configuration) } catch {
            return .failure(PluginRefusal(path: path, reason: "cannot scan: \(error.message)", status: lc_status(LC_ERR_SYSTEM)))
        }
        defer { scratch.shutdown() }
        var settings = IsolationSettings()
        settings.initBudget = budget
        settings.callBudget = budget
        settings.scanOnly = true
        settings.loadOptions = options.union(.silent)
        do {
            let plugin = try scratch.loadIsolatedPlugin(path: path, settings: settings)
            scratch.unload(plugin)
            return .success(plugin.id)
        } catch {
            return .failure(error)
        }
    }
}

/// The registry of scanned plugins: a small text file under the user's cache folder
/// (`$XDG_CACHE_HOME/lifecycle-host/plugin-registry`, else `~/.cache/lifecycle-host/plugin-registry`),
/// one line a plugin file, keyed by its absolute path, size and modification time (nanoseconds):
///
/// ```
/// lifecycle-host plugin registry 1
/// <path>\t<size>\t<mtime-ns>\tclean\t<id>
/// <path>\t<size>\t<mtime-ns>\tcrashed\t<why>[\t<id>]
/// <path>\t<size>\t<mtime-ns>\texited\t<why>[\t<id>]
/// ```
///
/// (The id of a plugin that failed in its init; absent when it failed before its descriptor was read,
/// and in files written before it was recorded.)
///
/// Tabs, newlines and backslashes in a field are written `\t`, `\n`, `\\`. Lines that do not parse are
/// dropped (the file is the user's; it is never trusted to be well formed). A file larger than 4 MiB
/// is ignored whole. Written atomically (a temporary file renamed over it), folder mode 0700; an entry
/// whose file no longer exists is dropped when it is written.
package struct PluginScanRegistry {
    package struct Key: Hashable, Sendable {
        package let path: String
        package let size: Int64
        package let modified: Int64
    }

    package enum Entry: Sendable, Equatable {
        case clean(id: String)
        case crashed(String, id: String?)
        /// Its process exited while scanned: the plugin called `exit()`.
        case exited(String, id: String?)
    }

    package let file: String?
    private(set) var entries: [Key: Entry] = [:]
    private static let header = "lifecycle-host plugin registry 1"
    private static let maximumSize = 4 << 20

    /// The registry at its usual place (nil `file`: no home or cache folder; nothing is remembered).
    package init(forgetting: Bool = false) {
        self.init(file: Self.defaultFile(), forgetting: forgetting)
    }

    /// The registry in `file`; `forgetting` (`--rescan`): start empty (the file is rewritten by `save`).
    package init(file: String?, forgetting: Bool = false) {
        self.file = file
        guard let file, !forgetting else { return }
        entries = Self.read(file)
    }

    /// `$XDG_CACHE_HOME/lifecycle-host/plugin-registry`, else `$HOME/.cache/…`; nil without either.
    package static func defaultFile() -> String? {
        if let cache = getenv("XDG_CACHE_HOME"), cache.pointee == UInt8(ascii: "/") {
            return String(cString: cache) + "/lifecycle-host/plugin-registry"
        }
        if let home = getenv("HOME"), home.pointee == UInt8(ascii: "/") {
            return String(cString: home) + "/.cache/lifecycle-host/plugin-registry"
        }
        return nil
    }

    /// The key of the file at `path` now (nil when it cannot be stat'ed).
    package static func key(_ path: String) -> Key? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Key(path: path, size: Int64(info.st_size), modified: Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec))
    }

    package func entry(_ key: Key) -> Entry? { entries[key] }

    /// Remembers `entry` for `key`, replacing what was known of that path.
    package mutating func record(_ key: Key, _ entry: Entry) {
        for old in entries.keys where old.path == key.path { entries[old] = nil }
        entries[key] = entry
    }

    /// Writes the registry (nothing without a file). - Returns: the error's words, nil on success.
    @discardableResult
    package func save() -> String? {
        guard let file else { return nil }
        guard let slash = file.lastIndex(of: "/") else { return "\(file): not an absolute path" }
        let folder = String(file[..<slash])
        if let problem = Self.makeFolders(folder) { return problem }
        var text = Self.header + "\n"
        // Files that are gone are forgotten (each named once, with `--plugin` in a temporary folder,
        // would otherwise stay for good): the registry holds at most the plugin files that exist.
        for (key, entry) in entries.sorted(by: { $0.key.path < $1.key.path }) where access(key.path, F_OK) == 0 {
            let (state, detail, id): (String, String, String?) = switch entry {
            case .clean(let id): ("clean", id, nil)
            case .crashed(let why, let id): ("crashed", why, id)
            case .exited(let why, let id): ("exited", why, id)
            }
            var fields = [Self.escape(key.path), String(key.size), String(key.modified), state, Self.escape(detail)]
            if let id { fields.append(Self.escape(id)) }
            text += fields.joined(separator: "\t") + "\n"
        }
        let temporary = file + ".\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return "cannot write \(temporary): \(String(cString: strerror(errno)))" }
        var bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            do throws(SystemCallError) {
                let n = try systemCall("write") { bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + written, $0.count - written) } }
                if n == 0 { throw SystemCallError("write", errno: EIO) }
                written += n
            } catch {
                close(fd)
                unlink(temporary)
                return "cannot write \(temporary): \(String(cString: strerror(error.errno)))"
            }
        }
        bytes.removeAll()
        close(fd)
        guard rename(temporary, file) == 0 else {
            unlink(temporary)
            return "cannot replace \(file): \(String(cString: strerror(errno)))"
        }
        return nil
    }

    // MARK: Private

    private static func read(_ file: String) -> [Key: Entry] {
        let fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return [:] }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= maximumSize else { return [:] }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var got = 0
        while got < bytes.count {
            guard let n = try? systemCall("read", { bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + got, $0.count - got) } }),
                  n > 0 else { break }
            got += n
        }
        var entries: [Key: Entry] = [:]
        let lines = String(decoding: bytes[..<got], as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
        guard lines.first == Substring(header) else { return [:] }
        for line in lines.dropFirst() {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 5 || fields.count == 6, let path = unescape(fields[0]), path.hasPrefix("/"), let size = Int64(fields[1]),
                  let modified = Int64(fields[2]), let detail = unescape(fields[4]) else { continue }
            let key = Key(path: path, size: size, modified: modified)
            let id = fields.count == 6 ? unescape(fields[5]) : nil
            switch fields[3] {
            case "clean": entries[key] = .clean(id: detail)
            case "crashed": entries[key] = .crashed(detail, id: id)
            case "exited": entries[key] = .exited(detail, id: id)
            default: continue
            }
        }
        return entries
    }

    private static func makeFolders(_ folder: String) -> String? {
        var path = ""
        for part in folder.split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o700) != 0, errno != EEXIST { return "cannot make \(path): \(String(cString: strerror(errno)))" }
        }
        return nil
    }

    private static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    private static func unescape(_ text: Substring) -> String? {
        var out = ""
        var escaped = false
        for character in text {
            if escaped {
                switch character {
                case "\\": out.append("\\")
                case "t": out.append("\t")
                case "n": out.append("\n")
                default: return nil
                }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                out.append(character)
            }
        }
        return escaped ? nil : out
    }
}
