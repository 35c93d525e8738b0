import CLifecycleSystem
import Synchronization

/// Calling observers: the dispatch loops, the callback probe's marks and the nesting limit.
extension AppNotificationCenter {
    /// How deep dispatches may nest: a post made from inside this many nested dispatches of one center
    /// (an observer that posts, whose observers post, …) is refused — nothing is delivered, the poster
    /// learns it (`post(nameID:)`, the C ABI's `LC_ERR_NESTING_LIMIT`), the center's
    /// `nestingLimitHandler` is told (the engine traces it) — and the dispatches under way go on.
    /// 64: deeper than any design needs (UIKit's own chains are a few levels), shallow enough that 64
    /// levels of plugin frames cannot exhaust an 8 MiB main-thread stack unless each frame takes
    /// 128 KiB. Without it, a plugin re-posting from its own observer overflowed the stack at about
    /// 23,000 levels and took the host down.
    public static let maximumNesting = 64

    /// Calls the observers of `name` now, ignoring held delivery (the engine's own lifecycle posts).
    /// - Returns: false when refused at the nesting limit.
    @inline(__always)
    @discardableResult
    func dispatch(_ name: NotificationName, sender: UInt, userInfo: UserInfo?, raw: AnyObject? = nil) -> Bool {
        guard let list = list(name.id), list.pointee.count > 0 else { return true }
        return run(list, name, sender, userInfo, raw)
    }

    /// Calls the observers of `list`. C observers are called directly with the record; Swift
    /// closures directly with one `AppNotification` built per post (not one per observer, through
    /// the trampoline). A post to C observers without userInfo builds the record and nothing else.
    /// Each observer is marked in the callback probe as it is called (see `CallbackProbe`).
    /// - Returns: false, calling nobody, when `maximumNesting` dispatches are already under way.
    @inline(__always)
    @discardableResult
    func run(_ list: UnsafeMutablePointer<ObserverList>, _ name: NotificationName, _ sender: UInt,
             _ userInfo: UserInfo?, _ raw: AnyObject? = nil) -> Bool
    {
        let depth = state.pointee.dispatchDepth
        guard depth < Self.maximumNesting else { return refuseNested(name) }
        // Observers added during this dispatch wait for the next post; entries below `end` never move
        // during a dispatch (removal only tombstones them), so the counts read here hold for all of it.
        let end = list.pointee.count
        let marks = ProbeMarks(state, level: depth &+ state.pointee.markedDepth, CallbackProbe.bits(.observer, subject: name.id))
        list.pointee.dispatchDepth &+= 1
        state.pointee.dispatchDepth &+= 1
        if userInfo == nil, state.pointee.observerWillRun == nil {
            // The common post: no userInfo, no watchdog.
            if end == 1, list.pointee.filteredCount == 0 {
                // One observer, the most common case: called right here, from its call alone. A C
                // observer's tombstone calls a no-op; a Swift observer's has no context.
                let call = list.pointee.calls[0]
                marks.observer(call.owner)
                if list.pointee.boxedCount == 0 {
                    var record = NotificationRecord(name: name.id, cName: list.pointee.cName, sender: sender)
                    call.function(&record, call.context)
                } else if let context = call.context {
                    Unmanaged<ObserverBox>.fromOpaque(context)._withUnsafeGuaranteedRef {
                        $0.block(AppNotification(name: name, sender: NotificationSender(rawValue: sender)))
                    }
                }
            } else if list.pointee.boxedCount == 0 {
                Self.runC(list, end, name, sender, marks)
            } else {
                Self.runMixed(list, end, name, sender, marks)
            }
        } else {
            runGeneral(list, end, name, sender, userInfo, raw, marks)
        }
        marks.done()
        list.pointee.dispatchDepth &-= 1
        state.pointee.dispatchDepth &-= 1
        if list.pointee.dispatchDepth == 0, list.pointee.hasTombstones { list.pointee.compact() }
        if state.pointee.dispatchDepth == 0, !state.pointee.graveyard.isEmpty { emptyGraveyard() }
        return true
    }

    /// Runs `body` — a call into code the center does not own: a delegate method, an expiration
    /// handler, a plugin's `init` or timer — marked in the callback probe, owned by the
    /// owner at `owner` (`bits`: `CallbackProbe.bits`): the hang budget watches it, and a dispatch
    /// inside it is nested. [loop-thread]
    package func runMarked<R, E: Error>(_ bits: UInt64, owner: UInt32, _ body: () throws(E) -> R) throws(E) -> R {
        let mark = beginMarked(bits, owner: owner)
        defer { endMarked(mark) }
        if state.pointee.metrics == nil { return try body() }
        return try timed(bits, owner: owner, body)
    }

    /// `runMarked` with `body` called on `argument`: for a caller whose closure would otherwise
    /// capture the argument (and retain it at each call). [loop-thread]
    package func runMarked<A: AnyObject>(_ bits: UInt64, owner: UInt32, passing argument: A, _ body: (A) -> Void) {
        let mark = beginMarked(bits, owner: owner)
        defer { endMarked(mark) }
        if state.pointee.metrics == nil { return body(argument) }
        timed(bits, owner: owner) { body(argument) }
    }

    /// A marked callback begins: its level's words written, the marked depth counted. Levels: below 64
    /// dispatches (the nesting limit) and below 63 counted marked callbacks, so every level is below
    /// `CallbackProbe.levels`; deeper marked callbacks share the last level.
    @inline(__always)
    private func beginMarked(_ bits: UInt64, owner: UInt32) -> (marks: ProbeMarks, counted: Bool) {
        let marks = ProbeMarks(state, level: state.pointee.dispatchDepth + state.pointee.markedDepth, bits)
        let counted = state.pointee.markedDepth < CallbackProbe.levels / 2 - 1
        marks.observer(owner)
        if counted { state.pointee.markedDepth += 1 }
        return (marks, counted)
    }

    @inline(__always)
    private func endMarked(_ mark: (marks: ProbeMarks, counted: Bool)) {
        if mark.counted { state.pointee.markedDepth -= 1 }
        mark.marks.done()
    }

    /// `body`, timed for the application's metrics: two clock reads around it.
    @inline(never)
    private func timed<R, E: Error>(_ bits: UInt64, owner: UInt32, _ body: () throws(E) -> R) throws(E) -> R {
        let start = lcs_monotonic_ns()
        defer { state.pointee.metrics?.callbackEnded(bits, owner: owner, since: start) }
        return try body()
    }

    /// A post at the nesting limit: nothing is delivered; the handler hears of it with the poster (the
    /// owner of the observer that posted, from the probe).
    @inline(never)
    private func refuseNested(_ name: NotificationName) -> Bool {
        let poster = probe.running()?.innermost.owner ?? ""
        state.pointee.nestingLimitHandler?(name, state.pointee.dispatchDepth, poster)
        return false
    }

    @inline(never)
    private func emptyGraveyard() {
        let boxes = state.pointee.graveyard
        state.pointee.graveyard.removeAll()
        for box in boxes { box.release() }
    }

    /// C observers only, no userInfo: the loop a C programmer would write.
    @inline(never)
    private static func runC(_ list: UnsafeMutablePointer<ObserverList>, _ end: Int, _ name: NotificationName, _ sender: UInt,
                             _ marks: ProbeMarks)
    {
        var record = NotificationRecord(name: name.id, cName: list.pointee.cName, sender: sender)
        let filtered = list.pointee.filteredCount != 0
        withUnsafePointer(to: &record) { record in
            var i = 0
            if filtered {
                while i < end {
                    let entry = list.pointee[i]  // reloaded each time: a callback may grow the array
                    if entry.sender == 0 || entry.sender == sender {
                        marks.observer(entry.owner)
                        entry.function(record, entry.context)
                    }
                    i += 1
                }
            } else {
                // A removed entry's function is a no-op (see `ObserverList.markRemoved`), so this loop
                // needs no test per observer: the loop a C programmer would write over pointers, the
                // owner marked once a run of its observers (`ObserverList.runs`). A callback may grow
                // either array: both are reloaded; runs it adds start at or past `end`.
                var run = 0
                while run < list.pointee.runCount {
                    let runs = list.pointee.runs
                    let start = runs[run].start
                    guard start < end else { break }
                    let stop = run + 1 < list.pointee.runCount ? min(runs[run + 1].start, end) : end
                    marks.observer(runs[run].owner)
                    i = start
                    while i < stop {
                        let call = list.pointee.calls[i]
                        call.function(record, call.context)
                        i += 1
                    }
                    run += 1
                }
            }
        }
    }

    /// Swift closures (and maybe C observers), no userInfo: one notification for all of them.
    @inline(never)
    private static func runMixed(_ list: UnsafeMutablePointer<ObserverList>, _ end: Int, _ name: NotificationName, _ sender: UInt,
                                 _ marks: ProbeMarks)
    {
        var record = NotificationRecord(name: name.id, cName: list.pointee.cName, sender: sender)
        let filtered = list.pointee.filteredCount != 0
        let swiftOnly = list.pointee.boxedCount == end
        let notification = AppNotification(name: name, sender: NotificationSender(rawValue: sender))
        withUnsafePointer(to: &record) { record in
            var i = 0
            if swiftOnly, !filtered {
                while i < end {
                    // Every entry is a Swift closure's: a tombstone is one without a context.
                    let call = list.pointee.calls[i]
                    if let context = call.context {
                        marks.observer(call.owner)
                        Unmanaged<ObserverBox>.fromOpaque(context)._withUnsafeGuaranteedRef {
                            $0.block(notification)
                        }
                    }
                    i += 1
                }
            } else {
                Self.callAll(list, end, sender, filtered: filtered, record, notification, marks)
            }
        }
    }

    /// Calls the live observers `0..<end` of `list` (matching `sender` when any observer filters by it).
    /// The entry is reloaded each time: a callback may grow the array.
    @inline(__always)
    private static func callAll(_ list: UnsafeMutablePointer<ObserverList>, _ end: Int, _ sender: UInt, filtered: Bool,
                                _ record: UnsafePointer<NotificationRecord>, _ notification: AppNotification, _ marks: ProbeMarks)
    {
        var i = 0
        if filtered {
            while i < end {
                let entry = list.pointee[i]
                if entry.token != 0, entry.sender == 0 || entry.sender == sender { call(entry, record, notification, marks) }
                i += 1
            }
        } else {
            while i < end {
                let entry = list.pointee[i]
                if entry.token != 0 { call(entry, record, notification, marks) }
                i += 1
            }
        }
    }

    /// Calls one observer: a C function with the record, a Swift closure with the notification.
    @inline(__always)
    private static func call(_ entry: ObserverEntry, _ record: UnsafePointer<NotificationRecord>, _ notification: AppNotification,
                             _ marks: ProbeMarks)
    {
        marks.observer(entry.owner)
        if entry.boxed {
            Unmanaged<ObserverBox>.fromOpaque(entry.context!)._withUnsafeGuaranteedRef { $0.block(notification) }
        } else {
            entry.function(record, entry.context)
        }
    }

    /// The general loop: userInfo, and the watchdog's hook when set.
    @inline(never)
    private func runGeneral(_ list: UnsafeMutablePointer<ObserverList>, _ end: Int, _ name: NotificationName,
                            _ sender: UInt, _ userInfo: UserInfo?, _ raw: AnyObject?, _ marks: ProbeMarks)
    {
        let swiftObservers = list.pointee.boxedCount
        let filtered = list.pointee.filteredCount != 0
        let notification = AppNotification(name: name, sender: NotificationSender(rawValue: sender),
                                           userInfo: swiftObservers == 0 ? UserInfo() : userInfo ?? UserInfo())
        // Raw observers get the poster's own handle when it gave one, else the userInfo as the
        // embedder's bridge makes it (the C layer: a dictionary handle that owns the C strings it
        // hands out), once per post.
        let box: AnyObject? = swiftObservers == end || userInfo == nil ? nil : raw ?? userInfo.flatMap { state.pointee.rawUserInfoBridge?($0) }
        var record = NotificationRecord(name: name.id, cName: list.pointee.cName, sender: sender,
                                        userInfo: box.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) })
        withUnsafePointer(to: &record) { record in
            var i = 0
            if state.pointee.observerWillRun != nil, let observerWillRun = state.pointee.observerWillRun {
                // Hooked: a lifecycle notification, or a sampled post; with metrics, each observer timed.
                let metrics = state.pointee.metrics
                while i < end {
                    let entry = list.pointee[i]  // reloaded each time: a callback may grow the array
                    if entry.token != 0, entry.sender == 0 || entry.sender == sender {
                        guard observerWillRun(state.pointee.owners[Int(entry.owner)]) else { break }
                        let start = metrics == nil ? 0 : lcs_monotonic_ns()
                        Self.call(entry, record, notification, marks)
                        metrics?.callbackEnded(CallbackProbe.bits(.observer, subject: name.id), owner: entry.owner, since: start)
                    }
                    i += 1
                }
                if let metrics, metrics.sampleArmed, state.pointee.dispatchDepth == 1 {
                    // The sampled dispatch is over: posts take the fast path again until the next sample.
                    metrics.sampleArmed = false
                    state.pointee.observerWillRun = nil
                    metrics.scheduleSample()
                }
            } else {
                Self.callAll(list, end, sender, filtered: filtered, record, notification, marks)
            }
        }
        withExtendedLifetime(box) {}
    }
}

/// One dispatch's marks in the callback probe (see `CallbackProbe`): the dispatch writes its level's
/// *what* (the name) as it begins and clears it as it ends, and each observer writes the *whose* (its
/// owner: one store) as it is called. Each observer of an outermost dispatch (level 0) is an
/// outermost callback with its own hang budget. [loop-thread]
struct ProbeMarks {
    /// The *what* word of this dispatch's level; the *whose* follows it.
    private let slot: UnsafeMutablePointer<Atomic<UInt64>>

    /// `level`: how many dispatches and marked callbacks are under way around this one (below
    /// `CallbackProbe.levels`: dispatches stop at the nesting limit, marked callbacks are capped).
    @inline(__always)
    init(_ state: UnsafeMutablePointer<CenterState>, level: Int, _ bits: UInt64) {
        slot = state.pointee.probeMarks! + 2 &* level
        slot.pointee.store(bits, ordering: .relaxed)
    }

    /// An observer registered by the owner at `owner` is about to be called.
    @inline(__always)
    func observer(_ owner: UInt32) {
        (slot + 1).pointee.store(UInt64(owner), ordering: .relaxed)
    }

    @inline(__always)
    func done() {
        slot.pointee.store(0, ordering: .relaxed)
    }
}
