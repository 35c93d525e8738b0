@preconcurrency import Glibc

// Printing the results: one block per row as it is measured, a summary table at the end.

func printRow(_ row: Row) {
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

func printSummary(_ rows: [Row]) {
    print("\nsummary")
    for row in rows {
        let verdict = row.met.map { $0 ? "met   " : "MISSED" } ?? "–     "
        print("  \(verdict) [\(row.group)] \(row.name): \(row.ours.text); \(row.ratios)")
    }
}

/// The table as Markdown: case, ours, anchors, ratio, target, verdict.
func markdownTable(_ rows: [Row]) -> String {
    var out = "| case | ours | measured beside it | ratio | target | |\n|---|---|---|---|---|---|\n"
    for row in rows {
        let anchors = row.anchors.map { "\($0.label): \($0.figure.text)\($0.figure.note.map { " (\($0))" } ?? "")" }.joined(separator: "<br>")
        var ours = row.ours.text
        if let instructions = row.instructions { ours += "<br>\(Figure.format(instructions)) instr/op" }
        let verdict = row.met.map { $0 ? "met" : "**missed**" } ?? ""
        out += "| \(row.group): \(row.name) | \(ours) | \(anchors) | \(row.ratios) | \(row.target) | \(verdict) |\n"
    }
    return out
}

func writeMarkdown(_ rows: [Row], to path: String) {
    let text = markdownTable(rows)
    guard let file = fopen(path, "w") else {
        fputs("lifecycle-bench: cannot write \(path)\n", stderr)
        return
    }
    fputs(text, file)
    fclose(file)
}
