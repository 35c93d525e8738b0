import AppLifecycle
import CLifecycle
import CLifecycleABI
import Foundation
import Glibc
import LifecycleRunLoop
import Synchronization
import TestSupport
import XCTest
@testable import LifecycleC
@testable import PluginHost

/// A plugin's own thread posting through its host table (`host->post`, `host->post_name`,
/// `host->perform_async`) is bounded like `lc_app_post_name`: refused with LC_ERR_QUEUE_FULL past
/// 65,536 waiting posts, everything accepted delivered in order.
final class QueueBoundPluginTests: XCTestCase {
    static let source = """
        #include <stdint.h>
        static lc_plugin *me;
        static lc_name flood_name;
        static unsigned long delivered, out_of_order, next_expected;
        static void on_flood(const lc_notification_t *n, void *c) {
            (void)c;
            if ((unsigned long)(uintptr_t)n->sender != next_expected) out_of_order++;
            next_expected = (unsigned long)(uintptr_t)n->sender + 1;
            delivered++;
        }
        static void nothing(void *c) { (void)c; }
        static struct { unsigned long accepted; int status, name_status, async_status, again_status; } result;
        /// Runs on a thread of the test's: posts until refused, then tries the other two ways and the
        /// first once more (whose message the test reads on this thread).
        LC_EXPORT void flood(void) {
            lc_status status;
            while ((status = host->post(me, "com.example.flood", (const void *)(uintptr_t)result.accepted, NULL)) == LC_OK) result.accepted++;
            result.status = status;
            result.name_status = host->post_name(me, flood_name, (const void *)(uintptr_t)result.accepted, NULL);
            result.async_status = host->perform_async(me, nothing, NULL);
            result.again_status = host->post(me, "com.example.flood", (const void *)(uintptr_t)result.accepted, NULL);
        }
        LC_EXPORT unsigned long flood_accepted(void) { return result.accepted; }
        LC_EXPORT int flood_status(int which) {
            return which == 0 ? result.status : which == 1 ? result.name_status : which == 2 ? result.async_status : result.again_status;
        }
        LC_EXPORT unsigned long flood_delivered(void) { return delivered; }
        LC_EXPORT unsigned long flood_out_of_order(void) { return out_of_order; }
        """

    func testAPluginThreadIsRefusedPastItsBoundThroughItsHostTable() throws {
        let folder = try CBuild.temporaryFolder("flood")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let initBody = """
            me = plugin;
            if (host->name_intern(plugin, "com.example.flood", &flood_name) != LC_OK) return LC_ERR_INTERNAL;
            return host->observe_name(plugin, flood_name, NULL, on_flood, NULL, NULL);
            """
        let path = try CBuild.sharedObject(CBuild.plugin(id: "com.example.flood", initBody: initBody, extra: Self.source),
                                           named: "flood", in: folder)
        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        _ = try handle.loadPlugin(path: path)
        try handle.app.perform(.launch())
        let image = try OwnershipTests.Image(path)

        // The loop does not run meanwhile: a thread posts through the plugin's table until refused.
        let flood = image.fn("flood", (@convention(c) () -> Void).self)
        let message = Mutex("")
        let done = DispatchSemaphore(value: 0)
        Thread {
            flood()
            message.withLock { $0 = String(cString: lc_last_error_message()) }
            done.signal()
        }.start()
        done.wait()
        let accepted = image.fn("flood_accepted", (@convention(c) () -> UInt).self)()
        let status = image.fn("flood_status", (@convention(c) (Int32) -> Int32).self)
        XCTAssertEqual(accepted, 65_536)
        XCTAssertEqual(status(0), lc_status(LC_ERR_QUEUE_FULL))
        XCTAssertEqual(status(1), lc_status(LC_ERR_QUEUE_FULL), "post_name is bounded the same way")
        XCTAssertEqual(status(2), lc_status(LC_ERR_QUEUE_FULL), "and perform_async")
        XCTAssertEqual(status(3), lc_status(LC_ERR_QUEUE_FULL))
        XCTAssertEqual(message.withLock { $0 },
                       "post: refused: this thread already has 65536 posts waiting for the main loop (or all threads 1048576); "
                           + "nothing was queued: retry after the loop has run, or post less")

        // Delivery is waited for, not timed: 65,536 posts take a few ms in release and most of a
        // second under ThreadSanitizer. A little more loop after it shows nothing extra arrives.
        let delivered = image.fn("flood_delivered", (@convention(c) () -> UInt).self)
        let deadline = MonotonicInstant.now + .seconds(30)
        while delivered() < 65_536, MonotonicInstant.now < deadline { try handle.loop.run(for: .milliseconds(20)) }
        try handle.loop.run(for: .milliseconds(50))
        XCTAssertEqual(delivered(), 65_536, "every accepted post, none refused")
        XCTAssertEqual(image.fn("flood_out_of_order", (@convention(c) () -> UInt).self)(), 0)
    }
}
