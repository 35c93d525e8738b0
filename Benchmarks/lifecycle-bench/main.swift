import BenchHarness
@preconcurrency import Glibc

// lifecycle-bench: each case beside the peers and anchors a user would otherwise pick, measured in the
// same run, through the calls users make. This process is a C-ABI user: it links liblifecycle.so and
// sees include/lifecycle.h only. The Swift API's rows come from lifecycle-bench-swift (beside this
// executable), run at their group's turn. Build and run in release mode:
//
//   swift build -c release --package-path Benchmarks && Benchmarks/.build/release/lifecycle-bench
//
//   --quick           one short run per case (CI: proves each case runs; the figures mean nothing)
//   --filter WORD     only the groups whose name contains WORD
//   --runs N          runs per figure (default 11)
//   --markdown FILE   also write the table as Markdown (docs/benchmarks.md takes it)
//   --plot FILE       also write the plot of post cost against N (SVG)

let usage = "usage: lifecycle-bench [--quick] [--filter WORD] [--runs N] [--markdown FILE] [--plot FILE]"
var markdownPath: String?
var plotPath: String?
var arguments = CommandLine.arguments.dropFirst()
let settings = Settings.parse(&arguments, usage: usage) { argument, rest in
    switch argument {
    case "--markdown": markdownPath = rest.popFirst()
    case "--plot": plotPath = rest.popFirst()
    default: return false
    }
    return true
}

/// The Swift API's rows of a group, from lifecycle-bench-swift.
func swiftRows(_ group: String) -> [Row] {
    let program = executableFolder() + "/lifecycle-bench-swift"
    guard access(program, X_OK) == 0 else {
        warn("lifecycle-bench: no \(program): build the bench package (swift build -c release --package-path Benchmarks)")
        return []
    }
    return rowsFromChild(program, settings.arguments + ["--group", group])
}

var rows: [Row] = []
for group in benchmarkGroups where settings.wants(group.name) {
    fputs("running \(group.name)…\n", stderr)
    let produced = group.run(settings)
    for row in produced { printRow(row) }
    rows += produced
    // A child of this bench (a fresh process for one job, or the callgrind run) does its group's job only.
    if group.swift && getenv(benchChildVariable) == nil && getenv("LC_BENCH_CALLGRIND") == nil { rows += swiftRows(group.name) }
}
printSummary(rows)
if let markdownPath { _ = writeFile(markdownTable(rows), to: markdownPath) }
if let plotPath {
    if let svg = postingPlot(rows) {
        _ = writeFile(svg, to: plotPath)
    } else {
        warn("lifecycle-bench: no posting rows to plot")
    }
}
