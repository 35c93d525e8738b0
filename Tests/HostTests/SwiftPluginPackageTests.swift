import Foundation
import TestSupport
import XCTest

/// A plugin written in Swift in a package of its own, as docs/writing-a-plugin.md ("A plugin in
/// Swift") shows it: the section's own `Package.swift` and `Hello.swift`, the dependency pointed at
/// this checkout by path, built with `swift build` in a temporary folder; the host loads the plugin it
/// makes and runs it. The plugin gets the header from the LifecycleABI product and links nothing of
/// AppLifecycle.
final class SwiftPluginPackageTests: XCTestCase {
    /// The code block that follows the line `` `name`: `` in the guide's Swift section.
    private func guideBlock(after name: String) throws -> String {
        let guide = try String(contentsOfFile: CBuild.root + "/docs/writing-a-plugin.md", encoding: .utf8)
        let section = try XCTUnwrap(guide.range(of: "## A plugin in Swift"), "the guide has its Swift section")
        let label = try XCTUnwrap(guide.range(of: "`\(name)`:\n\n```swift\n", range: section.upperBound..<guide.endIndex),
                                  "the Swift section shows \(name)")
        let end = try XCTUnwrap(guide.range(of: "\n```\n", range: label.upperBound..<guide.endIndex))
        return String(guide[label.upperBound..<end.lowerBound]) + "\n"
    }

    func testTheGuidesSwiftPluginPackageBuildsByPathAndLoads() throws {
        let swift = try RequiredTool.path("swift", package: "the Swift toolchain", for: "to build a separate Swift package")
        let folder = try CBuild.temporaryFolder("swift-plugin")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let package = folder + "/Hello"
        try FileManager.default.createDirectory(atPath: package + "/Sources/Hello", withIntermediateDirectories: true)

        let manifest = try guideBlock(after: "Package.swift")
        let dependency = #".package(name: "AppLifecycle", path: "../AppLifecycle")"#
        XCTAssertTrue(manifest.contains(dependency), manifest)
        XCTAssertTrue(manifest.contains(#".product(name: "LifecycleABI", package: "AppLifecycle")"#), manifest)
        try manifest.replacingOccurrences(of: dependency, with: ".package(name: \"AppLifecycle\", path: \"\(CBuild.root)\")")
            .write(toFile: package + "/Package.swift", atomically: true, encoding: .utf8)
        try guideBlock(after: "Sources/Hello/Hello.swift").write(toFile: package + "/Sources/Hello/Hello.swift", atomically: true, encoding: .utf8)

        // Debug, as a plugin's author starts; the same toolchain as the host (the guide's rule).
        let build = try CBuild.run(swift, mergingStandardError: true, ["build", "--package-path", package])
        XCTAssertEqual(build.status, 0, build.output)
        let plugin = package + "/.build/debug/libHello.so"
        XCTAssertTrue(FileManager.default.fileExists(atPath: plugin), build.output)
        // Nothing of AppLifecycle was compiled for it, and it needs no liblifecycle.
        XCTAssertFalse(build.output.contains("Compiling AppLifecycle"), build.output)
        let readelf = try RequiredTool.path("readelf", package: "binutils", for: "to read the plugin's needed libraries")
        let dynamic = try CBuild.run(readelf, ["-d", plugin])
        XCTAssertFalse(dynamic.output.contains("liblifecycle"), dynamic.output)

        // The host loads it and runs it through a scenario: its observer and its delegate function.
        let script = folder + "/hello.scenario"
        try "launch\nhome\nforeground\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        let run = try CBuild.run(CBuild.products + "/lifecycle-host", mergingStandardError: true,
                                 ["run", "--plugin", plugin, "--script", script, "--no-socket", "--no-pressure", "--no-clock", "--trace", "json"])
        XCTAssertEqual(run.status, 0, run.output)
        let said = run.output.split(separator: "\n").compactMap { line -> String? in
            guard let marker = line.range(of: "plugin=com.example.hello [PluginHost] ") else { return nil }
            return String(line[marker.upperBound...])
        }
        XCTAssertEqual(said, ["became active 1 time(s)", "will resign active", "became active 2 time(s)", "will resign active"], run.output)
    }
}
