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
    /// Its image (mapped for the life of the process).
    let image: PluginImage
    let descriptor: lc_plugin_descriptor_t
    package let id: String
    package let version: String
    package let summary: String
    package var abiMajor: UInt32 { descriptor.abi_major }
    package var abiMinor: UInt32 { descriptor.abi_minor }
    /// The descriptor's init function (checked present).
    let initialise: @convention(c) (UnsafePointer<lc_host_api_t>?, OpaquePointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> lc_status

    /// Opens `path` and checks it (see `AppHandle.loadPlugin(path:options:)` for every check, in
    /// order) up to a valid reverse-DNS id and an init function; not whether the id is in use (that is
    /// the application's: `AppHandle.checkUnique`). [thread-safe]
    /// - Throws: `PluginRefusal` naming the file and the reason.
    package static func open(_ path: String, options: PluginLoadOptions) throws(PluginRefusal) -> OpenedPlugin {
        func refuse(_ reason: String, _ status: Int = LC_ERR_PLUGIN_REFUSED) -> PluginRefusal {
            PluginRefusal(path: path, reason: reason, status: lc_status(status))
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
        guard let id = image.string(at: idPointer) else { throw refuse(outside("the descriptor's id")) }
        let version = try descriptor.version.map { pointer throws(PluginRefusal) in
            guard let text = image.string(at: pointer) else { throw refuse(outside("the descriptor's version")) }
            return text
        }
        let summary = try descriptor.description.map { pointer throws(PluginRefusal) in
            guard let text = image.string(at: pointer) else { throw refuse(outside("the descriptor's description")) }
            return text
        }
        if let problem = AppHandle.idProblem(id) { throw refuse("invalid id '\(id)': \(problem)") }
        guard let initialise = descriptor.`init` else { throw refuse("the descriptor has no init function") }
        return OpenedPlugin(path: path, image: image, descriptor: descriptor, id: id, version: version ?? "", summary: summary ?? "",
                            initialise: initialise)
    }

    /// Reads the descriptor without trusting its size: magic and version first, then the size.
    /// The pointer is checked to lie inside the plugin's own image before anything is read from it.
    private static func readDescriptor(_ raw: UnsafeRawPointer, in image: PluginImage, _ refuse: (String, Int) -> PluginRefusal)
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

}
