import AppLifecycle
import CLifecycleSystem
import LifecycleRunLoop

// A slow isolated plugin never blocks the host's loop (docs/host.md, "A slow plugin"). When its process
// falls behind — more than `outputLimit` waiting in the host for it, or the oldest frame it has not
// finished sent more than half the isolated-call budget ago — the notifications for its observers are
// held instead of sent, one per observer and name (a later one replaces the held one: its sender,
// userInfo and state), like the notifications iOS coalesces for a suspended application. Any other
// frame for the process (a delegate call, a timer's fire, an expiration, the end of an action) first
// sends what is held, so that the order across kinds is kept and an action still ends with the plugin
// having run everything. When the process has caught up (at most half of `outputLimit` waiting, its
// oldest unfinished frame younger than a quarter of the budget), what is held is sent. Each change is
// one `plugin-backlog` trace event; the coalesced count goes to `lifecycle_plugin_coalesced_total`.

/// The notifications held for an isolated plugin's process that fell behind. [loop-thread]
struct Backlog {
    struct Held {
        let token: UInt64
        let name: UInt32
        var sender: UInt
        var userInfo: UserInfo?
        var state: UInt8
    }

    private struct Key: Hashable {
        let token: UInt64
        let name: UInt32
    }

    /// When the process fell behind (monotonic nanoseconds).
    let since: UInt64
    /// The held notifications, in the order each observer and name was first held.
    private var held: [Held] = []
    /// Where each observer and name is in `held`.
    private var index: [Key: Int] = [:]
    /// Every notification held since the process fell behind (replaced ones included).
    private(set) var received = 0
    /// How many of them were sent.
    private(set) var delivered = 0

    init(since: UInt64) { self.since = since }

    /// Holds a notification for the observer `held.token`: in place of one held for the same observer
    /// and name, else after the others. O(1).
    mutating func hold(_ notification: Held) {
        received += 1
        let key = Key(token: notification.token, name: notification.name)
        if let at = index[key] {
            held[at] = notification
        } else {
            index[key] = held.count
            held.append(notification)
        }
    }

    /// The held notifications, in order, to send now; the backlog holds none afterwards.
    mutating func take() -> [Held] {
        defer {
            held.removeAll(keepingCapacity: held.count <= 1024)
            index.removeAll(keepingCapacity: index.count <= 1024)
        }
        delivered += held.count
        return held
    }
}

extension IsolatedPlugin {
    /// How often a process that fell behind is looked at, besides each time its socket takes more.
    static let backlogCheckInterval: Duration = .milliseconds(10)

    /// Sends what is held, in order, keeping the process behind: before any other frame. [loop-thread]
    func sendHeld() {
        guard var taken = backlog else { return }
        let notifications = taken.take()
        backlog = taken
        for notification in notifications { sendNotification(notification) }
    }

    /// Whether the process is behind now (after a flush: its page read, what the socket took written).
    /// - Returns: the figures for the trace when it is.
    private func behindFigures(_ process: RunnerProcess, now: UInt64, waitingOver limit: Int, olderThan age: UInt64) -> (Int, Duration)? {
        let waiting = process.channel.pendingOutput
        let oldest = events.oldestSent.map { now > $0 ? now - $0 : 0 } ?? 0
        guard waiting > limit || oldest > age else { return nil }
        return (waiting, .nanoseconds(Int64(clamping: oldest)))
    }

    /// Looks whether the process fell behind or caught up, and acts: after each flush, and every
    /// `backlogCheckInterval` while it is behind. [loop-thread]
    func checkBacklog() {
        guard let process, isActive, let handle else { return }
        let now = lcs_monotonic_ns()
        let budget = settings.callBudgetNanoseconds
        if backlog == nil {
            guard let (waiting, oldest) = behindFigures(process, now: now, waitingOver: Self.outputLimit, olderThan: budget / 2) else { return }
            backlog = Backlog(since: now)
            backlogTimer = handle.loop.addRealTimeTimer(after: Self.backlogCheckInterval, repeating: Self.backlogCheckInterval) { [weak self] in
                guard let self, let process = self.process, self.isActive else { return }
                if self.events.hasPending, !self.catchUp(process) { return }
                self.checkBacklog()
            }
            handle.app.record(.pluginBacklog(plugin: plugin.id, .behind(waiting: waiting, oldest: oldest)))
            return
        }
        guard behindFigures(process, now: now, waitingOver: Self.outputLimit / 2, olderThan: budget / 4) == nil else { return }
        endBacklog(caughtUp: true)
    }

    /// Ends the backlog: sends what is held and, when the process `caughtUp`, says so in the trace
    /// (a process that failed or is unloaded says nothing more). [loop-thread]
    func endBacklog(caughtUp: Bool) {
        backlogTimer?.cancel()
        backlogTimer = nil
        guard var ended = backlog else { return }
        let notifications = ended.take()
        backlog = nil
        guard caughtUp, let handle else { return }
        // The trace line first: sending may find the process behind again, which is a line of its own.
        let lasted = Duration.nanoseconds(Int64(clamping: lcs_monotonic_ns() - ended.since))
        handle.app.record(.pluginBacklog(plugin: plugin.id, .caughtUp(held: ended.received, delivered: ended.delivered, lasted: lasted)))
        for notification in notifications { sendNotification(notification) }
    }
}
