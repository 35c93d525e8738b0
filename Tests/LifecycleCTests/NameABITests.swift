import Foundation
import TestSupport
import XCTest

/// ABI 1.1's interned names, driven by a C program (Fixtures/names.c) compiled at test time against
/// include/lifecycle.h and linked with liblifecycle.so.
final class NameABITests: XCTestCase {
    func testInternedNamesThroughTheCABI() throws {
        let folder = try CBuild.temporaryFolder("names")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (compile, run) = try CBuild.runLinkedProgram("Tests/LifecycleCTests/Fixtures/names.c", in: folder, extra: ["-lpthread"])
        XCTAssertEqual(compile.status, 0, compile.output)
        let result = try XCTUnwrap(run)
        XCTAssertEqual(result.status, 0, result.output)
        let got = result.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(CBuild.mismatchedLines(got, Self.expected), [], result.output)
    }

    static let expected = """
        didEnterBackground 4, alias 4, constant 4
        custom above the standard ids: yes, interned once: yes
        strings: 'didEnterBackground' 'com.example.names.a' 'ubiquityIdentityDidChange' NULL NULL
        standard names that round-trip: 22
        intern didEnterBackgrond -> LC_ERR_UNKNOWN_NAME: unknown notification name 'didEnterBackgrond' (did you mean 'didEnterBackground'?); custom names must be reverse-DNS style, e.g. 'com.example.didEnterBackgrond'
        intern UIApplicationDidBecomeActiveNotificaton -> LC_ERR_UNKNOWN_NAME: unknown notification name 'UIApplicationDidBecomeActiveNotificaton' (did you mean 'didBecomeActive'?); custom names must be reverse-DNS style, e.g. 'com.example.UIApplicationDidBecomeActiveNotificaton'
        intern '' -> LC_ERR_INVALID_NAME: notification name is empty
        intern 'com.example.has space' -> LC_ERR_INVALID_NAME: notification name 'com.example.has space' contains white space or control characters
        intern '\\xff.x' -> LC_ERR_INVALID_NAME: notification name is not valid UTF-8
        intern NULL -> LC_ERR_INVALID_ARGUMENT: lc_name_intern: name is NULL
        intern out NULL -> LC_ERR_INVALID_ARGUMENT: lc_name_intern: out is NULL
        out untouched on error: 77
        post_name a
          first got com.example.names.a
          second got com.example.names.a
          third got com.example.names.a
        post a (string)
          first got com.example.names.a
          second got com.example.names.a
          third got com.example.names.a
        post_name b from the sender, with user_info
          filtered got com.example.names.b v=hello (the poster's dict)
        post_name b from another sender
        post_name a after removing first
          second got com.example.names.a
          third got com.example.names.a
        memory warning
          standard got didReceiveMemoryWarning
        post_name 0 -> LC_ERR_UNKNOWN_NAME: lc_app_post_name: no notification name has id 0 (ids come from lc_name_intern; 0 is never valid)
        post_name 4000000000 -> LC_ERR_UNKNOWN_NAME: lc_app_post_name: no notification name has id 4000000000 (ids come from lc_name_intern; 0 is never valid)
        observe_name 123456 -> LC_ERR_UNKNOWN_NAME: lc_app_observe_name: no notification name has id 123456 (ids come from lc_name_intern; 0 is never valid)
        observe_name fn NULL -> LC_ERR_INVALID_ARGUMENT: lc_app_observe_name: fn is NULL
        post_name app NULL -> LC_ERR_INVALID_ARGUMENT: lc_app_post_name: app is NULL
        observe_name app NULL -> LC_ERR_INVALID_ARGUMENT: lc_app_observe_name: app is NULL
        threads: 0 failed posts, 8000 delivered, 0 out of order, last seqs 1999 1999 1999 1999
        observe_name from a thread: LC_ERR_WRONG_THREAD; unknown id from a thread: LC_ERR_UNKNOWN_NAME
        """
}
