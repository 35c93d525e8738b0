import Foundation
import HostInput
import TestSupport
import XCTest

/// The recording file (docs/recording.md, "The format"): SHA-256 against `sha256sum`, the ELF
/// build-id against `readelf -n`, every entry through the writer and the reader with awkward text,
/// and each kind of bad file refused with its cause and its words.
final class RecordingFormatTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws { folder = try CBuild.temporaryFolder("recording-format") }
    override func tearDown() { try? FileManager.default.removeItem(atPath: folder) }

    /// The first word of `sha256sum FILE`.
    private func sha256sum(_ path: String) throws -> String {
        let run = try CBuild.run("/usr/bin/sha256sum", [path])
        XCTAssertEqual(run.status, 0, run.output)
        return String(run.output.prefix(64))
    }

    func testSHA256MatchesSha256sumWhateverThePieces() throws {
        let inputs: [[UInt8]] = [[], Array("abc".utf8), [UInt8](repeating: 0x61, count: 1_000_000),
                                 (0..<(64 * 3 + 17)).map { UInt8(truncatingIfNeeded: $0 * 7) }, [UInt8](repeating: 1, count: 55),
                                 [UInt8](repeating: 2, count: 56), [UInt8](repeating: 3, count: 64)]
        for (index, bytes) in inputs.enumerated() {
            let path = folder + "/input\(index)"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            var whole = SHA256()
            whole.update(bytes)
            var pieces = SHA256()
            var offset = 0, size = 1
            while offset < bytes.count {
                let end = min(bytes.count, offset + size)
                pieces.update(Array(bytes[offset..<end]))
                offset = end
                size = size * 3 % 97 + 1
            }
            let expected = try sha256sum(path)
            XCTAssertEqual(SHA256.hex(whole.finalized()), expected, "\(bytes.count) bytes")
            XCTAssertEqual(SHA256.hex(pieces.finalized()), expected, "\(bytes.count) bytes in pieces")
        }
        XCTAssertEqual(SHA256.hex({ var h = SHA256(); h.update("abc"); return h.finalized() }()),
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    func testAPluginFilesIdentityIsItsSizeHashAndBuildID() throws {
        let source = folder + "/one.c"
        try "int one(void) { return 1; }\n".write(toFile: source, atomically: true, encoding: .utf8)
        let withID = folder + "/with.so", without = folder + "/without.so", cut = folder + "/cut.so"
        for (output, flag) in [(withID, "-Wl,--build-id=sha1"), (without, "-Wl,--build-id=none")] {
            let build = try CBuild.run("/usr/bin/cc", mergingStandardError: true, ["-shared", "-fPIC", flag, "-o", output, source])
            XCTAssertEqual(build.status, 0, build.output)
        }
        let readelf = try CBuild.run("/usr/bin/readelf", ["-n", withID])
        XCTAssertEqual(readelf.status, 0, readelf.output)
        let buildID = try XCTUnwrap(readelf.output.split(separator: "\n").first { $0.contains("Build ID:") }?
            .split(separator: " ").last.map(String.init), readelf.output)

        let identity = try PluginFileIdentity.of(path: withID)
        XCTAssertEqual(identity, PluginFileIdentity(path: withID, size: UInt64(try FileManager.default.attributesOfItem(atPath: withID)[.size] as! Int),
                                                    sha256: try sha256sum(withID), buildID: buildID))
        XCTAssertNil(try PluginFileIdentity.of(path: without).buildID)
        // A hostile file: the ELF header of a real one and nothing else.
        try Data(try Data(contentsOf: URL(fileURLWithPath: withID)).prefix(100)).write(to: URL(fileURLWithPath: cut))
        let truncated = try PluginFileIdentity.of(path: cut)
        XCTAssertNil(truncated.buildID)
        XCTAssertEqual(truncated.size, 100)
        XCTAssertThrowsError(try PluginFileIdentity.of(path: folder + "/missing.so")) { error in
            XCTAssertEqual((error as? RecordingError)?.message, "\(folder)/missing.so: cannot be read: No such file or directory")
        }
    }

    /// Every entry, with tabs, line feeds, backslashes, "-", empty text, control bytes and non-ASCII.
    static let awkward = ["", "-", "\\", "a\tb", "line\nfeed\r", "x\u{01}\u{7F}y", "é ✓ 雪", "\\t literal", "--", "- ", "\\-"]

    static var everyEntry: [RecordingEntry] {
        var entries: [RecordingEntry] = [.clock(nanoseconds: 0), .clock(nanoseconds: UInt64.max), .scriptEnd, .stdinClosed, .finishCheck,
                                         .os(command: "memory-warning warning", origin: .signal(10, sender: 4321)), .os(command: "home", origin: .signal(20, sender: 0)),
                                         .os(command: "memory-warning critical", origin: .pressure(critical: true)),
                                         .os(command: "memory-warning warning", origin: .pressure(critical: false)),
                                         .os(command: "time-change", origin: .clock)]
        for text in awkward {
            entries += [.script(location: "s.scenario:\(text)", text: text), .typed(text), .socket(request: text, response: text + "!"),
                        .os(command: text, origin: .other(description: text)), .foreign(text),
                        .trace(RecordedTraceLine(seq: 7, time: 123_456_789, kind: text, name: text, state: "active", plugin: text,
                                                 detail: text, scene: text)),
                        .trace(RecordedTraceLine(seq: UInt64.max, time: 0, kind: "k", name: text, state: "s", plugin: nil, detail: nil, scene: nil))]
        }
        return entries
    }

    private func write(_ path: String, status: Int32 = 3, entries: [RecordingEntry] = RecordingFormatTests.everyEntry) throws {
        let writer = try RecordingWriter(path: path, hostVersion: "1.7.0", arguments: ["--plugin", "a b.so", "-", ""] + Self.awkward,
                                         plugins: [PluginFileIdentity(path: "/p/a\tb.so", size: 12, sha256: String(repeating: "ab", count: 32), buildID: nil),
                                                   PluginFileIdentity(path: "/p/c.so", size: 0, sha256: String(repeating: "0", count: 64), buildID: "deadbeef")])
        for entry in entries { writer.append(entry) }
        try writer.finish(status: status)
    }

    func testEveryEntryRoundTripsThroughTheFile() throws {
        let path = folder + "/round.recording"
        try write(path, status: -2)
        let recording = try Recording.read(path: path)
        XCTAssertEqual(recording.version, 1)
        XCTAssertEqual(recording.hostVersion, "1.7.0")
        XCTAssertEqual(recording.arguments, ["--plugin", "a b.so", "-", ""] + Self.awkward)
        XCTAssertEqual(recording.plugins.map(\.path), ["/p/a\tb.so", "/p/c.so"])
        XCTAssertEqual(recording.plugins.map(\.buildID), [nil, "deadbeef"])
        XCTAssertEqual(recording.entries, Self.everyEntry)
        XCTAssertEqual(recording.status, -2)
        // One record a line: nothing written raw that would split a line or a field.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertEqual(text.split(separator: "\n", omittingEmptySubsequences: false).count, 3 + 2 + Self.everyEntry.count + 1 + 1)
        XCTAssertTrue(text.hasPrefix("lifecycle-recording\t1\nhost\t1.7.0\nargv\t--plugin\ta b.so\t\\-\t\t\t\\-\t\\\\\ta\\tb\tline\\nfeed\\r\tx\\x01\\x7fy\t"))
    }

    /// `text` written to a file, read: its error.
    private func refusal(_ bytes: [UInt8], _ name: String = "bad.recording") -> RecordingError? {
        let path = folder + "/" + name
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        do {
            _ = try Recording.read(path: path)
            return nil
        } catch {
            return error
        }
    }

    private func refusalOf(_ path: String) -> RecordingError? {
        do {
            _ = try Recording.read(path: path)
            return nil
        } catch {
            return error
        }
    }

    func testEachKindOfBadFileIsRefusedWithItsCauseAndWords() throws {
        let good = folder + "/good.recording"
        try write(good, entries: [.clock(nanoseconds: 5), .typed("home"), .trace(RecordedTraceLine(seq: 1, time: 5, kind: "action", name: "home",
                                                                                                  state: "active", plugin: nil, detail: nil, scene: nil))])
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: good)))
        let lines = bytes.split(separator: 10, omittingEmptySubsequences: false).map(Array.init)
        func file(_ lines: [[UInt8]]) -> [UInt8] { Array(lines.joined(separator: [10])) }
        func text(_ s: String) -> [UInt8] { Array(s.utf8) }
        let at = { (name: String) in self.folder + "/" + name }

        XCTAssertThrowsError(try Recording.read(path: at("missing"))) { error in
            XCTAssertEqual((error as? RecordingError)?.cause, .unreadable(errno: ENOENT))
            XCTAssertEqual((error as? RecordingError)?.message, "\(at("missing")): cannot be read: No such file or directory")
        }
        var error = refusal([], "empty")
        XCTAssertEqual(error?.cause, .notARecording)
        XCTAssertEqual(error?.message, "\(at("empty")): not a lifecycle recording (its first line is not 'lifecycle-recording<TAB>VERSION')")
        XCTAssertEqual(refusal(text("#!/bin/sh\necho\n"), "script")?.cause, .notARecording)
        error = refusal(text("lifecycle-recording\t2\n") + [0xFF, 0xFE, 9, 9, 10], "newer")
        XCTAssertEqual(error?.cause, .unsupportedVersion(found: "2"))
        XCTAssertEqual(error?.message, "\(at("newer")): a recording of format version 2; this lifecycle-host reads version 1")

        // Cut: before the end line, and inside the last line.
        error = refusal(file(Array(lines.dropLast(2))) + [10], "cut")
        XCTAssertEqual(error?.cause, .truncated(lines: lines.count - 2))
        XCTAssertEqual(error?.message, "\(at("cut")): truncated: \(lines.count - 2) lines and no end line (was the recorded run killed?)")
        XCTAssertEqual(refusal(Array(bytes.dropLast(5)), "cut2")?.cause, .truncated(lines: lines.count - 2))

        // A byte changed inside a field: the checksum says so.
        var flipped = bytes
        let home = try XCTUnwrap(flipped.indices.first { flipped[$0...].starts(with: text("typed\thome")) }) + 6
        flipped[home] = UInt8(ascii: "H")
        error = refusal(flipped, "flipped")
        XCTAssertEqual(error?.cause, .checksumMismatch)
        XCTAssertEqual(error?.message, "\(at("flipped")): damaged: its checksum does not match its content")

        // Lines that break the format, each at its line.
        let header = Array(lines.prefix(4))
        let entryLine = header.count + 1
        for (line, why) in [("odd\tx", "an unknown record 'odd'"), ("typed\ta\\qb", "an unknown escape '\\q'"),
                            ("typed\ta\\x4", "a \\x escape without two hex digits of a control character"),
                            ("typed\traw\u{01}", "a control character (0x1) not escaped"),
                            ("os\tmemory-warning warning\tsignal\t65\tsignal 65\t1", "signal 65 is not 1 to 64"),
                            ("os\tmemory-warning warning\tsignal\t10\tsignal 10\t-", "field 6 of a 'os' record is absent"),
                            ("os\ttime-change\tclock\t-\tclock\t12", "a clock origin has a value"),
                            ("clock\t-1", "clock '-1' is not a number in range"), ("clock\t18446744073709551616", "clock '18446744073709551616' is not a number in range"),
                            ("typed", "a 'typed' record has 0 fields, not 1"), ("typed\t-", "field 2 of a 'typed' record is absent")] {
            let damaged = file(header + [text(line)] + [text("end\t0\t" + String(repeating: "0", count: 64)), []])
            error = refusal(damaged, "damaged")
            XCTAssertEqual(error?.cause, .damaged(line: entryLine, why: why), line)
            XCTAssertEqual(error?.message, "\(at("damaged")): damaged at line \(entryLine): \(why)", line)
        }
        error = refusal(file(Array(lines.dropLast(2)) + [text("end\t2147483648\t" + String(repeating: "0", count: 64)), []]), "status")
        XCTAssertEqual(error?.cause, .damaged(line: lines.count - 1, why: "status '2147483648' is not a number in range"))
        error = refusal(bytes + text("typed\tmore\n"), "after")
        XCTAssertEqual(error?.cause, .damaged(line: lines.count, why: "a line after the end line"))
        error = refusal(file(header + [text("typed\t" + String(repeating: "x", count: Recording.maxLineBytes)), []]), "long")
        XCTAssertEqual(error?.cause, .damaged(line: entryLine, why: "a line longer than \(Recording.maxLineBytes) bytes"))
        error = refusal(file(header + [[0x74, 0x79, 0x70, 0x65, 0x64, 9, 0xC3]] + [[]]), "utf8")
        XCTAssertEqual(error?.cause, .damaged(line: entryLine, why: "not UTF-8"))

        // Over the size limit: refused from its size, before reading (a sparse file).
        let huge = at("huge")
        _ = FileManager.default.createFile(atPath: huge, contents: Data(text("lifecycle-recording\t1\n")))
        XCTAssertEqual(truncate(huge, off_t(Recording.maxFileBytes + 1)), 0)
        error = refusalOf(huge)
        XCTAssertEqual(error?.cause, .tooLarge(bytes: Recording.maxFileBytes + 1, limit: Recording.maxFileBytes))
        XCTAssertEqual(error?.message, "\(huge): \(Recording.maxFileBytes + 1) bytes, more than the \(Recording.maxFileBytes) allowed")

        // Not a regular file: a FIFO (nobody writes to it) is refused at once, not waited on; a folder too.
        let fifo = at("fifo.recording")
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let started = Date()
        error = refusalOf(fifo)
        XCTAssertEqual(error?.cause, .notRegularFile)
        XCTAssertEqual(error?.message, "\(fifo): not a regular file")
        XCTAssertLessThan(Date().timeIntervalSince(started), 2)
        XCTAssertEqual(refusalOf(folder)?.cause, .notRegularFile)
    }
}
