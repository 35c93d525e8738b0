import Synchronization

/// What the loop thread is running right now, readable from any thread: the watchdog's view of the
/// main thread.
///
/// The loop thread marks each callback into code it does not own — an observer, a delegate method,
/// an expiration handler, a plugin's `init` — as it begins (the center does it: see
/// `AppNotificationCenter.runMarked` and the dispatch's `ProbeMarks`). The watchdog thread samples
/// the marks to find a callback that runs past the hang budget; a host reads them to say what was
/// running when it had to end (an overdue termination, a plugin calling `exit`).
///
/// **The marks.** Two words per nesting level (`levels` of them; level 0 is the outermost callback
/// running, level k the one nested k deep): what (the kind in bits 60–61, the subject in bits 0–31:
/// a notification name id, or a label index; 0 when nothing runs at that level) and whose (the
/// owner index). A dispatch writes its level's *what* as it begins and clears it as it ends; each of
/// its observers writes the *whose* as it is called. No save, no restore, no branch on the level.
///
/// **Progress, as a watchdog kick.** The watchdog sets the top bit (`flag`) of the outer words it
/// sees; the loop thread's next mark — a new dispatch, the next observer, even the same callback
/// again — writes a word without it. Words still both flagged a hang budget after they were flagged
/// mean no outermost callback began since: the one running has overrun. No serial, no clock read on
/// the loop thread.
///
/// Guarantees:
/// - **Thread.** The words are written by the loop thread only (the watchdog only adds the flag, with
///   a compare-and-exchange); `outerWord()`, `flag(_:)` and `running()` are [thread-safe].
/// - **Cost.** Relaxed atomic stores (plain moves on x86-64 and arm64), no lock, no allocation: one per
///   observer (its owner), one when a dispatch begins and one when it ends.
/// - **One callback.** An outermost callback is a delegate call, a marked call, or one observer of an
///   outermost dispatch; its budget counts from its start, whatever it runs nested inside it.
/// - **A sample, not a synchronisation.** The watchdog re-reads before it reports.
package final class CallbackProbe: @unchecked Sendable {
    // @unchecked: the marks are atomics behind a let pointer; the owner and label names are under
    // `names`' lock.

    /// How many levels have a word: the center's nesting limit for dispatches (64) plus as many for
    /// marked callbacks (a marked callback deeper than that shares the last word).
    package static let levels = 128
    /// The watchdog's bit in the outer word (see the type's documentation).
    package static let flag: UInt64 = 1 << 63

    /// The words, two per level: `marks[2 * level]` what, `marks[2 * level + 1]` whose (see above).
    package let marks: UnsafeMutablePointer<Atomic<UInt64>>

    private struct Names {
        /// Index-aligned with the center's owner table (index 0 is the empty owner).
        var owners: [String] = [""]
    }

    private let names = Mutex(Names())

    package init() {
        marks = .allocate(capacity: 2 * Self.levels)
        for i in 0..<2 * Self.levels { (marks + i).initialize(to: Atomic(0)) }
    }

    deinit {
        marks.deinitialize(count: 2 * Self.levels)
        marks.deallocate()
    }

    // MARK: Identities

    /// What sort of callback a word names.
    package enum Kind: UInt64 {
        case observer = 0
        case delegate = 1
        case other = 2
    }

    /// A *what* word: an observer of name id `subject` (the id itself), or a delegate method or other
    /// callback of label index `subject`. Never 0 (name ids start at 1; the other kinds have bits set).
    @inline(__always)
    package static func bits(_ kind: Kind, subject: UInt32) -> UInt64 { kind.rawValue << 60 | UInt64(subject) }

    /// Records an owner the center interned at `index` (the center's table grows by one, in order). [loop-thread]
    package func ownerInterned(_ owner: String, at index: UInt32) {
        names.withLock { names in
            if Int(index) == names.owners.count { names.owners.append(owner) }
        }
    }

    /// The index of `label` (a delegate selector, "expiration handler", "init"), interned once in the
    /// process (`CallbackLabels`). [thread-safe]
    package func labelID(_ label: String) -> UInt32 { CallbackLabels.intern(label) }

    // MARK: Reading [thread-safe]

    /// The outer words now (what, whose), flags included.
    package func outerWords() -> (what: UInt64, whose: UInt64) { (marks[0].load(ordering: .relaxed), marks[1].load(ordering: .relaxed)) }

    /// Flags the outer words `seen` (a compare-and-exchange each: a word the loop thread changed
    /// meanwhile stays as the loop thread wrote it).
    package func flag(_ seen: (what: UInt64, whose: UInt64)) {
        _ = marks[0].compareExchange(expected: seen.what, desired: seen.what | Self.flag, ordering: .relaxed)
        _ = marks[1].compareExchange(expected: seen.whose, desired: seen.whose | Self.flag, ordering: .relaxed)
    }

    /// The owner index (as the center interned it) of the innermost callback running now; nil when the
    /// loop thread runs no marked callback, 0 for one without an owner. A few relaxed loads, no lock.
    package func innermostOwner() -> UInt32? {
        let outer = outerWords()
        guard outer.what & ~Self.flag != 0 else { return nil }
        var whose = outer.whose
        for level in 1..<Self.levels {
            guard marks[2 * level].load(ordering: .relaxed) != 0 else { break }
            whose = marks[2 * level + 1].load(ordering: .relaxed)
        }
        return UInt32(truncatingIfNeeded: whose & 0xFFFF_FFFF)
    }

    /// Whether a callback of the owner at `index` (as the center interned it; not 0) runs now, at any
    /// level of nesting. A few relaxed loads, no lock. [loop-thread]
    package func isRunning(owner index: UInt32) -> Bool {
        guard index != 0 else { return false }
        for level in 0..<Self.levels {
            guard marks[2 * level].load(ordering: .relaxed) & ~Self.flag != 0 else { break }
            if UInt32(truncatingIfNeeded: marks[2 * level + 1].load(ordering: .relaxed) & 0xFFFF_FFFF) == index { return true }
        }
        return false
    }

    /// The callbacks running now: the outermost and the innermost (the same when nothing is nested);
    /// nil when the loop thread runs no marked callback.
    package func running() -> (outermost: RunningCallback, innermost: RunningCallback)? {
        let outer = outerWords()
        guard outer.what & ~Self.flag != 0 else { return nil }
        // The innermost: the last level in use (levels in use are contiguous from 0).
        var inner = outer
        for level in 1..<Self.levels {
            let what = marks[2 * level].load(ordering: .relaxed)
            if what == 0 { break }
            inner = (what, marks[2 * level + 1].load(ordering: .relaxed))
        }
        return names.withLock { names in (Self.decode(outer, names), Self.decode(inner, names)) }
    }

    private static func decode(_ words: (what: UInt64, whose: UInt64), _ names: Names) -> RunningCallback {
        let owner = Int(words.whose & 0xFFFF_FFFF)
        let subject = UInt32(words.what & 0xFFFF_FFFF)
        let ownerName = owner < names.owners.count ? names.owners[owner] : ""
        let label = CallbackLabels.text(subject)
        switch Kind(rawValue: (words.what >> 60) & 3) {
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

/// The callback labels of the process — delegate selectors and the names of other callbacks ("posted
/// work", "expiration handler", "init") — interned once, by index: what a probe's *what* word names.
///
/// Process-wide, so that a `DelegateMethod` interns its selector once when it is made and a delegate
/// call marks the probe with that index: no string is hashed per call. Grows with the distinct labels
/// only (the standard selectors and a handful of names, plus any selector an embedder makes up).
/// [thread-safe]
package enum CallbackLabels {
    /// The standard delegate selectors, labels 0..<45 in the order of `DelegateMethod`'s static
    /// methods: a standard method is made with its index (`DelegateMethod(selector:standard:)`), so
    /// that making them — the first plugin load of a process makes every one — hashes and locks nothing.
    package static let standard: [String] = [
        "application:willFinishLaunchingWithOptions:",
        "application:didFinishLaunchingWithOptions:",
        "applicationDidBecomeActive:",
        "applicationWillResignActive:",
        "applicationDidEnterBackground:",
        "applicationWillEnterForeground:",
        "applicationWillTerminate:",
        "applicationDidReceiveMemoryWarning:",
        "applicationSignificantTimeChange:",
        "applicationProtectedDataWillBecomeUnavailable:",
        "applicationProtectedDataDidBecomeAvailable:",
        "application:openURL:sourceApplication:annotation:",
        "application:openURL:options:",
        "application:performFetchWithCompletionHandler:",
        "application:didReceiveRemoteNotification:fetchCompletionHandler:",
        "application:didReceiveRemoteNotification:",
        "application:shouldSaveApplicationState:",
        "application:shouldRestoreApplicationState:",
        "application:willEncodeRestorableStateWithCoder:",
        "application:didDecodeRestorableStateWithCoder:",
        "application:configurationForConnectingSceneSession:options:",
        "application:didDiscardSceneSessions:",
        "application:willContinueUserActivityWithType:",
        "application:continueUserActivity:restorationHandler:",
        "application:didFailToContinueUserActivityWithType:error:",
        "application:didUpdateUserActivity:",
        "applicationDidFinishLaunching:",
        "application:handleOpenURL:",
        "application:didReceiveLocalNotification:",
        "application:didRegisterForRemoteNotificationsWithDeviceToken:",
        "application:didFailToRegisterForRemoteNotificationsWithError:",
        "application:handleEventsForBackgroundURLSession:completionHandler:",
        "scene:willConnectToSession:options:",
        "sceneDidDisconnect:",
        "sceneDidBecomeActive:",
        "sceneWillResignActive:",
        "sceneWillEnterForeground:",
        "sceneDidEnterBackground:",
        "scene:openURLContexts:",
        "stateRestorationActivityForScene:",
        "scene:willContinueUserActivityWithType:",
        "scene:continueUserActivity:",
        "scene:didFailToContinueUserActivityWithType:error:",
        "scene:didUpdateUserActivity:",
        "scene:restoreInteractionStateWithUserActivity:",
    ]

    private struct Table {
        /// The labels after the standard ones (index `standard.count + i`).
        var labels: [String] = []
        /// Every label interned, the standard ones included (filled on first use).
        var index: [String: UInt32] = [:]
    }

    private static let table = Mutex(Table())

    /// The index of `label`, interned on first use (a standard selector's is its fixed index). [thread-safe]
    package static func intern(_ label: String) -> UInt32 {
        table.withLock { table in
            if table.index.isEmpty {
                table.index.reserveCapacity(standard.count + 16)
                for (index, label) in standard.enumerated() { table.index[label] = UInt32(index) }
            }
            if let index = table.index[label] { return index }
            let index = UInt32(standard.count + table.labels.count)
            table.labels.append(label)
            table.index[label] = index
            return index
        }
    }

    /// The label at `index` ("" for an index never issued). [thread-safe]
    package static func text(_ index: UInt32) -> String {
        if Int(index) < standard.count { return standard[Int(index)] }
        return table.withLock { Int(index) - standard.count < $0.labels.count ? $0.labels[Int(index) - standard.count] : "" }
    }
}
