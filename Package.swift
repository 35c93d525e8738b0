// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "AppLifecycle",
    products: [
        .library(name: "AppLifecycle", targets: ["AppLifecycle"]),
        .executable(name: "lifecycle-host", targets: ["lifecycle-host"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // Syscalls the Glibc module does not export (epoll, eventfd, timerfd, signalfd), wrapped once.
        .target(name: "CLifecycleSystem", path: "Sources/CLifecycleSystem"),
        // The engine: states, sequences, notification center, main run loop, watchdog, archive.
        .target(
            name: "AppLifecycle",
            dependencies: ["CLifecycleSystem", .product(name: "Logging", package: "swift-log")]
        ),
        .executableTarget(name: "lifecycle-host", dependencies: ["AppLifecycle"]),
        // A child process the archive tests kill in the middle of a save.
        .executableTarget(
            name: "archive-writer-child",
            dependencies: ["AppLifecycle"],
            path: "Tests/Helpers/archive-writer-child"
        ),
        .testTarget(
            name: "AppLifecycleTests",
            dependencies: ["AppLifecycle", "archive-writer-child"]
        ),
    ]
)
