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
