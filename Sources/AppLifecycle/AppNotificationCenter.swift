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
    /// The loop whose thread delivers.
    public let loop: MainRunLoop

    private var lists: [ObserverList?] = []
    private var serial: UInt32 = 0
    private var owners: [String] = [""]
    private var ownerIndex: [String: UInt32] = ["": 0]
    /// Closure boxes of removed Swift observers, released once no dispatch is under way.
    private var graveyard: [Unmanaged<ObserverBox>] = []
    private var dispatchDepth = 0

    /// Set by the application: while non-nil, posts go here instead of to observers.
    var heldDeliveryHandler: ((NotificationName, UInt, UserInfo?) -> Void)?

    /// Called before each observer while a budgeted lifecycle notification is dispatched, so the
    /// watchdog can name the observer that overruns; answering false ends the dispatch (the
    /// application was killed). Nil on ordinary posts.
    var observerWillRun: ((_ owner: String) -> Bool)?

    /// Creates a center delivering on `loop`. Call on the loop's thread.
    public init(loop: MainRunLoop) {
        self.loop = loop
        loop.postHandler = { [unowned self] post in
            self.deliver(post.name, sender: post.sender, userInfo: post.userInfo)
        }
    }

    deinit {
        for list in lists { list?.releaseAll() }
        for box in graveyard { box.release() }
    }

    // MARK: Observing

    /// Observes `name` with a Swift closure.
    ///
    /// [loop-thread] The closure runs on the loop thread, in registration order among the name's observers.
    /// - Parameters:
    ///   - sender: only notifications from this sender (`.none`: any sender).
    ///   - owner: who registers it (a plugin id), named by the watchdog and in traces.
    /// - Returns: the token to remove the observer with.
    @discardableResult
    public func observe(_ name: NotificationName, sender: NotificationSender = .none, owner: String = "",
                        _ block: @escaping (AppNotification) -> Void) -> ObserverToken
    {
        let box = Unmanaged.passRetained(ObserverBox(block))
        return addEntry(name, sender: sender.rawValue, owner: owner, function: ObserverBox.trampoline,
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
        serial &+= 1
        if serial == 0 { serial = 1 }
        let token = ObserverToken(rawValue: UInt64(name.id) << 32 | UInt64(serial))
        let id = Int(name.id)
        if id >= lists.count { lists.append(contentsOf: repeatElement(nil, count: id - lists.count + 1)) }
        let list: ObserverList
        if let existing = lists[id] { list = existing } else {
            list = ObserverList(cName: NameRegistry.shared.cString(for: name.id))
            lists[id] = list
        }
        list.append(ObserverEntry(function: function, context: context, sender: sender, token: token.rawValue,
                                  owner: internOwner(owner), boxed: boxed))
        return token
    }

    private func internOwner(_ owner: String) -> UInt32 {
        if let index = ownerIndex[owner] { return index }
        let index = UInt32(owners.count)
        owners.append(owner)
        ownerIndex[owner] = index
        return index
    }

    /// Removes an observer. [loop-thread]
    ///
    /// Once this returns, the observer is never called again. Removing from inside a callback is safe.
    /// - Returns: false when the token names no current observer (already removed, or never issued).
    @discardableResult
    public func removeObserver(_ token: ObserverToken) -> Bool {
        let id = Int(token.nameID)
        guard id < lists.count, let list = lists[id], let index = list.index(of: token.rawValue) else { return false }
        let entry = list.entries[index]
        if list.dispatchDepth > 0 {
            list.entries[index].token = 0  // a tombstone: skipped by the running dispatch, compacted after it
            list.hasTombstones = true
        } else {
            list.remove(at: index)
        }
        if entry.boxed, let context = entry.context {
            let box = Unmanaged<ObserverBox>.fromOpaque(context)
            // The closure may be the one running right now: free it only once no dispatch is under way.
            if dispatchDepth > 0 { graveyard.append(box) } else { box.release() }
        }
        return true
    }

    /// Removes every observer registered with `owner`. [loop-thread]
    /// - Returns: how many were removed.
    @discardableResult
    public func removeObservers(owner: String) -> Int {
        guard let ownerID = ownerIndex[owner] else { return 0 }
        var tokens: [ObserverToken] = []
        for list in lists {
            guard let list else { continue }
            for i in 0..<list.count where list.entries[i].token != 0 && list.entries[i].owner == ownerID {
                tokens.append(ObserverToken(rawValue: list.entries[i].token))
            }
        }
        for token in tokens { removeObserver(token) }
        return tokens.count
    }

    /// The number of live observers of `name`. [loop-thread]
    public func observerCount(for name: NotificationName) -> Int {
        let id = Int(name.id)
        guard id < lists.count, let list = lists[id] else { return 0 }
        var n = 0
        for i in 0..<list.count where list.entries[i].token != 0 { n += 1 }
        return n
    }

    /// The names that `owner` observes, in first-registration order. [loop-thread]
    public func observedNames(owner: String) -> [NotificationName] {
        guard let ownerID = ownerIndex[owner] else { return [] }
        var names: [NotificationName] = []
        for (id, list) in lists.enumerated() {
            guard let list else { continue }
            for i in 0..<list.count where list.entries[i].token != 0 && list.entries[i].owner == ownerID {
                names.append(NotificationName(id: UInt32(id)))
                break
            }
        }
        return names
    }

    // MARK: Posting

    /// Posts a notification. [thread-safe]
    ///
    /// On the loop thread, every matching observer has run when this returns. From another thread it
    /// returns at once; the loop delivers in this thread's post order.
    public func post(_ name: NotificationName, sender: NotificationSender = .none, userInfo: UserInfo? = nil) {
        if loop.isOnLoopThread {
            deliver(name, sender: sender.rawValue, userInfo: userInfo)
        } else {
            loop.enqueuePost(PendingPost(name: name, sender: sender.rawValue, userInfo: userInfo))
        }
    }

    /// Delivers on the loop thread, or hands the post to the application while delivery is held.
    func deliver(_ name: NotificationName, sender: UInt, userInfo: UserInfo?) {
        if let held = heldDeliveryHandler {
            held(name, sender, userInfo)
            return
        }
        dispatch(name, sender: sender, userInfo: userInfo)
    }

    /// Calls the observers of `name` now, ignoring held delivery (the engine's own lifecycle posts).
    func dispatch(_ name: NotificationName, sender: UInt, userInfo: UserInfo?) {
        let id = Int(name.id)
        guard id < lists.count, let list = lists[id], list.count > 0 else { return }
        if let userInfo {
            // C observers read it through `lc_dict` accessors, which need a box to own their C strings.
            let box = UserInfoBox(userInfo)
            withExtendedLifetime(box) {
                run(list, name, sender, UnsafeRawPointer(Unmanaged.passUnretained(box).toOpaque()))
            }
        } else {
            run(list, name, sender, nil)
        }
    }

    private func run(_ list: ObserverList, _ name: NotificationName, _ sender: UInt, _ userInfo: UnsafeRawPointer?) {
        let end = list.count  // observers added during this dispatch wait for the next post
        var record = NotificationRecord(struct_size: UInt32(MemoryLayout<NotificationRecord>.size), name_id: name.id,
                                        name: list.cName, sender: UnsafeRawPointer(bitPattern: sender),
                                        user_info: userInfo.map { OpaquePointer($0) })
        list.dispatchDepth += 1
        dispatchDepth += 1
        withUnsafePointer(to: &record) { raw in
            var i = 0
            if let observerWillRun {
                while i < end {
                    let entry = list.entries[i]  // reloaded each time: a callback may grow the array
                    if entry.token != 0, entry.sender == 0 || entry.sender == sender {
                        guard observerWillRun(owners[Int(entry.owner)]) else { break }
                        entry.function(raw, entry.context)
                    }
                    i += 1
                }
            } else {
                while i < end {
                    let entry = list.entries[i]
                    if entry.token != 0, entry.sender == 0 || entry.sender == sender {
                        entry.function(raw, entry.context)
                    }
                    i += 1
                }
            }
        }
        list.dispatchDepth -= 1
        dispatchDepth -= 1
        if list.dispatchDepth == 0, list.hasTombstones { list.compact() }
        if dispatchDepth == 0, !graveyard.isEmpty {
            let boxes = graveyard
            graveyard.removeAll()
            for box in boxes { box.release() }
        }
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
        let channel = NotificationChannel(policy: bufferPolicy)
        let token = observe(name, sender: sender) { notification in channel.push(notification) }
        channel.onTerminate = { [loop, weak self] in
            loop.perform { [weak self] in _ = self?.removeObserver(token) }
        }
        return NotificationStream(channel: channel)
    }
}

/// One observer slot. Trivially copyable: the dispatch loop copies it without reference counting.
struct ObserverEntry {
    var function: RawObserverFunction
    var context: UnsafeMutableRawPointer?
    var sender: UInt
    /// 0 marks a removed entry awaiting compaction.
    var token: UInt64
    var owner: UInt32
    var boxed: Bool
}

/// The observers of one name: a manually managed contiguous buffer, so that appending during a
/// dispatch may move it without invalidating the dispatch (which reloads the base pointer).
final class ObserverList {
    private(set) var entries: UnsafeMutablePointer<ObserverEntry>
    private(set) var count = 0
    private var capacity = 4
    var dispatchDepth = 0
    var hasTombstones = false
    /// The name's C string (static storage), put in every record.
    let cName: UnsafePointer<CChar>

    init(cName: UnsafePointer<CChar>) {
        self.cName = cName
        entries = .allocate(capacity: 4)
    }

    deinit { entries.deallocate() }

    func append(_ entry: ObserverEntry) {
        if count == capacity {
            let grown = UnsafeMutablePointer<ObserverEntry>.allocate(capacity: capacity * 2)
            grown.moveInitialize(from: entries, count: count)
            entries.deallocate()
            entries = grown
            capacity *= 2
        }
        (entries + count).initialize(to: entry)
        count += 1
    }

    func index(of token: UInt64) -> Int? {
        for i in 0..<count where entries[i].token == token { return i }
        return nil
    }

    func remove(at index: Int) {
        (entries + index).moveInitialize(from: entries + index + 1, count: count - index - 1)
        count -= 1
    }

    /// Drops tombstones, keeping order.
    func compact() {
        var kept = 0
        for i in 0..<count where entries[i].token != 0 {
            if kept != i { entries[kept] = entries[i] }
            kept += 1
        }
        count = kept
        hasTombstones = false
    }

    func releaseAll() {
        for i in 0..<count where entries[i].token != 0 && entries[i].boxed {
            if let context = entries[i].context { Unmanaged<ObserverBox>.fromOpaque(context).release() }
        }
        count = 0
    }
}

/// Holds a Swift closure observer behind a raw context pointer.
final class ObserverBox {
    let block: (AppNotification) -> Void
    init(_ block: @escaping (AppNotification) -> Void) { self.block = block }

    static let trampoline: RawObserverFunction = { record, context in
        guard let record, let context else { return }
        let box = Unmanaged<ObserverBox>.fromOpaque(context)
        let notification = record.pointee.notification
        box._withUnsafeGuaranteedRef { $0.block(notification) }
    }
}
