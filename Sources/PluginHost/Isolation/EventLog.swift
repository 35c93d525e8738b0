import AppLifecycle
import LifecycleC

/// The frames the host sent an isolated plugin's process that it has not finished yet, numbered from
/// 1 in sending order (the runner counts them the same way), each with what it is and by when it must
/// be done. O(1) to add and to finish; the ones in flight are at most what the socket buffers hold,
/// and frames in a row with the same facts (a stream's) are held as one run.
///
/// Two kinds of deadline. A frame sent in one of the engine's budgeted phases (or `init`) must be done
/// by its phase's budget from when it was sent, whatever ran before it: the phase's own time. A frame
/// held to the isolated-call budget (`.call`) gets that budget from when the process could start it —
/// when it was sent, or when the host saw the frames before it finished, whichever is later — since
/// the process runs frames in order: a slow plugin behind a burst of notifications is not failed for
/// the time it spent on the ones before (the host sees progress whenever it looks at the page, so a
/// frame gets at most twice its budget from when it could start). Only the oldest unfinished `.call`
/// frame can be running, so only its deadline is looked at among them. [loop-thread]
struct EventLog {
    /// What a frame asks the plugin to run.
    enum What: Equatable {
        case notification(UInt32)
        case delegate(Int)
        case timer
        case expiration
        case sync
        case initialise
        case unload
        case requestEnded
    }

    /// Which budget a frame's deadline comes from.
    enum Budget: Equatable {
        /// The isolated-call budget (outside the engine's budgeted phases).
        case call
        /// A lifecycle budget: the engine's phase was under way when the frame was sent.
        case phase(WatchdogReport.Budget)
        case initialise
    }

    struct Entry: Equatable {
        let what: What
        let budget: Budget
        /// Monotonic nanoseconds.
        var deadline: UInt64
        /// When it was sent (monotonic nanoseconds).
        var sentAt: UInt64 = 0

        /// The same frame facts as `other`: the cheap words first (a stream's frames differ, if at
        /// all, in their times).
        @inline(__always)
        func matches(_ other: Entry) -> Bool {
            deadline == other.deadline && sentAt == other.sentAt && budget == other.budget && what == other.what
        }
    }

    /// `count` frames in a row with the same entry, numbered `first`, `first + 1`, … A stream of
    /// notifications sent within one tick of the coarse clock (every one held to the isolated-call
    /// budget, whose start reads that clock) is one run: appending it is an increment, finishing it is
    /// a subtraction, where an entry a frame cost an array append and an array drop each.
    private struct Run {
        var entry: Entry
        var first: UInt64
        var count: UInt64
        var last: UInt64 { first + count - 1 }
    }

    /// The unfinished frames (`finished + 1` through `sent`): the runs from `head` on, then `tail`.
    private var runs: [Run] = []
    private var head = 0
    /// The last run, open to more frames (count 0: none); kept out of `runs` so that continuing it
    /// touches no array.
    private var tail = Run(entry: Entry(what: .sync, budget: .call, deadline: 0), first: 1, count: 0)
    /// The unfinished phase and `init` frames' deadlines that no later one undercuts, earliest first (a
    /// monotonic queue): its first is the earliest of them, found in O(1) amortised.
    private var minimums: [(number: UInt64, deadline: UInt64)] = []
    private var minimumsHead = 0
    /// The number of the last frame sent (0: none).
    private(set) var sent: UInt64 = 0
    /// Every frame up to this one is finished.
    private(set) var finished: UInt64 = 0
    /// When `finished` last grew, as the host saw it (monotonic nanoseconds).
    private var progressAt: UInt64 = 0
    /// What the last `recentCapacity` finished frames were, by number modulo the capacity: a report
    /// that arrives after its frame was finished (a quota refusal made in that callback) still names it.
    private var recent = [(number: UInt64, what: What)](repeating: (0, .sync), count: EventLog.recentCapacity)
    static let recentCapacity = 256

    var hasPending: Bool { finished < sent }
    /// When the oldest frame not finished was sent (nil: none is unfinished).
    var oldestSent: UInt64? { oldest?.entry.sentAt }
    /// The run of the oldest unfinished frame.
    private var oldest: Run? { head < runs.count ? runs[head] : tail.count > 0 ? tail : nil }
    /// What the log holds now, finished frames not yet dropped included (tests: it must stay bounded by
    /// what is in flight). `entries` counts runs.
    var storedCount: (entries: Int, minimums: Int) { (runs.count + (tail.count > 0 ? 1 : 0), minimums.count) }

    /// Adds a frame just sent; returns its number. O(1) amortised; O(1) without an allocation when it
    /// continues the last run.
    @inline(__always)
    mutating func append(_ entry: Entry) -> UInt64 {
        // A stream's frame (held to the isolated-call budget, the same facts as the last): one count,
        // in the caller. Phase and `init` frames also keep their place among the deadlines' minimums.
        if case .call = entry.budget, tail.count > 0, tail.entry.matches(entry) {
            sent += 1
            tail.count += 1
            return sent
        }
        return appendNew(entry)
    }

    /// `append` of a frame that starts a run, or that a phase's or `init`'s deadline counts.
    @inline(never)
    private mutating func appendNew(_ entry: Entry) -> UInt64 {
        sent += 1
        if tail.count > 0, tail.entry.matches(entry) {
            tail.count += 1
        } else {
            if tail.count > 0 { runs.append(tail) }
            tail = Run(entry: entry, first: sent, count: 1)
        }
        if case .call = entry.budget { return sent }
        while minimums.count > minimumsHead, minimums[minimums.count - 1].deadline >= entry.deadline { minimums.removeLast() }
        minimums.append((sent, entry.deadline))
        return sent
    }

    /// Marks every frame up to `number` finished (numbers beyond `sent` are the caller's to refuse), as
    /// the host saw at `now` (monotonic nanoseconds). O(runs finished + the last `recentCapacity` frames).
    mutating func finish(through number: UInt64, at now: UInt64 = 0) {
        guard number > finished else { return }
        progressAt = max(progressAt, now)
        let through = min(number, sent)
        // The last of them into the ring (at most its capacity: O(1) a frame).
        let ringFrom = through - min(through - finished, UInt64(Self.recentCapacity)) + 1
        while let run = oldest, run.first <= through {
            let done = min(run.last, through)
            if done >= ringFrom {
                for frame in max(run.first, ringFrom)...done {
                    recent[Int(frame % UInt64(Self.recentCapacity))] = (frame, run.entry.what)
                }
            }
            let left = run.last - done
            if head < runs.count {
                if left == 0 { head += 1 } else { runs[head].count = left; runs[head].first = done + 1 }
            } else {
                tail.count = left
                tail.first = done + 1
            }
        }
        finished = through
        Self.dropFront(&runs, &head, from: 4096)
        trimMinimums()
    }

    /// Drops `array`'s first `head` elements (those consumed) once they are all of it (a small
    /// buffer is kept for reuse), or at least `from` and half of it: amortised O(1) an element.
    private static func dropFront<T>(_ array: inout [T], _ head: inout Int, from: Int) {
        if head == array.count {
            array.removeAll(keepingCapacity: array.count <= 4096)
            head = 0
        } else if head >= from, head * 2 >= array.count {
            array.removeFirst(head)
            head = 0
        }
    }

    /// Drops the finished frames from the front of `minimums` (and compacts it, amortised O(1)): with
    /// deadlines that only grow — a stream of notifications, each `now + budget` — every frame stays in
    /// it until finished, so it is trimmed as frames finish, not only when a deadline is looked up.
    private mutating func trimMinimums() {
        while minimumsHead < minimums.count, minimums[minimumsHead].number <= finished { minimumsHead += 1 }
        Self.dropFront(&minimums, &minimumsHead, from: 1024)
    }

    /// The frame numbered `number`, if it is not finished. O(1) for the last run (a frame just sent,
    /// the usual question), else O(log runs).
    func entry(_ number: UInt64) -> Entry? {
        guard number > finished, number <= sent else { return nil }
        if tail.count > 0, tail.first <= number { return tail.entry }
        var low = head, high = runs.count  // runs[low].first <= number < runs[high].first (or tail's)
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if runs[middle].first <= number { low = middle } else { high = middle }
        }
        return runs[low].entry
    }

    /// What the frame numbered `number` was: an unfinished one, or one of the last `recentCapacity`
    /// finished; nil otherwise.
    func what(of number: UInt64) -> What? {
        if let entry = entry(number) { return entry.what }
        let slot = recent[Int(number % UInt64(Self.recentCapacity))]
        return number != 0 && slot.number == number ? slot.what : nil
    }

    /// The earliest deadline among the unfinished frames, and its frame's number: the earliest phase or
    /// `init` deadline, or the oldest unfinished frame's when it is a `.call` frame and comes first.
    var earliest: (number: UInt64, deadline: UInt64)? {
        mutating get {
            trimMinimums()
            let phase = minimumsHead < minimums.count ? minimums[minimumsHead] : nil
            guard let oldest = oldest?.entry, case .call = oldest.budget else { return phase }
            let length = oldest.deadline &- oldest.sentAt
            let call = (number: finished + 1, deadline: max(oldest.sentAt, progressAt) &+ length)
            guard let phase else { return call }
            return phase.deadline <= call.deadline ? phase : call
        }
    }

    /// Moves the unfinished frames' deadlines `nanoseconds` later: the time their process was frozen
    /// (`IsolatedPlugin.thaw`), which it could not use. O(runs in flight).
    mutating func postpone(by nanoseconds: UInt64) {
        for index in head..<runs.count {
            runs[index].entry.deadline &+= nanoseconds
            runs[index].entry.sentAt &+= nanoseconds
        }
        tail.entry.deadline &+= nanoseconds
        tail.entry.sentAt &+= nanoseconds
        for index in minimumsHead..<minimums.count { minimums[index].deadline &+= nanoseconds }
        if progressAt != 0 { progressAt &+= nanoseconds }
    }

    /// Forgets everything (a new process starts counting from 1).
    mutating func reset() { self = EventLog() }
}

extension EventLog.What {
    /// The words of a failure report: "didBecomeActive", "applicationDidEnterBackground:", "init", …
    var description: String {
        switch self {
        case .notification(let id): return NotificationName(internedID: id)?.rawValue ?? "notification \(id)"
        case .delegate(let row): return FFIDelegates.functions[row].method.selector
        case .timer: return "a timer"
        case .expiration: return "a background task's expiration handler"
        case .sync: return "the end of an action"
        case .initialise: return "init"
        case .unload: return "deinit"
        case .requestEnded: return "the end of a request"
        }
    }
}

extension EventLog.Budget {
    /// Its name in reports, and how long it is under `configuration` and `settings`.
    func named(_ configuration: Configuration, _ settings: IsolationSettings) -> (name: String, length: Duration) {
        switch self {
        case .call: return ("isolated-call", settings.callBudget)
        case .initialise: return ("init", settings.initBudget)
        case .phase(let budget):
            let length = switch budget {
            case .launch: configuration.budgets.launch
            case .didEnterBackground: configuration.budgets.didEnterBackground
            case .willTerminate: configuration.budgets.willTerminate
            case .completionHandler: configuration.budgets.completionHandler
            case .backgroundTask: configuration.budgets.backgroundTask
            case .hang: configuration.budgets.hang
            case .terminate: configuration.budgets.terminationBudget
            }
            return (budget.rawValue, length)
        }
    }
}
