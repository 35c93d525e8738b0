import Synchronization

/// One observer, as the cold paths see it (registration, removal, the filtered and general loops):
/// assembled from the list's two arrays (`ObserverList.calls`, `ObserverList.meta`).
struct ObserverEntry {
    var function: RawObserverFunction
    var context: UnsafeMutableRawPointer?
    var sender: UInt
    /// 0 marks a removed entry awaiting compaction.
    var token: UInt64
    var owner: UInt32
    var boxed: Bool
}

/// What the dispatch loop of C observers reads per observer: the function, its context and its owner
/// (which the loop marks in the callback probe before the call: the watchdog names the plugin by it),
/// 24 bytes — 1,000 observers are 24 KB of calls, inside the L1 cache, where the whole entries (40
/// bytes) were 40 KB and missed it.
struct ObserverCall {
    var function: RawObserverFunction
    var context: UnsafeMutableRawPointer?
    var owner: UInt32
}

/// Where a run of consecutive entries registered by one owner starts: the C-only loop marks the
/// owner in the callback probe once a run, not once an observer (the plain C loop's instructions a
/// call, plus the reload of the array's base).
struct OwnerRun {
    var start: Int
    var owner: UInt32
}

/// The rest of an observer: read by the cold paths and the filtered and general loops.
struct ObserverMeta {
    var sender: UInt
    /// Kept by a removed entry (a tombstone), so that tokens stay in order and a search by halving
    /// steps over tombstones.
    var token: UInt64
    var owner: UInt32
    var boxed: Bool
    /// A removed entry awaiting compaction (in the padding: the meta stays 24 bytes).
    var removed = false
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
    /// By owner id: how many live observers it has (kept as they are added and removed, so that a
    /// plugin's quota check costs one read). Not kept for the empty owner (0).
    var ownerObservers: [Int] = [0]
    /// Closure boxes of removed Swift observers, released once no dispatch is under way.
    var graveyard: [Unmanaged<ObserverBox>] = []
    var dispatchDepth = 0
    /// How many marked callbacks (delegate methods, expiration handlers, plugins' init and timers) are
    /// running, nested: with `dispatchDepth`, the level of a dispatch's marks in the callback probe.
    var markedDepth = 0
    /// The callback probe's marks (`CallbackProbe.marks`), here so that a dispatch reaches them
    /// without going through the probe.
    var probeMarks: UnsafeMutablePointer<Atomic<UInt64>>?
    var heldDeliveryHandler: ((NotificationName, UInt, UserInfo?) -> Void)?
    /// While non-nil, what arrives from other threads goes here instead of running (`ForeignInput`).
    var foreignInputGate: ((ForeignInput) -> Void)? {
        didSet { gatesForeignInput = foreignInputGate != nil }
    }
    /// `foreignInputGate != nil`, as one byte: what the cross-thread paths test (a load and a branch).
    var gatesForeignInput = false
    var observerWillRun: ((_ owner: String) -> Bool)?
    var nestingLimitHandler: ((NotificationName, Int, String) -> Void)?
    var rawUserInfoBridge: ((UserInfo) -> AnyObject)?
    /// The application's metrics, when it has a backend: marked callbacks and the observers of the
    /// general loop's hooked dispatches are timed (see `EngineMetrics`). Read by cold paths only.
    var metrics: EngineMetrics?
    /// This center's address on the loop: posts from other threads travel there as messages, so
    /// centers sharing a loop never see each other's posts. Set once in init, then only read (from
    /// any thread).
    var target: LoopTarget?
    /// The address of its queued work (`enqueueWork`) on the loop, and the probe's mark for it. Set
    /// once in init, then only read (from any thread).
    var workTarget: LoopTarget?
    var workBits: UInt64 = 0
}

/// The observers of one name: two manually managed contiguous buffers in step — the calls (function,
/// context) that the C loop reads and the rest — so that appending during a dispatch may move them
/// without invalidating the dispatch (which reloads the base pointers).
struct ObserverList {
    private(set) var calls: UnsafeMutablePointer<ObserverCall>
    private(set) var meta: UnsafeMutablePointer<ObserverMeta>
    /// The runs of one owner over `0..<count`, in order (tombstones keep their owner): maintained on
    /// append, the tail's drop and compaction. Its base may move when an append grows it.
    private(set) var runs: UnsafeMutablePointer<OwnerRun>
    private(set) var runCount = 0
    private var runCapacity = 2
    private(set) var count = 0
    /// How many of the `count` entries hold a Swift closure (tombstones included).
    private(set) var boxedCount = 0
    /// How many of the `count` entries filter by sender (tombstones included).
    private(set) var filteredCount = 0
    private var capacity = 4
    var dispatchDepth = 0
    /// How many of the `count` entries are tombstones (removed, awaiting compaction).
    private(set) var tombstones = 0
    var hasTombstones: Bool { tombstones != 0 }
    /// How many live observers the list holds. O(1).
    var liveCount: Int { count - tombstones }
    /// The largest token appended so far, and whether a smaller one came after it (the serial wrapped):
    /// live tokens are ascending, so `index(of:)` searches by halving unless this is set.
    private var maxToken: UInt64 = 0
    private var unsorted = false
    /// The name's C string (static storage), put in every record.
    let cName: UnsafePointer<CChar>

    init(cName: UnsafePointer<CChar>) {
        self.cName = cName
        calls = .allocate(capacity: 4)
        meta = .allocate(capacity: 4)
        runs = .allocate(capacity: 2)
    }

    /// Starts a run of `owner` at `start` unless the last run is already `owner`'s.
    private mutating func extendRuns(at start: Int, owner: UInt32) {
        if runCount > 0, runs[runCount - 1].owner == owner { return }
        if runCount == runCapacity {
            let grown = UnsafeMutablePointer<OwnerRun>.allocate(capacity: runCapacity * 2)
            grown.moveInitialize(from: runs, count: runCount)
            runs.deallocate()
            runs = grown
            runCapacity *= 2
        }
        (runs + runCount).initialize(to: OwnerRun(start: start, owner: owner))
        runCount += 1
    }

    /// The entry at `index` (< `count`).
    subscript(index: Int) -> ObserverEntry {
        let call = calls[index], rest = meta[index]
        return ObserverEntry(function: call.function, context: call.context, sender: rest.sender, token: rest.removed ? 0 : rest.token,
                             owner: rest.owner, boxed: rest.boxed)
    }

    mutating func append(_ entry: ObserverEntry) {
        if count == capacity {
            let grownCalls = UnsafeMutablePointer<ObserverCall>.allocate(capacity: capacity * 2)
            grownCalls.moveInitialize(from: calls, count: count)
            calls.deallocate()
            calls = grownCalls
            let grownMeta = UnsafeMutablePointer<ObserverMeta>.allocate(capacity: capacity * 2)
            grownMeta.moveInitialize(from: meta, count: count)
            meta.deallocate()
            meta = grownMeta
            capacity *= 2
        }
        extendRuns(at: count, owner: entry.owner)
        (calls + count).initialize(to: ObserverCall(function: entry.function, context: entry.context, owner: entry.owner))
        (meta + count).initialize(to: ObserverMeta(sender: entry.sender, token: entry.token, owner: entry.owner, boxed: entry.boxed))
        count += 1
        if entry.boxed { boxedCount += 1 }
        if entry.sender != 0 { filteredCount += 1 }
        if entry.token <= maxToken { unsorted = true } else { maxToken = entry.token }
    }

    /// Where the live entry with `token` is: by halving, O(log n) (tokens are appended in ascending
    /// order, and neither a tombstone nor compaction changes it); linearly only after the center's
    /// 32-bit serial wrapped (4,294,967,295 observers added over the life of the center).
    func index(of token: UInt64) -> Int? {
        guard token != 0 else { return nil }
        if !unsorted {
            var low = 0
            var high = count
            while low < high {
                let middle = (low + high) / 2
                if meta[middle].token < token { low = middle + 1 } else { high = middle }
            }
            return low < count && meta[low].token == token && !meta[low].removed ? low : nil
        }
        for i in 0..<count where meta[i].token == token && !meta[i].removed { return i }
        return nil
    }

    /// Turns a live entry into a tombstone: marked removed (seen as token 0 through the subscript, and
    /// skipped by every loop that checks it), a no-op function and no context, so that the C-only loop
    /// can call every entry without a test and the Swift-only loop skips an entry without a context.
    /// Compaction drops it once no dispatch runs. The caller has taken a Swift observer's box first.
    private mutating func markRemoved(at index: Int) {
        meta[index].removed = true
        calls[index] = ObserverCall(function: ObserverBox.unused, context: nil, owner: calls[index].owner)
        tombstones += 1
    }

    /// Moves entry `from` to `to` (< `from`), compacting.
    private mutating func move(_ from: Int, to: Int) {
        calls[to] = calls[from]
        meta[to] = meta[from]
    }

    /// Removes every live entry of `owner` in one pass: tombstones them while the list is being
    /// dispatched, else compacts (keeping order, and dropping every tombstone). The contexts of Swift
    /// observers go to `boxes`.
    mutating func removeAll(owner: UInt32, boxes: inout [UnsafeMutableRawPointer]) -> Int {
        var removed = 0
        for i in 0..<count where !meta[i].removed && meta[i].owner == owner {
            if meta[i].boxed, let context = calls[i].context { boxes.append(context) }
            markRemoved(at: i)
            removed += 1
        }
        if dispatchDepth == 0, tombstones > 0 { compact() }
        return removed
    }

    /// Removes the live entry at `index` (< `count`) in O(1), amortised: it becomes a tombstone, and
    /// the list is compacted (O(n)) once no dispatch runs and tombstones are more than half of it —
    /// so n removals in any order cost O(n) in all, where shifting the arrays at each removal cost
    /// O(n²) (100,000 removals in registration order took 2.5 s). A dispatch compacts the list it
    /// ran on when it ends (`AppNotificationCenter.dispatch`).
    mutating func remove(at index: Int) {
        guard dispatchDepth == 0, index == count - 1 else {
            markRemoved(at: index)
            if dispatchDepth == 0, tombstones > count / 2 { compact() }
            return
        }
        // The last entry (removal in reverse order): dropped, with the tombstones just before it.
        repeat {
            count -= 1
            if meta[count].boxed { boxedCount -= 1 }
            if meta[count].sender != 0 { filteredCount -= 1 }
            if meta[count].removed { tombstones -= 1 }
        } while count > 0 && meta[count - 1].removed
        while runCount > 0, runs[runCount - 1].start >= count { runCount -= 1 }
    }

    /// Drops tombstones, keeping order. O(n).
    mutating func compact() {
        var kept = 0
        runCount = 0
        for i in 0..<count {
            guard !meta[i].removed else {
                if meta[i].boxed { boxedCount -= 1 }
                if meta[i].sender != 0 { filteredCount -= 1 }
                continue
            }
            if kept != i { move(i, to: kept) }
            extendRuns(at: kept, owner: meta[kept].owner)
            kept += 1
        }
        count = kept
        tombstones = 0
    }

    mutating func releaseAll() {
        for i in 0..<count where !meta[i].removed && meta[i].boxed {
            if let context = calls[i].context { Unmanaged<ObserverBox>.fromOpaque(context).release() }
        }
        count = 0
        runCount = 0
        tombstones = 0
        boxedCount = 0
        filteredCount = 0
    }

    /// Frees the buffers (the list is unusable after). Call `releaseAll` first.
    func deallocate() {
        calls.deallocate()
        meta.deallocate()
        runs.deallocate()
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
