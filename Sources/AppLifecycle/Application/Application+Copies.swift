import CoreMetrics
import LifecycleRunLoop

extension Application {
    /// Makes, in this process, the runtime state every new application builds the first time — type
    /// metadata found by name, lazily made globals, the logging and metrics factories — without
    /// starting a thread or keeping anything open, so that processes copied from this one (the plugin
    /// runners' fork server) find it made instead of each making it again (~0.3 ms of CPU a copy).
    /// Idempotent; call on the process's only thread, before the copies.
    package static func prepareForCopies() {
        _ = Configuration()
        _ = MetricsSystem.factory
        if let loop = try? MainRunLoop() { _ = AppNotificationCenter(loop: loop) }
    }
}
