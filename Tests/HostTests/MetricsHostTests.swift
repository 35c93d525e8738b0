import Foundation
import TestSupport
import XCTest

/// `run --metrics`: the built host scraped over a real TCP socket, its exposition parsed and checked
/// against the JSON trace of a known scenario; hostile requests; `--metrics-file`.
final class MetricsHostTests: XCTestCase {
    /// The exposition read back: TYPE by family, HELP by family, and every sample by its series
    /// (`name{labels}` as written).
    struct Exposition {
        var types: [String: String] = [:]
        var help: [String: String] = [:]
        var samples: [String: Double] = [:]

        init(_ text: String) throws {
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
                if line.hasPrefix("# TYPE ") {
                    let words = line.split(separator: " ")
                    XCTAssertEqual(words.count, 4, String(line))
                    types[String(words[2])] = String(words[3])
                } else if line.hasPrefix("# HELP ") {
                    let words = line.split(separator: " ", maxSplits: 3)
                    help[String(words[2])] = words.count > 3 ? String(words[3]) : ""
                } else {
                    XCTAssertFalse(line.hasPrefix("#"), "an unknown comment: \(line)")
                    // The value follows the last space (label values here hold no spaces).
                    let space = try XCTUnwrap(line.lastIndex(of: " "), String(line))
                    let value = String(line[line.index(after: space)...])
                    samples[String(line[..<space])] = value == "+Inf" ? .infinity : try XCTUnwrap(Double(value), String(line))
                }
            }
        }

        subscript(_ series: String) -> Double? { samples[series] }
    }

    /// Sends `request` over a new TCP connection to 127.0.0.1:`port` and reads until the server closes.
    static func exchange(_ port: UInt16, _ request: String) throws -> String {
        let fd = try connect(port)
        defer { close(fd) }
        let bytes = Array(request.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { break }  // the server may answer and close before a too-large request is all sent
            offset += n
        }
        return readToEnd(fd)
    }

    static func connect(_ port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            throw NSError(domain: "connect", code: Int(errno))
        }
        return fd
    }

    static func readToEnd(_ fd: Int32) -> String {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += chunk[0..<n]
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// The response's status line and body.
    static func split(_ response: String) -> (status: String, headers: String, body: String) {
        guard let end = response.range(of: "\r\n\r\n") else { return (response, "", "") }
        let head = response[..<end.lowerBound]
        let status = head.split(separator: "\r\n").first.map(String.init) ?? ""
        return (status, String(head), String(response[end.upperBound...]))
    }

    static func json(_ line: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
    }

    /// The host running `--interactive --trace json --metrics 127.0.0.1:0` with the recorder plugin,
    /// and the port it listens on (from its `metrics` trace line).
    private func startHost(_ extra: [String] = []) throws -> (RunningProcess, UInt16) {
        let process = try RunningProcess(HostEndToEndTests.host, ["run", "--interactive", "--trace", "json", "--no-socket", "--no-signals",
                                                                  "--no-pressure", "--no-clock", "--metrics", "127.0.0.1:0",
                                                                  "--plugin", HostEndToEndTests.recorder] + extra)
        let line = try XCTUnwrap(process.waitForLine { Self.json($0)["kind"] as? String == "metrics" })
        let url = try XCTUnwrap(Self.json(line)["name"] as? String)
        XCTAssertTrue(url.hasPrefix("http://127.0.0.1:") && url.hasSuffix("/metrics"), url)
        let port = try XCTUnwrap(UInt16(url.dropFirst("http://127.0.0.1:".count).dropLast("/metrics".count)))
        XCTAssertNotEqual(port, 0, "the port the kernel chose is shown, not 0")
        XCTAssertNotNil(process.waitForLine { Self.json($0)["name"] as? String == "didBecomeActive" })
        return (process, port)
    }

    func testAScrapeOverTCPAfterAKnownScenarioMatchesTheTrace() throws {
        let (process, port) = try startHost()
        defer { process.signal(SIGKILL) }
        for action in ["home", "foreground", "memory-warning"] { process.send(action) }
        XCTAssertNotNil(process.waitForLine { Self.json($0)["name"] as? String == "didReceiveMemoryWarning" && Self.json($0)["kind"] as? String == "notification" })
        let response = try Self.exchange(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n\r\n")
        let (status, headers, body) = Self.split(response)
        XCTAssertEqual(status, "HTTP/1.1 200 OK")
        XCTAssertTrue(headers.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"), headers)
        XCTAssertTrue(headers.contains("\r\nContent-Length: \(body.utf8.count)\r\n"), headers)
        let exposition = try Exposition(body)

        // Types, and a HELP line for every family.
        XCTAssertEqual(exposition.types["lifecycle_events_total"], "counter")
        XCTAssertEqual(exposition.types["lifecycle_callback_duration_seconds"], "histogram")
        XCTAssertEqual(exposition.types["lifecycle_watchdog_reports_total"], "counter")
        XCTAssertEqual(exposition.types["lifecycle_watchdog_kills_total"], "counter")
        XCTAssertEqual(exposition.types["lifecycle_queue_messages_waiting"], "gauge")
        XCTAssertEqual(exposition.types["lifecycle_queue_depth_max"], "gauge")
        XCTAssertEqual(exposition.types["lifecycle_application_state"], "gauge")
        XCTAssertEqual(exposition.types["lifecycle_plugins_loaded"], "gauge")
        XCTAssertEqual(Set(exposition.help.keys), Set(exposition.types.keys))

        // Every trace line so far, by kind, is counted.
        var kinds: [String: Double] = [:]
        var delegateCalls = 0.0
        for line in process.output {
            let object = Self.json(line)
            guard let kind = object["kind"] as? String else { continue }
            kinds[kind, default: 0] += 1
            if kind == "delegate", object["plugin"] as? String == "com.example.recorder" { delegateCalls += 1 }
        }
        // `warning`: the recorder implements fetch, and --background-mode fetch is not given.
        XCTAssertEqual(Set(kinds.keys), ["metrics", "plugin", "warning", "action", "state", "delegate", "notification", "input"])
        for (kind, count) in kinds { XCTAssertEqual(exposition["lifecycle_events_total{kind=\"\(kind)\"}"], count, kind) }

        // Each delegate call of the recorder is one value of its histogram; buckets add up.
        let series = "plugin=\"com.example.recorder\",kind=\"delegate\""
        XCTAssertEqual(exposition["lifecycle_callback_duration_seconds_count{\(series)}"], delegateCalls)
        XCTAssertEqual(delegateCalls, 8, "willFinish, didFinish, didBecomeActive, willResign, didEnterBackground, willEnterForeground, didBecomeActive, memory warning")
        XCTAssertEqual(exposition["lifecycle_callback_duration_seconds_bucket{\(series),le=\"+Inf\"}"], delegateCalls)
        var previous = 0.0
        for bound in ["1e-05", "5e-05", "0.0001", "0.0005", "0.001", "0.005", "0.01", "0.05", "0.1", "0.5", "1", "5", "10", "+Inf"] {
            let value = try XCTUnwrap(exposition["lifecycle_callback_duration_seconds_bucket{\(series),le=\"\(bound)\"}"], bound)
            XCTAssertGreaterThanOrEqual(value, previous, bound)
            previous = value
        }
        let sum = try XCTUnwrap(exposition["lifecycle_callback_duration_seconds_sum{\(series)}"])
        XCTAssertGreaterThan(sum, 0)
        XCTAssertLessThan(sum, 5)

        // Gauges read at the scrape; the watchdog never spoke; this is the first response.
        XCTAssertEqual(exposition["lifecycle_application_state{state=\"active\"}"], 1)
        XCTAssertEqual(exposition["lifecycle_application_state{state=\"background\"}"], 0)
        XCTAssertEqual(exposition["lifecycle_plugins_loaded"], 1)
        XCTAssertEqual(exposition["lifecycle_queue_messages_waiting"], 0)
        XCTAssertEqual(exposition["lifecycle_background_tasks_open"], 0)
        XCTAssertEqual(exposition["lifecycle_watchdog_reports_total{budget=\"launch\"}"], 0)
        XCTAssertEqual(exposition["lifecycle_watchdog_kills_total{budget=\"hang\"}"], 0)
        XCTAssertEqual(exposition["lifecycle_metrics_http_responses_total{code=\"200\"}"], 1)

        // HEAD: the same head, no body; the count goes on.
        let head = try Self.exchange(port, "HEAD /metrics HTTP/1.0\r\n\r\n")
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 200 OK\r\n"), head)
        XCTAssertTrue(head.hasSuffix("\r\n\r\n"), "no body: \(head.suffix(80))")
        let again = try Exposition(Self.split(try Self.exchange(port, "GET /metrics?x=1 HTTP/1.1\r\n\r\n")).body)
        XCTAssertEqual(again["lifecycle_metrics_http_responses_total{code=\"200\"}"], 3)
    }

    func testHostileRequestsGetTheirStatusAndTheHostServesOn() throws {
        let (process, port) = try startHost()
        defer { process.signal(SIGKILL) }
        // A client that connects and says nothing holds no one up, and is closed after 5 s.
        let idle = try Self.connect(port)
        defer { close(idle) }
        let opened = Date()
        XCTAssertEqual(Self.split(try Self.exchange(port, "GET /nothing HTTP/1.1\r\n\r\n")).status, "HTTP/1.1 404 Not Found")
        let post = try Self.exchange(port, "POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc")
        XCTAssertEqual(Self.split(post).status, "HTTP/1.1 405 Method Not Allowed")
        XCTAssertTrue(post.contains("Allow: GET, HEAD\r\n"))
        for bad in ["GET /metrics\r\n\r\n", "GET  /metrics HTTP/1.1\r\n\r\n", "GET /metrics HTTP/2.0\r\n\r\n", "GET metrics HTTP/1.1\r\n\r\n",
                    "GET /metr\u{1}cs HTTP/1.1\r\n\r\n", "G\u{e9}T /metrics HTTP/1.1\r\n\r\n", "\r\n\r\n"] {
            XCTAssertEqual(Self.split(try Self.exchange(port, bad)).status, "HTTP/1.1 400 Bad Request", bad.debugDescription)
        }
        let huge = "GET /metrics HTTP/1.1\r\n" + String(repeating: "X-Filler: " + String(repeating: "a", count: 100) + "\r\n", count: 100)
        XCTAssertEqual(Self.split(try Self.exchange(port, huge)).status, "HTTP/1.1 431 Request Header Fields Too Large")
        // Still serving, and counting what it answered.
        let exposition = try Exposition(Self.split(try Self.exchange(port, "GET /metrics HTTP/1.1\r\n\r\n")).body)
        XCTAssertEqual(exposition["lifecycle_metrics_http_responses_total{code=\"400\"}"], 7)
        XCTAssertEqual(exposition["lifecycle_metrics_http_responses_total{code=\"404\"}"], 1)
        XCTAssertEqual(exposition["lifecycle_metrics_http_responses_total{code=\"405\"}"], 1)
        XCTAssertEqual(exposition["lifecycle_metrics_http_responses_total{code=\"431\"}"], 1)
        XCTAssertEqual(exposition["lifecycle_metrics_http_responses_total{code=\"200\"}"], 1)
        // The idle one: closed by the server (read returns 0) after its 5 s.
        XCTAssertEqual(Self.readToEnd(idle), "")
        let held = Date().timeIntervalSince(opened)
        XCTAssertGreaterThan(held, 4.5)
        XCTAssertLessThan(held, 9)
        process.send("quit")
        XCTAssertEqual(process.wait(), 0)
    }

    /// Sixteen clients that connect and say nothing (every connection the port holds) do not keep a
    /// scraper out: a scrape takes the place of the silent connection that waited longest, which gets
    /// `408` and is closed; all 20 scrapes are served.
    func testSixteenSilentConnectionsDoNotKeepAScraperOut() throws {
        let (process, port) = try startHost()
        defer { process.signal(SIGKILL) }
        let silent = try (0..<16).map { _ in try Self.connect(port) }
        defer { silent.forEach { close($0) } }
        var statuses: [String] = []
        var last = ""
        for _ in 0..<20 {
            let response = Self.split(try Self.exchange(port, "GET /metrics HTTP/1.1\r\n\r\n"))
            statuses.append(response.status)
            last = response.body
        }
        XCTAssertEqual(statuses, Array(repeating: "HTTP/1.1 200 OK", count: 20))
        // The first scrape found 16 connections waiting: the oldest made room; the others then fit.
        XCTAssertEqual(Self.split(Self.readToEnd(silent[0])).status, "HTTP/1.1 408 Request Timeout")
        let exposition = try Exposition(last)
        XCTAssertEqual(exposition["lifecycle_metrics_http_responses_total{code=\"200\"}"], 20)
        XCTAssertEqual(exposition["lifecycle_metrics_http_responses_total{code=\"408\"}"], 1)
        XCTAssertEqual(exposition["lifecycle_metrics_http_responses_total{code=\"503\"}"], 0, "there from the start")
        process.send("quit")
        XCTAssertEqual(process.wait(), 0)
    }

    func testTheMetricsFileIsWrittenOnATimerAndAtTheEnd() throws {
        let folder = try CBuild.temporaryFolder("metrics-file")
        let file = folder + "/host.prom"
        let process = try RunningProcess(HostEndToEndTests.host, ["run", "--interactive", "--trace", "json", "--no-socket", "--no-signals",
                                                                  "--no-pressure", "--no-clock", "--metrics-file", file, "--metrics-interval", "200ms",
                                                                  "--plugin", HostEndToEndTests.recorder])
        defer { process.signal(SIGKILL) }
        XCTAssertNotNil(process.waitForLine { Self.json($0)["name"] as? String == "didBecomeActive" })
        var written: String?
        for _ in 0..<200 where written == nil {
            written = try? String(contentsOfFile: file, encoding: .utf8)
            usleep(10_000)
        }
        let first = try Exposition(try XCTUnwrap(written, "written within the interval"))
        XCTAssertEqual(first["lifecycle_application_state{state=\"active\"}"], 1)
        process.send("home")
        process.send("quit")
        XCTAssertEqual(process.wait(), 0)
        let last = try Exposition(try String(contentsOfFile: file, encoding: .utf8))
        XCTAssertEqual(last["lifecycle_application_state{state=\"not-running\"}"], 1)
        XCTAssertEqual(last["lifecycle_events_total{kind=\"delegate\"}"], Double(process.output.filter { Self.json($0)["kind"] as? String == "delegate" }.count))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0 != "host.prom" }
        XCTAssertEqual(leftovers, [], "no temporary file left behind")
    }

    func testAPortInUseIsAnErrorLineAndTheRunGoesOn() throws {
        let (first, port) = try startHost()
        defer { first.signal(SIGKILL) }
        let second = try RunningProcess(HostEndToEndTests.host, ["run", "--interactive", "--trace", "json", "--no-socket", "--no-signals",
                                                                 "--no-pressure", "--no-clock", "--metrics", "127.0.0.1:\(port)"])
        defer { second.signal(SIGKILL) }
        let error = try XCTUnwrap(second.waitForLine { Self.json($0)["kind"] as? String == "error" })
        XCTAssertEqual(Self.json(error)["name"] as? String, "metrics")
        XCTAssertEqual(Self.json(error)["detail"] as? String, "cannot listen on 127.0.0.1:\(port): bind: Address already in use (errno 98)")
        XCTAssertNotNil(second.waitForLine { Self.json($0)["name"] as? String == "didBecomeActive" })
        second.send("quit")
        XCTAssertEqual(second.wait(), 0)
    }

    func testAnIsolatedPluginsCrashAndRestartsAreCounted() throws {
        let folder = try CBuild.temporaryFolder("metrics-isolated")
        let file = folder + "/host.prom"
        let crasher = try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.segv", name: "didEnterBackground", body: "*(volatile int *)0 = 42;"), named: "segv")
        let process = try RunningProcess(HostEndToEndTests.host, ["run", "--interactive", "--trace", "json", "--no-socket", "--no-signals",
                                                                  "--no-pressure", "--no-clock", "--metrics-file", file, "--plugin", crasher,
                                                                  "--isolate", "--restart", "on-failure:1"])
        defer { process.signal(SIGKILL) }
        XCTAssertNotNil(process.waitForLine { Self.json($0)["name"] as? String == "didBecomeActive" })
        process.send("home")
        XCTAssertNotNil(process.waitForLine { Self.json($0)["kind"] as? String == "plugin-restarted" })
        process.send("foreground")
        process.send("home")
        XCTAssertNotNil(process.waitForLine { ($0.contains("gave up after 1 restart")) })
        process.send("quit")
        XCTAssertEqual(process.wait(), 7)
        let exposition = try Exposition(try String(contentsOfFile: file, encoding: .utf8))
        XCTAssertEqual(exposition["lifecycle_plugin_failures_total{plugin=\"com.example.segv\",cause=\"signal\"}"], 2)
        XCTAssertEqual(exposition["lifecycle_plugin_restarts_total{plugin=\"com.example.segv\"}"], 1)
        XCTAssertEqual(exposition["lifecycle_events_total{kind=\"plugin-failed\"}"], 2)
    }

    func testAWatchdogKillIsInTheMetricsFile() throws {
        let folder = try CBuild.temporaryFolder("metrics-kill")
        let file = folder + "/host.prom"
        let spin = try CBuild.sharedObject("""
            #include "lifecycle.h"
            #include <unistd.h>
            static void on_active(const lc_notification_t *n, void *ctx) { (void)n, (void)ctx; for (;;) sleep(1); }
            static lc_status spin_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
                (void)state; return host->observe(plugin, "didReceiveMemoryWarning", NULL, on_active, NULL, NULL);
            }
            static const lc_plugin_descriptor_t descriptor = {
                .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
                .abi_minor = LC_ABI_VERSION_MINOR, .id = "com.example.spin", .version = "1.0", .description = "spins",
                .init = spin_init,
            };
            LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
            """, named: "libspin", in: folder)
        let process = try RunningProcess(HostEndToEndTests.host, ["run", "--interactive", "--trace", "json", "--no-socket", "--no-signals",
                                                                  "--no-pressure", "--no-clock", "--metrics-file", file, "--budget", "hang=300ms",
                                                                  "--plugin", spin])
        defer { process.signal(SIGKILL) }
        XCTAssertNotNil(process.waitForLine { Self.json($0)["name"] as? String == "didBecomeActive" })
        process.send("memory-warning")
        XCTAssertEqual(process.wait(), 4)
        let exposition = try Exposition(try String(contentsOfFile: file, encoding: .utf8))
        XCTAssertEqual(exposition["lifecycle_watchdog_reports_total{budget=\"hang\"}"], 1)
        XCTAssertEqual(exposition["lifecycle_watchdog_kills_total{budget=\"hang\"}"], 1)
    }
}
