import Foundation
import TestSupport
import XCTest

/// Loop-bound state is checked, not vouched for: the application's state read from another thread
/// stops the program at the call, naming the member, instead of racing with the loop.
final class LoopBoundABITests: XCTestCase {
    func testTheStateReadFromAnotherThreadStopsTheProgramNamingIt() throws {
        let folder = try CBuild.temporaryFolder("wrong-thread")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let program = folder + "/wrong_thread"
        let compiler = CBuild.linkedProgramCompiler
        let compile = try CBuild.run(compiler.path, compiler.flags + ["-Wall", "-Werror", CBuild.root + "/Tests/LifecycleCTests/Fixtures/wrong_thread.c",
                                                                      "-I", CBuild.root + "/include", "-L", CBuild.products, "-llifecycle",
                                                                      "-Wl,-rpath,\(CBuild.products)", "-lpthread", "-o", program])
        XCTAssertEqual(compile.status, 0, compile.output)
        let result = try CBuild.run(program, mergingStandardError: true, ["state"])
        XCTAssertEqual(result.status, SIGILL, "stopped by the check's trap: \(result.output)")
        XCTAssertTrue(result.output.hasPrefix("main thread: 0\n"), "the main thread reads it: \(result.output)")
        XCTAssertTrue(result.output.contains("Application.state must be used on the thread that runs its main run loop; it was used from another thread"),
                      result.output)
        XCTAssertFalse(result.output.contains("read from another thread"), "the read did not happen")

        // lc_app_destroy returns no status: from another thread it destroys nothing and says why.
        let destroyed = try CBuild.run(program, mergingStandardError: true, ["destroy"])
        XCTAssertEqual(destroyed.status, 0, destroyed.output)
        XCTAssertEqual(destroyed.output, """
            main thread: 0
            other thread: lc_app_destroy must be called on the main run loop's thread; the application was not destroyed
            main thread after: 2

            """)
    }
}
