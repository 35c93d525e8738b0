import AppLifecycle

/// A part of the life cycle that a plugin implements and that stays off unless the command line turns
/// it on: state preservation (`--archive DIR`), background fetch (`--background-mode fetch`). `run`
/// says so for each plugin it loads (a `warning` trace line and a line on standard error), `check`
/// for each plugin it reads (a `needs:` line), so that a plugin's delegate methods never silently
/// go uncalled.
struct PluginNeed: Equatable {
    /// The trace line's name: `preservation off`, `fetch off`.
    let name: String
    /// In words: `state preservation`, `background fetch`.
    let feature: String
    /// What turns it on: `--archive DIR`, `--background-mode fetch`.
    let option: String
    /// The plugin's methods that are not called while it is off, in the table's order.
    let methods: [DelegateMethod]

    /// One feature: its words, option and methods, and whether a configuration has it on.
    private struct Feature: Sendable {
        let name: String
        let feature: String
        let option: String
        let methods: [DelegateMethod]
        let isOn: @Sendable (Configuration) -> Bool
    }

    private static let features = [
        Feature(name: "preservation off", feature: "state preservation", option: "--archive DIR",
                methods: [.shouldSaveApplicationState, .shouldRestoreApplicationState, .willEncodeRestorableState, .didDecodeRestorableState],
                isOn: { $0.archiveDirectory != nil }),
        Feature(name: "fetch off", feature: "background fetch", option: "--background-mode fetch",
                methods: [.performFetch], isOn: { $0.backgroundModes.contains(.fetch) }),
    ]

    /// What a plugin implementing `methods` needs, whatever the configuration (for `check`).
    static func needs(of methods: [DelegateMethod]) -> [PluginNeed] { needs(of: methods) { _ in true } }

    /// What a plugin implementing `methods` needs and `configuration` leaves off (for `run`).
    static func unmet(by configuration: Configuration, for methods: [DelegateMethod]) -> [PluginNeed] {
        needs(of: methods) { !$0.isOn(configuration) }
    }

    private static func needs(of methods: [DelegateMethod], where include: (Feature) -> Bool) -> [PluginNeed] {
        let implemented = Set(methods)
        return features.compactMap { feature in
            let used = feature.methods.filter(implemented.contains)
            guard !used.isEmpty, include(feature) else { return nil }
            return PluginNeed(name: feature.name, feature: feature.feature, option: feature.option, methods: used)
        }
    }

    /// What `check` warns of in a plugin implementing `methods`: one of the two state-preservation
    /// gates without the other, so that neither is ever called (the engine traces a `skipped` line
    /// where it would have asked; see lifecycle.md, "State preservation").
    static func warnings(for methods: [DelegateMethod]) -> [String] {
        let implemented = Set(methods)
        let save = DelegateMethod.shouldSaveApplicationState, restore = DelegateMethod.shouldRestoreApplicationState
        guard implemented.contains(save) != implemented.contains(restore) else { return [] }
        let (present, missing) = implemented.contains(save) ? (save, restore) : (restore, save)
        return ["implements \(present.selector) but not \(missing.selector) (state preservation needs both, as on iOS): "
                    + "its state is neither saved nor restored"]
    }

    /// `state preservation (application:shouldSaveApplicationState:, …)`.
    var featureAndMethods: String { "\(feature) (\(methods.map(\.selector).joined(separator: ", ")))" }

    /// `run`'s words for a plugin that needs it while it is off.
    func offSentence(plugin id: String) -> String {
        "\(id) implements \(featureAndMethods), which is off: run with \(option) to turn it on"
    }
}
