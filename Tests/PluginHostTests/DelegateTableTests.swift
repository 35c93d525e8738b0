import AppLifecycle
import CLifecycle
import CLifecycleABI
import Foundation
import Glibc
import TestSupport
import XCTest
@testable import LifecycleC
@testable import PluginHost

/// ABI 1.1: the delegate table registered with `set_delegate`, per-plugin state, completion tokens.
final class DelegateTableTests: XCTestCase {
    /// A 1.1 test plugin: its delegate table keeps everything in the state init allocated; helpers
    /// exported for the test take that state (`LoadedPlugin.state`).
    static let source = """
        #include <stdlib.h>
        typedef struct st {
            lc_plugin *plugin;
            int mode; /* 0: complete at once, 1: keep the token */
            int actives;
            lc_complete_fn complete;
            lc_completion_token first, last;
            lc_status first_status;
        } st;
        static void active(lc_plugin *p, void *state) { (void)p; ((st *)state)->actives++; }
        static void fetch(lc_plugin *p, void *state, lc_complete_fn complete, lc_completion_token token) {
            st *s = state;
            s->complete = complete;
            if (!s->first) s->first = token;
            s->last = token;
            if (s->mode == 0) s->first_status = complete(p, token, LC_FETCH_NEW_DATA);
        }
        static void push(lc_plugin *p, void *state, const lc_dict *info, lc_complete_fn complete, lc_completion_token token) {
            (void)info; fetch(p, state, complete, token);
        }
        static const lc_plugin_delegate_t table = {
            .struct_size = sizeof(lc_plugin_delegate_t), .did_become_active = active, .perform_fetch = fetch,
            .did_receive_remote_notification_with_completion = push,
        };
        LC_EXPORT int fx_actives(void *state) { return ((st *)state)->actives; }
        LC_EXPORT void fx_mode(void *state, int mode) { ((st *)state)->mode = mode; }
        LC_EXPORT uint64_t fx_first(void *state) { return ((st *)state)->first; }
        LC_EXPORT uint64_t fx_last(void *state) { return ((st *)state)->last; }
        LC_EXPORT int fx_first_status(void *state) { return ((st *)state)->first_status; }
        LC_EXPORT int fx_complete(void *state, uint64_t token, uint32_t result) {
            st *s = state; return s->complete(s->plugin, token, result);
        }
        LC_EXPORT int fx_set_delegate_again(void *state) { return host->set_delegate(((st *)state)->plugin, &table); }
        """

    static func plugin(id: String) -> String {
        CBuild.plugin(id: id, initBody: """
            st *s = calloc(1, sizeof *s);
            s->plugin = plugin;
            lc_status status = host->set_delegate(plugin, &table);
            *state = s;
            return status;
            """, extra: source)
    }

    var folder = ""
    override func setUpWithError() throws { folder = try CBuild.temporaryFolder("table") }
    override func tearDown() { try? FileManager.default.removeItem(atPath: folder) }

    struct Helpers {
        let image: UnsafeMutableRawPointer
        func fn<T>(_ name: String, _ type: T.Type) -> T { unsafeBitCast(dlsym(image, name)!, to: type) }
        func actives(_ p: LoadedPlugin) -> Int32 { fn("fx_actives", (@convention(c) (UnsafeMutableRawPointer?) -> Int32).self)(p.state) }
        func mode(_ p: LoadedPlugin, _ m: Int32) { fn("fx_mode", (@convention(c) (UnsafeMutableRawPointer?, Int32) -> Void).self)(p.state, m) }
        func first(_ p: LoadedPlugin) -> UInt64 { fn("fx_first", (@convention(c) (UnsafeMutableRawPointer?) -> UInt64).self)(p.state) }
        func last(_ p: LoadedPlugin) -> UInt64 { fn("fx_last", (@convention(c) (UnsafeMutableRawPointer?) -> UInt64).self)(p.state) }
        func firstStatus(_ p: LoadedPlugin) -> Int32 { fn("fx_first_status", (@convention(c) (UnsafeMutableRawPointer?) -> Int32).self)(p.state) }
        func complete(_ p: LoadedPlugin, _ token: UInt64, _ result: UInt32) -> Int32 {
            fn("fx_complete", (@convention(c) (UnsafeMutableRawPointer?, UInt64, UInt32) -> Int32).self)(p.state, token, result)
        }
        func setDelegateAgain(_ p: LoadedPlugin) -> Int32 { fn("fx_set_delegate_again", (@convention(c) (UnsafeMutableRawPointer?) -> Int32).self)(p.state) }
    }

    func load(_ id: String, named name: String, into handle: AppHandle) throws -> (LoadedPlugin, Helpers) {
        let path = try CBuild.sharedObject(Self.plugin(id: id), named: name, in: folder)
        let plugin = try handle.loadPlugin(path: path)
        return (plugin, Helpers(image: try XCTUnwrap(dlopen(path, RTLD_NOW | RTLD_NOLOAD))))
    }

    func backgroundApp() throws -> AppHandle {
        var configuration = Configuration()
        configuration.backgroundModes = [.fetch, .remoteNotification]
        configuration.watchdogPolicy = .report
        let handle = try AppHandle(configuration: configuration)
        return handle
    }

    func suspend(_ handle: AppHandle) throws {
        try handle.app.perform(.launch())
        try handle.app.perform(.home)
        XCTAssertEqual(handle.app.state, .suspended)
    }

    /// seed 004's application:openURL:options: is the 1.1 table's last field, appended: read only when
    /// struct_size covers it. A table built against an earlier 1.1 header (shorter) keeps its open_url.
    func testOpenURLWithOptionsIsTheTablesLastFieldReadOnlyWhenStructSizeCoversIt() throws {
        func source(size: String) -> String {
            CBuild.plugin(id: "com.example.urls", initBody: "return host->set_delegate(plugin, &table);", extra: """
                #include <stddef.h>
                #include <string.h>
                static char seen[512];
                static bool older(lc_plugin *p, void *s, const char *url, const char *source, const lc_dict *annotation) {
                    (void)p, (void)s, (void)annotation;
                    strcat(seen, "older "); strcat(seen, url); strcat(seen, " "); strcat(seen, source ? source : "-"); strcat(seen, "|");
                    return true;
                }
                static bool newer(lc_plugin *p, void *s, const char *url, const lc_dict *options) {
                    (void)p, (void)s;
                    const char *source = NULL;
                    if (host->dict->get_string(options, "sourceApplication", &source) != LC_OK) source = "-";
                    strcat(seen, "newer "); strcat(seen, url); strcat(seen, " "); strcat(seen, source); strcat(seen, "|");
                    return true;
                }
                static const lc_plugin_delegate_t table = { .struct_size = \(size), .open_url = older, .open_url_with_options = newer };
                LC_EXPORT const char *fx_seen(void) { return seen; }
                """)
        }
        for (name, size, expected) in [
            ("urls_full", "sizeof(lc_plugin_delegate_t)", "newer app://a com.example.src|newer app://b -|"),
            ("urls_short", "offsetof(lc_plugin_delegate_t, open_url_with_options)", "older app://a com.example.src|older app://b -|"),
        ] {
            let handle = try AppHandle(configuration: Configuration())
            defer { handle.shutdown() }
            let path = try CBuild.sharedObject(source(size: size), named: name, in: folder)
            let plugin = try handle.loadPlugin(path: path)
            XCTAssertEqual(plugin.implementedMethods.filter { $0.selector.hasPrefix("application:openURL") },
                           size.hasPrefix("sizeof") ? [.openURL, .openURLWithOptions] : [.openURL], name)
            try handle.app.perform(.openURL("app://a", sourceApplication: "com.example.src"))
            try handle.app.perform(.openURL("app://b"))
            let image = try XCTUnwrap(dlopen(path, RTLD_NOW | RTLD_NOLOAD))
            let seen = unsafeBitCast(dlsym(image, "fx_seen")!, to: (@convention(c) () -> UnsafePointer<CChar>).self)
            XCTAssertEqual(String(cString: seen()), expected, name)
        }
    }

    /// The example plugin (built by SwiftPM) loaded into two applications: two states, two counts.
    func testOneSharedObjectInTwoApplicationsKeepsTwoStates() throws {
        let first = try backgroundApp(), second = try backgroundApp()
        defer { first.shutdown(); second.shutdown() }
        let path = CBuild.products + "/libSessions.so"
        let one = try first.loadPlugin(path: path)
        let two = try second.loadPlugin(path: path)
        XCTAssertEqual(one.implementedMethods, [.didBecomeActive, .didEnterBackground, .performFetch])
        XCTAssertNotEqual(one.state, two.state)
        var counts: [String] = []
        let name = try NotificationName("org.applifecycle.sessions.started")
        for (label, handle) in [("first", first), ("second", second)] {
            handle.app.center.observe(name) { note in counts.append("\(label) \(note.userInfo["sessions"].map { "\($0)" } ?? "-")") }
        }
        try first.app.perform(.launch())
        try second.app.perform(.launch())
        try first.app.perform(.home)
        try first.app.perform(.foreground)
        XCTAssertEqual(counts, ["first 1", "second 1", "first 2"])
        // Its fetch completes later, from a timer, through its token.
        try first.app.perform(.home)
        XCTAssertEqual(first.app.state, .suspended)
        try first.app.perform(.backgroundFetch)
        XCTAssertEqual(first.app.state, .background)
        let deadline = MonotonicInstant.now + .seconds(5)
        while first.app.state != .suspended, MonotonicInstant.now < deadline { try first.loop.run(for: .milliseconds(5)) }
        XCTAssertEqual(first.app.state, .suspended)
    }

    func testTheDelegateFunctionsGetTheirOwnStateAndTokensComplete() throws {
        let handle = try backgroundApp()
        defer { handle.shutdown() }
        let (plugin, fx) = try load("com.example.table", named: "table", into: handle)
        XCTAssertEqual(plugin.implementedMethods, [.didBecomeActive, .performFetch, .didReceiveRemoteNotificationWithCompletion])
        try suspend(handle)
        XCTAssertEqual(fx.actives(plugin), 1)
        try handle.app.perform(.backgroundFetch)
        XCTAssertEqual(fx.firstStatus(plugin), lc_status(LC_OK))
        XCTAssertEqual(handle.app.state, .suspended, "completed at once")
        XCTAssertEqual(fx.setDelegateAgain(plugin), lc_status(LC_ERR_ILLEGAL_ACTION), "only from init")
        XCTAssertEqual(String(cString: lc_last_error_message()),
                       "set_delegate: plugin 'com.example.table' may set its delegate table only from init")
    }

    /// A token called again after 100 later requests, and called twice, completes nothing.
    func testLateAndRepeatedTokensCompleteNothing() throws {
        let handle = try backgroundApp()
        defer { handle.shutdown() }
        var trace: [String] = []
        handle.swiftTraceHandler = { if $0.kind != .action { trace.append($0.description) } }
        let (plugin, fx) = try load("com.example.late", named: "late", into: handle)
        try suspend(handle)
        try handle.app.perform(.backgroundFetch)
        let first = fx.first(plugin)
        XCTAssertNotEqual(first, 0)
        // Twice, right away: the engine still knows the request and reports the repeat.
        XCTAssertEqual(fx.complete(plugin, first, 0), lc_status(LC_ERR_NOT_FOUND))
        XCTAssertEqual(String(cString: lc_last_error_message()),
                       "complete: token \(first) (com.example.late application:performFetchWithCompletionHandler:) was already completed; the repeated call is ignored")
        XCTAssertEqual(trace.last, "error completion handler called again [com.example.late] (application:performFetchWithCompletionHandler:: the second call (newData) is ignored)")
        for _ in 0..<100 { try handle.app.perform(.backgroundFetch) }
        fx.mode(plugin, 1)
        try handle.app.perform(.remoteNotification(["n": 1]))
        let open = fx.last(plugin)
        XCTAssertEqual(handle.app.state, .background, "one request open")
        let before = trace.count
        XCTAssertEqual(fx.complete(plugin, first, 2), lc_status(LC_ERR_NOT_FOUND))
        XCTAssertTrue(String(cString: lc_last_error_message()).contains("token \(first)"))
        XCTAssertEqual(fx.complete(plugin, open + 1, 2), lc_status(LC_ERR_NOT_FOUND), "a token never issued")
        XCTAssertEqual(fx.complete(plugin, 0, 2), lc_status(LC_ERR_NOT_FOUND))
        XCTAssertEqual(handle.app.state, .background, "the open request is untouched")
        XCTAssertEqual(Array(trace[before...]), [])
        XCTAssertEqual(fx.complete(plugin, open, 1), lc_status(LC_OK))
        XCTAssertEqual(handle.app.state, .suspended)
        XCTAssertEqual(trace.suffix(2), [
            "completion application:didReceiveRemoteNotification:fetchCompletionHandler: [com.example.late] (noData)", "state suspended",
        ])
    }

    /// A token is the receiving plugin's: another plugin completing it gets an error, nothing happens.
    func testAnotherPluginsTokenCompletesNothing() throws {
        let handle = try backgroundApp()
        defer { handle.shutdown() }
        let (a, fxA) = try load("com.example.a", named: "a", into: handle)
        let (b, fxB) = try load("com.example.b", named: "b", into: handle)
        try suspend(handle)
        fxA.mode(a, 1)
        fxB.mode(b, 1)
        try handle.app.perform(.backgroundFetch)
        let tokenA = fxA.last(a)
        XCTAssertEqual(fxB.complete(b, tokenA, 0), lc_status(LC_ERR_NOT_FOUND))
        XCTAssertEqual(String(cString: lc_last_error_message()),
                       "complete: plugin 'com.example.b' completed token \(tokenA), which belongs to another plugin; ignored")
        XCTAssertEqual(fxB.complete(b, fxB.last(b), 0), lc_status(LC_OK))
        XCTAssertEqual(handle.app.state, .background, "a's request is still open")
        XCTAssertEqual(fxA.complete(a, tokenA, 0), lc_status(LC_OK))
        XCTAssertEqual(handle.app.state, .suspended)
    }

    /// lc_app_add_delegate's lc_delegate_t goes through the same bridge and token table.
    func testCDelegateStructUsesTheSameTokens() throws {
        let handle = try backgroundApp()
        defer { handle.shutdown() }
        final class Box { var complete: (@convention(c) (UnsafeMutableRawPointer?, lc_fetch_result) -> Void)?; var token: UnsafeMutableRawPointer? }
        let box = Box()
        var d = lc_delegate_t()
        d.struct_size = UInt32(MemoryLayout<lc_delegate_t>.size)
        d.ctx = Unmanaged.passUnretained(box).toOpaque()
        d.perform_fetch = { _, complete, token, ctx in
            let box = Unmanaged<Box>.fromOpaque(ctx!).takeUnretainedValue()
            box.complete = complete
            box.token = token
        }
        XCTAssertEqual(handle.addDelegate(id: "com.example.c", &d), lc_status(LC_OK))
        try suspend(handle)
        try handle.app.perform(.backgroundFetch)
        XCTAssertEqual(handle.app.state, .background)
        box.complete?(box.token, lc_fetch_result(LC_FETCH_NO_DATA))
        XCTAssertEqual(handle.app.state, .suspended)
        let entries = Completions.entryCount
        box.complete?(box.token, lc_fetch_result(LC_FETCH_NO_DATA))  // repeated: reported, nothing more
        XCTAssertTrue(String(cString: lc_last_error_message()).hasSuffix("was already completed; the repeated call is ignored"))
        XCTAssertEqual(Completions.entryCount, entries)
    }

    /// ABI 1.5: lc_delegate_t's handle_events_for_background_url_session, performed through the C action
    /// (LC_ACTION_URL_SESSION with url_session): its `complete(completion)` takes no result, holds the
    /// application in the background until called, and a repeat is reported as for a fetch.
    func testCDelegateStructURLSessionCompletionTakesNoResult() throws {
        let handle = try backgroundApp()
        defer { handle.shutdown() }
        final class Box {
            var complete: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?
            var token: UnsafeMutableRawPointer?
            var identifier = ""
        }
        let box = Box()
        var d = lc_delegate_t()
        d.struct_size = UInt32(MemoryLayout<lc_delegate_t>.size)
        d.ctx = Unmanaged.passUnretained(box).toOpaque()
        d.handle_events_for_background_url_session = { _, identifier, complete, token, ctx in
            let box = Unmanaged<Box>.fromOpaque(ctx!).takeUnretainedValue()
            box.identifier = String(cString: identifier!)
            box.complete = complete
            box.token = token
        }
        XCTAssertEqual(handle.addDelegate(id: "com.example.c", &d), lc_status(LC_OK))
        try suspend(handle)
        var action = lc_action_t()
        action.struct_size = UInt32(MemoryLayout<lc_action_t>.size)
        action.kind = lc_action_kind(LC_ACTION_URL_SESSION)
        XCTAssertEqual(handle.perform(&action), lc_status(LC_ERR_INVALID_ARGUMENT))
        XCTAssertEqual(String(cString: lc_last_error_message()), "lc_app_perform: a URL session's events need action->url_session")
        XCTAssertEqual(handle.app.state, .suspended, "refused: nothing changed")
        let status = "com.example.downloads".withCString { id in
            action.url_session = id
            return handle.perform(&action)
        }
        XCTAssertEqual(status, lc_status(LC_OK))
        XCTAssertEqual(box.identifier, "com.example.downloads")
        XCTAssertEqual(handle.app.state, .background)
        box.complete?(box.token)
        XCTAssertEqual(handle.app.state, .suspended)
        box.complete?(box.token)  // repeated: reported, nothing more
        XCTAssertTrue(String(cString: lc_last_error_message()).hasSuffix("was already completed; the repeated call is ignored"))
    }
}
