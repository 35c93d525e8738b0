import CLifecycleSystem

/// A block of queued messages; blocks chain into the loop's FIFO.
///
/// Fixed capacity, so appending never moves an item, and pooled (see `WorkQueue`), so a busy queue
/// allocates nothing once warmed up. Items `0..<count` are initialized.
struct WorkChunk {
    static let capacity = 1024  // 32 KiB of items: below malloc's mmap threshold

    var next: UnsafeMutablePointer<WorkChunk>?
    var count = 0
    let items: UnsafeMutablePointer<LoopMessage>

    static func make() -> UnsafeMutablePointer<WorkChunk> {
        let chunk = UnsafeMutablePointer<WorkChunk>.allocate(capacity: 1)
        chunk.initialize(to: WorkChunk(items: .allocate(capacity: capacity)))
        return chunk
    }

    /// Destroys the items in `start..<count` and frees the chunk.
    static func free(_ chunk: UnsafeMutablePointer<WorkChunk>, from start: Int) {
        if start < chunk.pointee.count { (chunk.pointee.items + start).deinitialize(count: chunk.pointee.count - start) }
        chunk.pointee.items.deallocate()
        chunk.deinitialize(count: 1)
        chunk.deallocate()
    }

    /// Frees a chain of chunks, destroying the items not moved out (`start` in the first).
    static func freeChain(_ first: UnsafeMutablePointer<WorkChunk>?, from start: Int) {
        var chunk = first, from = start
        while let current = chunk {
            chunk = current.pointee.next
            free(current, from: from)
            from = 0
        }
    }
}

/// The loop's cross-thread queue: a chain of `WorkChunk`s that producers append to under the queue
/// lock and the loop takes whole (`takeAll`), plus a pool of empty chunks the loop hands back.
///
/// Wake-ups: `loopWaiting` is set when a take finds the queue empty (the loop may go to sleep after
/// it) and cleared by the first append after that, which alone is told to wake the loop. While the
/// loop keeps finding work it comes back for more on its own (see `MainRunLoop.hasPostedWork`), so a
/// producer that keeps ahead of the loop makes no system call at all — not one per batch.
///
/// Appending copies one four-word message into place: no growth copies, and no allocation while the
/// pool has chunks (it keeps up to `maxSpareChunks`, 1 MiB of items). Plain value, touched only under
/// the queue lock.
///
/// Bounded (`admit`): a thread other than the loop's may have at most `maxPerProducer` messages in
/// the queue, and all threads together `maxQueued`; past that its posts are refused until the loop's
/// next take. The check is a few compares of counters (one of them the thread's own, thread-local)
/// under the lock the append takes anyway: no system call, no allocation, no table.
struct WorkQueue {
    static let maxSpareChunks = 32
    /// The most messages one posting thread may have in the queue (2 MiB of four-word messages).
    static let maxPerProducer = 65_536
    /// The most messages the queue holds from all threads together (32 MiB of four-word messages).
    static let maxQueued = 1 << 20

    private var head: UnsafeMutablePointer<WorkChunk>?
    private var tail: UnsafeMutablePointer<WorkChunk>?
    private var spare: UnsafeMutablePointer<WorkChunk>?
    private var spareCount = 0
    /// The last take found the queue empty and no append has come since: the loop may be asleep.
    private var loopWaiting = true
    /// Messages in the queue (appended since the last take).
    private var queued = 0
    /// Bumped by every take: a thread's tally of an older epoch no longer counts.
    private var epoch: UInt64 = 1
    /// The most messages one take found (the deepest the queue has been), for `MainRunLoop.queueFigures`.
    private(set) var largestTake = 0
    /// Messages refused by `admit` since the queue was made.
    private(set) var refused: UInt64 = 0
    /// Messages in the queue now (appended since the last take).
    var waiting: Int { queued }

    /// Whether the calling thread (not the loop's: it is never asked) may append one more message to
    /// the queue at `key` (its address: tallies of other queues do not count here); if so, counts it.
    /// Call under the queue lock, then `append` — or, refused, `countRefusal`.
    ///
    /// Each thread keeps its own tally in thread-local storage (`lcs_producer_tally_self`): which
    /// queue, which epoch, how many. A tally of another queue or an older epoch starts again at 0, so a
    /// thread that alternates between two loops' queues within one epoch is bounded by `maxQueued`
    /// only; every other thread by `maxPerProducer`. O(1), a few loads, no table.
    @inline(__always)
    mutating func admit(key: UnsafeRawPointer) -> Bool {
        guard queued < Self.maxQueued else { return false }
        let tally = lcs_producer_tally_self()!
        if tally.pointee.queue != key || tally.pointee.epoch != epoch {
            tally.pointee = lcs_producer_tally(queue: key, epoch: epoch, count: 0)
        }
        guard tally.pointee.count < Self.maxPerProducer else { return false }
        tally.pointee.count &+= 1
        return true
    }

    /// Counts a message `admit` refused. Under the queue lock.
    mutating func countRefusal() {
        refused &+= 1
    }

    /// Appends `item`; returns whether the caller must wake the loop (the first append since a take
    /// found the queue empty).
    @inline(__always)
    mutating func append(_ item: consuming LoopMessage) -> Bool {
        queued &+= 1
        if let tail, tail.pointee.count < WorkChunk.capacity {
            (tail.pointee.items + tail.pointee.count).initialize(to: item)
            tail.pointee.count &+= 1
        } else {
            appendToNewChunk(item)
        }
        guard loopWaiting else { return false }
        loopWaiting = false
        return true
    }

    /// Whether `appendToTail` may be used: the last chunk has room.
    @inline(__always)
    var tailHasRoom: Bool {
        guard let tail else { return false }
        return tail.pointee.count < WorkChunk.capacity
    }

    /// How far ahead of the slot it fills a producer asks for the chunk's memory (`appendToTail`): 32
    /// messages, 1 KiB, 16 cache lines — some 300–500 ns of posts, longer than a line takes to come
    /// from the other core.
    static let prefetchDistance = 32

    /// `append` when `tailHasRoom`: the message is copied into the last chunk.
    ///
    /// The slot `prefetchDistance` messages on is asked for in a writable state first. A chunk comes
    /// back from the loop, which has just read it: its lines sit in the loop's cache, and a store to
    /// one waits for the other core to let go of it. The queue lock's compare-exchange and exchange
    /// wait for every earlier store, so without the request a producer waited that long every second
    /// post (two messages a line); asked for early, the wait overlaps the posts in between.
    @inline(__always)
    mutating func appendToTail(_ item: consuming LoopMessage) -> Bool {
        queued &+= 1
        let tail = tail!
        let slot = tail.pointee.items + tail.pointee.count
        lcs_prefetch_for_write(slot + Self.prefetchDistance)
        slot.initialize(to: item)
        tail.pointee.count &+= 1
        guard loopWaiting else { return false }
        loopWaiting = false
        return true
    }

    @inline(never)
    private mutating func appendToNewChunk(_ item: consuming LoopMessage) {
        let chunk: UnsafeMutablePointer<WorkChunk>
        if let reused = spare {
            spare = reused.pointee.next
            spareCount -= 1
            reused.pointee.next = nil
            chunk = reused
        } else {
            chunk = WorkChunk.make()
        }
        for line in stride(from: 0, to: Self.prefetchDistance, by: 2) { lcs_prefetch_for_write(chunk.pointee.items + line) }
        chunk.pointee.items.initialize(to: item)
        chunk.pointee.count = 1
        if let tail { tail.pointee.next = chunk } else { head = chunk }
        tail = chunk
    }

    /// Takes every queued chunk (the chain's first, or nil when empty — the next append then wakes the
    /// loop) and puts `drained` — a chain of emptied chunks — into the pool, freeing those beyond its
    /// cap.
    mutating func takeAll(recycling drained: UnsafeMutablePointer<WorkChunk>?) -> UnsafeMutablePointer<WorkChunk>? {
        var chunk = drained
        while let current = chunk {
            chunk = current.pointee.next
            if spareCount < Self.maxSpareChunks {
                current.pointee.next = spare
                spare = current
                spareCount += 1
            } else {
                WorkChunk.free(current, from: 0)
            }
        }
        let taken = head
        head = nil
        tail = nil
        if queued > largestTake { largestTake = queued }
        queued = 0
        epoch &+= 1
        if taken == nil { loopWaiting = true }
        return taken
    }

    /// Whether the queue is empty; if so, marks the loop waiting as an empty take does (the next
    /// append wakes it).
    mutating func markWaitingIfEmpty() -> Bool {
        guard head == nil else { return false }
        loopWaiting = true
        return true
    }

    /// Destroys what is queued and frees every chunk: the queue is not usable afterwards.
    mutating func free() {
        WorkChunk.freeChain(head, from: 0)
        WorkChunk.freeChain(spare, from: 0)
        head = nil
        tail = nil
        spare = nil
    }
}
