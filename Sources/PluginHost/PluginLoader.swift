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
    /// How the plugin's process failed, when it was loaded isolated (or scanned) and its process
    /// crashed, exited or overran its budget before it was loaded; nil for a refusal in words.
    package var processFailure: PluginFailure.Cause?
    /// Where loading stopped: while the file was opened and checked (the loader's checks, `dlopen`,
    /// the descriptor), or in the plugin's `init`.
    package var stage: Stage
    /// The plugin's id, once its descriptor was read (a refusal in `init`, or later); nil before.
    package var id: String?

    /// How far loading got before the refusal.
    package enum Stage: Sendable, Equatable {
        /// Opening and checking the file, mapping it, reading the descriptor.
        case opening
        /// The plugin's `init` ran (and failed, crashed, exited or overran).
        case initialising
    }

    package init(path: String, reason: String, status: lc_status, processFailure: PluginFailure.Cause? = nil, stage: Stage = .opening,
                 id: String? = nil)
    {
        self.path = path
        self.reason = reason
        self.status = status
        self.processFailure = processFailure
        self.stage = stage
        self.id = id
    }

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
    /// A scan's process (`PluginScan`): the plugin's standard output and error go to /dev/null, so that
    /// what its init prints is seen once, from the load that follows (the runner only; the loader
    /// ignores it).
    package static let silent = PluginLoadOptions(rawValue: 1 << 1)
    /// Loads a private copy of the file's bytes, made after the path's checks (`PluginFile.privateCopy`):
    /// what a reload does, so that the new build is mapped even when the file was rewritten in place
    /// or an image of that file is mapped already.
    package static let privateCopy = PluginLoadOptions(rawValue: 1 << 2)
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
        guard loop.isOnLoopThread else {
            throw PluginRefusal(path: path, reason: "plugins are loaded on the main run loop's thread", status: lc_status(LC_ERR_WRONG_THREAD))
        }
        let opened = try OpenedPlugin.open(path, options: options)
        try checkUnique(opened.id, path: path)
        // Its loading (`Application.runLoading`, when the host marks it so) is timed under its id.
        app.identifyLoading(opened.id)
        let plugin = try initialise(opened, hostTable: nil)
        let (handlers, rows) = plugin.bindDelegates()
        plugin.implementedRows = rows
        if !rows.isEmpty {
            do {
                plugin.delegateToken = try app.addDelegate(handlers, id: plugin.id)
            } catch {
                plugin.deactivate(in: self)
                throw PluginRefusal(path: path, reason: error.message, status: lc_status(LC_ERR_PLUGIN_REFUSED))
            }
        }
        pluginSet.register(plugin)
        return plugin
    }

    /// Refuses an id already loaded in this application, or used by one of its delegates. [loop-thread]
    package func checkUnique(_ id: String, path: String) throws(PluginRefusal) {
        if let existing = plugin(id: id) {
            throw PluginRefusal(path: path, reason: "id '\(id)' is already loaded (from \(existing.path))", status: lc_status(LC_ERR_DUPLICATE))
        }
        if app.hasDelegate(id: id) {
            throw PluginRefusal(path: path, reason: "id '\(id)' is already used by a delegate of this application",
                                status: lc_status(LC_ERR_DUPLICATE))
        }
    }

    /// Runs an opened plugin's `init` with `hostTable` (nil: its own read-only copy of the host's table),
    /// as a plugin of this application. A failing init is refused with its message and whatever it
    /// registered is removed. [loop-thread]
    package func initialise(_ opened: OpenedPlugin, hostTable: UnsafePointer<lc_host_api_t>?) throws(PluginRefusal) -> LoadedPlugin {
        let plugin = LoadedPlugin(opened, owner: self, hostTable: hostTable)
        var state: UnsafeMutableRawPointer?
        plugin.inInit = true
        lcClearLastError()
        let status = opened.initialise(plugin.hostTable, plugin.handle, &state)
        plugin.inInit = false
        guard status == LC_OK else {
            plugin.removeRegistrations(in: self)
            plugin.isActive = false
            pluginSet.retire(plugin)
            let why = Self.initFailure(pluginMessage: plugin.initError, hostMessage: String(cString: lcLastErrorMessage()))
            throw PluginRefusal(path: opened.path, reason: "init failed with \(String(cString: lcStatusName(status))): \(why)",
                                status: lc_status(LC_ERR_PLUGIN_REFUSED), stage: .initialising, id: plugin.id)
        }
        plugin.state = state
        return plugin
    }

    /// Why an init failed, in words: the plugin's own message (`set_error`), and the last error a
    /// host call gave it during init (`hostMessage`, "" for none), which a plugin that returns a
    /// failed call's status without a message of its own would otherwise lose — e.g. the "did you
    /// mean" of `observe` with a misspelled notification name.
    static func initFailure(pluginMessage: String?, hostMessage: String) -> String {
        switch (pluginMessage, hostMessage.isEmpty) {
        case (nil, true): return "the plugin set no message"
        case (nil, false): return "\(hostMessage) (the last error a host call gave it in init; the plugin set no message)"
        case (let own?, true): return own
        case (let own?, false): return own == hostMessage ? own : "\(own); the last error a host call gave it in init: \(hostMessage)"
        }
    }

    /// Loads every `*.so` of a folder (absolute path), in name order; a refusal does not stop the others. [loop-thread]
    package func loadPlugins(folder: String, options: PluginLoadOptions = []) -> (loaded: [LoadedPlugin], refused: [PluginRefusal]) {
        let files: [String]
        switch pluginFiles(in: folder) {
        case .success(let found): files = found
        case .failure(let refusal): return ([], [refusal])
        }
        var loaded: [LoadedPlugin] = []
        var refused: [PluginRefusal] = []
        for file in files {
            do { loaded.append(try loadPlugin(path: file, options: options)) } catch { refused.append(error) }
        }
        return (loaded, refused)
    }

    /// The `*.so` files of a folder (absolute path), as absolute paths in name order.
    package func pluginFiles(in folder: String) -> Result<[String], PluginRefusal> {
        guard folder.hasPrefix("/") else {
            return .failure(PluginRefusal(path: folder, reason: "the folder path is relative; plugin folders are absolute paths only",
                                          status: lc_status(LC_ERR_PLUGIN_REFUSED)))
        }
        guard let dir = opendir(folder) else {
            return .failure(PluginRefusal(path: folder, reason: "cannot open the folder: \(String(cString: strerror(errno)))",
                                          status: lc_status(LC_ERR_SYSTEM)))
        }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name.hasSuffix(".so") { names.append(name) }
        }
        closedir(dir)
        let base = folder.hasSuffix("/") ? folder : folder + "/"
        return .success(names.sorted().map { base + $0 })
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
