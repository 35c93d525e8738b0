import Synchronization

/// One observer slot. Trivially copyable: the dispatch loop copies it without reference counting.
struct ObserverEntry {
    var function: RawObserverFunction
    var context: UnsafeMutableRawPointer?
    var sender: UInt
    /// 0 marks a removed entry awaiting compaction.
    var token: UInt64
    var owner: UInt32
    var boxed: Bool

    /// Turns a live entry into a tombstone during a dispatch: token 0 (skipped by every loop that
    /// checks it) and a no-op function with no context, so that the C-only loop can call every entry
    /// without a test. Compaction drops it once no dispatch runs.
    mutating func markRemoved() {
        token = 0
        function = ObserverBox.unused
        if !boxed { context = nil }
    }
}

/// The loop-thread state of a center (see `AppNotificationCenter.state`).
struct CenterState {
    /// By name id: the name's observers, allocated when the name is first observed and kept (at the
    /// same address) until the center goes, so a dispatch holds its list across callbacks.
    var lists: [UnsafeMutablePointer<ObserverList>?] = []
    var serial: UInt32 = 0
    var owners: [String] = [""]
    var ownerIndex: [String: UInt32] = ["": 0]
    /// By owner id: the name ids it has observed (a superset of those it observes now), so that
    /// removing an owner's observers visits only those lists. Not kept for the empty owner (0).
    var ownerNames: [Set<UInt32>] = [[]]
    /// Closure boxes of removed Swift observers, released once no dispatch is under way.
    var graveyard: [Unmanaged<ObserverBox>] = []
    var dispatchDepth = 0
    /// How many marked callbacks (delegate methods, expiration handlers, plugins' init and timers) are
    /// running, nested: with `dispatchDepth`, whether a dispatch is the outermost callback.
    var markedDepth = 0
    /// The callback probe's marks (`CallbackProbe.marks`), here so that a dispatch reaches them
    /// without going through the probe.
    var probeMarks: UnsafeMutablePointer<Atomic<UInt64>>?
    var heldDeliveryHandler: ((NotificationName, UInt, UserInfo?) -> Void)?
    var observerWillRun: ((_ owner: String) -> Bool)?
    var nestingLimitHandler: ((NotificationName, Int, String) -> Void)?
    var rawUserInfoBridge: ((UserInfo) -> AnyObject)?
    /// This center's address on the loop: posts from other threads travel there as messages, so
    /// centers sharing a loop never see each other's posts. Set once in init, then only read (from
    /// any thread).
    var target: LoopTarget?
}

/// The observers of one name: a manually managed contiguous buffer, so that appending during a
/// dispatch may move it without invalidating the dispatch (which reloads the base pointer).
struct ObserverList {
    private(set) var entries: UnsafeMutablePointer<ObserverEntry>
    private(set) var count = 0
    /// How many of the `count` entries hold a Swift closure (tombstones included).
    private(set) var boxedCount = 0
    /// How many of the `count` entries filter by sender (tombstones included).
    private(set) var filteredCount = 0
    private var capacity = 4
    var dispatchDepth = 0
    var hasTombstones = false
    /// The largest token appended so far, and whether a smaller one came after it (the serial wrapped):
    /// live tokens are ascending, so `index(of:)` searches by halving unless this is set.
    private var maxToken: UInt64 = 0
    private var unsorted = false
    /// The name's C string (static storage), put in every record.
    let cName: UnsafePointer<CChar>

    init(cName: UnsafePointer<CChar>) {
        self.cName = cName
        entries = .allocate(capacity: 4)
    }

    mutating func append(_ entry: ObserverEntry) {
        if count == capacity {
            let grown = UnsafeMutablePointer<ObserverEntry>.allocate(capacity: capacity * 2)
            grown.moveInitialize(from: entries, count: count)
            entries.deallocate()
            entries = grown
            capacity *= 2
        }
        (entries + count).initialize(to: entry)
        count += 1
        if entry.boxed { boxedCount += 1 }
        if entry.sender != 0 { filteredCount += 1 }
        if entry.token <= maxToken { unsorted = true } else { maxToken = entry.token }
    }

    /// Where the live entry with `token` is: by halving (tokens are appended in ascending order and
    /// removal keeps order), linearly only while tombstones (token 0) are waiting or after a wrap.
    func index(of token: UInt64) -> Int? {
        guard token != 0 else { return nil }
        if !hasTombstones, !unsorted {
            var low = 0
            var high = count
            while low < high {
                let middle = (low + high) / 2
                if entries[middle].token < token { low = middle + 1 } else { high = middle }
            }
            return low < count && entries[low].token == token ? low : nil
        }
        for i in 0..<count where entries[i].token == token { return i }
        return nil
    }

    /// Removes every live entry of `owner` in one pass: tombstones them while the list is being
    /// dispatched, else compacts (keeping order). The contexts of Swift observers go to `boxes`.
    mutating func removeAll(owner: UInt32, boxes: inout [UnsafeMutableRawPointer]) -> Int {
        var removed = 0
        if dispatchDepth > 0 {
            for i in 0..<count where entries[i].token != 0 && entries[i].owner == owner {
                if entries[i].boxed, let context = entries[i].context { boxes.append(context) }
                entries[i].markRemoved()
                removed += 1
            }
            if removed > 0 { hasTombstones = true }
            return removed
        }
        var kept = 0
        for i in 0..<count {
            let entry = entries[i]
            if entry.token != 0 && entry.owner == owner {
                if entry.boxed {
                    boxedCount -= 1
                    if let context = entry.context { boxes.append(context) }
                }
                if entry.sender != 0 { filteredCount -= 1 }
                removed += 1
                continue
            }
            if kept != i { entries[kept] = entry }
            kept += 1
        }
        count = kept
        return removed
    }

    mutating func remove(at index: Int) {
        if entries[index].boxed { boxedCount -= 1 }
        if entries[index].sender != 0 { filteredCount -= 1 }
        (entries + index).moveInitialize(from: entries + index + 1, count: count - index - 1)
        count -= 1
    }

    /// Drops tombstones, keeping order.
    mutating func compact() {
        var kept = 0
        for i in 0..<count {
            guard entries[i].token != 0 else {
                if entries[i].boxed { boxedCount -= 1 }
                if entries[i].sender != 0 { filteredCount -= 1 }
                continue
            }
            if kept != i { entries[kept] = entries[i] }
            kept += 1
        }
        count = kept
        hasTombstones = false
    }

    mutating func releaseAll() {
        for i in 0..<count where entries[i].token != 0 && entries[i].boxed {
            if let context = entries[i].context { Unmanaged<ObserverBox>.fromOpaque(context).release() }
        }
        count = 0
        boxedCount = 0
        filteredCount = 0
    }
}

/// Holds a Swift closure observer behind a raw context pointer.
final class ObserverBox {
    let block: (AppNotification) -> Void
    init(_ block: @escaping (AppNotification) -> Void) { self.block = block }

    /// The entry's function for a Swift observer: never called (the dispatch loops call the closure
    /// directly, with one `AppNotification` per post); there so that every entry has a function.
    static let unused: RawObserverFunction = { _, _ in }
}

/// A userInfo on its way to the loop thread inside a `LoopMessage` (a message carries one reference).
final class UserInfoCarrier: Sendable {
    let value: UserInfo
    init(_ value: UserInfo) { self.value = value }
}
