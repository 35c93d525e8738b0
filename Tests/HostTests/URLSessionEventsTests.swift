import Foundation
import TestSupport
import XCTest

/// seed 002's `application:handleEventsForBackgroundURLSession:completionHandler:` through real C
/// plugins (docs/lifecycle.md, decision 55): one exporting the ABI 1.0 function (a `void (*)(void)`
/// completion, a libffi closure), one registering the 1.1 table (`lc_complete_void_fn` and a token),
/// in the host's process and isolated: the same lines and the same trace.
final class URLSessionEventsTests: XCTestCase {
    static let exported = #"""
    #define LC_DECLARE_DELEGATE_FUNCTIONS
    #include "lifecycle.h"
    #include <stdio.h>
    void application_handleEventsForBackgroundURLSession_completionHandler(lc_app *app, const char *identifier, void (*completion)(void)) {
        (void)app;
        printf("url: exported %s\n", identifier); fflush(stdout);
        completion();
        completion(); // repeated: reported and ignored
    }
    static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **s) { (void)api, (void)plugin, (void)s; return LC_OK; }
    """# + IsolationFixtures.descriptorSource("com.example.urlold")

    static let table = #"""
    #include "lifecycle.h"
    #include <stdio.h>
    static void events(lc_plugin *plugin, void *state, const char *identifier, lc_complete_void_fn complete, lc_completion_token token) {
        (void)state;
        lc_status first = complete(plugin, token);
        lc_status again = complete(plugin, token);
        printf("url: table %s -> %d, again -> %d\n", identifier, (int)first, (int)again); fflush(stdout);
    }
    static const lc_plugin_delegate_t delegate = {
        .struct_size = sizeof(lc_plugin_delegate_t), .handle_events_for_background_url_session = events,
    };
    static lc_status fixture_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
        (void)state; return host->set_delegate(plugin, &delegate);
    }
    """# + IsolationFixtures.descriptorSource("com.example.urlnew")

    func testBothCFormsInBothModes() throws {
        let script = """
        url-session com.example.downloads
        expect-state suspended
        url-session com.example.uploads
        expect-state suspended
        foreground
        terminate
        """
        // One plugin a run: isolated, two plugins' void calls are not waited for one by one (decision
        // 39), so their completions would interleave differently from the host's process.
        for (source, name, id, printed) in [
            (Self.exported, "urlold", "com.example.urlold", ["url: exported com.example.downloads", "url: exported com.example.uploads"]),
            // LC_OK (0), then LC_ERR_NOT_FOUND (-8) for the repeat.
            (Self.table, "urlnew", "com.example.urlnew", ["url: table com.example.downloads -> 0, again -> -8",
                                                          "url: table com.example.uploads -> 0, again -> -8"]),
        ] {
            let plugin = try IsolationFixtures.build(source, named: name)
            let (inProcess, _, lines) = try IsolationTests.runBothModes(["--plugin", plugin], script: script, printed: "url")
            XCTAssertEqual(lines, printed, inProcess.output)
            // Each wake: the method in the background, its completion once ("called"), the repeat reported;
            // then the application suspends (expect-state).
            let records = inProcess.records.filter { $0.name.contains("URLSession") || $0.kind == "error" }
            let wake = [
                "delegate application:handleEventsForBackgroundURLSession:completionHandler: \(id) background",
                "completion application:handleEventsForBackgroundURLSession:completionHandler: \(id) background called",
                "error completion handler called again \(id) background",
            ]
            XCTAssertEqual(records.map { "\($0.kind) \($0.name) \($0.plugin) \($0.state)" + ($0.kind == "completion" ? " \($0.detail)" : "") },
                           wake + wake, inProcess.output)
        }
    }
}
