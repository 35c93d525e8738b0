import Foundation
import TestSupport
import XCTest

/// `run` under systemd's `Type=notify`: the test binds the datagram socket `NOTIFY_SOCKET` names (a
/// path, or an abstract `@name`), runs the built host, and reads what it sends.
final class SystemdNotifyTests: XCTestCase {
    /// A bound `AF_UNIX` datagram socket: a path, or (`abstract`) a name in the abstract namespace.
    final class NotifySocket {
        let fd: Int32
        let name: String

        init(path: String) throws {
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
            name = path
            try bind(Array(path.utf8) + [0])
        }

        init(abstract: String) throws {
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
            name = "@" + abstract
            try bind([0] + Array(abstract.utf8))
        }

        private func bind(_ bytes: [UInt8]) throws {
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
            let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
            }
            guard result == 0 else { throw NSError(domain: "bind", code: Int(errno)) }
        }

        deinit {
            close(fd)
            if !name.hasPrefix("@") { unlink(name) }
        }

        /// Datagrams received within `timeout` seconds, until `until` holds for the list (or time runs out).
        func receive(timeout: Double, until: ([String]) -> Bool) -> [String] {
            var messages: [String] = []
            let deadline = Date().addingTimeInterval(timeout)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while Date() < deadline, !until(messages) {
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&pfd, 1, 50) > 0 else { continue }
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n > 0 { messages.append(String(decoding: buffer[0..<n], as: UTF8.self)) }
            }
            return messages
        }
    }

    private func runHost(_ socket: NotifySocket, environment: [String: String], script: String) throws -> (RunningProcess, String) {
        let folder = try CBuild.temporaryFolder("sd-notify")
        let scenario = folder + "/run.scenario"
        try script.write(toFile: scenario, atomically: true, encoding: .utf8)
        let process = try RunningProcess(HostEndToEndTests.host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock",
                                                                  "--plugin", HostEndToEndTests.recorder, "--script", scenario],
                                         environment: ["NOTIFY_SOCKET": socket.name].merging(environment) { $1 })
        return (process, folder)
    }

    func testReadyWatchdogAndStoppingReachThePathSocket() throws {
        let folder = try CBuild.temporaryFolder("sd-notify-socket")
        let socket = try NotifySocket(path: folder + "/notify")
        // WatchdogSec=0.2: a keep-alive every 100 ms.
        let (process, _) = try runHost(socket, environment: ["WATCHDOG_USEC": "200000"], script: "wait 700ms\nterminate\n")
        defer { process.signal(SIGKILL) }
        let messages = socket.receive(timeout: 15) { $0.last == "STOPPING=1" }
        XCTAssertEqual(process.wait(), 0)
        XCTAssertEqual(messages.last, "STOPPING=1", "\(messages)")
        XCTAssertEqual(messages.filter { $0 == "STOPPING=1" }.count, 1)
        let ready = try XCTUnwrap(messages.firstIndex { $0.hasPrefix("READY=1") }, "\(messages)")
        XCTAssertEqual(messages[ready], "READY=1\nSTATUS=application active\nMAINPID=\(process.pid)")
        XCTAssertEqual(messages.filter { $0.hasPrefix("READY=1") }.count, 1)
        // Keep-alives from the start to the end, about every 100 ms over the 700 ms wait.
        let keepAlives = messages.filter { $0 == "WATCHDOG=1" }.count
        XCTAssertEqual(messages.count, keepAlives + 2, "only READY, WATCHDOG and STOPPING: \(messages)")
        XCTAssertGreaterThanOrEqual(keepAlives, 5)
        XCTAssertLessThanOrEqual(keepAlives, 12)
        XCTAssertEqual(messages.first, "WATCHDOG=1", "the first keep-alive as the loop starts")
        XCTAssertTrue(messages[(ready + 1)...].contains("WATCHDOG=1"), "keep-alives after READY too")
    }

    func testAnAbstractSocketWithoutAWatchdogGetsReadyAndStoppingOnly() throws {
        let socket = try NotifySocket(abstract: "lifecycle-host-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        let (process, _) = try runHost(socket, environment: [:], script: "wait 300ms\nterminate\n")
        defer { process.signal(SIGKILL) }
        let messages = socket.receive(timeout: 15) { $0.last == "STOPPING=1" }
        XCTAssertEqual(process.wait(), 0)
        XCTAssertEqual(messages, ["READY=1\nSTATUS=application active\nMAINPID=\(process.pid)", "STOPPING=1"])
    }

    func testAWatchdogForAnotherProcessOrAMalformedOneSendsNoKeepAlive() throws {
        let folder = try CBuild.temporaryFolder("sd-notify-pid")
        let socket = try NotifySocket(path: folder + "/notify")
        // WATCHDOG_PID names another process: the keep-alive is not ours to send.
        let (other, _) = try runHost(socket, environment: ["WATCHDOG_USEC": "100000", "WATCHDOG_PID": "1"], script: "wait 300ms\nterminate\n")
        defer { other.signal(SIGKILL) }
        let messages = socket.receive(timeout: 15) { $0.last == "STOPPING=1" }
        XCTAssertEqual(other.wait(), 0)
        XCTAssertFalse(messages.contains("WATCHDOG=1"), "\(messages)")
        XCTAssertEqual(messages.count, 2)

        let (bad, _) = try runHost(socket, environment: ["WATCHDOG_USEC": "12abc"], script: "terminate\n")
        defer { bad.signal(SIGKILL) }
        let rest = socket.receive(timeout: 15) { $0.last == "STOPPING=1" }
        XCTAssertEqual(bad.wait(), 0)
        XCTAssertFalse(rest.contains("WATCHDOG=1"), "\(rest)")
        let error = bad.output.first { $0.contains("\"kind\":\"error\"") && $0.contains("WATCHDOG_USEC") }
        XCTAssertNotNil(error, "the bad value is said in an error line: \(bad.output)")
    }
}
