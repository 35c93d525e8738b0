import Foundation
import TestSupport
import XCTest

/// The C test kit as a plugin's author uses it: a test program compiled against
/// include/lifecycle_testkit.h and linked with the built liblifecycle-testkit.so and liblifecycle.so,
/// run on a real plugin. The shipped example (Plugins/Sessions/sessions_test.c) passes; a test with a
/// wrong expectation fails, with its exact report and exit status.
final class CTestKitTests: XCTestCase {
    /// Compiles `source` (below the repository root) into a program linked with the two libraries.
    private func build(_ source: String, in folder: String) throws -> String {
        let program = folder + "/" + URL(fileURLWithPath: source).deletingPathExtension().lastPathComponent
        // Under a sanitizer, its compiler: the libraries need its runtime (CBuild.linkedProgramCompiler).
        let compiler = CBuild.linkedProgramCompiler
        let compile = try CBuild.run(compiler.path, compiler.flags + [
            "-Wall", "-Wextra", "-Werror", CBuild.root + "/" + source, "-I", CBuild.root + "/include", "-L", CBuild.products,
            "-llifecycle-testkit", "-llifecycle", "-Wl,-rpath,\(CBuild.products)", "-o", program,
        ])
        XCTAssertEqual(compile.status, 0, compile.output)
        return program
    }

    private var sessions: String { CBuild.products + "/libSessions.so" }

    func testTheSessionsExampleTestPasses() throws {
        let folder = try CBuild.temporaryFolder("testkit-c")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let program = try build("Plugins/Sessions/sessions_test.c", in: folder)
        let run = try BoundedRun.run(program, [sessions], timeout: 60)
        XCTAssertEqual(run.status, 0, run.output + run.errorText)
        XCTAssertEqual(run.output, "sessions_test: 23 passed, 0 failed\n")
        // No report: only the plugin's own log lines on standard error.
        XCTAssertFalse(run.errorText.contains("sessions_test.c:"), run.errorText)
    }

    /// The guide's 30 s example: Fixtures/uploader_test.c on Fixtures/uploader.c, in no real time.
    func testTheThirtySecondUploaderTestPassesAtOnce() throws {
        let folder = try CBuild.temporaryFolder("testkit-uploader")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plugin = try CBuild.sharedObject(file: CBuild.root + "/Tests/TestKitTests/Fixtures/uploader.c", named: "uploader", in: folder)
        let program = try build("Tests/TestKitTests/Fixtures/uploader_test.c", in: folder)
        let run = try BoundedRun.run(program, [plugin], timeout: 60)
        XCTAssertEqual(run.status, 0, run.output + run.errorText)
        XCTAssertEqual(run.output, "uploader_test: 12 passed, 0 failed\n")
        XCTAssertEqual(run.errorText, "")
        XCTAssertLessThan(run.exitedAfter, 10, "30 s on the manual clock took \(run.exitedAfter) s of real time")
    }

    /// The library is the kit only: it defines the header's lct_ functions and nothing else, and calls
    /// the engine's lc_ functions, which it leaves for liblifecycle.so (no second engine inside).
    func testTheLibraryExportsTheKitAndCallsTheEngineItDoesNotContain() throws {
        let nm = try RequiredTool.path("nm", package: "binutils", for: "to read the test kit library's dynamic symbols")
        let library = CBuild.products + "/liblifecycle-testkit.so"
        let defined = try CBuild.run(nm, ["-D", "--defined-only", library])
        XCTAssertEqual(defined.status, 0, defined.output)
        // (A sanitizer's build defines its instrumentation's symbols too: only the kit's and the engine's
        // prefixes are compared.)
        let symbols = defined.output.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
        XCTAssertEqual(symbols.filter { $0.hasPrefix("lc_") }, [], "no engine function is defined in the kit")
        let exported = symbols.filter { $0.hasPrefix("lct_") }
        let header = try String(contentsOfFile: CBuild.root + "/include/lifecycle_testkit.h", encoding: .utf8)
        let declared = header.split(separator: "\n").filter { $0.hasPrefix("LC_EXPORT ") }.compactMap { line -> String? in
            guard let open = line.firstIndex(of: "(") else { return nil }
            return line[..<open].split(separator: " ").last.map { String($0.drop { $0 == "*" }) }
        }
        XCTAssertEqual(Set(exported), Set(declared), defined.output)
        let undefined = try CBuild.run(nm, ["-D", "--undefined-only", library])
        let called = undefined.output.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }.filter { $0.hasPrefix("lc_") }
        XCTAssertTrue(called.contains("lc_app_create") && called.contains("lc_app_advance"), undefined.output)
    }

    func testAWrongExpectationFailsWithItsExactReport() throws {
        let folder = try CBuild.temporaryFolder("testkit-wrong")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fixture = "Tests/TestKitTests/Fixtures/wrong_expectation.c"
        let program = try build(fixture, in: folder)
        let run = try BoundedRun.run(program, [sessions], timeout: 60)
        XCTAssertEqual(run.status, 1, run.output + run.errorText)
        XCTAssertEqual(run.output, "wrong_expectation: 4 passed, 3 failed\n")
        let file = CBuild.root + "/" + fixture
        XCTAssertEqual(run.errorText, """
            \(file):10: lct_harness_create: options->real_clock is 2; 0 (the manual clock) or 1 (the monotonic clock)
            \(file):15: expected delegate applicationDidEnterBackground; not recorded
              #1       12.500 s  action launch
              #2       12.500 s  state inactive
              #3       12.500 s  notification didFinishLaunching
              #4       12.500 s  state active
              #5       12.500 s  delegate applicationDidBecomeActive: [org.applifecycle.sessions]
              #6       12.500 s  notification didBecomeActive
            \(file):17: expected state background; not recorded after event #4
              #4       12.500 s  state active   <- last match
              #5       12.500 s  delegate applicationDidBecomeActive: [org.applifecycle.sessions]
              #6       12.500 s  notification didBecomeActive

            """)
    }
}
