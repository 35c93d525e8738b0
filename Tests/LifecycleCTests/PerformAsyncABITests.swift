import AppLifecycle
import CLifecycle
import CLifecycleABI
import Glibc
import XCTest

/// What the work functions record, on the loop thread: the order of calls (its context's tag) and
/// whether each ran on the main thread.
private struct WorkLog {
    var order: [Int] = []
    var offLoop = 0
    var mainThread: pthread_t
}

nonisolated(unsafe) private var workLog = WorkLog(mainThread: pthread_self())

private let recordWork: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    if pthread_equal(pthread_self(), workLog.mainThread) == 0 { workLog.offLoop += 1 }
    workLog.order.append(Int(bitPattern: context))
}

private let recordPost: lc_observer_fn = { note, _ in
    workLog.order.append(-Int(UInt(bitPattern: note!.pointee.sender)))
}

private let stopWork: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
    _ = lc_app_stop(OpaquePointer(context))
}

/// lc_app_perform_async: fn(ctx) runs on the main run loop's thread, in the calling thread's order with
/// its posts; work still queued when the application is destroyed is dropped, never called. (That a
/// call allocates nothing — the queue's message holds fn and ctx — is the bench's: the cross-thread
/// group's instruction count and its flood-memory row.)
final class PerformAsyncABITests: XCTestCase {
    override func setUp() {
        workLog = WorkLog(mainThread: pthread_self())
    }

    func testWorkFromAnotherThreadRunsOnTheMainThreadInOrderWithThatThreadsPosts() throws {
        var app: OpaquePointer?
        XCTAssertEqual(lc_app_create(nil, &app), lc_status(LC_OK))
        let target = try XCTUnwrap(app)
        defer { lc_app_destroy(target) }
        XCTAssertEqual(lc_app_perform_simple(target, lc_action_kind(LC_ACTION_LAUNCH)), lc_status(LC_OK))  // posts are held until then
        var name: lc_name = 0
        XCTAssertEqual(lc_name_intern("com.example.perform.order", &name), lc_status(LC_OK))
        XCTAssertEqual(lc_app_observe_name(target, name, nil, recordPost, nil, nil), lc_status(LC_OK))
        XCTAssertEqual(lc_app_perform_async(target, nil, nil), lc_status(LC_ERR_INVALID_ARGUMENT))
        XCTAssertEqual(String(cString: lc_last_error_message()), "lc_app_perform_async: fn is NULL")

        final class Box: @unchecked Sendable { let app: OpaquePointer; let name: lc_name; init(_ a: OpaquePointer, _ n: lc_name) { app = a; name = n } }
        let box = Box(target, name)
        var thread = pthread_t()
        let context = Unmanaged.passRetained(box).toOpaque()
        XCTAssertEqual(pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            // 1, post 2, 3, post 4, …, 999, post 1000: work and posts alternate.
            for step in stride(from: 1, through: 1_000, by: 2) {
                _ = lc_app_perform_async(box.app, recordWork, UnsafeMutableRawPointer(bitPattern: step))
                _ = lc_app_post_name(box.app, box.name, UnsafeRawPointer(bitPattern: step + 1), nil)
            }
            _ = lc_app_perform_async(box.app, stopWork, UnsafeMutableRawPointer(box.app))
            return nil
        }, context), 0)
        XCTAssertEqual(lc_app_run_for(target, 10), lc_status(LC_OK))
        pthread_join(thread, nil)
        XCTAssertEqual(workLog.order.count, 1_000)
        XCTAssertEqual(workLog.order, (1...1_000).map { $0 % 2 == 1 ? $0 : -$0 }, "the thread's order, work and posts together")
        XCTAssertEqual(workLog.offLoop, 0, "fn always runs on the main thread")
    }

    func testWorkQueuedWhenTheApplicationIsDestroyedIsNeverCalled() throws {
        var app: OpaquePointer?
        XCTAssertEqual(lc_app_create(nil, &app), lc_status(LC_OK))
        let target = try XCTUnwrap(app)
        for step in 1...10 { XCTAssertEqual(lc_app_perform_async(target, recordWork, UnsafeMutableRawPointer(bitPattern: step)), lc_status(LC_OK)) }
        lc_app_destroy(target)
        // Another application on this thread runs its loop: the destroyed one's work is not in it.
        var other: OpaquePointer?
        XCTAssertEqual(lc_app_create(nil, &other), lc_status(LC_OK))
        let second = try XCTUnwrap(other)
        defer { lc_app_destroy(second) }
        XCTAssertEqual(lc_app_perform_async(second, recordWork, UnsafeMutableRawPointer(bitPattern: 99)), lc_status(LC_OK))
        XCTAssertEqual(lc_app_run_for(second, 0.05), lc_status(LC_OK))
        XCTAssertEqual(workLog.order, [99])
    }
}
