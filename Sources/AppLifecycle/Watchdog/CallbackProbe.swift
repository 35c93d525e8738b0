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
/// - **Thread.** `enter`/`leave` and the center's marks are [loop-thread]; `running()` and
///   `outermostSerial` are [thread-safe].
/// - **Cost.** Relaxed atomic stores (plain moves on x86-64 and arm64): one per observer inside a
///   nested dispatch, three per observer at the outermost level; no lock, no clock read, no allocation.
/// - **Outermost and innermost.** A callback's budget counts from the moment the *outermost* callback
///   began (an observer that posts, and so runs other observers, is still one callback); the
///   innermost is where the loop thread is now. Both are reported.
/// - **A sample, not a synchronisation.** A reader may see a mark one callback late; the hang budget
///   is measured by sampling (see `Watchdog`), never by a clock read on the loop thread.
package final class CallbackProbe: @unchecked Sendable {
    // @unchecked: the atomics are shared; `Words`' plain fields and `labelIndex` are loop-thread state; the
    // name tables are behind their lock.

    /// The marks, behind a pointer: the center's dispatch reads and writes them with no retain of the
    /// probe and none of the exclusivity checks a class's stored `var` pays.
    package struct Words: ~Copyable {
        /// How many marked callbacks are running, nested. [loop-thread]
        package var depth = 0
        /// The serial of the last outermost callback (from 1). [loop-thread]
        package var serial: UInt64 = 0
        /// The serial of the outermost callback now running; 0 when the loop thread runs none.
        package let outermostSerial = Atomic<UInt64>(0)
        /// The outermost callback's identity (see `word`).
        package let outermostWord = Atomic<UInt64>(0)
        /// The innermost callback's identity: the one the loop thread is in now.
        package let innermostWord = Atomic<UInt64>(0)

        package init() {}

        /// A new outermost callback: a new serial, so the watchdog counts its budget from here. [loop-thread]
        @inline(__always)
        package mutating func beginOutermost(_ word: UInt64) {
            serial &+= 1
            outermostWord.store(word, ordering: .relaxed)
            outermostSerial.store(serial, ordering: .relaxed)
        }
    }

    package let words: UnsafeMutablePointer<Words>

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
        words = .allocate(capacity: 1)
        words.initialize(to: Words())
    }

    deinit {
        words.deinitialize(count: 1)
        words.deallocate()
    }

    // MARK: Identities

    /// What sort of callback a mark names.
    package enum Kind: UInt64 {
        case observer = 1
        case delegate = 2
        case other = 3
    }

    /// A mark: bits 62–63 the kind, 32–61 the subject (a notification name id, or a label index),
    /// 0–31 the owner index (the center's owner table).
    @inline(__always)
    package static func word(_ kind: Kind, subject: UInt32, owner: UInt32) -> UInt64 {
        kind.rawValue << 62 | UInt64(subject & 0x3FFF_FFFF) << 32 | UInt64(owner)
    }

    /// The subject bits of an observer of name id `nameID` (OR the owner index in per observer).
    @inline(__always)
    package static func observerBits(_ nameID: UInt32) -> UInt64 { word(.observer, subject: nameID, owner: 0) }

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

    /// What `leave` restores.
    package struct Mark {
        fileprivate let previous: UInt64
        fileprivate let outermost: Bool
    }

    /// Marks a callback beginning; pair it with `leave`.
    @inline(__always)
    package func enter(_ word: UInt64) -> Mark {
        let w = words
        let mark = Mark(previous: w.pointee.innermostWord.load(ordering: .relaxed), outermost: w.pointee.depth == 0)
        w.pointee.innermostWord.store(word, ordering: .relaxed)
        if mark.outermost { w.pointee.beginOutermost(word) }
        w.pointee.depth &+= 1
        return mark
    }

    /// Marks the callback begun with `mark` as returned.
    @inline(__always)
    package func leave(_ mark: Mark) {
        let w = words
        w.pointee.depth &-= 1
        w.pointee.innermostWord.store(mark.previous, ordering: .relaxed)
        if mark.outermost { w.pointee.outermostSerial.store(0, ordering: .relaxed) }
    }

    /// Runs `body` marked as a callback of `kind` named `label`, owned by the owner at `owner`.
    package func marked<R, E: Error>(_ kind: Kind, label: String, owner: UInt32, _ body: () throws(E) -> R) throws(E) -> R {
        let mark = enter(Self.word(kind, subject: labelID(label), owner: owner))
        defer { leave(mark) }
        return try body()
    }

    // MARK: Reading [thread-safe]

    /// The callbacks running now: the outermost and the innermost (the same when nothing is nested);
    /// nil when the loop thread runs no marked callback.
    package func running() -> (outermost: RunningCallback, innermost: RunningCallback)? {
        let w = words
        guard w.pointee.outermostSerial.load(ordering: .relaxed) != 0 else { return nil }
        let outer = w.pointee.outermostWord.load(ordering: .relaxed)
        let inner = w.pointee.innermostWord.load(ordering: .relaxed)
        return names.withLock { names in (decode(outer, names), decode(inner == 0 ? outer : inner, names)) }
    }

    /// The serial of the outermost callback now running (0: none). [thread-safe]
    package var outermostSerial: UInt64 { words.pointee.outermostSerial.load(ordering: .relaxed) }

    /// The innermost callback's mark (0: none). [thread-safe]
    package var innermostWord: UInt64 { words.pointee.innermostWord.load(ordering: .relaxed) }

    /// The callback a mark names.
    package func callback(_ word: UInt64) -> RunningCallback {
        names.withLock { decode(word, $0) }
    }

    private func decode(_ word: UInt64, _ names: Names) -> RunningCallback {
        let owner = Int(word & 0xFFFF_FFFF)
        let subject = UInt32((word >> 32) & 0x3FFF_FFFF)
        let ownerName = owner < names.owners.count ? names.owners[owner] : ""
        let label = Int(subject) < names.labels.count ? names.labels[Int(subject)] : ""
        switch Kind(rawValue: word >> 62) {
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
