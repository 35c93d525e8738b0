import XCTest
@testable import AppLifecycle

final class NotificationNameTests: XCTestCase {
    func testStandardNamesAndAliasesIntern() throws {
        XCTAssertEqual(try NotificationName("didEnterBackground"), .didEnterBackground)
        XCTAssertEqual(try NotificationName("UIApplicationDidEnterBackgroundNotification"), .didEnterBackground)
        XCTAssertEqual(NotificationName.didEnterBackground.rawValue, "didEnterBackground")
        XCTAssertEqual(NotificationName.protectedDataWillBecomeUnavailable.uikitName,
                       "UIApplicationProtectedDataWillBecomeUnavailable")
        XCTAssertEqual(NotificationName.significantTimeChange.coalescingKind, "time")
        XCTAssertNil(NotificationName.didBecomeActive.coalescingKind)
    }

    func testCustomNamesInternOnceAndMisspellingsAreRefused() throws {
        let a = try NotificationName("com.example.sync")
        let b = try NotificationName("com.example.sync")
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.rawValue, "com.example.sync")
        XCTAssertFalse(a.isStandard)
        XCTAssertThrowsError(try NotificationName("didEnterBackgrond")) { error in
            let e = error as! ApplicationError
            XCTAssertEqual(e.code, .unknownNotificationName)
            XCTAssertEqual(e.message, "unknown notification name 'didEnterBackgrond' (did you mean 'didEnterBackground'?); custom names must be reverse-DNS style, e.g. 'com.example.didEnterBackgrond'")
        }
        XCTAssertThrowsError(try NotificationName("")) { XCTAssertEqual(($0 as! ApplicationError).message, "notification name is empty") }
        XCTAssertThrowsError(try NotificationName("com.example.has space")) {
            XCTAssertEqual(($0 as! ApplicationError).code, .invalidNotificationName)
        }
    }
}
