import AppLifecycle
import ArgumentParser

/// `run`'s metrics options (docs/host.md, Metrics).
struct MetricsOptions: ParsableArguments {
    @Option(name: .customLong("metrics"), help: ArgumentHelp(
        "Serve the metrics (Prometheus text) over HTTP at ADDRESS:PORT, GET /metrics: a numeric IPv4 address or [IPv6], e.g. 127.0.0.1:9464.",
        valueName: "ADDRESS:PORT"))
    var address: String?

    @Option(name: .customLong("metrics-file"), help: ArgumentHelp(
        "Write the metrics (Prometheus text) to FILE at the end of the run and every --metrics-interval.", valueName: "FILE"),
            completion: .file())
    var file: String?

    @Option(name: .customLong("metrics-interval"), help: ArgumentHelp(
        "How often --metrics-file is written: seconds, or with a unit (default 10s; 100ms to 86400s).", valueName: "DURATION"))
    var interval: String?

    var values: MetricsValues { MetricsValues(address: address, file: file, interval: interval) }
}

/// The metrics options as plain data (`RunValues`' fast path fills them too), checked by `settings()`.
struct MetricsValues: Equatable {
    var address: String?
    var file: String?
    var interval: String?

    /// The longest and shortest `--metrics-interval`.
    static let intervalRange: ClosedRange<Duration> = .milliseconds(100) ... .seconds(86_400)

    /// Checked values; throws `ValidationError` naming the option and the limit.
    func settings() throws -> MetricsSettings {
        var settings = MetricsSettings()
        if let address {
            do { settings.address = try MetricsAddress.parse(address) } catch {
                throw ValidationError("--metrics \(address): \(error.message)")
            }
        }
        if let file {
            guard !file.isEmpty, !file.utf8.contains(0) else { throw ValidationError("--metrics-file needs a path") }
            settings.file = absolute(file)
        }
        if let interval {
            guard file != nil else { throw ValidationError("--metrics-interval \(interval): only with --metrics-file") }
            let duration: Duration
            do { duration = try Seconds.parse(interval, atMost: 86_400) } catch {
                throw ValidationError("--metrics-interval \(interval): \(error.message)")
            }
            guard Self.intervalRange.contains(duration) else {
                throw ValidationError("--metrics-interval \(interval): out of range: at least 100ms, at most 86400 s")
            }
            settings.interval = duration
        }
        return settings
    }
}
