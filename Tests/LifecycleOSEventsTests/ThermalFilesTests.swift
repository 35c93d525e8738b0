@preconcurrency import Glibc
import Foundation
import TestSupport
import XCTest

@testable import LifecycleOSEvents

/// How a thermal zone's files are read (`ThermalZoneSource.word` and `number`, through `WholeFile`):
/// the first line, within a sysfs attribute's page, never waiting on a FIFO put where a sensor's file is.
final class ThermalFilesTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws { folder = try CBuild.temporaryFolder("thermal-files") }
    override func tearDown() { try? FileManager.default.removeItem(atPath: folder) }

    private func file(_ name: String, _ text: String) -> String {
        let path = folder + "/" + name
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
        return path
    }

    func testASensorsFileGivesItsFirstLineWithinAPageAndNothingElse() throws {
        XCTAssertEqual(ThermalZoneSource.word(file("type", "passive\n")), "passive")
        XCTAssertEqual(ThermalZoneSource.word(file("bare", "critical")), "critical")
        XCTAssertEqual(ThermalZoneSource.word(file("two", "hot\nsecond line\n")), "hot")
        XCTAssertEqual(ThermalZoneSource.number(file("temp", "45000\n")), 45000)
        XCTAssertEqual(ThermalZoneSource.number(file("negative", "-5000\n")), -5000)
        XCTAssertEqual(ThermalZoneSource.word(file("sixty-three", String(repeating: "x", count: 63) + "\n")), String(repeating: "x", count: 63))
        // Refused: empty, a first line over 63 bytes, more than a page, not a number, missing.
        XCTAssertNil(ThermalZoneSource.word(file("empty", "")))
        XCTAssertNil(ThermalZoneSource.word(file("long", String(repeating: "x", count: 64) + "\n")))
        XCTAssertNil(ThermalZoneSource.word(file("page", "45000\n" + String(repeating: "\n", count: 4096))))
        XCTAssertNil(ThermalZoneSource.number(file("words", "warm\n")))
        XCTAssertNil(ThermalZoneSource.number(file("big", "1234567890123\n")))
        XCTAssertNil(ThermalZoneSource.word(folder + "/missing"))
        // A FIFO with no writer: opened without blocking, read empty, so nil at once.
        let fifo = folder + "/fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let started = Date()
        XCTAssertNil(ThermalZoneSource.word(fifo))
        XCTAssertLessThan(Date().timeIntervalSince(started), 1)
    }
}
