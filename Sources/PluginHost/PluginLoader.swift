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

extension AppHandle {
    /// Loads, checks and initialises one plugin. [loop-thread]
    ///
    /// Checks, before any plugin code runs beyond the entry symbol: absolute path, ELF file, entry
    /// symbol, magic, ABI version (a different major or a newer minor is refused, both versions named),
    /// descriptor size, a valid reverse-DNS id not loaded yet, an init function. Then `init` runs; a
    /// failing init is refused with its message and whatever it registered is removed. Finally the
    /// delegate functions it exports are bound through libffi.
    /// - Throws: `PluginRefusal`; the application and the other plugins are unaffected.
    package func loadPlugin(path: String) throws(PluginRefusal) -> LoadedPlugin {
        func refuse(_ reason: String, _ status: Int = LC_ERR_PLUGIN_REFUSED) -> PluginRefusal {
            PluginRefusal(path: path, reason: reason, status: lc_status(status))
        }
        guard loop.isOnLoopThread else {
            throw refuse("plugins are loaded on the main run loop's thread", LC_ERR_WRONG_THREAD)
        }
        guard path.utf8.first == UInt8(ascii: "/") else {
            throw refuse("the path is relative; plugins are loaded from absolute paths only")
        }
        // RTLD_NODELETE: a dlclose'd Swift image would crash the runtime later; unloading only deactivates.
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) else {
            let error = dlerror().map { String(cString: $0) } ?? "unknown error"
            // A missing or non-ELF file is refused in the host's words. Checked only once dlopen has
            // failed (dlopen reads the header itself): a load that succeeds opens the file once.
            try checkELF(path, refuse)
            throw refuse("dlopen failed: \(error)")
        }
        guard let entrySymbol = dlsym(handle, LC_PLUGIN_ENTRY_SYMBOL) else {
            throw refuse("no entry symbol '\(LC_PLUGIN_ENTRY_SYMBOL)' (export `const lc_plugin_descriptor_t *lc_plugin_entry(void)`)")
        }
        let entry = unsafeBitCast(entrySymbol, to: lc_plugin_entry_fn.self)
        guard let raw = entry() else { throw refuse("\(LC_PLUGIN_ENTRY_SYMBOL)() returned NULL") }
        let descriptor = try readDescriptor(UnsafeRawPointer(raw), refuse)

        guard let idPointer = descriptor.id else { throw refuse("the descriptor has no id") }
        let id = String(cString: idPointer)
        if let problem = Self.idProblem(id) { throw refuse("invalid id '\(id)': \(problem)") }
        if let existing = plugin(id: id) {
            throw refuse("id '\(id)' is already loaded (from \(existing.path))", LC_ERR_DUPLICATE)
        }
        if app.hasDelegate(id: id) {
            throw refuse("id '\(id)' is already used by a delegate of this application", LC_ERR_DUPLICATE)
        }
        guard let initialise = descriptor.`init` else { throw refuse("the descriptor has no init function") }

        let plugin = LoadedPlugin(id: id, version: descriptor.version.map { String(cString: $0) } ?? "",
                                  summary: descriptor.description.map { String(cString: $0) } ?? "",
                                  path: path, handle: handle, descriptor: descriptor, owner: self)
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

        // ABI 1.1: the table init registered; else (1.0) the exported functions, found by name.
        // withCString: the table's symbols are literals, NUL-terminated in place, so no C copy is allocated.
        let (handlers, rows) = plugin.delegateTable.map { table in
            table.withUnsafeBufferPointer { FFIDelegates.bind(addresses: $0, convention: .pluginTable(plugin)) }
        } ?? FFIDelegates.bind(symbols: { $0.withCString { dlsym(handle, $0) } }, app: opaque, closures: closures,
                               owner: plugin, id: id)
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
    package func loadPlugins(folder: String) -> (loaded: [LoadedPlugin], refused: [PluginRefusal]) {
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
            do { loaded.append(try loadPlugin(path: base + name)) } catch { refused.append(error) }
        }
        return (loaded, refused)
    }

    private func checkELF(_ path: String, _ refuse: (String, Int) -> PluginRefusal) throws(PluginRefusal) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw refuse("cannot open: \(String(cString: strerror(errno)))", LC_ERR_PLUGIN_REFUSED) }
        defer { close(fd) }
        var magic: UInt32 = 0
        let count = read(fd, &magic, 4)
        guard count == 4, magic == UInt32(littleEndian: 0x464C_457F) else {  // "\x7FELF" in file order
            throw refuse("not an ELF shared object", LC_ERR_PLUGIN_REFUSED)
        }
    }

    /// Reads the descriptor without trusting its size: magic and version first, then the size.
    private func readDescriptor(_ raw: UnsafeRawPointer, _ refuse: (String, Int) -> PluginRefusal) throws(PluginRefusal)
        -> lc_plugin_descriptor_t
    {
        let required = MemoryLayout<lc_plugin_descriptor_t>.size
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
        // Append-only growth: copy what both sides know; a shorter tail would stay zero-filled.
        var descriptor = lc_plugin_descriptor_t()
        withUnsafeMutableBytes(of: &descriptor) { $0.copyMemory(from: UnsafeRawBufferPointer(start: raw, count: min(size, required))) }
        return descriptor
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
