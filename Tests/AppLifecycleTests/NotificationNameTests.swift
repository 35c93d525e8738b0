import Dispatch
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

    func testCStringLookupFindsInternedSpellingsWithoutAString() throws {
        XCTAssertEqual("didEnterBackground".withCString { NotificationName(existingCString: $0) }, .didEnterBackground)
        XCTAssertEqual("UIApplicationDidEnterBackgroundNotification".withCString { NotificationName(existingCString: $0) },
                       .didEnterBackground)
        XCTAssertNil("com.example.never-interned".withCString { NotificationName(existingCString: $0) })
        XCTAssertNil("".withCString { NotificationName(existingCString: $0) })
        XCTAssertNil(String(repeating: "a.", count: 200).withCString { NotificationName(existingCString: $0) })
        let custom = try "com.example.c-string".withCString { try NotificationName(cString: $0) }
        XCTAssertEqual(custom, try NotificationName("com.example.c-string"))
        XCTAssertEqual(String(cString: custom.cString), "com.example.c-string")
        XCTAssertEqual(String(cString: NotificationName.ubiquityIdentityDidChange.cString), "ubiquityIdentityDidChange")
        let invalid: [CChar] = [0x61, 0x2e, -1, 0]  // "a.\xff"
        XCTAssertThrowsError(try invalid.withUnsafeBufferPointer { try NotificationName(cString: $0.baseAddress!) }) {
            XCTAssertEqual(($0 as! ApplicationError).code, .invalidNotificationName)
        }
    }

    func testInternedIDsAreRangeChecked() throws {
        XCTAssertNil(NotificationName(internedID: 0))
        XCTAssertEqual(NotificationName(internedID: 1), .didFinishLaunching)
        XCTAssertEqual(NotificationName(internedID: 22), .ubiquityIdentityDidChange)
        let custom = try NotificationName("com.example.range-check")
        XCTAssertEqual(NotificationName(internedID: custom.id), custom)
        XCTAssertNil(NotificationName(internedID: UInt32.max))
        XCTAssertNil(NameRegistry.shared.cString(for: UInt32.max))
    }

    /// Many names interned from several threads while others look names up: every name keeps one id,
    /// the table grows under the readers, and every id maps back to its spelling.
    func testConcurrentInterningAndGrowth() throws {
        let threads = 4, perThread = 3_000
        nonisolated(unsafe) let ids = UnsafeMutablePointer<UInt32>.allocate(capacity: threads * perThread)
        defer { ids.deallocate() }
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<perThread {
                // Every thread interns the same names, in a different order.
                let k = (i * 7 + t * 1_001) % perThread
                let name = try! NotificationName("com.example.grow.\(k)")
                XCTAssertEqual(NotificationName(existing: "didBecomeActive"), .didBecomeActive)
                ids[t * perThread + k] = name.id
            }
        }
        for k in 0..<perThread {
            let id = ids[k]
            for t in 1..<threads { XCTAssertEqual(ids[t * perThread + k], id) }
            XCTAssertEqual(NotificationName(internedID: id)?.rawValue, "com.example.grow.\(k)")
        }
        XCTAssertEqual(Set((0..<perThread).map { ids[$0] }).count, perThread)
    }

    /// Every prefix of a long name is its own name: the word-wise hash sees every byte (short names,
    /// exact multiples of 8, the overlapping last word), and the longest accepted name is 255 bytes.
    func testPrefixesOfEveryLengthAreDistinctNames() throws {
        let long = "x." + String(repeating: "abcdefghij", count: 26)  // 262 bytes
        var ids: [UInt32] = []
        for length in 2...255 {
            let spelling = String(long.prefix(length))
            let name = try NotificationName(spelling)
            XCTAssertEqual(spelling.withCString { NotificationName(existingCString: $0) }, name, "length \(length)")
            XCTAssertEqual(name.rawValue, spelling)
            ids.append(name.id)
        }
        XCTAssertEqual(Set(ids).count, ids.count)
        XCTAssertThrowsError(try NotificationName(String(long.prefix(256)))) {
            XCTAssertEqual(($0 as! ApplicationError).code, .invalidNotificationName)
        }
        XCTAssertNil(String(long.prefix(256)).withCString { NotificationName(existingCString: $0) })
    }
}
