import AppLifecycle
import CBenchAnchors
@preconcurrency import Glibc
import LifecycleC
import PluginHost

// The "isolation" group: what running a plugin in a process of its own costs (Ardour's objection to
// sandboxing plugins is the context switch): an isolated observer's notifications one way, and a
// delegate call's round trip, each beside the same plugin in the host's process and beside the floor
// of the transport (a C socket pair to a child process) measured in the same run.
//
// The plugin runner is the `lifecycle-host` executable beside this one (built by `swift build -c
// release`); "one CPU": this thread and the plugin's process pinned to the same CPU, so that every
// round trip costs two context switches; "two CPUs": pinned to different ones.
enum IsolationBenchmarks {
    static let group = "isolation"

    /// The measured plugin: an observer of "com.bench.tick" counting, and didFinishLaunching answering yes.
    static let pluginSource = """
        #define LC_DECLARE_DELEGATE_FUNCTIONS
        #include "lifecycle.h"
        static unsigned long ticks;
        static void tick(const lc_notification_t *note, void *ctx) { (void)note, (void)ctx; ticks++; }
        bool application_didFinishLaunchingWithOptions(lc_app *app, const lc_dict *options) { (void)app, (void)options; return true; }
        static lc_status bench_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
            (void)state; return host->observe(plugin, "com.bench.tick", NULL, tick, NULL, NULL);
        }
        static const lc_plugin_descriptor_t descriptor = {
            .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
            .abi_minor = LC_ABI_VERSION_MINOR, .id = "com.bench.isolated", .version = "1", .description = "bench",
            .init = bench_init,
        };
        LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
        """

    static func run(_ settings: Settings) -> [Row] {
        let runner = LoadingBenchmarks.executableFolder() + "/lifecycle-host"
        guard access(runner, X_OK) == 0 else {
            fputs("isolation: no plugin runner at \(runner) (build the package: swift build -c release)\n", stderr)
            return []
        }
        IsolationRunner.executable = runner
        guard let folder = LoadingBenchmarks.makeTemporaryFolder() else { return [] }
        defer { LoadingBenchmarks.removeFolder(folder) }
        let source = folder + "/isolated.c"
        let image = folder + "/isolated.so"
        guard LoadingBenchmarks.writeText(source, pluginSource),
              let pid = LoadingBenchmarks.spawn("cc", ["-shared", "-fPIC", "-O2", "-I", LoadingBenchmarks.includeFolder(), "-o", image, source],
                                                search: true),
              LoadingBenchmarks.waitExit(pid) == 0
        else {
            fputs("isolation: cc could not build the measured plugin\n", stderr)
            return []
        }
        let first = anchor_ring_allowed_cpu(0)
        let second = anchor_ring_allowed_cpu(1)
        var rows: [Row] = []
        let saved = anchor_ring_affinity_save()
        defer { anchor_ring_affinity_restore(saved) }
        for (label, childCPU) in [("one CPU", first), ("two CPUs", second)] where childCPU >= 0 {
            rows += measure(settings, image: image, label: label, hostCPU: first, childCPU: childCPU)
        }
        return rows
    }

    /// The rows of one placement: the plugin's process on `childCPU`, this thread on `hostCPU`.
    static func measure(_ settings: Settings, image: String, label: String, hostCPU: Int32, childCPU: Int32) -> [Row] {
        // The runner inherits the affinity of the thread that starts it.
        _ = anchor_ring_pin_self(childCPU)
        guard let isolated = Session(image: image, isolated: true) else { return [] }
        _ = anchor_ring_pin_self(hostCPU)
        guard let inProcess = Session(image: image, isolated: false) else { return [] }
        defer {
            isolated.close()
            inProcess.close()
        }
        let runs = settings.quick ? 1 : settings.runs
        let count = settings.quick ? 20_000 : 400_000

        // One way: `count` notifications posted on the loop thread, then waiting until the plugin ran them all.
        var oneWay: [Double] = []
        var local: [Double] = []
        var stream: [Double] = []
        for _ in 0..<(runs + (settings.quick ? 0 : 1)) {
            oneWay.append(isolated.post(count))
            local.append(inProcess.post(count))
            stream.append(Double(anchor_process_stream(childCPU == hostCPU ? hostCPU : childCPU, Int32(count), 40, 64 << 10)) / Double(count))
        }
        if !settings.quick {
            oneWay.removeFirst()
            local.removeFirst()
            stream.removeFirst()
        }
        let oneWayFigure = summarize(oneWay, unit: "ns")
        let rate = 1e9 / oneWayFigure.median

        // Round trips: didFinishLaunching (a bool) on the plugin, one at a time: `calls` of them a run,
        // each run's p50 and p99 taken, the median run reported (min–max), as the other groups do.
        let calls = settings.quick ? 2_000 : 20_000
        var p50s: [Double] = []
        var p99s: [Double] = []
        var localP50s: [Double] = []
        var floorP50s: [Double] = []
        var floorP99s: [Double] = []
        var floor = [Double](repeating: 0, count: calls)
        let floorCPU = childCPU == hostCPU ? hostCPU : childCPU
        for _ in 0..<runs {
            let callSamples = isolated.call(calls)
            let localSamples = inProcess.call(calls)
            _ = floor.withUnsafeMutableBufferPointer { anchor_process_round_trips(floorCPU, Int32(calls), $0.baseAddress) }
            p50s.append(percentile(callSamples, 50) / 1000)
            p99s.append(percentile(callSamples, 99) / 1000)
            localP50s.append(percentile(localSamples, 50))
            floorP50s.append(percentile(floor, 50) / 1000)
            floorP99s.append(percentile(floor, 99) / 1000)
        }
        let p50 = summarize(p50s, unit: "µs")
        let p99 = summarize(p99s, unit: "µs")
        let localP50 = summarize(localP50s, unit: "ns")
        let floorP50 = summarize(floorP50s, unit: "µs")
        let floorP99 = summarize(floorP99s, unit: "µs")

        return [
            Row(group: group, name: "isolated observer: notifications one way (post on the loop thread, plugin in its own process, \(label), -c release)",
                ours: Figure(median: rate / 1e6, min: 1e3 / oneWay.max()!, max: 1e3 / oneWay.min()!, unit: "M notifications/s",
                             note: "\(Figure.format(oneWayFigure.median)) ns each"),
                anchors: [("the same observer in the host's process", summarize(local, unit: "ns")),
                          ("C: 40-byte records over a socket pair to a child process, 64 KiB writes", summarize(stream, unit: "ns"))],
                target: "≥ 1 M notifications/s", met: rate >= 1e6,
                ratios: "\(ratio(oneWayFigure.median, summarize(local, unit: "ns").median)) in-process, \(ratio(oneWayFigure.median, summarize(stream, unit: "ns").median)) the C stream"),
            Row(group: group, name: "isolated delegate call: didFinishLaunchingWithOptions round trip p50 (\(label), -c release)",
                ours: p50, anchors: [("the same function in the host's process (libffi)", localP50),
                                     ("C: one byte there and back over a socket pair to a child process", floorP50)],
                target: label == "one CPU" ? "≤ 15 µs p50 on one CPU" : "information", met: label == "one CPU" ? p50.median <= 15 : nil,
                ratios: "\(ratio(p50.median, floorP50.median)) the C round trip, \(ratio(p50.median * 1000, localP50.median)) in-process"),
            Row(group: group, name: "isolated delegate call: didFinishLaunchingWithOptions round trip p99 (\(label), -c release)",
                ours: p99, anchors: [("C: one byte there and back over a socket pair to a child process", floorP99)],
                target: "information", met: nil, ratios: "\(ratio(p99.median, floorP99.median)) the C round trip"),
        ]
    }

    /// One application with the measured plugin, in-process or isolated, launched.
    final class Session {
        let handle: AppHandle
        let plugin: LoadedPlugin
        let name: NotificationName
        let launch: (Application, UserInfo) -> Bool

        init?(image: String, isolated: Bool) {
            do {
                handle = try AppHandle(configuration: Configuration())
                plugin = isolated ? try handle.loadIsolatedPlugin(path: image, settings: IsolationSettings()) : try handle.loadPlugin(path: image)
                name = try NotificationName("com.bench.tick")
                try handle.app.perform(.launch())
            } catch {
                fputs("isolation: \(error)\n", stderr)
                return nil
            }
            guard let handlers = isolated ? plugin.isolatedDelegateHandlers : plugin.inProcessDelegateHandlers,
                  let launch = handlers.didFinishLaunching
            else {
                fputs("isolation: the measured plugin has no didFinishLaunching\n", stderr)
                return nil
            }
            self.launch = launch
        }

        /// Nanoseconds a notification, `count` of them, until the plugin has run them all.
        func post(_ count: Int) -> Double {
            let center = handle.app.center
            let start = nowNanoseconds()
            for _ in 0..<count { center.post(name) }
            handle.settleIsolatedPlugins()
            return Double(nowNanoseconds() - start) / Double(count)
        }

        /// Each call's nanoseconds.
        func call(_ count: Int) -> [Double] {
            var samples = [Double](repeating: 0, count: count)
            let app = handle.app
            let options = UserInfo()
            for index in 0..<count {
                let start = nowNanoseconds()
                blackHole(launch(app, options))
                samples[index] = Double(nowNanoseconds() - start)
            }
            return samples
        }

        func close() { handle.shutdown() }
    }
}
