import CLifecycleABI

/// The enumerations, bit sets and path of an `lc_config_t`, checked against what the header allows
/// before any of them is used: `lc_app_create` refuses a value outside them with
/// `LC_ERR_INVALID_ARGUMENT` and a message naming the field, the value and what is allowed — never a
/// silent default. (The budgets are checked by `CSeconds.budget`.)
///
/// Allowed:
/// - `watchdog_policy`: `LC_WATCHDOG_TERMINATE` (0) or `LC_WATCHDOG_REPORT` (1);
/// - `background_modes`: any set of the `LC_BACKGROUND_*` bits (`allBackgroundModes`, 0x1ff);
/// - `exits_on_suspend`: 0 or 1;
/// - `scene_manifest`: 0, `LC_SCENE_MANIFEST`, or `LC_SCENE_MANIFEST | LC_SCENE_MANIFEST_SINGLE_SCENE`
///   (single scene alone names no scene-based application);
/// - `memory_warning_limit`: 0 (never) to `maximumMemoryWarningLimit` (1,000);
/// - `clock`: `LC_CLOCK_MONOTONIC` (0) or `LC_CLOCK_MANUAL` (1);
/// - `archive_directory`: NULL (no state preservation), or an absolute path in UTF-8 (not empty).
///
/// A shorter, older struct's missing fields are the defaults and always pass.
package enum ConfigRanges {
    /// Every `LC_BACKGROUND_*` bit of the header.
    package static let allBackgroundModes = UInt32(LC_BACKGROUND_AUDIO | LC_BACKGROUND_LOCATION | LC_BACKGROUND_VOIP
        | LC_BACKGROUND_EXTERNAL_ACCESSORY | LC_BACKGROUND_BLUETOOTH_CENTRAL | LC_BACKGROUND_BLUETOOTH_PERIPHERAL | LC_BACKGROUND_FETCH
        | LC_BACKGROUND_REMOTE_NOTIFICATION | LC_BACKGROUND_PROCESSING)
    /// Every `LC_SCENE_MANIFEST*` bit of the header.
    package static let allSceneManifestFlags = UInt32(LC_SCENE_MANIFEST | LC_SCENE_MANIFEST_SINGLE_SCENE)

    /// The largest `memory_warning_limit` (and the host's `--memory-warning-limit`).
    package static let maximumMemoryWarningLimit: UInt32 = 1000

    /// Checks the fields of `c` (a full struct: the caller's bytes over the defaults).
    /// - Returns: the archive folder (nil: none), read once from the caller's string.
    /// - Throws: `CStatusError` (`LC_ERR_INVALID_ARGUMENT`) for the first field out of its range.
    package static func check(_ c: lc_config_t) throws(CStatusError) -> String? {
        func invalid(_ message: String) -> CStatusError {
            CStatusError(status: lc_status(LC_ERR_INVALID_ARGUMENT), message: "config->\(message)")
        }
        guard c.watchdog_policy == UInt32(LC_WATCHDOG_TERMINATE) || c.watchdog_policy == UInt32(LC_WATCHDOG_REPORT) else {
            throw invalid("watchdog_policy is \(c.watchdog_policy); LC_WATCHDOG_TERMINATE (0) or LC_WATCHDOG_REPORT (1)")
        }
        guard c.background_modes & ~allBackgroundModes == 0 else {
            throw invalid("background_modes has unknown bits 0x\(hex(c.background_modes & ~allBackgroundModes)); "
                          + "the LC_BACKGROUND_* bits (0x\(hex(allBackgroundModes))) only")
        }
        guard c.exits_on_suspend <= 1 else {
            throw invalid("exits_on_suspend is \(c.exits_on_suspend); 0 or 1")
        }
        guard c.scene_manifest & ~allSceneManifestFlags == 0 else {
            throw invalid("scene_manifest has unknown bits 0x\(hex(c.scene_manifest & ~allSceneManifestFlags)); "
                          + "LC_SCENE_MANIFEST (0x1) and LC_SCENE_MANIFEST_SINGLE_SCENE (0x2) only")
        }
        guard c.scene_manifest != UInt32(LC_SCENE_MANIFEST_SINGLE_SCENE) else {
            throw invalid("scene_manifest is LC_SCENE_MANIFEST_SINGLE_SCENE alone; add LC_SCENE_MANIFEST (a scene-based application)")
        }
        guard c.memory_warning_limit <= maximumMemoryWarningLimit else {
            throw invalid("memory_warning_limit is \(c.memory_warning_limit); 0 (never) to \(maximumMemoryWarningLimit)")
        }
        guard c.clock.rawValue == LC_CLOCK_MONOTONIC.rawValue || c.clock.rawValue == LC_CLOCK_MANUAL.rawValue else {
            throw invalid("clock is \(c.clock.rawValue); LC_CLOCK_MONOTONIC (0) or LC_CLOCK_MANUAL (1)")
        }
        guard let directory = c.archive_directory else { return nil }
        guard directory.pointee != 0 else {
            throw invalid("archive_directory is empty; an absolute path, or NULL for no state preservation")
        }
        guard directory.pointee == CChar(UInt8(ascii: "/")) else {
            throw invalid("archive_directory is a relative path (it does not start with '/'); an absolute path, or NULL for no state preservation")
        }
        guard let path = String(validatingCString: directory) else {
            throw invalid("archive_directory is not valid UTF-8; an absolute path in UTF-8, or NULL for no state preservation")
        }
        return path
    }

    private static func hex(_ value: UInt32) -> String { String(value, radix: 16) }
}
