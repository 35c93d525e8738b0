/// One entry of a recording (docs/recording.md, "The format"): the clock's moves, the run's inputs in
/// the order they ran, and its trace lines.
package enum RecordingEntry: Equatable, Sendable {
    /// The loop's clock moved to this many nanoseconds after the loop's start.
    case clock(nanoseconds: UInt64)
    /// A scenario line ran (`FILE:LINE`, its text).
    case script(location: String, text: String)
    /// The scenario had no more lines.
    case scriptEnd
    /// A line typed at the prompt.
    case typed(String)
    /// Standard input ended.
    case stdinClosed
    /// A control-socket request and the response it got.
    case socket(request: String, response: String)
    /// An OS event: its command (scenario syntax) and origin.
    case os(command: String, origin: RecordedOSOrigin)
    /// Work from a plugin's own thread (`ForeignInput.Kind.description`: `post NAME`, `work PLUGIN`, …).
    case foreign(String)
    /// The host looked whether the run is over.
    case finishCheck
    /// A trace line.
    case trace(RecordedTraceLine)
}

/// An OS event's origin as a recording keeps it.
package enum RecordedOSOrigin: Equatable, Sendable {
    /// A signal, by number (1 to 64), and the process that sent it (0: the kernel).
    case signal(Int32, sender: Int32)
    /// Memory pressure: critical or a warning.
    case pressure(critical: Bool)
    /// The realtime clock was set.
    case clock
    /// Any other (logind's, the thermal zones'), by its words.
    case other(description: String)
}

/// A trace line as a recording keeps it: its number, its time on the loop's clock (nanoseconds after
/// the loop's start), its fields.
package struct RecordedTraceLine: Equatable, Sendable {
    package var seq: UInt64
    package var time: UInt64
    package var kind: String
    package var name: String
    package var state: String
    package var plugin: String?
    package var detail: String?
    package var scene: String?

    package init(seq: UInt64, time: UInt64, kind: String, name: String, state: String, plugin: String?, detail: String?, scene: String?) {
        self.seq = seq
        self.time = time
        self.kind = kind
        self.name = name
        self.state = state
        self.plugin = plugin
        self.detail = detail
        self.scene = scene
    }
}

// MARK: Lines

extension RecordingEntry {
    /// The entry's fields, its record name first (unescaped; `nil` for an absent field).
    var fields: [String?] {
        switch self {
        case .clock(let ns): ["clock", String(ns)]
        case .script(let location, let text): ["script", location, text]
        case .scriptEnd: ["script-end"]
        case .typed(let text): ["typed", text]
        case .stdinClosed: ["stdin-closed"]
        case .socket(let request, let response): ["socket", request, response]
        case .os(let command, let origin):
            switch origin {
            case .signal(let signo, let sender): ["os", command, "signal", String(signo), "signal \(signo)", String(sender)]
            case .pressure(let critical): ["os", command, "pressure", critical ? "critical" : "warning", "psi \(critical ? "critical" : "warning")", nil]
            case .clock: ["os", command, "clock", nil, "clock", nil]
            case .other(let description): ["os", command, "other", nil, description, nil]
            }
        case .foreign(let what): ["foreign", what]
        case .finishCheck: ["finish-check"]
        case .trace(let line):
            ["trace", String(line.seq), String(line.time), line.kind, line.name, line.state, line.plugin, line.detail, line.scene]
        }
    }

    /// The entry of a line's fields (`fields[0]` its record name), or why they are not one.
    init(fields: [String?]) throws(RecordLineError) {
        func text(_ index: Int) throws(RecordLineError) -> String {
            guard let value = fields[index] else { throw RecordLineError("field \(index + 1) of a '\(fields[0] ?? "")' record is absent") }
            return value
        }
        func count(_ n: Int) throws(RecordLineError) {
            guard fields.count == n else {
                throw RecordLineError("a '\(fields[0] ?? "")' record has \(fields.count - 1) fields, not \(n - 1)")
            }
        }
        switch fields[0] {
        case "clock":
            try count(2)
            self = .clock(nanoseconds: try RecordLine.number(try text(1), UInt64.self, "clock"))
        case "script":
            try count(3)
            self = .script(location: try text(1), text: try text(2))
        case "script-end":
            try count(1)
            self = .scriptEnd
        case "typed":
            try count(2)
            self = .typed(try text(1))
        case "stdin-closed":
            try count(1)
            self = .stdinClosed
        case "socket":
            try count(3)
            self = .socket(request: try text(1), response: try text(2))
        case "os":
            try count(6)
            let command = try text(1), words = try text(4)
            switch try text(2) {
            case "signal":
                let signo = try RecordLine.number(try text(3), Int32.self, "signal")
                guard (1...64).contains(signo) else { throw RecordLineError("signal \(signo) is not 1 to 64") }
                let sender = try RecordLine.number(try text(5), Int32.self, "sender")
                guard sender >= 0 else { throw RecordLineError("sender \(sender) is not a process id") }
                self = .os(command: command, origin: .signal(signo, sender: sender))
            case "pressure":
                guard fields[5] == nil else { throw RecordLineError("a pressure origin has a sender") }
                switch try text(3) {
                case "warning": self = .os(command: command, origin: .pressure(critical: false))
                case "critical": self = .os(command: command, origin: .pressure(critical: true))
                case let other: throw RecordLineError("pressure level '\(other)' is not warning or critical")
                }
            case "clock":
                guard fields[3] == nil, fields[5] == nil else { throw RecordLineError("a clock origin has a value") }
                self = .os(command: command, origin: .clock)
            case "other":
                guard fields[3] == nil, fields[5] == nil else { throw RecordLineError("an other origin has a value") }
                self = .os(command: command, origin: .other(description: words))
            case let kind: throw RecordLineError("origin kind '\(kind)' is not signal, pressure, clock or other")
            }
        case "foreign":
            try count(2)
            self = .foreign(try text(1))
        case "finish-check":
            try count(1)
            self = .finishCheck
        case "trace":
            try count(9)
            self = .trace(RecordedTraceLine(seq: try RecordLine.number(try text(1), UInt64.self, "seq"),
                                            time: try RecordLine.number(try text(2), UInt64.self, "time"),
                                            kind: try text(3), name: try text(4), state: try text(5),
                                            plugin: fields[6], detail: fields[7], scene: fields[8]))
        case let name: throw RecordLineError("an unknown record '\(name ?? "-")'")
        }
    }
}

/// What is wrong with one line.
struct RecordLineError: Error {
    let why: String
    init(_ why: String) { self.why = why }
}

/// A line's fields: TAB-separated, escaped (docs/recording.md).
enum RecordLine {
    /// The line (without its LF) of `fields`.
    static func encode(_ fields: [String?]) -> String {
        var line = ""
        for (index, field) in fields.enumerated() {
            if index > 0 { line += "\t" }
            guard let field else {
                line += "-"
                continue
            }
            if field == "-" {
                line += "\\-"
                continue
            }
            for scalar in field.unicodeScalars {
                switch scalar {
                case "\\": line += "\\\\"
                case "\t": line += "\\t"
                case "\n": line += "\\n"
                case "\r": line += "\\r"
                default:
                    if scalar.value < 0x20 || scalar.value == 0x7F {
                        let hex = String(scalar.value, radix: 16)
                        line += "\\x" + (hex.count == 1 ? "0" + hex : hex)
                    } else {
                        line.unicodeScalars.append(scalar)
                    }
                }
            }
        }
        return line
    }

    /// The fields of a line (UTF-8, without its LF); at most `maxFields`.
    static func decode(_ line: String) throws(RecordLineError) -> [String?] {
        var fields: [String?] = []
        for raw in line.split(separator: "\t", omittingEmptySubsequences: false) {
            guard fields.count < maxFields else { throw RecordLineError("more than \(maxFields) fields") }
            if raw == "-" {
                fields.append(nil)
                continue
            }
            var out = ""
            var scalars = raw.unicodeScalars.makeIterator()
            while let scalar = scalars.next() {
                guard scalar == "\\" else {
                    guard scalar.value >= 0x20, scalar.value != 0x7F else {
                        throw RecordLineError("a control character (0x\(String(scalar.value, radix: 16))) not escaped")
                    }
                    out.unicodeScalars.append(scalar)
                    continue
                }
                switch scalars.next() {
                case "\\": out += "\\"
                case "t": out += "\t"
                case "n": out += "\n"
                case "r": out += "\r"
                case "-": out += "-"
                case "x":
                    guard let high = scalars.next(), let low = scalars.next(), let value = UInt8(String([Character(high), Character(low)]), radix: 16),
                          value < 0x20 || value == 0x7F
                    else { throw RecordLineError("a \\x escape without two hex digits of a control character") }
                    out.unicodeScalars.append(Unicode.Scalar(value))
                case let other: throw RecordLineError("an unknown escape '\\\(other.map { String($0) } ?? "")'")
                }
            }
            fields.append(out)
        }
        return fields
    }

    static let maxFields = 64

    /// A decimal number of `type`: digits only, in range.
    static func number<T: FixedWidthInteger>(_ text: String, _ type: T.Type, _ what: String) throws(RecordLineError) -> T {
        guard !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) || (T.isSigned && text.first == "-"),
              let value = T(text)
        else { throw RecordLineError("\(what) '\(text)' is not a number in range") }
        return value
    }
}
