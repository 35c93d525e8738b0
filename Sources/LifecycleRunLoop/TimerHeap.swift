/// A binary min-heap of timers ordered by (deadline, creation id). [loop-thread]
struct TimerHeap {
    struct Entry {
        var deadline: UInt64
        var id: UInt64
        var source: LoopSource

        func precedes(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : id < other.id
        }
    }

    private(set) var entries: [Entry] = []
    /// Entries whose source was cancelled and that are still in the heap (removed lazily).
    private(set) var cancelled = 0

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    var first: Entry? { entries.first }
    /// The earliest deadline, without copying (retaining) the entry.
    var firstDeadline: UInt64? { entries.isEmpty ? nil : entries[0].deadline }

    mutating func push(_ entry: Entry) {
        entries.append(entry)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].precedes(entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() {
        guard !entries.isEmpty else { return }
        let last = entries.removeLast()
        guard !entries.isEmpty else { return }
        entries[0] = last
        siftDown(from: 0)
    }

    /// An entry's source was cancelled while in the heap: counted, and the heap compacted once
    /// cancelled entries dominate it (amortised O(1) a cancellation).
    mutating func noteCancelled() {
        cancelled += 1
        if cancelled > 64, cancelled * 2 > entries.count {
            removeAll { !$0.source.isActive }
            cancelled = 0
        }
    }

    /// A cancelled entry was taken off the top (`removeFirst` after its source was found inactive).
    mutating func tookCancelled() { cancelled -= 1 }

    /// Takes the cancelled entries off the top, so that `first` is an active timer's (or nil).
    mutating func dropCancelledAtTop() {
        while let top = entries.first, !top.source.isActive {
            removeFirst()
            top.source.inHeap = false
            cancelled -= 1
        }
    }

    mutating func removeAll(where shouldRemove: (Entry) -> Bool) {
        entries.removeAll(where: shouldRemove)
        // Heapify bottom-up.
        var index = entries.count / 2
        while index > 0 {
            index -= 1
            siftDown(from: index)
        }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { return }
            var best = left
            let right = left + 1
            if right < entries.count, entries[right].precedes(entries[left]) { best = right }
            guard entries[best].precedes(entries[parent]) else { return }
            entries.swapAt(parent, best)
            parent = best
        }
    }
}
