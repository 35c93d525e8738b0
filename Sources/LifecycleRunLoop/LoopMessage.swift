import Synchronization

/// A message for one target of the loop (see `MainRunLoop.addTarget`), queued from any thread and
/// handed to that target's handler on the loop thread.
///
/// Plain data: a message without a payload allocates nothing beyond its queue slot. What the words
/// mean is the target's business (the notification center puts a name id and a sender there); the
/// loop only routes by `target`.
public struct LoopMessage: Sendable {
    /// Who receives it.
    public var target: LoopTarget
    public var word0: UInt64
    public var word1: UInt
    /// Anything else the message carries: one reference (an immutable, `Sendable` object), so that a
    /// message is four words and moving it through the queue costs a copy of them, with no
    /// value-witness calls (an existential payload cost ~80 instructions a message).
    public var payload: (any AnyObject & Sendable)?

    @inlinable
    public init(target: LoopTarget, word0: UInt64 = 0, word1: UInt = 0, payload: (any AnyObject & Sendable)? = nil) {
        self.target = target
        self.word0 = word0
        self.word1 = word1
        self.payload = payload
    }
}

/// The address of a message receiver on one loop: a slot index and the slot's generation.
///
/// A target that is removed bumps its slot's generation, so messages still queued for it are dropped
/// instead of reaching whoever takes the slot next, and never call into a receiver that is gone.
public struct LoopTarget: Hashable, Sendable {
    let index: UInt32
    let generation: UInt32

    /// Not a target: the queue item is a `perform` closure, boxed in the payload.
    static let closure = LoopTarget(index: .max, generation: 0)
}

/// What receives the messages of one target (see `MainRunLoop.addTarget`): subclass it and override
/// `receive`.
///
/// A class rather than a closure so that the loop calls it through its vtable on a reference it
/// already holds: no reabstraction thunk, no retain or release per message.
open class LoopMessageReceiver {
    public init() {}

    /// Handles one message addressed to this receiver's target. [loop-thread]
    ///
    /// Called in the loop's one FIFO order; never called again once `removeTarget` has returned
    /// (unless this very call is under way). The default does nothing.
    open func receive(_ message: borrowing LoopMessage) {}
}

/// A closure as a receiver (`MainRunLoop.addTarget(_:)` with a closure).
final class ClosureReceiver: LoopMessageReceiver {
    let body: (LoopMessage) -> Void
    init(_ body: @escaping (LoopMessage) -> Void) { self.body = body }
    override func receive(_ message: borrowing LoopMessage) { body(copy message) }
}

/// A `perform` closure queued as a message's payload (target `LoopTarget.closure`).
final class PerformBox: Sendable {
    let work: @Sendable () -> Void
    init(_ work: @escaping @Sendable () -> Void) { self.work = work }
}

/// The loop's message receivers by slot; freed slots are reused with a new generation. [queue lock]
struct TargetTable {
    private var handlers: [(LoopMessageReceiver)?] = []
    private var generations: [UInt32] = []
    private var free: [UInt32] = []

    mutating func add(_ handler: LoopMessageReceiver, version: borrowing Atomic<Int>) -> LoopTarget {
        version.add(1, ordering: .relaxed)
        if let index = free.popLast() {
            handlers[Int(index)] = handler
            return LoopTarget(index: index, generation: generations[Int(index)])
        }
        handlers.append(handler)
        generations.append(1)
        return LoopTarget(index: UInt32(handlers.count - 1), generation: 1)
    }

    mutating func remove(_ target: LoopTarget, version: borrowing Atomic<Int>) {
        let index = Int(target.index)
        guard index < handlers.count, generations[index] == target.generation, handlers[index] != nil else { return }
        version.add(1, ordering: .relaxed)
        handlers[index] = nil
        generations[index] &+= 1
        if generations[index] == 0 { generations[index] = 1 }
        free.append(target.index)
    }

    func handler(for target: LoopTarget) -> (LoopMessageReceiver)? {
        let index = Int(target.index)
        guard index < handlers.count, generations[index] == target.generation else { return nil }
        return handlers[index]
    }
}
