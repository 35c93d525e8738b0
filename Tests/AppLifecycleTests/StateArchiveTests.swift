import Foundation
import Glibc
import XCTest

@testable import AppLifecycle
@testable import archive_writer_child

/// The state-preservation archive: `StateArchive`, `ArchiveStore`, `ArchiveFormat`, on real files in a
/// fresh temporary folder per test.
final class StateArchiveTests: XCTestCase {
    private var folder = ""
    private let id = "com.example.keeper"

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("StateArchiveTests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: folder)
    }

    // MARK: - Round trips

    func testRoundTripKeepsEveryValueKindBitForBit() throws {
        let values = Self.everyKind()
        let store = ArchiveStore(directory: folder)
        try store.save(values, id: id)
        let loaded = try XCTUnwrap(try store.load(id: id))
        assertIdentical(loaded, values)
        // The format alone, too, and encoding is deterministic.
        let bytes = ArchiveFormat.encode(values)
        assertIdentical(try ArchiveFormat.decode(bytes), values)
        XCTAssertEqual(ArchiveFormat.encode(try ArchiveFormat.decode(bytes)), bytes)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: try store.path(for: id))), Data(bytes))
    }

    func testEmptyArchiveRoundTripsAndHasTheDocumentedHeader() throws {
        let bytes = ArchiveFormat.encode(UserInfo())
        XCTAssertEqual(bytes, Array("LCAR".utf8) + [1, 0, 0, 0] + [UInt8](repeating: 0, count: 12))
        XCTAssertEqual(try ArchiveFormat.decode(bytes), UserInfo())
        let store = ArchiveStore(directory: folder)
        try store.save(UserInfo(), id: id)
        XCTAssertEqual(try store.load(id: id), UserInfo())
    }

    func testEncodingMatchesTheDocumentedLayout() throws {
        let bytes = ArchiveFormat.encode(["k": true, "n": [7]])
        let payload: [UInt8] =
            le(1) + [0x6B] + [0x62] + le(1) + [1]  // "k": bool true
            + le(1) + [0x6E] + [0x6C] + le(17) + [0x69] + le(8) + le(7)  // "n": list [int 7]
        XCTAssertEqual(bytes, Array("LCAR".utf8) + [1, 0, 0, 0] + le(UInt64(payload.count))
                       + le32(ArchiveFormat.crc32(payload)) + payload)
    }

    func testCRC32IsTheIEEEChecksum() {
        XCTAssertEqual(ArchiveFormat.crc32(Array("123456789".utf8)), 0xCBF4_3926)
        XCTAssertEqual(ArchiveFormat.crc32([]), 0)
        XCTAssertEqual(ArchiveFormat.crc32(Array("The quick brown fox jumps over the lazy dog".utf8)), 0x414F_A339)
        // The eight-bytes-a-step version agrees with the textbook bit-by-bit one for every length and
        // alignment around the step.
        var random = SplitMix64(seed: 42)
        let data = (0..<300).map { _ in UInt8.random(in: 0...255, using: &random) }
        for start in 0..<9 {
            for end in start...data.count where end < start + 40 || end == data.count {
                let slice = Array(data[start..<end])
                XCTAssertEqual(ArchiveFormat.crc32(slice), bitwiseCRC32(slice), "bytes \(start)..<\(end)")
            }
        }
    }

    func testStateArchiveIsAKeyValueStoreInInsertionOrder() {
        let archive = StateArchive()
        XCTAssertTrue(archive.values.isEmpty)
        archive["b"] = 2
        archive["a"] = "one"
        archive["b"] = [true]
        XCTAssertEqual(archive.values.keys, ["b", "a"])
        XCTAssertEqual(archive["b"], .list([.bool(true)]))
        archive["b"] = nil
        XCTAssertNil(archive["b"])
        XCTAssertEqual(archive.values, ["a": "one"])
        XCTAssertEqual(StateArchive(values: ["x": 1.5]).values["x"], .double(1.5))
    }

    func testNestingUpTo64LevelsSavesAndDeeperIsRefused() throws {
        let store = ArchiveStore(directory: folder)
        let ok: UserInfo = ["deep": Self.nested(levels: 64)]
        try store.save(ok, id: id)
        XCTAssertEqual(try store.load(id: id), ok)
        let path = try store.path(for: id)
        for deep: UserInfo in [["deep": Self.nested(levels: 65)], ["deep": Self.nested(levels: 10_000)]] {
            assertError(try store.save(deep, id: id), .invalidArgument,
                        "archive \(path) was not saved: its lists and dictionaries nest deeper than 64 levels")
        }
        XCTAssertEqual(try store.load(id: id), ok, "a refused save leaves the archive alone")
        // A hand-made archive nesting 65 levels is refused when decoded, without recursing further.
        // The 65th list starts after the entry's key (20 + 8 + 4) and 64 list headers of 9 bytes.
        assertError(try ArchiveFormat.decode(ArchiveFormat.encode(["deep": Self.nested(levels: 65)])), .archiveCorrupt,
                    "malformed payload: lists and dictionaries nest deeper than 64 levels at byte \(32 + 64 * 9)")
    }

    // MARK: - Files

    func testMissingArchiveLoadsAsNilAndSaveCreatesTheFolder() throws {
        let nested = folder + "/one/two"
        let store = ArchiveStore(directory: nested + "/")
        XCTAssertEqual(store.directory, nested)
        XCTAssertEqual(try store.path(for: id), nested + "/com.example.keeper.lcarchive")
        XCTAssertNil(try store.load(id: id), "no folder: nil")
        try FileManager.default.createDirectory(atPath: nested, withIntermediateDirectories: true)
        XCTAssertNil(try store.load(id: id), "no file: nil")
        try FileManager.default.removeItem(atPath: folder + "/one")

        try store.save(["count": 1], id: id)
        XCTAssertEqual(try modeOf(folder + "/one") & 0o777, 0o700)
        XCTAssertEqual(try modeOf(nested) & 0o777, 0o700)
        XCTAssertEqual(try modeOf(try store.path(for: id)) & 0o777, 0o600)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: nested), ["com.example.keeper.lcarchive"],
                       "no temporary file is left after a save")
        try store.save(["count": 2], id: id)
        XCTAssertEqual(try store.load(id: id), ["count": 2])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: nested), ["com.example.keeper.lcarchive"])

        try store.remove(id: id)
        XCTAssertNil(try store.load(id: id))
        try store.remove(id: id)  // nothing there: no error
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: nested), [])
    }

    func testSaveReplacesAStaleTemporaryFileOfItsOwnProcess() throws {
        let store = ArchiveStore(directory: folder)
        let temp = folder + "/.com.example.keeper.lcarchive.\(getpid()).tmp"
        try Data(repeating: 0xEE, count: 100_000).write(to: URL(fileURLWithPath: temp))
        try store.save(["fresh": true], id: id)
        XCTAssertEqual(try store.load(id: id), ["fresh": true])
        XCTAssertFalse(FileManager.default.fileExists(atPath: temp))
    }

    func testFailedSavesKeepThePreviousArchiveAndRemoveTheirTemporaryFile() throws {
        let store = ArchiveStore(directory: folder)
        let path = try store.path(for: id)
        try store.save(["version": 1], id: id)

        // The temporary file cannot be created (a folder is in the way).
        let temp = folder + "/.com.example.keeper.lcarchive.\(getpid()).tmp"
        try FileManager.default.createDirectory(atPath: temp, withIntermediateDirectories: false)
        assertError(try store.save(["version": 2], id: id), .archiveWriteFailed,
                    "archive \(path) could not be saved: cannot create temporary file \(temp): Is a directory (errno 21)")
        XCTAssertEqual(try store.load(id: id), ["version": 1])
        XCTAssertTrue(FileManager.default.fileExists(atPath: temp), "a folder the save did not create is not removed")
        try FileManager.default.removeItem(atPath: temp)

        // The rename fails (the archive's name is taken by a non-empty folder): the temporary file goes.
        let other = ArchiveStore(directory: folder)
        let blocked = try other.path(for: "blocked")
        try FileManager.default.createDirectory(atPath: blocked + "/inside", withIntermediateDirectories: true)
        let blockedTemp = folder + "/.blocked.lcarchive.\(getpid()).tmp"
        assertError(try other.save(["version": 2], id: "blocked"), .archiveWriteFailed,
                    "archive \(blocked) could not be saved: cannot rename \(blockedTemp) over the archive: Is a directory (errno 21)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: blockedTemp))

        // The folder cannot be created (a file is in the way).
        let file = folder + "/plain-file"
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data([1])))
        let underFile = ArchiveStore(directory: file + "/archives")
        assertError(try underFile.save(["version": 2], id: id), .archiveWriteFailed,
                    "archive \(file)/archives/com.example.keeper.lcarchive could not be saved: cannot create folder \(file)/archives: Not a directory (errno 20)")
        assertError(try underFile.load(id: id), .archiveUnreadable,
                    "archive \(file)/archives/com.example.keeper.lcarchive is unreadable: Not a directory (errno 20)")

        XCTAssertEqual(try store.load(id: id), ["version": 1])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder).sorted(),
                       ["blocked.lcarchive", "com.example.keeper.lcarchive", "plain-file"])
    }

    // MARK: - Damaged archives

    func testDamagedArchivesAreReportedWithExactMessages() throws {
        let store = ArchiveStore(directory: folder)
        let path = try store.path(for: id)
        let values: UserInfo = ["name": "keeper", "blob": .bytes(Array(0..<200))]
        let good = ArchiveFormat.encode(values)
        let payloadLength = good.count - 20

        func expect(_ bytes: [UInt8], _ reason: String, line: UInt = #line) {
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)), line: line)
            assertError(try store.load(id: id), .archiveCorrupt, "archive \(path) is corrupt: \(reason)", line: line)
        }

        var flipped = good
        flipped[good.count - 50] ^= 0x01
        expect(flipped, "checksum mismatch")
        expect(Array(good.prefix(good.count - 7)),
               "truncated: the payload has \(payloadLength - 7) of \(payloadLength) bytes")
        expect(Array(good.prefix(10)), "truncated: the header has 10 of 20 bytes")
        expect(Array(good.prefix(3)), "truncated: the header has 3 of 20 bytes")
        expect(Array("random garbage, not an archive at all".utf8), "not an archive (bad magic)")
        expect([0x4C], "truncated: the header has 1 of 20 bytes")
        expect([], "empty file")
        var version = good
        version[4] = 2
        expect(version, "unsupported version 2 (this build reads version 1)")
        var reserved = good
        reserved[7] = 1
        expect(reserved, "malformed header: reserved field is 256, expected 0")
        expect(good + [1, 2, 3], "trailing bytes: 3 after the payload")
        var hugeLength = good
        hugeLength.replaceSubrange(8..<16, with: le(UInt64.max))
        expect(hugeLength, "truncated: the payload has \(payloadLength) of 18446744073709551615 bytes")

        // A folder where the file should be.
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        assertError(try store.load(id: id), .archiveUnreadable, "archive \(path) is unreadable: it is a directory")
        try FileManager.default.removeItem(atPath: path)

        // A FIFO: refused without blocking on the open.
        XCTAssertEqual(mkfifo(path, 0o600), 0)
        assertError(try store.load(id: id), .archiveUnreadable, "archive \(path) is unreadable: it is not a regular file")
        try FileManager.default.removeItem(atPath: path)

        // Repaired by a save.
        try store.save(values, id: id)
        XCTAssertEqual(try store.load(id: id), values)
    }

    func testMalformedPayloadsSayWhatIsWrong() {
        // Payload offsets are file offsets: the first entry's key length is at byte 20, a one-byte
        // key at 28, its value's tag at 29, the value's length at 30 and its body at 38.
        let cases: [([UInt8], String)] = [
            (entry("k", 0x7A, [1]), "unknown value tag 0x7a at byte 29"),
            (entry("k", 0x62, [2]), "bool at byte 29 is 2, expected 0 or 1"),
            (entry("k", 0x62, [1, 0]), "bool at byte 29 has length 2, expected 1"),
            (entry("k", 0x69, [1, 2, 3, 4]), "int at byte 29 has length 4, expected 8"),
            (entry("k", 0x64, []), "double at byte 29 has length 0, expected 8"),
            (entry("k", 0x73, [0xC3, 0x28]), "string at byte 29 is not valid UTF-8"),
            (le(1) + [0xFF] + [0x62] + le(1) + [1], "key at byte 20 is not valid UTF-8"),
            (entry("k", 0x62, [1]) + entry("k", 0x62, [0]), "duplicate key \"k\" at byte 39"),
            (le(1) + [0x6B] + [0x78] + le(1000) + [1, 2, 3], "value at byte 29 claims 1000 bytes but only 3 remain"),
            (le(1) + [0x6B] + [0x78] + le(.max), "value at byte 29 claims 18446744073709551615 bytes but only 0 remain"),
            (le(50) + [0x6B, 0x6B, 0x6B], "key at byte 20 claims 50 bytes but only 3 remain"),
            (le(.max), "key at byte 20 claims 18446744073709551615 bytes but only 0 remain"),
            ([1, 0, 0, 0, 0], "truncated key length at byte 20"),
            (le(1) + [0x6B], "key \"k\" at byte 20 has no value"),
            (le(1) + [0x6B, 0x62, 1, 0, 0], "truncated value header at byte 29"),
            // A value inside a list may not run past the list's own end, even if the file goes on.
            (le(1) + [0x6B] + [0x6C] + le(9) + [0x78] + le(5) + le(1) + [0x6A] + [0x62] + le(1) + [1],
             "value at byte 38 claims 5 bytes but only 0 remain"),
            (le(1) + [0x6B] + [0x6D] + le(3) + [1, 0, 0], "truncated key length at byte 38"),
        ]
        for (payload, reason) in cases {
            assertError(try ArchiveFormat.decode(archive(payload: payload)), .archiveCorrupt, "malformed payload: \(reason)")
        }
        // The well-formed neighbours decode.
        XCTAssertEqual(try ArchiveFormat.decode(archive(payload: entry("k", 0x62, [1]))), ["k": true])
        XCTAssertEqual(try ArchiveFormat.decode(archive(payload: le(0) + [0x6C] + le(0))), ["": []])
    }

    func testRandomMutationsNeverCrashAndDecodeOrReportCorruption() {
        let base = ArchiveFormat.encode(Self.everyKind())
        var random = SplitMix64(seed: 0x5EED_A11C_0FFE)
        var decoded = 0
        var reasons: [String: Int] = [:]
        for round in 0..<2_000 {
            var bytes = base
            let kind = round % 6
            switch kind {
            case 0:  // flip a few bits anywhere
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= 1 << UInt8.random(in: 0...7, using: &random)
                }
            case 1:  // flip bits in the payload and fix the checksum, so the payload parser sees them
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    bytes[Int.random(in: 20..<bytes.count, using: &random)] ^= 1 << UInt8.random(in: 0...7, using: &random)
                }
                fixHeader(&bytes)
            case 2:  // truncate, with or without a matching header
                bytes.removeLast(Int.random(in: 1...bytes.count, using: &random))
                if bytes.count >= 20, Bool.random(using: &random) { fixHeader(&bytes) }
            case 3:  // overwrite 8 bytes of the payload with an extreme or random length
                let at = Int.random(in: 20...(bytes.count - 8), using: &random)
                let length: UInt64 = [.max, 1 << 62, UInt64(Int.max), UInt64(bytes.count), 0,
                                      UInt64.random(in: 0...1_000, using: &random)].randomElement(using: &random) ?? 0
                bytes.replaceSubrange(at..<(at + 8), with: le(length))
                fixHeader(&bytes)
            case 4:  // insert or delete a run of payload bytes
                let at = Int.random(in: 20..<bytes.count, using: &random)
                if Bool.random(using: &random) {
                    bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...16, using: &random)))
                } else {
                    bytes.insert(contentsOf: (0..<Int.random(in: 1...16, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }, at: at)
                }
                fixHeader(&bytes)
            default:  // a valid header over random bytes
                bytes = Array(bytes.prefix(20)) + (0..<Int.random(in: 0...300, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
                fixHeader(&bytes)
            }
            do throws(ApplicationError) {
                let values = try ArchiveFormat.decode(bytes)
                decoded += 1
                // The format is canonical: whatever decodes re-encodes to the very same bytes.
                XCTAssertEqual(ArchiveFormat.encode(values), bytes, "round \(round)")
            } catch {
                XCTAssertEqual(error.code, .archiveCorrupt, "round \(round): \(error)")
                let reason = error.message.split(separator: ":").first.map(String.init) ?? error.message
                reasons[reason, default: 0] += 1
            }
        }
        XCTAssertGreaterThan(decoded, 0, "some mutations (e.g. a flipped bit in a string) still decode")
        for reason in ["checksum mismatch", "truncated", "malformed payload"] {
            XCTAssertGreaterThan(reasons[reason] ?? 0, 0, "no mutation was reported as '\(reason)': \(reasons)")
        }
        print("StateArchiveTests: 2000 mutations: \(decoded) decoded, refused: \(reasons)")
    }

    // MARK: - Ids

    func testInvalidIdsAreRefused() throws {
        let store = ArchiveStore(directory: folder)
        let cases: [(String, String)] = [
            ("", "archive id \"\" is invalid: it is empty"),
            ("../x", "archive id \"../x\" is invalid: it must not start with '.'"),
            ("a/b", "archive id \"a/b\" is invalid: it contains '/'; only A-Z a-z 0-9 . _ - are allowed"),
            (".hidden", "archive id \".hidden\" is invalid: it must not start with '.'"),
            ("..", "archive id \"..\" is invalid: it must not start with '.'"),
            ("a b", "archive id \"a b\" is invalid: it contains U+0020; only A-Z a-z 0-9 . _ - are allowed"),
            ("caf\u{E9}", "archive id \"caf\u{E9}\" is invalid: it contains U+00E9; only A-Z a-z 0-9 . _ - are allowed"),
            ("a\u{0}b", "archive id \"a\\u0000b\" is invalid: it contains U+0000; only A-Z a-z 0-9 . _ - are allowed"),
            (String(repeating: "x", count: 201),
             "archive id \"\(String(repeating: "x", count: 32))\"… is invalid: it is 201 bytes long, the limit is 200"),
        ]
        for (bad, message) in cases {
            assertError(try store.path(for: bad), .invalidArgument, message)
            assertError(try store.load(id: bad), .invalidArgument, message)
            assertError(try store.save(["k": 1], id: bad), .invalidArgument, message)
            assertError(try store.remove(id: bad), .invalidArgument, message)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder), [], "nothing was written")

        for good in ["com.example.keeper", "A-Z_a-z.0-9", "x..y", String(repeating: "y", count: 200)] {
            try store.save(["k": 1], id: good)
            XCTAssertEqual(try store.load(id: good), ["k": 1], good)
        }
        assertError(try ArchiveStore(directory: "").path(for: "ok"), .invalidArgument,
                    "archive folder for id \"ok\" is empty")
        XCTAssertEqual(try ArchiveStore(directory: "/").path(for: "ok"), "/ok.lcarchive")
    }

    // MARK: - Killed mid-save

    /// A child process saves archives A and B alternately (4 MiB each, so a save takes a while) and is
    /// killed with SIGKILL at a random moment; the archive must then load as exactly A or exactly B.
    func testKilledMidSaveLeavesACompleteArchive() throws {
        let child = try archiveWriterChild()
        let store = ArchiveStore(directory: folder)
        let archiveA = Self.writerFixture("A")
        let archiveB = Self.writerFixture("B")
        var rounds = 0
        var killedMidSave = 0
        var loadedA = 0
        var loadedB = 0
        var childPIDs: [Int32] = []
        // At least 20 kills; more (up to 200) until at least 2 of them left a temporary file behind,
        // i.e. landed between the temporary file's creation and the rename.
        while rounds < 20 || (killedMidSave < 2 && rounds < 200) {
            rounds += 1
            let process = Process()
            process.executableURL = URL(fileURLWithPath: child)
            process.arguments = [folder, id]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let pid = process.processIdentifier
            childPIDs.append(pid)
            let firstSave = waitForLine(starting: "saved", from: output.fileHandleForReading.fileDescriptor, seconds: 120)
            if firstSave {
                usleep(UInt32.random(in: 0...50_000))
            }
            kill(pid, SIGKILL)
            process.waitUntilExit()
            try? output.fileHandleForReading.close()
            guard firstSave else {
                XCTFail("round \(rounds): the child printed no 'saved' line within 120 s (status \(process.terminationStatus))")
                return
            }
            XCTAssertEqual(process.terminationReason, .uncaughtSignal, "round \(rounds)")
            XCTAssertEqual(process.terminationStatus, SIGKILL, "round \(rounds)")

            let temp = ".\(id).lcarchive.\(pid).tmp"
            let entries = try FileManager.default.contentsOfDirectory(atPath: folder)
            if entries.contains(temp) { killedMidSave += 1 }
            let allowed = Set(["\(id).lcarchive"] + childPIDs.map { ".\(id).lcarchive.\($0).tmp" })
            XCTAssertEqual(Set(entries).subtracting(allowed), [], "round \(rounds): unexpected files")

            let loaded: UserInfo?
            do {
                loaded = try store.load(id: id)
            } catch {
                XCTFail("round \(rounds): load failed after SIGKILL: \(error)")
                continue
            }
            if loaded == archiveA {
                loadedA += 1
            } else if loaded == archiveB {
                loadedB += 1
            } else {
                XCTFail("round \(rounds): the archive is neither A nor B (keys \(loaded?.keys ?? []))")
            }
        }
        print("StateArchiveTests: \(rounds) kills, \(killedMidSave) mid-save (temporary file left), loaded A \(loadedA)×, B \(loadedB)×")
        XCTAssertGreaterThan(killedMidSave, 0, "no kill landed inside a save; the test proved nothing")

        // The killed saves' temporary files are stale (their locks died with them): the next sweep
        // (at launch, before saves) removes every one and nothing else.
        let left = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0 != "\(id).lcarchive" }
        XCTAssertEqual(left.count, killedMidSave)
        XCTAssertEqual(store.removeStaleTemporaryFiles().sorted(), left.sorted())
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder), ["\(id).lcarchive"])

        // Leftover temporary files, even garbage ones, never disturb a load or a later save.
        XCTAssertTrue(FileManager.default.createFile(atPath: folder + "/.\(id).lcarchive.999999.tmp",
                                                     contents: Data("garbage".utf8)))
        let current = try XCTUnwrap(try store.load(id: id))
        XCTAssertTrue(current == archiveA || current == archiveB)
        try store.save(["after": "kills"], id: id)
        XCTAssertEqual(try store.load(id: id), ["after": "kills"])
    }

    // MARK: - Fixtures

    /// Archive "A" or "B", exactly as the child process writes them (its own function).
    static func writerFixture(_ name: String) -> UserInfo { archive_writer_child.writerFixture(name) }

    /// One value of every kind, with the edge cases of each.
    static func everyKind() -> UserInfo {
        [
            "string": "plain",
            "empty string": "",
            "unicode": "ünïcödé — 日本語 — 🏳️‍🌈 — e\u{301} — \u{0}nul\u{7F}",
            "": "an empty key",
            "clé ✓": "a unicode key",
            "int zero": 0,
            "int min": .int(.min),
            "int max": .int(.max),
            "int minus one": -1,
            "double": 3.141_592_653_589_793,
            "zero": .double(0.0),
            "negative zero": .double(-0.0),
            "nan": .double(.nan),
            "negative nan with payload": .double(-Double(nan: 0x1234, signaling: false)),
            "infinity": .double(.infinity),
            "minus infinity": .double(-.infinity),
            "subnormal": .double(.leastNonzeroMagnitude),
            "largest": .double(.greatestFiniteMagnitude),
            "true": true,
            "false": false,
            "bytes": .bytes([0, 1, 127, 128, 254, 255]),
            "no bytes": .bytes([]),
            "empty list": [],
            "empty dict": .dict(UserInfo()),
            "list": [1, "two", 3.0, false, .bytes([9]), [], .dict(UserInfo())],
            "dict": [
                "inner list": [[1, 2], ["deeper": [.double(-0.0), .double(.nan)]]],
                "inner dict": ["z": "last", "a": "first"],
                "inner empty": .dict(UserInfo()),
            ],
        ]
    }

    /// `levels` lists nested in one another, the innermost holding an int.
    static func nested(levels: Int) -> UserInfoValue {
        var value: UserInfoValue = 1
        for _ in 0..<levels { value = .list([value]) }
        return value
    }

    // MARK: - Helpers

    /// Asserts that `body` throws an `ApplicationError` with this code and exact message.
    private func assertError<T>(_ body: @autoclosure () throws -> T, _ code: ApplicationError.Code, _ message: String,
                                file: StaticString = #filePath, line: UInt = #line)
    {
        do {
            let value = try body()
            XCTFail("expected \(code) '\(message)', got \(value)", file: file, line: line)
        } catch let error as ApplicationError {
            XCTAssertEqual(error.code, code, error.message, file: file, line: line)
            XCTAssertEqual(error.message, message, file: file, line: line)
        } catch {
            XCTFail("expected ApplicationError, got \(error)", file: file, line: line)
        }
    }

    /// Asserts equality that also holds for NaN and tells -0.0 from 0.0, and strings by their exact bytes.
    private func assertIdentical(_ actual: UserInfo, _ expected: UserInfo, path: String = "",
                                 file: StaticString = #filePath, line: UInt = #line)
    {
        XCTAssertEqual(actual.keys.map { Array($0.utf8) }, expected.keys.map { Array($0.utf8) },
                       "keys at \(path.isEmpty ? "top level" : path)", file: file, line: line)
        guard actual.count == expected.count else { return }
        for index in 0..<expected.count {
            let (key, value) = expected.entry(at: index)
            assertIdentical(actual.entry(at: index).value, value, path: path + "/" + key, file: file, line: line)
        }
    }

    private func assertIdentical(_ actual: UserInfoValue, _ expected: UserInfoValue, path: String,
                                 file: StaticString, line: UInt)
    {
        switch (actual, expected) {
        case (.double(let a), .double(let b)):
            XCTAssertEqual(a.bitPattern, b.bitPattern, "double at \(path)", file: file, line: line)
        case (.string(let a), .string(let b)):
            XCTAssertEqual(Array(a.utf8), Array(b.utf8), "string at \(path)", file: file, line: line)
        case (.list(let a), .list(let b)):
            XCTAssertEqual(a.count, b.count, "list at \(path)", file: file, line: line)
            for (index, (x, y)) in zip(a, b).enumerated() {
                assertIdentical(x, y, path: path + "[\(index)]", file: file, line: line)
            }
        case (.dict(let a), .dict(let b)):
            assertIdentical(a, b, path: path, file: file, line: line)
        default:
            XCTAssertEqual(actual, expected, "value at \(path)", file: file, line: line)
        }
    }

    private func modeOf(_ path: String) throws -> Int {
        try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }
}

// MARK: - Byte builders

private func le(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
private func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

/// One payload entry: key, then a value with this tag and body.
private func entry(_ key: String, _ tag: UInt8, _ body: [UInt8]) -> [UInt8] {
    le(UInt64(key.utf8.count)) + Array(key.utf8) + [tag] + le(UInt64(body.count)) + body
}

/// A complete archive around `payload`, with a correct header.
private func archive(payload: [UInt8]) -> [UInt8] {
    Array("LCAR".utf8) + [1, 0, 0, 0] + le(UInt64(payload.count)) + le32(ArchiveFormat.crc32(payload)) + payload
}

/// Rewrites the length and checksum fields to match the bytes after the header.
private func fixHeader(_ bytes: inout [UInt8]) {
    guard bytes.count >= 20 else { return }
    let payload = Array(bytes[20...])
    bytes.replaceSubrange(8..<16, with: le(UInt64(payload.count)))
    bytes.replaceSubrange(16..<20, with: le32(ArchiveFormat.crc32(payload)))
}

/// CRC-32 (IEEE, reflected), one bit at a time: the reference for `ArchiveFormat.crc32`.
private func bitwiseCRC32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}

/// A small seeded generator, so that a failing fuzz round (or a shuffle) can be replayed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
