import Foundation
import TestSupport
import XCTest

/// Issue 18, hole 4: a plugin whose encoding fails — its process dies or is cut off inside
/// `willEncodeRestorableStateWithCoder`, or a write into its coder is refused, isolated or in the
/// host's process — keeps its previous archive, byte for byte, the trace says so, and the next launch
/// restores it. Real plugins (`LimitFixtures.keeper`), the built host, real archive files.
final class ArchiveKeptTests: XCTestCase {
    typealias Run = IsolationTests.Run
    let id = "com.example.keeper"

    /// The keeper, built once per test; its archive folder, fresh per test.
    var keeper = ""
    var archive = ""
    var file: String { archive + "/\(id).lcarchive" }

    override func setUpWithError() throws {
        keeper = try IsolationFixtures.build(LimitFixtures.keeper(id: id), named: "keeper")
        archive = try CBuild.temporaryFolder("kept-archive")
    }

    /// One run of the keeper in `mode` (`KEEPER_MODE`), isolated or not, with `script`.
    func run(_ mode: String, isolated: Bool, script: String = "launch\nhome\nterminate", extra: [String] = []) throws -> Run {
        try IsolationTests.run(["--plugin", keeper, "--archive", archive] + (isolated ? ["--isolate"] : []) + extra, script: script,
                               environment: ["KEEPER_MODE": mode])
    }

    /// A first run that saves `{"counter": 7}`: the 52-byte archive of the issue. - Returns: its bytes.
    func saveTheGoodArchive(isolated: Bool) throws -> Data {
        let good = try run("good", isolated: isolated)
        XCTAssertEqual(good.status, 0, good.output)
        XCTAssertTrue(good.trace.contains("archive saved background [\(id)] (1 keys)"), good.output)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        XCTAssertEqual(bytes.count, 52)
        return bytes
    }

    /// The next launch restores the good archive.
    func assertTheGoodArchiveIsRestored(isolated: Bool, file: StaticString = #filePath, line: UInt = #line) throws {
        let next = try run("good", isolated: isolated, script: "launch\nterminate")
        XCTAssertEqual(next.status, 0, next.output, file: file, line: line)
        XCTAssertEqual(next.printed["keeper"], [Self.restored], next.output, file: file, line: line)
    }

    /// The `error archive` record right after the plugin's failure, and the records around the save.
    func keptRecord(_ result: Run) -> Run.Record? {
        result.records.first { $0.kind == "error" && $0.name == "archive" }
    }

    static let encode = "application:willEncodeRestorableStateWithCoder:"
    /// What the keeper prints when its launch restores the good archive.
    static let restored = "keeper: restored counter 7, 1 keys, blob 0 bytes"

    func testAnIsolatedPluginThatCrashesInWillEncodeKeepsItsPreviousArchive() throws {
        let before = try saveTheGoodArchive(isolated: true)
        let crashed = try run("segv", isolated: true)
        XCTAssertEqual(crashed.status, 7, crashed.output)
        let failure = try XCTUnwrap(crashed.failures().first, crashed.output)
        XCTAssertEqual(failure.detail, "killed by SIGSEGV; while handling \(Self.encode); not restarted (policy never)")
        let failedAt = try XCTUnwrap(crashed.records.firstIndex { $0.kind == "plugin-failed" })
        XCTAssertEqual(crashed.records[failedAt + 1], Run.Record(
            kind: "error", name: "archive", state: "background", plugin: id,
            detail: "not saved, the previous archive is kept: \(Self.encode) did not complete: the plugin's process failed (SIGSEGV)"),
                       crashed.output)
        XCTAssertFalse(crashed.trace.contains { $0.hasPrefix("archive saved") }, crashed.output)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: file)), before, "52 bytes, unchanged")
        try assertTheGoodArchiveIsRestored(isolated: true)
    }

    func testAnIsolatedPluginCutOffOrExitingInWillEncodeKeepsItsPreviousArchive() throws {
        let before = try saveTheGoodArchive(isolated: true)
        for (mode, cause, name) in [("hang", "did not return within its 0.500 s isolated-call budget: killed (SIGKILL)", "overran isolated-call budget"),
                                    ("exit", "exited with status 3", "exit 3")] {
            let failed = try run(mode, isolated: true, extra: ["--isolate-budget", "0.5"])
            XCTAssertEqual(failed.status, 7, failed.output)
            XCTAssertEqual(failed.failures().map(\.detail), ["\(cause); while handling \(Self.encode); not restarted (policy never)"], failed.output)
            XCTAssertEqual(keptRecord(failed)?.detail,
                           "not saved, the previous archive is kept: \(Self.encode) did not complete: the plugin's process failed (\(name))", failed.output)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: file)), before)
        }
        try assertTheGoodArchiveIsRestored(isolated: false)
    }

    /// A write into the coder that is refused (`set_bytes` with NULL data) means the plugin's state was
    /// not encoded: the previous archive is kept — not replaced with what the coder held (`{"counter": 8}`).
    func testARefusedWriteInWillEncodeKeepsThePreviousArchiveInEitherMode() throws {
        let before = try saveTheGoodArchive(isolated: false)
        var traces: [[String]] = []
        for isolated in [false, true] {
            let refused = try run("refuse", isolated: isolated)
            XCTAssertEqual(refused.status, 0, refused.output)
            XCTAssertEqual(refused.printed["keeper"], [Self.restored, "keeper: set_bytes -> -1"])
            XCTAssertEqual(keptRecord(refused), Run.Record(
                kind: "error", name: "archive", state: "background", plugin: id,
                detail: "not saved, the previous archive is kept: \(Self.encode) had a write into the coder refused: lc_dict_set_bytes: data is NULL"),
                           refused.output)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: file)), before)
            traces.append(refused.trace)
        }
        XCTAssertEqual(traces[0], traces[1], "the same trace in either mode")
        try assertTheGoodArchiveIsRestored(isolated: true)
    }

    /// A write the limits refuse (a 65th level) keeps the previous archive too, in either mode.
    func testAWriteOverTheDepthLimitInWillEncodeKeepsThePreviousArchive() throws {
        let before = try saveTheGoodArchive(isolated: true)
        for isolated in [false, true] {
            let deep = try run("deep", isolated: isolated)
            XCTAssertEqual(deep.status, 0, deep.output)
            XCTAssertEqual(deep.printed["keeper"], [Self.restored, "keeper: set_dict -> -1"])
            XCTAssertEqual(keptRecord(deep)?.detail,
                           "not saved, the previous archive is kept: \(Self.encode) had a write into the coder refused: "
                           + "lc_dict_set_dict: 'deep' would make the dictionary 65 levels deep (at most 64); nothing was set", deep.output)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: file)), before)
        }
        try assertTheGoodArchiveIsRestored(isolated: false)
    }
}
