// The control socket's framing, without the socket: request lines out of a connection's bytes, a
// response as the bytes sent, and a response read back by the client.

/// How the control socket cuts a connection's bytes into requests and sends its responses
/// (docs/host.md, "The control socket", Protocol). `ControlServer` and `ControlClient` frame with it;
/// it does no IO.
package enum ControlFraming {
    /// The longest request, in bytes before its line feed.
    package static let maxRequestLength = 65536
    /// The longest response the client reads, in bytes before its line feed (16 MiB: a `status` of a
    /// thousand plugins is well under 1 MiB).
    package static let maxResponseLength = 16 << 20
    /// The response to a request that is not valid UTF-8 (the connection stays open).
    package static let notUTF8Response = "error: request is not UTF-8"
    /// The response to a request over `maxRequestLength` (the server then closes the connection).
    package static let tooLongResponse = "error: request too long"
    /// The most client connections a server holds at once.
    package static let maxConnections = 64
    /// How long a request line may take from its first byte to its line feed (`unfinishedResponse`).
    package static let lineTimeout: Duration = .seconds(5)
    /// The response to a request line not finished within `lineTimeout` (the server then closes the connection).
    package static let unfinishedResponse = "error: request not finished within \(lineTimeout.components.seconds) s"
    /// The response to a client that finds `maxConnections` connections open and none idle (then closed).
    package static let busyResponse = "error: too many connections (at most \(maxConnections))"
    /// The last line of the connection idle longest, closed to make room for a new client.
    package static let evictedResponse = "error: closed to make room: at most \(maxConnections) connections, and this one was idle longest"

    /// One complete line of a connection's input.
    package enum Frame: Equatable, Sendable {
        /// A request for the handler: the line without its line feed and without a CR before it.
        case request(String)
        /// Empty, or only spaces and tabs: ignored, no response.
        case blank
        /// Not valid UTF-8: answered with `notUTF8Response`.
        case notUTF8
    }

    /// What `scan` found at a position of the input.
    package enum Scan: Equatable, Sendable {
        /// A line, and the index where the input after it begins.
        case frame(Frame, next: Int)
        /// The line there is longer than `maxRequestLength`: answer `tooLongResponse` and stop reading.
        case tooLong
        /// No complete line yet: keep `input[start...]` and wait for more bytes.
        case needMore
    }

    /// The line at `input[start...]`.
    ///
    /// A line ends with a line feed; at the end of the stream (`atEnd`, the client shut down its
    /// writing side) the bytes after the last line feed are a line too. A line over `maxRequestLength`
    /// is `.tooLong` as soon as that many bytes are there without a line feed. `known`: how many bytes
    /// from `start` on are already known to hold no line feed (looked at by an earlier call), so that
    /// a line arriving a byte at a time costs each byte one look, not one per arrival.
    ///
    /// [thread-safe] Looks at most at `maxRequestLength + 1 - known` bytes.
    package static func scan(_ input: [UInt8], from start: Int, known: Int = 0, atEnd: Bool) -> Scan {
        guard start >= 0, start <= input.count else { return .needMore }
        let end = min(input.count, start + maxRequestLength + 1)
        let searched = min(end, start + max(0, known))
        if let newline = input[searched..<end].firstIndex(of: 10) {
            return .frame(frame(input[start..<newline]), next: newline + 1)
        }
        if end - start > maxRequestLength { return .tooLong }
        if atEnd, start < input.count { return .frame(frame(input[start...]), next: input.count) }
        return .needMore
    }

    /// How `drain` stopped.
    package enum DrainEnd: Equatable, Sendable {
        /// Every complete line was answered; the bytes from `consumed` on are a partial line to keep
        /// (none of them a line feed: pass their count as the next drain's `known`).
        case waiting(consumed: Int)
        /// `proceed()` turned false (the server is closing, or a reply is to come); nothing more is
        /// answered. The lines answered end at `consumed`.
        case stopped(consumed: Int)
        /// A line was over `maxRequestLength`: answer `tooLongResponse` and stop reading.
        case tooLong
    }

    /// Answers the lines of `input` in order, as `scan` finds them, while `proceed()` holds.
    ///
    /// [thread-safe] `answer` gets each frame (blank ones too) before the next is looked for. `known`:
    /// how many bytes at the start of `input` are known to hold no line feed (the partial line an
    /// earlier drain left, `.waiting`): each byte of a connection is looked at once in all.
    package static func drain(_ input: [UInt8], known: Int = 0, atEnd: Bool, while proceed: () -> Bool,
                              answer: (Frame) -> Void) -> DrainEnd {
        var start = 0
        var skip = known
        while proceed() {
            switch scan(input, from: start, known: skip, atEnd: atEnd) {
            case .needMore: return .waiting(consumed: start)
            case .tooLong: return .tooLong
            case .frame(let frame, let next):
                answer(frame)
                start = next
                skip = 0
            }
        }
        return .stopped(consumed: start)
    }

    /// The bytes that answer `frame`: nil for a blank line, and for a request the handler answers
    /// later (it returned nil); the handler's response to a request.
    package static func response(to frame: Frame, handler: (String) -> String?) -> [UInt8]? {
        switch frame {
        case .blank: return nil
        case .notUTF8: return responseBytes(notUTF8Response)
        case .request(let text): return handler(text).map(responseBytes)
        }
    }

    /// A line's bytes (without its line feed) as a frame: a CR before the line feed is dropped.
    private static func frame(_ raw: ArraySlice<UInt8>) -> Frame {
        var line = raw
        if line.last == 13 { line = line.dropLast() }
        if line.allSatisfy({ $0 == 32 || $0 == 9 }) { return .blank }
        guard let text = String(validating: line, as: UTF8.self) else { return .notUTF8 }
        return .request(text)
    }

    /// The bytes sent for `response`: its UTF-8 with every CR and LF made a space, then a line feed,
    /// so that one response is always exactly one line.
    package static func responseBytes(_ response: String) -> [UInt8] {
        var bytes = response.utf8.map { $0 == 10 || $0 == 13 ? 32 : $0 }
        bytes.append(10)
        return bytes
    }

    /// The client's side: bytes of the server's stream in, the first response line out.
    ///
    /// Keeps at most `maxResponseLength` bytes; the bytes after the first line feed are not looked at.
    /// Invalid UTF-8 in a response is read as U+FFFD (the client prints it).
    package struct ResponseReader: Sendable {
        private var pending: [UInt8] = []

        /// What the bytes read so far make.
        package enum Progress: Equatable, Sendable {
            /// The response line (without its line feed).
            case line(String)
            /// Over `maxResponseLength` bytes without a line feed.
            case tooLong
            /// No line feed yet.
            case needMore
        }

        package init() {}

        /// Adds the next bytes of the stream. After `.line` or `.tooLong`, stop feeding.
        ///
        /// [thread-safe for a value used on one thread] O(count of `bytes`).
        package mutating func append(_ bytes: ArraySlice<UInt8>) -> Progress {
            if let newline = bytes.firstIndex(of: 10) {
                guard pending.count + (newline - bytes.startIndex) <= maxResponseLength else { return .tooLong }
                pending.append(contentsOf: bytes[..<newline])
                return .line(String(decoding: pending, as: UTF8.self))
            }
            guard pending.count + bytes.count <= maxResponseLength else { return .tooLong }
            pending.append(contentsOf: bytes)
            return .needMore
        }
    }
}
