@preconcurrency import Glibc
import Foundation

// Instruction counts with callgrind, for any bench executable: the executable re-runs itself under
// `valgrind --tool=callgrind` with LC_BENCH_CALLGRIND=1, and that child runs each configuration of a
// list once between two calls of a C mark function (CBenchAnchors' `anchor_post_callgrind_mark`);
// `--dump-before=<mark>` splits the profile at each call, so each part holds exactly one
// configuration's operations. Instructions per operation = (part total − the empty configuration's
// part) / operations.
//
//   LC_BENCH_CALLGRIND=report        the counts only (`key<TAB>N instructions/<unit>`), no timing
//   LC_BENCH_CALLGRIND_KEEP=DIR      keeps the profile parts (and the stripped copies) in DIR/<executable>:
//                                    callgrind_annotate --inclusive=yes DIR/lifecycle-bench/callgrind.out.5
//                                    (part 2i+3 is configuration i; the last run of the process is kept)
//   LC_BENCH_CALLGRIND_ONLY=key,…    (set by the parent) only those configurations run
//
// Valgrind 3.19 cannot read the DWARF 5 the toolchain writes, so the child runs from copies without
// their debug sections (symbols stay, for the mark and for callgrind_annotate): the executable and
// the libraries of the build folder it loads (liblifecycle.so for the C-ABI bench), side by side in
// one folder; the executable's RUNPATH holds $ORIGIN, so the copy loads the stripped library.

public enum Callgrind {
    public static let variable = "LC_BENCH_CALLGRIND"
    public static let keepVariable = "LC_BENCH_CALLGRIND_KEEP"
    public static let onlyVariable = "LC_BENCH_CALLGRIND_ONLY"
    /// The C function whose calls split the profile (CBenchAnchors).
    public static let markSymbol = "anchor_post_callgrind_mark"

    /// The valgrind executable, or nil when it is not installed.
    public static var valgrind: String? {
        let candidates: [String] = ["/usr/bin/valgrind", "/usr/local/bin/valgrind"]
        return candidates.first { access($0, X_OK) == 0 }
    }

    /// What this process is asked to do.
    public enum Mode: Sendable {
        /// An ordinary run: measure, and count instructions unless `--quick`.
        case measure
        /// LC_BENCH_CALLGRIND=1: the child under valgrind; run the configurations between marks.
        case workload
        /// LC_BENCH_CALLGRIND=report: print the counts only.
        case report
    }

    public static var mode: Mode {
        switch getenv(variable).map({ String(cString: $0) }) {
        case "1"?: return .workload
        case "report"?: return .report
        default: return .measure
        }
    }

    /// One configuration: its key and the operations it runs between its marks. The first must be the
    /// empty one (0 operations, nothing run): its part is the overhead every other part also holds.
    /// Another with 0 operations is counted but never divided (a base to subtract, see `perOperation`).
    public struct Configuration: Sendable {
        public var key: String
        public var operations: Int

        public init(_ key: String, _ operations: Int) {
            self.key = key
            self.operations = operations
        }
    }

    /// The configurations the parent selected (LC_BENCH_CALLGRIND_ONLY), or nil for all.
    public static var selected: Set<String>? {
        getenv(onlyVariable).map { Set(String(cString: $0).split(separator: ",").map(String.init)) }
    }

    /// The child's side: calls `mark(0)`, then for configuration i `mark(2i+1)`, `body(i)` (unless
    /// LC_BENCH_CALLGRIND_ONLY leaves it out: its marks stay, its part is empty), `mark(2i+2)`.
    public static func workload(_ configurations: [Configuration], mark: (Int32) -> Void, _ body: (Int) -> Void) {
        let only = selected
        mark(0)
        for index in configurations.indices {
            mark(Int32(2 * index + 1))
            if only?.contains(configurations[index].key) ?? true { body(index) }
            mark(Int32(2 * index + 2))
        }
    }

    /// Net instruction counts of one callgrind run: each configuration's part minus the empty one's.
    public struct Counts: Sendable {
        public var net: [String: Double]
        public var operations: [String: Int]

        /// Instructions per operation of `key`; `minus`: a configuration whose net count is subtracted
        /// first (a peer's call with no operations: its set-up and tear-down).
        public func perOperation(_ key: String, minus base: String? = nil) -> Double? {
            guard var total = net[key], let operations = operations[key], operations > 0 else { return nil }
            if let base {
                guard let baseTotal = net[base] else { return nil }
                total -= baseTotal
            }
            return max(0, total) / Double(operations)
        }
    }

    /// The parent's side: runs this executable (stripped copies, see above) under callgrind with
    /// `arguments`, LC_BENCH_CALLGRIND=1 and LC_BENCH_CALLGRIND_ONLY=`only` (nil: every configuration);
    /// `libraries`: file names beside the executable it loads and that must be stripped too;
    /// `environment`: more variables for the child (what its workload needs to find). Nil when
    /// valgrind is not installed or the run fails (said on standard error, prefixed `label`).
    public static func count(_ configurations: [Configuration], arguments: [String], libraries: [String] = [],
                             only: [String]? = nil, environment extra: [String: String] = [:], label: String) -> Counts?
    {
        guard let valgrind else {
            warn("\(label): valgrind not found; no instruction counts")
            return nil
        }
        let name = executableName()
        let keep = getenv(keepVariable).map { String(cString: $0) + "/" + name }
        if let keep {
            mkdir(String(keep[..<keep.lastIndex(of: "/")!]), 0o755)
            mkdir(keep, 0o755)
        }
        guard let folder = keep ?? makeTemporaryFolder("lc-bench-callgrind") else {
            warn("\(label): no folder for callgrind's parts")
            return nil
        }
        defer { if keep == nil { removeFolder(folder) } }
        for file in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where file.hasPrefix("callgrind.out") {
            unlink(folder + "/" + file)
        }
        let child = strippedCopy(into: folder, libraries: libraries, label: label) ?? executablePath()

        var environment = ProcessInfo.processInfo.environment
        environment[variable] = "1"
        environment[onlyVariable] = only?.joined(separator: ",")
        environment[benchChildVariable] = nil
        environment.merge(extra) { $1 }
        let log = folder + "/valgrind.log"
        // Kept parts name every function in full (no name compression across parts), so that
        // callgrind_annotate can read any one of them alone.
        let names = keep == nil ? [] : ["--compress-strings=no"]
        let status = run(valgrind, ["--tool=callgrind", "--callgrind-out-file=\(folder)/callgrind.out", "--dump-before=\(markSymbol)",
                                    "--dump-instr=no", "--log-file=\(log)"] + names + [child] + arguments,
                         environment: environment)
        guard status == 0 else {
            let tail = (readText(log) ?? "").split(separator: "\n").suffix(15).joined(separator: "\n")
            warn("\(label): the callgrind run failed (status \(status)):\n\(tail)")
            return nil
        }
        // Part j (1-based) is written before the j-th mark and holds what ran since the mark before;
        // configuration i runs between marks 2i+1 and 2i+2 (the first mark is mark(0)): part 2i+3.
        var parts: [Int: Double] = [:]
        for file in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where file.hasPrefix("callgrind.out.") {
            guard let part = Int(file.dropFirst("callgrind.out.".count)), let text = readText(folder + "/" + file) else { continue }
            for line in text.split(separator: "\n") where line.hasPrefix("summary:") || line.hasPrefix("totals:") {
                if let value = Double(line.split(separator: " ").dropFirst().first ?? "") { parts[part] = value }
            }
        }
        guard let first = configurations.first, first.operations == 0, let overhead = parts[3] else {
            warn("\(label): the callgrind run wrote no profile parts (or no empty configuration comes first)")
            return nil
        }
        var counts = Counts(net: [:], operations: [:])
        for (index, configuration) in configurations.enumerated().dropFirst() {
            guard only.map({ $0.contains(configuration.key) }) ?? true, let total = parts[2 * index + 3] else { continue }
            counts.net[configuration.key] = total - overhead
            counts.operations[configuration.key] = configuration.operations
        }
        return counts
    }

    /// Copies this executable and `libraries` (beside it) into `folder` without debug sections; the
    /// copy's path, or nil (said on standard error) when one of them cannot be copied or stripped.
    static func strippedCopy(into folder: String, libraries: [String], label: String) -> String? {
        let strippers: [String] = ["/usr/bin/strip", "/usr/bin/objcopy", "/usr/bin/llvm-strip"]
        guard let strip = strippers.first(where: { access($0, X_OK) == 0 }) else {
            warn("\(label): no strip or objcopy; valgrind reads the debug info as it can")
            return nil
        }
        let executable = executablePath()
        let origin = executableFolder()
        let name = executableName()
        for file in [name] + libraries {
            let source = file == name ? executable : origin + "/" + file
            let copy = folder + "/" + file
            unlink(copy)
            guard let bytes = readBytes(source), writeBytes(copy, bytes),
                  run(strip, ["--strip-debug", copy], environment: ProcessInfo.processInfo.environment) == 0
            else {
                warn("\(label): cannot copy and strip \(source); valgrind reads the debug info as it can")
                return nil
            }
        }
        return folder + "/" + name
    }

    /// This executable's file name.
    static func executableName() -> String {
        let path = executablePath()
        return path.lastIndex(of: "/").map { String(path[path.index(after: $0)...]) } ?? path
    }

    /// Runs a program to completion, its output discarded; its exit status, or -1.
    static func run(_ path: String, _ arguments: [String], environment: [String: String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationReason == .exit ? process.terminationStatus : -1
    }

    /// LC_BENCH_CALLGRIND=report: one line per count, `key<TAB>N instructions/<unit>`, in order.
    public static func printReport(_ counts: [(key: String, instructions: Double)], unit: String = "post") {
        for (key, instructions) in counts { print("\(key)\t\(Figure.format(instructions)) instructions/\(unit)") }
        fflush(stdout)
    }
}
