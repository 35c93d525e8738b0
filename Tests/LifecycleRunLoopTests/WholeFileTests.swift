import Foundation
import Glibc
import XCTest

import LifecycleRunLoop

/// `WholeFile.read`, the one bounded whole-file read, against real files: regular files on both sides
/// of its first buffer, a sparse file refused from its size, `/proc` files whose size says 0, an endless
/// device, a FIFO, a symbolic link, a missing file.
final class WholeFileTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        folder = NSTemporaryDirectory() + "lc-wholefile-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: folder)
    }

    private func file(_ name: String, _ bytes: [UInt8]) -> String {
        let path = folder + "/" + name
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        return path
    }

    private func problem(_ body: () throws(WholeFileProblem) -> [UInt8]) -> WholeFileProblem? {
        do throws(WholeFileProblem) {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }

    func testRegularFilesAreReadWholeUpToTheLimitAndOneByteMoreIsRefusedFromTheSize() throws {
        for size in [0, 1, 4095, 4096, 4097, 100_000] {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
            let path = file("f\(size)", bytes)
            XCTAssertEqual(try WholeFile.read(path, atMost: size), bytes, "size \(size)")
            XCTAssertEqual(try WholeFile.read(path, atMost: size + 10, regularOnly: true), bytes, "size \(size)")
            if size > 0 {
                XCTAssertEqual(problem { () throws(WholeFileProblem) in try WholeFile.read(path, atMost: size - 1) },
                               .tooLarge(bytes: UInt64(size), limit: size - 1), "size \(size)")
            }
        }
    }

    func testASparseFileOverTheLimitIsRefusedBeforeAnythingIsRead() throws {
        let path = file("sparse", [])
        XCTAssertEqual(truncate(path, 8 << 30), 0)  // 8 GiB of nothing: reading it would take seconds and memory
        let started = Date()
        XCTAssertEqual(problem { () throws(WholeFileProblem) in try WholeFile.read(path, atMost: 1 << 20) },
                       .tooLarge(bytes: 8 << 30, limit: 1 << 20))
        XCTAssertLessThan(Date().timeIntervalSince(started), 1)
    }

    func testFilesWhoseSizeSaysNothingAreReadToTheirEndAndRefusedPastTheLimit() throws {
        // /proc/self/status says its size is 0 and holds ~1.5 KiB; /proc/self/maps grows past 4 KiB here.
        let status = try WholeFile.read("/proc/self/status", atMost: 1 << 20)
        let text = String(decoding: status, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("Name:\t"), text)
        XCTAssertTrue(text.contains("\nPid:\t\(getpid())\n"), text)
        XCTAssertEqual(problem { () throws(WholeFileProblem) in try WholeFile.read("/proc/self/status", atMost: 10) },
                       .tooLarge(bytes: nil, limit: 10))
        let maps = try WholeFile.read("/proc/self/maps", atMost: 1 << 24)
        XCTAssertGreaterThan(maps.count, 4096, "a buffer grown past its first page")
        XCTAssertEqual(maps.last, 0x0A)
        // An endless device: at most limit + 1 bytes are read, then it is refused.
        XCTAssertEqual(problem { () throws(WholeFileProblem) in try WholeFile.read("/dev/zero", atMost: 100_000) },
                       .tooLarge(bytes: nil, limit: 100_000))
        XCTAssertEqual(problem { () throws(WholeFileProblem) in try WholeFile.read("/dev/zero", atMost: 0) }, .tooLarge(bytes: nil, limit: 0))
        XCTAssertEqual(try WholeFile.read(file("empty", []), atMost: 0), [])
    }

    func testWhatIsNotARegularFileIsRefusedWithoutWaitingWhenAskedAndFailuresNameTheirCall() throws {
        let fifo = folder + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let started = Date()
        XCTAssertEqual(problem { () throws(WholeFileProblem) in try WholeFile.read(fifo, atMost: 100, flags: O_NONBLOCK, regularOnly: true) },
                       .notRegular(mode: UInt32(S_IFIFO)))
        XCTAssertLessThan(Date().timeIntervalSince(started), 1, "no writer: a blocking open would wait for ever")
        XCTAssertEqual(problem { () throws(WholeFileProblem) in try WholeFile.read(folder, atMost: 100, regularOnly: true) },
                       .notRegular(mode: UInt32(S_IFDIR)))

        let target = file("target", Array("text".utf8))
        let link = folder + "/link"
        XCTAssertEqual(symlink(target, link), 0)
        XCTAssertEqual(try WholeFile.read(link, atMost: 100), Array("text".utf8))
        let refused = problem { () throws(WholeFileProblem) in try WholeFile.read(link, atMost: 100, flags: O_NOFOLLOW) }
        XCTAssertEqual(refused, .system(SystemCallError("open", errno: ELOOP)))
        let missing = problem { () throws(WholeFileProblem) in try WholeFile.read(folder + "/missing", atMost: 100) }
        XCTAssertEqual(missing, .system(SystemCallError("open", errno: ENOENT)))
        guard case .system(let failure)? = missing else { return XCTFail("\(String(describing: missing))") }
        XCTAssertEqual(failure.description, "open failed: No such file or directory (errno 2)")
        // A folder without regularOnly: opened, then its read fails, named.
        XCTAssertEqual(problem { () throws(WholeFileProblem) in try WholeFile.read(folder, atMost: 100) },
                       .system(SystemCallError("read", errno: EISDIR)))
    }
}
