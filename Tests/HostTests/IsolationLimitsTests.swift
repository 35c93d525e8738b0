import Foundation
import TestSupport
import XCTest

/// The dictionary limits (64 levels, 64 MiB − 20 bytes) are checked where a dictionary is built or
/// posted, the same in every mode, and the frames between the host and its runners carry every
/// dictionary and archive the host accepts: what one plugin posts never makes another's runner refuse
/// a frame, and an isolated plugin's state of any size the archive allows is saved and restored.
/// Real plugins, built with cc, through the built host.
final class IsolationLimitsTests: XCTestCase {
    typealias Run = IsolationTests.Run
    let echo = ["--plugin", IsolationTests.example("Echo")]

    func run(_ arguments: [String], script: String? = nil, scenario: String? = nil, environment: [String: String] = [:]) throws -> Run {
        try IsolationTests.run(arguments, script: script, scenario: scenario, environment: environment)
    }

    /// `{"d":{"d":…{"leaf":1}…}}` with `levels` wraps: what `LimitFixtures.chainFunction` builds.
    static func chainJSON(_ levels: Int) -> String {
        String(repeating: #"{"d":"#, count: levels) + #"{"leaf":1}"# + String(repeating: "}", count: levels)
    }

    /// Issue 18, hole 3: an in-process plugin posted a userInfo 100 levels deep with LC_OK on a name an
    /// isolated Echo observes; Echo's runner refused the frame, exited 70, and Echo was blamed. Now the
    /// 65th level is refused to the poster where the dictionary is built (LC_ERR_INVALID_ARGUMENT), what
    /// it posts is within the limits, and Echo, isolated, prints what it prints in the host's process.
    func testAUserInfoTooDeepIsRefusedToItsPosterAndIsolatedEchoIsServed() throws {
        let poster = try IsolationFixtures.build(LimitFixtures.deepPoster(
            id: "com.example.deep", trigger: "didBecomeActive", name: "userDefaultsDidChange", levels: 100), named: "deep")
        let isolated = try run(["--plugin", poster] + echo + ["--isolate", "org.applifecycle.echo"], scenario: "launch-foreground")
        XCTAssertEqual(isolated.status, 0, isolated.output)
        XCTAssertEqual(isolated.failures(), [], isolated.output)
        XCTAssertEqual(isolated.printed["poster"], ["poster: level 65 refused: -1", "poster: post -> 0"])
        let deepest = "echo: userDefaultsDidChange " + Self.chainJSON(64)
        XCTAssertEqual(isolated.printed["echo"]?.filter { $0 == deepest }.count, 1, isolated.output)
        let inProcess = try run(["--plugin", poster] + echo, scenario: "launch-foreground")
        XCTAssertEqual(inProcess.status, 0, inProcess.output)
        XCTAssertEqual(isolated.printed["echo"], inProcess.printed["echo"], "Echo sees the same, isolated or not")
        XCTAssertEqual(isolated.printed["poster"], inProcess.printed["poster"])
        XCTAssertEqual(isolated.trace, inProcess.trace)
    }

    /// Issue 18, hole 3: a 20 MiB userInfo (over the old 16 MiB frames) posted in the host's process
    /// reached no isolated observer: its runner refused the frame and exited 70. Frames now carry any
    /// dictionary the limits allow, up to the largest (64 MiB − 20 bytes of entries); one byte more is
    /// refused to the poster, in the host's process and isolated alike.
    func testUserInfosUpToTheSizeLimitReachIsolatedObserversAndOneByteMoreIsRefusedToThePoster() throws {
        let counter = try IsolationFixtures.build(LimitFixtures.blobCounter(id: "com.example.counter", name: "com.example.blob"), named: "counter")
        // 67108844 bytes of entries: 8 (key length) + 4 ("blob") + 9 (tag, length) + the bytes.
        let largest = (64 << 20) - 20 - 21
        for (bytes, name) in [(20 << 20, "big20"), (largest, "largest")] {
            let poster = try IsolationFixtures.build(LimitFixtures.bigPoster(
                id: "com.example.big", trigger: "didBecomeActive", name: "com.example.blob", bytes: bytes), named: name)
            let result = try run(["--plugin", poster, "--plugin", counter, "--isolate", "com.example.counter"] + echo,
                                 scenario: "launch-foreground")
            XCTAssertEqual(result.status, 0, result.output)
            XCTAssertEqual(result.failures(), [], result.output)
            XCTAssertEqual(result.printed["poster"], ["poster: set_bytes -> 0", "poster: post -> 0"])
            XCTAssertEqual(result.printed["counter"], ["counter: \(bytes) bytes, first 5a, last 5a"])
        }
        let over = try IsolationFixtures.build(LimitFixtures.bigPoster(
            id: "com.example.big", trigger: "didBecomeActive", name: "com.example.blob", bytes: largest + 1), named: "over")
        let posterInProcess = try run(["--plugin", over, "--plugin", counter, "--isolate", "com.example.counter"], scenario: "launch-foreground")
        let posterIsolated = try run(["--plugin", over, "--plugin", counter, "--isolate"], scenario: "launch-foreground")
        for result in [posterInProcess, posterIsolated] {
            XCTAssertEqual(result.status, 0, result.output)
            XCTAssertEqual(result.failures(), [], result.output)
            XCTAssertEqual(result.printed["poster"], ["poster: set_bytes -> -1", "poster: post -> 0"])
            XCTAssertEqual(result.printed["counter"], ["counter: no blob"])
        }
    }

    /// Issue 18, hole 3: an isolated plugin's state over 16 MiB could be neither saved nor restored,
    /// though the archive cap is 64 MiB. Now 20 MiB, and the largest archive the cap allows (64 MiB
    /// exactly), are saved from the plugin's process and restored into it.
    func testAnIsolatedPluginsStateUpToTheArchiveCapIsSavedAndRestored() throws {
        let keeper = try IsolationFixtures.build(LimitFixtures.keeper(id: "com.example.keeper"), named: "keeper")
        let archive = try CBuild.temporaryFolder("limits-archive")
        let file = archive + "/com.example.keeper.lcarchive"
        // The archive: its header (20) + "counter" (8 + 7 + 17) + "blob" (8 + 4 + 9) + the bytes.
        for bytes in [20 << 20, (64 << 20) - 20 - 32 - 21] {
            let saved = try run(["--plugin", keeper, "--isolate", "--archive", archive], script: "launch\nhome\nterminate",
                                environment: ["KEEPER_MODE": "big", "KEEPER_BYTES": "\(bytes)"])
            XCTAssertEqual(saved.status, 0, saved.output)
            XCTAssertEqual(saved.failures(), [], saved.output)
            XCTAssertTrue(saved.trace.contains("archive saved background [com.example.keeper] (2 keys)"), saved.output)
            let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: file)[.size] as? Int)
            XCTAssertEqual(size, 20 + 32 + 21 + bytes, "the second: 64 MiB, the cap exactly")
            let restored = try run(["--plugin", keeper, "--isolate", "--archive", archive], script: "launch\nterminate")
            XCTAssertEqual(restored.status, 0, restored.output)
            XCTAssertEqual(restored.failures(), [], restored.output)
            XCTAssertEqual(restored.printed["keeper"], ["keeper: restored counter 7, 2 keys, blob \(bytes) bytes"])
        }
    }

    /// Issue 18, hole 3: a userInfo 200,000 levels deep, posted while the application was suspended,
    /// crashed the host's own trace writer on resume (recursion in `UserInfo`). Now the 65th level is
    /// refused where the dictionary is built; what is posted is held, and its 64 levels are rendered
    /// into the trace on resume.
    func testA200000LevelUserInfoCannotBeBuiltAndWhatIsHeldWhileSuspendedIsTracedOnResume() throws {
        let poster = try IsolationFixtures.build(LimitFixtures.latePoster(
            id: "com.example.late", trigger: "didEnterBackground", name: "significantTimeChange", levels: 200_000, delayMs: 300), named: "late")
        let result = try run(["--plugin", poster], script: "launch\nhome\nwait 1s\nforeground\nterminate")
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertEqual(result.printed["late"], ["late: level 65 refused: -1", "late: post -> 0"])
        XCTAssertTrue(result.trace.contains("queued significantTimeChange suspended [] (coalescing kind time)"), result.output)
        XCTAssertTrue(result.trace.contains("notification significantTimeChange background [] (\(Self.chainJSON(64)))"), result.output)
        XCTAssertEqual(result.records.last?.name, "not-running")
    }
}
