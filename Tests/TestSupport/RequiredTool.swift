import Foundation
import XCTest

/// A tool a test needs that the package itself does not: the README's fresh machine has only Swift,
/// libffi-dev and pkg-config, and there `swift test` passes with such tests skipped, each naming the
/// tool and its Debian package (XCTSkip: "skipped" in the log, never a silent pass). CI installs the
/// tools and sets LC_TEST_REQUIRE_TOOLS=1, under which a missing tool fails the test instead, so that a
/// tool lost from .ci/run cannot turn checks into skips unseen.
public enum RequiredTool {
    /// The environment variable that turns a missing tool into a failure.
    public static let requireVariable = "LC_TEST_REQUIRE_TOOLS"

    /// The folders searched: $PATH's, then the usual ones.
    static var folders: [String] {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        return path.split(separator: ":").map(String.init) + ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin"]
    }

    /// The path of `name`; when it is missing, skips the test (or fails it under LC_TEST_REQUIRE_TOOLS=1),
    /// naming the Debian package that has it and what the test needs it for.
    public static func path(_ name: String, package: String, for purpose: String,
                            file: StaticString = #filePath, line: UInt = #line) throws -> String
    {
        for folder in folders where !folder.isEmpty && FileManager.default.isExecutableFile(atPath: "\(folder)/\(name)") {
            return "\(folder)/\(name)"
        }
        try missing("\(name) is not installed (Debian package \(package)); it is needed \(purpose)", file: file, line: line)
    }

    /// A `python3` that imports `module`: the first in the folders' order that does (a python of
    /// pyenv or a virtualenv early in $PATH may lack a module Debian installed for /usr/bin/python3).
    /// When none does, skips the test (or fails it under LC_TEST_REQUIRE_TOOLS=1) as for a missing
    /// tool, naming the Debian package that has the module.
    public static func python(importing module: String, package: String, for purpose: String,
                              file: StaticString = #filePath, line: UInt = #line) throws -> String
    {
        var seen: Set<String> = []
        for folder in folders where !folder.isEmpty {
            let candidate = "\(folder)/python3"
            guard FileManager.default.isExecutableFile(atPath: candidate), seen.insert(candidate).inserted else { continue }
            if let run = try? BoundedRun.run(candidate, ["-c", "import \(module)"], timeout: 30), run.status == 0 { return candidate }
        }
        try missing("no python3 here imports \(module) (Debian package \(package)); it is needed \(purpose)", file: file, line: line)
    }

    /// Skips with `reason`, or fails under LC_TEST_REQUIRE_TOOLS=1.
    private static func missing(_ reason: String, file: StaticString, line: UInt) throws -> Never {
        if ProcessInfo.processInfo.environment[requireVariable] == "1" {
            XCTFail("\(reason) [\(requireVariable)=1]", file: file, line: line)
        }
        throw XCTSkip(reason, file: file, line: line)
    }
}
