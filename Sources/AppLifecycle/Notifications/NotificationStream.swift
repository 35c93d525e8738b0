import Synchronization

/// Notifications of one name as an `AsyncSequence`, created by `AppNotificationCenter.notifications(named:)`.
///
/// Buffer policy — nothing is dropped silently:
/// - `.unbounded` (default): every notification is buffered until the consumer takes it.
/// - `.bounded(n)`: at most `n` wait; when one more arrives the stream stops observing, the consumer
///   still receives the `n` buffered ones, and then `next()` throws `NotificationStreamError` saying
///   how many were buffered and that the stream ended. A consumer that must see everything either
///   keeps up or uses `.unbounded`.
///
/// Iterate from any task; the observer itself runs on the loop thread. The observer is removed when
/// the stream and all its iterators are gone, when the iterating task is cancelled, or on overflow.
public struct NotificationStream: AsyncSequence, Sendable {
    public typealias Element = AppNotification

    /// How many notifications may wait for the consumer.
    public struct BufferPolicy: Sendable, Hashable {
        let capacity: Int?
        /// No limit.
        public static let unbounded = BufferPolicy(capacity: nil)
        /// At most `capacity` (≥ 1) waiting; one more ends the stream with an error.
        public static func bounded(_ capacity: Int) -> BufferPolicy { BufferPolicy(capacity: Swift.max(1, capacity)) }
    }

    let lifetime: StreamLifetime

    init(channel: NotificationChannel) { lifetime = StreamLifetime(channel) }

    public func makeAsyncIterator() -> Iterator { Iterator(lifetime: lifetime) }

    public struct Iterator: AsyncIteratorProtocol {
        let lifetime: StreamLifetime

        /// The next notification; nil once the stream finished or the task was cancelled.
        /// - Throws: `NotificationStreamError` after the buffered notifications, when a bounded buffer overflowed.
        public mutating func next() async throws -> AppNotification? {
            try await lifetime.channel.next()
        }
    }
}

/// A bounded notification stream overflowed: the consumer fell behind.
public struct NotificationStreamError: Error, Sendable, CustomStringConvertible {
    public let name: NotificationName
    public let capacity: Int
    public var description: String {
        "notification stream for '\(name.rawValue)' overflowed its buffer of \(capacity); the stream ended (no notification was dropped silently: this error marks where delivery stopped)"
    }
}

/// Ends the channel when the last stream or iterator copy goes away.
final class StreamLifetime: Sendable {
    let channel: NotificationChannel
    init(_ channel: NotificationChannel) { self.channel = channel }
    deinit { channel.terminate() }
}

/// The buffer between the loop-thread observer and the consuming task.
final class NotificationChannel: @unchecked Sendable {
    // @unchecked: buffer and waiter under `state`'s Mutex; `onTerminate` is set once before the channel is shared.
    private struct State {
        var buffer: [AppNotification] = []
        var head = 0
        var waiter: CheckedContinuation<AppNotification?, any Error>?
        var overflowed: NotificationStreamError?
        var finished = false
    }

    private let state = Mutex(State())
    private let capacity: Int?
    /// Set once before the channel is shared; removes the observer (it hops to the loop itself).
    var onTerminate: (@Sendable () -> Void)?

    init(policy: NotificationStream.BufferPolicy) { capacity = policy.capacity }

    /// Called on the loop thread by the observer.
    func push(_ notification: AppNotification) {
        enum Outcome { case resumed(CheckedContinuation<AppNotification?, any Error>), buffered, overflow, ignored }
        let outcome: Outcome = state.withLock { s in
            if s.finished || s.overflowed != nil { return .ignored }
            if let waiter = s.waiter {
                s.waiter = nil
                return .resumed(waiter)
            }
            if let capacity, s.buffer.count - s.head >= capacity {
                s.overflowed = NotificationStreamError(name: notification.name, capacity: capacity)
                return .overflow
            }
            s.buffer.append(notification)
            return .buffered
        }
        switch outcome {
        case .resumed(let waiter): waiter.resume(returning: notification)
        case .overflow: onTerminate?()
        case .buffered, .ignored: break
        }
    }

    func next() async throws -> AppNotification? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<AppNotification?, any Error>) in
                enum Outcome { case value(AppNotification), end, error(NotificationStreamError), wait }
                let outcome: Outcome = state.withLock { s in
                    if s.head < s.buffer.count {
                        let value = s.buffer[s.head]
                        s.head += 1
                        if s.head > 64, s.head * 2 > s.buffer.count {
                            s.buffer.removeFirst(s.head)
                            s.head = 0
                        }
                        return .value(value)
                    }
                    if let error = s.overflowed {
                        s.finished = true
                        return .error(error)
                    }
                    if s.finished || Task.isCancelled { return .end }
                    s.waiter = continuation
                    return .wait
                }
                switch outcome {
                case .value(let value): continuation.resume(returning: value)
                case .end: continuation.resume(returning: nil)
                case .error(let error): continuation.resume(throwing: error)
                case .wait: break
                }
            }
        } onCancel: {
            terminate()
        }
    }

    /// Finishes the stream: a waiting consumer gets nil, the observer is removed.
    func terminate() {
        let (waiter, wasFinished) = state.withLock { s -> (CheckedContinuation<AppNotification?, any Error>?, Bool) in
            let wasFinished = s.finished
            s.finished = true
            let waiter = s.waiter
            s.waiter = nil
            return (waiter, wasFinished)
        }
        waiter?.resume(returning: nil)
        if !wasFinished { onTerminate?() }
    }
}
