import BenchHarness
import CBenchAnchors
import CLifecycleABI
@preconcurrency import Glibc

// The "loading" group, through what users call: loading N plugins with lc_app_load_plugin (C ABI,
// liblifecycle.so) beside a raw dlopen loop; unloading a plugin with 100,000 observers; the memory a
// loaded plugin costs; and the host's cold start (`lifecycle-host run`, default flags, in-process and
// with --isolate) beside a Swift hello world.
//
// Loads are measured in fresh processes: dlopen is per process and RTLD_NODELETE keeps an image mapped,
// so a second load in the same process would find it already there. The bench re-executes itself
// (`/proc/self/exe --quick --filter loading`) with LC_BENCH_CHILD=MODE:LISTFILE set; this group, run in
// that child, does the one job, prints its figures on standard output and exits.
enum LoadingBenchmarks {
    static let group = "loading"

    static func run(_ settings: Settings) -> [Row] {
        if let job = getenv(benchChildVariable) { runChild(String(cString: job)) }
        guard let folder = makeTemporaryFolder("lc-bench-loading") else {
            warn("loading: cannot make a temporary folder")
            return []
        }
        defer { removeFolder(folder) }
        let counts = settings.quick ? [1, 10] : [1, 10, 100, 1_000]
        guard let plugins = makePlugins(count: counts.max()!, in: folder) else { return [] }
        var rows: [Row] = []
        rows += loads(settings, counts: counts, plugins: plugins)
        rows += coldStart(settings, plugins: Array(plugins.prefix(10)), folder: folder)
        rows += unload(settings, folder: folder)
        rows += memory(settings, plugins: Array(plugins.prefix(settings.quick ? 10 : 100)))
        return rows
    }

    // MARK: 1. Load + init N plugins

    static func loads(_ settings: Settings, counts: [Int], plugins: [String]) -> [Row] {
        let warmup = settings.quick ? 0 : 1
        var rows: [Row] = []
        for count in counts {
            // Small loads take well under a millisecond, less than the noise of a shared machine:
            // three times the runs (still a fraction of a second).
            let runs = settings.quick ? 1 : settings.runs * (count <= 10 ? 3 : 1)
            let list = Array(plugins.prefix(count))
            guard let listFile = writeList(list) else { continue }
            defer { unlink(listFile) }
            var oursSamples: [Double] = []
            var rawSamples: [Double] = []
            for run in 0..<(warmup + runs) {
                // Alternate which goes first, so that neither always meets a colder cache.
                let order = run % 2 == 0 ? ["load", "raw"] : ["raw", "load"]
                for mode in order {
                    guard let values = child("\(mode):\(listFile)"), let ns = values["ns"] else { return rows }
                    if run < warmup { continue }
                    if mode == "load" { oursSamples.append(ns / 1e6) } else { rawSamples.append(ns / 1e6) }
                }
            }
            let ours = summarize(oursSamples, unit: "ms", note: "fresh process per run")
            let raw = summarize(rawSamples, unit: "ms", note: "fresh process per run")
            let perPlugin = "\(Figure.format(ours.median * 1000 / Double(count))) µs vs \(Figure.format(raw.median * 1000 / Double(count))) µs a plugin"
            rows.append(Row(group: group, name: "C ABI: load + init \(count) plugin\(count == 1 ? "" : "s") (lc_app_load_plugin each, -c release)",
                            ours: ours, anchors: [("raw dlopen + dlsym(lc_plugin_entry) + entry() (C)", raw)],
                            target: "≤ 1.5× raw", met: settings.quick ? nil : ours.median <= 1.5 * raw.median,
                            ratios: "\(ratio(ours.median, raw.median)) raw; \(perPlugin)"))
        }
        return rows
    }

    // MARK: 2. Host cold start

    /// `lifecycle-host run` from spawn to exit (and to the didBecomeActive line), default flags (control
    /// socket, PSI, clock and signal watchers on), beside hello world in Swift with and without
    /// Foundation: with no plugins; with 10 plugins in its process; with the same 10 isolated.
    static func coldStart(_ settings: Settings, plugins: [String], folder: String) -> [Row] {
        let host = executableFolder() + "/lifecycle-host"
        guard access(host, X_OK) == 0 else {
            warn("loading: no \(host) (build the bench package: swift build -c release --package-path Benchmarks); cold start skipped")
            return []
        }
        let script = folder + "/launch-terminate.scenario"
        guard writeText(script, "launch\nterminate\n") else { return [] }
        // The anchors: hello world in Swift, with and without Foundation, built now (not measured).
        let hello = folder + "/hello"
        let helloFoundation = folder + "/hello-foundation"
        guard writeText(hello + ".swift", "print(\"hello\")\n"),
              writeText(helloFoundation + ".swift", "import Foundation\nprint(\"hello\")\n"),
              runQuietly("/usr/bin/env", ["swiftc", "-O", hello + ".swift", "-o", hello]),
              runQuietly("/usr/bin/env", ["swiftc", "-O", helloFoundation + ".swift", "-o", helloFoundation])
        else {
            warn("loading: swiftc could not build the hello-world anchors; cold start skipped")
            return []
        }

        var withPlugins = ["run"]
        for plugin in plugins { withPlugins += ["--plugin", plugin] }
        withPlugins += ["--trace", "json", "--script", script]
        let isolated = ["run", "--isolate"] + withPlugins.dropFirst()
        let plain = ["run", "--script", script]
        let marker = "\"kind\":\"notification\",\"name\":\"didBecomeActive\""

        let runs = settings.quick ? 1 : settings.runs * 2 + 1
        let warmup = settings.quick ? 0 : settings.warmup
        var samples: [String: [Double]] = [:]
        for run in 0..<(warmup + runs) {
            var measured: [(String, TimedRun)] = []
            for (key, program, arguments, needsMarker) in [("plain", host, plain, false), ("plugins", host, withPlugins, true),
                                                            ("isolated", host, isolated, true), ("hello", hello, [], false),
                                                            ("foundation", helloFoundation, [], false)]
            {
                guard let timing = timedRun(program, arguments, marker: needsMarker ? marker : nil, errorsToOutput: !needsMarker) else { return [] }
                guard timing.status == 0, !needsMarker || timing.marker != nil else {
                    warn("loading: \(program) \(arguments.joined(separator: " ")) exited with \(timing.status)"
                        + "\(needsMarker ? " (a didBecomeActive line: \(timing.marker != nil))" : "")\n\(timing.output)")
                    return []
                }
                measured.append((key, timing))
            }
            if run < warmup { continue }
            for (key, timing) in measured {
                samples[key + "-exit", default: []].append(Double(timing.exit) / 1e6)
                if let marker = timing.marker { samples[key + "-active", default: []].append(Double(marker) / 1e6) }
            }
        }
        func figure(_ key: String, _ note: String) -> Figure { summarize(samples[key] ?? [], unit: "ms", note: note) }
        let helloFigure = figure("hello-exit", "spawn → exit")
        let foundation = figure("foundation-exit", "spawn → exit")
        let byDefault = figure("plain-exit", "spawn → exit")
        let active = figure("plugins-active", "spawn → the didBecomeActive notification line read (after all 10 delegates)")
        let exited = figure("plugins-exit", "spawn → exit (launch, then terminate)")
        let isolatedActive = figure("isolated-active", "spawn → the didBecomeActive line read (10 plugin processes started)")
        let isolatedExit = figure("isolated-exit", "spawn → exit")
        let flags = "run --plugin ×10 --trace json --script S"
        let anchors: [(label: String, figure: Figure)] = [("Swift hello world (swiftc -O)", helloFigure),
                                                          ("Swift hello world + import Foundation (swiftc -O)", foundation)]
        func versus(_ ours: Figure) -> String {
            "\(ratio(ours.median, helloFigure.median)) hello world, \(ratio(ours.median, foundation.median)) hello world + Foundation"
        }
        return [
            Row(group: group,
                name: "host cold start, default command line: `lifecycle-host run --script S` (S = launch, terminate; no plugins; socket, PSI, clock and signal watchers on), spawn → exit (-c release)",
                ours: byDefault, anchors: anchors,
                target: "≤ 2.5× hello world", met: settings.quick ? nil : byDefault.median <= 2.5 * helloFigure.median, ratios: versus(byDefault)),
            Row(group: group, name: "host cold start to didBecomeActive, 10 plugins in its process, default flags (`lifecycle-host \(flags)`, -c release)",
                ours: active, anchors: anchors,
                target: "≤ 3× hello world", met: settings.quick ? nil : active.median <= 3 * helloFigure.median, ratios: versus(active)),
            Row(group: group, name: "host cold start to exit (launch + terminate), 10 plugins in its process, default flags (`lifecycle-host \(flags)`, -c release)",
                ours: exited, anchors: [("Swift hello world (swiftc -O)", helloFigure)], target: "information", met: nil,
                ratios: "\(ratio(exited.median, helloFigure.median)) hello world"),
            Row(group: group, name: "host cold start to didBecomeActive, the 10 plugins isolated (`lifecycle-host run --isolate --plugin ×10 --trace json --script S`, -c release)",
                ours: isolatedActive, anchors: anchors + [("the same 10 plugins in its process", active)],
                target: "≤ 2× the in-process cold start (the runners start together)",
                met: settings.quick ? nil : isolatedActive.median <= 2 * active.median,
                ratios: "\(versus(isolatedActive)), \(ratio(isolatedActive.median, active.median)) in-process"),
            Row(group: group, name: "host cold start to exit, the 10 plugins isolated (`lifecycle-host run --isolate --plugin ×10 --trace json --script S`, -c release)",
                ours: isolatedExit, anchors: [("Swift hello world (swiftc -O)", helloFigure), ("the same 10 plugins in its process", exited)],
                target: "information", met: nil,
                ratios: "\(ratio(isolatedExit.median, helloFigure.median)) hello world, \(ratio(isolatedExit.median, exited.median)) in-process"),
        ]
    }

    // MARK: 3. Unloading a plugin with 100,000 observers (C ABI)

    static let unloadObservers = 100_000

    /// A plugin whose init registers 100,000 observers (host->observe_name) of NAMES names.
    static let unloadPluginSource = """
        #define LC_DECLARE_DELEGATE_FUNCTIONS
        #include <stdio.h>
        #include "lifecycle.h"

        static unsigned long counter;

        static void count(const lc_notification_t *notification, void *ctx) { (void)notification; ++*(unsigned long *)ctx; }

        static lc_status plugin_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
            static lc_name ids[NAMES];
            char name[64];
            *state = &counter;
            for (int i = 0; i < NAMES; i++) {
                snprintf(name, sizeof name, "com.bench.unload.n%d", i);
                lc_status status = host->name_intern(plugin, name, &ids[i]);
                if (status != LC_OK) return status;
            }
            for (int i = 0; i < \(unloadObservers); i++) {
                lc_status status = host->observe_name(plugin, ids[i % NAMES], NULL, count, &counter, NULL);
                if (status != LC_OK) return status;
            }
            return LC_OK;
        }

        static const lc_plugin_descriptor_t descriptor = {
            sizeof(lc_plugin_descriptor_t), LC_PLUGIN_MAGIC, LC_ABI_VERSION_MAJOR, LC_ABI_VERSION_MINOR,
            "com.bench.unload", "1.0.0", "registers 100,000 observers", plugin_init, 0,
        };

        LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }

        """

    /// lc_app_load_plugin of a plugin registering 100,000 observers (of 1 name, and of 1,000 names),
    /// then lc_app_unload_plugin, each in a fresh process; both timed.
    static func unload(_ settings: Settings, folder: String) -> [Row] {
        let source = folder + "/unload-plugin.c"
        guard writeText(source, unloadPluginSource) else { return [] }
        var rows: [Row] = []
        for names in [1, 1_000] {
            let image = folder + "/unload-\(names).so"
            guard buildPlugin(source: source, image: image, flags: ["-DNAMES=\(names)"]), let list = writeList([image]) else {
                warn("loading: cc could not build the unload plugin")
                return rows
            }
            defer { unlink(list) }
            let runs = settings.quick ? 1 : settings.runs
            var loads: [Double] = [], unloads: [Double] = []
            for _ in 0..<runs {
                guard let values = child("unload:\(list)"), let load = values["load"], let unload = values["unload"] else { return rows }
                loads.append(load / 1e6)
                unloads.append(unload / 1e6)
            }
            let unloadFigure = summarize(unloads, unit: "ms", note: "fresh process per run")
            let loadFigure = summarize(loads, unit: "ms", note: "load + init registering them (host->observe_name)")
            let perObserver = "\(Figure.format(unloadFigure.median * 1e6 / Double(unloadObservers))) ns an observer removed, \(Figure.format(loadFigure.median * 1e6 / Double(unloadObservers))) ns an observer registered"
            rows.append(Row(group: group,
                            name: "C ABI: lc_app_unload_plugin of a plugin with \(unloadObservers) observers of \(names) name\(names == 1 ? "" : "s") (-c release)",
                            ours: unloadFigure, anchors: [("C ABI: lc_app_load_plugin of the same plugin", loadFigure)],
                            target: "< 50 ms", met: settings.quick ? nil : unloadFigure.median < 50, ratios: perObserver))
        }
        return rows
    }

    // MARK: 4. Memory per plugin

    static func memory(_ settings: Settings, plugins: [String]) -> [Row] {
        guard let listFile = writeList(plugins) else { return [] }
        defer { unlink(listFile) }
        let runs = settings.quick ? 1 : min(settings.runs, 5)
        var heap: [Double] = [], rss: [Double] = [], rawHeap: [Double] = [], rawRSS: [Double] = []
        let count = Double(plugins.count)
        for _ in 0..<runs {
            guard let ours = child("loadmem:\(listFile)"), let raw = child("rawmem:\(listFile)"),
                  let h = ours["heap"], let r = ours["rss"], let rh = raw["heap"], let rr = raw["rss"]
            else { return [] }
            heap.append(h / count)
            rss.append(r / count)
            rawHeap.append(rh / count)
            rawRSS.append(rr / count)
        }
        let oursHeap = summarize(heap, unit: "B a plugin", note: "mallinfo2 uordblks growth / \(plugins.count)")
        return [
            Row(group: group, name: "C ABI: memory per loaded plugin (\(plugins.count) loaded in one process, lc_app_load_plugin)",
                ours: oursHeap,
                anchors: [("ours, RSS growth (/proc/self/statm)", summarize(rss, unit: "B a plugin")),
                          ("raw dlopen + entry (C), heap", summarize(rawHeap, unit: "B a plugin")),
                          ("raw dlopen + entry (C), RSS", summarize(rawRSS, unit: "B a plugin"))],
                target: "report only (Foundation has no plugin loader to compare with)", met: nil,
                ratios: "heap above raw dlopen: \(Figure.format(summarize(heap, unit: "").median - summarize(rawHeap, unit: "").median)) B a plugin"),
        ]
    }

    // MARK: The child process

    /// A launched application made through the C ABI, or the child exits.
    static func launchedApp() -> OpaquePointer {
        var app: OpaquePointer?
        guard lc_app_create(nil, &app) == lc_status(LC_OK), let app,
              lc_app_perform_simple(app, lc_action_kind(LC_ACTION_LAUNCH)) == lc_status(LC_OK)
        else {
            warn("loading child: lc_app_create or launch failed: \(lc_last_error_message().map { String(cString: $0) } ?? "?")")
            exit(70)
        }
        return app
    }

    /// Runs one job in this (fresh) process, prints `key=value` lines and exits.
    static func runChild(_ job: String) -> Never {
        let parts = job.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2, let text = readText(parts[1]) else {
            warn("loading child: bad job '\(job)'")
            exit(70)
        }
        let paths = text.split(separator: "\n").map(String.init)
        switch parts[0] {
        case "load", "loadmem":
            // Created before the clock starts, as an embedder has its application before it loads.
            let app = launchedApp()
            let before = memoryNow()
            let start = nowNanoseconds()
            for path in paths {
                var plugin: OpaquePointer?
                guard lc_app_load_plugin(app, path, &plugin) == lc_status(LC_OK) else {
                    warn("loading child: \(lc_last_error_message().map { String(cString: $0) } ?? "lc_app_load_plugin failed")")
                    exit(70)
                }
            }
            let elapsed = nowNanoseconds() - start
            let after = memoryNow()
            print(parts[0] == "load" ? "ns=\(elapsed)" : "heap=\(after.heap - before.heap)\nrss=\(after.rss - before.rss)")
        case "unload":
            let app = launchedApp()
            var plugin: OpaquePointer?
            let start = nowNanoseconds()
            let loaded = lc_app_load_plugin(app, paths[0], &plugin)
            let middle = nowNanoseconds()
            guard loaded == lc_status(LC_OK), let plugin, let id = lc_plugin_id(plugin).map({ String(cString: $0) }) else {
                warn("loading child: lc_app_load_plugin failed: \(lc_last_error_message().map { String(cString: $0) } ?? "?")")
                exit(70)
            }
            let unloaded = lc_app_unload_plugin(app, id)
            let end = nowNanoseconds()
            guard unloaded == lc_status(LC_OK) else {
                warn("loading child: lc_app_unload_plugin failed")
                exit(70)
            }
            print("load=\(middle - start)\nunload=\(end - middle)")
        case "raw", "rawmem":
            let cPaths = paths.map { strdup($0) }
            let before = memoryNow()
            let elapsed = cPaths.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { anchor_ffi_dlopen_all($0.baseAddress, $0.count) }
            }
            let after = memoryNow()
            guard elapsed > 0 else { exit(70) }
            print(parts[0] == "raw" ? "ns=\(elapsed)" : "heap=\(after.heap - before.heap)\nrss=\(after.rss - before.rss)")
        default:
            warn("loading child: unknown job '\(parts[0])'")
            exit(70)
        }
        fflush(stdout)
        exit(0)
    }

    /// Heap in use (mallinfo2 uordblks) and resident set size, in bytes.
    static func memoryNow() -> (heap: Int, rss: Int) {
        let heap = Int(anchor_ffi_heap_in_use())
        var rss = 0
        if let text = readText("/proc/self/statm") {
            let fields = text.split(separator: " ")
            if fields.count > 1, let pages = Int(fields[1]) { rss = pages * Int(sysconf(Int32(_SC_PAGESIZE))) }
        }
        return (heap, rss)
    }

    /// Runs this executable as a child with `LC_BENCH_CHILD=job`; its `key=value` lines.
    static func child(_ job: String) -> [String: Double]? {
        // Its standard error joins the output (main.swift's "running loading…" is dropped with the other
        // lines that are not key=value), so that a failure can show it.
        guard let result = timedRun(executablePath(), ["--quick", "--filter", group], environment: ["\(benchChildVariable)=\(job)"],
                                    errorsToOutput: true)
        else { return nil }
        guard result.status == 0 else {
            warn("loading: child '\(job)' failed (\(result.status)):\n\(result.output)")
            return nil
        }
        var values: [String: Double] = [:]
        for line in result.output.split(separator: "\n") {
            let pair = line.split(separator: "=", maxSplits: 1)
            if pair.count == 2, let value = Double(pair[1]) { values[String(pair[0])] = value }
        }
        return values
    }

    // MARK: Plugins

    /// The template every generated plugin is a copy of: a minimal plugin with three delegate functions.
    /// Its id holds a run of digits that each copy replaces with its own number.
    static let idStem = "com.bench.plugin"
    static let idDigits = "000000"
    static let pluginSource = """
        #define LC_DECLARE_DELEGATE_FUNCTIONS
        #include "lifecycle.h"

        static int calls;

        static lc_status plugin_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
            (void)host;
            (void)plugin;
            *state = &calls;
            return LC_OK;
        }

        static const lc_plugin_descriptor_t descriptor = {
            sizeof(lc_plugin_descriptor_t), LC_PLUGIN_MAGIC, LC_ABI_VERSION_MAJOR, LC_ABI_VERSION_MINOR,
            "\(idStem)\(idDigits)", "1.0.0", "a generated benchmark plugin", plugin_init, 0,
        };

        LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }

        LC_EXPORT bool application_didFinishLaunchingWithOptions(lc_app *app, const lc_dict *options) {
            (void)app;
            (void)options;
            calls++;
            return true;
        }

        LC_EXPORT void applicationDidBecomeActive(lc_app *app) { (void)app; calls++; }

        LC_EXPORT void applicationWillResignActive(lc_app *app) { (void)app; calls--; }

        """

    /// Makes `count` plugin files with distinct ids in `folder`; their absolute paths.
    ///
    /// One `cc -shared -fPIC -I include` builds the template; each plugin is a copy of that image with
    /// its id's digits replaced (same length, so nothing else in the file moves). Compiling 1,000 C files
    /// one by one would take minutes on two shared cores; the images a compiler would make differ only in
    /// those bytes, and loading does not look at how a file was made.
    static func makePlugins(count: Int, in folder: String) -> [String]? {
        let source = folder + "/plugin-template.c"
        let image = folder + "/plugin-template.so"
        guard writeText(source, pluginSource), buildPlugin(source: source, image: image), let template = readBytes(image) else {
            warn("loading: cc could not build the plugin template")
            return nil
        }
        let marker = Array((idStem + idDigits).utf8)
        guard let offset = find(marker, in: template) else {
            warn("loading: the plugin template has no id to patch")
            return nil
        }
        var paths: [String] = []
        var bytes = template
        for index in 0..<count {
            let digits = String(index)
            let padded = String(repeating: "0", count: idDigits.count - digits.count) + digits
            bytes.replaceSubrange((offset + idStem.utf8.count)..<(offset + marker.count), with: Array(padded.utf8))
            let path = folder + "/p\(padded).so"
            guard writeBytes(path, bytes) else { return nil }
            paths.append(path)
        }
        return paths
    }
}
