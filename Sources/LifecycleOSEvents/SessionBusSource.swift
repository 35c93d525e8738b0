@preconcurrency import Glibc
import CLifecycleSystem
import LifecycleRunLoop

/// The session's events from the D-Bus system bus — logind's `Lock`, `Unlock`, `LockedHint` and
/// `PrepareForSleep`, UPower's `OnBattery`, the power-profiles daemon's `ActiveProfile` — as
/// `SessionEvent`s, through sd-bus from `libsystemd.so.0`, loaded with `dlopen` by `start` only.
///
/// Guarantees:
/// - **Thread.** Everything runs on the loop thread; events are emitted inside a loop turn, never
///   inline from `start()` or `stop()`.
/// - **Never blocks.** Every call to the bus is asynchronous (the matches, `GetSessionByPID`, the
///   initial `Get`s); the connection's descriptor is watched by the loop for what sd-bus asks
///   (`sd_bus_get_events`), its deadline by a loop timer (`sd_bus_get_timeout`), and one turn
///   processes at most 64 messages (a flood cannot hold the loop: the rest are processed on the
///   next turns, after signals).
/// - **Hostile input.** Each message's signature is checked before it is read; a profile longer than
///   63 bytes or not printable ASCII, a wrong type, an unreadable container are reported as
///   `.malformed(why)` and nothing else comes of them. Signals are matched on the owner of the
///   well-known name (the bus daemon routes only the owner's), and `Lock`/`Unlock` and `LockedHint`
///   only for this process's own session.
/// - **Failures.** A service that is absent (no logind session, no UPower) goes to the problem handler
///   once, and the rest runs on; a connection that fails later is closed, reported, and not reopened.
public final class SessionBusSource: @unchecked Sendable {
    // @unchecked: every member is [loop-thread].

    private let sink: OSEventSink
    private let emitSession: (SessionEvent) -> Void
    private var bus: OpaquePointer?
    private var io: LoopSource?
    private var deadline: LoopSource?
    private var pumpQueued = false
    /// How many messages one loop turn processes at most.
    static let messagesPerTurn: Int32 = 64

    init(sink: OSEventSink, emit: @escaping (SessionEvent) -> Void) {
        self.sink = sink
        emitSession = emit
    }

    deinit {
        io?.cancel()
        deadline?.cancel()
        if let bus { lcs_bus_close(bus) }
    }

    /// Whether the connection is open. [loop-thread]
    public var isConnected: Bool { bus != nil }

    /// Loads `libsystemd.so.0` (the first time), connects to `address` (nil: the system bus), and
    /// starts watching. [loop-thread] Does nothing when already connected.
    /// - Throws: `.unavailable` with a sentence naming the library or the address and why (a machine
    ///   without `libsystemd.so.0`: `dlopen` says so); nothing stays installed.
    func start(address: String?) throws(OSEventError) {
        guard bus == nil else { return }
        var error = [CChar](repeating: 0, count: 512)
        func text() -> String { Self.text(error) }
        if lcs_bus_load(&error, error.count) != 0 {
            throw OSEventError(.unavailable, "session events need sd-bus from libsystemd.so.0, which cannot be loaded: \(text())")
        }
        var opened: OpaquePointer?
        let context = Unmanaged.passUnretained(self).toOpaque()
        let result = lcs_bus_open(address, getpid(), { context, event in
            guard let context, let event else { return }
            Unmanaged<SessionBusSource>.fromOpaque(context).takeUnretainedValue().received(event.pointee)
        }, context, &opened, &error, error.count)
        guard result >= 0, let opened else {
            throw OSEventError(.unavailable, "session events: cannot connect to \(address ?? "the system bus"): \(text())",
                               errno: -result)
        }
        bus = opened
        do throws(RunLoopError) {
            io = try sink.loop.addIO(fd: lcs_bus_fd(opened), events: .readable) { [weak self] _ in self?.pump() }
        } catch {
            stop()
            throw OSEventError(error, prefix: "session events: ")
        }
        queuePump()
    }

    /// Closes the connection; no event is emitted again. [loop-thread] Idempotent.
    func stop() {
        io?.cancel()
        io = nil
        deadline?.cancel()
        deadline = nil
        if let bus { lcs_bus_close(bus) }
        bus = nil
    }

    private func queuePump() {
        guard !pumpQueued else { return }
        pumpQueued = true
        sink.loop.performNext { [weak self] in
            guard let self else { return }
            pumpQueued = false
            pump()
        }
    }

    /// Processes what is ready (at most `messagesPerTurn`), then asks sd-bus what to wait for.
    private func pump() {
        guard let bus else { return }
        let result = lcs_bus_process(bus, Self.messagesPerTurn)
        guard self.bus != nil else { return }  // stopped by a handler
        if result < 0 {
            let code = -result
            stop()
            sink.problem(OSEventError(.system, "session events: the bus connection failed: \(String(cString: lcs_strerror(code))) (errno \(code)); session events are off",
                                      errno: code))
            return
        }
        if result > 0 { queuePump() }
        rearm(bus)
    }

    private func rearm(_ bus: OpaquePointer) {
        let wanted = lcs_bus_events(bus)
        var events: IOEvents = []
        if wanted & Int32(POLLIN) != 0 { events.insert(.readable) }
        if wanted & Int32(POLLOUT) != 0 { events.insert(.writable) }
        if events.isEmpty { events = .readable }
        if io?.events != events { try? io?.setIOEvents(events) }  // on the loop thread: cannot fail
        deadline?.cancel()
        deadline = nil
        let timeout = lcs_bus_timeout(bus)
        if timeout != UInt64.max {
            let at = MonotonicInstant(nanoseconds: timeout > UInt64.max / 1000 ? UInt64.max : timeout * 1000)
            deadline = sink.loop.addRealTimeTimer(at: at) { [weak self] in
                self?.deadline = nil
                self?.pump()
            }
        }
    }

    private func received(_ event: lcs_bus_event) {
        let detail = Self.text(event.detail)
        switch Int(event.kind) {
        case Int(LCS_BUS_SESSION.rawValue): emitSession(.sessionFound(Self.text(event.text)))
        case Int(LCS_BUS_LOCK.rawValue): emitSession(.lock)
        case Int(LCS_BUS_UNLOCK.rawValue): emitSession(.unlock)
        case Int(LCS_BUS_LOCKED_HINT.rawValue): emitSession(.lockedHint(event.flag != 0))
        case Int(LCS_BUS_SLEEP.rawValue): emitSession(.prepareForSleep(event.flag != 0))
        case Int(LCS_BUS_ON_BATTERY.rawValue): emitSession(.onBattery(event.flag != 0))
        case Int(LCS_BUS_PROFILE.rawValue): emitSession(.powerProfile(Self.text(event.text)))
        case Int(LCS_BUS_MALFORMED.rawValue): emitSession(.malformed(detail))
        case Int(LCS_BUS_PROBLEM.rawValue): sink.problem(OSEventError(.system, "session events: \(detail)"))
        default: break
        }
    }

    /// A C buffer's NUL-terminated text.
    private static func text(_ buffer: [CChar]) -> String {
        buffer.withUnsafeBytes { raw in
            let end = raw.firstIndex(of: 0) ?? raw.count
            return String(decoding: raw[..<end], as: UTF8.self)
        }
    }

    /// A fixed C array's NUL-terminated text.
    private static func text<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            let end = bytes.firstIndex(of: 0) ?? bytes.count
            return String(decoding: bytes[..<end], as: UTF8.self)
        }
    }
}
