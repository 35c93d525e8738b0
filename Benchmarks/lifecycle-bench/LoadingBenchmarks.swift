import AppLifecycle
import CBenchAnchors
import CLifecycleABI
@preconcurrency import Glibc
import LifecycleC
import PluginHost

// The "loading" group: a delegate call through libffi, loading N plugins, the host's cold start,
// and the memory a loaded plugin costs.
//
// Loads are measured in fresh processes: dlopen is per process and RTLD_NODELETE keeps an image mapped,
// so a second load in the same process would find it already there. The bench re-executes itself
// (`/proc/self/exe --quick --filter loading`) with LC_BENCH_CHILD=MODE:N:FOLDER set; this group, run in
// that child, does the one job, prints its figures on standard output and exits.
enum LoadingBenchmarks {
    static let group = "loading"
    static let childVariable = "LC_BENCH_CHILD"

    static func run(_ settings: Settings) -> [Row] {
        if let job = getenv(childVariable) { runChild(String(cString: job)) }
        var rows: [Row] = []
        rows += delegateCalls(settings)
        guard let folder = makeTemporaryFolder() else {
            fputs("loading: cannot make a temporary folder\n", stderr)
            return rows
        }
        defer { removeFolder(folder) }
        let counts = settings.quick ? [1, 10] : [1, 10, 100, 1_000]
        guard let plugins = makePlugins(count: counts.max()!, in: folder) else { return rows }
        rows += loads(settings, counts: counts, plugins: plugins)
        rows += coldStart(settings, plugins: Array(plugins.prefix(10)), folder: folder)
        rows += unload(settings, folder: folder)
        rows += memory(settings, plugins: Array(plugins.prefix(settings.quick ? 10 : 100)))
        return rows
    }

    // MARK: 1. A delegate call through libffi

    static func delegateCalls(_ settings: Settings) -> [Row] {
        let handle: AppHandle
        do { handle = try AppHandle(configuration: Configuration()) } catch {
            fputs("loading: cannot create an application: \(error)\n", stderr)
            return []
        }
        defer { handle.shutdown() }
        let notify: @convention(c) (UnsafeMutableRawPointer?) -> Void = anchor_ffi_notify_target
        let launch: @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?) -> Bool = anchor_ffi_launch_target
        let notifyAddress = unsafeBitCast(notify, to: UnsafeMutableRawPointer.self)
        let launchAddress = unsafeBitCast(launch, to: UnsafeMutableRawPointer.self)
        // The plugin's respondsToSelector: it exports these two, nothing else.
        let bound = FFIDelegates.bind(
            lookup: { symbol in
                switch symbol {
                case "applicationDidBecomeActive": return notifyAddress
                case "application_didFinishLaunchingWithOptions": return launchAddress
                default: return nil
                }
            },
            app: handle.opaque, closures: handle.closures)
        guard let didBecomeActive = bound.handlers.didBecomeActive,
              let didFinishLaunching = bound.handlers.didFinishLaunching
        else {
            fputs("loading: binding found no handler\n", stderr)
            return []
        }
        let app = handle.app
        let appPointer = UnsafeMutableRawPointer(handle.opaque)
        let iterations = settings.quick ? 10_000 : 1_000_000

        let ours = measure(settings, operations: iterations) {
            for _ in 0..<iterations { didBecomeActive(app) }
        }
        let raw = measure(settings, operations: iterations) { anchor_ffi_raw(notifyAddress, appPointer, UInt64(iterations)) }
        let direct = measure(settings, operations: iterations) { anchor_ffi_direct(notifyAddress, appPointer, UInt64(iterations)) }

        let options: UserInfo = ["url": .string("https://example.com/start"), "badge": .int(3), "cold": .bool(true)]
        let launchIterations = iterations / 4
        var answers = 0
        let oursLaunch = measure(settings, operations: launchIterations) {
            for _ in 0..<launchIterations where didFinishLaunching(app, options) { answers += 1 }
        }
        // The anchor gets a dictionary made once: a C caller would have its own already.
        let box = UserInfoBox(options)
        let rawLaunch = withExtendedLifetime(box) {
            measure(settings, operations: launchIterations) {
                answers += Int(anchor_ffi_raw_bool(launchAddress, appPointer, UnsafeRawPointer(box.opaque), UInt64(launchIterations)))
            }
        }
        blackHole(answers)
        blackHole(anchor_ffi_counter())

        return [
            Row(group: group, name: "Swift API (engine): delegate call through libffi: applicationDidBecomeActive (bound DelegateHandlers closure, -c release)",
                ours: ours, anchors: [("raw ffi_call, cif prepared once (C)", raw), ("direct call through a function pointer (C)", direct)],
                target: "≤ 1.5× raw ffi_call", met: ours.median <= 1.5 * raw.median,
                ratios: "\(ratio(ours.median, raw.median)) raw ffi_call, \(ratio(ours.median, direct.median)) direct call"),
            Row(group: group, name: "Swift API (engine): delegate call through libffi: didFinishLaunchingWithOptions (bool, 3-key dict argument, -c release)",
                ours: oursLaunch, anchors: [("raw ffi_call with a ready lc_dict (C)", rawLaunch)],
                target: "information", met: nil,
                ratios: "\(ratio(oursLaunch.median, rawLaunch.median)) raw ffi_call (ours builds the lc_dict from the UserInfo on every call)"),
        ]
    }

    // MARK: 2. Load + init N plugins

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
            rows.append(Row(group: group, name: "Swift API: load + init \(count) plugin\(count == 1 ? "" : "s") (AppHandle.loadPlugin each, -c release)",
                            ours: ours, anchors: [("raw dlopen + dlsym(lc_plugin_entry) + entry() (C)", raw)],
                            target: "≤ 2× raw", met: ours.median <= 2 * raw.median,
                            ratios: "\(ratio(ours.median, raw.median)) raw; \(perPlugin)"))
        }
        return rows
    }

    // MARK: 3. Host cold start

    static func coldStart(_ settings: Settings, plugins: [String], folder: String) -> [Row] {
        let host = executableFolder() + "/lifecycle-host"
        guard access(host, X_OK) == 0 else {
            fputs("loading: no \(host) (build the lifecycle-host product into the same scratch path); cold start skipped\n", stderr)
            return []
        }
        let script = folder + "/launch-terminate.scenario"
        guard writeText(script, "launch\nterminate\n") else { return [] }
        // The anchors: hello world in Swift, with and without Foundation, built now (not measured).
        let hello = folder + "/hello"
        let helloFoundation = folder + "/hello-foundation"
        guard writeText(hello + ".swift", "print(\"hello\")\n"),
              writeText(helloFoundation + ".swift", "import Foundation\nprint(\"hello\")\n")
        else { return [] }
        let builds = [hello, helloFoundation].compactMap { spawn("swiftc", ["-O", $0 + ".swift", "-o", $0], search: true) }
        var built = true
        for pid in builds { built = waitExit(pid) == 0 && built }
        if builds.count != 2 || !built {
            fputs("loading: swiftc could not build the hello-world anchors; cold start skipped\n", stderr)
            return []
        }

        var arguments = ["run"]
        for plugin in plugins { arguments += ["--plugin", plugin] }
        arguments += ["--no-socket", "--no-pressure", "--no-clock", "--no-signals", "--trace", "json", "--script", script]
        let flags = "run --plugin ×10 --no-socket --no-pressure --no-clock --no-signals --trace json --script S"

        // The default command line: no plugins and no --no-* flag (control socket, PSI, clock and
        // signal watchers all on), only a script that launches and terminates.
        let defaultArguments = ["run", "--script", script]

        let runs = settings.quick ? 1 : settings.runs * 2 + 1
        let warmup = settings.quick ? 0 : settings.warmup
        var defaultExited: [Double] = []
        var active: [Double] = []
        var exited: [Double] = []
        var helloSamples: [Double] = []
        var foundationSamples: [Double] = []
        for run in 0..<(warmup + runs) {
            guard let timing = timedRun(host, arguments, marker: "\"kind\":\"notification\",\"name\":\"didBecomeActive\""),
                  let plain = timedRun(hello, []), let foundation = timedRun(helloFoundation, []),
                  let byDefault = timedRun(host, defaultArguments, errorsToOutput: true)
            else { return [] }
            guard byDefault.status == 0 else {
                fputs("loading: lifecycle-host \(defaultArguments.joined(separator: " ")) exited with \(byDefault.status)\n\(byDefault.output)\n", stderr)
                return []
            }
            guard timing.status == 0, timing.marker != nil else {
                fputs("loading: lifecycle-host exited with \(timing.status) without a didBecomeActive line\n\(timing.output)\n", stderr)
                return []
            }
            if run < warmup { continue }
            active.append(Double(timing.marker!) / 1e6)
            exited.append(Double(timing.exit) / 1e6)
            defaultExited.append(Double(byDefault.exit) / 1e6)
            helloSamples.append(Double(plain.exit) / 1e6)
            foundationSamples.append(Double(foundation.exit) / 1e6)
        }
        let ours = summarize(active, unit: "ms", note: "spawn → the didBecomeActive notification line read (after all 10 delegates)")
        let toExit = summarize(exited, unit: "ms", note: "spawn → exit (launch, then terminate)")
        let plain = summarize(helloSamples, unit: "ms", note: "spawn → exit")
        let foundation = summarize(foundationSamples, unit: "ms", note: "spawn → exit")
        let byDefault = summarize(defaultExited, unit: "ms", note: "spawn → exit")
        return [
            Row(group: group,
                name: "host cold start, default command line: `lifecycle-host run --script S` (S = launch, terminate; no plugins; socket, PSI, clock and signal watchers on), spawn → exit (-c release)",
                ours: byDefault, anchors: [("Swift hello world (swiftc -O), spawn → exit", plain),
                                           ("Swift hello world + import Foundation (swiftc -O)", foundation)],
                target: "≤ 2.5× hello world", met: settings.quick ? nil : byDefault.median <= 2.5 * plain.median,
                ratios: "\(ratio(byDefault.median, plain.median)) hello world, \(ratio(byDefault.median, foundation.median)) hello world + Foundation"),
            Row(group: group, name: "host cold start to didBecomeActive, 10 plugins, process start included (`lifecycle-host \(flags)`, -c release)",
                ours: ours, anchors: [("Swift hello world", plain), ("Swift hello world + import Foundation", foundation)],
                target: "≤ 3× hello world", met: ours.median <= 3 * plain.median,
                ratios: "\(ratio(ours.median, plain.median)) hello world, \(ratio(ours.median, foundation.median)) hello world + Foundation"),
            Row(group: group, name: "host cold start to exit (launch + terminate), 10 plugins (`lifecycle-host \(flags)`, -c release)",
                ours: toExit, anchors: [("Swift hello world", plain)], target: "information", met: nil,
                ratios: "\(ratio(toExit.median, plain.median)) hello world"),
        ]
    }

    // MARK: 3b. Unloading a plugin with 100,000 observers (C ABI)

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
            guard let pid = spawn("cc", ["-shared", "-fPIC", "-O2", "-DNAMES=\(names)", "-I", includeFolder(), "-o", image, source],
                                  search: true),
                  waitExit(pid) == 0, let list = writeList([image])
            else {
                fputs("loading: cc could not build the unload plugin\n", stderr)
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
            Row(group: group, name: "Swift API: memory per loaded plugin (\(plugins.count) loaded in one process, AppHandle.loadPlugin)",
                ours: oursHeap,
                anchors: [("ours, RSS growth (/proc/self/statm)", summarize(rss, unit: "B a plugin")),
                          ("raw dlopen + entry (C), heap", summarize(rawHeap, unit: "B a plugin")),
                          ("raw dlopen + entry (C), RSS", summarize(rawRSS, unit: "B a plugin"))],
                target: "report only (Foundation has no plugin loader to compare with)", met: nil,
                ratios: "heap above raw dlopen: \(Figure.format(summarize(heap, unit: "").median - summarize(rawHeap, unit: "").median)) B a plugin"),
        ]
    }

    // MARK: The child process

    /// Runs one job in this (fresh) process, prints `key=value` lines and exits.
    static func runChild(_ job: String) -> Never {
        let parts = job.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2, let text = readText(parts[1]) else {
            fputs("loading child: bad job '\(job)'\n", stderr)
            exit(70)
        }
        let paths = text.split(separator: "\n").map(String.init)
        switch parts[0] {
        case "load", "loadmem":
            let handle: AppHandle
            do { handle = try AppHandle(configuration: Configuration()) } catch {
                fputs("loading child: \(error)\n", stderr)
                exit(70)
            }
            let before = memoryNow()
            let start = nowNanoseconds()
            for path in paths {
                do { _ = try handle.loadPlugin(path: path) } catch {
                    fputs("loading child: \(error.message)\n", stderr)
                    exit(70)
                }
            }
            let elapsed = nowNanoseconds() - start
            let after = memoryNow()
            print(parts[0] == "load" ? "ns=\(elapsed)" : "heap=\(after.heap - before.heap)\nrss=\(after.rss - before.rss)")
        case "unload":
            var app: OpaquePointer?
            guard lc_app_create(nil, &app) == lc_status(LC_OK), let app,
                  lc_app_perform_simple(app, lc_action_kind(LC_ACTION_LAUNCH)) == lc_status(LC_OK)
            else {
                fputs("loading child: lc_app_create failed\n", stderr)
                exit(70)
            }
            var plugin: OpaquePointer?
            let start = nowNanoseconds()
            let loaded = lc_app_load_plugin(app, paths[0], &plugin)
            let middle = nowNanoseconds()
            guard loaded == lc_status(LC_OK), let plugin, let id = lc_plugin_id(plugin).map({ String(cString: $0) }) else {
                fputs("loading child: lc_app_load_plugin failed: \(lc_last_error_message().map { String(cString: $0) } ?? "?")\n", stderr)
                exit(70)
            }
            let unloaded = lc_app_unload_plugin(app, id)
            let end = nowNanoseconds()
            guard unloaded == lc_status(LC_OK) else {
                fputs("loading child: lc_app_unload_plugin failed\n", stderr)
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
            fputs("loading child: unknown job '\(parts[0])'\n", stderr)
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
        guard let result = timedRun("/proc/self/exe", ["--quick", "--filter", group], environment: ["\(childVariable)=\(job)"],
                                    errorsToOutput: true)
        else { return nil }
        guard result.status == 0 else {
            fputs("loading: child '\(job)' failed (\(result.status)):\n\(result.output)\n", stderr)
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
        guard writeText(source, pluginSource) else { return nil }
        guard let pid = spawn("cc", ["-shared", "-fPIC", "-O2", "-I", includeFolder(), "-o", image, source], search: true),
              waitExit(pid) == 0, let template = readBytes(image)
        else {
            fputs("loading: cc could not build the plugin template\n", stderr)
            return nil
        }
        let marker = Array((idStem + idDigits).utf8)
        guard let offset = find(marker, in: template) else {
            fputs("loading: the plugin template has no id to patch\n", stderr)
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

    /// The repository's include folder (lifecycle.h): found from this file's path at build time.
    static func includeFolder() -> String {
        let file = #filePath
        var parts = file.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // Benchmarks/lifecycle-bench/LoadingBenchmarks.swift
        return parts.joined(separator: "/") + "/include"
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        outer: for start in 0...(haystack.count - needle.count) {
            for index in 0..<needle.count where haystack[start + index] != needle[index] { continue outer }
            return start
        }
        return nil
    }

    static func writeList(_ paths: [String]) -> String? {
        var template = Array("/tmp/lc-bench-list-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { return nil }
        close(fd)
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return writeText(path, paths.joined(separator: "\n") + "\n") ? path : nil
    }

    // MARK: Processes

    /// Starts a process with standard output (and error, when `output` is set) to `output`.
    static func spawn(_ program: String, _ arguments: [String], search: Bool = false, environment extra: [String] = [],
                      output: Int32? = nil, errorsToOutput: Bool = false) -> pid_t?
    {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let output {
            posix_spawn_file_actions_adddup2(&actions, output, STDOUT_FILENO)
            if errorsToOutput { posix_spawn_file_actions_adddup2(&actions, output, STDERR_FILENO) }
            posix_spawn_file_actions_addclose(&actions, output)
        }
        var environment: [String] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            if !text.hasPrefix(childVariable + "=") { environment.append(text) }
            index += 1
        }
        environment += extra
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let status = search ? posix_spawnp(&pid, program, &actions, nil, argv, envp) : posix_spawn(&pid, program, &actions, nil, argv, envp)
        guard status == 0 else {
            fputs("loading: cannot start \(program): \(String(cString: strerror(status)))\n", stderr)
            return nil
        }
        return pid
    }

    static func waitExit(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        // WIFEXITED / WEXITSTATUS by hand (macros are not imported).
        return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
    }

    /// Spawns a process, reads its standard output to the end and waits for it. Times from just before
    /// the spawn to the first line containing `marker` and to the exit, in nanoseconds.
    static func timedRun(_ program: String, _ arguments: [String], environment: [String] = [], marker: String? = nil,
                         errorsToOutput: Bool = false) -> (marker: UInt64?, exit: UInt64, status: Int32, output: String)?
    {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let start = nowNanoseconds()
        guard let pid = spawn(program, arguments, environment: environment, output: fds[1], errorsToOutput: errorsToOutput) else {
            close(fds[0])
            close(fds[1])
            return nil
        }
        close(fds[1])
        var output: [UInt8] = []
        var markerTime: UInt64?
        let needle = marker.map { Array($0.utf8) }
        var searched = 0
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fds[0], $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; break }
            if n == 0 { break }
            output += chunk[0..<n]
            if let needle, markerTime == nil {
                if find(needle, in: Array(output[max(0, searched - needle.count)...])) != nil { markerTime = nowNanoseconds() - start }
                searched = output.count
            }
        }
        close(fds[0])
        let status = waitExit(pid)
        let exit = nowNanoseconds() - start
        return (markerTime, exit, status, String(decoding: output, as: UTF8.self))
    }

    static func executableFolder() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/self/exe", &buffer, Int(PATH_MAX))
        guard n > 0 else { return "." }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
    }

    // MARK: Files

    static func makeTemporaryFolder() -> String? {
        var template = Array("/tmp/lc-bench-loading-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { return nil }
        return String(cString: made)
    }

    static func removeFolder(_ folder: String) {
        guard let dir = opendir(folder) else { return }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(dir)
        for name in names { unlink(folder + "/" + name) }
        rmdir(folder)
    }

    static func readBytes(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return nil }
            if n == 0 { return bytes }
            bytes += chunk[0..<n]
        }
    }

    static func readText(_ path: String) -> String? { readBytes(path).map { String(decoding: $0, as: UTF8.self) } }

    static func writeBytes(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o755) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 { if errno == EINTR { continue }; return false }
            offset += n
        }
        return true
    }

    static func writeText(_ path: String, _ text: String) -> Bool { writeBytes(path, Array(text.utf8), mode: 0o644) }
}
