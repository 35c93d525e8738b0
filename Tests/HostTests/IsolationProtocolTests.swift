import Foundation
import TestSupport
import XCTest

/// An isolated plugin's process is hostile input: a plugin writes crafted frames into the runner's
/// socket (descriptor 3) or lies in its progress page. Each is cut off (SIGKILL) with the rule it broke
/// named, and the host goes on.
final class IsolationProtocolTests: XCTestCase {
    /// A frame: header (size, kind, state 0, reserved 0, word) then `payload`.
    static func frame(kind: UInt16, word: UInt64 = 0, payload: [UInt8] = [], size: UInt32? = nil, reserved: UInt8 = 0) -> [UInt8] {
        var bytes: [UInt8] = []
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        append(size ?? UInt32(16 + payload.count))
        append(kind)
        bytes.append(0)
        bytes.append(reserved)
        append(word)
        return bytes + payload
    }

    static func le32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
    static func le64(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }

    /// The archive encoding of `{"d": {"d": … {"leaf": 1}}}`, `levels` dictionaries deep below the top.
    static func chainEntries(_ levels: Int) -> [UInt8] {
        var entries = le64(4) + Array("leaf".utf8) + [0x69] + le64(8) + le64(1)
        for _ in 0..<levels { entries = le64(1) + Array("d".utf8) + [0x6D] + le64(UInt64(entries.count)) + entries }
        return entries
    }

    /// Runs a plugin that writes `bytes` to the socket from its didBecomeActive observer (and stays in it).
    func cutOff(_ bytes: [UInt8], name: String) throws -> IsolationTests.Run.Record? {
        let array = bytes.map { String($0) }.joined(separator: ", ")
        let liar = try IsolationFixtures.build(IsolationFixtures.observer(id: "com.example.\(name)", name: "didBecomeActive", body: """
            static const unsigned char bytes[] = {\(array)};
            if (write(3, bytes, sizeof bytes) != (ssize_t)sizeof bytes) abort();
            pause();
            """), named: name)
        let result = try IsolationTests.run(["--plugin", liar, "--isolate", "--plugin", IsolationTests.example("Echo")], scenario: "home-and-return")
        XCTAssertEqual(result.status, 7, result.output)
        XCTAssertEqual(result.printed["echo"]?.count, 9, "Echo, isolated beside it, got every notification")
        XCTAssertEqual(result.failures().count, 1, result.output)
        return result.failures().first
    }

    func testEveryBrokenRuleCutsTheProcessOffNamingTheRule() throws {
        let cases: [(String, [UInt8], String)] = [
            ("kind", Self.frame(kind: 0x99), "a frame of unknown kind 0x99 (16 bytes)"),
            ("direction", Self.frame(kind: 0x04), "a notify frame, which only the host sends"),
            ("reserved", Self.frame(kind: 0x85, word: 1, reserved: 1), "the removeObserver frame's reserved header bytes are not 0"),
            ("small", Self.frame(kind: 0x85, size: 8), "a frame announces 8 bytes (frames are 16 to 68157440 bytes)"),
            ("huge", Self.frame(kind: 0x85, size: 68_157_441), "a frame announces 68157441 bytes (frames are 16 to 68157440 bytes)"),
            ("token", Self.frame(kind: 0x85, word: 77), "remove_observer names token 77, which it never registered"),
            ("key", Self.frame(kind: 0x8D, word: 999, payload: Self.le32(0) + [0]), "a completion for key 999, never handed out"),
            ("long", Self.frame(kind: 0x87, payload: Self.le32(1) + Self.le32(100_000)), "the log frame's message is 100000 bytes (at most 65536)"),
            ("utf8", Self.frame(kind: 0x87, payload: Self.le32(1) + Self.le32(2) + [0xFF, 0xFE]), "the log frame's message is not valid UTF-8"),
            ("short", Self.frame(kind: 0x84, word: 5), "the observe frame ends inside its name (0 bytes left, 4 needed)"),
            ("trailing", Self.frame(kind: 0x85, word: 1, payload: [1, 2, 3]), "the removeObserver frame has 3 bytes after its last field"),
            ("result", Self.frame(kind: 0x8C, word: 3, payload: [1] + Self.le32(UInt32.max) + [0]), "a result for call 3, which is not waiting"),
            ("flag", Self.frame(kind: 0x8C, word: 3, payload: [1] + Self.le32(UInt32.max) + [2]), "the result frame's encoding flag is 2"),
            ("query", Self.frame(kind: 0x91, word: 1, payload: [0]), "a query of kind 0"),
            ("queryshort", Self.frame(kind: 0x91, word: 1), "the query frame ends inside its query (0 bytes left, 1 needed)"),
            ("name", Self.frame(kind: 0x86, payload: Self.le32(500) + [UInt8](repeating: 0, count: 8) + Self.le32(UInt32.max)),
             "name id 500 was never sent with its text"),
            ("dict", Self.frame(kind: 0x86, payload: Self.le32(2) + [UInt8](repeating: 0, count: 8) + Self.le32(3) + [0x01, 0x02, 0x03]),
             "the post frame's userInfo is not a valid dictionary: malformed payload: truncated key length at byte 0"),
            // The dictionary limits: its length before its entries are read, then its depth.
            ("large", Self.frame(kind: 0x86, payload: Self.le32(2) + [UInt8](repeating: 0, count: 8) + Self.le32(67_108_845)),
             "the post frame's userInfo is 67108845 bytes (at most 67108844)"),
            ("deep", Self.frame(kind: 0x86, payload: Self.le32(2) + [UInt8](repeating: 0, count: 8)
                                    + Self.le32(UInt32(Self.chainEntries(65).count)) + Self.chainEntries(65)),
             "the post frame's userInfo is not a valid dictionary: malformed payload: lists and dictionaries nest deeper than 64 levels at byte \(64 * 18 + 9)"),
        ]
        for (name, bytes, rule) in cases {
            let failure = try XCTUnwrap(cutOff(bytes, name: "liar-\(name)"), name)
            XCTAssertEqual(failure.name, "protocol violation", name)
            XCTAssertEqual(failure.detail, "cut off (SIGKILL): \(rule); while handling didBecomeActive; not restarted (policy never)", name)
        }
    }

    func testAProgressPageClaimingMoreThanWasSentIsCaught() throws {
        let liar = try IsolationFixtures.build(IsolationFixtures.observer(id: "com.example.progress", name: "didBecomeActive", body: """
            volatile unsigned long *page = progress_page();
            if (!page) abort();
            page[1] = 1ul << 40;
            pause();
            """, extra: IsolationFixtures.progressPageSource), named: "progress")
        let result = try IsolationTests.run(["--plugin", liar, "--isolate", "--isolate-budget", "0.5"], scenario: "launch-foreground")
        let failure = try XCTUnwrap(result.failures().first, result.output)
        XCTAssertEqual(failure.name, "protocol violation")
        XCTAssertEqual(failure.detail, "cut off (SIGKILL): its progress page claims 1099511627776 frames run of 3 sent; "
                       + "while handling didBecomeActive; not restarted (policy never)")
    }
}
