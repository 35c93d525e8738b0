import AppLifecycle
import CLifecycleSystem
@preconcurrency import Glibc
import LifecycleRunLoop
import Synchronization

/// The runner's end of the link to the host (in the isolated plugin's process).
///
/// - Sending is [thread-safe]: a plugin thread's frame (a post, a log line, a task's end) is written
///   at once, under one lock; the main thread's frames wait in the buffer while it runs the frames the
///   host sent (`serve`), and go out together when it is done (or sooner when the buffer is large).
/// - Reading is the main thread's: `serve` runs the host's frames in arrival order; a request that
///   waits for the host's reply (`request`) reads on, keeping the frames that arrive before the reply
///   for after the callback that asked (they are later events: nothing the host sends is nested in a
///   request).
/// - Progress: before the callback of the n-th frame it stores n in the progress page's `handling`,
///   after it in `completed` (the host reads them).
final class RunnerLink: @unchecked Sendable {
    // @unchecked: `channel.out`, `namesAdmitted` under `lock`; `lingers` atomic; the rest
    // main-thread only.
    let channel: FrameChannel
    let loop: MainRunLoop
    private let lock = Mutex<Void>(())
    private let progress: UnsafeMutablePointer<UInt64>
    /// Custom names admitted under the plugin's quota (`admit`): a superset of those the channel's
    /// writer has sent (`FrameWriter.namesSent`). [under lock]
    private var namesAdmitted: Set<UInt32> = []
    /// The host's custom name ids, and the names they are here. [main-thread]
    private var hostNames: [UInt32: NotificationName] = [:]
    /// The host's name `hostName` found last, with its C string: a stream of one name looks it up once.
    private var lastHostName: (id: UInt32, name: NotificationName, cString: UnsafePointer<CChar>)?

    /// `name.cString`, without the registry's lookup when it is the name `hostName` found last.
    @inline(__always)
    func cString(of name: NotificationName) -> UnsafePointer<CChar> {
        if let last = lastHostName, last.name == name { return last.cString }
        return name.cString
    }
    /// Frames the host sent that arrived while a request waited: run next, in order. [main-thread]
    /// (This and the main thread's counters below: one thread's only; see `FrameChannel`.)
    private var deferred = FrameQueue()
    /// Whether `deferred` holds frames: what every frame run looks at first. A plain flag, read and
    /// written in single accesses that the compiler checks statically, where a look into the queue
    /// (a mutating call) is a dynamic exclusivity check (~110 instructions) a frame.
    private var hasDeferred = false
    /// Whether the main thread is running the host's frames (its own frames then wait in the buffer).
    private var batching = false
    private var eventIndex: UInt64 = 0
    private var nextRequest: UInt64 = 1
    /// The frame being run's state byte (`IsolationProtocol.stateByte`): the application's state, and
    /// whether protected data was available, as of that frame. [main-thread]
    private(set) var stateByte: UInt8 = 0
    /// The application's state (`LC_STATE_*`) as of the frame being run. [main-thread]
    var state: UInt8 { stateByte & IsolationProtocol.stateMask }
    /// Whether protected data was available as of the frame being run. [main-thread]
    var protectedDataAvailable: Bool { stateByte & IsolationProtocol.protectedDataUnavailable == 0 }
    /// The number of the host's frame whose callback runs now (the progress page's `handling`; 0
    /// before the first). [thread-safe]
    var handlingFrame: UInt64 { lcs_load_acquire_u64(progress) }
    /// How many of the host's frames are running, nested (a callback's host call may run more). [main-thread]
    private var servingDepth = 0

    /// The state byte of a frame this side sends on its own (a post, a task's end, a completion):
    /// `fromPluginThread` unless sent by a callback of the host's frames, on the main thread.
    /// [thread-safe]
    var ownStateByte: UInt8 {
        loop.isOnLoopThread && servingDepth > 0 ? 0 : IsolationProtocol.fromPluginThread
    }

    /// Runs one frame the host sent (set once, before the loop runs). [main-thread]
    var handler: (inout FrameReader) -> Void = { _ in }
    /// Runs a plain notification the host sent (`PlainNotification`), taken from the buffer without a
    /// reader (set once, before the loop runs). [main-thread]
    var plainHandler: (PlainNotification) -> Void = { _ in }

    init(channel: FrameChannel, progress: UnsafeMutablePointer<UInt64>, loop: MainRunLoop) {
        self.channel = channel
        self.progress = progress
        self.loop = loop
    }

    // MARK: Sending

    /// Adds a frame built by `build`; written at once unless the main thread is running the host's
    /// frames (then with the others when it is done), or when `flush`.
    func send(flush: Bool = false, _ build: (inout FrameWriter) -> Void) {
        let main = loop.isOnLoopThread
        lock.withLock { _ in
            build(&channel.out)
            if flush || !main || !batching || channel.pendingOutput >= 64 << 10 { writeAll() }
        }
    }

    /// Writes the buffer, waiting while the socket is full. [under lock]
    private func writeAll() {
        while true {
            switch channel.writeSome() {
            case .done: return
            case .wouldBlock: _ = channel.poll(Int16(POLLOUT), until: nil)
            case .failed: Glibc.exit(0)  // the host is gone: nothing to serve
            }
        }
    }

    func flush() { lock.withLock { _ in writeAll() } }

    /// Whether `name` may cross to the host within the plugin's quota of `limit` custom names: a
    /// standard name, or a custom name admitted before, always; a new one while fewer than `limit`
    /// were (it is admitted then). The host holds the names it receives to the same quota. [thread-safe]
    func admit(_ name: NotificationName, limit: Int) -> Bool {
        if name.isStandard { return true }
        return lock.withLock { _ in
            if namesAdmitted.contains(name.id) { return true }
            guard namesAdmitted.count < limit else { return false }
            namesAdmitted.insert(name.id)
            return true
        }
    }

    /// Writes a name field: the id, and the text the first time a custom name crosses. [under `send`]
    func name(_ name: NotificationName, into out: inout FrameWriter) { out.name(name) }

    /// The name a host's name field names here. The host is trusted: a broken field ends the runner.
    func hostName(_ field: (id: UInt32, text: String?)) -> NotificationName {
        if let text = field.text {
            guard let name = try? NotificationName(text) else { Self.fatal("the host sent an invalid name '\(text)'") }
            hostNames[field.id] = name
            if lastHostName?.id == field.id { lastHostName = nil }
            return name
        }
        if let last = lastHostName, last.id == field.id { return last.name }
        if let name = hostNames[field.id] {
            lastHostName = (field.id, name, name.cString)
            return name
        }
        guard NotificationName.isStandardID(field.id), let name = NotificationName(internedID: field.id) else { Self.fatal("the host sent an unknown name id \(field.id)") }
        return name
    }

    // MARK: Requests

    /// Sends a request built by `build` (given its id) and waits for the host's reply. [main-thread]
    /// - Returns: the reply's status, value and message.
    func request(_ build: (inout FrameWriter, UInt64) -> Void) -> (status: Int32, value: UInt64, message: String) {
        let answer = request(build) { _ throws(ProtocolViolation) in () }
        return (answer.status, answer.value, answer.message)
    }

    /// `request`, whose reply carries more after its message, read by `more` (a dictionary the host
    /// answered with). A reply that breaks its frame ends the process, as a broken reply does.
    func request<More>(_ build: (inout FrameWriter, UInt64) -> Void, more: (inout FrameReader) throws(ProtocolViolation) -> More)
        -> (status: Int32, value: UInt64, message: String, more: More)
    {
        let id = nextRequest
        nextRequest += 1
        send(flush: true) { build(&$0, id) }
        while true {
            while let frame = nextFrame() {
                guard frame.kind == .reply else {
                    deferred.append(frame)
                    hasDeferred = true
                    continue
                }
                guard frame.word == id else { Self.fatal("the host answered request \(frame.word) while \(id) waits") }
                // Frames kept while it waited, when no `serve` is under way to run them (a request from
                // work the plugin queued on the loop): run on the next loop turn, not left until the
                // host sends more — a notification would wait, a sync would never be answered.
                if hasDeferred, !batching { loop.perform { [self] in serve() } }
                var reader = frame
                do {
                    let status = try reader.i32("status")
                    let value = try reader.u64("value")
                    let message = try reader.string("message")
                    return (status, value, message, try more(&reader))
                } catch {
                    Self.fatal(error.message)
                }
            }
            readOrWait()
        }
    }

    // MARK: Reading

    private func nextFrame() -> FrameReader? {
        do { return try channel.nextFrame(acceptFromHost: true) } catch { Self.fatal(error.message) }
    }

    /// Waits until something arrives and reads it (one blocking read); the runner ends when the host
    /// is gone.
    private func readOrWait() {
        switch channel.readWaiting(until: nil) {
        case .data?, .wouldBlock?, nil: return
        case .closed?, .failed?: Glibc.exit(0)
        }
    }

    /// Waits for the next frame (the handshake, before the loop runs). [main-thread]
    func waitForFrame() -> FrameReader {
        while true {
            if let frame = nextFrame() { return frame }
            readOrWait()
        }
    }

    /// Runs `body` as the callback of a frame the host sent, between its progress marks: each frame
    /// `serve` runs (`running`), and one it did not (`proceed`: init). [main-thread]
    @inline(__always)
    func runCounted<R>(_ body: () -> R) -> R {
        eventIndex += 1
        lcs_store_release_u64(progress, eventIndex)
        servingDepth += 1
        defer {
            servingDepth -= 1
            lcs_store_release_u64(progress + 1, eventIndex)
        }
        return body()
    }

    /// Runs the frames the host sent with `handler` (those kept by a request first), each with its progress marks,
    /// until none is left or `limit` ran (then it comes back on the next loop turn). [main-thread]
    ///
    /// When the host waited for one of them (a call with a result, a sync), its next frame usually
    /// follows at once: the thread then waits up to `linger` in one blocking read for it before going
    /// back to the loop, so that a round trip costs this side a read and a write, as the C floor does,
    /// instead of an `epoll_wait` more and a loop turn. Only while the plugin has not queued work on
    /// the loop from another thread (`perform_async`): such work would wait out the linger, so the
    /// first one ends lingering for the rest of the process's life (it may itself wait one linger).
    func serve(limit: Int = 4096) {
        var justRead = false
        // Read once a call, not once a frame (a retain of their contexts each time).
        let handler = handler, plainHandler = plainHandler
        while true {
            let (count, hostWaited) = serveBatch(limit: limit, justRead: justRead, handler, plainHandler)
            if count >= limit || hasDeferred {
                loop.perform { [self] in serve(limit: limit) }
                return
            }
            guard hostWaited, lingers.load(ordering: .relaxed) else { return }
            switch channel.readWaiting(slice: Self.linger) {
            case .data?: justRead = true
            case nil, .wouldBlock?: return
            case .closed?, .failed?: Glibc.exit(0)
            }
        }
    }

    /// How long the main thread waits for the host's next frame after answering one the host waited
    /// for: 1 ms (the kernel rounds it up to its clock tick, 4 ms at 250 Hz).
    static let linger: UInt64 = 1_000_000

    /// Whether `serve` lingers: until the plugin first queues work from another thread. [thread-safe]
    private let lingers = Atomic<Bool>(true)

    /// Ends lingering for good (a plugin thread queued work on the loop). [thread-safe]
    func stopLingering() {
        if lingers.load(ordering: .relaxed) { lingers.store(false, ordering: .relaxed) }
    }

    /// One batch of `serve`: the frames read, then one read more unless `justRead`. - Returns: how many
    /// ran, and whether the host waited for one of them.
    ///
    /// A plain notification (`PlainNotification`, a stream's usual frame) is taken from the buffer in
    /// one step and run by `plainHandler`, with no reader made; every other frame by `handler`.
    private func serveBatch(limit: Int, justRead: Bool, _ handler: (inout FrameReader) -> Void,
                            _ plainHandler: (PlainNotification) -> Void) -> (count: Int, hostWaited: Bool)
    {
        batching = true
        var count = 0
        var hostWaited = false
        var readOnce = justRead
        loop: while count < limit {
            // Frames kept by a request run first; then the buffer's, in order.
            if !hasDeferred, let plain = channel.nextPlainNotification() {
                count += 1
                running(state: plain.state) { plainHandler(plain) }
                continue
            }
            var frame: FrameReader
            if hasDeferred, let kept = deferred.next() {
                frame = kept
                hasDeferred = !deferred.isEmpty
            } else if let next = nextFrame() {
                frame = next
            } else {
                // One read a call: when it brings no whole frame, the loop's watch calls again.
                guard !readOnce else { break loop }
                readOnce = true
                switch channel.readSome() {
                case .data: continue loop
                case .wouldBlock: break loop
                case .closed, .failed: Glibc.exit(0)
                }
            }
            guard frame.kind != .reply else { Self.fatal("the host sent a reply nobody asked for") }
            count += 1
            if frame.kind == .sync || frame.kind == .delegate && frame.word != 0 { hostWaited = true }
            running(state: frame.state) { handler(&frame) }
        }
        batching = false
        flush()
        return (count, hostWaited)
    }

    /// Runs the callback of the host's next frame, whose state byte is `state`, between its progress
    /// marks. [main-thread]
    @inline(__always)
    private func running(state: UInt8, _ body: () -> Void) {
        stateByte = state
        runCounted(body)
    }

    /// Ends the runner: the host broke the protocol (it is trusted; this is a bug, said on stderr).
    static func fatal(_ message: String) -> Never {
        fputs("lifecycle-plugin-runner: \(message)\n", stderr)
        Glibc.exit(70)
    }
}
