import Glibc

/// The notification center: observers by name (and optionally sender), dispatched on the main run loop.
///
/// Guarantees:
/// - **Thread.** Observers are always called on the loop's thread. `post` is [thread-safe]: on the loop
///   thread it delivers synchronously before returning; from any other thread it enqueues to the loop
///   and returns at once, and the loop delivers each posting thread's notifications in post order.
///   `observe` and `removeObserver` are [loop-thread].
/// - **Order.** Observers of a name are called in registration order.
/// - **Removal.** Safe from inside any callback, including the observer's own; once `removeObserver`
///   returns, that observer is never called again, even by a dispatch already under way (stricter
///   than Foundation, which may still call it from a snapshot).
/// - **Addition** from inside a callback takes effect from the next post (a nested post included).
/// - **Cost.** A post looks up one contiguous array by the interned name id: observers of other
///   names cost nothing, and a post without userInfo allocates nothing.
/// - **Held delivery.** While the application is suspended or not running, the engine holds delivery:
///   a post is handed to the application (which queues the coalescing kinds) instead of observers.
public final class AppNotificationCenter: @unchecked Sendable {
    // @unchecked: `state` is loop-thread (the public API checks); `target`/`workTarget` are set in init, then only read.
    /// The loop whose thread delivers.
    public let loop: MainRunLoop
    /// The intern table, held here so that a post from another thread checks its id without the
    /// global's lazy-initialisation check.
    private let registry = NameRegistry.shared

    /// The loop-thread state, behind a pointer: a post reads and writes it without the dynamic
    /// exclusivity checks (`swift_beginAccess`) that every access to a class's `var` stored property
    /// pays. Nothing here is ever accessed across a callback (no access spans a call out), so the
    /// checks had nothing to catch.
    let state: UnsafeMutablePointer<CenterState>

    /// What the loop thread is running, for the watchdog: every observer is marked in it as it is
    /// called (see `CallbackProbe`); the application marks its delegate calls in it too.
    package let probe = CallbackProbe()

    /// Set by the application: while non-nil, posts go here instead of to observers.
    var heldDeliveryHandler: ((NotificationName, UInt, UserInfo?) -> Void)? {
        get { state.pointee.heldDeliveryHandler }
        set { state.pointee.heldDeliveryHandler = newValue }
    }

    /// While non-nil, posts and work that arrive from other threads are handed to it instead of run
    /// (`ForeignInput`, `Application.foreignInputGate`). [loop-thread]
    package var foreignInputGate: ((ForeignInput) -> Void)? {
        get { state.pointee.foreignInputGate }
        set { state.pointee.foreignInputGate = newValue }
    }

    /// Called before each observer while a budgeted lifecycle notification is dispatched, so the
    /// watchdog can name the observer that overruns; answering false ends the dispatch (the
    /// application was killed). Nil on ordinary posts.
    var observerWillRun: ((_ owner: String) -> Bool)? {
        get { state.pointee.observerWillRun }
        set { state.pointee.observerWillRun = newValue }
    }

    /// Told, on the loop thread, of a post refused at the nesting limit (`maximumNesting`): the name,
    /// how many dispatches were nested, and the owner of the observer that posted ("" if none).
    var nestingLimitHandler: ((NotificationName, Int, String) -> Void)? {
        get { state.pointee.nestingLimitHandler }
        set { state.pointee.nestingLimitHandler = newValue }
    }

    /// Turns a userInfo into what raw observers find in `NotificationRecord.userInfo` (the C layer
    /// makes its dictionary handle); called once per post that has a userInfo and raw observers.
    /// Nil: raw observers get no userInfo. [loop-thread]
    package var rawUserInfoBridge: ((UserInfo) -> AnyObject)? {
        get { state.pointee.rawUserInfoBridge }
        set { state.pointee.rawUserInfoBridge = newValue }
    }


    /// Creates a center delivering on `loop`. Call on the loop's thread.
    public init(loop: MainRunLoop) {
        self.loop = loop
        state = .allocate(capacity: 1)
        state.initialize(to: CenterState())
        state.pointee.probeMarks = probe.marks
        let receiver = CenterReceiver()
        state.pointee.target = loop.addTarget(receiver)
        receiver.center = Unmanaged.passUnretained(self)
        addWorkTarget()
    }

    deinit {
        if let target = state.pointee.target { loop.removeTarget(target) }
        if let target = state.pointee.workTarget { loop.removeTarget(target) }
        for list in state.pointee.lists {
            guard let list else { continue }
            list.pointee.releaseAll()
            list.pointee.deallocate()
            list.deinitialize(count: 1)
            list.deallocate()
        }
        for box in state.pointee.graveyard { box.release() }
        state.deinitialize(count: 1)
        state.deallocate()
    }

    // MARK: Observing

    /// Observes `name` with a Swift closure.
    ///
    /// [loop-thread] The closure runs on the loop thread, in registration order among the name's observers.
    /// - Parameters:
    ///   - name: the notification name observed.
    ///   - sender: only notifications from this sender (`.none`: any sender).
    ///   - owner: who registers it (a plugin id), named by the watchdog and in traces.
    ///   - block: called with each notification, on the loop thread.
    /// - Returns: the token to remove the observer with.
    @discardableResult
    public func observe(_ name: NotificationName, sender: NotificationSender = .none, owner: String = "",
                        _ block: @escaping (AppNotification) -> Void) -> ObserverToken
    {
        loop.preconditionOnLoopThread("AppNotificationCenter.observe(_:sender:owner:_:)")
        let box = Unmanaged.passRetained(ObserverBox(block))
        return addEntry(name, sender: sender.rawValue, owner: owner, function: ObserverBox.unused,
                        context: box.toOpaque(), boxed: true)
    }

    /// Observes `name` with a raw C-convention function and its context (the C face's path).
    ///
    /// [loop-thread] The center neither retains nor frees `context`.
    @discardableResult
    package func observeRaw(_ name: NotificationName, sender: UInt = 0, owner: String = "",
                            function: RawObserverFunction, context: UnsafeMutableRawPointer?) -> ObserverToken
    {
        addEntry(name, sender: sender, owner: owner, function: function, context: context, boxed: false)
    }

    private func addEntry(_ name: NotificationName, sender: UInt, owner: String, function: RawObserverFunction,
                          context: UnsafeMutableRawPointer?, boxed: Bool) -> ObserverToken
    {
        state.pointee.serial &+= 1
        if state.pointee.serial == 0 { state.pointee.serial = 1 }
        let token = ObserverToken(rawValue: UInt64(name.id) << 32 | UInt64(state.pointee.serial))
        let id = Int(name.id)
        if id >= state.pointee.lists.count {
            state.pointee.lists.append(contentsOf: repeatElement(nil, count: id - state.pointee.lists.count + 1))
        }
        let list: UnsafeMutablePointer<ObserverList>
        if let existing = state.pointee.lists[id] { list = existing } else {
            list = .allocate(capacity: 1)
            list.initialize(to: ObserverList(cName: name.cString))
            state.pointee.lists[id] = list
        }
        let owner = owner.isEmpty ? 0 : internOwner(owner)
        list.pointee.append(ObserverEntry(function: function, context: context, sender: sender, token: token.rawValue,
                                          owner: owner, boxed: boxed))
        if owner != 0 {
            state.pointee.ownerNames[Int(owner)].insert(name.id)
            state.pointee.ownerObservers[Int(owner)] += 1
        }
        return token
    }

    private func internOwner(_ owner: String) -> UInt32 {
        if let index = state.pointee.ownerIndex[owner] { return index }
        let index = UInt32(state.pointee.owners.count)
        state.pointee.owners.append(owner)
        state.pointee.ownerNames.append([])
        state.pointee.ownerObservers.append(0)
        state.pointee.ownerIndex[owner] = index
        probe.ownerInterned(owner, at: index)
        return index
    }

    /// `owner`'s index in the owner table (interned on first use; 0 for ""), as the callback probe
    /// names it. [loop-thread]
    package func ownerID(_ owner: String) -> UInt32 { owner.isEmpty ? 0 : internOwner(owner) }

    /// Gives the observers registered under `owner` to the name `to` (a plugin being reloaded parks its
    /// observers under a name no plugin can have while its new instance's `init` registers under the
    /// id, then takes them back if that fails). O(1): the owner's index changes name, its observers
    /// stay where they are. Traces and the callback probe still name the index as before. The index
    /// `to` had, if any, loses its name: it must have no observers left. [loop-thread]
    /// - Returns: false, nothing changed, when `owner` is empty or unknown, `to` is empty, or `to`
    ///   still has observers.
    package func moveOwner(_ owner: String, to: String) -> Bool {
        loop.preconditionOnLoopThread("AppNotificationCenter.moveOwner(_:to:)")
        guard !owner.isEmpty, !to.isEmpty, let index = state.pointee.ownerIndex[owner] else { return false }
        if let existing = state.pointee.ownerIndex[to], state.pointee.ownerObservers[Int(existing)] != 0 { return false }
        state.pointee.ownerIndex[owner] = nil
        state.pointee.ownerIndex[to] = index
        return true
    }

    /// The owner at index `owner` ("" for 0 or an index never issued). [loop-thread]
    func ownerName(_ owner: UInt32) -> String {
        Int(owner) < state.pointee.owners.count ? state.pointee.owners[Int(owner)] : ""
    }

    /// The list of name id `id`, if it was ever observed.
    @inline(__always)
    func list(_ id: UInt32) -> UnsafeMutablePointer<ObserverList>? {
        let id = Int(id)
        return id < state.pointee.lists.count ? state.pointee.lists[id] : nil
    }

    /// Removes an observer. [loop-thread]
    ///
    /// Once this returns, the observer is never called again. Removing from inside a callback is safe.
    /// - Returns: false when the token names no current observer (already removed, or never issued).
    @discardableResult
    public func removeObserver(_ token: ObserverToken) -> Bool {
        loop.preconditionOnLoopThread("AppNotificationCenter.removeObserver(_:)")
        guard let list = list(token.nameID), let index = list.pointee.index(of: token.rawValue) else { return false }
        removeEntry(list, at: index)
        return true
    }

    /// Removes an observer only if `owner` registered it. [loop-thread]
    ///
    /// What a plugin's `remove_observer` goes through: a plugin can remove its own observers, never
    /// another plugin's (nor the host's, whose owner is empty), even with a token it guessed.
    /// - Returns: false when the token names no current observer of `owner` (someone else's, already
    ///   removed, or never issued); nothing changed then.
    @discardableResult
    public func removeObserver(_ token: ObserverToken, owner: String) -> Bool {
        loop.preconditionOnLoopThread("AppNotificationCenter.removeObserver(_:owner:)")
        guard let ownerID = state.pointee.ownerIndex[owner], let list = list(token.nameID),
              let index = list.pointee.index(of: token.rawValue), list.pointee.meta[index].owner == ownerID
        else { return false }
        removeEntry(list, at: index)
        return true
    }

    /// Whether `token` names a current observer registered by `owner`. [loop-thread]
    public func isObserver(_ token: ObserverToken, ownedBy owner: String) -> Bool {
        loop.preconditionOnLoopThread("AppNotificationCenter.isObserver(_:ownedBy:)")
        guard let ownerID = state.pointee.ownerIndex[owner], let list = list(token.nameID),
              let index = list.pointee.index(of: token.rawValue)
        else { return false }
        return list.pointee.meta[index].owner == ownerID
    }

    private func removeEntry(_ list: UnsafeMutablePointer<ObserverList>, at index: Int) {
        let entry = list.pointee[index]
        if entry.owner != 0 { state.pointee.ownerObservers[Int(entry.owner)] -= 1 }
        // A tombstone: skipped by a running dispatch, compacted after it or once tombstones are half the list.
        list.pointee.remove(at: index)
        if entry.boxed, let context = entry.context {
            let box = Unmanaged<ObserverBox>.fromOpaque(context)
            // The closure may be the one running right now: free it only once no dispatch is under way.
            if state.pointee.dispatchDepth > 0 { state.pointee.graveyard.append(box) } else { box.release() }
        }
    }

    /// Removes every observer registered with `owner`. [loop-thread]
    ///
    /// Visits only the names `owner` observes (a per-owner index), each list once: removing 100,000
    /// observers costs one pass over their lists, not one search and one shift per observer. Safe
    /// from inside a callback (entries of a list being dispatched become tombstones).
    /// - Returns: how many were removed.
    @discardableResult
    public func removeObservers(owner: String) -> Int {
        loop.preconditionOnLoopThread("AppNotificationCenter.removeObservers(owner:)")
        guard !owner.isEmpty, let ownerID = state.pointee.ownerIndex[owner] else { return 0 }
        let names = state.pointee.ownerNames[Int(ownerID)]
        state.pointee.ownerNames[Int(ownerID)] = []
        var removed = 0
        var boxes: [UnsafeMutableRawPointer] = []
        for nameID in names {
            guard let list = list(nameID) else { continue }
            removed += list.pointee.removeAll(owner: ownerID, boxes: &boxes)
        }
        state.pointee.ownerObservers[Int(ownerID)] -= removed
        for context in boxes {
            let box = Unmanaged<ObserverBox>.fromOpaque(context)
            if state.pointee.dispatchDepth > 0 { state.pointee.graveyard.append(box) } else { box.release() }
        }
        return removed
    }

    /// The number of live observers of `name`. [loop-thread]
    public func observerCount(for name: NotificationName) -> Int {
        loop.preconditionOnLoopThread("AppNotificationCenter.observerCount(for:)")
        guard let list = list(name.id) else { return 0 }
        return list.pointee.liveCount
    }

    /// How many live observers `owner` registered (0 for the empty owner). O(1). [loop-thread]
    public func observerCount(owner: String) -> Int {
        loop.preconditionOnLoopThread("AppNotificationCenter.observerCount(owner:)")
        guard !owner.isEmpty, let ownerID = state.pointee.ownerIndex[owner] else { return 0 }
        return state.pointee.ownerObservers[Int(ownerID)]
    }

    /// The names that `owner` observes, in first-registration order. [loop-thread]
    public func observedNames(owner: String) -> [NotificationName] {
        loop.preconditionOnLoopThread("AppNotificationCenter.observedNames(owner:)")
        guard let ownerID = state.pointee.ownerIndex[owner] else { return [] }
        var names: [NotificationName] = []
        for (id, list) in state.pointee.lists.enumerated() {
            guard let list else { continue }
            for i in 0..<list.pointee.count {
                let entry = list.pointee.meta[i]
                if !entry.removed && entry.owner == ownerID {
                    names.append(NotificationName(id: UInt32(id)))
                    break
                }
            }
        }
        return names
    }

    // MARK: Posting

    /// Posts a notification. [thread-safe]
    ///
    /// On the loop thread, every matching observer has run when this returns. From another thread it
    /// returns at once; the loop delivers in this thread's post order.
    ///
    /// From another thread the post is queued for the loop, and the queue is bounded per thread: a
    /// thread with `MainRunLoop.maxQueuedPerThread` (65,536) posts still waiting for the loop — or
    /// when all threads together have `MainRunLoop.maxQueued` waiting — is refused: nothing is queued
    /// and this returns false. Retry once the loop has run (it takes the whole queue at once), or drop
    /// the post. Every post that returned true is delivered, in this thread's order.
    ///
    /// On the loop thread, a post from inside `maximumNesting` (64) nested dispatches — an observer
    /// re-posting from its own callback — is refused: nothing is delivered, the engine traces it, and
    /// this returns false.
    ///
    /// On any thread, a userInfo over `UserInfoLimits` (`userInfo.limitExceeded`: deeper than 64 levels
    /// or larger than 64 MiB − 20 bytes) is refused: nothing is posted, and this returns false.
    /// - Returns: false when the post was refused (from another thread over the queue's bound, on the
    ///   loop thread at the nesting limit, or its userInfo over the limits).
    @discardableResult
    public func post(_ name: NotificationName, sender: NotificationSender = .none, userInfo: UserInfo? = nil) -> Bool {
        if userInfo == nil { return postWithoutUserInfo(name, sender: sender.rawValue) }
        return post(name, sender: sender, userInfo: userInfo, rawUserInfo: nil)
    }

    /// `post(_:sender:userInfo:)` without a userInfo, the way most posts go: nothing to check, and three
    /// words of arguments (a `UserInfo?` is three more: with them the call spilled to the stack).
    private func postWithoutUserInfo(_ name: NotificationName, sender: UInt) -> Bool {
        let thread = pthread_self()
        if loop.isLoopThread(thread) { return deliver(name, sender: sender, userInfo: nil) }
        return loop.send(LoopMessage(target: state.pointee.target!, word0: UInt64(name.id), word1: sender, payload: nil),
                         fromOtherThread: thread)
    }

    /// Posts a notification whose userInfo the poster also holds in raw observers' form (the C
    /// layer's dictionary handle): on the loop thread raw observers get `rawUserInfo` itself instead
    /// of a handle the bridge makes anew. [thread-safe]
    ///
    /// `rawUserInfo` must hold the same entries as `userInfo`; it is used only during this call (a
    /// post queued from another thread, or held while delivery is held, gets a fresh handle).
    /// - Returns: false when a post from another thread was refused (see `post(_:sender:userInfo:)`), on
    ///   the loop thread refused at the nesting limit (`maximumNesting`), or its userInfo is over
    ///   `UserInfoLimits`: nothing was delivered.
    @discardableResult
    package func post(_ name: NotificationName, sender: NotificationSender, userInfo: UserInfo?, rawUserInfo: AnyObject?) -> Bool {
        if userInfo?.limitExceeded != nil { return false }
        let thread = pthread_self()
        if loop.isLoopThread(thread) {
            return deliver(name, sender: sender.rawValue, userInfo: userInfo, raw: rawUserInfo)
        }
        return loop.send(LoopMessage(target: state.pointee.target!, word0: UInt64(name.id), word1: sender.rawValue,
                                     payload: userInfo.map(UserInfoCarrier.init)), fromOtherThread: thread)
    }

    /// Posts the name whose interned id is `id`, checking the id: the C ABI's fast path
    /// (`lc_app_post_name`). [thread-safe]
    ///
    /// Behaves as `post(_:sender:userInfo:)`. On the loop thread, a post without userInfo to a name
    /// that has (or had) observers is dispatched right here: having an observer list proves the id
    /// was interned (lists are only made for interned names), so the intern table is not consulted;
    /// nothing is retained, allocated or locked. From another thread the post is queued (the loop's
    /// queue lock, nothing else).
    /// - Returns: `.unknownName`, posting nothing, when `id` is 0 or was never interned; `.refused`
    ///   when a post from another thread is over the queue's bound; `.nestingLimit` when refused at the
    ///   nesting limit; `.overLimit` when the userInfo is over `UserInfoLimits` (checked first, O(1)).
    package func post(nameID id: UInt32, sender: UInt, userInfo: UserInfo?, rawUserInfo: AnyObject? = nil) -> PostOutcome {
        // Not unwrapped into a copy: the dictionary is passed on as it came (a copy costs retains).
        if userInfo == nil { return post(nameID: id, sender: sender) }
        if userInfo?.limitExceeded != nil { return .overLimit }
        let thread = pthread_self()
        guard loop.isLoopThread(thread) else {
            // Another thread: check the id (one atomic load) and queue a four-word message.
            guard registry.isInterned(id) else { return .unknownName }
            let queued = loop.send(LoopMessage(target: state.pointee.target!, word0: UInt64(id), word1: sender,
                                               payload: userInfo.map(UserInfoCarrier.init)), fromOtherThread: thread)
            return queued ? .posted : .refused
        }
        return postChecked(nameID: id, sender: sender, userInfo: userInfo, raw: rawUserInfo)
    }

    /// `post(nameID:sender:userInfo:rawUserInfo:)` without a userInfo: the C ABI's fast path
    /// (`lc_app_post_name` with a NULL userInfo). Three words of arguments, nothing to check but the id.
    /// [thread-safe]
    package func post(nameID id: UInt32, sender: UInt) -> PostOutcome {
        // The loop thread's path is out of line (a tail call), so that a post from another thread —
        // the check of the id (one atomic load) and a four-word message queued — sets up no frame
        // for the dispatch it does not make.
        guard !loop.isOnLoopThread else { return postOnLoopThread(nameID: id, sender: sender) }
        guard registry.isInterned(id) else { return .unknownName }
        let queued = loop.sendFromOtherThread(LoopMessage(target: state.pointee.target!, word0: UInt64(id), word1: sender,
                                                          payload: nil))
        return queued ? .posted : .refused
    }

    /// `post(nameID:sender:)` on the loop thread: dispatched right here.
    @inline(never)
    private func postOnLoopThread(nameID id: UInt32, sender: UInt) -> PostOutcome {
        guard state.pointee.heldDeliveryHandler == nil, let list = list(id) else {
            return postChecked(nameID: id, sender: sender, userInfo: nil, raw: nil)
        }
        if list.pointee.count > 0, !run(list, NotificationName(id: id), sender, nil) { return .nestingLimit }
        return .posted
    }

    /// `post(nameID:)` on the loop thread off its fast path: checks the id in the intern table, then
    /// delivers.
    @inline(never)
    private func postChecked(nameID id: UInt32, sender: UInt, userInfo: UserInfo?, raw: AnyObject?) -> PostOutcome {
        guard registry.isInterned(id) else { return .unknownName }
        return deliver(NotificationName(id: id), sender: sender, userInfo: userInfo, raw: raw) ? .posted : .nestingLimit
    }

    /// Delivers a message that `post` queued from another thread. [loop-thread]
    /// A message with a userInfo (the payload) is delivered out of line, so that the common one
    /// (none) keeps no payload in registers across the dispatch.
    @inline(__always)
    fileprivate func receive(_ message: borrowing LoopMessage) {
        if state.pointee.gatesForeignInput { return gateReceived(message) }
        if case .none = message.payload {
            deliver(NotificationName(id: UInt32(truncatingIfNeeded: message.word0)), sender: message.word1, userInfo: nil)
        } else {
            receiveWithUserInfo(message)
        }
    }

    /// A cross-thread post while a gate holds foreign input: handed to it, delivered when it runs.
    @inline(never)
    private func gateReceived(_ message: borrowing LoopMessage) {
        let name = NotificationName(id: UInt32(truncatingIfNeeded: message.word0))
        let sender = message.word1
        let userInfo = message.payload.map { unsafeDowncast($0, to: UserInfoCarrier.self).value }
        state.pointee.foreignInputGate?(ForeignInput(.post(name)) { [weak self] in
            self?.deliver(name, sender: sender, userInfo: userInfo)
        })
    }

    @inline(never)
    private func receiveWithUserInfo(_ message: borrowing LoopMessage) {
        let name = NotificationName(id: UInt32(truncatingIfNeeded: message.word0))
        let userInfo = message.payload.map { unsafeDowncast($0, to: UserInfoCarrier.self).value }
        deliver(name, sender: message.word1, userInfo: userInfo)
    }

    /// Delivers on the loop thread, or hands the post to the application while delivery is held.
    /// - Returns: false when refused at the nesting limit.
    @inline(__always)
    @discardableResult
    func deliver(_ name: NotificationName, sender: UInt, userInfo: UserInfo?, raw: AnyObject? = nil) -> Bool {
        if state.pointee.heldDeliveryHandler != nil {
            hold(name, sender: sender, userInfo: userInfo)
            return true
        }
        return dispatch(name, sender: sender, userInfo: userInfo, raw: raw)
    }

    @inline(never)
    private func hold(_ name: NotificationName, sender: UInt, userInfo: UserInfo?) {
        guard let held = state.pointee.heldDeliveryHandler else { return }
        held(name, sender, userInfo)
    }

    // MARK: Async sequences

    /// The notifications named `name`, as an `AsyncSequence`, from now on.
    ///
    /// [loop-thread] to create; iterate from any task. Buffer policy: see `NotificationStream.BufferPolicy`
    /// — nothing is ever dropped silently. The observer is removed when the stream's last iterator
    /// and the stream itself are gone, or when it finishes.
    public func notifications(named name: NotificationName, sender: NotificationSender = .none,
                              bufferPolicy: NotificationStream.BufferPolicy = .unbounded) -> NotificationStream
    {
        loop.preconditionOnLoopThread("AppNotificationCenter.notifications(named:sender:bufferPolicy:)")
        let channel = NotificationChannel(policy: bufferPolicy)
        let token = observe(name, sender: sender) { notification in channel.push(notification) }
        channel.onTerminate = { [loop, weak self] in
            loop.perform { [weak self] in _ = self?.removeObserver(token) }
        }
        return NotificationStream(channel: channel)
    }
}

/// The center's message receiver on its loop: cross-thread posts arrive here.
///
/// The loop holds it strongly; it holds the center unretained: the center's deinit removes the
/// target before anything else, the loop never calls a removed target, and both happen on the loop
/// thread (the center is loop-bound), so a call never finds the center gone — without a checked
/// `unowned` reference's (or a strong copy's) retain and release on every message.
private final class CenterReceiver: LoopMessageReceiver {
    var center: Unmanaged<AppNotificationCenter>?

    override func receive(_ message: borrowing LoopMessage) {
        center!._withUnsafeGuaranteedRef { $0.receive(message) }
    }
}
