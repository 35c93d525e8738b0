@preconcurrency import Glibc

// Threads for the cross-thread cases: plain joinable pthreads (no Dispatch, no Foundation), so that
// the producers are exactly what a C program would start.

final class ThreadBody {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// Starts a joinable pthread running `body`.
public func xthreadSpawn(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(&thread, nil, { raw in
        Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().body()
        return nil
    }, context)
    precondition(status == 0, "pthread_create failed: \(status)")
    return thread
}
