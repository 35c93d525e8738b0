import Synchronization

/// What the loop thread is running right now, readable from any thread: the watchdog's view of the
/// main thread.
///
/// The loop thread marks each callback into code it does not own — an observer, a delegate method,
/// an expiration handler, a plugin's `init` — as it begins. The watchdog thread samples the marks to
/// find a callback that runs past the hang budget; a host reads them to say what was running when it
/// had to end (an overdue termination, a plugin calling `exit`).
///
/// Guarantees:
/// - **Thread.** `enter`/`leave` and the center's marks (`ProbeMarks`) are [loop-thread]; `running()`,
///   `sample()` and `callback(_:)` are [thread-safe].
/// - **Cost.** Relaxed atomic stores (plain moves on x86-64 and arm64), no lock, no clock read, no
///   allocation: one per observer (its owner), and two or three per dispatch (what is dispatched, and
///   the end).
/// - **One callback.** An outermost callback is a delegate call, a marked call, or the observers of
///   one owner called one after the other in one dispatch (a plugin's observers of one post are one
///   callback; ten plugins' observers are ten). Marking which observer of the owner it is would cost a
///   second store per observer on the posting path for no practical difference.
/// - **Outermost and innermost.** A callback's budget counts from the moment the *outermost* callback
///   began (an observer that posts, and so runs other observers, is still one callback); the
///   innermost is where the loop thread is now. Both are reported.
/// - **A sample, not a synchronisation.** A reader may see a mark one callback late, or a head and a
///   word from two neighbouring callbacks; the hang budget is measured by sampling (see `Watchdog`),
///   never by a clock read on the loop thread.
package final class CallbackProbe: @unchecked Sendable {
    // @unchecked: the marks are atomics; `counters` and `labelIndex` are loop-thread state; the name
    // tables are behind their lock.

    /// Loop-thread counters, behind a pointer: the center's dispatch reads and writes them with no
    /// retain of the probe and none of the exclusivity checks a class's stored `var` pays.
    package struct Counters {
        /// How many marked callbacks or dispatches are running, nested.
        package var depth = 0
        /// Counts outermost callbacks and dispatches (wrapping), so that two in a row differ.
        package var serial: UInt64 = 0
        /// The inner marks that nested ones replaced, to put back (`depth - 1` of them), and room for more.
        var saved: UnsafeMutablePointer<(head: UInt64, word: UInt64)>
        var capacity: Int
    }

    /// The marks: `outerHead` (what the outermost callback or dispatch is: kind, serial, subject; 0
    /// when the loop thread runs none), `outerWord` (whose callback it is: the owner index), and the
    /// same two for the innermost nested one (`innerHead` 0: nothing nested).
    package static let outerHead = 0, outerWord = 1, innerHead = 2, innerWord = 3

    package let counters: UnsafeMutablePointer<Counters>
    package let marks: UnsafeMutablePointer<Atomic<UInt64>>

    private struct Names {
        /// Index-aligned with the center's owner table (index 0 is the empty owner).
        var owners: [String] = [""]
        /// Delegate selectors and other callback labels, by label index.
        var labels: [String] = []
    }

    private let names = Mutex(Names())
    /// Label → index, [loop-thread].
    private var labelIndex: [String: UInt32] = [:]

    package init() {
        counters = .allocate(capacity: 1)
        counters.initialize(to: Counters(saved: .allocate(capacity: 16), capacity: 16))
        marks = .allocate(capacity: 4)
        for i in 0..<4 { (marks + i).initialize(to: Atomic(0)) }
    }

    deinit {
        counters.pointee.saved.deallocate()
        counters.deinitialize(count: 1)
        counters.deallocate()
        marks.deinitialize(count: 4)
        marks.deallocate()
    }

    // MARK: Identities

    /// What sort of callback a head names.
    package enum Kind: UInt64 {
        case observer = 1
        case delegate = 2
        case other = 3
    }

    /// A head's fixed part: bits 62–63 the kind, 0–31 the subject (a notification name id, or a
    /// label index). Bits 32–61 take the serial of an outermost one.
    @inline(__always)
    package static func head(_ kind: Kind, subject: UInt32) -> UInt64 { kind.rawValue << 62 | UInt64(subject) }


    /// Records an owner the center interned at `index` (the center's table grows by one, in order). [loop-thread]
    package func ownerInterned(_ owner: String, at index: UInt32) {
        names.withLock { names in
            if Int(index) == names.owners.count { names.owners.append(owner) }
        }
    }

    /// The index of `label` (a delegate selector, "expiration handler", "init"), interned once. [loop-thread]
    package func labelID(_ label: String) -> UInt32 {
        if let index = labelIndex[label] { return index }
        let index = names.withLock { names -> UInt32 in
            names.labels.append(label)
            return UInt32(names.labels.count - 1)
        }
        labelIndex[label] = index
        return index
    }

    // MARK: Marks [loop-thread]

    /// Where a callback or dispatch writes its owner, and whether it is the outermost.
    package struct Mark {
        /// The mark each observer (or the one callback) writes its owner to.
        package let slot: UnsafeMutablePointer<Atomic<UInt64>>
        package let outermost: Bool
    }

    /// Marks a callback or a dispatch beginning (`head`); pair it with `leave`.
    @inline(__always)
    package func enter(_ head: UInt64) -> Mark {
        let c = counters
        let outermost = c.pointee.depth == 0
        c.pointee.depth &+= 1
        guard outermost else { return Mark(slot: enterNested(head), outermost: false) }
        c.pointee.serial &+= 1
        marks[Self.outerHead].store(head | (c.pointee.serial & 0x3FFF_FFFF) << 32, ordering: .relaxed)
        return Mark(slot: marks + Self.outerWord, outermost: true)
    }

    /// Marks the callback or dispatch begun with `mark` as returned.
    @inline(__always)
    package func leave(_ mark: Mark) {
        counters.pointee.depth &-= 1
        if mark.outermost { marks[Self.outerHead].store(0, ordering: .relaxed) } else { leaveNested() }
    }

    /// A nested callback or dispatch: the inner marks it replaces are saved (out of line: the
    /// outermost path is the common one).
    @inline(never)
    private func enterNested(_ head: UInt64) -> UnsafeMutablePointer<Atomic<UInt64>> {
        let c = counters
        let index = c.pointee.depth - 2
        if index == c.pointee.capacity {
            let grown = UnsafeMutablePointer<(head: UInt64, word: UInt64)>.allocate(capacity: index * 2)
            grown.moveInitialize(from: c.pointee.saved, count: index)
            c.pointee.saved.deallocate()
            c.pointee.saved = grown
            c.pointee.capacity = index * 2
        }
        c.pointee.saved[index] = (marks[Self.innerHead].load(ordering: .relaxed), marks[Self.innerWord].load(ordering: .relaxed))
        marks[Self.innerHead].store(head, ordering: .relaxed)
        return marks + Self.innerWord
    }

    @inline(never)
    private func leaveNested() {
        let saved = counters.pointee.saved[counters.pointee.depth - 1]
        marks[Self.innerHead].store(saved.head, ordering: .relaxed)
        marks[Self.innerWord].store(saved.word, ordering: .relaxed)
    }

    /// Runs `body` marked as a callback of `kind` named `label`, owned by the owner at `owner`.
    package func marked<R, E: Error>(_ kind: Kind, label: String, owner: UInt32, _ body: () throws(E) -> R) throws(E) -> R {
        let mark = enter(Self.head(kind, subject: labelID(label)))
        mark.slot.pointee.store(UInt64(owner), ordering: .relaxed)
        defer { leave(mark) }
        return try body()
    }

    // MARK: Reading [thread-safe]

    /// The outermost callback's head and word now (head 0: none): equal samples an interval apart mean
    /// the same callback still runs.
    package func sample() -> (head: UInt64, word: UInt64) {
        (marks[Self.outerHead].load(ordering: .relaxed), marks[Self.outerWord].load(ordering: .relaxed))
    }

    /// The callbacks running now: the outermost and the innermost (the same when nothing is nested);
    /// nil when the loop thread runs no marked callback.
    package func running() -> (outermost: RunningCallback, innermost: RunningCallback)? {
        let (head, word) = sample()
        guard head != 0 else { return nil }
        let innerHead = marks[Self.innerHead].load(ordering: .relaxed)
        let innerWord = marks[Self.innerWord].load(ordering: .relaxed)
        return names.withLock { names in
            let outer = Self.decode(head, word, names)
            return (outer, innerHead == 0 ? outer : Self.decode(innerHead, innerWord, names))
        }
    }

    /// The owner of the innermost callback running ("" when none or anonymous). [thread-safe]
    package func innermostOwner() -> String {
        running()?.innermost.owner ?? ""
    }

    private static func decode(_ head: UInt64, _ word: UInt64, _ names: Names) -> RunningCallback {
        let owner = Int(word & 0xFFFF_FFFF)
        let subject = UInt32(head & 0xFFFF_FFFF)
        let ownerName = owner < names.owners.count ? names.owners[owner] : ""
        let label = Int(subject) < names.labels.count ? names.labels[Int(subject)] : ""
        switch Kind(rawValue: head >> 62) {
        case .observer: return RunningCallback(kind: .observer(NotificationName(id: subject)), owner: ownerName)
        case .delegate: return RunningCallback(kind: .delegate(label), owner: ownerName)
        case .other, nil: return RunningCallback(kind: .other(label), owner: ownerName)
        }
    }
}

/// A callback the loop thread is running: what it is and whose.
public struct RunningCallback: Hashable, Sendable, CustomStringConvertible {
    /// What sort of callback.
    public enum Kind: Hashable, Sendable {
        /// An observer of this notification.
        case observer(NotificationName)
        /// A delegate method (its selector).
        case delegate(String)
        /// Another callback: an expiration handler, a plugin's `init`, a plugin timer.
        case other(String)
    }

    public let kind: Kind
    /// The delegate id or the observer's owner (a plugin id); empty when it has none.
    public let owner: String

    public init(kind: Kind, owner: String) {
        self.kind = kind
        self.owner = owner
    }

    /// The callback's name: a notification name, a selector, a label.
    public var name: String {
        switch kind {
        case .observer(let name): return name.rawValue
        case .delegate(let selector): return selector
        case .other(let label): return label
        }
    }

    /// `didBecomeActive observer of 'com.example.spin'`, `applicationDidBecomeActive: of 'com.example.spin'`.
    public var description: String {
        let who = owner.isEmpty ? "" : " of '\(owner)'"
        switch kind {
        case .observer(let name): return "\(name.rawValue) observer\(who)"
        case .delegate(let selector): return "\(selector)\(who)"
        case .other(let label): return "\(label)\(who)"
        }
    }
}
