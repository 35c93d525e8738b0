// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "AppLifecycle",
    products: [
        .library(name: "AppLifecycle", targets: ["AppLifecycle"]),
        // Signals, PSI memory pressure and clock steps as typed events on a MainRunLoop.
        .library(name: "LifecycleOSEvents", targets: ["LifecycleOSEvents"]),
        // liblifecycle.so: the C ABI of include/lifecycle.h.
        .library(name: "lifecycle", type: .dynamic, targets: ["CLifecycle"]),
        // include/lifecycle.h as the Swift module CLifecycleABI, header only: what a plugin written in
        // Swift depends on. A plugin must not link liblifecycle (the host refuses one that does).
        .library(name: "LifecycleABI", targets: ["CLifecycleABI"]),
        // The test kit for plugins' authors (docs/writing-a-plugin.md, "Testing your plugin"):
        // liblifecycle-testkit.so, include/lifecycle_testkit.h's library for tests in C (a program links
        // it with liblifecycle.so, whose lc_* functions it calls), and LifecycleTestKit for XCTest.
        .library(name: "lifecycle-testkit", type: .dynamic, targets: ["CLifecycleTestKit"]),
        .library(name: "LifecycleTestKit", targets: ["LifecycleTestKit"]),
        .executable(name: "lifecycle-host", targets: ["lifecycle-host"]),
        .executable(name: "lifecycle-plugin-runner", targets: ["lifecycle-plugin-runner"]),
        // Example plugins: each a .so the host loads with dlopen.
        .library(name: "Echo", type: .dynamic, targets: ["Echo"]),
        .library(name: "StateKeeper", type: .dynamic, targets: ["StateKeeper"]),
        .library(name: "Greeter", type: .dynamic, targets: ["Greeter"]),
        .library(name: "CacheTrimmer", type: .dynamic, targets: ["CacheTrimmer"]),
        .library(name: "Sessions", type: .dynamic, targets: ["Sessions"]),
        .library(name: "Scenes", type: .dynamic, targets: ["Scenes"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // The metrics API (CoreMetrics): the engine records through it; the host bootstraps its own
        // Prometheus backend only when asked (--metrics, --metrics-file).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // `swift package generate-documentation --target AppLifecycle`: the DocC reference (no code of it is linked).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Syscalls the Glibc module does not export (epoll, eventfd, timerfd, signalfd), wrapped once.
        .target(name: "CLifecycleSystem", path: "Sources/CLifecycleSystem"),
        // The main run loop: epoll, eventfd, timerfd, signalfd; IO sources, timers, signals, cross-thread
        // work addressed to targets. Knows nothing of notifications or applications.
        .target(name: "LifecycleRunLoop", dependencies: ["CLifecycleSystem"]),
        // OS events on the run loop: signals, PSI memory pressure, clock steps, as typed `OSEvent`s.
        // Knows nothing of applications; the host maps the events to its commands.
        .target(name: "LifecycleOSEvents", dependencies: ["LifecycleRunLoop", "CLifecycleSystem"]),
        // The engine: states, sequences, notification center, watchdog, archive. No C ABI type.
        .target(
            name: "AppLifecycle",
            dependencies: ["LifecycleRunLoop", "CLifecycleSystem", .product(name: "Logging", package: "swift-log"),
                           .product(name: "CoreMetrics", package: "swift-metrics")]
        ),
        // libffi, found in the multiarch include folder.
        .systemLibrary(name: "CFFI", path: "Sources/CFFI"),
        // The one C layer behind include/lifecycle.h: lc_app handles, dictionaries, status, the one
        // delegate bridge (libffi), the one completion table. Knows no plugin type.
        .target(
            name: "LifecycleC",
            dependencies: ["AppLifecycle", "CLifecycleABI", "CLifecycleSystem", "CFFI", .product(name: "Logging", package: "swift-log")]
        ),
        // The plugins: the loader, the read-only host-API tables, binding exported delegate symbols and
        // 1.1 delegate tables to the C layer's bridge.
        .target(
            name: "PluginHost",
            dependencies: ["LifecycleC", "AppLifecycle", "CLifecycleABI", "CLifecycleSystem", .product(name: "Logging", package: "swift-log")]
        ),
        // The exported lc_* functions: a thin @c face over LifecycleC and PluginHost.
        .target(name: "CLifecycle", dependencies: ["LifecycleC", "PluginHost", "CLifecycleABI"]),
        // What the host is told as text: scenario lines and files, control-socket requests, their
        // framing. Parses and dispatches to an Application; no IO. The fuzz targets drive it too.
        .target(name: "HostInput", dependencies: ["AppLifecycle", "LifecycleRunLoop"]),
        // The isolated plugins' processes: the runner code alone, without the host's command line and
        // Foundation (its own executable, so that each runner starts and copies little).
        .executableTarget(name: "lifecycle-plugin-runner", dependencies: ["PluginHost"]),
        .executableTarget(
            name: "lifecycle-host",
            dependencies: [
                // Not linked: named so that every build of the host (`swift run lifecycle-host`,
                // `--product lifecycle-host`) builds the runner beside it.
                "lifecycle-plugin-runner",
                "AppLifecycle", "HostInput", "LifecycleOSEvents", "LifecycleC", "PluginHost", "CLifecycleABI", "CLifecycleSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        // The C test kit: a harness over the public C ABI only (lc_* left for liblifecycle.so, or for the
        // CLifecycle target linked beside it in a Swift test), so no second engine is ever linked in.
        .target(name: "CLifecycleTestKit", dependencies: ["CLifecycleABI"], cSettings: [.headerSearchPath("../../include")]),
        // The Swift test kit: the C kit under XCTest, with the engine (CLifecycle) linked into the test.
        .target(name: "LifecycleTestKit", dependencies: ["CLifecycleTestKit", "CLifecycle", "CLifecycleABI"]),
        // The public header as a module for plugins written in Swift (header only).
        .systemLibrary(name: "CLifecycleABI", path: "Sources/CLifecycleABI"),
        // Example plugins. C plugins see include/lifecycle.h; none links the host.
        .target(name: "Echo", path: "Plugins/Echo", publicHeadersPath: ".", cSettings: [.headerSearchPath("../../include")]),
        .target(name: "StateKeeper", path: "Plugins/StateKeeper", publicHeadersPath: ".", cSettings: [.headerSearchPath("../../include")]),
        .target(name: "Greeter", path: "Plugins/Greeter", publicHeadersPath: ".", cSettings: [.headerSearchPath("../../include")]),
        .target(name: "CacheTrimmer", dependencies: ["CLifecycleABI"], path: "Plugins/CacheTrimmer"),
        .target(name: "Sessions", path: "Plugins/Sessions", exclude: ["sessions_test.c"], publicHeadersPath: ".", cSettings: [.headerSearchPath("../../include")]),
        .target(name: "Scenes", path: "Plugins/Scenes", publicHeadersPath: ".", cSettings: [.headerSearchPath("../../include")]),
        // Writes lifecycle-host's man page from its --experimental-dump-help (make man; a test keeps
        // docs/man/lifecycle-host.1 in sync).
        .executableTarget(name: "lifecycle-manual", path: "Tools/lifecycle-manual"),
        // A child process the archive tests kill in the middle of a save.
        .executableTarget(
            name: "archive-writer-child",
            dependencies: ["AppLifecycle"],
            path: "Tests/Helpers/archive-writer-child"
        ),
        .testTarget(name: "LifecycleRunLoopTests", dependencies: ["LifecycleRunLoop"]),
        .testTarget(name: "LifecycleOSEventsTests", dependencies: ["LifecycleOSEvents", "CLifecycleSystem", "TestSupport"]),
        .testTarget(
            name: "AppLifecycleTests",
            dependencies: ["AppLifecycle", "archive-writer-child", .product(name: "MetricsTestKit", package: "swift-metrics")]
        ),
        // Builds C with cc and runs programs, for the test targets.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(
            name: "HostTests",
            dependencies: ["lifecycle-host", "lifecycle-manual", "AppLifecycle", "HostInput", "LifecycleOSEvents", "LifecycleC", "PluginHost",
                           "TestSupport"],
            // C sources the tests compile with cc at test time (the fake session services).
            exclude: ["Fixtures"]
        ),
        // The fuzz targets' entry points (Fuzz/README.md): plain functions of bytes, which the libFuzzer
        // executables below and FuzzRegressionTests (every file of Fuzz/regressions/) call alike.
        .target(name: "FuzzEntries", dependencies: ["HostInput", "AppLifecycle", "LifecycleRunLoop"], path: "Fuzz/Entries"),
        .testTarget(name: "FuzzRegressionTests", dependencies: ["FuzzEntries"]),
        // The C layer through the C ABI: dictionaries, statuses, structs, interned names.
        .testTarget(
            name: "LifecycleCTests",
            dependencies: ["LifecycleC", "CLifecycle", "CLifecycleABI", "AppLifecycle", "TestSupport"],
            // C sources the tests compile with cc at test time.
            exclude: ["Fixtures"]
        ),
        // The test kits: the C example test (Plugins/Sessions/sessions_test.c) built and run, its failure
        // reports, and the Swift example (CacheTrimmer) through LifecycleTestKit.
        .testTarget(name: "TestKitTests", dependencies: ["LifecycleTestKit", "TestSupport"], exclude: ["Fixtures"]),
        // Plugins and the delegate bridge: loading, host-API tables, ownership, 1.0 and 1.1 delegates.
        .testTarget(
            name: "PluginHostTests",
            dependencies: ["PluginHost", "LifecycleC", "CLifecycle", "CLifecycleABI", "AppLifecycle", "TestSupport"],
            // C sources the tests compile with cc at test time.
            exclude: ["Fixtures"]
        ),
    ]
)

// The libFuzzer executables, only when LIFECYCLE_FUZZ=1: they have no `main` of their own (libFuzzer's
// is linked by `--sanitize=fuzzer`), so an ordinary build could not link them. Fuzz/run builds them.
if Context.environment["LIFECYCLE_FUZZ"] == "1" {
    for name in ["scenario", "control", "archive"] {
        package.targets.append(.executableTarget(
            name: "fuzz-\(name)", dependencies: ["FuzzEntries"], path: "Fuzz/Targets/\(name)",
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]))
        package.products.append(.executable(name: "fuzz-\(name)", targets: ["fuzz-\(name)"]))
    }
}
