import AppLifecycle
import CLifecycle
import CLifecycleABI
import Foundation
import Synchronization
import TestSupport
import XCTest
@testable import LifecycleC

/// A completion result outside `lc_fetch_result` (0, 1, 2) given to ABI 1.1's `complete` is refused
/// with LC_ERR_INVALID_ARGUMENT and completes nothing: the request stays open for a call with a valid
/// result — through the token table, and through a real plugin in the host's process and isolated.
final class CompletionResultABITests: XCTestCase {
    func testAResultOutsideItsEnumIsRefusedAndTheRequestStaysOpen() {
        let results = Mutex<[FetchResult]>([])
        let handler = FetchCompletionHandler { result, _ in results.withLock { $0.append(result) } }
        let token = Completions.register(handler, owner: nil, label: "test fetch", logger: nil)
        XCTAssertEqual(Completions.complete(token, 99, caller: nil, function: "complete"), lc_status(LC_ERR_INVALID_ARGUMENT))
        XCTAssertEqual(String(cString: lc_last_error_message()),
                       "complete: a caller completed token \(token) with result 99; LC_FETCH_NEW_DATA (0), LC_FETCH_NO_DATA (1) "
                           + "or LC_FETCH_FAILED (2); nothing was completed")
        XCTAssertFalse(handler.wasCalled)
        XCTAssertEqual(results.withLock { $0 }, [])
        // Still open: a valid result completes it, once.
        XCTAssertEqual(Completions.complete(token, lc_fetch_result(LC_FETCH_NO_DATA), caller: nil, function: "complete"), lc_status(LC_OK))
        XCTAssertEqual(results.withLock { $0 }, [.noData])

        // lc_delegate_t's complete returns nothing to refuse with: an unknown result counts as failed,
        // as documented (so does ABI 1.0's function pointer: FFIDelegateTests).
        let silent = Mutex<[FetchResult]>([])
        let other = Completions.register(FetchCompletionHandler { result, _ in silent.withLock { $0.append(result) } }, owner: nil,
                                         label: "test fetch", logger: nil)
        Completions.delegateComplete(UnsafeMutableRawPointer(bitPattern: UInt(other)), 0xFFFF_FFFF)
        XCTAssertEqual(silent.withLock { $0 }, [.failed])
    }

    func testAPluginCompletingWithNinetyNineIsRefusedInProcessAndIsolated() throws {
        let plugin = try IsolationFixtures.build("""
            #include "lifecycle.h"
            #include <stdio.h>
            static void perform_fetch(lc_plugin *plugin, void *state, lc_complete_fn complete, lc_completion_token token) {
                (void)state;
                lc_status wrong = complete(plugin, token, 99);
                lc_status high = complete(plugin, token, 0x80000000u);
                lc_status right = complete(plugin, token, LC_FETCH_NO_DATA);
                printf("c99: 99 -> %d, 0x80000000 -> %d, LC_FETCH_NO_DATA -> %d\\n", (int)wrong, (int)high, (int)right);
                fflush(stdout);
            }
            static const lc_plugin_delegate_t delegate = { .struct_size = sizeof(lc_plugin_delegate_t), .perform_fetch = perform_fetch };
            static lc_status fixture_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
                (void)state; return host->set_delegate(plugin, &delegate);
            }
            \(IsolationFixtures.descriptorSource("com.example.c99"))
            """, named: "c99")
        let folder = try CBuild.temporaryFolder("c99")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = folder + "/fetch.scenario"
        try "fetch\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        for extra in [[], ["--isolate"]] {
            let result = try CBuild.run(CBuild.products + "/lifecycle-host", [
                "run", "--trace", "json", "--no-socket", "--no-signals", "--no-pressure", "--no-clock", "--background-mode", "fetch",
                "--script", script, "--plugin", plugin,
            ] + extra)
            XCTAssertEqual(result.status, 0, "\(extra): \(result.output)")
            // With the JSON trace on standard output, what the plugin prints goes to standard error.
            let lines = result.output.split(separator: "\n").map(String.init)
            XCTAssertEqual(lines.filter { $0.hasPrefix("c99: ") }, ["c99: 99 -> -1, 0x80000000 -> -1, LC_FETCH_NO_DATA -> 0"], "\(extra)")
            // The request was completed once, with the valid result; nothing was reported as called again.
            let completions = lines.filter { $0.contains("\"kind\":\"completion\"") }
            XCTAssertEqual(completions.map { $0.contains("\"plugin\":\"com.example.c99\",\"detail\":\"noData\"}") }, [true], "\(extra): \(result.output)")
            XCTAssertFalse(result.output.contains("\"kind\":\"error\""), "\(extra): \(result.output)")
        }
    }
}
