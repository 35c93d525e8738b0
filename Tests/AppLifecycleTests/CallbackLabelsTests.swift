import XCTest
@testable import AppLifecycle

/// The standard delegate methods' labels are fixed indices (`DelegateMethod(selector:standard:)`): the
/// same label as interning the selector would give, the same text back, and other labels after them.
final class CallbackLabelsTests: XCTestCase {
    func testStandardMethodsHaveTheirSelectorsFixedIndex() {
        let methods: [DelegateMethod] = [
            .willFinishLaunching, .didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground,
            .willEnterForeground, .willTerminate, .didReceiveMemoryWarning, .significantTimeChange,
            .protectedDataWillBecomeUnavailable, .protectedDataDidBecomeAvailable, .openURL, .openURLWithOptions, .performFetch,
            .didReceiveRemoteNotificationWithCompletion, .didReceiveRemoteNotification, .shouldSaveApplicationState,
            .shouldRestoreApplicationState, .willEncodeRestorableState, .didDecodeRestorableState, .configurationForConnecting,
            .didDiscardSceneSessions, .willContinueUserActivity, .continueUserActivity, .didFailToContinueUserActivity,
            .didUpdateUserActivity, .applicationDidFinishLaunching, .handleOpenURL, .didReceiveLocalNotification,
            .didRegisterForRemoteNotifications, .didFailToRegisterForRemoteNotifications, .handleEventsForBackgroundURLSession,
        ] + DelegateMethod.sceneMethods
        XCTAssertEqual(methods.count, CallbackLabels.standard.count)
        XCTAssertEqual(Set(methods.map(\.label)).count, methods.count, "every standard label is its own")
        for method in methods {
            XCTAssertEqual(CallbackLabels.standard[Int(method.label)], method.selector)
            XCTAssertEqual(CallbackLabels.intern(method.selector), method.label, method.selector)
            XCTAssertEqual(CallbackLabels.text(method.label), method.selector)
            XCTAssertEqual(DelegateMethod(selector: method.selector).label, method.label, method.selector)
            XCTAssertEqual(DelegateMethod(selector: method.selector), method)
        }
    }

    func testOtherLabelsComeAfterTheStandardOnesAndStay() {
        let made = DelegateMethod(selector: "application:madeUpByAnEmbedder:\(#line):")
        XCTAssertGreaterThanOrEqual(Int(made.label), CallbackLabels.standard.count)
        XCTAssertEqual(CallbackLabels.text(made.label), made.selector)
        XCTAssertEqual(CallbackLabels.intern(made.selector), made.label)
        XCTAssertEqual(CallbackLabels.text(UInt32.max), "")
    }
}
