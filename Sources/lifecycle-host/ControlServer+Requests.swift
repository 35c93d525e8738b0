// The control socket's request protocol: reading lines, answering them, sending the replies.
import AppLifecycle
import HostInput
import CLifecycleSystem
@preconcurrency import Glibc

extension ControlServer {
    /// How much one readiness event reads from one client before the others get their turn.
    private static let readChunk = 65536
    private static let readsPerEvent = 4

    func service(_ connection: Connection, events: IOEvents) {
        if events.contains(.writable) {
            guard flush(connection) else { return }
        }
        // Hang-up and error count as readable: the read then says what happened (end, reset).
        if connection.isReading, !connection.awaitsReply, !events.isDisjoint(with: [.readable, .hangUp, .error]) {
            receive(connection)
        } else {
            updateInterest(connection)
        }
    }

    /// Reads what is there, answers every complete line, and sends what it can.
    private func receive(_ connection: Connection) {
        var buffer = [UInt8](repeating: 0, count: Self.readChunk)
        var reachedEnd = false
        reading: for _ in 0..<Self.readsPerEvent {
            let count: Int
            do throws(SystemCallError) {
                count = try systemCall("recv") { buffer.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, 0) } }
            } catch {
                switch error.errno {
                case EAGAIN, EWOULDBLOCK: break reading
                default:
                    drop(connection)  // ECONNRESET and the like: nobody to answer.
                    return
                }
            }
            if count == 0 {
                reachedEnd = true
                break
            }
            connection.lastInput = lcs_monotonic_ns()
            connection.input.append(contentsOf: buffer[0..<count])
            if count < Self.readChunk { break }
        }
        answerLines(connection, atEnd: reachedEnd)
        if reachedEnd { connection.stopReading() }
        guard flush(connection) else { return }
        updateInterest(connection)
    }

    /// Answers each complete line of the input in order (and, at the end of the stream, the last
    /// unterminated one); enforces the length limit. The framing is `ControlFraming`'s.
    private func answerLines(_ connection: Connection, atEnd: Bool) {
        guard !connection.awaitsReply else { return }
        let end = ControlFraming.drain(connection.input, known: connection.scanned, atEnd: atEnd,
                                       while: { !closeRequested && !connection.awaitsReply }) { frame in
            let response = ControlFraming.response(to: frame) { text in
                isHandling = true
                defer { isHandling = false }
                return handler(text) { [unowned self] in
                    connection.awaitsReply = true
                    return PendingReply(server: self, connection: connection)
                }
            }
            if let response { connection.output.append(contentsOf: response) }
        }
        switch end {
        case .waiting(let consumed):
            connection.input.removeFirst(consumed)
            connection.scanned = connection.input.count
            watchUnfinishedLine(connection, newLine: consumed > 0)
        case .tooLong: turnAway(connection, ControlFraming.tooLongResponse)
        case .stopped(let consumed):
            // A reply to come: the lines answered go, the rest waits for it (`PendingReply.send`).
            guard connection.awaitsReply, !closeRequested else { break }
            connection.input.removeFirst(consumed)
            connection.scanned = 0
        }
    }

    /// The reply a `PendingReply` sends: the connection's next line, then the requests that waited
    /// behind it. [loop-thread]
    func sendLater(_ response: String, on connection: Connection) {
        guard connection.awaitsReply, connections[connection.token] === connection else { return }
        connection.awaitsReply = false
        connection.output.append(contentsOf: ControlFraming.responseBytes(response))
        answerLines(connection, atEnd: !connection.isReading)
        guard flush(connection) else { return }
        updateInterest(connection)
    }

    /// Answers `response` as the connection's last line: nothing more is read (what waits is
    /// discarded), and the connection closes once the output is sent.
    func turnAway(_ connection: Connection, _ response: String) {
        connection.output.append(contentsOf: ControlFraming.responseBytes(response))
        connection.input.removeAll()
        connection.scanned = 0
        connection.stopReading()
        connection.lineDeadline?.cancel()
        connection.lineDeadline = nil
        Self.discardInput(connection.fd)
    }

    /// Sends buffered output until done or the socket is full. Returns false if the connection is gone.
    func flush(_ connection: Connection) -> Bool {
        while connection.sent < connection.output.count {
            let sent: Int
            do throws(SystemCallError) {
                sent = try systemCall("send") {
                    connection.output.withUnsafeBytes { bytes in
                        send(connection.fd, bytes.baseAddress! + connection.sent, bytes.count - connection.sent,
                             Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
                    }
                }
            } catch {
                if error.errno == EAGAIN || error.errno == EWOULDBLOCK { return true }
                drop(connection)  // EPIPE, ECONNRESET: the client has gone.
                return false
            }
            guard sent > 0 else {
                drop(connection)
                return false
            }
            connection.sent += sent
        }
        connection.output.removeAll(keepingCapacity: connection.output.capacity <= 1 << 16)
        connection.sent = 0
        if !connection.isReading, !connection.awaitsReply {
            drop(connection)  // Everything said; the client ended or is being turned away.
            return false
        }
        return true
    }

    /// Waits for writability while output waits (and stops reading meanwhile), else for input.
    func updateInterest(_ connection: Connection) {
        let wanted: IOEvents
        if connection.sent < connection.output.count {
            wanted = .writable
        } else if connection.awaitsReply {
            wanted = []  // nothing read until the reply: the requests behind it wait in the socket
        } else if connection.isReading {
            wanted = .readable
        } else {
            drop(connection)
            return
        }
        do {
            try connection.source?.setIOEvents(wanted)
        } catch {
            drop(connection)
        }
    }

    func drop(_ connection: Connection) {
        guard connections.removeValue(forKey: connection.token) != nil else { return }
        connection.source?.cancel()
        connection.source = nil
        connection.lineDeadline?.cancel()
        connection.lineDeadline = nil
        _ = Glibc.close(connection.fd)
    }
}

/// One client connection of a `ControlServer`. [loop-thread]
final class Connection {
    let fd: Int32
    let token: UInt64
    /// Bytes received and not yet answered (at most one partial line between events).
    var input: [UInt8] = []
    /// How many bytes at the start of `input` are known to hold no line feed: the next search starts
    /// after them (a line arriving a byte at a time is searched once, not once per byte).
    var scanned = 0
    /// Response bytes not yet sent, from `sent` on.
    var output: [UInt8] = []
    var sent = 0
    /// False once the client ended its stream or a request was too long: no more requests are taken,
    /// and the connection closes when `output` is sent.
    private(set) var isReading = true
    /// The connection's IO source: `.readable`, or `.writable` while output waits.
    var source: LoopSource?
    /// When bytes last came (`lcs_monotonic_ns`; its accept until the first): the idlest is closed
    /// first when the server is full.
    var lastInput: UInt64
    /// While `input` holds an unfinished line: the timer that turns the connection away at
    /// `ControlFraming.lineTimeout` after that line's first byte.
    var lineDeadline: LoopSource?

    init(fd: Int32, token: UInt64) {
        self.fd = fd
        self.token = token
        lastInput = lcs_monotonic_ns()
    }

    /// Nothing half-received, nothing unsent, still taking requests: closing it loses nothing.
    var isIdle: Bool { isReading && !awaitsReply && input.isEmpty && sent >= output.count }
    /// A request's reply is to come (`PendingReply`): nothing more is answered or read until then.
    var awaitsReply = false

    func stopReading() { isReading = false }
}
