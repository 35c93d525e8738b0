// The control socket's bounds in time and number: an unfinished request line times out, and the
// connections are at most `ControlFraming.maxConnections`, shared fairly.
import AppLifecycle
import CLifecycleSystem
@preconcurrency import Glibc
import HostInput

/// Guarantees (docs/host.md, "The control socket"):
/// - **A line is finished in time.** A request line must reach its line feed within
///   `ControlFraming.lineTimeout` (5 s) of its first byte; otherwise the connection gets
///   `ControlFraming.unfinishedResponse` and is closed (after the answers already due). The time the
///   server itself stops reading — while answers wait for the client to read them — does not count:
///   at the deadline such a connection gets another `lineTimeout`. A connection with nothing
///   unfinished has no deadline, however long it stays quiet.
/// - **Connections are bounded.** At most `ControlFraming.maxConnections` (64) at once, so the partial
///   lines held are at most 64 × 64 KiB. A client beyond them takes the place of the connection idle
///   longest (nothing half-received, nothing unsent), which gets `ControlFraming.evictedResponse` and
///   is closed; when none is idle, the new client gets `ControlFraming.busyResponse` and is closed.
/// Every timer is one per connection with an unfinished line, none otherwise: an idle host is not woken.
extension ControlServer {
    /// After a read: arms the connection's line deadline when it holds an unfinished line (again from
    /// now when `newLine`: a line was completed, so what is held began in this read), cancels it when
    /// it holds none. [loop-thread]
    func watchUnfinishedLine(_ connection: Connection, newLine: Bool) {
        guard connection.isReading, !connection.input.isEmpty else {
            connection.lineDeadline?.cancel()
            connection.lineDeadline = nil
            return
        }
        guard newLine || connection.lineDeadline == nil else { return }
        armLineDeadline(connection)
    }

    /// (Re)starts the connection's line deadline: `lineTimeout` from now. [loop-thread]
    private func armLineDeadline(_ connection: Connection) {
        connection.lineDeadline?.cancel()
        connection.lineDeadline = loop.addRealTimeTimer(after: ControlFraming.lineTimeout) { [weak self, weak connection] in
            guard let self, let connection, connections[connection.token] === connection else { return }
            connection.lineDeadline = nil
            // Not reading meanwhile (answers wait for the client): the rest of the line may be unread.
            if connection.sent < connection.output.count { return armLineDeadline(connection) }
            turnAway(connection, ControlFraming.unfinishedResponse)
            guard flush(connection) else { return }
            updateInterest(connection)
        }
    }

    /// Before accepting one more client: true when there is room (the idlest connection was closed to
    /// make it, if need be); false when all `maxConnections` are busy. [loop-thread]
    func makeRoomForAClient() -> Bool {
        guard connections.count >= ControlFraming.maxConnections else { return true }
        let idle = connections.values.filter(\.isIdle)
        guard let idlest = idle.min(by: { ($0.lastInput, $0.token) < ($1.lastInput, $1.token) }) else { return false }
        Self.sendLast(idlest.fd, ControlFraming.evictedResponse)
        drop(idlest)
        return true
    }

    /// Sends `response` as one line without waiting (best effort: the socket is closed after it).
    static func sendLast(_ fd: Int32, _ response: String) {
        let bytes = ControlFraming.responseBytes(response)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
    }
}
