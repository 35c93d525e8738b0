import BenchHarness
import CBenchAnchors
import CLifecycleABI
@preconcurrency import Glibc

// The "delegates" group: what a delegate call costs a C user, through the call that makes one —
// an action. An application (lc_app_create, launched, active) with N plugins loaded with
// lc_app_load_plugin, each implementing applicationDidReceiveMemoryWarning, is sent
// lc_app_perform(LC_ACTION_MEMORY_WARNING) over and over; each action calls the N delegates, then
// posts didReceiveMemoryWarning (userInfo {"level": "warning"}) to no observer. The plugins are of
// two kinds, measured side by side:
//   - ABI 1.0: the delegate is an exported function the host finds with dlsym and calls through libffi;
//   - ABI 1.1: the delegate is a slot of the table (lc_plugin_delegate_t) init registers with
//     host->set_delegate; its C type is the header's, so the host calls it directly (no libffi).
// The same action with no plugin at all is its fixed cost T(0); a delegate's cost is (T(N) − T(0)) / N,
// taken run by run. Beside them, in alternation in the same runs: the N functions themselves (the 1.0
// plugins' own applicationDidReceiveMemoryWarning) called by a C loop through function pointers, and
// by one raw ffi_call each (one cif prepared once) — what a C host would write.
//
// Memory warning is legal in inactive, active and background and leaves the state as it is
// (docs/lifecycle.md, "Memory warning"), so it repeats without end in the active state and calls
// exactly one delegate function per plugin: no other action does both.
//
// Every delegate is checked to have run: each plugin counts its calls in a static counter it exports
// (bench_delegate_calls), read with dlopen(RTLD_NOLOAD) + dlsym, before and after the measurement.
//
// Instruction counts (callgrind, BenchHarness's Callgrind): in a normal (not --quick) run the group
// re-runs itself once under valgrind (copies of this executable and liblifecycle.so without debug
// sections) with LC_BENCH_CALLGRIND=1 and LC_BENCH_DELEGATES=FOLDER (the plugins); that child runs each
// configuration between two marks. LC_BENCH_CALLGRIND_KEEP=DIR keeps the profile parts.
enum DelegateBenchmarks {
    static let group = "delegates"
    /// The plugins' folder, for the callgrind child.
    static let folderVariable = "LC_BENCH_DELEGATES"

    static func run(_ settings: Settings) -> [Row] {
        if Callgrind.mode == .workload, let folder = getenv(folderVariable) { callgrindChild(folder: String(cString: folder)) }
        guard let folder = makeTemporaryFolder("lc-bench-delegates") else {
            warn("delegates: cannot make a temporary folder")
            return []
        }
        defer { removeFolder(folder) }
        let counts = settings.quick ? [1, 10] : [1, 10, 100, 1_000]
        guard let plugins = makePlugins(count: counts.max()!, in: folder) else { return [] }
        let instructions = settings.quick ? nil : callgrind(folder: folder)
        return measure(settings, counts: counts, plugins: plugins, instructions: instructions)
    }

    // MARK: The plugins

    enum Kind: CaseIterable {
        case exported  // ABI 1.0
        case table     // ABI 1.1

        var label: String {
            switch self {
            case .exported: return "ABI 1.0 exported applicationDidReceiveMemoryWarning (dlsym, libffi)"
            case .table: return "ABI 1.1 delegate table did_receive_memory_warning (lc_plugin_delegate_t, called directly)"
            }
        }

        var short: String { self == .exported ? "a" : "b" }

        /// The template's id; each copy replaces the digits with its number.
        var idStem: String { "com.bench.delegates.\(short)" }
    }

    static let idDigits = "000000"

    /// The plugin of each kind: the memory-warning delegate counts its calls in a static counter the
    /// plugin exports (bench_delegate_calls), nothing else.
    static func source(_ kind: Kind) -> String {
        let common = """
            #include "lifecycle.h"

            static uint64_t calls;

            LC_EXPORT uint64_t bench_delegate_calls(void) { return calls; }

            """
        switch kind {
        case .exported:
            return common + """
                static lc_status plugin_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
                    (void)host, (void)plugin, (void)state;
                    return LC_OK;
                }

                LC_EXPORT void applicationDidReceiveMemoryWarning(lc_app *app) { (void)app; calls++; }

                static const lc_plugin_descriptor_t descriptor = {
                    sizeof(lc_plugin_descriptor_t), LC_PLUGIN_MAGIC, LC_ABI_VERSION_MAJOR, LC_ABI_VERSION_MINOR,
                    "\(kind.idStem)\(idDigits)", "1.0.0", "delegates bench: ABI 1.0 exported function", plugin_init, 0,
                };

                LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }

                """
        case .table:
            return common + """
                static void did_receive_memory_warning(lc_plugin *plugin, void *state) { (void)plugin; ++*(uint64_t *)state; }

                static const lc_plugin_delegate_t delegate = {
                    .struct_size = sizeof(lc_plugin_delegate_t),
                    .did_receive_memory_warning = did_receive_memory_warning,
                };

                static lc_status plugin_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
                    *state = &calls;
                    return host->set_delegate(plugin, &delegate);
                }

                static const lc_plugin_descriptor_t descriptor = {
                    sizeof(lc_plugin_descriptor_t), LC_PLUGIN_MAGIC, LC_ABI_VERSION_MAJOR, LC_ABI_VERSION_MINOR,
                    "\(kind.idStem)\(idDigits)", "1.0.0", "delegates bench: ABI 1.1 delegate table", plugin_init, 0,
                };

                LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }

                """
        }
    }

    static func path(_ kind: Kind, _ index: Int, in folder: String) -> String {
        let digits = String(index)
        return folder + "/\(kind.short)" + String(repeating: "0", count: idDigits.count - digits.count) + digits + ".so"
    }

    /// `count` plugins of each kind in `folder`: one cc build of each template, then copies with the
    /// id's digits replaced (same length: nothing else in the image moves; compiling 2,000 files would
    /// take minutes on two shared cores, and loading does not look at how a file was made).
    static func makePlugins(count: Int, in folder: String) -> [Kind: [String]]? {
        var result: [Kind: [String]] = [:]
        for kind in Kind.allCases {
            let source = folder + "/template-\(kind.short).c"
            let image = folder + "/template-\(kind.short).so"
            guard writeText(source, self.source(kind)), buildPlugin(source: source, image: image), let template = readBytes(image) else {
                warn("delegates: cc could not build the plugin template")
                return nil
            }
            let marker = Array((kind.idStem + idDigits).utf8)
            guard let offset = find(marker, in: template) else {
                warn("delegates: the plugin template has no id to patch")
                return nil
            }
            var bytes = template
            var paths: [String] = []
            for index in 0..<count {
                let digits = String(index)
                let padded = String(repeating: "0", count: idDigits.count - digits.count) + digits
                bytes.replaceSubrange((offset + kind.idStem.utf8.count)..<(offset + marker.count), with: Array(padded.utf8))
                let file = path(kind, index, in: folder)
                guard writeBytes(file, bytes) else { return nil }
                paths.append(file)
            }
            result[kind] = paths
        }
        return result
    }

    /// The plugin's own count of delegate calls (dlopen(RTLD_NOLOAD) of the image the host loaded).
    static func calls(_ path: String) -> UInt64? {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD) else { return nil }
        defer { dlclose(handle) }
        guard let symbol = dlsym(handle, "bench_delegate_calls") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) () -> UInt64).self)()
    }

    /// The plugin's exported applicationDidReceiveMemoryWarning (the anchors call it).
    static func delegateFunction(_ path: String) -> UnsafeMutableRawPointer? {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD) else { return nil }
        defer { dlclose(handle) }
        return dlsym(handle, "applicationDidReceiveMemoryWarning")
    }

    // MARK: Applications

    static func lastError() -> String { lc_last_error_message().map { String(cString: $0) } ?? "?" }

    /// An application, launched (active), with `plugins` loaded by lc_app_load_plugin; nil (with a
    /// warning) when something failed.
    static func makeApp(plugins: ArraySlice<String>) -> OpaquePointer? {
        var made: OpaquePointer?
        guard lc_app_create(nil, &made) == lc_status(LC_OK), let app = made else {
            warn("delegates: lc_app_create failed: \(lastError())")
            return nil
        }
        for plugin in plugins where lc_app_load_plugin(app, plugin, nil) != lc_status(LC_OK) {
            warn("delegates: lc_app_load_plugin \(plugin) failed: \(lastError())")
            lc_app_destroy(app)
            return nil
        }
        guard lc_app_perform_simple(app, lc_action_kind(LC_ACTION_LAUNCH)) == lc_status(LC_OK),
              lc_app_state(app) == lc_state(LC_STATE_ACTIVE)
        else {
            warn("delegates: the launch failed: \(lastError())")
            lc_app_destroy(app)
            return nil
        }
        return app
    }

    /// The measured action: a memory warning (level "warning").
    static func memoryWarning() -> lc_action_t {
        var action = lc_action_t()
        action.struct_size = UInt32(MemoryLayout<lc_action_t>.size)
        action.kind = lc_action_kind(LC_ACTION_MEMORY_WARNING)
        action.memory_level = lc_memory_level(LC_MEMORY_WARNING)
        return action
    }

    /// `count` memory warnings; how many failed (0).
    @inline(never) static func perform(_ app: OpaquePointer, _ count: Int) -> Int {
        var action = memoryWarning()
        var failed = 0
        for _ in 0..<count where lc_app_perform(app, &action) != lc_status(LC_OK) { failed += 1 }
        return failed
    }

    // MARK: Measuring

    static func measure(_ settings: Settings, counts: [Int], plugins: [Kind: [String]], instructions: Counts?) -> [Row] {
        guard let empty = makeApp(plugins: []) else { return [] }
        defer { lc_app_destroy(empty) }
        var failures = perform(empty, 3)
        var emptySamples: [Double] = []
        var rows: [Row] = []
        for n in counts {
            var apps: [Kind: OpaquePointer] = [:]
            defer { for app in apps.values { lc_app_destroy(app) } }
            for kind in Kind.allCases {
                guard let app = makeApp(plugins: plugins[kind]![0..<n]) else { return rows }
                apps[kind] = app
            }
            let exportedPaths = Array(plugins[.exported]![0..<n])
            let fns = exportedPaths.map(delegateFunction)
            guard fns.allSatisfy({ $0 != nil }) else {
                warn("delegates: a 1.0 plugin's applicationDidReceiveMemoryWarning is not found")
                return rows
            }
            let anchorApp = UnsafeMutableRawPointer(apps[.exported]!)

            // Each delegate runs once per action: 3 actions, 3 calls in each plugin.
            var before: [Kind: [UInt64]] = [:]
            for kind in Kind.allCases { before[kind] = plugins[kind]![0..<n].map { calls($0) ?? 0 } }
            for kind in Kind.allCases { failures += perform(apps[kind]!, 3) }
            for kind in Kind.allCases {
                let after = plugins[kind]![0..<n].map { calls($0) ?? 0 }
                if zip(after, before[kind]!).contains(where: { $0 - $1 != 3 }) {
                    warn("delegates: \(n) plugins, \(kind.label): 3 actions did not call every delegate exactly 3 times")
                }
                before[kind] = after
            }

            // In alternation, run by run: ours (1.0, 1.1), the action alone, and the C anchors over the
            // same N functions. Each body counts what it did, for the check below.
            var performed: [Kind: Int] = [.exported: 0, .table: 0]
            var anchorPasses = 0
            let samples = fns.withUnsafeBufferPointer { buffer -> [[Double]] in
                let list = buffer.baseAddress!
                return measureTogetherSamples(settings, [
                    { k in failures += perform(apps[.exported]!, k); performed[.exported]! += k },
                    { k in failures += perform(apps[.table]!, k); performed[.table]! += k },
                    { k in failures += perform(empty, k) },
                    { k in blackHole(anchor_deleg_c_loop(list, n, anchorApp, k)); anchorPasses += k },
                    { k in blackHole(anchor_deleg_ffi_loop(list, n, anchorApp, k)); anchorPasses += k },
                ])
            }
            // Every delegate ran once per action (the 1.0 functions also once per anchor pass).
            for kind in Kind.allCases {
                let expected = UInt64(performed[kind]! + (kind == .exported ? anchorPasses : 0))
                let after = plugins[kind]![0..<n].map { calls($0) ?? 0 }
                if zip(after, before[kind]!).contains(where: { $0 - $1 != expected }) {
                    warn("delegates: \(n) plugins, \(kind.label): a plugin's delegate ran other than \(expected) times")
                }
            }
            emptySamples += samples[2]
            let fixed = summarize(samples[2], unit: "ns")
            let loop = summarize(samples[3], unit: "ns")
            let ffi = summarize(samples[4], unit: "ns")
            let loopEach = summarize(samples[3].map { $0 / Double(n) }, unit: "ns")
            let ffiEach = summarize(samples[4].map { $0 / Double(n) }, unit: "ns")
            let plural = n == 1 ? "plugin" : "plugins"
            for (index, kind) in Kind.allCases.enumerated() {
                let perAction = summarize(samples[index], unit: "ns")
                let perDelegate = summarize(zip(samples[index], samples[2]).map { ($0 - $1) / Double(n) }, unit: "ns",
                                            note: "(T(\(n)) − T(0)) / \(n), run by run")
                let counted = instructions?.perDelegate(kind, n)
                var counts = ""
                if let counted, let ffiCall = instructions?.ffiCall, let cCall = instructions?.cCall {
                    counts = "; callgrind per delegate: \(Figure.format(counted)) instructions, raw ffi_call \(Figure.format(ffiCall)), C call \(Figure.format(cCall))"
                }
                // Issue 19: 1,000 delegates of a 1.1 table in one action within 20× a C loop over the functions.
                let thousand = kind == .table && n == 1_000
                rows.append(Row(
                    group: group,
                    name: "delegates through an action: lc_app_perform(MEMORY_WARNING), \(n) \(plural), \(kind.label): per action (C ABI, -c release)",
                    ours: perAction,
                    anchors: [("the same action with 0 plugins (its fixed cost T(0))", fixed),
                              ("C: \(n) raw ffi_call\(n == 1 ? "" : "s") (one cif prepared once) of the same functions", ffi),
                              ("C: a loop over \(n) function pointer\(n == 1 ? "" : "s") (the same functions)", loop)],
                    target: thousand ? "≤ 20× the C loop over the 1,000 functions" : "information",
                    met: thousand && !settings.quick ? perAction.median <= 20 * loop.median : nil,
                    ratios: "\(ratio(perAction.median, ffi.median)) the raw ffi_calls, \(ratio(perAction.median, loop.median)) the C loop, \(ratio(perAction.median, fixed.median)) the action alone"))
                // Issue 19's targets. A 1.1 table's slot is called directly: ≤ 400 instructions and ≤ 40 ns.
                // A 1.0 exported function goes through libffi: ≤ a raw ffi_call + 150 instructions. The
                // counts exist at the callgrind run's N (1 and 100); at other N only the time is judged.
                let target: String
                var met: Bool?
                switch kind {
                case .table:
                    target = "≤ 400 instructions and ≤ 40 ns"
                    met = perDelegate.median <= 40 && (counted.map { $0 <= 400 } ?? true)
                case .exported:
                    target = "≤ raw ffi_call + 150 instructions"
                    if let counted, let ffiCall = instructions?.ffiCall { met = counted <= ffiCall + 150 }
                }
                if counted == nil { counts += "; no instruction count at this N" + (kind == .table ? " (time judged alone)" : "") }
                rows.append(Row(
                    group: group,
                    name: "delegates through an action: lc_app_perform(MEMORY_WARNING), \(n) \(plural), \(kind.label): per delegate (C ABI, -c release)",
                    ours: perDelegate,
                    anchors: [("C: raw ffi_call, cif prepared once", ffiEach), ("C: direct call through a function pointer", loopEach)],
                    target: target, met: settings.quick ? nil : met,
                    ratios: "\(ratio(perDelegate.median, ffiEach.median)) raw ffi_call, \(ratio(perDelegate.median, loopEach.median)) direct call\(counts)",
                    instructions: counted))
            }
        }
        if failures > 0 { warn("delegates: \(failures) lc_app_perform calls failed: \(lastError())") }
        let fixed = summarize(emptySamples, unit: "ns")
        rows.insert(Row(group: group, name: "delegates: lc_app_perform(MEMORY_WARNING) with 0 plugins: the action's fixed cost T(0) (C ABI, -c release)",
                        ours: fixed, anchors: [], target: "information", met: nil,
                        ratios: "all the runs of every N", instructions: instructions?.fixedCost ?? nil), at: 0)
        return rows
    }

    // MARK: Callgrind

    /// Instruction counts per action and per delegate, from one callgrind run.
    struct Counts {
        var counts: Callgrind.Counts

        /// Instructions of the action with 0 plugins.
        var fixedCost: Double? { counts.perOperation("action0") }
        /// Per delegate with N plugins of `kind`: (action with N − action with 0) / N.
        func perDelegate(_ kind: Kind, _ n: Int) -> Double? {
            counts.perOperation("\(kind.short)\(n)", minus: "action0").map { $0 / Double(n) }
        }
        /// The anchors, per call: raw ffi_call, and a direct call through a function pointer.
        var ffiCall: Double? { counts.perOperation("ffi").map { $0 / Double(callgrindCounts.max()!) } }
        var cCall: Double? { counts.perOperation("loop").map { $0 / Double(callgrindCounts.max()!) } }
    }

    static let callgrindCounts = [1, 100]
    static let callgrindActions = 200

    /// The configurations the child runs, in order: nothing (the overhead every part holds), the action
    /// with no plugin, with N plugins of each kind, and the two anchors over the N 1.0 functions; each
    /// `callgrindActions` times.
    static var callgrindConfigurations: [Callgrind.Configuration] {
        var list = [Callgrind.Configuration("empty", 0), Callgrind.Configuration("action0", callgrindActions)]
        for n in callgrindCounts {
            for kind in Kind.allCases { list.append(Callgrind.Configuration("\(kind.short)\(n)", callgrindActions)) }
        }
        return list + [Callgrind.Configuration("ffi", callgrindActions), Callgrind.Configuration("loop", callgrindActions)]
    }

    /// The child's side (under callgrind): every application made and used once, then each
    /// configuration between two marks; exits.
    static func callgrindChild(folder: String) -> Never {
        guard let empty = makeApp(plugins: []) else { exit(70) }
        var apps: [String: OpaquePointer] = [:]
        for n in callgrindCounts {
            for kind in Kind.allCases {
                guard let app = makeApp(plugins: ArraySlice((0..<n).map { path(kind, $0, in: folder) })) else { exit(70) }
                apps["\(kind.short)\(n)"] = app
            }
        }
        let anchorN = callgrindCounts.max()!
        let fns = (0..<anchorN).map { delegateFunction(path(.exported, $0, in: folder)) }
        let anchorApp = UnsafeMutableRawPointer(apps["a\(anchorN)"]!)
        // Once each before the marks: first calls (lazy binding, caches) are not counted.
        var failures = perform(empty, 2)
        for app in apps.values { failures += perform(app, 2) }
        fns.withUnsafeBufferPointer { buffer in
            blackHole(anchor_deleg_c_loop(buffer.baseAddress!, anchorN, anchorApp, 2))
            blackHole(anchor_deleg_ffi_loop(buffer.baseAddress!, anchorN, anchorApp, 2))
        }
        let configurations = callgrindConfigurations
        Callgrind.workload(configurations, mark: { anchor_post_callgrind_mark($0) }) { index in
            let k = configurations[index].operations
            switch configurations[index].key {
            case "empty": break
            case "action0": failures += perform(empty, k)
            case "ffi": fns.withUnsafeBufferPointer { blackHole(anchor_deleg_ffi_loop($0.baseAddress!, anchorN, anchorApp, k)) }
            case "loop": fns.withUnsafeBufferPointer { blackHole(anchor_deleg_c_loop($0.baseAddress!, anchorN, anchorApp, k)) }
            default: failures += perform(apps[configurations[index].key]!, k)
            }
        }
        for app in apps.values { lc_app_destroy(app) }
        lc_app_destroy(empty)
        exit(failures == 0 ? 0 : 70)
    }

    /// The parent's side: the child under callgrind; nil (with a warning) when valgrind is missing or
    /// the run fails.
    static func callgrind(folder: String) -> Counts? {
        Callgrind.count(callgrindConfigurations, arguments: ["--quick", "--filter", group], libraries: ["liblifecycle.so"],
                        environment: [folderVariable: folder], label: group).map(Counts.init)
    }
}
