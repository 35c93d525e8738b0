import Foundation
import XCTest

@testable import AppLifecycle

/// The one set of dictionary limits (`UserInfoLimits`: 64 levels, 64 MiB − 20 bytes of entries), the
/// footprint every `UserInfo` keeps to check them in O(1), and the engine's doors: a post, an action,
/// a save; and a delegate whose encoding fails keeps its previous archive.
final class UserInfoLimitsTests: XCTestCase {
    /// `levels` dictionaries nested under "d", the innermost `{"leaf": 1}`.
    static func chain(_ levels: Int) -> UserInfo {
        var info: UserInfo = ["leaf": 1]
        for _ in 0..<levels { info = ["d": .dict(info)] }
        return info
    }

    /// A value's depth, recursively (the values here are shallow): the reference `depth` is checked against.
    static func referenceDepth(_ value: UserInfoValue) -> Int {
        switch value {
        case .list(let items): 1 + (items.map(referenceDepth).max() ?? 0)
        case .dict(let info): 1 + (info.map { referenceDepth($0.value) }.max() ?? 0)
        default: 0
        }
    }

    /// A pseudo-random value of at most `levels` levels, from `seed` (strings with multi-byte scalars).
    static func value(_ seed: inout UInt64, levels: Int) -> UserInfoValue {
        seed = seed &* 6364136223846793005 &+ 1442695040888963407
        let pick = Int(seed >> 59) % (levels > 0 ? 7 : 5)
        switch pick {
        case 0: return .string(String(repeating: "é€😀a", count: Int(seed >> 40 & 7)))
        case 1: return .int(Int64(bitPattern: seed))
        case 2: return .double(Double(seed >> 11))
        case 3: return .bool(seed & 1 == 0)
        case 4: return .bytes([UInt8](repeating: 7, count: Int(seed >> 32 & 31)))
        case 5: return .list((0..<Int(seed >> 20 & 3)).map { _ in value(&seed, levels: levels - 1) })
        default:
            var info = UserInfo()
            for index in 0..<Int(seed >> 24 & 3) { info["k\(index)é"] = value(&seed, levels: levels - 1) }
            return .dict(info)
        }
    }

    func assertMeasured(_ info: UserInfo, _ note: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(info.encodedSize, ArchiveFormat.encode(info).count - ArchiveFormat.headerSize, note, file: file, line: line)
        XCTAssertEqual(info.depth, info.map { Self.referenceDepth($0.value) }.max() ?? 0, note, file: file, line: line)
    }

    func testTheFootprintIsExactThroughEveryChangeAndEveryDecode() throws {
        var seed: UInt64 = 18
        for round in 0..<300 {
            var info = UserInfo()
            for index in 0..<6 { info["key\(index % 4)"] = Self.value(&seed, levels: 5) }  // replacements among them
            assertMeasured(info, "built, round \(round)")
            // Removing the deepest entry (a measure again), then the others.
            if let deepest = info.max(by: { Self.referenceDepth($0.value) < Self.referenceDepth($1.value) }) {
                info[deepest.key] = nil
                assertMeasured(info, "deepest removed, round \(round)")
            }
            info["added"] = Self.value(&seed, levels: 3)
            assertMeasured(info, "added, round \(round)")
            let decoded = try ArchiveFormat.decode(ArchiveFormat.encode(info))
            XCTAssertEqual(decoded, info)
            XCTAssertEqual(decoded.encodedSize, info.encodedSize, "round \(round)")
            XCTAssertEqual(decoded.depth, info.depth, "round \(round)")
            while let key = info.keys.first { info[key] = nil }
            XCTAssertEqual(info.encodedSize, 0)
            XCTAssertEqual(info.depth, 0)
        }
    }

    func testADictionaryWithinTheLimitsIsAcceptedAndOneLevelOrOneByteMoreIsRefusedNamingTheLimit() throws {
        var info = UserInfo()
        XCTAssertNoThrow(try info.setWithinLimits(.dict(Self.chain(63)), forKey: "deep"))
        XCTAssertEqual(info.depth, 64)
        XCTAssertNil(info.limitExceeded)
        XCTAssertThrowsError(try info.setWithinLimits(.dict(Self.chain(64)), forKey: "deeper")) { error in
            XCTAssertEqual(error as? UserInfoLimitExceeded, UserInfoLimitExceeded(.depth, measured: 65))
            XCTAssertEqual("\(error)", "65 levels deep (at most 64)")
        }
        XCTAssertEqual(info.keys, ["deep"], "nothing changed")
        // Size: 8 + 4 ("blob") + 9 + the bytes; exactly the limit, then one byte more.
        var large = UserInfo()
        let fits = UserInfoLimits.maximumBytes - 21
        XCTAssertNoThrow(try large.setWithinLimits(.bytes([UInt8](repeating: 1, count: fits)), forKey: "blob"))
        XCTAssertEqual(large.encodedSize, 67_108_844)
        XCTAssertEqual(UserInfoLimits.maximumBytes, ArchiveStore.defaultMaxBytes - ArchiveFormat.headerSize)
        XCTAssertEqual(large.limitExceeded(setting: .bytes([UInt8](repeating: 1, count: fits + 1)), forKey: "blob"),
                       UserInfoLimitExceeded(.bytes, measured: 67_108_845))
        XCTAssertEqual(large.limitExceeded(setting: true, forKey: "more")?.description, "67108866 bytes (at most 67108844)")
        XCTAssertNil(large.limitExceeded(setting: .bytes([1]), forKey: "blob"), "shrinking is never refused")
    }

    func testADictionaryBuiltPastTheLimitsMayShrinkAndIsRefusedAtEveryDoor() throws {
        var over: UserInfo = ["deep": .dict(Self.chain(70))]
        XCTAssertEqual(over.limitExceeded, UserInfoLimitExceeded(.depth, measured: 71))
        XCTAssertEqual(over.limitExceeded(setting: 1, forKey: "more"), UserInfoLimitExceeded(.depth, measured: 71))
        XCTAssertNil(over.limitExceeded(setting: 1, forKey: "deep"), "replacing the deepest value with a scalar shrinks it")
        let center = AppNotificationCenter(loop: try MainRunLoop())
        var delivered = 0
        let name = try NotificationName("com.example.limits")
        center.observe(name) { _ in delivered += 1 }
        XCTAssertFalse(center.post(name, userInfo: over))
        XCTAssertEqual(center.post(nameID: name.id, sender: 0, userInfo: over), .overLimit)
        XCTAssertEqual(over.limitExceeded, UserInfoLimitExceeded(.depth, measured: 71))
        XCTAssertEqual(delivered, 0)
        over["deep"] = nil
        XCTAssertTrue(center.post(name, userInfo: over))
        XCTAssertEqual(delivered, 1)
    }

    func testAnActionCarryingADictionaryOverTheLimitsIsRefusedBeforeAnythingRuns() throws {
        let h = try Harness()
        let deep: UserInfo = ["deep": .dict(Self.chain(64))]
        let cases: [(Action, String)] = [
            (.launch(options: deep), "action 'launch': its options are 65 levels deep (at most 64); nothing was done"),
            (.remoteNotification(deep), "action 'remote-notification': its payload is 65 levels deep (at most 64); nothing was done"),
            (.openRemoteNotification(deep), "action 'open-notification': its payload is 65 levels deep (at most 64); nothing was done"),
            (.localNotification(deep, opened: true), "action 'local-notification': its userInfo is 65 levels deep (at most 64); nothing was done"),
            (.openURL("x:y", annotation: .dict(Self.chain(65))), "action 'open-url': its annotation is 66 levels deep (at most 64); nothing was done"),
            (.continueUserActivity(UserActivity(activityType: "com.example.a", userInfo: Self.chain(64))),
             "action 'continue-activity': its activity is 65 levels deep (at most 64); nothing was done"),
        ]
        for (action, message) in cases {
            XCTAssertThrowsError(try h.app.perform(action)) { error in
                XCTAssertEqual((error as? ApplicationError)?.code, .invalidArgument)
                XCTAssertEqual((error as? ApplicationError)?.message, message)
            }
        }
        XCTAssertEqual(h.fullTrace.count, 0, "nothing traced")
        XCTAssertEqual(h.app.state, .notRunning)
        try h.app.perform(.launch(options: Self.chain(64)))
        XCTAssertEqual(h.app.state, .active, "64 levels are within the limits")
    }

    /// Describing, measuring, encoding and decoding a value never recurse past the limits: a list nested
    /// 10,000 deep is measured on a thread with a 64 KiB stack (a walk that recursed would overflow it).
    func testMeasuringADeepListDoesNotRecurse() throws {
        /// What the small-stack thread measures, and the value it measures (kept alive by the test).
        final class Probe: @unchecked Sendable {
            var value: UserInfoValue = 1
            var measured: (depth: Int, bytes: Int, excess: UserInfoLimitExceeded?) = (0, 0, nil)
        }
        let probe = Probe()
        for _ in 0..<10_000 { probe.value = .list([probe.value]) }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setstacksize(&attributes, 64 << 10)
        var thread = pthread_t()
        let started = pthread_create(&thread, &attributes, { context in
            let probe = Unmanaged<Probe>.fromOpaque(context!).takeUnretainedValue()
            var info = UserInfo()
            info["deep"] = probe.value
            probe.measured = (info.depth, info.encodedSize, info.limitExceeded)
            return nil
        }, Unmanaged.passUnretained(probe).toOpaque())
        XCTAssertEqual(started, 0)
        pthread_join(thread, nil)
        XCTAssertEqual(probe.measured.depth, 255, "saturates, far past the limit")
        XCTAssertEqual(probe.measured.bytes, 8 + 4 + 10_000 * 9 + 17)
        XCTAssertEqual(probe.measured.excess, UserInfoLimitExceeded(.depth, measured: 255))
    }

    func testASaveOverTheCapIsRefusedBeforeAnythingIsEncoded() throws {
        let folder = FileManager.default.temporaryDirectory.path + "/lc-limits-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let store = ArchiveStore(directory: folder, maxBytes: 100)
        let path = try store.path(for: "com.example.big")
        // 20 + (8 + 4 + 9 + 60) = 101 bytes.
        XCTAssertThrowsError(try store.save(["blob": .bytes([UInt8](repeating: 0, count: 60))], id: "com.example.big")) { error in
            XCTAssertEqual((error as? ApplicationError)?.message, "archive \(path) was not saved: it would be 101 bytes, the limit is 100")
        }
        XCTAssertNoThrow(try store.save(["blob": .bytes([UInt8](repeating: 0, count: 59))], id: "com.example.big"))
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int, 100)
    }

    /// A delegate whose encoding failed (`StateArchive.fail`, as the bridges to plugins report a refused
    /// write or a process that died) saves nothing: the previous archive stays, byte for byte, and an
    /// `archiveKept` event names the call and the failure.
    func testAFailedEncodingKeepsThePreviousArchiveAndTheTraceSaysSo() throws {
        let folder = FileManager.default.temporaryDirectory.path + "/lc-kept-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        var failing: EncodingFailure?
        let h = try Harness({ $0.archiveDirectory = folder }, delegates: [])
        var keeper = DelegateHandlers()
        var counter: Int64 = 7
        keeper.shouldSaveApplicationState = { _, _ in true }
        keeper.shouldRestoreApplicationState = { _, _ in true }
        keeper.willEncodeRestorableState = { _, archive in
            archive["counter"] = .int(counter)
            if let failing { archive.fail(failing) }
        }
        try h.app.addDelegate(keeper, id: "com.example.keeper")
        let file = folder + "/com.example.keeper.lcarchive"
        try h.app.perform(.launch())
        try h.app.perform(.home)
        let good = try Data(contentsOf: URL(fileURLWithPath: file))
        XCTAssertEqual(good.count, 52)
        try h.app.perform(.foreground)
        counter = 8
        failing = .writeRefused(function: "lc_dict_set_bytes", message: "lc_dict_set_bytes: data is NULL")
        let start = h.fullTrace.count
        try h.app.perform(.home)
        let kept = h.fullTrace[start...].filter { if case .archiveKept = $0.payload { true } else { false } }
        XCTAssertEqual(kept.map(\.description), [
            "error archive [com.example.keeper] (not saved, the previous archive is kept: application:willEncodeRestorableStateWithCoder: "
                + "had a write into the coder refused: lc_dict_set_bytes: data is NULL)",
        ])
        guard case .archiveKept(let method, let delegate, let failure)? = kept.first?.payload else { return XCTFail("no archiveKept event") }
        XCTAssertEqual(method, .willEncodeRestorableState)
        XCTAssertEqual(delegate, "com.example.keeper")
        XCTAssertEqual(failure, failing)
        XCTAssertFalse(h.fullTrace[start...].contains { if case .archive(.saved, _, _) = $0.payload { true } else { false } })
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: file)), good)
        XCTAssertEqual(try ArchiveStore(directory: folder).load(id: "com.example.keeper"), ["counter": 7])
    }
}
