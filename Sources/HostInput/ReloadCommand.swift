/// `reload ID [PATH] [--force]`: the host replaces a loaded plugin with a new build of its file
/// (docs/host.md, "Reloading a plugin").
extension ScenarioParser {
    /// The longest PATH taken, in bytes (Linux's `PATH_MAX` less its NUL).
    static let maximumReloadPathBytes = 4095

    /// Parses the arguments of `reload`. The id is checked by the host (it knows which are loaded),
    /// the path here only for its form: absolute, at most `maximumReloadPathBytes` bytes.
    static func reload(_ args: [String]) throws(ScenarioError) -> HostCommand {
        let usage = "reload ID [PATH] [--force]"
        var force = false
        var words: [String] = []
        for arg in args {
            if arg == "--force" {
                guard !force else { throw ScenarioError(message: "'reload': --force is given twice (\(usage))") }
                force = true
            } else if arg.hasPrefix("--") {
                let shown = arg.utf8.count > 64 ? String(arg.prefix(32)) + "…" : arg
                throw ScenarioError(message: "'reload': unknown option '\(shown)' (\(usage))")
            } else {
                words.append(arg)
            }
        }
        guard words.count == 1 || words.count == 2 else {
            throw ScenarioError(message: "'reload' needs a plugin id, then optionally an absolute path to load it from (\(usage))")
        }
        var path: String?
        if words.count == 2 {
            let given = words[1]
            guard given.utf8.count <= maximumReloadPathBytes else {
                throw ScenarioError(message: "'reload': the path is \(given.utf8.count) bytes; the limit is \(maximumReloadPathBytes)")
            }
            guard given.hasPrefix("/") else {
                throw ScenarioError(message: "'reload': the path '\(given)' is relative; plugins are loaded from absolute paths only")
            }
            path = given
        }
        return .reload(id: words[0], path: path, force: force)
    }
}
