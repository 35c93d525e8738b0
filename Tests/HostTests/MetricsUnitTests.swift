import ArgumentParser
import CoreMetrics
import Foundation
import TestSupport
import XCTest
@testable import lifecycle_host

/// The host's metrics pieces one by one: the request parser, the Prometheus backend, the options,
/// and the documentation of every metric.
final class MetricsUnitTests: XCTestCase {
    // MARK: Requests

    func testOnlyTheRequestLineIsParsedEveryByteChecked() {
        func outcome(_ text: String) -> MetricsRequest.Outcome? { MetricsRequest.outcome(Array(text.utf8)) }
        XCTAssertEqual(outcome("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), .metrics(head: false))
        XCTAssertEqual(outcome("HEAD /metrics HTTP/1.0\n\n"), .metrics(head: true))
        XCTAssertEqual(outcome("GET /metrics?name[]=x HTTP/1.1\r\n\r\n"), .metrics(head: false))
        XCTAssertEqual(outcome("GET /metrics/ HTTP/1.1\r\n\r\n"), .notFound)
        XCTAssertEqual(outcome("GET / HTTP/1.1\r\n\r\n"), .notFound)
        XCTAssertEqual(outcome("DELETE /metrics HTTP/1.1\r\n\r\n"), .methodNotAllowed)
        XCTAssertEqual(outcome("get /metrics HTTP/1.1\r\n\r\n"), .badRequest)
        XCTAssertEqual(outcome("GET /metrics HTTP/1.1 extra\r\n\r\n"), .badRequest)
        XCTAssertEqual(outcome("GET\t/metrics HTTP/1.1\r\n\r\n"), .badRequest)
        XCTAssertEqual(outcome("GET http://x/metrics HTTP/1.1\r\n\r\n"), .badRequest)
        XCTAssertEqual(outcome("GET /" + String(repeating: "a", count: 1100) + " HTTP/1.1\r\n\r\n"), .badRequest)
        // Incomplete: more may come; full without a blank line: too large.
        XCTAssertNil(outcome("GET /metrics HTTP/1.1\r\nHost: x\r\n"))
        XCTAssertNil(outcome("GET /met"))
        XCTAssertEqual(MetricsRequest.outcome([UInt8](repeating: UInt8(ascii: "a"), count: MetricsRequest.maxBytes)), .tooLarge)
        // A blank line after the bound does not make it acceptable.
        let late = Array("GET /metrics HTTP/1.1\r\n".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: MetricsRequest.maxBytes) + Array("\r\n\r\n".utf8)
        XCTAssertEqual(MetricsRequest.outcome(late), .tooLarge)
    }

    func testResponsesCarryTheirStatusLengthAndNoBodyForHead() {
        let ok = String(decoding: MetricsRequest.response(.metrics(head: false)) { "a 1\n" }, as: UTF8.self)
        XCTAssertEqual(ok, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: 4\r\nConnection: close\r\n\r\na 1\n")
        let head = String(decoding: MetricsRequest.response(.metrics(head: true)) { "a 1\n" }, as: UTF8.self)
        XCTAssertTrue(head.hasSuffix("Content-Length: 4\r\nConnection: close\r\n\r\n"), head)
        let refused = String(decoding: MetricsRequest.response(.methodNotAllowed) { XCTFail("not rendered"); return "" }, as: UTF8.self)
        XCTAssertTrue(refused.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n"))
        XCTAssertTrue(refused.contains("\r\nAllow: GET, HEAD\r\n"))
    }

    // MARK: The backend

    func testTheRegistryRendersCountersGaugesAndHistograms() {
        let registry = PrometheusRegistry(help: ["requests_total": "Requests.\nTwo lines \\ one."])
        let ok = Counter(label: "requests_total", dimensions: [("code", "200")], factory: registry)
        let bad = Counter(label: "requests_total", dimensions: [("code", "4\"0\\0\n")], factory: registry)
        ok.increment(by: 3)
        bad.increment()
        Counter(label: "requests_total", dimensions: [("code", "200")], factory: registry).increment()  // the same series
        ok.increment(by: -5)  // counters only go up
        Gauge(label: "depth", factory: registry).record(2.5)
        Meter(label: "in-flight.now", factory: registry).set(7)
        let timer = CoreMetrics.Timer(label: "call_seconds", dimensions: [("plugin", "p")], factory: registry)
        timer.recordNanoseconds(20_000)  // 20 µs: the 5e-05 bucket
        timer.recordNanoseconds(2_000_000_000)  // 2 s: the 5 bucket
        XCTAssertEqual(registry.render(), """
            # TYPE call_seconds histogram
            call_seconds_bucket{plugin="p",le="1e-05"} 0
            call_seconds_bucket{plugin="p",le="5e-05"} 1
            call_seconds_bucket{plugin="p",le="0.0001"} 1
            call_seconds_bucket{plugin="p",le="0.0005"} 1
            call_seconds_bucket{plugin="p",le="0.001"} 1
            call_seconds_bucket{plugin="p",le="0.005"} 1
            call_seconds_bucket{plugin="p",le="0.01"} 1
            call_seconds_bucket{plugin="p",le="0.05"} 1
            call_seconds_bucket{plugin="p",le="0.1"} 1
            call_seconds_bucket{plugin="p",le="0.5"} 1
            call_seconds_bucket{plugin="p",le="1"} 1
            call_seconds_bucket{plugin="p",le="5"} 2
            call_seconds_bucket{plugin="p",le="10"} 2
            call_seconds_bucket{plugin="p",le="+Inf"} 2
            call_seconds_sum{plugin="p"} 2.00002
            call_seconds_count{plugin="p"} 2
            # TYPE depth gauge
            depth 2.5
            # TYPE in_flight_now gauge
            in_flight_now 7
            # HELP requests_total Requests.\\nTwo lines \\\\ one.
            # TYPE requests_total counter
            requests_total{code="200"} 4
            requests_total{code="4\\"0\\\\0\\n"} 1

            """)
    }

    func testANameMadeAgainWithAnotherTypeKeepsTheFirstAndDestroyRemoves() {
        let registry = PrometheusRegistry(help: [:])
        let counter = Counter(label: "x", factory: registry)
        counter.increment()
        Gauge(label: "x", factory: registry).record(99)  // not exported: x is a counter
        XCTAssertEqual(registry.render(), "# TYPE x counter\nx 1\n")
        counter.destroy()
        XCTAssertEqual(registry.render(), "")
        XCTAssertEqual(PrometheusRegistry.metricName("9lives"), "_9lives")
        XCTAssertEqual(PrometheusRegistry.metricName("a:b-c d"), "a:b_c_d")
        XCTAssertEqual(PrometheusRegistry.metricName("a:b", colons: false), "a_b")
    }

    func testTheRegistryCountsFromManyThreadsAtOnce() {
        let registry = PrometheusRegistry(help: [:])
        let counter = Counter(label: "c", factory: registry)
        let timer = CoreMetrics.Timer(label: "t", factory: registry)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 {
                counter.increment()
                timer.recordNanoseconds(1_000)
            }
        }
        XCTAssertTrue(registry.render().contains("\nc 80000\n"))
        XCTAssertTrue(registry.render().contains("\nt_count 80000\n"))
    }

    // MARK: Options

    func testAddressesAreNumericAndPortsInRange() throws {
        XCTAssertEqual(try MetricsAddress.parse("127.0.0.1:9464"), MetricsAddress(host: "127.0.0.1", port: 9464, family: .ipv4))
        XCTAssertEqual(try MetricsAddress.parse("[::1]:0"), MetricsAddress(host: "::1", port: 0, family: .ipv6))
        XCTAssertEqual(try MetricsAddress.parse("0.0.0.0:65535").description, "0.0.0.0:65535")
        XCTAssertEqual(try MetricsAddress.parse("[::1]:80").description, "[::1]:80")
        for bad in ["localhost:9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1:0x10",
                    "::1:9464", "[::1]9464", "[127.0.0.1]:80", "1.2.3.4.5:80", ":80", "127.0.0.1:000009464",
                    String(repeating: "1", count: 100) + ":1"] {
            XCTAssertThrowsError(try MetricsAddress.parse(bad), bad)
        }
    }

    func testTheFastPathAgreesWithArgumentParserOnTheMetricsOptions() throws {
        let lines: [[String]] = [
            ["run", "--metrics", "127.0.0.1:9464"],
            ["run", "--metrics-file", "/tmp/m.prom", "--metrics-interval", "2s", "--plugin", "/a.so"],
            ["run", "--metrics", "[::1]:0", "--metrics-file", "m.prom"],
        ]
        for line in lines {
            let fast = try XCTUnwrap(RunValues.parse(line), "\(line)")
            XCTAssertEqual(fast, try Run.parse(Array(line.dropFirst())).values, "\(line)")
        }
        let options = try XCTUnwrap(RunValues.parse(lines[1])).options()
        XCTAssertEqual(options.metrics.file, "/tmp/m.prom")
        XCTAssertEqual(options.metrics.interval, .seconds(2))
        XCTAssertNil(options.metrics.address)
        XCTAssertEqual(try XCTUnwrap(RunValues.parse(["run"])).options().metrics.isEnabled, false)
        for (line, message) in [(["run", "--metrics-interval", "1s"], "--metrics-interval 1s: only with --metrics-file"),
                                (["run", "--metrics-file", "f", "--metrics-interval", "50ms"], "--metrics-interval 50ms: out of range: at least 100ms, at most 86400 s"),
                                (["run", "--metrics", "host:1"], "--metrics host:1: 'host' is not a numeric IPv4 address")] {
            XCTAssertThrowsError(try XCTUnwrap(RunValues.parse(line)).options(), "\(line)") { error in
                XCTAssertEqual((error as? ValidationError)?.message, message)
            }
        }
    }

    // MARK: Documentation

    func testEveryExportedMetricIsDocumentedAndEveryDocumentedOneExported() throws {
        let text = try String(contentsOfFile: CBuild.root + "/docs/host.md", encoding: .utf8)
        var documented: Set<String> = []
        for line in text.split(separator: "\n") where line.hasPrefix("| `lifecycle_") || line.hasPrefix("| `process_") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            documented.insert(cells[0].trimmingCharacters(in: CharacterSet(charactersIn: "`")))
            XCTAssertTrue(["counter", "gauge", "histogram"].contains(cells[1]), "a type: \(line)")
        }
        XCTAssertEqual(documented, Set(MetricCatalog.help.keys))
    }
}
