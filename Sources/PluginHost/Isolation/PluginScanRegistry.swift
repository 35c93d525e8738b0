import Glibc
import LifecycleRunLoop

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
/// dropped (the file is the user's; it is never trusted to be well formed), and so is an earlier line
/// of a path a later line names again. A file larger than 4 MiB, or not a regular file (a FIFO is
/// never waited on), is ignored whole. Written atomically (a temporary file renamed over it), folder
/// mode 0700; an entry whose file no longer exists is dropped when it is written.
///
/// Cost: the file is read as bytes, once, in one pass (a few instructions a byte; a line's fields are
/// made strings only when they parse); each plugin's lookup and record is one dictionary access by path.
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

    /// What is known of one path: the file as it was when scanned, and what the scan found.
    struct Known: Equatable {
        let key: Key
        let entry: Entry
    }

    package let file: String?
    /// By path: what the registry says of each file, at most one key a path (`record` replaces it).
    private(set) var known: [String: Known] = [:]
    static let header = "lifecycle-host plugin registry 1"
    private static let maximumSize = 4 << 20

    /// The registry at its usual place (nil `file`: no home or cache folder; nothing is remembered).
    package init(forgetting: Bool = false) {
        self.init(file: Self.defaultFile(), forgetting: forgetting)
    }

    /// The registry in `file`; `forgetting` (`--rescan`): start empty (the file is rewritten by `save`).
    package init(file: String?, forgetting: Bool = false) {
        self.file = file
        guard let file, !forgetting else { return }
        known = Self.read(file)
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

    /// What the registry says of the file `key` names, when it is that file as it was scanned.
    package func entry(_ key: Key) -> Entry? {
        guard let known = known[key.path], known.key == key else { return nil }
        return known.entry
    }

    /// Remembers `entry` for `key`, replacing what was known of that path.
    package mutating func record(_ key: Key, _ entry: Entry) {
        known[key.path] = Known(key: key, entry: entry)
    }

    /// Writes the registry (nothing without a file). - Returns: the error's words, nil on success.
    @discardableResult
    package func save() -> String? {
        guard let file else { return nil }
        guard let slash = file.lastIndex(of: "/") else { return "\(file): not an absolute path" }
        let folder = String(file[..<slash])
        if let problem = Self.makeFolders(folder) { return problem }
        // Files that are gone are forgotten (each named once, with `--plugin` in a temporary folder,
        // would otherwise stay for good): the registry holds at most the plugin files that exist.
        var text = Self.header + "\n"
        for path in known.keys.sorted() where access(path, F_OK) == 0 {
            text += Self.line(known[path]!)
        }
        let temporary = file + ".\(getpid()).tmp"
        // Without blocking: a FIFO put at the temporary's path is refused (ENXIO), not waited on.
        let fd: Int32
        do throws(SystemCallError) {
            fd = try systemCall("open") { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600) }
        } catch {
            return "cannot write \(temporary): \(String(cString: strerror(error.errno)))"
        }
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

    // MARK: The file's lines

    /// One entry's line, its newline included.
    static func line(_ known: Known) -> String {
        let (state, detail, id): (String, String, String?) = switch known.entry {
        case .clean(let id): ("clean", id, nil)
        case .crashed(let why, let id): ("crashed", why, id)
        case .exited(let why, let id): ("exited", why, id)
        }
        var fields = [escape(known.key.path), String(known.key.size), String(known.key.modified), state, escape(detail)]
        if let id { fields.append(escape(id)) }
        return fields.joined(separator: "\t") + "\n"
    }

    /// The registry file's entries; empty when it cannot be read, is not a regular file, is too large
    /// or does not begin with the header. Opened without blocking: a FIFO put there is not waited on.
    private static func read(_ file: String) -> [String: Known] {
        guard let bytes = try? WholeFile.read(file, atMost: maximumSize, flags: O_NOFOLLOW | O_NONBLOCK, regularOnly: true) else { return [:] }
        return parse(bytes[...])
    }

    /// The entries of a registry file's bytes, in one pass. Lines are split at `\n` bytes and fields at
    /// `\t` bytes by hand: the standard library's `split` calls its separator test through a closure for
    /// every byte (a 356-line file took 5.7 M instructions with it, 3.1 M with these loops). Both bytes
    /// are ASCII, which UTF-8 never uses within another character, so no cut falls inside one; text
    /// that is not UTF-8 is repaired (U+FFFD), as the file is the user's.
    static func parse(_ bytes: ArraySlice<UInt8>) -> [String: Known] {
        var known: [String: Known] = [:]
        var start = bytes.startIndex
        var sawHeader = false
        let header = Array(Self.header.utf8)
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.endIndex
            let line = bytes[start..<end]
            start = end + 1
            if line.isEmpty { continue }
            guard sawHeader else {
                guard line.elementsEqual(header) else { return [:] }
                sawHeader = true
                continue
            }
            if let entry = parseLine(line) { known[entry.key.path] = entry }
        }
        return known
    }

    /// One line's entry, nil when it does not parse.
    private static func parseLine(_ line: ArraySlice<UInt8>) -> Known? {
        // At most 6 fields: a seventh tab makes the line bad.
        var fields: [ArraySlice<UInt8>] = []
        fields.reserveCapacity(6)
        var rest = line
        while true {
            guard fields.count < 6 else { return nil }
            guard let tab = rest.firstIndex(of: 0x09) else {
                fields.append(rest)
                break
            }
            fields.append(rest[..<tab])
            rest = rest[(tab + 1)...]
        }
        guard fields.count == 5 || fields.count == 6 else { return nil }
        func field(_ number: Int) -> ArraySlice<UInt8> { fields[number] }
        // A path is a C string for the system (`stat`, `access`): one with a NUL byte names another file.
        guard let path = unescape(field(0)), path.utf8.first == UInt8(ascii: "/"), !path.utf8.contains(0),
              let size = integer(field(1)), let modified = integer(field(2)), let detail = unescape(field(4)) else { return nil }
        let key = Key(path: path, size: size, modified: modified)
        var id: String?
        if fields.count == 6 {
            guard let text = unescape(field(5)) else { return nil }
            id = text
        }
        let state = field(3)
        if state.elementsEqual("clean".utf8) {
            // A clean entry's id is its fifth field: a sixth is not one it writes.
            guard fields.count == 5 else { return nil }
            return Known(key: key, entry: .clean(id: detail))
        }
        if state.elementsEqual("crashed".utf8) { return Known(key: key, entry: .crashed(detail, id: id)) }
        if state.elementsEqual("exited".utf8) { return Known(key: key, entry: .exited(detail, id: id)) }
        return nil
    }

    /// A decimal Int64 with an optional sign, nil for anything else (no digits, another byte, overflow).
    static func integer(_ bytes: ArraySlice<UInt8>) -> Int64? {
        var index = bytes.startIndex
        var negative = false
        if let first = bytes.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
            negative = first == UInt8(ascii: "-")
            index += 1
        }
        guard index < bytes.endIndex else { return nil }
        var value: Int64 = 0
        while index < bytes.endIndex {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowedAgain) = negative ? times.subtractingReportingOverflow(Int64(digit)) : times.addingReportingOverflow(Int64(digit))
            guard !overflowed, !overflowedAgain else { return nil }
            value = next
            index += 1
        }
        return value
    }

    private static func makeFolders(_ folder: String) -> String? {
        var path = ""
        for part in folder.split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o700) != 0, errno != EEXIST { return "cannot make \(path): \(String(cString: strerror(errno)))" }
        }
        return nil
    }

    /// `text` with `\`, tab and newline written `\\`, `\t`, `\n` (bytes: each is ASCII).
    static func escape(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == 0x5C || $0 == 0x09 || $0 == 0x0A }) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 8)
        for byte in text.utf8 {
            switch byte {
            case 0x5C: out += [0x5C, 0x5C]
            case 0x09: out += [0x5C, UInt8(ascii: "t")]
            case 0x0A: out += [0x5C, UInt8(ascii: "n")]
            default: out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The text `escape` wrote; nil for an escape it never writes or a lone `\` at the end.
    static func unescape(_ bytes: ArraySlice<UInt8>) -> String? {
        guard bytes.contains(0x5C) else { return String(decoding: bytes, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var escaped = false
        for byte in bytes {
            if escaped {
                switch byte {
                case 0x5C: out.append(0x5C)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "n"): out.append(0x0A)
                default: return nil
                }
                escaped = false
            } else if byte == 0x5C {
                escaped = true
            } else {
                out.append(byte)
            }
        }
        return escaped ? nil : String(decoding: out, as: UTF8.self)
    }
}
