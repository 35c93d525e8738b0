import XCTest

@testable import AppLifecycle

/// The bounded edit distance behind "did you mean …?" (`editDistance(_:_:atMost:)`).
final class EditDistanceTests: XCTestCase {
    /// The plain full-table distance, to compare with.
    private func fullDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// Every pair of words of up to 5 letters from {a, b, c}, and every limit from 0 to 4: the bounded
    /// distance is the full one when that is within the limit, else nil.
    func testAgreesWithTheFullTableWithinTheLimit() {
        var words: [[UInt8]] = [[]]
        var layer: [[UInt8]] = [[]]
        for _ in 1...5 {
            layer = layer.flatMap { word in [97, 98, 99].map { word + [$0] } }
            words += layer
        }
        var compared = 0
        for a in words where a.count <= 4 {
            for b in words {
                let full = fullDistance(a, b)
                for limit in 0...4 {
                    XCTAssertEqual(editDistance(a, b, atMost: limit), full <= limit ? full : nil, "\(a) \(b) limit \(limit)")
                    compared += 1
                }
            }
        }
        XCTAssertEqual(compared, 121 * 364 * 5)
    }

    func testExamples() {
        XCTAssertEqual(editDistance(Array("lanch".utf8), Array("launch".utf8), atMost: 3), 1)
        XCTAssertEqual(editDistance(Array("kitten".utf8), Array("sitting".utf8), atMost: 3), 3)
        XCTAssertNil(editDistance(Array("kitten".utf8), Array("sitting".utf8), atMost: 2))
        XCTAssertEqual(editDistance([], Array("abc".utf8), atMost: 3), 3)
        XCTAssertNil(editDistance([], Array("abcd".utf8), atMost: 3))
        XCTAssertNil(editDistance(Array("a".utf8), Array("b".utf8), atMost: -1))
        // A hostile length costs nothing: the lengths alone rule it out.
        XCTAssertNil(editDistance([UInt8](repeating: 120, count: 1 << 20), Array("launch".utf8), atMost: 3))
    }

    /// The suggestion for a mistyped standard name still comes (case-insensitive, through the bound).
    func testNotificationNameSuggestionsStillCome() {
        XCTAssertThrowsError(try NotificationName("didbecomeactiv")) { error in
            XCTAssertEqual((error as? ApplicationError)?.message,
                           "unknown notification name 'didbecomeactiv' (did you mean 'didBecomeActive'?); "
                               + "custom names must be reverse-DNS style, e.g. 'com.example.didbecomeactiv'")
        }
    }
}
