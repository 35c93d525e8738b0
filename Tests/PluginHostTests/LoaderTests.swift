import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Foundation
import TestSupport
import XCTest
@testable import LifecycleC
@testable import PluginHost

final class LoaderTests: XCTestCase {
    func makeHandle() throws -> AppHandle { try AppHandle(configuration: Configuration()) }

    /// Unloading keeps the others in load order, whichever goes; a plugin unloaded twice, or after a
    /// reload of its id, changes nothing the second time.
    func testUnloadingKeepsTheLoadOrderOfTheOthers() throws {
        let folder = try CBuild.temporaryFolder("unload-order")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let handle = try makeHandle()
        defer { handle.shutdown() }
        let ids = ["com.example.e", "com.example.a", "com.example.d", "com.example.b", "com.example.c"]
        var plugins: [LoadedPlugin] = []
        for (index, id) in ids.enumerated() {
            plugins.append(try handle.loadPlugin(path: try CBuild.sharedObject(CBuild.plugin(id: id), named: "p\(index)", in: folder)))
        }
        handle.unload(plugins[1])
        handle.unload(plugins[3])
        XCTAssertEqual(handle.plugins.map(\.id), ["com.example.e", "com.example.d", "com.example.c"])
        handle.unload(plugins[1])  // again: nothing
        XCTAssertEqual(handle.plugins.map(\.id), ["com.example.e", "com.example.d", "com.example.c"])
        let again = try handle.loadPlugin(path: folder + "/p1.so")
        handle.unload(plugins[1])  // the old object of a reloaded id: nothing
        XCTAssertEqual(handle.plugins.map(\.id), ["com.example.e", "com.example.d", "com.example.c", "com.example.a"])
        XCTAssertTrue(again.isActive)
        handle.unload(plugins[0])
        handle.unload(plugins[4])
        XCTAssertEqual(handle.plugins.map(\.id), ["com.example.d", "com.example.a"])
        XCTAssertNil(handle.plugin(id: "com.example.e"))
        XCTAssertTrue(handle.plugin(id: "com.example.a") === again)
    }

    /// A file is mapped once per process, found by device and inode in the image table: 40 files
    /// loaded into one application (the table grows twice past its first 16 slots), then the same 40
    /// into another, each finding the image the first load mapped, and a 41st file a new one.
    func testEachFileIsMappedOnceAndFoundAgainAfterTheTableGrew() throws {
        let folder = try CBuild.temporaryFolder("image-table")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // One object, copied: 40 files with 40 inodes (a build each would take seconds).
        let built = try CBuild.sharedObject(CBuild.plugin(id: "com.example.imagetable"), named: "built", in: folder)
        let paths = try (0..<41).map { index in
            let path = folder + "/copy\(index).so"
            try FileManager.default.copyItem(atPath: built, toPath: path)
            return path
        }
        let first = try makeHandle(), second = try makeHandle()
        defer {
            first.shutdown()
            second.shutdown()
        }
        var images: [ObjectIdentifier] = []
        for path in paths.prefix(40) {
            let plugin = try first.loadPlugin(path: path)
            images.append(ObjectIdentifier(try XCTUnwrap(plugin.image)))
            first.unload(plugin)  // the same id next: one at a time
        }
        XCTAssertEqual(Set(images).count, 40, "one image a file")
        for (index, path) in paths.prefix(40).enumerated() {
            let plugin = try second.loadPlugin(path: path)
            XCTAssertEqual(ObjectIdentifier(try XCTUnwrap(plugin.image)), images[index], path)
            second.unload(plugin)
        }
        let last = try second.loadPlugin(path: paths[40])
        XCTAssertFalse(images.contains(ObjectIdentifier(try XCTUnwrap(last.image))))
    }

    func testExamplePluginsLoadAndDescribeThemselves() throws {
        let handle = try makeHandle()
        defer { handle.shutdown() }
        let echo = try handle.loadPlugin(path: CBuild.products + "/libEcho.so")
        XCTAssertEqual(echo.id, "org.applifecycle.echo")
        XCTAssertEqual(echo.version, "1.0.0")
        XCTAssertEqual(echo.observedNames.count, NotificationName.standard.count, "Echo observes every standard name")
        XCTAssertEqual(echo.implementedMethods, [])

        let greeter = try handle.loadPlugin(path: CBuild.products + "/libGreeter.so")
        XCTAssertEqual(greeter.observedNames, [])
        XCTAssertEqual(greeter.implementedMethods.map(\.selector), [
            "application:willFinishLaunchingWithOptions:", "application:didFinishLaunchingWithOptions:",
            "applicationDidEnterBackground:", "applicationWillEnterForeground:", "applicationWillTerminate:",
            "application:openURL:sourceApplication:annotation:", "application:performFetchWithCompletionHandler:",
            "application:didReceiveRemoteNotification:fetchCompletionHandler:",
        ])
        let keeper = try handle.loadPlugin(path: CBuild.products + "/libStateKeeper.so")
        XCTAssertEqual(keeper.observedNames, [.protectedDataWillBecomeUnavailable, .protectedDataDidBecomeAvailable])

        let trimmer = try handle.loadPlugin(path: CBuild.products + "/libCacheTrimmer.so")
        XCTAssertEqual(trimmer.id, "org.applifecycle.cachetrimmer", "the Swift plugin built by SwiftPM")
        XCTAssertEqual(trimmer.observedNames, [.didEnterBackground, .didReceiveMemoryWarning])
        XCTAssertEqual(handle.app.delegateIDs, ["org.applifecycle.greeter", "org.applifecycle.statekeeper"])
    }

    func testRefusalsNameTheFileAndTheReasonAndTheHostGoesOn() throws {
        let folder = try CBuild.temporaryFolder("refusals")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let descriptorSize = MemoryLayout<lc_plugin_descriptor_t>.size
        let notELF = folder + "/notes.so"
        try "just some text\n".write(toFile: notELF, atomically: true, encoding: .utf8)
        let cases: [(String, String)] = [
            (notELF, "\(notELF): not an ELF shared object"),
            (try CBuild.sharedObject(CBuild.plugin(entry: false), named: "noentry", in: folder),
             "\(folder)/noentry.so: no entry symbol 'lc_plugin_entry' (export `const lc_plugin_descriptor_t *lc_plugin_entry(void)`)"),
            (try CBuild.sharedObject(CBuild.plugin(magic: "0x12345678u"), named: "magic", in: folder),
             "\(folder)/magic.so: wrong magic 0x12345678 (expected 0x4C43504C, \"LCPL\")"),
            (try CBuild.sharedObject(CBuild.plugin(major: "2"), named: "major", in: folder),
             "\(folder)/major.so: built for ABI 2.7; this host speaks ABI 1.7 (the major version must match)"),
            (try CBuild.sharedObject(CBuild.plugin(minor: "9"), named: "minor", in: folder),
             "\(folder)/minor.so: built for ABI 1.9, newer than this host's ABI 1.7"),
            (try CBuild.sharedObject(CBuild.plugin(size: "16"), named: "small", in: folder),
             "\(folder)/small.so: the descriptor is 16 bytes; ABI 1.7 descriptors are \(descriptorSize)"),
            (try CBuild.sharedObject(CBuild.plugin(id: "not a dns id"), named: "badid", in: folder),
             "\(folder)/badid.so: invalid id 'not a dns id': a reverse-DNS id has at least two dot-separated labels, e.g. 'com.example.echo'"),
            (try CBuild.sharedObject(CBuild.plugin(id: "com.example.failing", initBody: """
                host->set_error(plugin, "cannot read /etc/failing.conf");
                return LC_ERR_SYSTEM;
                """), named: "initfails", in: folder),
             "\(folder)/initfails.so: init failed with LC_ERR_SYSTEM: cannot read /etc/failing.conf"),
            ("plugins/libEcho.so", "plugins/libEcho.so: the path is relative; plugins are loaded from absolute paths only"),
            (folder + "/missing.so", "\(folder)/missing.so: cannot open: No such file or directory"),
        ]
        let handle = try makeHandle()
        defer { handle.shutdown() }
        let first = try CBuild.sharedObject(CBuild.plugin(id: "com.example.twice"), named: "first", in: folder)
        let second = try CBuild.sharedObject(CBuild.plugin(id: "com.example.twice"), named: "second", in: folder)
        _ = try handle.loadPlugin(path: first)
        var expected = cases
        expected.append((second, "\(second): id 'com.example.twice' is already loaded (from \(first))"))
        for (path, message) in expected {
            XCTAssertThrowsError(try handle.loadPlugin(path: path), path) { error in
                XCTAssertEqual((error as? PluginRefusal)?.message, message)
            }
        }
        // A refused init leaves nothing behind, and the host goes on with the others.
        XCTAssertEqual(handle.plugins.map(\.id), ["com.example.twice"])
        let echo = try handle.loadPlugin(path: CBuild.products + "/libEcho.so")
        XCTAssertTrue(echo.isActive)
        try handle.app.perform(.launch())
        XCTAssertEqual(handle.app.state, .active)
    }

    func testLoadingAFolderReportsEachRefusalAndLoadsTheRest() throws {
        let folder = try CBuild.temporaryFolder("folder")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        _ = try CBuild.sharedObject(CBuild.plugin(id: "com.example.a"), named: "a", in: folder)
        _ = try CBuild.sharedObject(CBuild.plugin(id: "com.example.b", major: "7"), named: "b", in: folder)
        _ = try CBuild.sharedObject(CBuild.plugin(id: "com.example.c"), named: "c", in: folder)
        let handle = try makeHandle()
        defer { handle.shutdown() }
        let result = handle.loadPlugins(folder: folder)
        XCTAssertEqual(result.loaded.map(\.id), ["com.example.a", "com.example.c"])
        XCTAssertEqual(result.refused.map(\.message), ["\(folder)/b.so: built for ABI 7.7; this host speaks ABI 1.7 (the major version must match)"])
    }

    func testUnloadingRemovesEverythingThenCallsDeinit() throws {
        let folder = try CBuild.temporaryFolder("unload")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = try CBuild.sharedObject(CBuild.plugin(id: "com.example.unload", initBody: """
            lc_status s = host->observe(plugin, "didBecomeActive", NULL, on_note, NULL, NULL);
            if (s == LC_OK) s = host->add_timer(plugin, 60.0, on_timer, NULL, NULL);
            saved_plugin = plugin;
            return s;
            """, extra: """
            #include <string.h>
            static lc_plugin *saved_plugin;
            static char events[512];
            static void note(const char *s) { strcat(events, s); strcat(events, ";"); }
            static void on_note(const lc_notification_t *n, void *c) { (void)n, (void)c; note("active"); }
            static void on_timer(void *c) { (void)c; note("timer"); }
            void applicationDidEnterBackground(lc_app *app) {
                (void)app; lc_task_id task; note("background");
                if (host->begin_background_task(saved_plugin, "upload", NULL, NULL, &task) == LC_OK) note("task");
            }
            static void plugin_deinit(void *state) {
                (void)state;
                note(host->state(saved_plugin) == LC_STATE_BACKGROUND ? "deinit-in-background" : "deinit");
                lc_observer_token t;
                note(host->observe(saved_plugin, "didBecomeActive", NULL, on_note, NULL, &t) == LC_ERR_NOT_FOUND ? "refused-after-unload" : "accepted-after-unload");
            }
            LC_EXPORT const char *unload_events(void) { return events; }
            """).replacingOccurrences(of: ".init = plugin_init,", with: ".init = plugin_init, .deinit = plugin_deinit,"),
            named: "unload", in: folder)
        let handle = try makeHandle()
        defer { handle.shutdown() }
        let plugin = try handle.loadPlugin(path: path)
        try handle.app.perform(.launch())
        try handle.app.perform(.home)
        XCTAssertEqual(handle.app.state, .background, "the plugin's background task holds the application")
        XCTAssertEqual(handle.app.backgroundTasks.map(\.owner), ["com.example.unload"])
        handle.unload(plugin)
        XCTAssertFalse(plugin.isActive)
        XCTAssertEqual(handle.app.center.observerCount(for: .didBecomeActive), 0)
        XCTAssertEqual(handle.app.delegateIDs, [])
        XCTAssertEqual(handle.app.backgroundTasks.count, 0)
        XCTAssertEqual(handle.app.state, .suspended, "ending its task let the application suspend")
        let image = try XCTUnwrap(dlopen(path, RTLD_NOW | RTLD_NOLOAD), "RTLD_NODELETE: the image stays mapped")
        let events = unsafeBitCast(try XCTUnwrap(dlsym(image, "unload_events")), to: (@convention(c) () -> UnsafePointer<CChar>).self)
        XCTAssertEqual(String(cString: events()), "active;background;task;deinit;refused-after-unload;")
        try handle.app.perform(.foreground)
        XCTAssertEqual(String(cString: events()), "active;background;task;deinit;refused-after-unload;", "nothing after unload")
    }

    func testACProgramEmbedsTheEngineThroughPkgConfig() throws {
        let folder = try CBuild.temporaryFolder("embed")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pkg = ["PKG_CONFIG_PATH": CBuild.root + "/pkgconfig"]
        let flags = try CBuild.run("/usr/bin/pkg-config", ["--define-variable=libdir=\(CBuild.products)", "--cflags", "--libs", "lifecycle"],
                                   environment: pkg)
        XCTAssertEqual(flags.status, 0, flags.output)
        let program = folder + "/embed_cycle"
        let compiler = CBuild.linkedProgramCompiler  // under TSan, the program is a TSan program too
        let compile = try CBuild.run("/bin/sh", ["-c", "\(([compiler.path] + compiler.flags).joined(separator: " ")) -Wall -Werror \(CBuild.root)/Tests/PluginHostTests/Fixtures/embed_cycle.c \(flags.output.trimmingCharacters(in: .whitespacesAndNewlines)) -Wl,-rpath,\(CBuild.products) -lpthread -o \(program)"])
        XCTAssertEqual(compile.status, 0, compile.output)
        let result = try CBuild.run(program, [])
        XCTAssertEqual(result.output, "ok\n")
        XCTAssertEqual(result.status, 0)
    }

    /// The example plugins (three in C, one in Swift built by SwiftPM) loaded through
    /// lc_app_load_plugin by a C program that drives a scenario: the exact output, engine trace and
    /// plugins' own lines interleaved, is in Fixtures/run_plugins.expected.
    func testExamplePluginsProduceTheExactTrace() throws {
        let folder = try CBuild.temporaryFolder("plugins")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fixtures = CBuild.root + "/Tests/PluginHostTests/Fixtures"
        let program = folder + "/run_plugins"
        let compiler = CBuild.linkedProgramCompiler  // under TSan, the program is a TSan program too
        let compile = try CBuild.run(compiler.path, compiler.flags + ["-Wall", "-Werror", fixtures + "/run_plugins.c", "-I", CBuild.root + "/include",
                                                     "-L", CBuild.products, "-llifecycle", "-Wl,-rpath,\(CBuild.products)", "-o", program])
        XCTAssertEqual(compile.status, 0, compile.output)
        let plugins = ["Echo", "StateKeeper", "Greeter", "CacheTrimmer"].map { CBuild.products + "/lib\($0).so" }
        let result = try CBuild.run(program, [folder + "/archive"] + plugins,
                                    environment: ["LC_STATEKEEPER_FILE": folder + "/protected.txt"])
        let expected = try String(contentsOfFile: fixtures + "/run_plugins.expected", encoding: .utf8)
        XCTAssertEqual(result.status, 0)
        if result.output != expected {
            let got = result.output.split(separator: "\n", omittingEmptySubsequences: false)
            let want = expected.split(separator: "\n", omittingEmptySubsequences: false)
            let first = Array(zip(got, want)).firstIndex { $0.0 != $0.1 } ?? min(got.count, want.count)
            XCTFail("output differs from run_plugins.expected at line \(first + 1): got '\(first < got.count ? got[first] : "<end>")', expected '\(first < want.count ? want[first] : "<end>")'")
        }
        // StateKeeper wrote its protected file only while it was open (never while locked).
        let protected = try String(contentsOfFile: folder + "/protected.txt", encoding: .utf8)
        XCTAssertEqual(protected, "active 1\nactive 2\nactive 3\nactive 4\n")
    }

    /// The host-API functions the example plugins do not use, called by a plugin the way a plugin
    /// calls them — including from its own thread.
    func testHostAPIFromAPlugin() throws {
        let folder = try CBuild.temporaryFolder("hostapi")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = try CBuild.sharedObject(CBuild.plugin(id: "com.example.hostapi", initBody: """
            me = plugin;
            lc_status s = host->observe(plugin, "com.example.ping", NULL, on_ping, NULL, &ping_token);
            if (s == LC_OK) s = host->add_timer(plugin, 30.0, on_timer, NULL, &timer);
            if (s == LC_OK) s = host->cancel_timer(plugin, timer);
            if (s == LC_OK && host->cancel_timer(plugin, timer) != LC_ERR_NOT_FOUND) s = LC_ERR_INTERNAL;
            if (s == LC_OK && host->get_extension(plugin, "lc.nothing/1") != NULL) s = LC_ERR_INTERNAL;
            host->log(plugin, LC_LOG_DEBUG, "hostapi loaded");
            return s;
            """, extra: """
            #include <pthread.h>
            #include <string.h>
            static lc_plugin *me;
            static lc_observer_token ping_token;
            static lc_source_id timer;
            static int pings, asyncs, timers;
            static char report[256];
            static void on_timer(void *c) { (void)c; timers++; }
            static void on_ping(const lc_notification_t *n, void *c) {
                (void)c;
                int64_t i = -1;
                if (n->user_info) host->dict->get_int(n->user_info, "i", &i);
                if (i != pings) strcat(report, "out-of-order;");
                if (++pings == 2) host->remove_observer(me, ping_token);
            }
            static void on_async(void *c) { (void)c; asyncs++; }
            static void *worker(void *arg) {
                (void)arg;
                // From a thread of the plugin's own: thread-safe calls work, main-thread ones refuse.
                for (int i = 0; i < 3; i++) {
                    lc_dict *info = host->dict->create();
                    host->dict->set_int(info, "i", i);
                    host->post(me, "com.example.ping", NULL, info);
                    host->dict->destroy(info);
                }
                host->perform_async(me, on_async, NULL);
                lc_observer_token t;
                if (host->observe(me, "didBecomeActive", NULL, on_ping, NULL, &t) == LC_ERR_WRONG_THREAD) strcat(report, "wrong-thread-refused;");
                return NULL;
            }
            LC_EXPORT void hostapi_start(void) { pthread_t t; pthread_create(&t, NULL, worker, NULL); pthread_join(t, NULL); }
            LC_EXPORT int hostapi_pings(void) { return pings; }
            LC_EXPORT int hostapi_asyncs(void) { return asyncs; }
            LC_EXPORT int hostapi_timers(void) { return timers; }
            LC_EXPORT const char *hostapi_report(void) { return report; }
            LC_EXPORT int hostapi_list_sum(const lc_dict *d) {
                const lc_list *list; int64_t v, sum = 0;
                if (host->dict->get_list(d, "numbers", &list) != LC_OK) return -1;
                for (size_t i = 0; i < host->dict->list_count(list); i++) {
                    if (host->dict->list_type_at(list, i) != LC_VALUE_INT || host->dict->list_get_int(list, i, &v) != LC_OK) return -2;
                    sum += v;
                }
                return (int)sum;
            }
            """), named: "hostapi", in: folder)
        let handle = try makeHandle()
        defer { handle.shutdown() }
        _ = try handle.loadPlugin(path: path)
        let image = try XCTUnwrap(dlopen(path, RTLD_NOW | RTLD_NOLOAD))
        func symbol<T>(_ name: String, _ type: T.Type) throws -> T { unsafeBitCast(try XCTUnwrap(dlsym(image, name)), to: type) }
        try handle.app.perform(.launch())
        try symbol("hostapi_start", (@convention(c) () -> Void).self)()
        let pings = try symbol("hostapi_pings", (@convention(c) () -> Int32).self)
        let asyncs = try symbol("hostapi_asyncs", (@convention(c) () -> Int32).self)
        XCTAssertEqual(pings(), 0, "posts from another thread wait for the loop")
        let deadline = MonotonicInstant.now + .seconds(5)
        while asyncs() == 0, MonotonicInstant.now < deadline { handle.loop.dispatchPending(); usleep(1000) }
        XCTAssertEqual(pings(), 2, "removed after the second, from inside its own callback")
        XCTAssertEqual(asyncs(), 1)
        try handle.loop.run(for: .milliseconds(50))
        XCTAssertEqual(try symbol("hostapi_timers", (@convention(c) () -> Int32).self)(), 0, "the cancelled timer never fired")
        XCTAssertEqual(String(cString: try symbol("hostapi_report", (@convention(c) () -> UnsafePointer<CChar>).self)()), "wrong-thread-refused;")
        let box = UserInfoBox(["numbers": [1, 2, 39]])
        XCTAssertEqual(try symbol("hostapi_list_sum", (@convention(c) (OpaquePointer) -> Int32).self)(box.opaque), 42)
    }
}
