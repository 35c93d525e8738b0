import Foundation
import TestSupport
import XCTest

/// Seed 002's older application methods through a real C plugin exporting them (the ABI 1.0 way,
/// found by symbol and called through libffi), in the host's process and isolated (issue 20,
/// docs/lifecycle.md decision 54): the same lines and the same trace in both modes.
final class OlderDelegateMethodsTests: XCTestCase {
    static let source = #"""
    #define LC_DECLARE_DELEGATE_FUNCTIONS
    #include "lifecycle.h"
    #include <stdio.h>
    static const lc_host_api_t *host;
    void applicationDidFinishLaunching(lc_app *app) { (void)app; printf("old: applicationDidFinishLaunching\n"); fflush(stdout); }
    bool application_handleOpenURL(lc_app *app, const char *url) { (void)app; printf("old: handleOpenURL %s\n", url); fflush(stdout); return true; }
    void application_didReceiveLocalNotification(lc_app *app, const lc_dict *info) {
        (void)app; printf("old: local %s\n", host->dict->json(info)); fflush(stdout);
    }
    void application_didRegisterForRemoteNotificationsWithDeviceToken(lc_app *app, const char *token) {
        (void)app; printf("old: token %s\n", token); fflush(stdout);
    }
    void application_didFailToRegisterForRemoteNotificationsWithError(lc_app *app, const char *error) {
        (void)app; printf("old: error %s\n", error); fflush(stdout);
    }
    static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **s) { (void)plugin, (void)s; host = api; return LC_OK; }
    """# + IsolationFixtures.descriptorSource("com.example.older")

    func testTheOlderMethodsInBothModes() throws {
        let plugin = try IsolationFixtures.build(Self.source, named: "older")
        let script = """
        launch
        open-url app://doc/1
        local-notification k=1
        remote-registration token=0a1b
        remote-registration error=offline
        home
        local-notification k=2
        local-notification open k=3
        terminate
        """
        let (inProcess, _, lines) = try IsolationTests.runBothModes(["--plugin", plugin], script: script, printed: "old")
        XCTAssertEqual(lines, [
            "old: applicationDidFinishLaunching",
            "old: handleOpenURL app://doc/1",
            #"old: local {"k":1}"#,
            "old: token 0a1b",
            "old: error offline",
            #"old: local {"k":3}"#,
        ], inProcess.output)
        let delegates = inProcess.records.filter { $0.kind == "delegate" }.map { "\($0.name) \($0.state)" }
        XCTAssertEqual(delegates, [
            "applicationDidFinishLaunching: inactive", "application:handleOpenURL: active", "application:didReceiveLocalNotification: active",
            "application:didRegisterForRemoteNotificationsWithDeviceToken: active", "application:didFailToRegisterForRemoteNotificationsWithError: active",
            "application:didReceiveLocalNotification: inactive",
        ])
    }
}
