import Foundation
import TestSupport
import XCTest

/// ABI 1.7's lc_app_reload_plugin, driven by a C program (Fixtures/reload.c) compiled at test time
/// against include/lifecycle.h and linked with liblifecycle.so, with real plugins built from one fixture.
final class ReloadABITests: XCTestCase {
    func testReloadThroughTheCABIRefusesWhatItMustAndHandsTheStateToTheNewBuild() throws {
        let folder = try CBuild.temporaryFolder("reload-abi")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fixture = CBuild.root + "/Tests/HostTests/Fixtures/reload_fixture.c"
        let a = try CBuild.sharedObject(file: fixture, defines: ["BUILD=\"A\""], named: "a", in: folder)
        let b = try CBuild.sharedObject(file: fixture, defines: ["BUILD=\"B\""], named: "b", in: folder)
        let f = try CBuild.sharedObject(file: fixture, defines: ["BUILD=\"F\"", "FAIL_INIT"], named: "f", in: folder)
        let notPlugin = folder + "/notes.so"
        try "not an ELF file\n".write(toFile: notPlugin, atomically: true, encoding: .utf8)
        let defines = ["PLUGIN_A": a, "PLUGIN_B": b, "PLUGIN_F": f, "NOT_PLUGIN": notPlugin].map { "-D\($0.key)=\"\($0.value)\"" }
        let (compile, run) = try CBuild.runLinkedProgram("Tests/LifecycleCTests/Fixtures/reload.c", in: folder, extra: defines)
        XCTAssertEqual(compile.status, 0, compile.output)
        let result = try XCTUnwrap(run)
        XCTAssertEqual(result.status, 0, result.output)
        let stdout = result.output.components(separatedBy: "--stderr--").first ?? ""
        let got = stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let id = "com.example.reloadable"
        let failed = "  trace: plugin-reload failed [\(id)]"
        let expected = """
            abi 1.7
            LC_ERR_INVALID_ARGUMENT: lc_app_reload_plugin: id is NULL
            LC_ERR_NOT_FOUND: lc_app_reload_plugin: cannot reload 'com.example.nothing': no plugin with that id is loaded
            LC_ERR_INVALID_ARGUMENT: lc_app_reload_plugin: cannot reload 'nodots': invalid id: a reverse-DNS id has at least two dot-separated labels, e.g. 'com.example.echo'
            LC_ERR_INVALID_ARGUMENT: lc_app_reload_plugin: unknown flags 0x6
            LC_ERR_INVALID_ARGUMENT: lc_app_reload_plugin: cannot reload '\(id)': the path is relative; plugins are loaded from absolute paths only
              trace: plugin-reload begin [\(id)] (\(notPlugin))
            \(failed) (\(notPlugin): not an ELF shared object; the old instance runs on)
            LC_ERR_PLUGIN_REFUSED: lc_app_reload_plugin: cannot reload '\(id)': \(notPlugin): not an ELF shared object
              trace: plugin-reload begin [\(id)] (\(f))
              trace: delegate application:shouldSaveApplicationState: [\(id)] ()
              trace: delegate application:willEncodeRestorableStateWithCoder: [\(id)] ()
            \(failed) (\(f): init failed with LC_ERR_PLUGIN_REFUSED: build F refuses to start; the old instance runs on)
            LC_ERR_PLUGIN_REFUSED: lc_app_reload_plugin: cannot reload '\(id)': \(f): init failed with LC_ERR_PLUGIN_REFUSED: build F refuses to start
            still loaded: \(id), same handle: yes
              trace: plugin-reload begin [\(id)] (\(b))
              trace: delegate application:shouldSaveApplicationState: [\(id)] ()
              trace: delegate application:willEncodeRestorableStateWithCoder: [\(id)] ()
              trace: delegate application:shouldRestoreApplicationState: [\(id)] ()
              trace: delegate application:didDecodeRestorableStateWithCoder: [\(id)] ()
              trace: plugin-reload end [\(id)] (\(b))
            reload B: LC_OK
            new handle: yes, id \(id)
            from inside its callback:   trace: plugin-reload begin [\(id)] (\(b))
            \(failed) (one of its callbacks is running (a plugin is reloaded from outside its own callbacks); the old instance runs on)
            LC_ERR_ILLEGAL_ACTION: lc_app_reload_plugin: cannot reload '\(id)': one of its callbacks is running (a plugin is reloaded from outside its own callbacks)
            unloaded; reload now: LC_ERR_NOT_FOUND: lc_app_reload_plugin: cannot reload '\(id)': no plugin with that id is loaded
            """
        XCTAssertEqual(CBuild.mismatchedLines(got, expected), [], result.output)
    }
}
