import Foundation
import TestSupport
import XCTest

@testable import lifecycle_host

/// Every input of the built host bounded (issue 10, part 4): numbers from the socket, the prompt and
/// scenario files checked before they are converted, over-long prompt lines, CR LF scenario files,
/// `send … --socket`.
final class InputBoundsTests: XCTestCase {
    let host = HostEndToEndTests.host

    /// `send wait 1e300s` (or `1e10s`) killed a running host with SIGILL; so did the same line at the
    /// prompt. Now each is refused with the limit named, and the host goes on serving.
    func testHugeWaitsFromTheSocketAndThePromptAreRefusedAndTheHostKeepsRunning() throws {
        let folder = try CBuild.temporaryFolder("bounds")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (process, socket) = try startHostWithSocket(in: folder, ["--interactive"])
        defer { _ = process.wait(timeout: 1) }

        let limit = "out of range: at most 9223372036 s (about 292 years)"
        for text in ["1e300s", "1e10s", "1e300"] {
            let reply = try CBuild.run(host, ["send", "--socket", socket, "wait", text])
            XCTAssertEqual(reply.status, 1, text)
            XCTAssertEqual(reply.output, "error: bad duration '\(text)': \(limit)\n", text)
        }
        process.send("wait 1e10s")
        XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"error\",\"name\":\"wait 1e10s\"") && $0.contains(limit) })
        // A line longer than 64 KiB at the prompt is refused, not buffered without end.
        process.send(String(repeating: "x", count: 200_000))
        XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"error\",\"name\":\"stdin\"")
            && $0.contains("line too long (at most 65536 bytes); ignored") })

        // Still serving: the socket and the prompt.
        let status = try CBuild.run(host, ["status", "--socket", socket])
        XCTAssertEqual(status.status, 0, status.output)
        XCTAssertTrue(status.output.hasPrefix("{\"state\":\"active\""), status.output)
        process.send("home")
        XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"state\",\"name\":\"suspended\"") })
        XCTAssertEqual(try CBuild.run(host, ["send", "--socket", socket, "foreground"]).output, "ok active\n")
        process.closeInput()
        XCTAssertEqual(process.wait(), 0, "the host ended normally, not by a signal")
        XCTAssertTrue(process.standardError.contains("error: bad duration '1e10s': \(limit)"), process.standardError)
        XCTAssertTrue(process.standardError.contains("error: line too long (at most 65536 bytes); ignored"), process.standardError)
    }

    /// `--budget launch=1e10` trapped before the host started; now it is a usage error (status 64,
    /// ArgumentParser's) naming the limit and the text.
    func testHugeNumbersOnTheCommandLineAreUsageErrors() throws {
        let budget = try CBuild.run(host, ["run", "--no-socket", "--budget", "launch=1e10"])
        XCTAssertEqual(budget.status, 64)
        XCTAssertTrue(budget.output.hasPrefix("--stderr--\nError: --budget launch=1e10: out of range: at most 9223372036 s (about 292 years)\n"),
                      budget.output)
        let delay = try CBuild.run(host, ["run", "--no-socket", "--pressure-delay", "1e300"])
        XCTAssertEqual(delay.status, 64)
        XCTAssertTrue(delay.output.hasPrefix("--stderr--\nError: --pressure-delay 1e300: out of range: at most 86400 s\n"), delay.output)
    }

    /// A scenario file saved with CR LF line ends was read as one line.
    func testACRLFScenarioIsReadLineByLine() throws {
        let folder = try CBuild.temporaryFolder("crlf")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = folder + "/windows.scenario"
        let text = "# saved on Windows\r\nlaunch\r\nhome\r\nexpect-state suspended\r\nwait 10ms\r\nforeground\r\nexpect-state active\r\nterminate\r\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: script))
        let result = try CBuild.run(host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--script", script])
        XCTAssertEqual(result.status, 0, result.output)
        let actions = result.output.split(separator: "\n").filter { $0.contains("\"kind\":\"action\"") }
        XCTAssertEqual(actions.count, 4, "launch, home, foreground, terminate: \(actions)")
        XCTAssertFalse(result.output.contains("\r"), "no CR reaches an action or the trace")

        // Errors name the right line of a CR LF file.
        let bad = folder + "/bad.scenario"
        try Data("launch\r\nhome\r\nhme\r\n".utf8).write(to: URL(fileURLWithPath: bad))
        let failed = try CBuild.run(host, ["run", "--no-socket", "--no-pressure", "--no-clock", "--script", bad])
        XCTAssertEqual(failed.status, 2)
        XCTAssertEqual(failed.output, "--stderr--\n\(bad):3: unknown action 'hme' (did you mean 'home'?); 'help' lists the actions\n")
    }

    /// A scenario file larger than 16 MiB is refused from its size, before it is read.
    func testAnOversizedScenarioFileIsRefusedBeforeItIsRead() throws {
        let folder = try CBuild.temporaryFolder("bigscript")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = folder + "/huge.scenario"
        XCTAssertTrue(FileManager.default.createFile(atPath: script, contents: nil))
        XCTAssertEqual(truncate(script, 1 << 31), 0, "a sparse 2 GiB file")
        let result = try CBuild.run(host, ["run", "--no-socket", "--no-pressure", "--no-clock", "--script", script])
        XCTAssertEqual(result.status, 2)
        XCTAssertEqual(result.output, "--stderr--\nlifecycle-host: cannot read scenario \(script): it is larger than 16777216 bytes\n")
    }

    /// `send ACTION --socket P` sent to the default socket, ignoring `--socket`.
    func testSendTakesSocketAfterTheAction() throws {
        let folder = try CBuild.temporaryFolder("sendsocket")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (process, socket) = try startHostWithSocket(in: folder)
        defer { _ = process.wait(timeout: 1) }
        // The default socket is somewhere nobody listens: only --socket can reach the host.
        let elsewhere = ["XDG_RUNTIME_DIR": folder + "/empty", "TMPDIR": folder + "/empty"]
        try FileManager.default.createDirectory(atPath: folder + "/empty", withIntermediateDirectories: false)
        XCTAssertEqual(try CBuild.run(host, ["send", "home", "--socket", socket], environment: elsewhere).output, "ok suspended\n")
        XCTAssertEqual(try CBuild.run(host, ["send", "foreground", "--socket=\(socket)"], environment: elsewhere).output, "ok active\n")
        XCTAssertEqual(try CBuild.run(host, ["send", "memory-warning", "--socket", socket, "critical"], environment: elsewhere).output,
                       "ok active\n")
        XCTAssertTrue(process.waitForLine { $0.contains("\"kind\":\"input\",\"name\":\"memory-warning critical\"") } != nil)
        let twice = try CBuild.run(host, ["send", "--socket", socket, "home", "--socket", socket], environment: elsewhere)
        XCTAssertEqual(twice.status, 64)
        XCTAssertTrue(twice.output.contains("Error: --socket given twice"), twice.output)
        XCTAssertEqual(try CBuild.run(host, ["send", "terminate", "--socket", socket], environment: elsewhere).output, "ok not-running\n")
        XCTAssertEqual(process.wait(), 0)
    }

    func testSplittingSocketOutOfTheActionWords() throws {
        XCTAssertTrue(try Send.splitSocketOption(["home", "--socket", "/s"]) == (["home"], "/s"))
        XCTAssertTrue(try Send.splitSocketOption(["post", "com.x.y", "--socket=/s", "n=1"]) == (["post", "com.x.y", "n=1"], "/s"))
        XCTAssertTrue(try Send.splitSocketOption(["post", "com.x.y", "--", "--socket", "/s"]) == (["post", "com.x.y", "--socket", "/s"], nil))
        XCTAssertTrue(try Send.splitSocketOption(["home"]) == (["home"], nil))
        XCTAssertThrowsError(try Send.splitSocketOption(["home", "--socket"]))
        XCTAssertThrowsError(try Send.splitSocketOption(["home", "--socket="]))
    }

    func testLineReaderBoundsEachLine() {
        var reader = LineReader()
        XCTAssertEqual(reader.append(ArraySlice("home\r\nfore".utf8)), [.text("home")])
        XCTAssertEqual(reader.append(ArraySlice("ground\n".utf8)), [.text("foreground")])
        // Over the limit across chunks: reported once, the rest dropped up to its line feed.
        let chunk = ArraySlice([UInt8](repeating: UInt8(ascii: "x"), count: 40_000))
        XCTAssertEqual(reader.append(chunk), [])
        XCTAssertEqual(reader.append(chunk), [.tooLong])
        XCTAssertEqual(reader.append(chunk), [])
        XCTAssertEqual(reader.append(ArraySlice("xx\nlock\n".utf8)), [.text("lock")])
        // Exactly the limit is fine (a CR before the LF does not count).
        let exact = [UInt8](repeating: UInt8(ascii: "y"), count: LineReader.maxLineBytes)
        XCTAssertEqual(reader.append(ArraySlice(exact + [13, 10])), [.text(String(repeating: "y", count: LineReader.maxLineBytes))])
        XCTAssertEqual(reader.append(ArraySlice(exact + [UInt8(ascii: "y"), 10])), [.tooLong])
    }
}
