/// How many messages each posting thread has put in the loop's queue since the loop last took it:
/// the per-producer bound of the cross-thread queue (see `WorkQueue.admit`).
///
/// A fixed table of `slotCount` slots, found by a hash of the thread's `pthread_t` and probed at
/// most `probes` deep; a slot whose `epoch` is not the queue's current one is free (every take starts
/// a new epoch, so all counts start again at 0 without touching the table). Should more threads post
/// within one epoch than the probes find room for, the extra ones share one overflow slot, so the
/// bound holds for them together. O(1): one hash, at most `probes` compares, no allocation.
/// Touched only under the queue lock.
struct ProducerTable {
    struct Slot {
        var thread: UInt = 0
        var epoch: UInt64 = 0
        var count: Int = 0
    }

    static let slotCount = 64
    static let probes = 4

    /// `slotCount` slots, then the overflow slot.
    private let slots: UnsafeMutablePointer<Slot>

    init() {
        slots = .allocate(capacity: Self.slotCount + 1)
        slots.initialize(repeating: Slot(), count: Self.slotCount + 1)
    }

    /// Frees the table; it must not be used afterwards.
    func free() {
        slots.deinitialize(count: Self.slotCount + 1)
        slots.deallocate()
    }

    /// The slot counting `thread`'s posts in `epoch` (a new one starts at 0).
    @inline(__always)
    func slot(for thread: UInt, epoch: UInt64) -> UnsafeMutablePointer<Slot> {
        let first = Int(truncatingIfNeeded: (UInt64(thread) &* 0x9E37_79B9_7F4A_7C15) >> 58)  // 6 bits: 0..<64
        let slot = slots + first
        if slot.pointee.thread == thread, slot.pointee.epoch == epoch { return slot }
        return probe(thread, epoch: epoch, from: first)
    }

    @inline(never)
    private func probe(_ thread: UInt, epoch: UInt64, from first: Int) -> UnsafeMutablePointer<Slot> {
        // Within an epoch slots are only ever claimed, never freed, so a thread's slot of this epoch
        // is found before or after free ones on its probe path: look at all of them first.
        var free: UnsafeMutablePointer<Slot>?
        for step in 0..<Self.probes {
            let slot = slots + ((first + step) & (Self.slotCount - 1))
            if slot.pointee.epoch != epoch {
                if free == nil { free = slot }
            } else if slot.pointee.thread == thread {
                return slot
            }
        }
        if let free {
            free.pointee = Slot(thread: thread, epoch: epoch, count: 0)
            return free
        }
        let overflow = slots + Self.slotCount
        if overflow.pointee.epoch != epoch { overflow.pointee = Slot(thread: 0, epoch: epoch, count: 0) }
        return overflow
    }
}
