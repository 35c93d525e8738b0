import Foundation
import Glibc
import XCTest

@testable import AppLifecycle
@testable import archive_writer_child

/// SIGKILL during saves, counted: a real child process (archive-writer-child) saves generation after
/// generation of a 1 MiB archive and reports each one; it is killed with SIGKILL at a random moment,
/// and the archive must then be complete (exactly one generation's content) and no older than the last
/// save it reported. Each trial then sweeps the killed save's temporary file, as a launch does.
///
/// `LIFECYCLE_KILL_TRIALS` sets the number of trials: 200 by default (about 25 s here), 1,000 in
/// `.ci/run`. The result line reads, e.g.:
/// `KillTrialTests: 1000 SIGKILL trials during saves: 0 corrupt archives, 0 reported saves lost (…)`.
final class KillTrialTests: XCTestCase {
    private var folder = ""
    private let id = "com.example.generations"

    /// The trials to run: `LIFECYCLE_KILL_TRIALS` (1 to 100000), else 200.
    static var trials: Int {
        guard let text = ProcessInfo.processInfo.environment["LIFECYCLE_KILL_TRIALS"] else { return 200 }
        guard let count = Int(text), (1...100_000).contains(count) else {
            XCTFail("LIFECYCLE_KILL_TRIALS must be a number from 1 to 100000, not '\(text)'")
            return 200
        }
        return count
    }

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("KillTrialTests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: folder)
    }

    func testSIGKILLDuringSavesNeverCorruptsAnArchiveNorLosesAReportedSave() throws {
        let child = try archiveWriterChild()
        let store = ArchiveStore(directory: folder)
        let trials = Self.trials
        var corrupt = 0
        var lost = 0
        var midSave = 0  // kills that left a temporary file: between its creation and the rename
        var unreported = 0  // kills after a save's rename, before it was reported
        var nextGeneration: Int64 = 1
        let started = Date()
        for trial in 1...trials {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: child)
            process.arguments = [folder, id, String(nextGeneration)]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            var output = ChildOutput(fd: pipe.fileHandleForReading.fileDescriptor)
            let saved = output.read(seconds: 120) { !$0.isEmpty && $0.contains("\n") }
            if saved { usleep(UInt32.random(in: 0...50_000)) }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let ended = output.readToEnd(seconds: 10)
            try? pipe.fileHandleForReading.close()
            guard saved, ended else {
                return XCTFail("trial \(trial): the child reported no save within 120 s, or its output did not end (status \(process.terminationStatus))")
            }
            XCTAssertEqual(process.terminationReason, .uncaughtSignal, "trial \(trial)")
            XCTAssertEqual(process.terminationStatus, SIGKILL, "trial \(trial)")
            let reported = output.lines(starting: "saved ").compactMap { Int64($0) }
            guard let last = reported.last, reported == Array(nextGeneration..<(nextGeneration + Int64(reported.count))) else {
                return XCTFail("trial \(trial): the child reported \(output.text.debugDescription)")
            }

            // The killed save's temporary file (if the kill landed in one) is stale: the sweep a launch
            // makes removes it and nothing else.
            let swept = store.removeStaleTemporaryFiles()
            XCTAssertLessThanOrEqual(swept.count, 1, "trial \(trial): swept \(swept)")
            midSave += swept.count
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder), ["\(id).lcarchive"], "trial \(trial)")

            let generation: Int64
            do {
                guard let values = try store.load(id: id), case .int(let number)? = values["generation"],
                      values == generationFixture(number) else {
                    corrupt += 1
                    XCTFail("trial \(trial): the archive is missing or is not one generation's content")
                    continue
                }
                generation = number
            } catch {
                corrupt += 1
                XCTFail("trial \(trial): load failed after SIGKILL: \(error)")
                continue
            }
            // The last reported save, or the one after it (renamed into place, killed before reporting).
            if generation < last {
                lost += 1
                XCTFail("trial \(trial): generation \(last) was reported saved, the archive holds \(generation)")
            } else if generation > last + 1 {
                corrupt += 1
                XCTFail("trial \(trial): generation \(generation) was never started (last reported \(last))")
            } else if generation == last + 1 {
                unreported += 1
            }
            nextGeneration = max(last, generation) + 1
        }
        let seconds = Date().timeIntervalSince(started)
        print("KillTrialTests: \(trials) SIGKILL trials during saves: \(corrupt) corrupt archives, \(lost) reported saves lost "
              + "(\(midSave) killed between the temporary file and the rename, \(unreported) after a save's rename before its report; "
              + "\(nextGeneration - 1) generations saved; \(String(format: "%.1f", seconds)) s)")
        XCTAssertEqual(corrupt, 0, "corrupt archives")
        XCTAssertEqual(lost, 0, "reported saves lost")
        XCTAssertGreaterThan(midSave, 0, "no kill landed inside a save; the trials proved nothing")
    }
}
