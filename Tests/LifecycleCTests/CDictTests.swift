@testable import AppLifecycle
import CLifecycle
import CLifecycleABI
import CLifecycleSystem
import Foundation
@testable import LifecycleC
import XCTest

// The C face of dictionaries, lists and statuses, called exactly as C calls them: the `lc_*` names
// resolve to the header's declarations, which link to CLifecycle's `@c @implementation` functions.

private let OK = lc_status(LC_OK)
private let INVALID = lc_status(LC_ERR_INVALID_ARGUMENT)
private let NOT_FOUND = lc_status(LC_ERR_NOT_FOUND)
private let MISMATCH = lc_status(LC_ERR_TYPE_MISMATCH)

/// The calling thread's last error message.
private func lastError() -> String { String(cString: lc_last_error_message()) }

private func string(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }

private func json(_ dict: OpaquePointer?) -> String? { string(lc_dict_json(dict)) }

/// An invalid UTF-8 C string (a lone continuation byte).
private let badUTF8: [CChar] = [CChar(bitPattern: 0x61), CChar(bitPattern: 0x80), 0]

final class CDictTests: XCTestCase {
    private var dicts: [OpaquePointer?] = []
    private var lists: [OpaquePointer?] = []

    override func tearDown() {
        dicts.forEach(lc_dict_destroy)
        lists.forEach(lc_list_destroy)
        dicts = []
        lists = []
    }

    /// A new dictionary destroyed at tear-down.
    private func newDict() -> OpaquePointer? {
        let dict = lc_dict_create()
        XCTAssertNotNil(dict)
        dicts.append(dict)
        return dict
    }

    private func newList() -> OpaquePointer? {
        let list = lc_list_create()
        XCTAssertNotNil(list)
        lists.append(list)
        return list
    }

    /// Checks a failure: its status and this thread's last error message.
    private func assertFails(
        _ status: lc_status, _ expected: lc_status, _ message: String, file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(status, expected, "status", file: file, line: line)
        XCTAssertEqual(lastError(), message, file: file, line: line)
    }

    // MARK: - Status, version, states

    func testABIVersion() {
        var major: UInt32 = 99
        var minor: UInt32 = 99
        lc_abi_version(&major, &minor)
        XCTAssertEqual(major, 1)
        XCTAssertEqual(minor, 7)
        XCTAssertEqual(major, UInt32(LC_ABI_VERSION_MAJOR))
        XCTAssertEqual(minor, UInt32(LC_ABI_VERSION_MINOR))
        lc_abi_version(nil, nil)  // no crash
        major = 0
        lc_abi_version(&major, nil)
        XCTAssertEqual(major, 1)
    }

    func testStatusNamesAndMessages() {
        let names: [(Int, String)] = [
            (LC_OK, "LC_OK"), (LC_ERR_INVALID_ARGUMENT, "LC_ERR_INVALID_ARGUMENT"),
            (LC_ERR_ILLEGAL_ACTION, "LC_ERR_ILLEGAL_ACTION"), (LC_ERR_ACTION_IN_PROGRESS, "LC_ERR_ACTION_IN_PROGRESS"),
            (LC_ERR_BACKGROUND_MODE_MISSING, "LC_ERR_BACKGROUND_MODE_MISSING"),
            (LC_ERR_UNKNOWN_NAME, "LC_ERR_UNKNOWN_NAME"), (LC_ERR_INVALID_NAME, "LC_ERR_INVALID_NAME"),
            (LC_ERR_WRONG_THREAD, "LC_ERR_WRONG_THREAD"), (LC_ERR_NOT_FOUND, "LC_ERR_NOT_FOUND"),
            (LC_ERR_TYPE_MISMATCH, "LC_ERR_TYPE_MISMATCH"), (LC_ERR_ARCHIVE, "LC_ERR_ARCHIVE"),
            (LC_ERR_SYSTEM, "LC_ERR_SYSTEM"), (LC_ERR_PLUGIN_REFUSED, "LC_ERR_PLUGIN_REFUSED"),
            (LC_ERR_VERSION, "LC_ERR_VERSION"), (LC_ERR_DUPLICATE, "LC_ERR_DUPLICATE"),
            (LC_ERR_INTERNAL, "LC_ERR_INTERNAL"), (LC_ERR_QUEUE_FULL, "LC_ERR_QUEUE_FULL"), (LC_ERR_NESTING_LIMIT, "LC_ERR_NESTING_LIMIT"),
            (LC_ERR_QUOTA, "LC_ERR_QUOTA"),
        ]
        XCTAssertEqual(names.count, 19)
        var messages = Set<String>()
        for (status, name) in names {
            XCTAssertEqual(string(lc_status_name(lc_status(status))), name)
            let message = string(lc_status_message(lc_status(status))) ?? ""
            XCTAssertFalse(message.isEmpty, name)
            messages.insert(message)
            // Static storage: the same pointer every time.
            XCTAssertEqual(lc_status_name(lc_status(status)), lc_status_name(lc_status(status)))
        }
        XCTAssertEqual(messages.count, 19, "one distinct sentence per code")
        XCTAssertEqual(string(lc_status_message(OK)), "success")
        XCTAssertEqual(string(lc_status_message(NOT_FOUND)), "no such observer, task, key, plugin or delegate")
        XCTAssertEqual(string(lc_status_message(MISMATCH)), "the dictionary value has another type")
        XCTAssertEqual(string(lc_status_name(-19)), "LC_STATUS_UNKNOWN")
        XCTAssertEqual(string(lc_status_name(1)), "LC_STATUS_UNKNOWN")
        XCTAssertEqual(string(lc_status_message(-1000)), "not a known status code")
    }

    func testStateNamesAndConversions() {
        let expected: [(Int, String, ApplicationState)] = [
            (LC_STATE_NOT_RUNNING, "not-running", .notRunning), (LC_STATE_INACTIVE, "inactive", .inactive),
            (LC_STATE_ACTIVE, "active", .active), (LC_STATE_BACKGROUND, "background", .background),
            (LC_STATE_SUSPENDED, "suspended", .suspended),
        ]
        for (raw, name, state) in expected {
            XCTAssertEqual(string(lc_state_name(lc_state(raw))), name)
            XCTAssertEqual(state.rawValue, name)
            XCTAssertEqual(state.lcState, lc_state(raw))
            XCTAssertEqual(ApplicationState(lcState: lc_state(raw)), state)
        }
        XCTAssertEqual(ApplicationState.allCases.count, expected.count)
        XCTAssertEqual(string(lc_state_name(5)), "unknown")
        XCTAssertNil(ApplicationState(lcState: 5))
    }

    func testApplicationErrorMapping() {
        let cases: [(ApplicationError.Code, Int)] = [
            (.illegalAction, LC_ERR_ILLEGAL_ACTION), (.actionInProgress, LC_ERR_ACTION_IN_PROGRESS),
            (.backgroundModeMissing, LC_ERR_BACKGROUND_MODE_MISSING), (.unknownBackgroundTask, LC_ERR_NOT_FOUND),
            (.unknownNotificationName, LC_ERR_UNKNOWN_NAME), (.invalidNotificationName, LC_ERR_INVALID_NAME),
            (.notOnLoopThread, LC_ERR_WRONG_THREAD), (.archiveUnreadable, LC_ERR_ARCHIVE),
            (.archiveCorrupt, LC_ERR_ARCHIVE), (.archiveWriteFailed, LC_ERR_ARCHIVE), (.system, LC_ERR_SYSTEM),
            (.invalidArgument, LC_ERR_INVALID_ARGUMENT),
        ]
        for (code, status) in cases {
            let message = "failure of kind \(code)"
            assertFails(lcFail(ApplicationError(code, message)), lc_status(status), message)
            XCTAssertEqual(lcStatus(for: code), lc_status(status))
        }
        let illegal = ApplicationError.illegalAction("home", in: .notRunning)
        assertFails(lcFail(illegal), lc_status(LC_ERR_ILLEGAL_ACTION),
                    "action 'home' is not allowed while the application is not-running")
        // Any error: ApplicationError keeps its code, others are internal errors.
        assertFails(lcFail(ApplicationError(.system, "open failed") as any Error, in: "lc_x"), lc_status(LC_ERR_SYSTEM),
                    "open failed")
        struct Odd: Error, CustomStringConvertible { var description: String { "odd" } }
        assertFails(lcFail(Odd(), in: "lc_x"), lc_status(LC_ERR_INTERNAL), "lc_x: odd")
        // The plain form and the Int form of the header's constants.
        assertFails(lcFail(lc_status(LC_ERR_DUPLICATE), "dup"), lc_status(LC_ERR_DUPLICATE), "dup")
        assertFails(lcFail(LC_ERR_VERSION, "ver"), lc_status(LC_ERR_VERSION), "ver")
        assertFails(lcNull("lc_f", "arg"), INVALID, "lc_f: arg is NULL")
    }

    // MARK: - Last error

    func testLastErrorMessageLifetime() {
        let dict = newDict()
        assertFails(lc_dict_get_int(dict, "x", nil), INVALID, "lc_dict_get_int: out is NULL")
        let message = lc_last_error_message()!
        // Successful calls leave the message (and its buffer) alone.
        XCTAssertEqual(lc_dict_set_int(dict, "x", 1), OK)
        var value: Int64 = 0
        XCTAssertEqual(lc_dict_get_int(dict, "x", &value), OK)
        XCTAssertEqual(lc_last_error_message(), message)
        XCTAssertEqual(String(cString: message), "lc_dict_get_int: out is NULL")
        // The next failure replaces it.
        assertFails(lc_dict_get_int(dict, "y", &value), NOT_FOUND, "lc_dict_get_int: no key 'y'")
    }

    func testLastErrorMessageIsPerThread() {
        final class Report: @unchecked Sendable {
            var before = "unset"
            var after = "unset"
            var status: lc_status = 0
        }
        let dict = newDict()
        assertFails(lc_dict_remove(dict, "mine"), NOT_FOUND, "lc_dict_remove: no key 'mine'")
        let mine = lc_last_error_message()

        let report = Report()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            report.before = String(cString: lc_last_error_message())
            let other = lc_dict_create()
            report.status = lc_dict_get_bool(other, "theirs", nil)
            report.after = String(cString: lc_last_error_message())
            lc_dict_destroy(other)
            done.signal()
        }
        thread.start()
        done.wait()

        XCTAssertEqual(report.before, "", "a new thread has no last error")
        XCTAssertEqual(report.status, INVALID)
        XCTAssertEqual(report.after, "lc_dict_get_bool: out is NULL")
        // This thread's message (and buffer) is untouched; the other thread's was freed at its exit.
        XCTAssertEqual(lc_last_error_message(), mine)
        XCTAssertEqual(lastError(), "lc_dict_remove: no key 'mine'")
    }

    // MARK: - Dictionaries

    func testScalarsRoundTrip() {
        let dict = newDict()
        XCTAssertEqual(lc_dict_count(dict), 0)
        XCTAssertEqual(json(dict), "{}")
        XCTAssertEqual(lc_dict_set_string(dict, "name", "Zoë"), OK)
        XCTAssertEqual(lc_dict_set_int(dict, "count", -42), OK)
        XCTAssertEqual(lc_dict_set_double(dict, "ratio", 0.25), OK)
        XCTAssertEqual(lc_dict_set_bool(dict, "flag", true), OK)
        XCTAssertEqual(lc_dict_set_int(dict, "big", Int64.max), OK)
        XCTAssertEqual(lc_dict_set_string(dict, "", "empty key"), OK)
        XCTAssertEqual(lc_dict_count(dict), 6)

        var text: UnsafePointer<CChar>?
        XCTAssertEqual(lc_dict_get_string(dict, "name", &text), OK)
        XCTAssertEqual(string(text), "Zoë")
        var int: Int64 = 0
        XCTAssertEqual(lc_dict_get_int(dict, "count", &int), OK)
        XCTAssertEqual(int, -42)
        XCTAssertEqual(lc_dict_get_int(dict, "big", &int), OK)
        XCTAssertEqual(int, Int64.max)
        var double = 0.0
        XCTAssertEqual(lc_dict_get_double(dict, "ratio", &double), OK)
        XCTAssertEqual(double, 0.25)
        // The double getter accepts an integer.
        XCTAssertEqual(lc_dict_get_double(dict, "count", &double), OK)
        XCTAssertEqual(double, -42.0)
        var bool = false
        XCTAssertEqual(lc_dict_get_bool(dict, "flag", &bool), OK)
        XCTAssertTrue(bool)
        XCTAssertEqual(lc_dict_get_string(dict, "", &text), OK)
        XCTAssertEqual(string(text), "empty key")

        let keys = (0..<lc_dict_count(dict)).map { string(lc_dict_key_at(dict, $0)) }
        XCTAssertEqual(keys, ["name", "count", "ratio", "flag", "big", ""])
        XCTAssertNil(lc_dict_key_at(dict, 6))
        XCTAssertNil(lc_dict_key_at(dict, Int(bitPattern: UInt.max)))

        XCTAssertEqual(lc_dict_type(dict, "name"), lc_value_type(LC_VALUE_STRING))
        XCTAssertEqual(lc_dict_type(dict, "count"), lc_value_type(LC_VALUE_INT))
        XCTAssertEqual(lc_dict_type(dict, "ratio"), lc_value_type(LC_VALUE_DOUBLE))
        XCTAssertEqual(lc_dict_type(dict, "flag"), lc_value_type(LC_VALUE_BOOL))
        XCTAssertEqual(lc_dict_type(dict, "absent"), lc_value_type(LC_VALUE_NONE))

        XCTAssertEqual(json(dict),
                       #"{"name":"Zoë","count":-42,"ratio":0.25,"flag":true,"big":9223372036854775807,"":"empty key"}"#)
        XCTAssertEqual(userInfo(from: dict),
                       ["name": "Zoë", "count": -42, "ratio": 0.25, "flag": true, "big": .int(Int64.max), "": "empty key"])
    }

    func testReplacingKeyKeepsOrderAndType() {
        let dict = newDict()
        XCTAssertEqual(lc_dict_set_int(dict, "a", 1), OK)
        XCTAssertEqual(lc_dict_set_int(dict, "b", 2), OK)
        XCTAssertEqual(lc_dict_set_int(dict, "c", 3), OK)
        XCTAssertEqual(lc_dict_set_string(dict, "b", "two"), OK)
        XCTAssertEqual(lc_dict_set_int(dict, "a", 10), OK)
        XCTAssertEqual(lc_dict_count(dict), 3)
        XCTAssertEqual((0..<3).map { string(lc_dict_key_at(dict, $0)) }, ["a", "b", "c"])
        XCTAssertEqual(lc_dict_type(dict, "b"), lc_value_type(LC_VALUE_STRING))
        XCTAssertEqual(json(dict), #"{"a":10,"b":"two","c":3}"#)
        XCTAssertEqual(lc_dict_set_bool(dict, "d", false), OK)
        XCTAssertEqual(json(dict), #"{"a":10,"b":"two","c":3,"d":false}"#)
    }

    func testRemove() {
        let dict = newDict()
        XCTAssertEqual(lc_dict_set_int(dict, "a", 1), OK)
        XCTAssertEqual(lc_dict_set_int(dict, "b", 2), OK)
        XCTAssertEqual(lc_dict_set_int(dict, "c", 3), OK)
        XCTAssertEqual(lc_dict_remove(dict, "b"), OK)
        XCTAssertEqual(lc_dict_count(dict), 2)
        XCTAssertEqual(json(dict), #"{"a":1,"c":3}"#)
        assertFails(lc_dict_remove(dict, "b"), NOT_FOUND, "lc_dict_remove: no key 'b'")
        XCTAssertEqual(lc_dict_set_int(dict, "b", 4), OK)
        XCTAssertEqual(json(dict), #"{"a":1,"c":3,"b":4}"#, "a removed key comes back at the end")
    }

    func testBytesWithZerosInside() {
        let dict = newDict()
        let bytes: [UInt8] = [0, 1, 0, 0xFF, 0, 0x7F, 0]
        XCTAssertEqual(lc_dict_set_bytes(dict, "raw", bytes, bytes.count), OK)
        XCTAssertEqual(lc_dict_set_bytes(dict, "empty", nil, 0), OK)
        XCTAssertEqual(lc_dict_type(dict, "raw"), lc_value_type(LC_VALUE_BYTES))

        var data: UnsafePointer<UInt8>?
        var length = -1
        XCTAssertEqual(lc_dict_get_bytes(dict, "raw", &data, &length), OK)
        XCTAssertEqual(length, 7)
        XCTAssertEqual(Array(UnsafeBufferPointer(start: data, count: length)), bytes)
        var again: UnsafePointer<UInt8>?
        XCTAssertEqual(lc_dict_get_bytes(dict, "raw", &again, &length), OK)
        XCTAssertEqual(again, data, "read twice: the same buffer")

        XCTAssertEqual(lc_dict_get_bytes(dict, "empty", &data, &length), OK)
        XCTAssertEqual(length, 0)
        XCTAssertNotNil(data, "never NULL, even when empty")
        XCTAssertEqual(json(dict), #"{"raw":"0x000100ff007f00","empty":"0x"}"#)
        XCTAssertEqual(userInfo(from: dict)?["raw"], .bytes(bytes))
    }

    func testNestedDictAndList() {
        let inner = newDict()
        XCTAssertEqual(lc_dict_set_string(inner, "city", "Oslo"), OK)
        XCTAssertEqual(lc_dict_set_int(inner, "zip", 150), OK)

        let element = newDict()
        XCTAssertEqual(lc_dict_set_bool(element, "deep", true), OK)

        let list = newList()
        XCTAssertEqual(lc_list_count(list), 0)
        XCTAssertEqual(lc_list_append_string(list, "one"), OK)
        XCTAssertEqual(lc_list_append_int(list, 2), OK)
        XCTAssertEqual(lc_list_append_double(list, 3.5), OK)
        XCTAssertEqual(lc_list_append_bool(list, false), OK)
        XCTAssertEqual(lc_list_append_dict(list, element), OK)
        XCTAssertEqual(lc_list_count(list), 5)

        let dict = newDict()
        XCTAssertEqual(lc_dict_set_dict(dict, "address", inner), OK)
        XCTAssertEqual(lc_dict_set_list(dict, "items", list), OK)
        XCTAssertEqual(lc_dict_type(dict, "address"), lc_value_type(LC_VALUE_DICT))
        XCTAssertEqual(lc_dict_type(dict, "items"), lc_value_type(LC_VALUE_LIST))

        // Setting copies: later changes to the sources do not show.
        XCTAssertEqual(lc_dict_set_string(inner, "city", "Bergen"), OK)
        XCTAssertEqual(lc_list_append_int(list, 99), OK)
        XCTAssertEqual(lc_dict_set_bool(element, "deep", false), OK)

        XCTAssertEqual(json(dict),
                       #"{"address":{"city":"Oslo","zip":150},"items":["one",2,3.5,false,{"deep":true}]}"#)

        var nested: OpaquePointer?
        XCTAssertEqual(lc_dict_get_dict(dict, "address", &nested), OK)
        var again: OpaquePointer?
        XCTAssertEqual(lc_dict_get_dict(dict, "address", &again), OK)
        XCTAssertEqual(nested, again, "the dictionary owns one nested box per key")
        XCTAssertEqual(lc_dict_count(nested), 2)
        var text: UnsafePointer<CChar>?
        XCTAssertEqual(lc_dict_get_string(nested, "city", &text), OK)
        XCTAssertEqual(string(text), "Oslo")
        XCTAssertEqual(json(nested), #"{"city":"Oslo","zip":150}"#)

        var items: OpaquePointer?
        XCTAssertEqual(lc_dict_get_list(dict, "items", &items), OK)
        XCTAssertEqual(lc_list_count(items), 5)
        let types = (0..<6).map { lc_list_type_at(items, $0) }
        XCTAssertEqual(types, [LC_VALUE_STRING, LC_VALUE_INT, LC_VALUE_DOUBLE, LC_VALUE_BOOL, LC_VALUE_DICT,
                               LC_VALUE_NONE].map { lc_value_type($0) })
        XCTAssertEqual(lc_list_get_string(items, 0, &text), OK)
        XCTAssertEqual(string(text), "one")
        var int: Int64 = 0
        XCTAssertEqual(lc_list_get_int(items, 1, &int), OK)
        XCTAssertEqual(int, 2)
        var double = 0.0
        XCTAssertEqual(lc_list_get_double(items, 2, &double), OK)
        XCTAssertEqual(double, 3.5)
        XCTAssertEqual(lc_list_get_double(items, 1, &double), OK, "an integer reads as a double")
        XCTAssertEqual(double, 2.0)
        var bool = true
        XCTAssertEqual(lc_list_get_bool(items, 3, &bool), OK)
        XCTAssertFalse(bool)
        var listDict: OpaquePointer?
        XCTAssertEqual(lc_list_get_dict(items, 4, &listDict), OK)
        XCTAssertEqual(lc_dict_get_bool(listDict, "deep", &bool), OK)
        XCTAssertTrue(bool)
        var listDictAgain: OpaquePointer?
        XCTAssertEqual(lc_list_get_dict(items, 4, &listDictAgain), OK)
        XCTAssertEqual(listDict, listDictAgain)

        // The caller's own list got the later append.
        XCTAssertEqual(lc_list_count(list), 6)
        XCTAssertEqual(lc_list_get_int(list, 5, &int), OK)
        XCTAssertEqual(int, 99)
        XCTAssertEqual(listItems(from: list), ["one", 2, 3.5, false, ["deep": true], 99], "the list holds a copy of `element`")
        XCTAssertEqual(lc_list_type_at(list, 4), lc_value_type(LC_VALUE_DICT))

        // A list inside a list shows its type (there is no getter for it in the header).
        let outer = newDict()
        let info: UserInfo = ["l": [[1, 2], "x"]]
        XCTAssertEqual(lc_dict_set_list(outer, "l", makeListForTest([[1, 2], "x"])), OK)
        XCTAssertEqual(userInfo(from: outer), info)
        var l: OpaquePointer?
        XCTAssertEqual(lc_dict_get_list(outer, "l", &l), OK)
        XCTAssertEqual(lc_list_type_at(l, 0), lc_value_type(LC_VALUE_LIST))
        XCTAssertEqual(json(outer), #"{"l":[[1,2],"x"]}"#)
    }

    private func makeListForTest(_ items: [UserInfoValue]) -> OpaquePointer {
        let list = makeList(items)
        lists.append(list)
        return list
    }

    func testJSONRenderingExactAndKept() {
        let dict = newDict()
        XCTAssertEqual(lc_dict_set_string(dict, "quote \"k\"", "line\nbreak\ttab\\slash"), OK)
        XCTAssertEqual(lc_dict_set_string(dict, "ctl", "\u{1}"), OK)
        XCTAssertEqual(lc_dict_set_double(dict, "d", 1), OK)
        XCTAssertEqual(lc_dict_set_double(dict, "nan", .nan), OK)
        XCTAssertEqual(lc_dict_set_double(dict, "neg", -2.5e-3), OK)
        let expected = #"{"quote \"k\"":"line\nbreak\ttab\\slash","ctl":"\u0001","d":1.0,"nan":null,"neg":-0.0025}"#
        let first = lc_dict_json(dict)
        XCTAssertEqual(string(first), expected)
        XCTAssertEqual(lc_dict_json(dict), first, "kept: the same rendering until the dictionary changes")
        XCTAssertEqual(lc_dict_remove(dict, "nan"), OK)
        XCTAssertEqual(json(dict), #"{"quote \"k\"":"line\nbreak\ttab\\slash","ctl":"\u0001","d":1.0,"neg":-0.0025}"#)
    }

    func testStringsAreKeptAndReadBackIntoTheSameDictionary() {
        let dict = newDict()
        XCTAssertEqual(lc_dict_set_string(dict, "a", "alpha"), OK)
        var first: UnsafePointer<CChar>?
        var second: UnsafePointer<CChar>?
        XCTAssertEqual(lc_dict_get_string(dict, "a", &first), OK)
        XCTAssertEqual(lc_dict_get_string(dict, "a", &second), OK)
        XCTAssertEqual(first, second, "read twice: the same string")
        XCTAssertEqual(lc_dict_key_at(dict, 0), lc_dict_key_at(dict, 0))
        // A value read out of the dictionary may be written back into it (copied before the change).
        XCTAssertEqual(lc_dict_set_string(dict, "b", first), OK)
        XCTAssertEqual(lc_dict_set_string(dict, "a", lc_dict_key_at(dict, 1)), OK)
        XCTAssertEqual(json(dict), #"{"a":"b","b":"alpha"}"#)
        // A dictionary set into itself is a copy of what it held.
        XCTAssertEqual(lc_dict_set_dict(dict, "self", dict), OK)
        var nested: OpaquePointer?
        XCTAssertEqual(lc_dict_get_dict(dict, "self", &nested), OK)
        XCTAssertEqual(lc_dict_set_dict(dict, "copy", nested), OK)
        XCTAssertEqual(json(dict),
                       #"{"a":"b","b":"alpha","self":{"a":"b","b":"alpha"},"copy":{"a":"b","b":"alpha"}}"#)
    }

    func testCopyIsDeep() {
        let dict = newDict()
        XCTAssertEqual(lc_dict_set_int(dict, "n", 1), OK)
        let inner = newDict()
        XCTAssertEqual(lc_dict_set_string(inner, "s", "x"), OK)
        XCTAssertEqual(lc_dict_set_dict(dict, "inner", inner), OK)
        let copy = lc_dict_copy(dict)
        dicts.append(copy)
        XCTAssertNotNil(copy)
        XCTAssertNotEqual(copy, dict)
        XCTAssertEqual(lc_dict_set_int(dict, "n", 2), OK)
        XCTAssertEqual(lc_dict_set_string(dict, "inner", "replaced"), OK)
        XCTAssertEqual(json(copy), #"{"n":1,"inner":{"s":"x"}}"#)
        XCTAssertEqual(json(dict), #"{"n":2,"inner":"replaced"}"#)
        // A copy of a nested (dictionary-owned) dictionary is the caller's.
        var nested: OpaquePointer?
        XCTAssertEqual(lc_dict_get_dict(copy, "inner", &nested), OK)
        let nestedCopy = lc_dict_copy(nested)
        XCTAssertEqual(lc_dict_set_int(copy, "n", 3), OK)  // drops `nested`
        XCTAssertEqual(json(nestedCopy), #"{"s":"x"}"#)
        lc_dict_destroy(nestedCopy)
        lc_dict_destroy(nil)
        lc_list_destroy(nil)
    }

    func testGetterErrors() {
        let dict = newDict()
        XCTAssertEqual(lc_dict_set_string(dict, "s", "text"), OK)
        XCTAssertEqual(lc_dict_set_int(dict, "i", 1), OK)
        XCTAssertEqual(lc_dict_set_double(dict, "d", 1.5), OK)
        XCTAssertEqual(lc_dict_set_bool(dict, "b", true), OK)
        XCTAssertEqual(lc_dict_set_bytes(dict, "y", [1] as [UInt8], 1), OK)
        XCTAssertEqual(lc_dict_set_dict(dict, "m", dict), OK)
        XCTAssertEqual(lc_dict_set_list(dict, "l", makeListForTest([1])), OK)

        // Out-pointers are written only on success: the sentinels survive every failure below.
        var text: UnsafePointer<CChar>? = UnsafePointer(bitPattern: 0x10)
        var int: Int64 = 77
        var double = 7.7
        var bool = true
        var data: UnsafePointer<UInt8>? = UnsafePointer(bitPattern: 0x20)
        var length = 77
        var nested: OpaquePointer? = OpaquePointer(bitPattern: 0x30)
        var list: OpaquePointer? = OpaquePointer(bitPattern: 0x40)

        assertFails(lc_dict_get_string(dict, "x", &text), NOT_FOUND, "lc_dict_get_string: no key 'x'")
        assertFails(lc_dict_get_int(dict, "x", &int), NOT_FOUND, "lc_dict_get_int: no key 'x'")
        assertFails(lc_dict_get_double(dict, "x", &double), NOT_FOUND, "lc_dict_get_double: no key 'x'")
        assertFails(lc_dict_get_bool(dict, "x", &bool), NOT_FOUND, "lc_dict_get_bool: no key 'x'")
        assertFails(lc_dict_get_bytes(dict, "x", &data, &length), NOT_FOUND, "lc_dict_get_bytes: no key 'x'")
        assertFails(lc_dict_get_dict(dict, "x", &nested), NOT_FOUND, "lc_dict_get_dict: no key 'x'")
        assertFails(lc_dict_get_list(dict, "x", &list), NOT_FOUND, "lc_dict_get_list: no key 'x'")

        assertFails(lc_dict_get_string(dict, "i", &text), MISMATCH, "lc_dict_get_string: 'i' holds an int, not a string")
        assertFails(lc_dict_get_int(dict, "s", &int), MISMATCH, "lc_dict_get_int: 's' holds a string, not an int")
        assertFails(lc_dict_get_int(dict, "d", &int), MISMATCH, "lc_dict_get_int: 'd' holds a double, not an int")
        assertFails(lc_dict_get_double(dict, "b", &double), MISMATCH, "lc_dict_get_double: 'b' holds a bool, not a double")
        assertFails(lc_dict_get_bool(dict, "i", &bool), MISMATCH, "lc_dict_get_bool: 'i' holds an int, not a bool")
        assertFails(lc_dict_get_bytes(dict, "s", &data, &length), MISMATCH, "lc_dict_get_bytes: 's' holds a string, not bytes")
        assertFails(lc_dict_get_dict(dict, "l", &nested), MISMATCH, "lc_dict_get_dict: 'l' holds a list, not a dict")
        assertFails(lc_dict_get_list(dict, "m", &list), MISMATCH, "lc_dict_get_list: 'm' holds a dict, not a list")
        assertFails(lc_dict_get_string(dict, "y", &text), MISMATCH, "lc_dict_get_string: 'y' holds bytes, not a string")

        XCTAssertEqual(text, UnsafePointer(bitPattern: 0x10))
        XCTAssertEqual(int, 77)
        XCTAssertEqual(double, 7.7)
        XCTAssertTrue(bool)
        XCTAssertEqual(data, UnsafePointer(bitPattern: 0x20))
        XCTAssertEqual(length, 77)
        XCTAssertEqual(nested, OpaquePointer(bitPattern: 0x30))
        XCTAssertEqual(list, OpaquePointer(bitPattern: 0x40))
    }

    /// Keys are found by their bytes: a key that is a prefix of another, the empty key, a multi-byte
    /// key; the same answers on the first lookup (compared in place), the second (the key index is
    /// made) and later ones, and after every kind of change (the index is remade).
    func testLookupsByKeyBytesBeforeAndAfterChanges() {
        let dict = newDict()
        XCTAssertEqual(lc_dict_set_int(dict, "ab", 1), OK)
        XCTAssertEqual(lc_dict_set_int(dict, "a", 2), OK)
        XCTAssertEqual(lc_dict_set_int(dict, "", 3), OK)
        XCTAssertEqual(lc_dict_set_int(dict, "é", 4), OK)
        func read(_ key: String) -> Int64? {
            var value: Int64 = -1
            return lc_dict_get_int(dict, key, &value) == OK ? value : nil
        }
        for round in 0..<3 {
            XCTAssertEqual(read("ab"), 1, "round \(round)")
            XCTAssertEqual(read("a"), 2, "round \(round)")
            XCTAssertEqual(read(""), 3, "round \(round)")
            XCTAssertEqual(read("é"), 4, "round \(round)")
            XCTAssertNil(read("abc"), "round \(round)")
            XCTAssertNil(read("b"), "round \(round)")
            XCTAssertNil(read("e"), "round \(round)")
        }
        // Replace, add, remove: every change drops the index, and lookups see the new keys at once.
        XCTAssertEqual(lc_dict_set_int(dict, "a", 20), OK)
        XCTAssertEqual(read("a"), 20)
        XCTAssertEqual(lc_dict_set_int(dict, "b", 5), OK)
        XCTAssertEqual(read("b"), 5)
        XCTAssertEqual(read("b"), 5)
        XCTAssertEqual(lc_dict_remove(dict, "ab"), OK)
        XCTAssertNil(read("ab"))
        XCTAssertEqual(read("a"), 20)
        XCTAssertEqual(read("é"), 4)
        assertFails(lc_dict_get_int(dict, "ab", nil), INVALID, "lc_dict_get_int: out is NULL")
        var value: Int64 = 0
        assertFails(lc_dict_get_int(dict, "ab", &value), NOT_FOUND, "lc_dict_get_int: no key 'ab'")
        assertFails(badUTF8.withUnsafeBufferPointer { lc_dict_get_int(dict, $0.baseAddress, &value) }, INVALID,
                    "lc_dict_get_int: key is not valid UTF-8")
        // A string read twice is the same kept pointer, also across the index being made.
        XCTAssertEqual(lc_dict_set_string(dict, "s", "text"), OK)
        var first: UnsafePointer<CChar>?, second: UnsafePointer<CChar>?
        XCTAssertEqual(lc_dict_get_string(dict, "s", &first), OK)
        XCTAssertEqual(lc_dict_get_string(dict, "s", &second), OK)
        XCTAssertEqual(first, second)
        XCTAssertEqual(string(first), "text")
    }

    func testListErrors() {
        let list = newList()
        XCTAssertEqual(lc_list_append_string(list, "s"), OK)
        XCTAssertEqual(lc_list_append_int(list, 1), OK)
        var text: UnsafePointer<CChar>?
        var int: Int64 = 77
        var double = 7.7
        var bool = true
        var dict: OpaquePointer?
        assertFails(lc_list_get_string(list, 2, &text), NOT_FOUND, "lc_list_get_string: index 2 out of range (count 2)")
        assertFails(lc_list_get_int(list, Int(bitPattern: UInt.max), &int), NOT_FOUND,
                    "lc_list_get_int: index 18446744073709551615 out of range (count 2)")
        assertFails(lc_list_get_double(list, 9, &double), NOT_FOUND, "lc_list_get_double: index 9 out of range (count 2)")
        assertFails(lc_list_get_bool(list, 2, &bool), NOT_FOUND, "lc_list_get_bool: index 2 out of range (count 2)")
        assertFails(lc_list_get_dict(list, 2, &dict), NOT_FOUND, "lc_list_get_dict: index 2 out of range (count 2)")
        assertFails(lc_list_get_string(list, 1, &text), MISMATCH, "lc_list_get_string: item 1 holds an int, not a string")
        assertFails(lc_list_get_int(list, 0, &int), MISMATCH, "lc_list_get_int: item 0 holds a string, not an int")
        assertFails(lc_list_get_double(list, 0, &double), MISMATCH, "lc_list_get_double: item 0 holds a string, not a double")
        assertFails(lc_list_get_bool(list, 1, &bool), MISMATCH, "lc_list_get_bool: item 1 holds an int, not a bool")
        assertFails(lc_list_get_dict(list, 0, &dict), MISMATCH, "lc_list_get_dict: item 0 holds a string, not a dict")
        XCTAssertNil(text)
        XCTAssertEqual(int, 77)
        XCTAssertEqual(double, 7.7)
        XCTAssertTrue(bool)
        XCTAssertNil(dict)
        XCTAssertEqual(lc_list_type_at(list, 2), lc_value_type(LC_VALUE_NONE))
        XCTAssertEqual(lc_list_get_string(list, 0, &text), OK)
        var again: UnsafePointer<CChar>?
        XCTAssertEqual(lc_list_get_string(list, 0, &again), OK)
        XCTAssertEqual(text, again, "read twice: the same string")
    }

    func testNullArguments() {
        let d = newDict()
        let l = newList()
        var text: UnsafePointer<CChar>?
        var int: Int64 = 0
        var double = 0.0
        var bool = false
        var data: UnsafePointer<UInt8>?
        var length = 0
        var dict: OpaquePointer?

        // Functions without a status: a harmless result, and the reason recorded.
        XCTAssertNil(lc_dict_copy(nil))
        XCTAssertEqual(lastError(), "lc_dict_copy: dict is NULL")
        XCTAssertEqual(lc_dict_count(nil), 0)
        XCTAssertEqual(lastError(), "lc_dict_count: dict is NULL")
        XCTAssertNil(lc_dict_key_at(nil, 0))
        XCTAssertEqual(lastError(), "lc_dict_key_at: dict is NULL")
        XCTAssertEqual(lc_dict_type(nil, "k"), lc_value_type(LC_VALUE_NONE))
        XCTAssertEqual(lastError(), "lc_dict_type: dict is NULL")
        XCTAssertEqual(lc_dict_type(d, nil), lc_value_type(LC_VALUE_NONE))
        XCTAssertEqual(lastError(), "lc_dict_type: key is NULL")
        XCTAssertNil(lc_dict_json(nil))
        XCTAssertEqual(lastError(), "lc_dict_json: dict is NULL")
        XCTAssertEqual(lc_list_count(nil), 0)
        XCTAssertEqual(lastError(), "lc_list_count: list is NULL")
        XCTAssertEqual(lc_list_type_at(nil, 0), lc_value_type(LC_VALUE_NONE))
        XCTAssertEqual(lastError(), "lc_list_type_at: list is NULL")

        assertFails(lc_dict_get_string(nil, "k", &text), INVALID, "lc_dict_get_string: dict is NULL")
        assertFails(lc_dict_get_string(d, nil, &text), INVALID, "lc_dict_get_string: key is NULL")
        assertFails(lc_dict_get_string(d, "k", nil), INVALID, "lc_dict_get_string: out is NULL")
        assertFails(lc_dict_get_int(nil, "k", &int), INVALID, "lc_dict_get_int: dict is NULL")
        assertFails(lc_dict_get_int(d, nil, &int), INVALID, "lc_dict_get_int: key is NULL")
        assertFails(lc_dict_get_int(d, "k", nil), INVALID, "lc_dict_get_int: out is NULL")
        assertFails(lc_dict_get_double(nil, "k", &double), INVALID, "lc_dict_get_double: dict is NULL")
        assertFails(lc_dict_get_double(d, nil, &double), INVALID, "lc_dict_get_double: key is NULL")
        assertFails(lc_dict_get_double(d, "k", nil), INVALID, "lc_dict_get_double: out is NULL")
        assertFails(lc_dict_get_bool(nil, "k", &bool), INVALID, "lc_dict_get_bool: dict is NULL")
        assertFails(lc_dict_get_bool(d, nil, &bool), INVALID, "lc_dict_get_bool: key is NULL")
        assertFails(lc_dict_get_bool(d, "k", nil), INVALID, "lc_dict_get_bool: out is NULL")
        assertFails(lc_dict_get_bytes(nil, "k", &data, &length), INVALID, "lc_dict_get_bytes: dict is NULL")
        assertFails(lc_dict_get_bytes(d, nil, &data, &length), INVALID, "lc_dict_get_bytes: key is NULL")
        assertFails(lc_dict_get_bytes(d, "k", nil, &length), INVALID, "lc_dict_get_bytes: data is NULL")
        assertFails(lc_dict_get_bytes(d, "k", &data, nil), INVALID, "lc_dict_get_bytes: length is NULL")
        assertFails(lc_dict_get_dict(nil, "k", &dict), INVALID, "lc_dict_get_dict: dict is NULL")
        assertFails(lc_dict_get_dict(d, nil, &dict), INVALID, "lc_dict_get_dict: key is NULL")
        assertFails(lc_dict_get_dict(d, "k", nil), INVALID, "lc_dict_get_dict: out is NULL")
        assertFails(lc_dict_get_list(nil, "k", &dict), INVALID, "lc_dict_get_list: dict is NULL")
        assertFails(lc_dict_get_list(d, nil, &dict), INVALID, "lc_dict_get_list: key is NULL")
        assertFails(lc_dict_get_list(d, "k", nil), INVALID, "lc_dict_get_list: out is NULL")

        assertFails(lc_dict_set_string(nil, "k", "v"), INVALID, "lc_dict_set_string: dict is NULL")
        assertFails(lc_dict_set_string(d, nil, "v"), INVALID, "lc_dict_set_string: key is NULL")
        assertFails(lc_dict_set_string(d, "k", nil), INVALID, "lc_dict_set_string: value is NULL")
        assertFails(lc_dict_set_int(nil, "k", 1), INVALID, "lc_dict_set_int: dict is NULL")
        assertFails(lc_dict_set_int(d, nil, 1), INVALID, "lc_dict_set_int: key is NULL")
        assertFails(lc_dict_set_double(nil, "k", 1), INVALID, "lc_dict_set_double: dict is NULL")
        assertFails(lc_dict_set_double(d, nil, 1), INVALID, "lc_dict_set_double: key is NULL")
        assertFails(lc_dict_set_bool(nil, "k", true), INVALID, "lc_dict_set_bool: dict is NULL")
        assertFails(lc_dict_set_bool(d, nil, true), INVALID, "lc_dict_set_bool: key is NULL")
        assertFails(lc_dict_set_bytes(nil, "k", [1] as [UInt8], 1), INVALID, "lc_dict_set_bytes: dict is NULL")
        assertFails(lc_dict_set_bytes(d, nil, [1] as [UInt8], 1), INVALID, "lc_dict_set_bytes: key is NULL")
        assertFails(lc_dict_set_bytes(d, "k", nil, 1), INVALID, "lc_dict_set_bytes: data is NULL")
        assertFails(lc_dict_set_bytes(d, "k", [1] as [UInt8], Int(bitPattern: UInt.max)), INVALID,
                    "lc_dict_set_bytes: length 18446744073709551615 is too large")
        assertFails(lc_dict_set_dict(nil, "k", d), INVALID, "lc_dict_set_dict: dict is NULL")
        assertFails(lc_dict_set_dict(d, nil, d), INVALID, "lc_dict_set_dict: key is NULL")
        assertFails(lc_dict_set_dict(d, "k", nil), INVALID, "lc_dict_set_dict: value is NULL")
        assertFails(lc_dict_set_list(nil, "k", l), INVALID, "lc_dict_set_list: dict is NULL")
        assertFails(lc_dict_set_list(d, nil, l), INVALID, "lc_dict_set_list: key is NULL")
        assertFails(lc_dict_set_list(d, "k", nil), INVALID, "lc_dict_set_list: value is NULL")
        assertFails(lc_dict_remove(nil, "k"), INVALID, "lc_dict_remove: dict is NULL")
        assertFails(lc_dict_remove(d, nil), INVALID, "lc_dict_remove: key is NULL")

        assertFails(lc_list_get_string(nil, 0, &text), INVALID, "lc_list_get_string: list is NULL")
        assertFails(lc_list_get_string(l, 0, nil), INVALID, "lc_list_get_string: out is NULL")
        assertFails(lc_list_get_int(nil, 0, &int), INVALID, "lc_list_get_int: list is NULL")
        assertFails(lc_list_get_int(l, 0, nil), INVALID, "lc_list_get_int: out is NULL")
        assertFails(lc_list_get_double(nil, 0, &double), INVALID, "lc_list_get_double: list is NULL")
        assertFails(lc_list_get_double(l, 0, nil), INVALID, "lc_list_get_double: out is NULL")
        assertFails(lc_list_get_bool(nil, 0, &bool), INVALID, "lc_list_get_bool: list is NULL")
        assertFails(lc_list_get_bool(l, 0, nil), INVALID, "lc_list_get_bool: out is NULL")
        assertFails(lc_list_get_dict(nil, 0, &dict), INVALID, "lc_list_get_dict: list is NULL")
        assertFails(lc_list_get_dict(l, 0, nil), INVALID, "lc_list_get_dict: out is NULL")
        assertFails(lc_list_append_string(nil, "v"), INVALID, "lc_list_append_string: list is NULL")
        assertFails(lc_list_append_string(l, nil), INVALID, "lc_list_append_string: value is NULL")
        assertFails(lc_list_append_int(nil, 1), INVALID, "lc_list_append_int: list is NULL")
        assertFails(lc_list_append_double(nil, 1), INVALID, "lc_list_append_double: list is NULL")
        assertFails(lc_list_append_bool(nil, true), INVALID, "lc_list_append_bool: list is NULL")
        assertFails(lc_list_append_dict(nil, d), INVALID, "lc_list_append_dict: list is NULL")
        assertFails(lc_list_append_dict(l, nil), INVALID, "lc_list_append_dict: value is NULL")

        // Nothing was stored by any of the failures.
        XCTAssertEqual(json(d), "{}")
        XCTAssertEqual(lc_list_count(l), 0)
    }

    func testInvalidUTF8() {
        let d = newDict()
        let l = newList()
        XCTAssertEqual(lc_dict_set_int(d, "k", 1), OK)
        var int: Int64 = 0
        assertFails(lc_dict_set_string(d, badUTF8, "v"), INVALID, "lc_dict_set_string: key is not valid UTF-8")
        assertFails(lc_dict_set_string(d, "k", badUTF8), INVALID, "lc_dict_set_string: value is not valid UTF-8")
        assertFails(lc_dict_set_int(d, badUTF8, 1), INVALID, "lc_dict_set_int: key is not valid UTF-8")
        assertFails(lc_dict_get_int(d, badUTF8, &int), INVALID, "lc_dict_get_int: key is not valid UTF-8")
        assertFails(lc_dict_remove(d, badUTF8), INVALID, "lc_dict_remove: key is not valid UTF-8")
        XCTAssertEqual(lc_dict_type(d, badUTF8), lc_value_type(LC_VALUE_NONE))
        XCTAssertEqual(lastError(), "lc_dict_type: key is not valid UTF-8")
        assertFails(lc_list_append_string(l, badUTF8), INVALID, "lc_list_append_string: value is not valid UTF-8")
        XCTAssertEqual(json(d), #"{"k":1}"#)
        XCTAssertEqual(lc_list_count(l), 0)
    }

    // MARK: - Host helpers and the plugin table

    func testMakeDictAndUserInfo() {
        let info: UserInfo = ["a": 1, "b": ["c": "d"], "e": [true, 2.5]]
        let dict = makeDict(info)
        dicts.append(dict)
        XCTAssertEqual(userInfo(from: dict), info)
        XCTAssertNil(userInfo(from: nil))
        XCTAssertNil(listItems(from: nil))
        XCTAssertEqual(json(dict), #"{"a":1,"b":{"c":"d"},"e":[true,2.5]}"#)
        XCTAssertEqual(lc_dict_set_int(dict, "a", 2), OK)
        XCTAssertEqual(userInfo(from: dict)?["a"], 2)
    }

    func testDictAPITable() throws {
        let api = lcDictAPI.pointee
        XCTAssertEqual(api.struct_size, UInt32(MemoryLayout<lc_dict_api_t>.size))
        XCTAssertEqual(lcDictAPI, lcDictAPI, "one table for the process")
        let create = try XCTUnwrap(api.create), copy = try XCTUnwrap(api.copy), destroy = try XCTUnwrap(api.destroy)
        let count = try XCTUnwrap(api.count), keyAt = try XCTUnwrap(api.key_at), type = try XCTUnwrap(api.type)
        let toJSON = try XCTUnwrap(api.json)
        let getString = try XCTUnwrap(api.get_string), getInt = try XCTUnwrap(api.get_int)
        let getDouble = try XCTUnwrap(api.get_double), getBool = try XCTUnwrap(api.get_bool)
        let getBytes = try XCTUnwrap(api.get_bytes), getDict = try XCTUnwrap(api.get_dict)
        let setString = try XCTUnwrap(api.set_string), setInt = try XCTUnwrap(api.set_int)
        let setDouble = try XCTUnwrap(api.set_double), setBool = try XCTUnwrap(api.set_bool)
        let setBytes = try XCTUnwrap(api.set_bytes), setDict = try XCTUnwrap(api.set_dict)
        let remove = try XCTUnwrap(api.remove)

        let dict = create()
        XCTAssertEqual(setString(dict, "s", "v"), OK)
        XCTAssertEqual(setInt(dict, "i", 5), OK)
        XCTAssertEqual(setDouble(dict, "d", 0.5), OK)
        XCTAssertEqual(setBool(dict, "b", true), OK)
        XCTAssertEqual(setBytes(dict, "y", [0, 9] as [UInt8], 2), OK)
        let inner = create()
        XCTAssertEqual(setInt(inner, "n", 1), OK)
        XCTAssertEqual(setDict(dict, "m", inner), OK)
        destroy(inner)
        XCTAssertEqual(count(dict), 6)
        XCTAssertEqual(string(keyAt(dict, 5)), "m")
        XCTAssertEqual(type(dict, "y"), lc_value_type(LC_VALUE_BYTES))
        XCTAssertEqual(string(toJSON(dict)), #"{"s":"v","i":5,"d":0.5,"b":true,"y":"0x0009","m":{"n":1}}"#)

        var text: UnsafePointer<CChar>?
        XCTAssertEqual(getString(dict, "s", &text), OK)
        XCTAssertEqual(string(text), "v")
        var int: Int64 = 0
        XCTAssertEqual(getInt(dict, "i", &int), OK)
        XCTAssertEqual(int, 5)
        var double = 0.0
        XCTAssertEqual(getDouble(dict, "d", &double), OK)
        XCTAssertEqual(double, 0.5)
        var bool = false
        XCTAssertEqual(getBool(dict, "b", &bool), OK)
        XCTAssertTrue(bool)
        var data: UnsafePointer<UInt8>?
        var length = 0
        XCTAssertEqual(getBytes(dict, "y", &data, &length), OK)
        XCTAssertEqual(Array(UnsafeBufferPointer(start: data, count: length)), [0, 9])
        var nested: OpaquePointer?
        XCTAssertEqual(getDict(dict, "m", &nested), OK)
        XCTAssertEqual(getInt(nested, "n", &int), OK)
        XCTAssertEqual(int, 1)

        let duplicate = copy(dict)
        XCTAssertEqual(remove(dict, "s"), OK)
        assertFails(remove(dict, "s"), NOT_FOUND, "lc_dict_remove: no key 's'")
        assertFails(getInt(dict, "s", &int), NOT_FOUND, "lc_dict_get_int: no key 's'")
        assertFails(getInt(nil, "s", &int), INVALID, "lc_dict_get_int: dict is NULL")
        XCTAssertEqual(count(duplicate), 6)
        destroy(duplicate)
        destroy(dict)
        destroy(nil)
    }
}
