import AppLifecycle
import Foundation
import HostInput
import TestSupport
import XCTest

/// The control protocol without a socket (`ControlFraming`, `ControlRequest`): what the server and the
/// client do with bytes, exactly as docs/host.md states it. (ControlSocketTests runs it on real sockets.)
final class HostInputTests: XCTestCase {
    /// All the frames of `bytes`, as the server cuts them.
    private func frames(_ bytes: [UInt8], atEnd: Bool) -> (frames: [ControlFraming.Frame], end: ControlFraming.DrainEnd) {
        var frames: [ControlFraming.Frame] = []
        let end = ControlFraming.drain(bytes, atEnd: atEnd, while: { true }) { frames.append($0) }
        return (frames, end)
    }

    func testLinesAreCutAsTheProtocolSays() {
        let stream = Array("status\r\n \t\n\n".utf8) + [0xFF, 0xFE, 10] + Array("send home\npartial".utf8)
        let open = frames(stream, atEnd: false)
        XCTAssertEqual(open.frames, [.request("status"), .blank, .blank, .notUTF8, .request("send home")])
        XCTAssertEqual(open.end, .waiting(consumed: stream.count - "partial".utf8.count))
        // At the end of the stream the last line needs no line feed.
        let closed = frames(stream, atEnd: true)
        XCTAssertEqual(closed.frames.last, .request("partial"))
        XCTAssertEqual(closed.end, .waiting(consumed: stream.count))
        // Only a CR right before the line feed is dropped.
        XCTAssertEqual(frames(Array("a\rb\r\r\n".utf8), atEnd: false).frames, [.request("a\rb\r")])
    }

    func testTheLongestRequestIs65536BytesBeforeItsLineFeed() {
        let longest = [UInt8](repeating: 120, count: ControlFraming.maxRequestLength)
        XCTAssertEqual(frames(longest + [10], atEnd: false).frames, [.request(String(repeating: "x", count: 65536))])
        XCTAssertEqual(frames(longest, atEnd: false).end, .waiting(consumed: 0), "not over the limit yet: wait")
        XCTAssertEqual(frames(longest + [120], atEnd: false).end, .tooLong, "one byte more without a line feed")
        XCTAssertEqual(frames(longest + [13, 10], atEnd: false).end, .tooLong, "the CR counts until the line feed")
        // A long line after short ones: those are answered first.
        let mixed = frames(Array("help\n".utf8) + longest + [120, 10], atEnd: false)
        XCTAssertEqual(mixed.frames, [.request("help")])
        XCTAssertEqual(mixed.end, .tooLong)
    }

    /// A line arriving a byte at a time (a slow or hostile client) is searched for its line feed once
    /// in all, not once per byte: the server keeps how much of the partial line it has looked at
    /// (`known`). Before, a 65,000-byte line sent byte by byte cost 2.1 billion byte comparisons (35 s
    /// in the fuzz build, found as the fuzz target's slowest input).
    func testALineArrivingAByteAtATimeIsSearchedOnce() {
        let line = [UInt8](repeating: 120, count: 65_000) + [10]
        var input: [UInt8] = []
        var known = 0
        var frames: [ControlFraming.Frame] = []
        let started = ContinuousClock.now
        for byte in line {
            input.append(byte)
            switch ControlFraming.drain(input, known: known, atEnd: false, while: { true }, answer: { frames.append($0) }) {
            case .waiting(let consumed):
                input.removeFirst(consumed)
                known = input.count
            case .tooLong, .stopped(_):
                return XCTFail("the line is within the limit")
            }
        }
        XCTAssertEqual(frames, [.request(String(repeating: "x", count: 65_000))])
        XCTAssertEqual(input, [])
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(5), "65,001 arrivals, each byte looked at once")
        // What is known to hold no line feed is not searched again; what follows it is.
        XCTAssertEqual(ControlFraming.scan(Array("ab\ncd\n".utf8), from: 0, known: 3, atEnd: false), .frame(.request("ab\ncd"), next: 6))
        XCTAssertEqual(ControlFraming.scan(Array("abc".utf8), from: 0, known: 99, atEnd: false), .needMore)
    }

    func testAResponseIsAlwaysExactlyOneLine() {
        XCTAssertEqual(ControlFraming.responseBytes("a\nb\r\nc"), Array("a b  c\n".utf8))
        XCTAssertEqual(ControlFraming.response(to: .blank) { _ in "unused" }, nil)
        XCTAssertEqual(ControlFraming.response(to: .notUTF8) { _ in "unused" }, Array("error: request is not UTF-8\n".utf8))
        XCTAssertEqual(ControlFraming.response(to: .request("x")) { "got \($0)" }, Array("got x\n".utf8))
    }

    func testTheClientReadsTheFirstLineAndNoMoreThan16MiB() {
        var reader = ControlFraming.ResponseReader()
        XCTAssertEqual(reader.append(Array("ok act".utf8)[...]), .needMore)
        XCTAssertEqual(reader.append(Array("ive\nnext\n".utf8)[...]), .line("ok active"))
        var flooded = ControlFraming.ResponseReader()
        let mebibyte = [UInt8](repeating: 65, count: 1 << 20)
        for _ in 0..<16 { XCTAssertEqual(flooded.append(mebibyte[...]), .needMore) }
        XCTAssertEqual(flooded.append([65][...]), .tooLong)
        var exact = ControlFraming.ResponseReader()
        for _ in 0..<16 { _ = exact.append(mebibyte[...]) }
        XCTAssertEqual(exact.append([10][...]), .line(String(repeating: "A", count: 16 << 20)))
        var invalid = ControlFraming.ResponseReader()
        XCTAssertEqual(invalid.append([0x6F, 0x6B, 0x20, 0xFF, 10][...]), .line("ok \u{FFFD}"))
    }

    func testRequestsParseAndAnswerWithTheirReason() {
        func answer(_ line: String) -> String {
            ControlRequest(line: line).response(status: { "{}" }, perform: { "performed \($0)" }, state: { .active })
        }
        XCTAssertEqual(answer("  status\t"), "{}")
        XCTAssertEqual(answer("help"), "ok requests: status | send ACTION [ARGS...] | help")
        XCTAssertEqual(answer("send home"), "error: performed home")
        XCTAssertEqual(ControlRequest(line: "send home").response(status: { "" }, perform: { _ in nil }, state: { .background }),
                       "ok background")
        XCTAssertEqual(answer("send"), "error: 'send' needs an action")
        XCTAssertEqual(answer("send   # only a comment"), "error: 'send' needs an action")
        XCTAssertEqual(answer("send lanch"), "error: unknown action 'lanch' (did you mean 'launch'?); 'help' lists the actions")
        XCTAssertEqual(answer("send wait 1e300s"), "error: bad duration '1e300s': out of range: at most 9223372036 s (about 292 years)")
        XCTAssertEqual(answer("sendhome"), "error: unknown request 'sendhome' (status, send ACTION, help)")
    }

    /// A 64 KiB unknown verb is refused without a suggestion search over its whole length: it cost the
    /// host's loop 0.27 s a request (release build) while every distance was a full table.
    func testAHugeUnknownVerbIsRefusedAtOnce() {
        let verb = String(repeating: "y", count: ControlFraming.maxRequestLength - 5)
        let started = ContinuousClock.now
        for _ in 0..<10 {
            XCTAssertEqual(ControlRequest(line: "send " + verb).response(status: { "" }, perform: { _ in nil }, state: { .active }),
                           "error: unknown action '\(verb)'; 'help' lists the actions")
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(3), "ten 64 KiB requests (each a table of 22 × 15 × 65531 cells before)")
    }

    /// A scenario saved with a UTF-8 byte order mark (as Notepad writes one) reads as it would without
    /// it, lines numbered as before; a BOM anywhere else is text like any other.
    func testAByteOrderMarkAtTheStartOfAScenarioIsSkipped() throws {
        let lines = try ScenarioParser.parse(text: "\u{FEFF}launch\r\n# a comment\r\nterminate\r\n", file: "bom.txt")
        XCTAssertEqual(lines.map(\.text), ["launch", "terminate"])
        XCTAssertEqual(lines.map(\.line), [1, 3])
        XCTAssertThrowsError(try ScenarioParser.parse(text: "launch\n\u{FEFF}terminate\n", file: "mid.txt")) { error in
            XCTAssertEqual((error as? ScenarioFileError)?.location, "mid.txt:2")
            XCTAssertEqual((error as? ScenarioFileError)?.message,
                           "unknown action '\u{FEFF}terminate' (did you mean 'terminate'?); 'help' lists the actions")
        }
        // The host, reading such a file: the run goes to its end.
        let folder = try CBuild.temporaryFolder("bom")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/bom.txt"
        try Data([0xEF, 0xBB, 0xBF] + Array("launch\nhome\nterminate\n".utf8)).write(to: URL(fileURLWithPath: file))
        let result = try CBuild.run(CBuild.products + "/lifecycle-host", ["run", "--trace", "json", "--no-socket", "--no-signals", "--no-pressure",
                                                                          "--no-clock", "--script", file])
        XCTAssertEqual(result.status, 0, result.output)
        let actions = result.output.split(separator: "\n").filter { $0.contains("\"kind\":\"action\"") }
        XCTAssertEqual(actions.map { $0.contains("\"name\":\"launch\"") }, [true, false, false], result.output)
    }

    /// `lifecycle-host send WORDS…` quotes each word so that the host's tokenizer reads the same words.
    func testQuotedWordsReadBackAsTheyWere() throws {
        let words = ["post", "com.example.x", "title=two words", "", "say=\"hi\"", "path=C:\\dir", "tag=#1", "é", "a\tb",
                     // Combining marks first: after the opening quote or the space they are still separate
                     // (the tokenizer reads scalars; as characters `"` + U+031E is one, and no quote).
                     "\u{031E}#", "\u{301}a b", "\u{301}x",
                     // A word that is nothing but a combining mark, after a space (the CI fuzz run's finding).
                     "\u{07EE}", "co\u{16}nnect"]
        XCTAssertEqual(try ScenarioParser.tokenize(words.map(ScenarioParser.quote).joined(separator: " ")), words)
        XCTAssertEqual(try ScenarioParser.tokenize("k=\"\u{301}v\" \u{301}w"), ["k=\u{301}v", "\u{301}w"])
    }
}
