import CBenchAnchors

// What the cases of both bench processes share that rests on the C anchors: where a latency case's
// threads run, and the heap a body leaves allocated.

/// A latency case's placement: the loop on the first CPU this process may use, the sender on the same
/// CPU (`sameCPU`) or on the second; nil (said on standard error) when there are not enough CPUs.
public struct LatencyPlacement {
    public var loopCPU: Int32
    public var senderCPU: Int32
    /// "sender and loop on CPU 0", "sender on CPU 1, loop on CPU 0": for row names.
    public var text: String

    public init?(sameCPU: Bool, group: String) {
        let first = anchor_ring_allowed_cpu(0)
        let second = anchor_ring_allowed_cpu(1)
        guard first >= 0, sameCPU || second >= 0 else {
            warn("\(group): not enough CPUs for the \(sameCPU ? "one" : "two")-CPU latency case")
            return nil
        }
        loopCPU = first
        senderCPU = sameCPU ? first : second
        text = sameCPU ? "sender and loop on CPU \(first)" : "sender on CPU \(second), loop on CPU \(first)"
    }
}

/// Heap bytes (malloc in use, mallinfo2) `body` leaves allocated.
public func heapDelta(_ body: () -> Void) -> Int {
    let before = anchor_post_heap_in_use()
    body()
    return Int(anchor_post_heap_in_use()) - Int(before)
}
