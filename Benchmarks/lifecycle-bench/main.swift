@preconcurrency import Glibc

// lifecycle-bench: each case beside the anchors a user would otherwise pick, measured in the same
// run. Build and run in release mode:  swift run -c release lifecycle-bench
//
//   --quick           one short run per case (CI: proves each case runs; the figures mean nothing)
//   --filter WORD     only the groups whose name contains WORD
//   --runs N          runs per figure (default 11)
//   --markdown FILE   also write the table as Markdown (docs/benchmarks.md takes it)
//   --plot FILE       also write the plot of post cost against N (SVG)

var settings = Settings()
var markdownPath: String?
var plotPath: String?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick": settings.quick = true
    case "--filter": settings.filter = arguments.popFirst()
    case "--runs": settings.runs = max(1, Int(arguments.popFirst() ?? "") ?? settings.runs)
    case "--markdown": markdownPath = arguments.popFirst()
    case "--plot": plotPath = arguments.popFirst()
    case "-h", "--help":
        print("usage: lifecycle-bench [--quick] [--filter WORD] [--runs N] [--markdown FILE] [--plot FILE]")
        exit(0)
    default:
        fputs("lifecycle-bench: unknown argument '\(argument)'\n", stderr)
        exit(64)
    }
}

let groups = benchmarkGroups
var rows: [Row] = []
for group in groups where settings.wants(group.name) {
    fputs("running \(group.name)…\n", stderr)
    let produced = group.run(settings)
    for row in produced { printRow(row) }
    rows += produced
}
printSummary(rows)
if let markdownPath { writeMarkdown(rows, to: markdownPath) }
if let plotPath {
    if let svg = postingPlot(rows), let file = fopen(plotPath, "w") {
        fputs(svg, file)
        fclose(file)
    } else {
        fputs("lifecycle-bench: no posting rows to plot (or cannot write \(plotPath))\n", stderr)
    }
}
