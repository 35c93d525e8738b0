import AppLifecycle
import ArgumentParser
import PluginHost

/// Which plugins `run` isolates in processes of their own, and how (docs/host.md, "Isolated plugins").
struct HostIsolation: Equatable {
    enum Selection: Equatable {
        case none
        case all
        /// Plugins named by id, by file name or by path.
        case named(Set<String>)
    }

    var selection = Selection.none
    var settings = IsolationSettings()

    /// Whether the plugin at `path` is isolated whatever its id (`--isolate` alone, or its file named).
    func isolatesFile(_ path: String) -> Bool {
        switch selection {
        case .none: return false
        case .all: return true
        case .named(let names):
            let file = path.split(separator: "/").last.map(String.init) ?? path
            return names.contains(path) || names.contains(file)
        }
    }

    /// Whether a plugin whose id is `id` is isolated.
    func isolates(id: String) -> Bool {
        if case .named(let names) = selection { return names.contains(id) }
        return selection == .all
    }
}

enum IsolateOption {
    /// The arguments as ArgumentParser reads them: a bare `--isolate` (last, or before another option)
    /// becomes `--isolate=*`, a bare `--scenes` `--scenes=multiple`.
    static func spelledForParser(_ arguments: [String]) -> [String] {
        var out: [String] = []
        for (index, argument) in arguments.enumerated() {
            let next = index + 1 < arguments.count ? arguments[index + 1] : nil
            let bare = next == nil || next!.hasPrefix("-") || next!.isEmpty
            if argument == "--isolate", bare {
                out.append("--isolate=*")
            } else if argument == "--scenes", bare {
                out.append("--scenes=multiple")
            } else {
                out.append(argument)
            }
        }
        return out
    }

    /// Checks the isolation options and sets them. - Throws: `ValidationError` naming the option and the limit.
    static func apply(isolate: String?, restart: String?, budget: String?, freezer: String?,
                      to options: inout RunOptions) throws {
        var isolation = HostIsolation()
        if let isolate {
            if isolate == "*" {
                isolation.selection = .all
            } else {
                let names = isolate.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
                guard !names.isEmpty, names.allSatisfy({ !$0.isEmpty }) else {
                    throw ValidationError("--isolate takes plugin ids (or file names) separated by commas, not '\(isolate)'")
                }
                isolation.selection = .named(Set(names))
            }
        }
        if let restart {
            guard let policy = IsolationSettings.RestartPolicy(parsing: restart) else {
                throw ValidationError("--restart must be never, on-failure or on-failure:N (N from 1 to 1000), not '\(restart)'")
            }
            isolation.settings.restart = policy
        }
        if let budget {
            do { isolation.settings.callBudget = try Seconds.parse(budget, allowsZero: false, atMost: 3600) } catch {
                throw ValidationError("--isolate-budget \(budget): \(error.message)")
            }
            isolation.settings.initBudget = max(isolation.settings.initBudget, isolation.settings.callBudget)
        }
        if let freezer {
            guard let choice = FreezerChoice(rawValue: freezer) else {
                throw ValidationError("--freezer must be auto, cgroup, cgroup-v1, signal or none, not '\(freezer)'")
            }
            isolation.settings.freezer = choice
        }
        options.isolation = isolation
    }
}
