@preconcurrency import Glibc
import Foundation

// Printing the results: one block per row as it is measured, a summary table at the end, the Markdown
// table for docs/benchmarks.md, and rows as JSON lines between the bench's processes.

public func printRow(_ row: Row) {
    var lines = ["[\(row.group)] \(row.name)", "  ours:   \(row.ours.text)\(row.ours.note.map { " [\($0)]" } ?? "")"]
    for anchor in row.anchors {
        lines.append("  \(anchor.label): \(anchor.figure.text)\(anchor.figure.note.map { " [\($0)]" } ?? "")")
    }
    if let instructions = row.instructions { lines.append("  instructions/op (callgrind): \(Figure.format(instructions))") }
    lines.append("  ratio:  \(row.ratios)")
    lines.append("  target: \(row.target)\(row.met.map { $0 ? "  met" : "  MISSED" } ?? "")")
    print(lines.joined(separator: "\n"))
    fflush(stdout)
}

public func printSummary(_ rows: [Row]) {
    print("\nsummary")
    for row in rows {
        let verdict = row.met.map { $0 ? "met   " : "MISSED" } ?? "–     "
        print("  \(verdict) [\(row.group)] \(row.name): \(row.ours.text); \(row.ratios)")
    }
}

/// The table as Markdown: case, ours, anchors, ratio, target, verdict.
public func markdownTable(_ rows: [Row]) -> String {
    var out = "| case | ours | measured beside it | ratio | target | |\n|---|---|---|---|---|---|\n"
    for row in rows {
        let anchors = row.anchors.map { "\($0.label): \($0.figure.text)\($0.figure.note.map { " (\($0))" } ?? "")" }.joined(separator: "<br>")
        var ours = row.ours.text
        if let note = row.ours.note { ours += " (\(note))" }
        if let instructions = row.instructions { ours += "<br>\(Figure.format(instructions)) instr/op" }
        let verdict = row.met.map { $0 ? "met" : "**missed**" } ?? ""
        out += "| \(row.group): \(row.name) | \(ours) | \(anchors) | \(row.ratios) | \(row.target) | \(verdict) |\n"
    }
    return out
}

public func writeFile(_ text: String, to path: String) -> Bool {
    guard let file = fopen(path, "w") else {
        warn("lifecycle-bench: cannot write \(path)")
        return false
    }
    fputs(text, file)
    fclose(file)
    return true
}

// MARK: Rows between processes

/// The prefix of a row's line on a child bench's standard output (other lines are ignored).
public let rowLinePrefix = "row "

private struct AnchorRecord: Codable {
    var label: String
    var figure: Figure
}

private struct RowRecord: Codable {
    var group: String
    var name: String
    var ours: Figure
    var anchors: [AnchorRecord]
    var target: String
    var met: Bool?
    var ratios: String
    var instructions: Double?
}

extension Row {
    /// The row as one line: `row ` and its JSON.
    public var line: String {
        let record = RowRecord(group: group, name: name, ours: ours, anchors: anchors.map { AnchorRecord(label: $0.label, figure: $0.figure) },
                               target: target, met: met, ratios: ratios, instructions: instructions)
        let data = (try? JSONEncoder().encode(record)) ?? Data()
        return rowLinePrefix + String(decoding: data, as: UTF8.self)
    }

    /// A row from its line; nil when the line is not one.
    public init?(line: Substring) {
        guard line.hasPrefix(rowLinePrefix),
              let record = try? JSONDecoder().decode(RowRecord.self, from: Data(line.dropFirst(rowLinePrefix.count).utf8))
        else { return nil }
        self.init(group: record.group, name: record.name, ours: record.ours, anchors: record.anchors.map { ($0.label, $0.figure) },
                  target: record.target, met: record.met, ratios: record.ratios, instructions: record.instructions)
    }
}
