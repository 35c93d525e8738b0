// An embedder of the OS-event sources drives a MainRunLoop: one import gives both.
@_exported import LifecycleRunLoop
