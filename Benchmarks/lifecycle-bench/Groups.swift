import BenchHarness

// The benchmark groups, in the order they run. Each group measures ours and its anchors together;
// `swift`: lifecycle-bench-swift adds the group's Swift-API rows after this process's C-ABI rows.
let benchmarkGroups: [(name: String, run: @Sendable (Settings) -> [Row], swift: Bool)] = [
    ("loading", LoadingBenchmarks.run, false),
    ("delegates", DelegateBenchmarks.run, false),
    ("cross-thread", CrossThreadBenchmarks.run, true),
    ("posting", PostingBenchmarks.run, true),
    ("removal", RemovalBenchmarks.run, false),
    ("isolation", IsolationBenchmarks.run, false),
]
