// The engine's Swift API includes the run loop it runs on (`MainRunLoop`, `LoopSource`,
// `MonotonicInstant`), so `import AppLifecycle` is all a Swift user writes.
@_exported import LifecycleRunLoop
