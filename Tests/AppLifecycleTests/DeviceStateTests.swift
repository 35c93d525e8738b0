import XCTest
@testable import AppLifecycle

/// Low Power Mode and the thermal state (lifecycle.md, decision 57): the device's, legal in every
/// state, posted to observers only after a change, coalesced while suspended, nothing while not running.
final class DeviceStateTests: XCTestCase {
    func testAChangeIsPostedOnceAndTheSameValueDoesNothing() throws {
        let h = try Harness()
        try h.launch()
        var seen: [String] = []
        for name in NotificationName.processInfoNames {
            h.app.center.observe(name, owner: "device") { [unowned h] note in
                seen.append("\(note.name) low=\(h.app.isLowPowerModeEnabled) thermal=\(h.app.thermalState)")
            }
        }
        XCTAssertEqual(try h.perform(.powerState(lowPower: true)), ["notification powerStateDidChange"])
        XCTAssertEqual(try h.perform(.powerState(lowPower: true)), [], "the same value again")
        XCTAssertEqual(try h.perform(.thermalState(.serious)), ["notification thermalStateDidChange"])
        XCTAssertEqual(seen, ["powerStateDidChange low=true thermal=nominal", "thermalStateDidChange low=true thermal=serious"],
                       "the new value is read in the observer")
        XCTAssertEqual(NotificationName.processInfoNames.map(\.rawValue), ["powerStateDidChange", "thermalStateDidChange"])
        XCTAssertEqual(NotificationName.powerStateDidChange.uikitName, "NSProcessInfoPowerStateDidChangeNotification")
        XCTAssertEqual(try NotificationName("NSProcessInfoThermalStateDidChangeNotification"), .thermalStateDidChange)
    }

    func testWhileSuspendedTheyCoalesceAndWhileNotRunningNothingIsPosted() throws {
        let h = try Harness()
        XCTAssertEqual(try h.perform(.thermalState(.fair)), [], "not running: the value only")
        XCTAssertEqual(h.app.thermalState, .fair)
        try h.launch()
        try h.perform(.home)
        XCTAssertEqual(h.app.state, .suspended)
        try h.perform(.thermalState(.serious))
        try h.perform(.powerState(lowPower: true))
        try h.perform(.thermalState(.critical))
        XCTAssertEqual(h.app.queuedNotifications.map(\.name), [.thermalStateDidChange, .powerStateDidChange])
        XCTAssertEqual(h.app.queuedNotifications.map(\.count), [2, 1])
        XCTAssertEqual(try h.perform(.foreground).prefix(3), [
            "state background", "notification thermalStateDidChange (coalesced from 2)", "notification powerStateDidChange",
        ])
        try h.perform(.terminate)
        XCTAssertEqual(h.app.isLowPowerModeEnabled, true, "the device's state outlives the run")
        XCTAssertEqual(h.app.thermalState, .critical)
    }
}
