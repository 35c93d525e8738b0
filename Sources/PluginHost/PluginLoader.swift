import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc
import LifecycleC

/// Why a plugin was not loaded. `message` names the file and the reason.
package struct PluginRefusal: Error, Sendable, CustomStringConvertible {
    package let path: String
    package let reason: String
    package let status: lc_status

    package var message: String { "\(path): \(reason)" }
    package var description: String { message }
}

/// How a plugin may be loaded. [thread-safe]
package struct PluginLoadOptions: OptionSet, Sendable {
    package let rawValue: UInt32
    package init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Loads a plugin file that is group- or world-writable, or owned by another user than this
    /// process's or root, or that lies in such a folder (the host's `--allow-unsafe-plugins`).
    package static let allowUnsafePermissions = PluginLoadOptions(rawValue: 1 << 0)
}

extension AppHandle {
    /// Loads, checks and initialises one plugin. [loop-thread]
    ///
    /// Checks, before anything maps the file: absolute path; a regular file opened without following
    /// a symbolic link; safe permissions and owner of the file and of its folders up to `/` (unless
    /// `options` allow them); an ELF64 little-endian shared object for this machine whose program
    /// headers and loadable segments lie inside the file. Then the checked descriptor itself is loaded
    /// (`dlopen("/proc/self/fd/N")`). Before any plugin code runs beyond the entry symbol: entry
    /// symbol, a descriptor inside the plugin's own image, magic, ABI version (a different major or a
    /// newer minor is refused, both versions named), descriptor size, strings inside the image, a valid
    /// reverse-DNS id not loaded yet, an init function. Then `init` runs; a failing init is refused
    /// with its message and whatever it registered is removed. Finally the delegate functions it
    /// exports are bound through libffi. The entry and the delegate functions are looked up in the
    /// plugin file's own dynamic symbol table (`DynamicSymbols`), not with a `dlsym` each.
    /// - Throws: `PluginRefusal`; the application and the other plugins are unaffected.
    package func loadPlugin(path: String, options: PluginLoadOptions = []) throws(PluginRefusal) -> LoadedPlugin {
        func refuse(_ reason: String, _ status: Int = LC_ERR_PLUGIN_REFUSED) -> PluginRefusal {
            PluginRefusal(path: path, reason: reason, status: lc_status(status))
        }
        guard loop.isOnLoopThread else {
            throw refuse("plugins are loaded on the main run loop's thread", LC_ERR_WRONG_THREAD)
        }
        guard path.utf8.first == UInt8(ascii: "/") else {
            throw refuse("the path is relative; plugins are loaded from absolute paths only")
        }
        let image: PluginImage
        do { image = try PluginImage.load(try PluginFile.open(path, options: options), path: path) } catch { throw refuse(error.reason) }
        guard let entrySymbol = image.symbol(LC_PLUGIN_ENTRY_SYMBOL) else {
            throw refuse("no entry symbol '\(LC_PLUGIN_ENTRY_SYMBOL)' (export `const lc_plugin_descriptor_t *lc_plugin_entry(void)`)")
        }
        let entry = unsafeBitCast(entrySymbol, to: lc_plugin_entry_fn.self)
        guard let raw = entry() else { throw refuse("\(LC_PLUGIN_ENTRY_SYMBOL)() returned NULL") }
        let descriptor = try readDescriptor(UnsafeRawPointer(raw), in: image, refuse)

        guard let idPointer = descriptor.id else { throw refuse("the descriptor has no id") }
        guard let id = image.string(at: idPointer) else { throw refuse(Self.outside("the descriptor's id")) }
        let version = try descriptor.version.map { pointer throws(PluginRefusal) in
            guard let text = image.string(at: pointer) else { throw refuse(Self.outside("the descriptor's version")) }
            return text
        }
        let summary = try descriptor.description.map { pointer throws(PluginRefusal) in
            guard let text = image.string(at: pointer) else { throw refuse(Self.outside("the descriptor's description")) }
            return text
        }
        if let problem = Self.idProblem(id) { throw refuse("invalid id '\(id)': \(problem)") }
        if let existing = plugin(id: id) {
            throw refuse("id '\(id)' is already loaded (from \(existing.path))", LC_ERR_DUPLICATE)
        }
        if app.hasDelegate(id: id) {
            throw refuse("id '\(id)' is already used by a delegate of this application", LC_ERR_DUPLICATE)
        }
        guard let initialise = descriptor.`init` else { throw refuse("the descriptor has no init function") }

        let plugin = LoadedPlugin(id: id, version: version ?? "", summary: summary ?? "",
                                  path: path, image: image, descriptor: descriptor, owner: self)
        var state: UnsafeMutableRawPointer?
        plugin.inInit = true
        let status = initialise(plugin.hostTable, plugin.opaque, &state)
        plugin.inInit = false
        guard status == LC_OK else {
            plugin.removeRegistrations(in: self)
            plugin.isActive = false
            pluginSet.retire(plugin)
            let why = plugin.initError ?? "the plugin set no message"
            throw refuse("init failed with \(String(cString: lcStatusName(status))): \(why)")
        }
        plugin.state = state

        // ABI 1.1: the table init registered; else (1.0) the exported functions, found by name in the
        // plugin's own symbol table (the table's symbols are literals: passed in place, not copied).
        let (handlers, rows) = plugin.delegateTable.map { table in
            table.withUnsafeBufferPointer { FFIDelegates.bind(addresses: $0, convention: .pluginTable(plugin)) }
        } ?? FFIDelegates.bind(symbols: image.symbol, app: opaque, closures: closures, owner: plugin, id: id)
        plugin.implementedRows = rows
        if !rows.isEmpty {
            do {
                plugin.delegateToken = try app.addDelegate(handlers, id: id)
            } catch {
                plugin.deactivate(in: self)
                throw refuse(error.message)
            }
        }
        pluginSet.register(plugin)
        return plugin
    }

    /// Loads every `*.so` of a folder (absolute path), in name order; a refusal does not stop the others. [loop-thread]
    package func loadPlugins(folder: String, options: PluginLoadOptions = []) -> (loaded: [LoadedPlugin], refused: [PluginRefusal]) {
        guard folder.hasPrefix("/") else {
            return ([], [PluginRefusal(path: folder, reason: "the folder path is relative; plugin folders are absolute paths only",
                                       status: lc_status(LC_ERR_PLUGIN_REFUSED))])
        }
        guard let dir = opendir(folder) else {
            return ([], [PluginRefusal(path: folder, reason: "cannot open the folder: \(String(cString: strerror(errno)))",
                                       status: lc_status(LC_ERR_SYSTEM))])
        }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name.hasSuffix(".so") { names.append(name) }
        }
        closedir(dir)
        var loaded: [LoadedPlugin] = []
        var refused: [PluginRefusal] = []
        let base = folder.hasSuffix("/") ? folder : folder + "/"
        for name in names.sorted() {
            do { loaded.append(try loadPlugin(path: base + name, options: options)) } catch { refused.append(error) }
        }
        return (loaded, refused)
    }

    /// Reads the descriptor without trusting its size: magic and version first, then the size.
    /// The pointer is checked to lie inside the plugin's own image before anything is read from it.
    private func readDescriptor(_ raw: UnsafeRawPointer, in image: PluginImage, _ refuse: (String, Int) -> PluginRefusal)
        throws(PluginRefusal) -> lc_plugin_descriptor_t
    {
        let required = MemoryLayout<lc_plugin_descriptor_t>.size
        guard image.contains(raw, count: 16) else {
            throw refuse("\(LC_PLUGIN_ENTRY_SYMBOL)() returned a pointer outside the plugin's own image; the descriptor must be static data of the plugin", LC_ERR_PLUGIN_REFUSED)
        }
        let size = Int(raw.loadUnaligned(as: UInt32.self))
        guard size >= 16 else {
            throw refuse("the descriptor is \(size) bytes; ABI \(LC_ABI_VERSION_MAJOR).\(LC_ABI_VERSION_MINOR) descriptors are \(required)", LC_ERR_PLUGIN_REFUSED)
        }
        let magic = raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
        guard magic == LC_PLUGIN_MAGIC else {
            throw refuse("wrong magic 0x\(String(magic, radix: 16, uppercase: true)) (expected 0x4C43504C, \"LCPL\")", LC_ERR_PLUGIN_REFUSED)
        }
        let major = raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
        let minor = raw.loadUnaligned(fromByteOffset: 12, as: UInt32.self)
        // Only for the messages: formatting it on every load cost the first load of a process ~10 µs.
        var host: String { "\(LC_ABI_VERSION_MAJOR).\(LC_ABI_VERSION_MINOR)" }
        guard major == UInt32(LC_ABI_VERSION_MAJOR) else {
            throw refuse("built for ABI \(major).\(minor); this host speaks ABI \(host) (the major version must match)", LC_ERR_VERSION)
        }
        guard minor <= UInt32(LC_ABI_VERSION_MINOR) else {
            throw refuse("built for ABI \(major).\(minor), newer than this host's ABI \(host)", LC_ERR_VERSION)
        }
        guard size >= required else {
            throw refuse("the descriptor is \(size) bytes; ABI \(host) descriptors are \(required)", LC_ERR_PLUGIN_REFUSED)
        }
        guard image.contains(raw, count: required) else {
            throw refuse("the descriptor's \(required) bytes run past the end of the plugin's image", LC_ERR_PLUGIN_REFUSED)
        }
        // Append-only growth: copy what both sides know; a shorter tail would stay zero-filled.
        var descriptor = lc_plugin_descriptor_t()
        withUnsafeMutableBytes(of: &descriptor) { $0.copyMemory(from: UnsafeRawBufferPointer(start: raw, count: min(size, required))) }
        return descriptor
    }

    /// "the descriptor's id points outside …": a string pointer the loader will not read.
    private static func outside(_ what: String) -> String {
        "\(what) points outside the plugin's own image, or is not NUL-terminated inside it"
    }

    /// Nil when `id` is a valid plugin id, else what is wrong with it.
    package static func idProblem(_ id: String) -> String? {
        // The common case in one pass over the bytes: only ASCII letters, digits, '-' and '.', so that
        // characters are bytes and the checks below give the same answer (a valid id answers nil here).
        var id = id
        let valid: Bool? = id.withUTF8 { bytes in
            guard !bytes.isEmpty, bytes.count <= 200 else { return nil }
            var labels = 1
            var labelStart = 0
            for index in 0...bytes.count {
                let byte = index < bytes.count ? bytes[index] : 0x2E
                if byte == 0x2E {  // '.': the end of a label
                    if index == labelStart || bytes[labelStart] == 0x2D || bytes[index - 1] == 0x2D { return nil }
                    if index < bytes.count { labels += 1 }
                    labelStart = index + 1
                } else if !((byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D) {
                    return nil
                }
            }
            return labels >= 2 ? true : nil
        }
        if valid == true { return nil }
        return idProblemMessage(id)
    }

    /// Why `id` is invalid, label by label in order (nil when it is valid).
    private static func idProblemMessage(_ id: String) -> String? {
        if id.isEmpty { return "it is empty" }
        if id.utf8.count > 200 { return "it is longer than 200 bytes" }
        let labels = id.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count < 2 { return "a reverse-DNS id has at least two dot-separated labels, e.g. 'com.example.echo'" }
        for label in labels {
            if label.isEmpty { return "it has an empty label" }
            if label.first == "-" || label.last == "-" { return "a label starts or ends with '-'" }
            if !label.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D }) {
                return "only letters, digits and '-' may appear between the dots"
            }
        }
        return nil
    }
}
