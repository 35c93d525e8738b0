/// The clock a `MainRunLoop` runs its timers on, and that its `now` reads.
///
/// - `monotonic` (the default): `CLOCK_MONOTONIC`; timers fall due as real time passes.
/// - `manual`: time moves only when the loop's owner calls `MainRunLoop.advance(by:)`, the job of
///   SwiftNIO's `EmbeddedEventLoop`: a test of "the task ends when its 30 s budget expires" takes no
///   time, and runs the same way every time. The loop's other sources (posted work, descriptors,
///   signals) stay live and run in real time; only timers, and everything that reads the loop's
///   `now`, follow the manual clock.
///
/// A struct around a private kind, so that new clocks never break callers.
public struct LoopClock: Sendable, Hashable, CustomStringConvertible {
    fileprivate enum Kind: Hashable, Sendable { case monotonic, manual }
    fileprivate let kind: Kind

    /// `CLOCK_MONOTONIC`: timers fall due as real time passes.
    public static let monotonic = LoopClock(kind: .monotonic)
    /// Time moves only by `MainRunLoop.advance(by:)`.
    public static let manual = LoopClock(kind: .manual)

    /// Whether time moves only by `advance(by:)`.
    public var isManual: Bool { kind == .manual }

    /// "monotonic" or "manual".
    public var description: String { "\(kind)" }
}
