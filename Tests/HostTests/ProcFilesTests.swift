import XCTest
@testable import lifecycle_host

/// The `/proc` parsing of the process metrics: real lines, and hostile ones refused whole.
final class ProcFilesTests: XCTestCase {
    /// A /proc/<pid>/stat line with `comm` in the parentheses and the given fields 14, 15, 22, 23, 24.
    private func statLine(comm: String, utime: String = "7", stime: String = "3", start: String = "12345", vsize: String = "1048576",
                          rss: String = "256") -> [UInt8]
    {
        // Fields 3 to 13, then 14 (utime), 15 (stime), 16 to 21, 22 (starttime), 23 (vsize), 24 (rss), 25 to 52.
        let head = ["S", "1", "42", "42", "0", "-1", "4194560", "100", "0", "0", "0"]
        let middle = ["0", "0", "20", "0", "1", "0"]
        let tail = Array(repeating: "0", count: 28)
        let fields = head + [utime, stime] + middle + [start, vsize, rss] + tail
        return Array("4242 (\(comm)) \(fields.joined(separator: " "))\n".utf8)
    }

    func testTheFieldsAreFoundAfterTheLastParenthesis() {
        let expected = ProcFiles.ProcessStat(userTicks: 7, systemTicks: 3, startTicks: 12345, virtualBytes: 1_048_576, residentPages: 256)
        XCTAssertEqual(ProcFiles.processStat(statLine(comm: "lifecycle-host")[...]), expected)
        // A command name may hold spaces and parentheses: only the last ')' ends it.
        XCTAssertEqual(ProcFiles.processStat(statLine(comm: "a) (b 1 2 3) x")[...]), expected)
        // The real one parses, and makes sense.
        let own = ProcFiles.read("/proc/self/stat", limit: ProcFiles.statLimit)
        let stat = ProcFiles.processStat(own?[...] ?? [])
        XCTAssertNotNil(stat)
        XCTAssertGreaterThan(stat?.virtualBytes ?? 0, 0)
        XCTAssertGreaterThan(stat?.residentPages ?? 0, 0)
    }

    func testHostileStatLinesAreRefusedWhole() {
        XCTAssertNil(ProcFiles.processStat([]))
        XCTAssertNil(ProcFiles.processStat(Array("4242 lifecycle-host S 1 2 3".utf8)[...]), "no parenthesis")
        XCTAssertNil(ProcFiles.processStat(Array(statLine(comm: "x").prefix(60))[...]), "too few fields")
        XCTAssertNil(ProcFiles.processStat(statLine(comm: "x", utime: "-7")[...]), "a sign")
        XCTAssertNil(ProcFiles.processStat(statLine(comm: "x", stime: "3.5")[...]), "a fraction")
        XCTAssertNil(ProcFiles.processStat(statLine(comm: "x", start: "0x10")[...]), "hexadecimal")
        XCTAssertNil(ProcFiles.processStat(statLine(comm: "x", vsize: "9223372036854775808")[...]), "past Int64.max")
        XCTAssertNil(ProcFiles.processStat(statLine(comm: "x", rss: "99999999999999999999")[...]), "20 digits")
        XCTAssertNil(ProcFiles.processStat(statLine(comm: String(repeating: "a", count: ProcFiles.statLimit))[...]), "larger than the bound")
        XCTAssertEqual(ProcFiles.processStat(statLine(comm: "x", vsize: "9223372036854775807")[...])?.virtualBytes, Int64.max)
    }

    func testBootTimeIsTheBtimeLine() {
        let stat = Array("cpu  1 2 3\nintr 5 6 7\nctxt 8\nbtime 1764300000\nprocesses 9\n".utf8)
        XCTAssertEqual(ProcFiles.bootTime(stat[...]), 1_764_300_000)
        XCTAssertNil(ProcFiles.bootTime(Array("cpu 1\nbtime\nxbtime 5\n".utf8)[...]))
        XCTAssertNil(ProcFiles.bootTime(Array("btime -5\n".utf8)[...]))
        XCTAssertNil(ProcFiles.bootTime(Array("btime 12 13\n".utf8)[...]))
        let own = ProcFiles.read("/proc/stat", limit: ProcFiles.systemStatLimit)
        XCTAssertGreaterThan(ProcFiles.bootTime(own?[...] ?? []) ?? 0, 1_000_000_000, "this machine's")
    }

    func testReadsAreBoundedAndDescriptorsCounted() throws {
        XCTAssertNil(ProcFiles.read("/proc/self/status", limit: 10), "more than the bound: nothing")
        XCTAssertNil(ProcFiles.read("/nonexistent", limit: 10))
        XCTAssertEqual(ProcFiles.read("/proc/self/comm", limit: 4096)?.last, UInt8(ascii: "\n"))
        let before = try XCTUnwrap(ProcFiles.openDescriptors())
        let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        XCTAssertEqual(ProcFiles.openDescriptors(), before + 1)
        // Foundation's listing sees its own descriptor too; ours is not counted.
        XCTAssertEqual(ProcFiles.openDescriptors(), try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count - 1)
    }
}
