import Foundation
import Synchronization
@testable import PluginHost
import XCTest

/// The scan registry's file, read as the user's: every entry kind comes back from its line with awkward
/// text (tabs, newlines, backslashes, non-ASCII, bytes that are not UTF-8), each malformed line is
/// dropped alone, and a file that is not a regular file is never waited on.
final class PluginScanRegistryTests: XCTestCase {
    private func parse(_ text: String) -> [String: PluginScanRegistry.Known] { parse(Array(text.utf8)) }

    private func parse(_ bytes: [UInt8]) -> [String: PluginScanRegistry.Known] { PluginScanRegistry.parse(bytes[...]) }

    private func key(_ path: String, _ size: Int64 = 15_424, _ modified: Int64 = 1_795_889_251_484_063_747) -> PluginScanRegistry.Key {
        PluginScanRegistry.Key(path: path, size: size, modified: modified)
    }

    func testEveryEntryKindComesBackFromItsLineWithAwkwardText() {
        let awkward = "tab\there, line\nthere, back\\slash, \\t not a tab, é 🚀 a\u{301}"
        let entries: [PluginScanRegistry.Known] = [
            .init(key: key("/p/clean.so"), entry: .clean(id: "com.example.clean")),
            .init(key: key("/p/\(awkward).so", 0, -5), entry: .crashed(awkward, id: awkward)),
            .init(key: key("/p/crashed-early.so", .max, .min), entry: .crashed("killed by SIGSEGV while opening", id: nil)),
            .init(key: key("/p/exited.so", 1, 2), entry: .exited("exited with status 3 while running init", id: "com.example.exit")),
            .init(key: key("/p/exited-early.so"), entry: .exited(awkward, id: nil)),
        ]
        let text = PluginScanRegistry.header + "\n" + entries.map(PluginScanRegistry.line).joined()
        XCTAssertEqual(text.split(separator: "\n").count, 1 + entries.count, "one line an entry: \(text)")
        let read = parse(text)
        XCTAssertEqual(read.count, entries.count)
        for entry in entries { XCTAssertEqual(read[entry.key.path], entry, entry.key.path) }
    }

    func testEachMalformedLineIsDroppedAloneAndALaterLineOfAPathWins() {
        let good = "/p/good.so\t10\t20\tclean\tcom.example.good"
        let lines = [
            PluginScanRegistry.header,
            "",  // empty lines are skipped
            good,
            "relative.so\t10\t20\tclean\tcom.example.relative",  // not an absolute path
            "/p/size.so\t1x\t20\tclean\tcom.example.size",  // not a number
            "/p/empty-size.so\t\t20\tclean\tcom.example.size",
            "/p/sign-only.so\t-\t20\tclean\tcom.example.size",
            "/p/overflow.so\t10\t9223372036854775808\tclean\tcom.example.overflow",  // Int64.max + 1
            "/p/state.so\t10\t20\tfine\tcom.example.state",  // unknown state
            "/p/few.so\t10\t20\tclean",  // four fields
            "/p/many.so\t10\t20\tcrashed\twhy\tcom.example.many\textra",  // seven fields
            "/p/escape.so\t10\t20\tcrashed\tbad \\x escape",
            "/p/trailing.so\t10\t20\tcrashed\tends in \\",
            "/p/bad-id.so\t10\t20\tcrashed\twhy\tcom.example.\\q",  // the sixth field does not unescape
            "/p/clean-six.so\t10\t20\tclean\tcom.example.clean\tsixth",  // a clean entry has five fields
            "/p/nul\u{0}x.so\t10\t20\tclean\tcom.example.nul",  // a NUL in the path names another file
            "/p/again.so\t1\t1\tcrashed\tthe first line of it",
            "/p/again.so\t2\t2\tclean\tcom.example.again",
            "/p/plus.so\t+7\t-20\tclean\tcom.example.plus",
        ]
        let read = parse(lines.joined(separator: "\n") + "\n")
        XCTAssertEqual(Set(read.keys), ["/p/good.so", "/p/again.so", "/p/plus.so"])
        XCTAssertEqual(read["/p/good.so"], .init(key: key("/p/good.so", 10, 20), entry: .clean(id: "com.example.good")))
        XCTAssertEqual(read["/p/again.so"], .init(key: key("/p/again.so", 2, 2), entry: .clean(id: "com.example.again")))
        XCTAssertEqual(read["/p/plus.so"], .init(key: key("/p/plus.so", 7, -20), entry: .clean(id: "com.example.plus")))
    }

    func testAFileWithoutTheHeaderFirstIsEmptyAndTextThatIsNotUTF8IsRepaired() {
        XCTAssertEqual(parse("/p/good.so\t10\t20\tclean\tcom.example.good\n"), [:])
        XCTAssertEqual(parse("lifecycle-host plugin registry 2\n/p/good.so\t10\t20\tclean\tcom.example.good\n"), [:])
        XCTAssertEqual(parse(""), [:])
        var bytes = Array((PluginScanRegistry.header + "\n/p/").utf8) + [0xFF, 0xFE] + Array(".so\t10\t20\tcrashed\t".utf8) + [0xC3]
        bytes += Array("\n".utf8)
        let read = parse(bytes)
        XCTAssertEqual(read["/p/\u{FFFD}\u{FFFD}.so"], .init(key: key("/p/\u{FFFD}\u{FFFD}.so", 10, 20), entry: .crashed("\u{FFFD}", id: nil)))
        // A carriage return is a byte of the field, not the line's end (the writer never writes one).
        let crlf = parse(PluginScanRegistry.header + "\n/p/crlf.so\t10\t20\tclean\tcom.example.crlf\r\n")
        XCTAssertEqual(crlf["/p/crlf.so"]?.entry, .clean(id: "com.example.crlf\r"))
    }

    /// The registry saved and read again: what was recorded, a path recorded twice once (the later), a
    /// file that is gone forgotten; a FIFO at the registry's place is read as empty at once, not waited on.
    func testARegistrySavedIsReadBackAndAFIFOIsNotWaitedOn() throws {
        let folder = NSTemporaryDirectory() + "lc-registry-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plugin = folder + "/plugin\twith tab.so"
        let other = folder + "/other.so"
        for path in [plugin, other] { XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("x".utf8))) }
        let file = folder + "/cache/lifecycle-host/plugin-registry"
        var registry = PluginScanRegistry(file: file)
        let first = try XCTUnwrap(PluginScanRegistry.key(plugin))
        registry.record(key(plugin, 1, 1), .crashed("the old file", id: nil))
        registry.record(first, .clean(id: "com.example.tab"))
        registry.record(try XCTUnwrap(PluginScanRegistry.key(other)), .exited("exited with status 1 while running init", id: "com.example.other"))
        registry.record(key(folder + "/gone.so"), .clean(id: "com.example.gone"))
        XCTAssertNil(registry.save())

        let read = PluginScanRegistry(file: file)
        XCTAssertEqual(read.entry(first), .clean(id: "com.example.tab"))
        XCTAssertNil(read.entry(key(plugin, 1, 1)), "the path's earlier file was replaced")
        XCTAssertEqual(read.entry(try XCTUnwrap(PluginScanRegistry.key(other))), .exited("exited with status 1 while running init", id: "com.example.other"))
        XCTAssertEqual(Set(read.known.keys), [plugin, other], "the file that is gone is forgotten")
        XCTAssertEqual(PluginScanRegistry(file: file, forgetting: true).known, [:])

        try FileManager.default.removeItem(atPath: file)
        XCTAssertEqual(mkfifo(file, 0o600), 0)
        // Read on a thread of its own: a read that waits for a writer is a failure at the timeout, not
        // a hung test (a writer then opens the FIFO, which lets that read end).
        let readAtFIFO = expectation(description: "the registry at a FIFO is read without waiting")
        let entries = Mutex<[String: PluginScanRegistry.Known]?>(nil)
        Thread.detachNewThread {
            let registry = PluginScanRegistry(file: file)
            entries.withLock { $0 = registry.known }
            readAtFIFO.fulfill()
        }
        if XCTWaiter().wait(for: [readAtFIFO], timeout: 5) != .completed {
            XCTFail("reading a registry that is a FIFO waited for a writer")
            let writer = open(file, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
            for _ in 0..<500 where entries.withLock({ $0 }) == nil { usleep(10_000) }
        }
        XCTAssertEqual(entries.withLock { $0 }, [:])

        // A FIFO at the temporary file's place: the save is refused at once, with the reason, not
        // left waiting for a reader; the registry is unchanged.
        try FileManager.default.removeItem(atPath: file)
        XCTAssertNil(registry.save())
        let temporary = file + ".\(getpid()).tmp"
        XCTAssertEqual(mkfifo(temporary, 0o600), 0)
        let saved = expectation(description: "a save whose temporary is a FIFO ends at once")
        let failure = Mutex<String??>(nil)
        let saving = registry
        Thread.detachNewThread {
            let words = saving.save()
            failure.withLock { $0 = .some(words) }
            saved.fulfill()
        }
        if XCTWaiter().wait(for: [saved], timeout: 5) != .completed {
            XCTFail("saving the registry waited for a reader of a FIFO")
            let reader = open(temporary, O_RDONLY | O_NONBLOCK)
            for _ in 0..<500 where failure.withLock({ $0 }) == nil { usleep(10_000) }
            if reader >= 0 { close(reader) }
        }
        XCTAssertEqual(failure.withLock { $0 }, .some("cannot write \(temporary): No such device or address"))
        XCTAssertEqual(PluginScanRegistry(file: file).entry(first), .clean(id: "com.example.tab"), "the registry saved before is kept")
    }
}
