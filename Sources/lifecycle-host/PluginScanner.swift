import AppLifecycle
import ArgumentParser
import CLifecycleABI
import PluginHost

/// The host's use of plugin scanning (`check`, and `run` for every plugin file loaded in the host's
/// process, named with `--plugin` or found with `--plugin-dir`): the registry consulted first, unknown files scanned in a process of their own,
/// crashers refused (docs/host.md, "Scanning plugins").
struct PluginScanner {
    /// The registry, read at the first plugin asked about: a run with no plugin to scan never reads it.
    private var opened: PluginScanRegistry?
    private let budget: Duration
    private let options: PluginLoadOptions
    private var changed = false

    /// How long a scan may take when not told (`--scan-budget`).
    static let defaultBudget: Duration = .seconds(5)

    /// `rescan`: forget what the registry remembers (`--rescan`).
    init(rescan: Bool, budget: Duration = defaultBudget, options: PluginLoadOptions = []) {
        // Forgetting reads nothing: made now, so that `save` empties the file even with no plugin.
        opened = rescan ? PluginScanRegistry(forgetting: true) : nil
        changed = rescan
        self.budget = budget
        self.options = options
    }

    /// Why the scanner refuses a plugin.
    struct Refusal {
        let refusal: PluginRefusal
        /// Its process exited while scanned, now or when remembered (the plugin called `exit()`):
        /// `check` then ends with `HostExit.pluginExit`, as `run` does for an `exit()` in init.
        let calledExit: Bool
    }

    /// Nil when the plugin at `path` may be loaded in the host's process; else why not.
    mutating func check(_ path: String) -> PluginRefusal? { refusal(for: path)?.refusal }

    /// Nil when the plugin at `path` may be loaded in the host's process; else why not, typed.
    mutating func refusal(for path: String) -> Refusal? {
        guard let key = PluginScanRegistry.key(path) else { return nil }  // the loader says why in its words
        if opened == nil { opened = PluginScanRegistry() }
        // Read through `opened` itself, no local copy: `record` below then changes it in place.
        let place = opened!.file.map { "remembered in \($0)" } ?? "not remembered: no cache folder"
        let again = "(\(place); --rescan to scan it again)"
        switch opened!.entry(key) {
        case .crashed(let why, let id)?:
            return refusal(path, "remembered as crashing when scanned: \(named(why, id)) \(again)", id: id)
        case .exited(let why, let id)?:
            return refusal(path, "remembered as crashing when scanned: \(named(why, id)) \(again)", id: id, calledExit: true)
        case .clean?:
            return nil
        case nil:
            switch PluginScan.scan(path, budget: budget, options: options) {
            case .clean(let id):
                record(key, .clean(id: id))
                return nil
            case .crashed(let why, let id):
                record(key, .crashed(why, id: id))
                return refusal(path, "crashed when scanned: \(named(why, id)) \(again)", id: id)
            case .exited(let why, let id):
                record(key, .exited(why, id: id))
                return refusal(path, "crashed when scanned: \(named(why, id)) \(again)", id: id, calledExit: true)
            case .refused(let refusal):
                return Refusal(refusal: refusal, calledExit: false)
            }
        }
    }

    /// The scan's words, led by the plugin's id when its descriptor was read (a failure in init).
    private func named(_ why: String, _ id: String?) -> String { id.map { "plugin \($0): \(why)" } ?? why }

    private mutating func record(_ key: PluginScanRegistry.Key, _ entry: PluginScanRegistry.Entry) {
        opened?.record(key, entry)  // in place: `refusal` read it first
        changed = true
    }

    private func refusal(_ path: String, _ reason: String, id: String?, calledExit: Bool = false) -> Refusal {
        Refusal(refusal: PluginRefusal(path: path, reason: reason, status: lc_status(LC_ERR_PLUGIN_REFUSED), stage: id == nil ? .opening : .initialising,
                                       id: id),
                calledExit: calledExit)
    }

    /// Writes the registry if anything changed. - Returns: the error's words.
    func save() -> String? { changed ? opened?.save() : nil }
}

/// `--scan-budget DURATION` (`Seconds.parse`: above 0, at most 3600 s); the default without one.
func scanBudget(_ text: String?) throws -> Duration {
    guard let text else { return PluginScanner.defaultBudget }
    do { return try Seconds.parse(text, allowsZero: false, atMost: 3600) } catch {
        throw ValidationError("--scan-budget \(text): \(error.message)")
    }
}
