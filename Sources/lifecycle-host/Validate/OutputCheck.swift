/// The `output` check: what a step's standard output holds — the JSON trace (`TraceWriter`, one line
/// a record, `{"t":…,"seq":N,…}` with N counting from 1) and whatever the plugin printed — read as a
/// program reading the trace reads it. The plugin's printing is fine as long as it leaves the trace
/// readable: whole lines of UTF-8 text without control characters, none starting with `{` or `[`
/// (a reader would take it for a record). Every trace line must come through whole, in order: a
/// missing `seq` means the plugin wrote into the middle of a line (output without a line feed, or a
/// buffer flushed in the middle of one).
///
/// O(n) in the bytes; at most one finding of each kind, with the first example (at most 60 characters).
enum OutputCheck {
    static func findings(_ output: [UInt8], truncated: Bool) -> [String] {
        var findings: [String] = []
        func once(_ text: String) { if !findings.contains(where: { $0.hasPrefix(String(text.prefix(40))) }) { findings.append(text) } }
        func sample(_ bytes: ArraySlice<UInt8>) -> String {
            let text = String(decoding: bytes.prefix(60), as: UTF8.self)
            return "'" + String(text.map { $0.isASCII && ($0.asciiValue! < 0x20 || $0.asciiValue! == 0x7F) ? "?" : $0 }) + "'"
        }
        var expected: UInt64 = 1
        var start = output.startIndex
        while start < output.endIndex {
            guard let end = output[start...].firstIndex(of: 0x0A) else {
                if !truncated { once("its output ends without a line feed: \(sample(output[start...]))") }
                break
            }
            let line = output[start..<end]
            start = end + 1
            if let seq = traceSequence(line) {
                if seq == expected {
                    expected += 1
                } else if seq > expected {
                    once("trace lines \(expected)…\(seq - 1) were broken: the plugin wrote into the middle of a line (output without a line feed, or not flushed)")
                    expected = seq + 1
                } else {
                    once("a line that reads as trace record \(seq) is not the host's: \(sample(line))")
                }
                continue
            }
            if let glued = find(Array("{\"t\":".utf8), in: line) {
                once("its output \(sample(line[line.startIndex..<glued])) was glued to the start of a trace line: it printed without a line feed")
                if let seq = traceSequence(line[glued...]), seq >= expected { expected = seq + 1 }
                continue
            }
            if String(validating: line, as: UTF8.self) == nil {
                once("it wrote bytes that are not UTF-8: \(sample(line))")
            } else if line.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
                once("it wrote control characters (a carriage return, a terminal escape): \(sample(line))")
            } else if line.first == UInt8(ascii: "{") || line.first == UInt8(ascii: "[") {
                once("it printed a line a reader of the trace would take for JSON: \(sample(line))")
            }
        }
        if truncated { findings.append("it wrote more than \(StepProcess.maximumOutput) bytes to standard output in one sequence") }
        return findings
    }

    /// N of a line `{"t":DIGITS.DIGITS,"seq":N,"kind":"…` (the trace writer's form), else nil.
    private static func traceSequence(_ line: ArraySlice<UInt8>) -> UInt64? {
        let prefix = Array("{\"t\":".utf8), middle = Array(",\"seq\":".utf8), tail = Array(",\"kind\":\"".utf8)
        guard line.starts(with: prefix), line.last == UInt8(ascii: "}") else { return nil }
        var index = line.startIndex + prefix.count
        while index < line.endIndex, line[index] == UInt8(ascii: ".") || (line[index] >= 0x30 && line[index] <= 0x39) { index += 1 }
        guard line[index...].starts(with: middle) else { return nil }
        index += middle.count
        var seq: UInt64 = 0
        let digits = index
        while index < line.endIndex, line[index] >= 0x30 && line[index] <= 0x39, index - digits < 18 {
            seq = seq * 10 + UInt64(line[index] - 0x30)
            index += 1
        }
        guard index > digits, line[index...].starts(with: tail) else { return nil }
        return seq
    }

    private static func find(_ needle: [UInt8], in line: ArraySlice<UInt8>) -> ArraySlice<UInt8>.Index? {
        guard line.count >= needle.count else { return nil }
        var index = line.startIndex
        while index + needle.count <= line.endIndex {
            if line[index..<index + needle.count].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
