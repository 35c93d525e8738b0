import AppLifecycle
import Foundation
@testable import PluginHost
import XCTest

/// The isolation protocol's sizes: frames carry every dictionary and archive the host accepts, and
/// neither side builds a frame the other refuses (`FrameWriter` takes such a frame back whole, naming
/// the rule; the names it introduced are sent again with the next frame that names them).
final class FrameLimitsTests: XCTestCase {
    /// `levels` dictionaries nested under "d".
    static func chain(_ levels: Int) -> UserInfo {
        var info: UserInfo = ["leaf": 1]
        for _ in 0..<levels { info = ["d": .dict(info)] }
        return info
    }

    /// Reads the frames `writer` holds, as the other side reads them.
    static func frames(_ writer: FrameWriter) throws -> [FrameReader] {
        var readers: [FrameReader] = []
        var start = 0
        while start < writer.bytes.count {
            let size = Int(writer.bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: start, as: UInt32.self) })
            let kind = try XCTUnwrap(FrameKind(rawValue: writer.bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: start + 4, as: UInt16.self) }))
            readers.append(FrameReader(writer.bytes, at: start, size: size, kind: kind))
            start += size
        }
        return readers
    }

    /// A stream's usual notification frame, written whole in one step, is byte for byte the frame the
    /// general path builds field by field; a custom name that has not crossed yet is not written that
    /// way (its text must go with it), and the general path then sends it.
    func testThePlainNotificationFrameIsTheGeneralPathsBytes() throws {
        let custom = try NotificationName("com.example.tick")
        var general = FrameWriter()
        general.begin(.notify, word: 0x0102_0304_0506_0708, state: 0x82)
        general.name(custom)  // introduces the name: its text crosses once
        general.u64(77)
        general.u8(0)
        general.dictionary(nil)
        XCTAssertTrue(general.end())
        var plain = general  // both writers have sent the name's text once: from now on it goes by id
        let word: UInt64 = 0xFEED_0000_0000_0001, sender: UInt64 = 0xDEAD_BEEF_0000_0009
        general.begin(.notify, word: word, state: 0x82)
        general.name(custom)
        general.u64(sender)
        general.u8(0)
        general.dictionary(nil)
        XCTAssertTrue(general.end())
        XCTAssertTrue(plain.plainNotificationFrame(word: word, state: 0x82, nameID: custom.id, sender: sender))
        XCTAssertEqual(plain.bytes, general.bytes)
        var reader = try XCTUnwrap(Self.frames(plain).last)
        XCTAssertEqual(reader.kind, .notify)
        XCTAssertEqual(reader.word, 0xFEED_0000_0000_0001)
        XCTAssertEqual(reader.state, 0x82)
        XCTAssertEqual(try reader.name().id, custom.id)
        XCTAssertEqual(try reader.u64("sender"), 0xDEAD_BEEF_0000_0009)
        XCTAssertEqual(try reader.u8("scene flag"), 0)
        XCTAssertNil(try reader.dictionary("userInfo"))
        try reader.finish()
        // The runner reads it in one step; a frame with a dictionary, or whose name carries its text,
        // it reads field by field (nothing taken).
        var whole = try XCTUnwrap(Self.frames(plain).last)
        let fields = try XCTUnwrap(whole.plainNotification())
        XCTAssertEqual(fields.nameID, custom.id)
        XCTAssertEqual(fields.sender, 0xDEAD_BEEF_0000_0009)
        try whole.finish()
        var first = try XCTUnwrap(Self.frames(plain).first)
        XCTAssertNil(first.plainNotification(), "its name carries its text")
        XCTAssertEqual(try first.name().text, "com.example.tick")
        var withInfo = FrameWriter()
        withInfo.begin(.notify, word: 3, state: 2)
        withInfo.name(.didBecomeActive)
        withInfo.u64(0)
        withInfo.u8(0)
        withInfo.dictionary([:])
        XCTAssertTrue(withInfo.end())
        var info = try XCTUnwrap(Self.frames(withInfo).first)
        XCTAssertNil(info.plainNotification())
        XCTAssertEqual(try info.name().id, NotificationName.didBecomeActive.id)

        // A standard name goes by id: written. A custom name never sent: refused, nothing written.
        var fresh = FrameWriter()
        XCTAssertTrue(fresh.plainNotificationFrame(word: 1, state: 2, nameID: NotificationName.didBecomeActive.id, sender: 0))
        let before = fresh.bytes
        XCTAssertFalse(fresh.plainNotificationFrame(word: 1, state: 2, nameID: custom.id, sender: 0))
        XCTAssertEqual(fresh.bytes, before)
        XCTAssertEqual(try Self.frames(fresh).count, 1)
    }

    func testFramesAreAsLargeAsTheLargestArchiveAndItsFields() {
        XCTAssertEqual(IsolationProtocol.maximumFrame, 68_157_440)
        XCTAssertEqual(UserInfoLimits.maximumBytes + ArchiveFormat.headerSize, ArchiveStore.defaultMaxBytes)
        // The largest frame a host builds around the largest dictionary: a delegate call with a scene,
        // two strings and no annotation; five strings of 64 KiB at most, and the fixed fields.
        let fields = 16 + 1 + 4 + 4 + 1 + 2 * (4 + IsolationProtocol.maximumString) + (8 + 3 * (4 + IsolationProtocol.maximumString) + 2) + 8
        XCTAssertLessThanOrEqual(UserInfoLimits.maximumBytes + fields, IsolationProtocol.maximumFrame)
    }

    func testTheLargestDictionaryCrossesBothWaysAndOneByteMoreIsNeverBuilt() throws {
        var largest = UserInfo()
        largest["blob"] = .bytes([UInt8](repeating: 0xA5, count: UserInfoLimits.maximumBytes - 21))
        XCTAssertEqual(largest.encodedSize, UserInfoLimits.maximumBytes)
        var writer = FrameWriter()
        writer.begin(.result, word: 9)
        writer.u8(0)
        writer.dictionary(largest)
        writer.u8(0)
        XCTAssertTrue(writer.end())
        var reader = try XCTUnwrap(Self.frames(writer).first)
        _ = try reader.u8("answer")
        XCTAssertEqual(try reader.dictionary("archive"), largest)
        XCTAssertEqual(try reader.u8("flag"), 0)
        try reader.finish()

        var over = largest
        over["x"] = true
        var refused = FrameWriter()
        refused.begin(.observe, word: 1)
        refused.u32(2)
        refused.u64(0)
        XCTAssertTrue(refused.end())
        let before = refused.bytes
        refused.begin(.post)
        refused.u32(2)
        refused.u64(0)
        refused.dictionary(over)
        XCTAssertFalse(refused.end())
        XCTAssertEqual(refused.refusal, "a dictionary of 67108863 bytes (at most 67108844)")
        XCTAssertEqual(refused.bytes, before, "the frame is taken back whole; the one before stays")
    }

    func testFromTheHostAFrameMayCarryTheHostsEnvelopesButNoDeeperAndNoLongerStrings() throws {
        var writer = FrameWriter()
        writer.begin(.delegate, word: 1)
        writer.dictionary(Self.chain(IsolationProtocol.envelopeDepth + 64))
        XCTAssertTrue(writer.end(), "64 levels and the host's envelopes")
        var reader = try XCTUnwrap(Self.frames(writer).first)
        XCTAssertEqual(try reader.dictionary("argument")?.depth, 67)
        writer.begin(.delegate, word: 2)
        writer.dictionary(Self.chain(68))
        XCTAssertFalse(writer.end())
        XCTAssertEqual(writer.refusal, "a dictionary 68 levels deep (at most 67)")
        writer.begin(.reply, word: 3)
        writer.string(String(repeating: "x", count: IsolationProtocol.maximumString + 1))
        XCTAssertFalse(writer.end())
        XCTAssertEqual(writer.refusal, "a string of 65537 bytes (at most 65536)")
        // Free text is cut to 64 KiB at a character's boundary instead: it always crosses.
        writer.begin(.reply, word: 4)
        writer.text(String(repeating: "é", count: 40_000))
        XCTAssertTrue(writer.end())
        XCTAssertEqual(try Self.frames(writer).count, 2)
        var text = try Self.frames(writer)[1]
        XCTAssertEqual(try text.string("message"), String(repeating: "é", count: 32_768))
        // From a plugin's process, 65 levels are refused before the frame is sent.
        writer.begin(.post)
        writer.dictionary(Self.chain(65))
        XCTAssertFalse(writer.end())
        XCTAssertEqual(writer.refusal, "a dictionary 65 levels deep (at most 64)")
    }

    func testANameIntroducedByAFrameTakenBackIsSentWithItsTextAgain() throws {
        let name = try NotificationName("com.example.withdrawn")
        var writer = FrameWriter()
        writer.begin(.post)
        writer.name(name)
        writer.u64(0)
        writer.dictionary(Self.chain(65))
        XCTAssertFalse(writer.end())
        XCTAssertTrue(writer.bytes.isEmpty)
        writer.begin(.post)
        writer.name(name)
        writer.u64(0)
        writer.dictionary(nil)
        XCTAssertTrue(writer.end())
        var reader = try XCTUnwrap(Self.frames(writer).first)
        let field = try reader.name()
        XCTAssertEqual(field.id, name.id)
        XCTAssertEqual(field.text, "com.example.withdrawn", "its text again: the first frame never left")
        XCTAssertTrue(writer.namesSent.contains(name.id))
    }
}
