import CLifecycleSystem
import CoreMetrics
import Glibc
import LifecycleRunLoop

extension Application {
    /// Makes, in this process, the runtime state every new application builds the first time — type
    /// metadata found by name, lazily made globals, the logging and metrics factories — without
    /// starting a thread or keeping anything open, so that processes copied from this one (the plugin
    /// runners' fork server) find it made instead of each making it again (~0.3 ms of CPU a copy).
    /// A loop's first reader is added and cancelled too: the table of readers' first growth made its
    /// type by name (~145,000 instructions, the largest single step of a copy's start). Idempotent;
    /// call on the process's only thread, before the copies.
    package static func prepareForCopies() {
        _ = Configuration()
        _ = MetricsSystem.factory
        guard let loop = try? MainRunLoop() else { return }
        _ = AppNotificationCenter(loop: loop)
        let fd = lcs_eventfd()  // close-on-exec; closed before any copy is made
        guard fd >= 0 else { return }
        defer { close(fd) }
        if let reader = try? loop.addReader(fd: fd, {}) { reader.cancel() }
    }
}
