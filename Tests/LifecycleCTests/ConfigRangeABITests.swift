import AppLifecycle
import CLifecycle
import CLifecycleABI
import Foundation
import XCTest
@testable import LifecycleC

/// `lc_config_t`'s enumerations, bit sets and archive folder through `lc_app_create`: a value the
/// header does not allow is refused by name (`LC_ERR_INVALID_ARGUMENT`), never taken as a default.
final class ConfigRangeABITests: XCTestCase {
    /// `lc_app_create` with `edit` applied to a default config: its status, the message (on error),
    /// and the app (destroyed).
    private func create(_ edit: (inout lc_config_t) -> Void) -> (status: lc_status, message: String) {
        var config = lc_config_t()
        lc_config_init(&config)
        edit(&config)
        var app: OpaquePointer?
        let status = lc_app_create(&config, &app)
        defer { lc_app_destroy(app) }
        if status == lc_status(LC_OK) {
            XCTAssertNotNil(app)
            return (status, "")
        }
        XCTAssertNil(app, "no application on error")
        return (status, String(cString: lc_last_error_message()))
    }

    func testValuesOutsideTheirRangeAreRefusedNamingTheFieldAndWhatIsAllowed() {
        let relative = strdup("state/archives")!, empty = strdup("")!, latin1 = strdup("/tmp/caf\u{e9}")!
        defer { free(relative); free(empty); free(latin1) }
        latin1[8] = CChar(bitPattern: 0xE9)  // "/tmp/caf" then a lone Latin-1 é: not UTF-8
        latin1[9] = 0
        let cases: [(String, (inout lc_config_t) -> Void, String)] = [
            ("policy 77", { $0.watchdog_policy = 77 },
             "config->watchdog_policy is 77; LC_WATCHDOG_TERMINATE (0) or LC_WATCHDOG_REPORT (1)"),
            ("exits 7", { $0.exits_on_suspend = 7 }, "config->exits_on_suspend is 7; 0 or 1"),
            ("modes 0x200", { $0.background_modes = UInt32(LC_BACKGROUND_FETCH) | 0x200 },
             "config->background_modes has unknown bits 0x200; the LC_BACKGROUND_* bits (0x1ff) only"),
            ("modes high", { $0.background_modes = 0x8000_0000 },
             "config->background_modes has unknown bits 0x80000000; the LC_BACKGROUND_* bits (0x1ff) only"),
            ("manifest 0xF0", { $0.scene_manifest = 0xF0 },
             "config->scene_manifest has unknown bits 0xf0; LC_SCENE_MANIFEST (0x1) and LC_SCENE_MANIFEST_SINGLE_SCENE (0x2) only"),
            ("single scene alone", { $0.scene_manifest = UInt32(LC_SCENE_MANIFEST_SINGLE_SCENE) },
             "config->scene_manifest is LC_SCENE_MANIFEST_SINGLE_SCENE alone; add LC_SCENE_MANIFEST (a scene-based application)"),
            ("empty folder", { $0.archive_directory = UnsafePointer(empty) },
             "config->archive_directory is empty; an absolute path, or NULL for no state preservation"),
            ("relative folder", { $0.archive_directory = UnsafePointer(relative) },
             "config->archive_directory is a relative path (it does not start with '/'); an absolute path, or NULL for no state preservation"),
            ("not UTF-8", { $0.archive_directory = UnsafePointer(latin1) },
             "config->archive_directory is not valid UTF-8; an absolute path in UTF-8, or NULL for no state preservation"),
            ("limit 1001", { $0.memory_warning_limit = 1001 }, "config->memory_warning_limit is 1001; 0 (never) to 1000"),
            ("limit max", { $0.memory_warning_limit = .max }, "config->memory_warning_limit is 4294967295; 0 (never) to 1000"),
        ]
        for (name, edit, message) in cases {
            let result = create(edit)
            XCTAssertEqual(result.status, lc_status(LC_ERR_INVALID_ARGUMENT), name)
            XCTAssertEqual(result.message, message, name)
        }
    }

    func testEveryValueTheHeaderAllowsIsTakenAsGiven() throws {
        // The edges of each range create an application.
        let folder = strdup(NSTemporaryDirectory() + "lc-config-range")!
        defer { free(folder) }
        let edges: [(String, (inout lc_config_t) -> Void)] = [
            ("report", { $0.watchdog_policy = lc_watchdog_policy(LC_WATCHDOG_REPORT) }),
            ("every mode", { $0.background_modes = 0x1FF }),
            ("exits", { $0.exits_on_suspend = 1 }),
            ("single scene", { $0.scene_manifest = UInt32(LC_SCENE_MANIFEST | LC_SCENE_MANIFEST_SINGLE_SCENE) }),
            ("NULL folder", { $0.archive_directory = nil }),
            ("absolute folder", { $0.archive_directory = UnsafePointer(folder) }),
            ("limit 1", { $0.memory_warning_limit = 1 }),
            ("limit 1000", { $0.memory_warning_limit = 1000 }),
        ]
        for (name, edit) in edges { XCTAssertEqual(create(edit).status, lc_status(LC_OK), name) }

        // And they reach the engine as given.
        var config = lc_config_t()
        lc_config_init(&config)
        config.watchdog_policy = lc_watchdog_policy(LC_WATCHDOG_REPORT)
        config.background_modes = 0x1FF  // every LC_BACKGROUND_* bit
        config.exits_on_suspend = 1
        config.scene_manifest = UInt32(LC_SCENE_MANIFEST | LC_SCENE_MANIFEST_SINGLE_SCENE)
        config.archive_directory = UnsafePointer(folder)
        config.memory_warning_limit = 3
        let configuration = try LifecycleC.configuration(from: &config)
        XCTAssertEqual(configuration.memoryWarningLimit, 3)
        XCTAssertEqual(configuration.watchdogPolicy, .report)
        XCTAssertEqual(configuration.backgroundModes.rawValue, 0x1FF)
        XCTAssertTrue(configuration.exitsOnSuspend)
        XCTAssertEqual(configuration.sceneManifest?.supportsMultipleScenes, false)
        XCTAssertEqual(configuration.archiveDirectory, String(cString: folder))

        // A 1.1-sized struct ends before scene_manifest: the garbage past it is never read.
        config = lc_config_t()
        lc_config_init(&config)
        config.scene_manifest = 0xF0
        config.struct_size = UInt32(MemoryLayout<lc_config_t>.offset(of: \lc_config_t.scene_manifest)!)
        XCTAssertNil(try LifecycleC.configuration(from: &config).sceneManifest)

        // A 1.4-sized struct ends before memory_warning_limit: never, whatever lies past it.
        config = lc_config_t()
        lc_config_init(&config)
        XCTAssertEqual(config.memory_warning_limit, 0, "the default: never")
        config.memory_warning_limit = 5000
        config.struct_size = UInt32(MemoryLayout<lc_config_t>.offset(of: \lc_config_t.memory_warning_limit)!)
        XCTAssertNil(try LifecycleC.configuration(from: &config).memoryWarningLimit)
    }
}
