import Foundation
import TestSupport
import XCTest

/// A private D-Bus daemon and the fake logind, UPower and power-profiles services on it
/// (Fixtures/fake_session_services.c, built with cc against libsystemd), for `--session-events`.
/// Missing tools skip the test with the reason (or fail it under LC_TEST_REQUIRE_TOOLS=1).
final class SessionBus {
    let folder: String
    /// The address the host is given with `--system-bus`.
    let address: String
    private let daemon: RunningProcess
    let fake: RunningProcess

    /// `locked`, `onBattery`, `profile`: the fake's initial property values. `holdingHint`: the fake
    /// answers no Get of the session's properties (LockedHint) until `send("release-hint")`.
    init(_ name: String, locked: Bool = false, onBattery: Bool = false, profile: String = "balanced", holdingHint: Bool = false,
         file: StaticString = #filePath, line: UInt = #line) throws
    {
        let dbus = try RequiredTool.path("dbus-daemon", package: "dbus-daemon", for: "to run a private bus for --session-events",
                                         file: file, line: line)
        let cc = try RequiredTool.path("cc", package: "gcc", for: "to build the fake session services", file: file, line: line)
        let pkgConfig = try RequiredTool.path("pkg-config", package: "pkg-config", for: "to find libsystemd", file: file, line: line)
        let flags = try CBuild.run(pkgConfig, ["--cflags", "--libs", "libsystemd"])
        guard flags.status == 0 else {
            throw XCTSkip("libsystemd's development files are not installed (Debian package libsystemd-dev); they are needed to build the fake session services")
        }
        folder = try CBuild.temporaryFolder("session-\(name)")
        let socket = folder + "/bus.sock"
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>custom</type>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        try config.write(toFile: folder + "/bus.conf", atomically: true, encoding: .utf8)
        let fakeProgram = folder + "/fake-session-services"
        let build = try CBuild.run(cc, ["-O1", "-Wall", "-o", fakeProgram, CBuild.root + "/Tests/HostTests/Fixtures/fake_session_services.c"]
            + flags.output.split(whereSeparator: \.isWhitespace).map(String.init))
        XCTAssertEqual(build.status, 0, build.output, file: file, line: line)
        daemon = try RunningProcess(dbus, ["--config-file=\(folder)/bus.conf", "--nofork", "--print-address"])
        guard let printed = daemon.waitForLine(timeout: 10, { $0.hasPrefix("unix:") }) else {
            throw XCTSkip("dbus-daemon printed no address: \(daemon.standardError)")
        }
        address = printed.split(separator: ",").first.map(String.init) ?? printed
        fake = try RunningProcess(fakeProgram, [address, locked ? "1" : "0", onBattery ? "1" : "0", profile] + (holdingHint ? ["hold-hint"] : []))
        XCTAssertNotNil(fake.waitForLine { $0 == "ready" }, "the fake services at \(address): \(fake.standardError) \(daemon.standardError)", file: file, line: line)
    }

    /// Has the fake send `command` (see the fixture), and waits until it has.
    func send(_ command: String, file: StaticString = #filePath, line: UInt = #line) {
        let before = fake.output.count
        fake.send(command)
        XCTAssertNotNil(fake.waitForLine(after: before) { $0 == "sent \(command)" }, "fake: \(fake.output) \(fake.standardError)",
                        file: file, line: line)
    }

    deinit {
        fake.closeInput()
        _ = fake.wait(timeout: 5)
        daemon.signal(SIGTERM)
        _ = daemon.wait(timeout: 5)
        try? FileManager.default.removeItem(atPath: folder)
    }
}
