import Foundation
import Glibc
import XCTest

@testable import AppLifecycle

/// Archives bounded and checked before they are read whole; temporary files of killed saves swept.
final class ArchiveBoundsTests: XCTestCase {
    private var folder = ""
    private let id = "com.example.keeper"

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("ArchiveBoundsTests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: folder)
    }

    private func message<T>(_ body: () throws(ApplicationError) -> T, code: ApplicationError.Code, line: UInt = #line) -> String? {
        do {
            _ = try body()
            return nil
        } catch {
            XCTAssertEqual(error.code, code, error.message, line: line)
            return error.message
        }
    }

    /// A sparse file of `size` bytes at `path` whose first bytes are `head`.
    private func sparse(_ path: String, head: [UInt8], size: Int64) throws {
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(head)))
        XCTAssertEqual(truncate(path, off_t(size)), 0)
    }

    /// A 2 GiB archive was read whole before its magic was checked: the launch overran its budget and
    /// the watchdog killed it, and no archive error was shown. Now its size refuses it at once.
    func testAHugeArchiveIsRefusedFromItsSizeWithoutBeingRead() throws {
        let store = ArchiveStore(directory: folder)
        let path = try store.path(for: id)
        let header = ArchiveFormat.encode(["a": 1]).prefix(ArchiveFormat.headerSize)
        try sparse(path, head: Array(header), size: 1 << 31)
        let started = MonotonicInstant.now
        XCTAssertEqual(message({ () throws(ApplicationError) in try store.load(id: id) }, code: .archiveCorrupt),
                       "archive \(path) is corrupt: too large: 2147483648 bytes, the limit is 67108864; not read")
        XCTAssertLessThan(MonotonicInstant.now.duration(since: started), .milliseconds(200), "nothing was read")
    }

    /// Below the cap, the 20-byte header is checked against the file's size before the payload is read.
    func testTheHeaderIsCheckedBeforeThePayloadIsRead() throws {
        let store = ArchiveStore(directory: folder)
        let path = try store.path(for: id)
        // 60 MiB of zeros after a foreign magic: refused from the first bytes.
        try sparse(path, head: Array("GIF89a".utf8), size: 60 << 20)
        var started = MonotonicInstant.now
        XCTAssertEqual(message({ () throws(ApplicationError) in try store.load(id: id) }, code: .archiveCorrupt),
                       "archive \(path) is corrupt: not an archive (bad magic)")
        XCTAssertLessThan(MonotonicInstant.now.duration(since: started), .milliseconds(200))
        // A good header whose payload length is not what the file holds.
        let encoded = ArchiveFormat.encode(["a": 1])
        try sparse(path, head: Array(encoded.prefix(ArchiveFormat.headerSize)), size: 60 << 20)
        started = MonotonicInstant.now
        let payload = encoded.count - ArchiveFormat.headerSize
        XCTAssertEqual(message({ () throws(ApplicationError) in try store.load(id: id) }, code: .archiveCorrupt),
                       "archive \(path) is corrupt: trailing bytes: \((60 << 20) - 20 - payload) after the payload")
        XCTAssertLessThan(MonotonicInstant.now.duration(since: started), .milliseconds(200))
    }

    func testTheCapIsTheStoresAndSaveRefusesLargerArchives() throws {
        let store = ArchiveStore(directory: folder, maxBytes: 1000)
        let path = try store.path(for: id)
        try store.save(["small": "yes"], id: id)
        let big: UserInfo = ["blob": .bytes([UInt8](repeating: 7, count: 2000))]
        let size = ArchiveFormat.encode(big).count
        XCTAssertEqual(message({ () throws(ApplicationError) in try store.save(big, id: id) }, code: .invalidArgument),
                       "archive \(path) was not saved: it would be \(size) bytes, the limit is 1000")
        XCTAssertEqual(try store.load(id: id), ["small": "yes"], "the previous archive is untouched")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder), ["\(id).lcarchive"], "no temporary file")
        // Written by a store with a larger cap: refused by this one, read by that one.
        try ArchiveStore(directory: folder).save(big, id: id)
        XCTAssertEqual(message({ () throws(ApplicationError) in try store.load(id: id) }, code: .archiveCorrupt),
                       "archive \(path) is corrupt: too large: \(size) bytes, the limit is 1000; not read")
        XCTAssertEqual(try ArchiveStore(directory: folder).load(id: id), big)
        XCTAssertEqual(ArchiveStore.defaultMaxBytes, 64 << 20)
    }

    // MARK: - Temporary files of killed saves

    func testTemporaryFileNames() {
        XCTAssertEqual(ArchiveStore.temporaryName(id: id, pid: 42), ".com.example.keeper.lcarchive.42.tmp")
        for name in [".com.example.keeper.lcarchive.42.tmp", ".a.lcarchive.1.tmp", ".x.lcarchive.lcarchive.7.tmp"] {
            XCTAssertTrue(ArchiveStore.isTemporaryName(name), name)
        }
        for name in ["com.example.keeper.lcarchive", ".com.example.keeper.lcarchive.tmp", "..lcarchive.42.tmp",
                     ".x.lcarchive.4a2.tmp", ".x.lcarchive..tmp", "notes.tmp", ".x.lcarchive.42.tmp.bak", ".lcarchive.42.tmp", "."] {
            XCTAssertFalse(ArchiveStore.isTemporaryName(name), name)
        }
    }

    /// Stale temporary files go; a save in progress (its file locked), other files and folders stay.
    func testStaleTemporaryFilesAreRemovedAndLiveOnesKept() throws {
        let store = ArchiveStore(directory: folder)
        try store.save(["kept": true], id: id)
        let stale = [".\(id).lcarchive.999999.tmp", ".other.lcarchive.12.tmp"]
        for name in stale { XCTAssertTrue(FileManager.default.createFile(atPath: folder + "/" + name, contents: Data("half".utf8))) }
        let untouched = ["notes.tmp", ".x.lcarchive.4a2.tmp", "other.lcarchive"]
        for name in untouched { XCTAssertTrue(FileManager.default.createFile(atPath: folder + "/" + name, contents: Data())) }
        try FileManager.default.createDirectory(atPath: folder + "/.dir.lcarchive.5.tmp", withIntermediateDirectories: false)
        // A save in progress in another process holds the lock on its file.
        let live = folder + "/.live.lcarchive.77.tmp"
        let liveFD = open(live, O_WRONLY | O_CREAT, 0o600)
        XCTAssertGreaterThanOrEqual(liveFD, 0)
        XCTAssertEqual(flock(liveFD, LOCK_EX), 0)

        XCTAssertEqual(store.removeStaleTemporaryFiles().sorted(), stale.sorted())
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: folder))
        XCTAssertEqual(left, Set(untouched + ["\(id).lcarchive", ".dir.lcarchive.5.tmp", ".live.lcarchive.77.tmp"]))
        XCTAssertEqual(try store.load(id: id), ["kept": true])

        // Once that save is gone (its process killed: the kernel drops the lock), its file is stale too.
        close(liveFD)
        XCTAssertEqual(store.removeStaleTemporaryFiles(), [".live.lcarchive.77.tmp"])
        XCTAssertEqual(store.removeStaleTemporaryFiles(), [], "nothing left to remove")
        XCTAssertEqual(ArchiveStore(directory: folder + "/missing").removeStaleTemporaryFiles(), [])
    }

    /// The engine sweeps at launch (before reading archives) and before each round of saves.
    func testTheEngineSweepsAtLaunchAndBeforeSaving() throws {
        var handlers = DelegateHandlers()
        handlers.shouldSaveApplicationState = { _, coder in coder["n"] = 1; return true }
        handlers.shouldRestoreApplicationState = { _, _ in true }
        let stale = folder + "/.\(id).lcarchive.999999.tmp"
        XCTAssertTrue(FileManager.default.createFile(atPath: stale, contents: Data("killed".utf8)))
        let h = try Harness({ $0.archiveDirectory = self.folder }, delegates: [])
        try h.app.addDelegate(handlers, id: id)
        try h.launch()
        XCTAssertFalse(FileManager.default.fileExists(atPath: stale), "removed at launch")
        XCTAssertTrue(FileManager.default.createFile(atPath: stale, contents: Data("killed again".utf8)))
        _ = try h.perform(.home)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder), ["\(id).lcarchive"], "removed before the save")
    }

    /// The launch goes on past a 2 GiB archive (budget 1 s: reading it whole overran it before).
    func testAHugeArchiveAtLaunchIsAnErrorAndTheLaunchGoesOn() throws {
        let path = folder + "/\(id).lcarchive"
        try sparse(path, head: Array(ArchiveFormat.encode(["a": 1]).prefix(ArchiveFormat.headerSize)), size: 1 << 31)
        var handlers = DelegateHandlers()
        var decoded = false
        handlers.shouldSaveApplicationState = { _, _ in true }
        handlers.shouldRestoreApplicationState = { _, _ in true }
        handlers.didDecodeRestorableState = { _, _ in decoded = true }
        let h = try Harness({
            $0.archiveDirectory = self.folder
            $0.budgets.launch = .seconds(1)
        }, delegates: [])
        try h.app.addDelegate(handlers, id: id)
        let trace = try h.perform(.launch())
        XCTAssertEqual(trace[1], "error archive [\(id)] (archive \(path) is corrupt: too large: 2147483648 bytes, the limit is 67108864; not read; launching without it)")
        XCTAssertFalse(decoded)
        XCTAssertEqual(h.app.state, .active)
        XCTAssertFalse(trace.contains { $0.hasPrefix("watchdog") }, "\(trace)")
    }
}
