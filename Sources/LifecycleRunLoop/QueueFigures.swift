/// The cross-thread queue's figures at one moment, for an operator's metrics (see
/// `MainRunLoop.queueFigures()`).
public struct QueueFigures: Sendable, Hashable {
    /// Messages posted from any thread (`perform`, `send`) and not taken by the loop yet.
    public var waiting: Int
    /// The most messages one take of the loop found: the deepest the queue has been since the loop
    /// was made.
    public var largestTake: Int
    /// Messages refused at the queue's bound (`send` answering false) since the loop was made.
    public var refused: UInt64

    public init(waiting: Int, largestTake: Int, refused: UInt64) {
        self.waiting = waiting
        self.largestTake = largestTake
        self.refused = refused
    }
}

extension MainRunLoop {
    /// The cross-thread queue's figures now.
    ///
    /// [thread-safe] Takes the queue lock once (as a post does). Costs a post nothing: the figures are
    /// kept by the take (once per loop turn) and by the refusal path only.
    public func queueFigures() -> QueueFigures {
        queueLock.lock()
        defer { queueLock.unlock() }
        return QueueFigures(waiting: queue.pointee.waiting, largestTake: queue.pointee.largestTake, refused: queue.pointee.refused)
    }
}
