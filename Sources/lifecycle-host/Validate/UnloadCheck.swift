import AppLifecycle

/// The `unload` check's look at the application right after a plugin's deinit returned: the host
/// removes everything a plugin registered before its deinit (include/lifecycle.h), so nothing of it
/// may be left — an observer, a background task. (What it does later — a thread still calling the
/// host — is a refused call after unloading, `RefusalTally`; a crash then, the step's phase.)
enum UnloadCheck {
    /// What the plugin `id` still has in `app`, in words (empty: nothing).
    static func leftovers(of id: String, in app: Application) -> [String] {
        var found: [String] = []
        let names = app.center.observedNames(owner: id)
        if !names.isEmpty {
            found.append("still observed \(names.map(\.rawValue).joined(separator: ", ")) after its deinit")
        }
        let tasks = app.backgroundTasks.filter { $0.owner == id }
        if !tasks.isEmpty {
            found.append("background task \(tasks.map { "#\($0.id)" }.joined(separator: ", ")) still open after its deinit")
        }
        return found
    }
}
