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
/// Appending copies one four-word message into place: no growth copies, and no allocation while the
/// pool has chunks (it keeps up to `maxSpareChunks`, 1 MiB of items). Plain value, touched only under
/// the queue lock.
struct WorkQueue {
    static let maxSpareChunks = 32

    private var head: UnsafeMutablePointer<WorkChunk>?
    private var tail: UnsafeMutablePointer<WorkChunk>?
    private var spare: UnsafeMutablePointer<WorkChunk>?
    private var spareCount = 0

    /// Appends `item`; returns whether the queue was empty before.
    @inline(__always)
    mutating func append(_ item: consuming LoopMessage) -> Bool {
        if let tail, tail.pointee.count < WorkChunk.capacity {
            (tail.pointee.items + tail.pointee.count).initialize(to: item)
            tail.pointee.count += 1
            return false
        }
        return appendToNewChunk(item)
    }

    @inline(never)
    private mutating func appendToNewChunk(_ item: consuming LoopMessage) -> Bool {
        let chunk: UnsafeMutablePointer<WorkChunk>
        if let reused = spare {
            spare = reused.pointee.next
            spareCount -= 1
            reused.pointee.next = nil
            chunk = reused
        } else {
            chunk = WorkChunk.make()
        }
        chunk.pointee.items.initialize(to: item)
        chunk.pointee.count = 1
        let wasEmpty = tail == nil
        if let tail { tail.pointee.next = chunk } else { head = chunk }
        tail = chunk
        return wasEmpty
    }

    /// Takes every queued chunk (the chain's first, or nil when empty) and puts `drained` — a chain
    /// of emptied chunks — into the pool, freeing those beyond its cap.
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
        return taken
    }

    /// Destroys what is queued and frees every chunk.
    mutating func free() {
        WorkChunk.freeChain(head, from: 0)
        WorkChunk.freeChain(spare, from: 0)
        self = WorkQueue()
    }
}
