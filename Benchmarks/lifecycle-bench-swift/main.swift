import BenchHarness
@preconcurrency import Glibc

// lifecycle-bench-swift: the Swift API's rows (the AppLifecycle product, linked statically as a Swift
// embedder links it) beside Foundation and Dispatch. lifecycle-bench runs it at the turn of each group
// that has Swift rows and merges its rows (one `row ` JSON line each on standard output); it also runs
// alone:  Benchmarks/.build/release/lifecycle-bench-swift --group posting
//
//   --group NAME      the group to run (posting, cross-thread); all of them when absent
//   --quick, --runs N as lifecycle-bench

let usage = "usage: lifecycle-bench-swift [--group NAME] [--quick] [--runs N]"
var only: String?
var arguments = CommandLine.arguments.dropFirst()
let settings = Settings.parse(&arguments, usage: usage) { argument, rest in
    guard argument == "--group" else { return false }
    only = rest.popFirst()
    return true
}

let groups: [(name: String, run: @Sendable (Settings) -> [Row])] = [
    ("cross-thread", SwiftCrossThreadBenchmarks.run),
    ("posting", SwiftPostingBenchmarks.run),
]
if let only, !groups.contains(where: { $0.name == only }) {
    fputs("lifecycle-bench-swift: no group '\(only)' (groups: \(groups.map(\.name).joined(separator: ", ")))\n", stderr)
    exit(64)
}
for group in groups where only == nil || group.name == only {
    fputs("running \(group.name) (Swift API)…\n", stderr)
    for row in group.run(settings) {
        print(row.line)
        fflush(stdout)
    }
}
