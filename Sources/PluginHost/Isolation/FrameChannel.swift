import CLifecycleSystem
import Glibc
import LifecycleRunLoop

/// One end of the socket pair between the host and an isolated plugin's process: frames out through
/// a buffer, bytes in through a buffer cut into frames. Every read and write is non-blocking
/// (`MSG_DONTWAIT`) but the descriptor itself is left blocking, so that a wait for the other side is
/// one blocking `recv` (`readWaiting`) instead of a `poll` and then a `recv`: one system call fewer a
/// round trip.
///
/// Not thread-safe: one owner thread (the host's loop thread; the runner's main thread, which
/// serialises other threads' frames through its own lock). `out`, which every frame sent writes, is
/// `@exclusivity(unchecked)`: its owner's only, and a frame's builder never reaches the channel again
/// (the unsafe ledger, docs/architecture.md); the other stored properties keep Swift's dynamic checks.
final class FrameChannel {
    let fd: Int32
    /// Frames not written yet, from `written` on.
    @exclusivity(unchecked) var out = FrameWriter()
    private var written = 0
    /// Bytes read and not cut into frames yet: `incoming[head..<tail]`.
    private var incoming: [UInt8]
    private var head = 0
    private var tail = 0

    /// The receive timeout set on the descriptor (`SO_RCVTIMEO`), in nanoseconds; 0 while none is set.
    private var receiveTimeout: UInt64 = 0

    /// How long one blocking `recv` of `readWaiting` lasts at most: the deadline is looked at between
    /// such slices, and the last stretch before it is waited for exactly (with `poll`).
    static let waitSlice: UInt64 = 20_000_000

    /// A read buffer of `count` bytes, not written: bytes are read only where `recv` put them, so its
    /// pages are touched (and, past the allocator's threshold, faulted in) as data comes, not all at
    /// once at the start (64 page faults a channel, on both sides).
    private static func freshBuffer(_ count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { _, initialized in initialized = count }
    }

    /// The read buffer's usual size; it grows for a larger frame (up to `maximumFrame`) and comes back
    /// to this once such a frame has been read (see `makeRoom`).
    static let bufferSize = 256 << 10

    init(fd: Int32) {
        self.fd = fd
        incoming = Self.freshBuffer(Self.bufferSize)
        out.bytes.reserveCapacity(Self.outputCapacity)
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0, flags & O_NONBLOCK != 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
    }

    deinit { close(fd) }

    /// Bytes waiting to be written.
    var pendingOutput: Int { out.bytes.count - written }

    // MARK: Writing

    enum WriteOutcome { case done, wouldBlock, failed(SystemCallError) }

    /// Writes what it can without blocking.
    func writeSome() -> WriteOutcome {
        if out.bytes.isEmpty { return .done }
        while written < out.bytes.count {
            let n: Int
            do throws(SystemCallError) {
                n = try systemCall("send") {
                    out.bytes.withUnsafeBytes { send(fd, $0.baseAddress! + written, $0.count - written, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                }
            } catch {
                if error.errno == EAGAIN || error.errno == EWOULDBLOCK {
                    dropWritten()
                    return .wouldBlock
                }
                return .failed(error)
            }
            if n == 0 { return .failed(SystemCallError("send", errno: EPIPE)) }
            written += n
        }
        if out.bytes.capacity <= Self.outputCapacity {
            out.bytes.removeAll(keepingCapacity: true)
        } else {
            out.bytes = []  // a large frame grew it: given back, the usual room reserved again
            out.bytes.reserveCapacity(Self.outputCapacity)
        }
        written = 0
        return .done
    }

    /// The room the output buffer keeps: what the host holds for a process before it holds its
    /// notifications (1 MiB) and a margin, reserved once — a buffer that grew by doubling would copy
    /// itself into fresh memory in the middle of a post (hundreds of µs at 1 MiB). Its pages cost
    /// memory only once written.
    static let outputCapacity = 2 << 20

    /// Drops the bytes written from the front of the buffer once they are at least 64 KiB and at least
    /// what is still to write (amortised O(1) a byte): a process that keeps taking some but never all
    /// would otherwise leave the buffer growing by all it ever took, and a post that met its doubling
    /// would copy all of it.
    private func dropWritten() {
        guard written >= 1 << 16, written * 2 >= out.bytes.count else { return }
        out.bytes.removeFirst(written)
        written = 0
    }

    // MARK: Reading

    enum ReadOutcome { case data, wouldBlock, closed, failed(SystemCallError) }

    /// Reads what has arrived (at most the free room of the buffer) without blocking.
    func readSome() -> ReadOutcome {
        makeRoom()
        guard tail < incoming.count else { return .data }  // full: cut frames out first
        let n: Int
        do throws(SystemCallError) {
            n = try systemCall("recv") {
                withIncoming { recv(fd, $0.baseAddress! + tail, $0.count - tail, Int32(MSG_DONTWAIT)) }
            }
        } catch {
            if error.errno == EAGAIN || error.errno == EWOULDBLOCK { return .wouldBlock }
            return .failed(error)
        }
        if n == 0 { return .closed }
        tail += n
        return .data
    }

    /// Waits until bytes arrive, or the other side closes, or `deadline` (monotonic nanoseconds; nil:
    /// for ever) passes, and reads what arrived. - Returns: nil when the deadline passed first.
    ///
    /// One blocking `recv` while more than `waitSlice` is left (its timeout, `SO_RCVTIMEO`, is set
    /// once, to the slice: the deadline is looked at after each slice); the last stretch is a `poll`
    /// with the exact time left, then a read. Blocks the calling thread.
    func readWaiting(until deadline: UInt64?) -> ReadOutcome? {
        makeRoom()
        guard tail < incoming.count else { return .data }
        while true {
            var wanted: UInt64 = 0  // no timeout: for ever
            if let deadline {
                let now = lcs_monotonic_ns()
                if now >= deadline { return nil }
                if deadline - now <= Self.waitSlice {
                    guard poll(Int16(POLLIN), until: deadline) != 0 else { return nil }
                    return readSome()
                }
                wanted = Self.waitSlice
            }
            switch receiveBlocking(timeout: wanted) {
            case nil: continue  // a slice ended
            case let outcome?: return outcome
            }
        }
    }

    /// Waits at most `slice` nanoseconds for bytes (one blocking `recv`; the kernel rounds the timeout
    /// up to its clock tick) and reads what arrived. - Returns: nil when none came in time.
    func readWaiting(slice: UInt64) -> ReadOutcome? {
        makeRoom()
        guard tail < incoming.count else { return .data }
        return receiveBlocking(timeout: slice)
    }

    /// One blocking `recv` into the buffer, with `SO_RCVTIMEO` set to `timeout` (0: none) unless it
    /// already is. - Returns: nil when it timed out or a signal interrupted it.
    private func receiveBlocking(timeout: UInt64) -> ReadOutcome? {
        if receiveTimeout != timeout {
            var time = timeval(tv_sec: Int(timeout / 1_000_000_000), tv_usec: Int(timeout % 1_000_000_000 / 1000))
            do throws(SystemCallError) {
                _ = try systemCall("setsockopt") { setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size)) }
            } catch { return .failed(error) }
            receiveTimeout = timeout
        }
        let n: Int
        do throws(SystemCallError) {
            // EINTR is not retried: the caller looks at its deadline again (a retried recv would wait
            // a whole slice more).
            n = try systemCall("recv", retryingEINTR: false) {
                withIncoming { recv(fd, $0.baseAddress! + tail, $0.count - tail, 0) }
            }
        } catch {
            if error.errno == EINTR || error.errno == EAGAIN || error.errno == EWOULDBLOCK { return nil }
            return .failed(error)
        }
        if n == 0 { return .closed }
        tail += n
        return .data
    }

    /// Moves unread bytes to the front, and grows the buffer when a frame announced larger than the
    /// room left is coming (never beyond one maximum frame); an empty buffer grown past four times its
    /// usual size goes back to it, so that one large archive does not hold 64 MiB for the channel's life.
    private func makeRoom() {
        if head == tail {
            head = 0
            tail = 0
            if incoming.count > 4 * Self.bufferSize { incoming = Self.freshBuffer(Self.bufferSize) }
        } else if head > 0, head * 2 >= incoming.count || incoming.count - tail < 4096 {
            withIncoming { $0.baseAddress!.copyMemory(from: $0.baseAddress! + head, byteCount: tail - head) }
            tail -= head
            head = 0
        }
        if tail - head >= 4 {
            let bytes = incoming
            let size = Int(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: head, as: UInt32.self).littleEndian })
            if size <= IsolationProtocol.maximumFrame, size > incoming.count - head { grow(to: head + size) }
        }
    }

    /// Runs `body` on the read buffer's bytes, the buffer moved out of `incoming` for the call (no copy:
    /// the property gives up its reference first). So every access to `incoming` is one read or one
    /// write, which the compiler checks statically: a `withUnsafeMutableBytes` on the property itself
    /// would make every access to it — one a frame, in `nextFrame` — a dynamic exclusivity check (~110
    /// instructions).
    private func withIncoming<R>(_ body: (UnsafeMutableRawBufferPointer) -> R) -> R {
        var buffer = incoming
        incoming = []
        defer { incoming = buffer }
        return buffer.withUnsafeMutableBytes(body)
    }

    /// Makes the buffer `count` bytes long, its bytes kept: one allocation and two block copies, so
    /// that a frame of 64 MiB costs milliseconds even in a debug build (appending element by element
    /// cost seconds there, past an isolated call's deadline).
    private func grow(to count: Int) {
        let old = incoming
        incoming = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            guard let base = buffer.baseAddress else { return }
            old.withUnsafeBytes { kept in
                if let from = kept.baseAddress { memcpy(base, from, kept.count) }
                memset(base + kept.count, 0, count - kept.count)
            }
            initialized = count
        }
    }

    /// The next complete frame, if one has arrived.
    /// - Throws: a frame whose size or kind is impossible (`acceptFromHost`: which direction is
    ///   expected); the channel is unusable afterwards.
    ///
    /// One access to the buffer a frame: its reference is read once, and the header's fields and the
    /// reader come from that copy (each read of the stored buffer is a dynamic exclusivity check,
    /// ~110 instructions, and this ran three a frame).
    func nextFrame(acceptFromHost: Bool) throws(ProtocolViolation) -> FrameReader? {
        let head = head, available = tail - head
        guard available >= 4 else { return nil }
        let bytes = incoming
        let header = bytes.withUnsafeBytes { raw in
            (size: raw.loadUnaligned(fromByteOffset: head, as: UInt32.self).littleEndian,
             kind: available >= IsolationProtocol.headerSize ? raw.loadUnaligned(fromByteOffset: head + 4, as: UInt16.self).littleEndian : 0,
             state: available >= IsolationProtocol.headerSize ? raw[head + 6] : 0,
             reserved: available >= IsolationProtocol.headerSize ? raw[head + 7] : 0)
        }
        let size = Int(header.size)
        guard size >= IsolationProtocol.headerSize, size <= IsolationProtocol.maximumFrame else {
            throw ProtocolViolation("a frame announces \(size) bytes (frames are \(IsolationProtocol.headerSize) to \(IsolationProtocol.maximumFrame) bytes)")
        }
        guard available >= size else { return nil }
        guard let kind = FrameKind(rawValue: header.kind) else {
            throw ProtocolViolation("a frame of unknown kind 0x\(String(header.kind, radix: 16)) (\(size) bytes)")
        }
        guard kind.fromHost == acceptFromHost else {
            throw ProtocolViolation("a \(kind) frame, which only the \(kind.fromHost ? "host" : "plugin's process") sends")
        }
        guard header.reserved == 0, acceptFromHost || header.state & ~IsolationProtocol.fromPluginThread == 0 else {
            throw ProtocolViolation("the \(kind) frame's reserved header bytes are not 0")
        }
        self.head = head + size
        return FrameReader(bytes, at: head, size: size, kind: kind)
    }

    /// The next frame when it is a plain notification (`PlainNotification`: a stream's usual frame),
    /// taken from the buffer in one step, with no reader made and no reference to the buffer kept; nil
    /// — nothing taken — when the next frame is anything else or not whole yet (`nextFrame` cuts it).
    /// For the runner's side (frames from the host).
    @inline(__always)
    func nextPlainNotification() -> PlainNotification? {
        let head = head
        guard tail - head >= PlainNotification.size else { return nil }
        let bytes = incoming  // one read of the property (checked statically), as in `nextFrame`
        guard let plain = bytes.withUnsafeBytes({ PlainNotification(raw: $0, at: head) }) else { return nil }
        self.head = head + PlainNotification.size
        return plain
    }

    // MARK: Waiting

    /// Waits until one of `events` (`POLLIN`, `POLLOUT`) holds or `deadline` (monotonic nanoseconds)
    /// passes. - Returns: the `poll` events seen (`POLLHUP`, `POLLERR` included), 0 on timeout.
    func poll(_ events: Int16, until deadline: UInt64?) -> Int16 {
        var pfd = pollfd(fd: fd, events: events, revents: 0)
        while true {
            if let deadline, lcs_monotonic_ns() >= deadline { return 0 }
            do throws(SystemCallError) {
                // The time left is computed again for each call (a retry after EINTR included).
                if try systemCall("poll", { Glibc.poll(&pfd, 1, Self.milliseconds(until: deadline)) }) > 0 { return pfd.revents }
            } catch {
                return Int16(POLLERR)
            }
        }
    }

    /// `poll`'s timeout for `deadline`: the milliseconds left, rounded up (0 once it has passed); -1
    /// (for ever) without one.
    private static func milliseconds(until deadline: UInt64?) -> Int32 {
        guard let deadline else { return -1 }
        let now = lcs_monotonic_ns()
        return now >= deadline ? 0 : Int32(clamping: (deadline - now + 999_999) / 1_000_000)
    }
}

/// Frames kept for later, in order (copies: the channel's buffer moves on). O(1) to add and to take.
struct FrameQueue {
    private var frames: [[UInt8]] = []
    private var head = 0

    var isEmpty: Bool { head == frames.count }

    mutating func append(_ frame: FrameReader) { frames.append(frame.frameBytes) }

    /// The oldest frame, to read again; nil when empty.
    mutating func next() -> FrameReader? {
        guard head < frames.count else { return nil }
        let frame = FrameReader(copy: frames[head])
        head += 1
        if head == frames.count {
            frames.removeAll(keepingCapacity: frames.count <= 1024)
            head = 0
        }
        return frame
    }

    mutating func removeAll() { self = FrameQueue() }
}
