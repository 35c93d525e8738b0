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

    /// The runner's batch takes a stream's plain notifications straight from its channel's buffer (no
    /// reader), in their order among the other frames, and leaves every other frame — one with a
    /// dictionary, a sync, one not whole yet — in place for `nextFrame`. A frame whose reserved byte
    /// is set, or whose name carries its text, is not a plain notification.
    func testTheRunnersChannelTakesPlainNotificationsInOneStepAndLeavesOtherFramesInPlace() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        let host = FrameChannel(fd: fds[0]), runner = FrameChannel(fd: fds[1])
        let name = NotificationName.didReceiveMemoryWarning
        XCTAssertTrue(host.out.plainNotificationFrame(word: 1, state: 3, nameID: name.id, sender: 9))
        host.out.begin(.notify, word: 2, state: 3)
        host.out.name(name)
        host.out.u64(0)
        host.out.u8(0)
        host.out.dictionary(["k": 1])
        XCTAssertTrue(host.out.end())
        XCTAssertTrue(host.out.plainNotificationFrame(word: 3, state: 0x83, nameID: name.id, sender: 0))
        host.out.begin(.sync, word: 4)
        XCTAssertTrue(host.out.end())
        // The last plain frame arrives in two pieces.
        XCTAssertTrue(host.out.plainNotificationFrame(word: 5, state: 2, nameID: name.id, sender: 7))
        let whole = host.out.bytes
        host.out.bytes.removeLast(13)
        guard case .done = host.writeSome() else { return XCTFail("the host's write did not complete") }
        guard case .data = runner.readSome() else { return XCTFail("the runner read nothing") }

        let first = try XCTUnwrap(runner.nextPlainNotification())
        XCTAssertEqual([first.word, UInt64(first.state), UInt64(first.nameID), first.sender], [1, 3, UInt64(name.id), 9])
        XCTAssertNil(runner.nextPlainNotification(), "a notification with a dictionary is read field by field")
        var second = try XCTUnwrap(try runner.nextFrame(acceptFromHost: true))
        XCTAssertEqual(second.kind, .notify)
        XCTAssertEqual(second.word, 2)
        XCTAssertEqual(try second.name().id, name.id)
        XCTAssertEqual(try second.u64("sender"), 0)
        XCTAssertEqual(try second.u8("scene flag"), 0)
        XCTAssertEqual(try second.dictionary("userInfo"), ["k": 1])
        let third = try XCTUnwrap(runner.nextPlainNotification())
        XCTAssertEqual([third.word, UInt64(third.state), third.sender], [3, 0x83, 0])
        XCTAssertNil(runner.nextPlainNotification(), "a sync")
        XCTAssertEqual(try runner.nextFrame(acceptFromHost: true)?.kind, .sync)
        XCTAssertNil(runner.nextPlainNotification(), "20 of its 33 bytes have arrived")
        XCTAssertNil(try runner.nextFrame(acceptFromHost: true))

        host.out.bytes = Array(whole.suffix(13))  // the 13 bytes left (a write that completed empties the buffer)
        guard case .done = host.writeSome() else { return XCTFail("the host's second write did not complete") }
        guard case .data = runner.readSome() else { return XCTFail("the runner read nothing") }
        let fifth = try XCTUnwrap(runner.nextPlainNotification())
        XCTAssertEqual([fifth.word, UInt64(fifth.state), fifth.sender], [5, 2, 7])
        XCTAssertNil(runner.nextPlainNotification())
        XCTAssertNil(try runner.nextFrame(acceptFromHost: true))

        // The decoder itself: the same bytes with a reserved byte set, or a name with its text, are not one.
        var plain = FrameWriter()
        XCTAssertTrue(plain.plainNotificationFrame(word: 1, state: 3, nameID: name.id, sender: 9))
        XCTAssertNotNil(plain.bytes.withUnsafeBytes { PlainNotification(raw: $0, at: 0) })
        var reserved = plain.bytes
        reserved[7] = 1
        XCTAssertNil(reserved.withUnsafeBytes { PlainNotification(raw: $0, at: 0) })
        var text = plain.bytes
        text[19] |= 0x80  // the name's "text follows" bit
        XCTAssertNil(text.withUnsafeBytes { PlainNotification(raw: $0, at: 0) })
    }

    func testFramesAreAsLargeAsTheLargestArchiveAndItsFields() {
        XCTAssertEqual(IsolationProtocol.maximumFrame, 68_157_440)
        XCTAssertEqual(IsolationProtocol.maximumFrame, ArchiveStore.defaultMaxBytes + (1 << 20))
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
