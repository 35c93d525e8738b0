import Foundation
import TestSupport
import XCTest

/// A scenario that does not start the application itself: the host launches, then runs every line.
final class ScenarioStartTests: XCTestCase {
    func testAScenarioNotStartingWithALaunchRunsEveryLineAfterTheHostsLaunch() throws {
        let folder = try CBuild.temporaryFolder("scenario-start")
        let scenario = folder + "/run.scenario"
        try "wait 50ms\nhome\nforeground\nterminate\n".write(toFile: scenario, atomically: true, encoding: .utf8)
        let result = try CBuild.run(HostEndToEndTests.host, ["run", "--trace", "json", "--no-socket", "--no-signals", "--no-pressure",
                                                             "--no-clock", "--script", scenario])
        XCTAssertEqual(result.status, 0, result.output)
        let actions = result.output.split(separator: "\n").compactMap { line -> String? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["kind"] as? String == "action" else { return nil }
            return object["name"] as? String
        }
        XCTAssertEqual(actions, ["launch", "home", "foreground", "terminate"], result.output)
    }
}
