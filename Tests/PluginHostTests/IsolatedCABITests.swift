import Foundation
import TestSupport
import XCTest

/// Isolated plugins through the C ABI (ABI 1.3): a C program linking liblifecycle.so loads plugins
/// with `lc_app_load_plugin_with_options`; the plugin runner is found beside the library.
final class IsolatedCABITests: XCTestCase {
    func testACProgramLoadsIsolatedPluginsSeesTheirFailuresAndHasItsOptionsChecked() throws {
        let folder = try CBuild.temporaryFolder("isolated-cabi")
        let program = folder + "/isolated_plugins"
        let compiler = CBuild.linkedProgramCompiler  // under TSan, the program is a TSan program too
        let compile = try CBuild.run(compiler.path, compiler.flags + ["-Wall", "-Werror", CBuild.root + "/Tests/PluginHostTests/Fixtures/isolated_plugins.c",
                                                     "-I", CBuild.root + "/include", "-L", CBuild.products, "-llifecycle",
                                                     "-Wl,-rpath,\(CBuild.products)", "-o", program])
        XCTAssertEqual(compile.status, 0, compile.output)
        let echo = CBuild.products + "/libEcho.so"
        let segv = try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.c.segv", name: "didEnterBackground", body: "*(volatile int *)0 = 1;"), named: "csegv")
        let result = try CBuild.run(program, [echo, segv])
        XCTAssertEqual(result.status, 0, result.output)
        let lines = result.output.split(separator: "\n").map(String.init)
        let function = "lc_app_load_plugin_with_options"
        XCTAssertEqual(lines.filter { !$0.hasPrefix("echo:") }, [
            "loaded org.applifecycle.echo",
            "loaded com.example.c.segv",
            "short struct: LC_ERR_INVALID_ARGUMENT \(function): options->struct_size is 4; at least 8 (struct_size and flags)",
            "unknown flags: LC_ERR_INVALID_ARGUMENT \(function): options->flags has unknown bits 0x6",
            "unknown policy: LC_ERR_INVALID_ARGUMENT \(function): options->restart_policy 9 is not LC_RESTART_NEVER or LC_RESTART_ON_FAILURE",
            "NaN budget: LC_ERR_INVALID_ARGUMENT \(function): options->call_budget is nan; a number of seconds above 0 and at most 3600 (0: 5)",
            "huge budget: LC_ERR_INVALID_ARGUMENT \(function): options->init_budget is 10000000000.0; a number of seconds above 0 and at most 3600 (0: 5)",
            "twice: LC_ERR_DUPLICATE \(echo): id 'org.applifecycle.echo' is already loaded (from \(echo))",
            "action launch [] ",
            "action home [] ",
            "plugin-failed SIGSEGV [com.example.c.segv] killed by SIGSEGV; while handling didEnterBackground; restart 1 of 1 in 0.100 s",
            "plugin-restarted restarted [com.example.c.segv] restart 1 of 1",
            "action foreground [] ",
            "action home [] ",
            "plugin-failed SIGSEGV [com.example.c.segv] killed by SIGSEGV; while handling didEnterBackground; gave up after 1 restart",
            "action foreground [] ",
            "action terminate [] ",
            "unload 1: LC_OK",
            "unload 2: LC_ERR_NOT_FOUND",
        ], result.output)
        XCTAssertEqual(lines.filter { $0.hasPrefix("echo:") }, [
            "echo: didFinishLaunching", "echo: didBecomeActive", "echo: willResignActive", "echo: didEnterBackground",
            "echo: willEnterForeground", "echo: didBecomeActive", "echo: willResignActive", "echo: didEnterBackground",
            "echo: willEnterForeground", "echo: didBecomeActive", "echo: willResignActive", "echo: didEnterBackground",
            "echo: willTerminate",
        ])
    }

    /// A delegate call with an answer proves the process ran every frame before it: the action's end
    /// asks no sync of it (one round trip an action, not two). A C program pinned to one CPU with its
    /// runner performs 50 `openURL` actions; the plugin reads, on its progress page, the number of the
    /// frame it is running: consecutive calls are consecutive frames.
    func testAnActionThatAsksAnIsolatedPluginAQuestionEndsWithoutASyncFrame() throws {
        let folder = try CBuild.temporaryFolder("isolated-round-trips")
        let program = folder + "/isolated_round_trips"
        let compiler = CBuild.linkedProgramCompiler
        let compile = try CBuild.run(compiler.path, compiler.flags + ["-Wall", "-Werror", CBuild.root + "/Tests/PluginHostTests/Fixtures/isolated_round_trips.c",
                                                     "-I", CBuild.root + "/include", "-L", CBuild.products, "-llifecycle",
                                                     "-Wl,-rpath,\(CBuild.products)", "-o", program])
        XCTAssertEqual(compile.status, 0, compile.output)
        let plugin = try IsolationFixtures.build(IsolationFixtures.exporter(id: "com.example.frames", functions: """
            #include <string.h>
            \(IsolationFixtures.progressPageSource)
            static volatile unsigned long *page;
            LC_EXPORT bool application_openURL_options(lc_app *app, const char *url, const lc_dict *options) {
                (void)app, (void)url, (void)options;
                if (!page) page = progress_page();
                printf("frames: %lu\\n", page ? page[0] : 0ul);
                fflush(stdout);
                return true;
            }
            """), named: "frames")
        let result = try CBuild.run(program, [plugin])
        XCTAssertEqual(result.status, 0, result.output)
        let frames = result.output.split(separator: "\n").filter { $0.hasPrefix("frames: ") }.compactMap { UInt64($0.dropFirst("frames: ".count)) }
        XCTAssertEqual(frames.count, 50, result.output)
        let steps = zip(frames.dropFirst(), frames).map { $0 - $1 }
        XCTAssertEqual(steps, Array(repeating: 1, count: 49), "frames \(frames): a sync frame came between calls")
    }
}
