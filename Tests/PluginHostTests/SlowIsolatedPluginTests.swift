import AppLifecycle
import Foundation
import LifecycleC
import LifecycleRunLoop
import PluginHost
import TestSupport
import XCTest

/// A slow isolated plugin never blocks the host's loop (docs/host.md, "A slow plugin"): a burst it
/// cannot take is held and coalesced, one notification per observer and name, and the plugin is not
/// failed for the time it spends on the notifications before the one it runs.
final class SlowIsolatedPluginTests: XCTestCase {
    override func setUp() {
        IsolationRunner.executable = CBuild.products + "/lifecycle-plugin-runner"
    }

    /// A plugin observing `com.example.slow.a` and `.b`, 1 ms in each notification, writing "a N" or
    /// "b N" (N: the userInfo's "n") to `log`.
    static func slowPlugin(log: String) -> String {
        """
        #include "lifecycle.h"
        #include <stdio.h>
        #include <unistd.h>
        static const lc_host_api_t *host;
        static FILE *out;
        static lc_name a, b;
        static void seen(const lc_notification_t *note, void *ctx) {
            (void)ctx;
            int64_t n = -1;
            if (note->user_info) host->dict->get_int(note->user_info, "n", &n);
            fprintf(out, "%s %lld\\n", note->name_id == a ? "a" : "b", (long long)n);
            fflush(out);
            usleep(1000);
        }
        static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
            (void)state; host = api;
            out = fopen("\(log)", "w");
            if (!out) return LC_ERR_SYSTEM;
            lc_status status = host->name_intern(plugin, "com.example.slow.a", &a);
            if (status == LC_OK) status = host->name_intern(plugin, "com.example.slow.b", &b);
            if (status == LC_OK) status = host->observe_name(plugin, a, NULL, seen, NULL, NULL);
            if (status == LC_OK) status = host->observe_name(plugin, b, NULL, seen, NULL, NULL);
            return status;
        }
        \(IsolationFixtures.descriptorSource("com.example.slow"))
        """
    }

    /// The trace's payloads, as they come.
    final class Box: @unchecked Sendable { var events: [TraceEvent.Payload] = [] }

    /// The slow plugin built in a folder of its own and loaded isolated, with a 1 s isolated-call
    /// budget (the queue the plugin is behind on takes it longer than that), into a launched
    /// application whose trace `box` collects; its names and a 1 KiB userInfo value to post.
    struct Rig {
        let folder: String, log: String
        let handle: AppHandle
        let box = Box()
        let a: NotificationName, b: NotificationName
        let pad = UserInfoValue.string(String(repeating: "x", count: 1000))

        init(_ name: String) throws {
            folder = try CBuild.temporaryFolder(name)
            log = folder + "/seen.txt"
            let path = try CBuild.sharedObject(SlowIsolatedPluginTests.slowPlugin(log: log), named: "slow", in: folder)
            let handle = try AppHandle(configuration: Configuration())
            self.handle = handle
            let box = box
            handle.swiftTraceHandler = { box.events.append($0.payload) }
            var settings = IsolationSettings()
            settings.callBudget = .seconds(1)
            do {
                _ = try handle.loadIsolatedPlugin(path: path, settings: settings)
                try handle.app.perform(.launch())
            } catch {
                handle.shutdown()
                throw error
            }
            a = try NotificationName("com.example.slow.a")
            b = try NotificationName("com.example.slow.b")
        }

        func close() {
            handle.shutdown()
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    func testABurstASlowPluginCannotTakeIsCoalescedWithoutBlockingTheLoopOrFailingThePlugin() throws {
        let rig = try Rig("slow-isolated")
        defer { rig.close() }
        let (handle, box, log, a, b, pad) = (rig.handle, rig.box, rig.log, rig.a, rig.b, rig.pad)

        // 5,000 notifications of 1 KiB, a and b in turn: 5 s of the plugin's time, posted at once.
        let clock = ContinuousClock()
        let posting = clock.measure {
            for n in 0..<5_000 { _ = handle.app.center.post(n % 2 == 0 ? a : b, userInfo: ["n": .int(Int64(n)), "pad": pad]) }
        }
        XCTAssertLessThan(posting, .seconds(1), "the loop did not wait for the plugin")

        func backlogs() -> [PluginBacklog] {
            box.events.compactMap { if case .pluginBacklog("com.example.slow", let backlog) = $0 { return backlog } else { return nil } }
        }
        let deadline = MonotonicInstant.now + .seconds(30)
        while backlogs().count < 2, MonotonicInstant.now < deadline { try handle.loop.run(for: .milliseconds(5)) }
        try handle.app.perform(.home)  // the end of an action: the plugin has run everything sent

        XCTAssertFalse(box.events.contains { if case .pluginFailed = $0 { return true } else { return false } },
                       "not failed: each notification took 1 ms of its 1 s budget")
        let seen = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
        let events = backlogs()
        guard events.count == 2, case .behind(let waiting, _) = events[0], case .caughtUp(let held, let delivered, _) = events[1] else {
            return XCTFail("a behind and a caught-up event, in that order: \(events)")
        }
        XCTAssertGreaterThan(waiting, 1 << 20, "behind once over 1 MiB waiting")
        XCTAssertEqual(delivered, 2, "one of each observer and name")
        let sentBefore = 5_000 - held
        XCTAssertGreaterThan(sentBefore, 500)
        XCTAssertEqual(seen.count, sentBefore + 2)
        XCTAssertEqual(Array(seen.prefix(sentBefore)), (0..<sentBefore).map { "\($0 % 2 == 0 ? "a" : "b") \($0)" }, "sent before: all, in order")
        // The latest of each, in the order each name was first held.
        XCTAssertEqual(Array(seen.suffix(2)), sentBefore % 2 == 0 ? ["a 4998", "b 4999"] : ["b 4999", "a 4998"])
        XCTAssertEqual(events[1].coalesced, held - 2)
    }

    /// Any other frame sends what is held first: a delegate call or the end of an action keeps its
    /// place after the notifications posted before it.
    func testAnActionSendsWhatIsHeldFirst() throws {
        let rig = try Rig("slow-isolated-order")
        defer { rig.close() }
        let (handle, box, log, a, b, pad) = (rig.handle, rig.box, rig.log, rig.a, rig.b, rig.pad)
        for n in 0..<3_000 { _ = handle.app.center.post(n % 2 == 0 ? a : b, userInfo: ["n": .int(Int64(n)), "pad": pad]) }
        XCTAssertTrue(box.events.contains { if case .pluginBacklog(_, .behind) = $0 { return true } else { return false } }, "it fell behind")
        try handle.app.perform(.home)  // waits until the plugin has run everything, the held ones included
        let seen = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(Set(seen.suffix(2)), ["a 2998", "b 2999"], "the held notifications came before the end of the action")
        XCTAssertFalse(box.events.contains { if case .pluginFailed = $0 { return true } else { return false } })
    }
}
