/// Bytes in, complete lines out, each at most `maxLineBytes` long: the prompt's standard input.
///
/// A line longer than the limit is reported once as `.tooLong` and the rest of it, up to its line
/// feed, is thrown away as it arrives, so a line without end costs at most `maxLineBytes` of memory.
/// A CR before the LF is dropped. Costs O(bytes) per chunk: each byte is looked at once.
struct LineReader {
    /// The longest line, in bytes before its line feed (as for a control-socket request).
    static let maxLineBytes = 65536

    enum Line: Equatable {
        case text(String)
        /// A line over the limit (its text is not kept).
        case tooLong
    }

    private var pending: [UInt8] = []
    /// The current line went over the limit: drop bytes until its line feed.
    private var discarding = false

    /// The lines that `bytes` completes, in order.
    mutating func append(_ bytes: ArraySlice<UInt8>) -> [Line] {
        var lines: [Line] = []
        var start = bytes.startIndex
        while start < bytes.endIndex {
            guard let newline = bytes[start...].firstIndex(of: 10) else {
                keep(bytes[start...], into: &lines)
                break
            }
            keep(bytes[start..<newline], into: &lines)
            if discarding {
                discarding = false
            } else {
                if pending.last == 13 { pending.removeLast() }
                lines.append(pending.count > Self.maxLineBytes ? .tooLong : .text(String(decoding: pending, as: UTF8.self)))
            }
            pending.removeAll(keepingCapacity: true)
            start = newline + 1
        }
        return lines
    }

    /// Adds part of a line, switching to discarding when it goes over the limit.
    private mutating func keep(_ part: ArraySlice<UInt8>, into lines: inout [Line]) {
        guard !discarding else { return }
        guard pending.count + part.count <= Self.maxLineBytes + 1 else {  // + 1: room for a CR before the LF
            pending.removeAll()
            discarding = true
            lines.append(.tooLong)
            return
        }
        pending.append(contentsOf: part)
    }
}
