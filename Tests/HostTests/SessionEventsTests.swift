import Foundation
import TestSupport
import XCTest

/// `run --session-events` against a private bus (`SessionBus`): logind's Lock, Unlock, LockedHint and
/// PrepareForSleep, UPower's OnBattery and the power-profiles daemon's ActiveProfile become the
/// documented commands (OSEventMapper's table), and a malformed message is an error line and nothing else.
final class SessionEventsTests: XCTestCase {
    let host = HostEndToEndTests.host

    /// The trace as `kind name [detail]` lines, without times.
    private func events(_ process: RunningProcess, from start: Int = 0) -> [String] {
        process.output[start...].compactMap { line -> String? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let kind = object["kind"] as? String, let name = object["name"] as? String else { return nil }
            let detail = object["detail"] as? String
            return detail.map { "\(kind) \(name) [\($0)]" } ?? "\(kind) \(name)"
        }
    }

    /// A host following `bus`, launched, with the session found and the first properties read.
    private func startHost(on bus: SessionBus, _ extra: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws
        -> RunningProcess
    {
        let process = try RunningProcess(host, ["run", "--interactive", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock",
                                                "--session-events", "--system-bus", bus.address] + extra)
        XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"logind session\"") }, "\(process.output) \(process.standardError)",
                        file: file, line: line)
        XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"upower OnBattery false\"") }, "\(process.output)", file: file, line: line)
        return process
    }

    /// Waits until the trace has a line `kind name` (and `detail` when given) after line `after`.
    @discardableResult
    private func waitFor(_ process: RunningProcess, _ kind: String, _ name: String, after: Int = 0,
                         file: StaticString = #filePath, line: UInt = #line) -> Bool
    {
        let found = process.waitForLine(after: after) { $0.contains("\"kind\":\"\(kind)\",\"name\":\"\(name)\"") } != nil
        XCTAssertTrue(found, "no \(kind) \(name) in \(events(process))", file: file, line: line)
        return found
    }

    /// The lines of a typed `lock` from its action to the suspension: what the engine gives for the command.
    private func typedLockTrace() throws -> [String] {
        let process = try RunningProcess(host, ["run", "--interactive", "--trace", "json", "--no-socket", "--no-signals", "--no-pressure",
                                                "--no-clock"])
        XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"didBecomeActive\"") })
        process.send("lock")
        waitFor(process, "state", "suspended")
        process.closeInput()
        _ = process.wait()
        let all = events(process)
        let start = try XCTUnwrap(all.firstIndex(of: "action lock"))
        let end = try XCTUnwrap(all.firstIndex(of: "state suspended"))
        return Array(all[start...end])
    }

    /// A real `Lock` signal of the host's session: `lock`, with exactly the engine's trace of a typed
    /// `lock` (protectedDataWillBecomeUnavailable after didEnterBackground); `Unlock` gives `unlock`.
    func testALogindLockGivesTheLockCommandsTrace() throws {
        let bus = try SessionBus("lock")
        let process = try startHost(on: bus)
        defer { process.signal(SIGKILL); _ = process.wait() }
        let start = process.output.count
        bus.send("lock")
        waitFor(process, "state", "suspended", after: start)
        let expected = ["action lock", "notification willResignActive", "state inactive", "state background",
                        "notification didEnterBackground", "notification protectedDataWillBecomeUnavailable", "state suspended"]
        XCTAssertEqual(try typedLockTrace(), expected, "the engine's own lock")
        XCTAssertEqual(events(process, from: start), ["input lock [logind Lock]"] + expected)

        let unlocked = process.output.count
        bus.send("unlock")
        waitFor(process, "notification", "didBecomeActive", after: unlocked)
        XCTAssertEqual(events(process, from: unlocked), [
            "input unlock [logind Unlock]", "action unlock", "queued protectedDataDidBecomeAvailable [coalescing kind protected-data]",
            "state background", "notification protectedDataDidBecomeAvailable", "notification willEnterForeground", "state inactive",
            "state active", "notification didBecomeActive",
        ])
        // The host always hears SIGTERM.
        process.signal(SIGTERM)
        XCTAssertEqual(process.wait(), 0, process.standardError)
    }

    /// The start's read of LockedHint answered after a Lock (the Lock was sent before logind read the
    /// hint, which the screen locker has not set yet): the answer, false, is older than the Lock and is
    /// dropped — the device stays locked, no `unlock`. Before, the host unlocked on it.
    func testAStartReadOfLockedHintAnsweredAfterALockIsDropped() throws {
        let bus = try SessionBus("stale-hint", holdingHint: true)
        let process = try startHost(on: bus)  // the session found and OnBattery read; LockedHint's Get held
        defer { process.signal(SIGKILL); _ = process.wait() }
        let start = process.output.count
        bus.send("lock")
        waitFor(process, "state", "suspended", after: start)
        bus.send("release-hint")  // the held Get answered now: LockedHint false
        bus.send("battery 1")  // sent after the answer by the same service: the host reads it after the answer
        waitFor(process, "session", "upower OnBattery true", after: start)
        XCTAssertEqual(events(process, from: start), [
            "input lock [logind Lock]", "action lock", "notification willResignActive", "state inactive", "state background",
            "notification didEnterBackground", "notification protectedDataWillBecomeUnavailable", "state suspended",
            "session upower OnBattery true [no action: Low Power Mode follows the power-saver profile]",
        ])
        // A LockedHint change after that is heard as ever.
        let hinted = process.output.count
        bus.send("hint 0")
        bus.send("unlock")
        waitFor(process, "notification", "didBecomeActive", after: hinted)
        XCTAssertEqual(events(process, from: hinted).first, "input unlock [logind LockedHint false]")
    }

    /// Sleep locks; waking does nothing until Unlock; another session's Lock is not ours; the
    /// power-saver profile is Low Power Mode, OnBattery alone is only reported; LockedHint locks.
    /// Each malformed message is one error line, and the host goes on.
    func testSleepPowerAndMalformedMessages() throws {
        let bus = try SessionBus("sleep")
        let process = try startHost(on: bus)
        defer { process.signal(SIGKILL); _ = process.wait() }
        let start = process.output.count
        bus.send("sleep 1")
        waitFor(process, "state", "suspended", after: start)
        bus.send("sleep 0")
        waitFor(process, "session", "logind PrepareForSleep false", after: start)
        bus.send("battery 1")
        waitFor(process, "session", "upower OnBattery true", after: start)
        bus.send("profile power-saver")
        waitFor(process, "queued", "powerStateDidChange", after: start)
        bus.send("bad-sleep")
        bus.send("bad-battery")
        bus.send("long-profile")
        bus.send("other-lock")
        bus.send("profile balanced")
        waitFor(process, "input", "low-power off", after: start)
        bus.send("unlock")
        waitFor(process, "notification", "didBecomeActive", after: start)
        bus.send("hint 1")
        waitFor(process, "state", "suspended", after: process.output.count - 1)
        let lockLines = ["action lock", "notification willResignActive", "state inactive", "state background",
                         "notification didEnterBackground", "notification protectedDataWillBecomeUnavailable", "state suspended"]
        XCTAssertEqual(events(process, from: start), ["input lock [logind PrepareForSleep true]"] + lockLines + [
            "session logind PrepareForSleep false [no action: the device stays locked until logind Unlock]",
            "session upower OnBattery true [no action: Low Power Mode follows the power-saver profile]",
            "input low-power on [power-profiles ActiveProfile power-saver]", "action low-power [on]",
            "queued powerStateDidChange [coalescing kind power-state]",
            "error session-events [malformed bus message ignored: PrepareForSleep from :1.0 on /org/freedesktop/login1 (signature 's'): not one boolean]",
            "error session-events [malformed bus message ignored: PropertiesChanged from :1.0 on /org/freedesktop/UPower (signature 'sa{sv}as'): OnBattery is not a boolean]",
            "error session-events [malformed bus message ignored: PropertiesChanged from :1.0 on /net/hadess/PowerProfiles (signature 'sa{sv}as'): ActiveProfile is longer than 63 bytes]",
            "input low-power off [power-profiles ActiveProfile balanced]", "action low-power [off]",
            "queued powerStateDidChange [coalescing kind power-state]",
            "input unlock [logind Unlock]", "action unlock", "queued protectedDataDidBecomeAvailable [coalescing kind protected-data]",
            "state background", "notification powerStateDidChange [coalesced from 2]", "notification protectedDataDidBecomeAvailable",
            "notification willEnterForeground", "state inactive", "state active", "notification didBecomeActive",
            "input lock [logind LockedHint true]",
        ] + lockLines)
        process.signal(SIGTERM)
        XCTAssertEqual(process.wait(), 0, process.standardError)
    }

    /// A host started on a locked screen (LockedHint true) with the power-saver profile starts locked
    /// and in Low Power Mode.
    func testTheInitialPropertiesAreFollowed() throws {
        let bus = try SessionBus("initial", locked: true, profile: "power-saver")
        let process = try startHost(on: bus)
        defer { process.signal(SIGKILL); _ = process.wait() }
        waitFor(process, "input", "lock")
        waitFor(process, "input", "low-power on")
        XCTAssertTrue(events(process).contains("input lock [logind LockedHint true]"), "\(events(process))")
        XCTAssertTrue(events(process).contains("input low-power on [power-profiles ActiveProfile power-saver]"), "\(events(process))")
        process.signal(SIGTERM)
        XCTAssertEqual(process.wait(), 0, process.standardError)
    }

    /// A plugin hears powerStateDidChange from the power-saver profile and reads the new value with the
    /// host API's getters (1.6), in the host's process and isolated (a round trip to the host).
    func testAPluginHearsTheSessionsNotificationsAndReadsTheGettersInBothModes() throws {
        for isolated in [false, true] {
            let bus = try SessionBus(isolated ? "isolated" : "in-process")
            let seen = bus.folder + "/seen.txt"
            let plugin = try IsolationFixtures.build(IsolationFixtures.observer(
                id: "com.example.session", name: "powerStateDidChange",
                body: """
                    FILE *f = fopen("\(seen)", "a");
                    if (f) { fprintf(f, "powerStateDidChange low=%d thermal=%d\\n", (int)host->is_low_power_mode_enabled(me), (int)host->thermal_state(me)); fclose(f); }
                    """),
                named: "session-observer")
            let process = try startHost(on: bus, (isolated ? ["--isolate"] : []) + ["--plugin", plugin])
            defer { process.signal(SIGKILL); _ = process.wait() }
            let start = process.output.count
            bus.send("profile power-saver")
            waitFor(process, "notification", "powerStateDidChange", after: start)
            let deadline = Date().addingTimeInterval(10)
            // The observer's line is whole once it ends with its line feed (fopen creates the file first).
            while Date() < deadline, (try? String(contentsOfFile: seen, encoding: .utf8))?.hasSuffix("\n") != true { usleep(10_000) }
            XCTAssertEqual(try? String(contentsOfFile: seen, encoding: .utf8), "powerStateDidChange low=1 thermal=0\n",
                           isolated ? "isolated" : "in-process")
            process.signal(SIGTERM)
            XCTAssertEqual(process.wait(), 0, process.standardError)
        }
    }

    /// The thermal zones (a folder the test writes, `--thermal-folder`): each change of level is one
    /// `thermal` command, by the trip points (fair 10 °C below the passive trip, serious from it,
    /// critical from the critical trip); a zone whose temp is not a number is one error line.
    func testTheThermalZonesGiveTheThermalState() throws {
        let bus = try SessionBus("thermal")
        let zones = bus.folder + "/thermal"
        func write(_ file: String, _ text: String) throws {
            try FileManager.default.createDirectory(atPath: (zones + "/" + file as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try (text + "\n").write(toFile: zones + "/" + file, atomically: true, encoding: .utf8)
        }
        try write("thermal_zone0/temp", "40000")
        try write("thermal_zone0/trip_point_0_type", "passive")
        try write("thermal_zone0/trip_point_0_temp", "80000")
        try write("thermal_zone0/trip_point_1_type", "critical")
        try write("thermal_zone0/trip_point_1_temp", "100000")
        try write("thermal_zone1/temp", "hot")
        let process = try startHost(on: bus, ["--thermal-folder", zones])
        defer { process.signal(SIGKILL); _ = process.wait() }
        waitFor(process, "error", "os-events")
        let start = process.output.count
        for (temp, level) in [("75000", "fair"), ("85000", "serious"), ("100000", "critical"), ("30000", "nominal")] {
            try write("thermal_zone0/temp", temp)
            waitFor(process, "notification", "thermalStateDidChange", after: process.output.count)
            XCTAssertTrue(events(process).contains { $0.hasPrefix("action thermal [\(level)]") }, "\(level): \(events(process))")
        }
        XCTAssertEqual(events(process, from: start), [
            "input thermal fair [thermal fair (thermal_zone0 75.0 C)]", "action thermal [fair]", "notification thermalStateDidChange",
            "input thermal serious [thermal serious (thermal_zone0 85.0 C)]", "action thermal [serious]", "notification thermalStateDidChange",
            "input thermal critical [thermal critical (thermal_zone0 100.0 C)]", "action thermal [critical]", "notification thermalStateDidChange",
            "input thermal nominal [thermal nominal (thermal_zone0 30.0 C)]", "action thermal [nominal]", "notification thermalStateDidChange",
        ])
        XCTAssertEqual(events(process).filter { $0.hasPrefix("error os-events [thermal") },
                       ["error os-events [thermal: \(zones)/thermal_zone1/temp is not a temperature in millidegrees; the zone is left out]"],
                       "once, however many reads")
        process.signal(SIGTERM)
        XCTAssertEqual(process.wait(), 0, process.standardError)
    }

    /// Without libsystemd.so.0 (hidden by a bind mount in a mount namespace of its own), the option
    /// gives a clear error and the run ends with status 1; without the option the host runs.
    func testWithoutLibsystemdTheOptionIsAClearError() throws {
        guard getuid() == 0 else { throw XCTSkip("hiding libsystemd.so.0 needs root (unshare --mount and a bind mount)") }
        let unshare = try RequiredTool.path("unshare", package: "util-linux", for: "to hide libsystemd.so.0 in a mount namespace")
        let library = ["/usr/lib/x86_64-linux-gnu/libsystemd.so.0", "/lib/x86_64-linux-gnu/libsystemd.so.0", "/usr/lib/aarch64-linux-gnu/libsystemd.so.0"]
            .first { FileManager.default.fileExists(atPath: $0) }
        guard let library else { throw XCTSkip("no libsystemd.so.0 here to hide") }
        let script = "mount --bind /dev/null \(library) && exec \"$@\""
        let result = try CBuild.run(unshare, ["--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", host, "run",
                                              "--no-socket", "--no-pressure", "--no-clock", "--session-events"])
        XCTAssertEqual(result.status, 1, result.output)
        XCTAssertTrue(result.output.contains("lifecycle-host: --session-events: session events need sd-bus from libsystemd.so.0, which cannot be loaded: "),
                      result.output)
        XCTAssertTrue(result.output.contains("libsystemd.so.0"), result.output)
        let scenario = NSTemporaryDirectory() + "lc-no-libsystemd-\(getpid()).scenario"
        try "terminate\n".write(toFile: scenario, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: scenario) }
        let plain = try CBuild.run(unshare, ["--mount", "--propagation", "private", "/bin/sh", "-c", script, "sh", host, "run",
                                             "--no-socket", "--no-pressure", "--no-clock", "--script", scenario])
        XCTAssertEqual(plain.status, 0, "without the option libsystemd is never loaded: \(plain.output)")
    }
}
