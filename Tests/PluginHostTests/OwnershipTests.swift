import AppLifecycle
import CLifecycle
import CLifecycleABI
import CLifecycleSystem
import Foundation
import Glibc
import Synchronization
import TestSupport
import XCTest
@testable import LifecycleC
@testable import PluginHost

/// Issue 8, ownership: a plugin can remove, end or cancel only what it registered itself, and its
/// host-API table is its own, read-only copy.
final class OwnershipTests: XCTestCase {
    /// One plugin source, built twice under two ids: each image exports the same helpers.
    static let source = """
        #include <string.h>
        static lc_plugin *me;
        static void on_note(const lc_notification_t *n, void *c) { (void)n, (void)c; }
        static void on_timer(void *c) { (void)c; }
        LC_EXPORT uint64_t own_observe(void) {
            lc_observer_token t = 0;
            return host->observe(me, "com.example.ping", NULL, on_note, NULL, &t) == LC_OK ? t : 0;
        }
        LC_EXPORT int own_remove_observer(uint64_t t) { return host->remove_observer(me, t); }
        LC_EXPORT uint64_t own_begin_task(void) {
            lc_task_id t = 0;
            return host->begin_background_task(me, "work", NULL, NULL, &t) == LC_OK ? t : 0;
        }
        LC_EXPORT int own_end_task(uint64_t t) { return host->end_background_task(me, t); }
        LC_EXPORT uint64_t own_add_timer(void) {
            lc_source_id t = 0;
            return host->add_timer(me, 60.0, on_timer, NULL, &t) == LC_OK ? t : 0;
        }
        LC_EXPORT int own_cancel_timer(uint64_t t) { return host->cancel_timer(me, t); }
        LC_EXPORT const lc_host_api_t *own_table(void) { return host; }
        LC_EXPORT void own_write_table(void) { ((lc_host_api_t *)host)->remove_observer = NULL; }
        static int pings;
        static void on_ping(const lc_notification_t *n, void *c) { (void)c; if (n->name_id != 0) pings++; }
        LC_EXPORT int own_names(void) {
            lc_name name = 0, alias = 0, bad = 0;
            if (host->name_intern(me, "com.example.named", &name) != LC_OK) return -1;
            if (host->name_intern(me, "UIApplicationDidBecomeActiveNotification", &alias) != LC_OK || alias != LC_NAME_DID_BECOME_ACTIVE) return -2;
            if (host->name_intern(me, "didBecomeActiv", &bad) != LC_ERR_UNKNOWN_NAME) return -3;
            lc_observer_token t = 0;
            if (host->observe_name(me, name, NULL, on_ping, NULL, &t) != LC_OK) return -4;
            if (host->post_name(me, name, NULL, NULL) != LC_OK) return -5;
            if (host->post_name(me, 4000000000u, NULL, NULL) != LC_ERR_UNKNOWN_NAME) return -6;
            if (host->remove_observer(me, t) != LC_OK) return -7;
            return pings;
        }
        """

    final class Image: @unchecked Sendable {
        let handle: UnsafeMutableRawPointer
        init(_ path: String) throws { handle = try XCTUnwrap(dlopen(path, RTLD_NOW | RTLD_NOLOAD)) }
        func fn<T>(_ name: String, _ type: T.Type) -> T { unsafeBitCast(dlsym(handle, name)!, to: type) }
        var observe: UInt64 { fn("own_observe", (@convention(c) () -> UInt64).self)() }
        func removeObserver(_ t: UInt64) -> Int32 { fn("own_remove_observer", (@convention(c) (UInt64) -> Int32).self)(t) }
        var beginTask: UInt64 { fn("own_begin_task", (@convention(c) () -> UInt64).self)() }
        func endTask(_ t: UInt64) -> Int32 { fn("own_end_task", (@convention(c) (UInt64) -> Int32).self)(t) }
        var addTimer: UInt64 { fn("own_add_timer", (@convention(c) () -> UInt64).self)() }
        func cancelTimer(_ t: UInt64) -> Int32 { fn("own_cancel_timer", (@convention(c) (UInt64) -> Int32).self)(t) }
        var table: UnsafeRawPointer { fn("own_table", (@convention(c) () -> UnsafeRawPointer).self)() }
        var writeTable: @convention(c) () -> Void { fn("own_write_table", (@convention(c) () -> Void).self) }
        var names: Int32 { fn("own_names", (@convention(c) () -> Int32).self)() }
    }

    var folder = ""
    var handle: AppHandle!
    var a: Image!
    var b: Image!

    override func setUpWithError() throws {
        folder = try CBuild.temporaryFolder("ownership")
        handle = try AppHandle(configuration: Configuration())
        var images: [Image] = []
        for name in ["a", "b"] {
            let path = try CBuild.sharedObject(CBuild.plugin(id: "com.example.owner-\(name)", initBody: "me = plugin; return LC_OK;",
                                                             extra: Self.source), named: name, in: folder)
            _ = try handle.loadPlugin(path: path)
            images.append(try Image(path))
        }
        a = images[0]
        b = images[1]
        try handle.app.perform(.launch())
    }

    override func tearDown() {
        handle?.shutdown()
        try? FileManager.default.removeItem(atPath: folder)
    }

    var lastMessage: String { String(cString: lc_last_error_message()) }

    func testAPluginCannotRemoveAnotherPluginsObserver() throws {
        let token = a.observe
        XCTAssertNotEqual(token, 0)
        XCTAssertEqual(b.removeObserver(token), lc_status(LC_ERR_NOT_FOUND))
        XCTAssertEqual(lastMessage, "remove_observer: plugin 'com.example.owner-b' has no observer with token \(token)")
        XCTAssertEqual(handle.app.center.observerCount(for: try NotificationName("com.example.ping")), 1, "still there")
        // Nor a host observer, nor a guessed neighbour of its own token.
        let host = handle.app.center.observe(try NotificationName("com.example.ping")) { _ in }
        XCTAssertEqual(b.removeObserver(host.rawValue), lc_status(LC_ERR_NOT_FOUND))
        XCTAssertEqual(b.removeObserver(token + 1), lc_status(LC_ERR_NOT_FOUND))
        XCTAssertEqual(a.removeObserver(token), lc_status(LC_OK), "the owner can")
        XCTAssertEqual(a.removeObserver(token), lc_status(LC_ERR_NOT_FOUND), "once")
        XCTAssertEqual(handle.app.center.observerCount(for: try NotificationName("com.example.ping")), 1)
    }

    func testPluginsInternObserveAndPostByNameThroughTheirTable() throws {
        // Interns, aliases and misspellings behave as lc_name_intern; the post reaches the observer
        // synchronously on the main thread; an unknown id is refused; the observer is the plugin's own.
        XCTAssertEqual(a.names, 1)
        XCTAssertEqual(handle.app.center.observerCount(for: try NotificationName("com.example.named")), 0)
    }

    func testAPluginCannotEndAnotherPluginsBackgroundTask() throws {
        let task = a.beginTask
        XCTAssertNotEqual(task, 0)
        XCTAssertEqual(b.endTask(task), lc_status(LC_ERR_NOT_FOUND))
        XCTAssertEqual(lastMessage, "end_background_task: plugin 'com.example.owner-b' has no open background task \(task)")
        XCTAssertEqual(handle.app.backgroundTasks.map(\.id.rawValue), [task])
        // From another thread too: refused on the calling thread, nothing queued.
        let done = expectation(description: "thread")
        let status = Mutex<Int32>(0)
        let b = self.b!
        Thread.detachNewThread { status.withLock { $0 = b.endTask(task) }; done.fulfill() }
        wait(for: [done], timeout: 5)
        XCTAssertEqual(status.withLock { $0 }, lc_status(LC_ERR_NOT_FOUND))
        handle.loop.dispatchPending()
        XCTAssertEqual(handle.app.backgroundTasks.map(\.id.rawValue), [task])
        XCTAssertEqual(a.endTask(task), lc_status(LC_OK))
        XCTAssertEqual(handle.app.backgroundTasks.count, 0)
    }

    func testAPluginCannotCancelAnotherPluginsTimer() throws {
        let timer = a.addTimer
        XCTAssertNotEqual(timer, 0)
        XCTAssertEqual(b.cancelTimer(timer), lc_status(LC_ERR_NOT_FOUND))
        XCTAssertEqual(lastMessage, "cancel_timer: plugin 'com.example.owner-b' has no timer \(timer)")
        let hostTimer = handle.addTimer(seconds: 60, owner: nil) {}
        XCTAssertEqual(b.cancelTimer(hostTimer), lc_status(LC_ERR_NOT_FOUND), "nor the host's")
        XCTAssertEqual(a.cancelTimer(timer), lc_status(LC_OK))
        XCTAssertEqual(a.cancelTimer(timer), lc_status(LC_ERR_NOT_FOUND))
        XCTAssertTrue(handle.cancelTimer(hostTimer))
    }

    func testEachPluginHasItsOwnReadOnlyTable() throws {
        XCTAssertNotEqual(a.table, b.table, "a private copy each")
        let tableA = a.table.assumingMemoryBound(to: lc_host_api_t.self)
        XCTAssertEqual(Int(tableA.pointee.struct_size), MemoryLayout<lc_host_api_t>.size)
        XCTAssertNotEqual(UnsafeRawPointer(tableA.pointee.dict), UnsafeRawPointer(lcDictAPI), "the dictionary table is copied too")
        // The page is mapped read-only.
        // Read line by line (a /proc file reports size 0, so whole-file readers may stop early).
        var maps = ""
        let file = try XCTUnwrap(fopen("/proc/self/maps", "r"))
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        while getline(&buffer, &capacity, file) > 0 { maps += String(cString: buffer!) }
        free(buffer)
        fclose(file)
        let address = UInt(bitPattern: a.table)
        let line = try XCTUnwrap(maps.split(separator: "\n").first { line in
            let range = line.split(separator: " ")[0].split(separator: "-").map { UInt($0, radix: 16)! }
            return range[0] <= address && address < range[1]
        })
        XCTAssertTrue(line.split(separator: " ")[1].hasPrefix("r--"), String(line))
        // A write faults in the writer: a forked child dies of SIGSEGV.
        let write = a.writeTable
        let pid = fork()
        if pid == 0 {
            signal(SIGSEGV, SIG_DFL)  // die of it plainly, without the Swift runtime's backtracer
            write()
            _exit(0)
        }
        var status: Int32 = 0
        XCTAssertEqual(waitpid(pid, &status, 0), pid)
        let signaled = (status & 0x7F) != 0 && (status & 0x7F) != 0x7F
        XCTAssertTrue(signaled, "the child was killed by a signal (status \(status))")
        XCTAssertEqual(status & 0x7F, SIGSEGV)
        // The parent's tables are untouched and keep working.
        XCTAssertNotEqual(a.observe, 0)
    }

    /// Unloading a plugin with 100,000 observers (spread over ten names, interleaved with another
    /// plugin's) removes them in one pass per list.
    func testUnloadingAHundredThousandObserversIsFast() throws {
        let path = try CBuild.sharedObject(CBuild.plugin(id: "com.example.many", initBody: """
            static const char *names[] = {"com.example.n0", "com.example.n1", "com.example.n2", "com.example.n3",
                "com.example.n4", "com.example.n5", "com.example.n6", "com.example.n7", "com.example.n8", "com.example.n9"};
            for (int i = 0; i < 100000; i++) {
                lc_status s = host->observe(plugin, names[i % 10], NULL, on_note, NULL, NULL);
                if (s != LC_OK) return s;
            }
            return LC_OK;
            """, extra: "static void on_note(const lc_notification_t *n, void *c) { (void)n, (void)c; }"), named: "many", in: folder)
        for i in 0..<10 { _ = a.observe; _ = try NotificationName("com.example.n\(i)") }
        let plugin = try handle.loadPlugin(path: path)
        let names = try (0..<10).map { try NotificationName("com.example.n\($0)") }
        XCTAssertEqual(names.map { handle.app.center.observerCount(for: $0) }.reduce(0, +), 100_000)
        let start = MonotonicInstant.now
        handle.unload(plugin)
        let elapsed = MonotonicInstant.now.duration(since: start)
        XCTAssertEqual(names.map { handle.app.center.observerCount(for: $0) }.reduce(0, +), 0)
        XCTAssertEqual(handle.app.center.observerCount(for: try NotificationName("com.example.ping")), 10, "the other plugin's stay")
        XCTAssertLessThan(elapsed, .milliseconds(50), "unloading 100,000 observers took \(elapsed)")
    }
}
