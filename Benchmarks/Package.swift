// swift-tools-version: 6.1
import PackageDescription

// The benchmarks of AppLifecycle, a package of their own (as SwiftNIO keeps its benchmarks): they
// depend on the AppLifecycle package by path and use only its public products, and the peers they
// measure beside it (GLib, libsigc++, Qt, libuv, sd-event) are this package's dependencies alone, so that
// the root package builds and tests with Swift, libffi-dev and pkg-config only.
//
//   swift build -c release --package-path Benchmarks
//   Benchmarks/.build/release/lifecycle-bench            (docs/benchmarks.md)
//
// Two executables, each linking what its kind of user links:
// - lifecycle-bench: the C ABI, through liblifecycle.so and include/lifecycle.h only (the LifecycleABI
//   and lifecycle products), as a C program or plugin host would; the peers and the C anchors; the
//   host (lifecycle-host) for cold starts, and the isolated plugins' runner (lifecycle-plugin-runner).
//   It runs every group
//   and merges in the rows of the second executable.
// - lifecycle-bench-swift: the Swift API (the AppLifecycle product, linked statically as a Swift
//   embedder links it) beside Foundation and Dispatch.
// The two are separate processes because liblifecycle.so holds its own copy of the engine: one
// process linking both would hold two.
let package = Package(
    name: "AppLifecycleBenchmarks",
    dependencies: [
        .package(name: "AppLifecycle", path: ".."),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    ],
    targets: [
        // The C anchors: what a C programmer would write instead (a C loop over function pointers,
        // rings + eventfd, socket pairs to a child, raw ffi_call, raw dlopen).
        .target(name: "CBenchAnchors", path: "CBenchAnchors", linkerSettings: [.linkedLibrary("ffi")]),
        // The peers a C developer would pick instead of us, installed from Debian; the system-library
        // targets only carry their pkg-config flags.
        .systemLibrary(name: "CPeerGObject", path: "CBenchPeers/system/CPeerGObject", pkgConfig: "gobject-2.0",
                       providers: [.apt(["libglib2.0-dev"])]),
        .systemLibrary(name: "CPeerSigc", path: "CBenchPeers/system/CPeerSigc", pkgConfig: "sigc++-3.0",
                       providers: [.apt(["libsigc++-3.0-dev"])]),
        .systemLibrary(name: "CPeerQt", path: "CBenchPeers/system/CPeerQt", pkgConfig: "Qt5Core",
                       providers: [.apt(["qtbase5-dev"])]),
        .systemLibrary(name: "CPeerUV", path: "CBenchPeers/system/CPeerUV", pkgConfig: "libuv",
                       providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(name: "CPeerSystemd", path: "CBenchPeers/system/CPeerSystemd", pkgConfig: "libsystemd",
                       providers: [.apt(["libsystemd-dev"])]),
        .target(
            name: "CBenchPeers",
            dependencies: ["CPeerGObject", "CPeerSigc", "CPeerQt", "CPeerUV", "CPeerSystemd"],
            path: "CBenchPeers",
            exclude: ["system"]
        ),
        // Measuring, reporting, processes and files, shared by the two executables.
        .target(name: "BenchHarness", dependencies: ["CBenchAnchors"], path: "BenchHarness"),
        .executableTarget(
            name: "lifecycle-bench",
            dependencies: [
                "BenchHarness", "CBenchAnchors", "CBenchPeers",
                .product(name: "LifecycleABI", package: "AppLifecycle"),
                .product(name: "lifecycle", package: "AppLifecycle"),
                // Not linked: built beside the bench, for the cold-start cases, and the plugin runner
                // liblifecycle.so and lifecycle-host start for isolated plugins (they look beside themselves).
                .product(name: "lifecycle-host", package: "AppLifecycle"),
                .product(name: "lifecycle-plugin-runner", package: "AppLifecycle"),
            ],
            path: "lifecycle-bench"
        ),
        .executableTarget(
            name: "lifecycle-bench-swift",
            dependencies: [
                "BenchHarness", "CBenchAnchors",
                .product(name: "AppLifecycle", package: "AppLifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            path: "lifecycle-bench-swift"
        ),
    ],
    // libsigc++ 3 (the CBenchPeers peer) needs C++17.
    cxxLanguageStandard: .cxx17
)
