import CLifecycleSystem
import Glibc
import Synchronization

/// The lock of the loop's cross-thread queue: one inline compare-exchange to take it and one exchange
/// to release it when uncontended; contended, a short spin, then a park on a condition variable.
///
/// Drepper's three-state mutex ("Futexes Are Tricky", mutex 3: 0 free, 1 held, 2 held and maybe
/// waited for), with the futex replaced by a pthread mutex + condition variable since Swift cannot
/// call futex(2). Not `Synchronization.Mutex`: on Linux that is a priority-inheritance futex whose
/// unlock hands the lock to a sleeping waiter, so with more posting threads than cores every post
/// costs a context switch (4 producers on 2 cores: 0.1–7 M posts/s instead of over 10). Not a bare
/// glibc mutex either: its lock and unlock calls cost ~65 instructions per post against ~10 here.
final class QueueLock: @unchecked Sendable {
    // @unchecked: `state` is atomic; `parkMutex` and `parked` are pthread objects used as such.
    private let state = Atomic<UInt32>(0)
    private let parkMutex: UnsafeMutablePointer<pthread_mutex_t>
    private let parked: UnsafeMutablePointer<pthread_cond_t>

    init() {
        parkMutex = .allocate(capacity: 1)
        pthread_mutex_init(parkMutex, nil)
        parked = .allocate(capacity: 1)
        pthread_cond_init(parked, nil)
    }

    deinit {
        pthread_cond_destroy(parked)
        parked.deallocate()
        pthread_mutex_destroy(parkMutex)
        parkMutex.deallocate()
    }

    @inline(__always)
    func lock() {
        if state.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged { return }
        lockContended()
    }

    /// Takes the lock if it is free (one compare-exchange); otherwise returns false, and the caller
    /// takes it with `lockAfterFailedTry()`. For a caller that keeps its slow path out of line.
    @inline(__always)
    func tryLock() -> Bool {
        state.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged
    }

    /// `lock()` after `tryLock()` failed: spins, then parks.
    @inline(__always)
    func lockAfterFailedTry() { lockContended() }

    /// Releases the lock; returns true when a parked thread may wait for it, which the caller must
    /// then wake with `wakeOne()` (as `unlock()` does). For a caller that keeps that call out of line.
    @inline(__always)
    func unlockReportingWaiters() -> Bool {
        state.exchange(0, ordering: .releasing) == 2
    }

    /// Takes the lock for the loop thread, which never parks: it spins (a `sched_yield` every 128
    /// loads, for a holder that is not running) until the lock is free.
    ///
    /// The loop holds the lock for a few dozen instructions per batch; a producer holds it for a
    /// dozen per post and takes it again a hundred instructions later. A loop that parked when it
    /// lost that race a hundred times in a row was woken, system call and context switch, only to
    /// lose again: one producer then ran at 3.5 M posts/s instead of 15–30. Producers still park
    /// (`lock`), so that with more posting threads than cores the waiters get out of the way.
    @inline(__always)
    func lockSpinning() {
        if state.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged { return }
        lockSpinningContended()
    }

    @inline(never)
    private func lockSpinningContended() {
        while true {
            for _ in 0..<128 {
                if state.load(ordering: .relaxed) == 0,
                   state.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged { return }
                lcs_cpu_relax()
            }
            sched_yield()
        }
    }

    @inline(__always)
    func unlock() {
        if state.exchange(0, ordering: .releasing) == 2 { wakeOne() }
    }

    @inline(never)
    private func lockContended() {
        // The queue's critical sections are a few dozen instructions: a holder that is running
        // releases the lock within the spin.
        for _ in 0..<100 {
            if state.load(ordering: .relaxed) == 0,
               state.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged { return }
        }
        // Mark the lock waited-for (2) and park until it is free. The exchange is made holding
        // `parkMutex`, which `wakeOne` takes before signalling, so a release cannot slip between the
        // exchange and the wait. Acquired this way the state stays 2 (perhaps more waiters).
        pthread_mutex_lock(parkMutex)
        while state.exchange(2, ordering: .acquiring) != 0 {
            pthread_cond_wait(parked, parkMutex)
        }
        pthread_mutex_unlock(parkMutex)
    }

    @inline(never)
    func wakeOne() {
        pthread_mutex_lock(parkMutex)
        pthread_cond_signal(parked)
        pthread_mutex_unlock(parkMutex)
    }
}
