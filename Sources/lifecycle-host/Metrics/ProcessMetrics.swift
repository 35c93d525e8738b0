@preconcurrency import Glibc

/// The standard process metrics, as Prometheus' own client libraries export them (the Go client's
/// process collector, the Python client's `ProcessCollector`): the same names, types, HELP texts and
/// units — CPU seconds, resident and virtual memory, open and maximum descriptors, the start time.
///
/// Read from `/proc` and `getrlimit` when an export is rendered (`update`), on the loop thread: two
/// small bounded reads (`/proc/self/stat`, at most 4 KiB) and one listing of `/proc/self/fd`
/// (O(open descriptors)), no thread, no timer. The start time is read once, when made (`/proc/stat`'s
/// `btime`, at most 1 MiB). A read that fails its checks (`ProcFiles`) leaves the value it would have
/// set as it was; a series whose first read failed stays at 0, except the start time, which is
/// exported only when it was read.
///
/// [loop-thread] (the values themselves are atomics: the registry renders them from any thread).
final class ProcessMetrics {
    private let cpu: GaugeValue
    private let resident: GaugeValue
    private let virtual: GaugeValue
    private let openFDs: GaugeValue
    private let maxFDs: GaugeValue
    /// Clock ticks a second (`_SC_CLK_TCK`; 100 if the system will not say).
    private let ticksPerSecond: Double
    private let pageSize: Double

    /// Makes the series in `registry` and reads the start time. [loop-thread]
    init(registry: PrometheusRegistry) {
        cpu = registry.value(MetricCatalog.processCPUSeconds, kind: .counter)
        resident = registry.value(MetricCatalog.processResidentBytes, kind: .gauge)
        virtual = registry.value(MetricCatalog.processVirtualBytes, kind: .gauge)
        openFDs = registry.value(MetricCatalog.processOpenFDs, kind: .gauge)
        maxFDs = registry.value(MetricCatalog.processMaxFDs, kind: .gauge)
        let ticks = sysconf(Int32(_SC_CLK_TCK))
        ticksPerSecond = ticks > 0 ? Double(ticks) : 100
        let page = sysconf(Int32(_SC_PAGESIZE))
        pageSize = page > 0 ? Double(page) : 4096
        if let stat = Self.stat(), let bytes = ProcFiles.read("/proc/stat", limit: ProcFiles.systemStatLimit),
           let boot = ProcFiles.bootTime(bytes[...])
        {
            registry.value(MetricCatalog.processStartTime, kind: .gauge).set(Double(boot) + Double(stat.startTicks) / ticksPerSecond)
        }
        update()
    }

    /// Reads the values now. [loop-thread]
    func update() {
        if let stat = Self.stat() {
            cpu.set((Double(stat.userTicks) + Double(stat.systemTicks)) / ticksPerSecond)
            virtual.set(Double(stat.virtualBytes))
            resident.set(Double(stat.residentPages) * pageSize)
        }
        if let count = ProcFiles.openDescriptors() { openFDs.set(Double(count)) }
        var limit = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 { maxFDs.set(Double(limit.rlim_cur)) }
    }

    private static func stat() -> ProcFiles.ProcessStat? {
        guard let bytes = ProcFiles.read("/proc/self/stat", limit: ProcFiles.statLimit) else { return nil }
        return ProcFiles.processStat(bytes[...])
    }
}
