import Foundation
import TestSupport
import XCTest
@testable import lifecycle_host

/// What an operator graphs, from the built host scraped over TCP as Prometheus would: plugin ids as
/// labels (never paths), every counter present at 0 from the start, the standard process metrics
/// matching what the kernel says, and an exposition a real Prometheus parser reads.
final class MetricsOperatorTests: XCTestCase {
    typealias Exposition = MetricsHostTests.Exposition

    /// The host running `--interactive --trace json --metrics 127.0.0.1:0 <extra>`, once it is active,
    /// and the port it listens on.
    private func startHost(_ extra: [String]) throws -> (RunningProcess, UInt16) {
        let process = try RunningProcess(HostEndToEndTests.host, ["run", "--interactive", "--trace", "json", "--no-socket", "--no-signals",
                                                                  "--no-pressure", "--no-clock", "--metrics", "127.0.0.1:0"] + extra)
        let line = try XCTUnwrap(process.waitForLine { MetricsHostTests.json($0)["kind"] as? String == "metrics" })
        let url = try XCTUnwrap(MetricsHostTests.json(line)["name"] as? String)
        let port = try XCTUnwrap(UInt16(url.dropFirst("http://127.0.0.1:".count).dropLast("/metrics".count)))
        XCTAssertNotNil(process.waitForLine { MetricsHostTests.json($0)["name"] as? String == "didBecomeActive" })
        return (process, port)
    }

    /// The body of one `GET /metrics`.
    private func scrape(_ port: UInt16) throws -> String {
        let (status, _, body) = MetricsHostTests.split(try MetricsHostTests.exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"))
        XCTAssertEqual(status, "HTTP/1.1 200 OK")
        return body
    }

    /// An in-process plugin and an isolated one (`com.example.iso`, `--isolate` by id).
    private func plugins() throws -> [String] {
        let isolated = try IsolationFixtures.build(IsolationFixtures.observer(id: "com.example.iso", name: "didEnterBackground", body: ""),
                                                   named: "metrics-iso")
        return ["--plugin", HostEndToEndTests.recorder, "--plugin", isolated, "--isolate", "com.example.iso"]
    }

    // MARK: Labels

    /// Every per-plugin series is labelled with the plugin's id — the loading and `init` too. A file
    /// whose id is another's (a duplicate, refused at its loading here) is timed as `unknown`; a file
    /// that is not a plugin and one whose init fails are refused by their scan, before any loading in
    /// the host's process, so they are not timed (the engine's tests time a failing init under its id,
    /// EngineMetricsTests). No label is a path.
    func testPluginsAreLabelledByIdAndAFileWithoutOneIsUnknown() throws {
        let folder = try CBuild.temporaryFolder("metrics-labels")
        let notAPlugin = folder + "/libnothing.so"
        try "not an ELF file".write(toFile: notAPlugin, atomically: true, encoding: .utf8)
        let duplicate = try IsolationFixtures.build(IsolationFixtures.initialiser(id: "com.example.recorder", body: "return LC_OK;"),
                                                    named: "metrics-duplicate")
        let failing = try IsolationFixtures.build(IsolationFixtures.initialiser(id: "com.example.failing", body: "return LC_ERR_INVALID_ARGUMENT;"),
                                                  named: "metrics-failing")
        let (process, port) = try startHost(["--plugin", HostEndToEndTests.recorder, "--plugin", notAPlugin, "--plugin", duplicate,
                                             "--plugin", failing])
        defer { process.signal(SIGKILL) }
        let body = try scrape(port)
        let exposition = try Exposition(body)
        let recorder = "plugin=\"com.example.recorder\",kind=\"other\""
        XCTAssertEqual(exposition["lifecycle_callback_duration_seconds_count{\(recorder)}"], 1, "the recorder's init")
        XCTAssertNil(exposition["lifecycle_callback_duration_seconds_count{plugin=\"com.example.failing\",kind=\"other\"}"],
                     "refused by its scan: never loaded here")
        XCTAssertEqual(exposition["lifecycle_callback_duration_seconds_count{plugin=\"unknown\",kind=\"other\"}"], 1,
                       "the duplicate id (the file that is not a plugin is refused by its scan)")
        XCTAssertEqual(exposition["lifecycle_plugins_refused_total"], 3)
        XCTAssertEqual(exposition["lifecycle_plugins_loaded"], 1)
        XCTAssertFalse(body.contains("=\"/"), "no label value is a path:\n\(body)")
        // The recorder's series carry its id; the refused ones have none but their loading's.
        XCTAssertEqual(exposition["lifecycle_plugin_quota_refusals_total{plugin=\"com.example.recorder\",kind=\"observers\"}"], 0)
        XCTAssertNil(exposition["lifecycle_plugin_quota_refusals_total{plugin=\"com.example.failing\",kind=\"observers\"}"])
        process.send("quit")
        XCTAssertEqual(process.wait(), 3, "plugins were refused")
    }

    // MARK: Zeros

    /// A fresh host, nothing gone wrong yet: every counter a dashboard rates is there, at 0 — failures
    /// of each cause, restarts and coalesced deliveries of the isolated plugin, quota refusals of each
    /// kind of both, watchdog reports and kills of each budget, events of each kind, responses of each
    /// code. The in-process plugin, which cannot fail without the host, has no failure series.
    func testEveryCounterIsThereAtZeroOnAFreshHost() throws {
        let (process, port) = try startHost(try plugins())
        defer { process.signal(SIGKILL) }
        let exposition = try Exposition(try scrape(port))
        for cause in ["signal", "exit", "overran", "protocol-violation", "start-failed", "quota"] {
            XCTAssertEqual(exposition["lifecycle_plugin_failures_total{plugin=\"com.example.iso\",cause=\"\(cause)\"}"], 0, cause)
            XCTAssertNil(exposition["lifecycle_plugin_failures_total{plugin=\"com.example.recorder\",cause=\"\(cause)\"}"], cause)
        }
        XCTAssertEqual(exposition["lifecycle_plugin_restarts_total{plugin=\"com.example.iso\"}"], 0)
        XCTAssertEqual(exposition["lifecycle_plugin_coalesced_total{plugin=\"com.example.iso\"}"], 0)
        for plugin in ["com.example.iso", "com.example.recorder"] {
            for kind in ["observers", "timers", "background-tasks", "custom-names"] {
                XCTAssertEqual(exposition["lifecycle_plugin_quota_refusals_total{plugin=\"\(plugin)\",kind=\"\(kind)\"}"], 0, "\(plugin) \(kind)")
            }
        }
        for budget in ["launch", "didEnterBackground", "willTerminate", "completionHandler", "backgroundTask", "hang", "terminate"] {
            XCTAssertEqual(exposition["lifecycle_watchdog_reports_total{budget=\"\(budget)\"}"], 0, budget)
            XCTAssertEqual(exposition["lifecycle_watchdog_kills_total{budget=\"\(budget)\"}"], 0, budget)
        }
        for kind in ["plugin-failed", "plugin-restarted", "quota", "watchdog", "error", "archive", "handle-refused", "post", "socket"] {
            XCTAssertEqual(exposition["lifecycle_events_total{kind=\"\(kind)\"}"], 0, kind)
        }
        for code in ["400", "404", "405", "408", "431", "503"] {
            XCTAssertEqual(exposition["lifecycle_metrics_http_responses_total{code=\"\(code)\"}"], 0, code)
        }
        XCTAssertEqual(exposition["lifecycle_metrics_http_responses_total{code=\"200\"}"], 1, "this scrape")
        XCTAssertEqual(exposition["lifecycle_plugins_refused_total"], 0)
        XCTAssertEqual(exposition["lifecycle_queue_refused_total"], 0)
        XCTAssertEqual(exposition["lifecycle_plugins_loaded"], 2)
        // Counting goes on from the zeros: the isolated plugin's observer ran in its process.
        process.send("home")
        XCTAssertNotNil(process.waitForLine { MetricsHostTests.json($0)["name"] as? String == "didEnterBackground" })
        let later = try Exposition(try scrape(port))
        XCTAssertEqual(later["lifecycle_metrics_http_responses_total{code=\"200\"}"], 2)
        XCTAssertEqual(later["lifecycle_plugin_failures_total{plugin=\"com.example.iso\",cause=\"signal\"}"], 0)
        process.send("quit")
        XCTAssertEqual(process.wait(), 0)
    }

    // MARK: Process metrics

    /// The process metrics against what the kernel says of the host's process, read from the outside.
    func testProcessMetricsAreWhatTheKernelSays() throws {
        let before = Date().timeIntervalSince1970
        let (process, port) = try startHost(["--plugin", HostEndToEndTests.recorder])
        defer { process.signal(SIGKILL) }
        let after = Date().timeIntervalSince1970
        let first = try Exposition(try scrape(port))
        let exposition = try Exposition(try scrape(port))
        for (name, type) in [("process_cpu_seconds_total", "counter"), ("process_resident_memory_bytes", "gauge"),
                             ("process_virtual_memory_bytes", "gauge"), ("process_open_fds", "gauge"), ("process_max_fds", "gauge"),
                             ("process_start_time_seconds", "gauge")] {
            XCTAssertEqual(exposition.types[name], type, name)
            XCTAssertEqual(exposition.help[name], MetricCatalog.help[name], name)
        }
        // The soft limit of open files, as /proc/<pid>/limits shows it.
        let limits = try String(contentsOfFile: "/proc/\(process.pid)/limits", encoding: .utf8)
        let line = try XCTUnwrap(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let soft = try XCTUnwrap(Double(line.split(separator: " ", omittingEmptySubsequences: true)[3]), String(line))
        XCTAssertEqual(exposition["process_max_fds"], soft)
        // Open descriptors: those open now, plus the scrape's own connection, open while it rendered
        // (closed just after the response: counted again until it is gone).
        var open = 0
        for _ in 0..<100 {
            open = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.pid)/fd").count
            if exposition["process_open_fds"] == Double(open + 1) { break }
            usleep(10_000)
        }
        XCTAssertEqual(exposition["process_open_fds"], Double(open + 1))
        // Started between the spawn and its first line (btime is whole seconds: a second either side).
        let start = try XCTUnwrap(exposition["process_start_time_seconds"])
        XCTAssertGreaterThan(start, before - 1.5)
        XCTAssertLessThan(start, after + 1.5)
        XCTAssertEqual(first["process_start_time_seconds"], start, "read once")
        // CPU seconds only go up, and at most the wall time since the start on every core.
        let cpu = try XCTUnwrap(exposition["process_cpu_seconds_total"])
        XCTAssertGreaterThanOrEqual(cpu, try XCTUnwrap(first["process_cpu_seconds_total"]))
        XCTAssertLessThanOrEqual(cpu, (Date().timeIntervalSince1970 - before) * Double(ProcessInfo.processInfo.activeProcessorCount) + 0.01)
        // Memory: resident within virtual, and near what statm says now (pages).
        let resident = try XCTUnwrap(exposition["process_resident_memory_bytes"])
        let virtual = try XCTUnwrap(exposition["process_virtual_memory_bytes"])
        XCTAssertGreaterThan(resident, 1_048_576)
        XCTAssertLessThan(resident, virtual)
        let statm = try String(contentsOfFile: "/proc/\(process.pid)/statm", encoding: .utf8).split(separator: " ")
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        XCTAssertEqual(virtual, try XCTUnwrap(Double(statm[0])) * page, accuracy: virtual * 0.1)
        XCTAssertEqual(resident, try XCTUnwrap(Double(statm[1])) * page, accuracy: resident * 0.25)
        process.send("quit")
        XCTAssertEqual(process.wait(), 0)
    }

    // MARK: A real parser

    /// A scrape read by Prometheus' own Python client (`prometheus_client.parser`): it parses without
    /// an error; every family the catalog names is there with its type and HELP; and the process
    /// metrics agree with the client's own `ProcessCollector` reading the host's process.
    func testPrometheusOwnParserReadsTheScrape() throws {
        let python = try RequiredTool.python(importing: "prometheus_client", package: "python3-prometheus-client",
                                             for: "to parse the metrics exposition with Prometheus' own client library")
        let (process, port) = try startHost(try plugins())
        defer { process.signal(SIGKILL) }
        let body = try scrape(port)
        let folder = try CBuild.temporaryFolder("metrics-parser")
        try body.write(toFile: folder + "/scrape.prom", atomically: true, encoding: .utf8)
        let script = """
            import json, sys
            from prometheus_client import CollectorRegistry
            from prometheus_client.parser import text_string_to_metric_families
            from prometheus_client.process_collector import ProcessCollector
            families = {}
            for family in text_string_to_metric_families(open(sys.argv[1], encoding="utf-8").read()):
                if family.name in families: raise SystemExit("family twice: " + family.name)
                families[family.name] = {"type": family.type, "help": family.documentation,
                                         "samples": [[s.name, s.labels, s.value] for s in family.samples]}
            registry = CollectorRegistry()
            ProcessCollector(pid=lambda: sys.argv[2], registry=registry)
            own = {name: registry.get_sample_value(name) for name in
                   ["process_max_fds", "process_open_fds", "process_start_time_seconds", "process_cpu_seconds_total"]}
            print(json.dumps({"families": families, "own": own}))
            """
        let run = try BoundedRun.run(python, ["-c", script, folder + "/scrape.prom", String(process.pid)], timeout: 60)
        XCTAssertEqual(run.status, 0, run.errorText)
        let result = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any], run.output)
        let families = try XCTUnwrap(result["families"] as? [String: [String: Any]])
        let own = try XCTUnwrap(result["own"] as? [String: Double])

        // The parser names a counter's family without `_total`.
        let swift = try Exposition(body)
        var expected: [String: String] = [:]
        for name in MetricCatalog.help.keys {
            let type = try XCTUnwrap(swift.types[name], "\(name) is exported")
            expected[type == "counter" && name.hasSuffix("_total") ? String(name.dropLast("_total".count)) : name] = type
        }
        XCTAssertEqual(Set(families.keys), Set(expected.keys))
        for (family, type) in expected {
            XCTAssertEqual(families[family]?["type"] as? String, type, family)
            let name = type == "counter" && MetricCatalog.help[family] == nil ? family + "_total" : family
            XCTAssertEqual(families[family]?["help"] as? String, MetricCatalog.help[name], family)
        }
        // Samples as the parser read them: a labelled counter, a histogram's +Inf bucket.
        func sample(_ family: String, _ name: String, _ labels: [String: String]) -> Double? {
            let samples = families[family]?["samples"] as? [[Any]] ?? []
            return samples.first { $0[0] as? String == name && $0[1] as? [String: String] == labels }?[2] as? Double
        }
        XCTAssertEqual(sample("lifecycle_plugin_failures", "lifecycle_plugin_failures_total", ["plugin": "com.example.iso", "cause": "signal"]), 0)
        XCTAssertEqual(sample("lifecycle_callback_duration_seconds", "lifecycle_callback_duration_seconds_bucket",
                              ["plugin": "com.example.recorder", "kind": "other", "le": "+Inf"]), 1)

        // The client's own process collector, reading the host's /proc after the scrape.
        XCTAssertEqual(sample("process_max_fds", "process_max_fds", [:]), own["process_max_fds"])
        XCTAssertEqual(try XCTUnwrap(sample("process_start_time_seconds", "process_start_time_seconds", [:])),
                       try XCTUnwrap(own["process_start_time_seconds"]), accuracy: 0.001)
        let cpu = try XCTUnwrap(sample("process_cpu_seconds", "process_cpu_seconds_total", [:]))
        XCTAssertLessThanOrEqual(cpu, try XCTUnwrap(own["process_cpu_seconds_total"]))
        // Python lists the host's /proc/<pid>/fd from outside; the host counted the scrape's own
        // connection too, closed by the time Python looked.
        XCTAssertEqual(sample("process_open_fds", "process_open_fds", [:]), try XCTUnwrap(own["process_open_fds"]) + 1)
        process.send("quit")
        XCTAssertEqual(process.wait(), 0)
    }
}
