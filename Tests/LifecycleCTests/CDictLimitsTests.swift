@testable import AppLifecycle
import CLifecycle
import CLifecycleABI
import Foundation
@testable import LifecycleC
import XCTest

// The dictionary limits at the C face (`UserInfoLimits`: 64 levels, 64 MiB − 20 bytes of entries),
// called exactly as C calls them: a setter or an append that would break one is refused with
// LC_ERR_INVALID_ARGUMENT and a message naming the key and the limit, nothing changes, and the box
// remembers it (a coder with a refused write did not encode its state); a post over them is refused
// to its poster at every door.

private let OK = lc_status(LC_OK)
private let INVALID = lc_status(LC_ERR_INVALID_ARGUMENT)

private func lastError() -> String { String(cString: lc_last_error_message()) }

final class CDictLimitsTests: XCTestCase {
    private var dicts: [OpaquePointer?] = []

    override func tearDown() {
        dicts.forEach(lc_dict_destroy)
        dicts = []
    }

    private func newDict() -> OpaquePointer? {
        let dict = lc_dict_create()
        dicts.append(dict)
        return dict
    }

    /// `{"d": {"d": … {"leaf": 1}}}`, `levels` dictionaries below the top, built with `lc_dict_set_dict`.
    private func chain(_ levels: Int) -> OpaquePointer? {
        var inner = newDict()
        XCTAssertEqual(lc_dict_set_int(inner, "leaf", 1), OK)
        for _ in 0..<levels {
            let outer = newDict()
            XCTAssertEqual(lc_dict_set_dict(outer, "d", inner), OK, lastError())
            inner = outer
        }
        return inner
    }

    func testSetDictRefusesThe65thLevelNamingTheKeyAndTheLimitAndChangesNothing() throws {
        let deepest = chain(64)
        XCTAssertEqual(UserInfoBox.from(deepest!).current.depth, 64)
        let top = newDict()
        XCTAssertEqual(lc_dict_set_int(top, "kept", 1), OK)
        XCTAssertEqual(lc_dict_set_dict(top, "deep", deepest), INVALID)
        XCTAssertEqual(lastError(), "lc_dict_set_dict: 'deep' would make the dictionary 65 levels deep (at most 64); nothing was set")
        XCTAssertEqual(String(cString: lc_dict_json(top)), #"{"kept":1}"#)
        let refused = try XCTUnwrap(UserInfoBox.from(top!).refusedWrite)
        XCTAssertEqual(refused.function, "lc_dict_set_dict")
        XCTAssertEqual(refused.message, lastError())
        // A list is a level too: append_dict refuses what would make the list, as a value, 65 deep.
        let list = lc_list_create()
        defer { lc_list_destroy(list) }
        XCTAssertEqual(lc_list_append_dict(list, chain(62)), OK, "the list: 1 + the dictionary's 1 + 62")
        XCTAssertEqual(lc_list_append_dict(list, chain(63)), INVALID)
        XCTAssertEqual(lastError(), "lc_list_append_dict: the list would be 65 levels deep (at most 64); nothing was appended")
        XCTAssertEqual(lc_list_count(list), 1)
        XCTAssertEqual(lc_dict_set_list(top, "list", list), OK, "64 levels")
        XCTAssertEqual(UserInfoBox.from(top!).current.depth, 64)
    }

    func testSetBytesAndSetStringRefuseWhatWouldPassTheSizeLimitBeforeReadingIt() throws {
        let dict = newDict()
        // 8 + 4 + 9 + length ≤ 67108844. The data pointer holds one byte: a length past the limit is
        // refused before anything is read (size before content).
        var one: UInt8 = 1
        XCTAssertEqual(lc_dict_set_bytes(dict, "blob", &one, 67_108_824), INVALID)
        XCTAssertEqual(lastError(), "lc_dict_set_bytes: 'blob' would make the dictionary 67108845 bytes (at most 67108844); nothing was set")
        XCTAssertEqual(lc_dict_set_bytes(dict, "blob", &one, Int.max), INVALID)
        XCTAssertEqual(lastError(), "lc_dict_set_bytes: 'blob' would make the dictionary 72057594037927935 bytes (at most 67108844); nothing was set")
        let fits = [UInt8](repeating: 0x5A, count: 67_108_823)
        XCTAssertEqual(lc_dict_set_bytes(dict, "blob", fits, fits.count), OK)
        XCTAssertEqual(UserInfoBox.from(dict!).current.encodedSize, UserInfoLimits.maximumBytes)
        XCTAssertEqual(lc_dict_set_bool(dict, "b", true), INVALID)
        XCTAssertEqual(lastError(), "lc_dict_set_bool: 'b' would make the dictionary 67108863 bytes (at most 67108844); nothing was set")
        XCTAssertEqual(lc_dict_set_string(dict, "s", ""), INVALID)
        XCTAssertEqual(lastError(), "lc_dict_set_string: 's' would make the dictionary 67108862 bytes (at most 67108844); nothing was set")
        // Replacing the blob with less is a change that shrinks it: never refused.
        XCTAssertEqual(lc_dict_set_bytes(dict, "blob", &one, 1), OK)
        XCTAssertEqual(lc_dict_set_bool(dict, "b", true), OK)
    }

    /// A dictionary the host made past the limits (its own envelopes: connection options) can be read
    /// and copied, but not posted: every door refuses it to the poster with the same words.
    func testAPostOverTheLimitsIsRefusedAtEveryDoorOfTheCABI() throws {
        var app: OpaquePointer?
        XCTAssertEqual(lc_app_create(nil, &app), OK)
        defer { lc_app_destroy(app) }
        var over = UserInfo()
        var inner: UserInfo = ["leaf": 1]
        for _ in 0..<66 { inner = ["d": .dict(inner)] }
        over["options"] = .dict(inner)
        let dict = makeDict(over)
        defer { lcDictDestroy(dict) }
        let copy = lc_dict_copy(dict)
        defer { lc_dict_destroy(copy) }
        var name: lc_name = 0
        XCTAssertEqual(lc_name_intern("com.example.over", &name), OK)
        XCTAssertEqual(lc_app_post(app, "com.example.over", nil, copy), INVALID)
        XCTAssertEqual(lastError(), "lc_app_post: the userInfo is 67 levels deep (at most 64); nothing was posted")
        XCTAssertEqual(lc_app_post(app, "com.example.fresh", nil, copy), INVALID)
        XCTAssertEqual(lastError(), "lc_app_post: the userInfo is 67 levels deep (at most 64); nothing was posted")
        XCTAssertEqual(lc_app_post_name(app, name, nil, copy), INVALID)
        XCTAssertEqual(lastError(), "lc_app_post_name: the userInfo is 67 levels deep (at most 64); nothing was posted")
        // From another thread too (checked before anything is queued).
        nonisolated(unsafe) let shared = (app, copy)
        let status = DispatchQueue.global().sync { lc_app_post(shared.0, "com.example.over", nil, shared.1) }
        XCTAssertEqual(status, INVALID)
    }
}
