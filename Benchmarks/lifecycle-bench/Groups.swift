// The benchmark groups, in the order they run. Each group measures ours and its anchors together.
let benchmarkGroups: [(name: String, run: @Sendable (Settings) -> [Row])] = [
    ("loading", LoadingBenchmarks.run),
    ("cross-thread", CrossThreadBenchmarks.run),
    ("posting", PostingBenchmarks.run),
    ("isolation", IsolationBenchmarks.run),
]
