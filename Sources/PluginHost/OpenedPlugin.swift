import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc
import LifecycleC

/// A plugin file opened and its descriptor checked: nothing of the plugin has run but its entry
/// function (and the constructors `dlopen` runs). What the in-process loader and an isolated plugin's
/// runner both start from, so that both make exactly the same checks.
package struct OpenedPlugin {
    package let path: String
    /// The `dlopen` handle (the image stays mapped: `RTLD_NODELETE`).
    let handle: UnsafeMutableRawPointer
    let descriptor: lc_plugin_descriptor_t
    package let id: String
    package let version: String
    package let summary: String
    package var abiMajor: UInt32 { descriptor.abi_major }
    package var abiMinor: UInt32 { descriptor.abi_minor }
    /// The descriptor's init function (checked present).
    let initialise: @convention(c) (UnsafePointer<lc_host_api_t>?, OpaquePointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> lc_status

    /// Opens `path` and checks it, in this order: absolute path, ELF file, entry symbol, magic, ABI
    /// version (a different major or a newer minor is refused, both versions named), descriptor size,
    /// a valid reverse-DNS id, an init function. [thread-safe]; not whether the id is in use (that is
    /// the application's: `AppHandle.checkUnique`).
    /// - Throws: `PluginRefusal` naming the file and the reason.
    package static func open(_ path: String) throws(PluginRefusal) -> OpenedPlugin {
        func refuse(_ reason: String, _ status: Int = LC_ERR_PLUGIN_REFUSED) -> PluginRefusal {
            PluginRefusal(path: path, reason: reason, status: lc_status(status))
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
        if let problem = AppHandle.idProblem(id) { throw refuse("invalid id '\(id)': \(problem)") }
        guard let initialise = descriptor.`init` else { throw refuse("the descriptor has no init function") }
        return OpenedPlugin(path: path, handle: handle, descriptor: descriptor, id: id,
                            version: descriptor.version.map { String(cString: $0) } ?? "",
                            summary: descriptor.description.map { String(cString: $0) } ?? "", initialise: initialise)
    }

    private static func checkELF(_ path: String, _ refuse: (String, Int) -> PluginRefusal) throws(PluginRefusal) {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw refuse("cannot open: \(String(cString: strerror(errno)))", LC_ERR_PLUGIN_REFUSED) }
        defer { close(fd) }
        var magic: UInt32 = 0
        let count = read(fd, &magic, 4)
        guard count == 4, magic == UInt32(littleEndian: 0x464C_457F) else {  // "\x7FELF" in file order
            throw refuse("not an ELF shared object", LC_ERR_PLUGIN_REFUSED)
        }
    }

    /// Reads the descriptor without trusting its size: magic and version first, then the size.
    private static func readDescriptor(_ raw: UnsafeRawPointer, _ refuse: (String, Int) -> PluginRefusal) throws(PluginRefusal)
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

}
