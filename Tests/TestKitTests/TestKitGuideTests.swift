import Foundation
import TestSupport
import XCTest

/// docs/writing-a-plugin.md, "Testing your plugin", shows the example tests whole: each block is
/// the file the other tests build and run, byte for byte.
final class TestKitGuideTests: XCTestCase {
    /// The code block of `language` that follows the line "`path`, … complete:" in the section.
    private func guideBlock(showing path: String, language: String) throws -> String {
        let guide = try String(contentsOfFile: CBuild.root + "/docs/writing-a-plugin.md", encoding: .utf8)
        let section = try XCTUnwrap(guide.range(of: "## Testing your plugin\n"), "the guide has its testing section")
        let label = try XCTUnwrap(guide.range(of: "`\(path)`", range: section.upperBound..<guide.endIndex), "the section names \(path)")
        let start = try XCTUnwrap(guide.range(of: "complete:\n\n```\(language)\n", range: label.upperBound..<guide.endIndex))
        let end = try XCTUnwrap(guide.range(of: "\n```\n", range: start.upperBound..<guide.endIndex))
        return String(guide[start.upperBound..<end.lowerBound]) + "\n"
    }

    func testTheGuideShowsBothExampleTestsAsTheyAre() throws {
        for (path, language) in [("Tests/TestKitTests/Fixtures/uploader_test.c", "c"), ("Plugins/Sessions/sessions_test.c", "c"),
                               ("Tests/TestKitTests/CacheTrimmerTests.swift", "swift")] {
            let file = try String(contentsOfFile: CBuild.root + "/" + path, encoding: .utf8)
            XCTAssertEqual(try guideBlock(showing: path, language: language), file, "docs/writing-a-plugin.md shows \(path) as it is")
        }
    }
}
