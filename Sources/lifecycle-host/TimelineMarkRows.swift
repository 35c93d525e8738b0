// Lays out marks at instants with a name beside each (the timeline's actions and plugin failures).

/// Where each mark of a row block goes: its row and its name, so that no name overlaps another mark's
/// name or marker.
///
/// Guarantees: each mark takes the first of at most `maxRows` rows where its marker and its name
/// (after the marker, or before it when it would pass the picture's right edge; shortened with "…" to
/// `maxLabelWidth`) clear everything already in that row by 6 px; a mark no row can hold with its name
/// keeps its marker, in the row that frees first, without a name (its `<title>` still has it).
struct TimelineMarkRows {
    /// One mark's place: its row, its x (pixels), and its name on row 0's baseline, if shown.
    struct Place: Equatable {
        let row: Int
        let x: Double
        let label: TimelineLabel?
    }

    let places: [Place]
    /// Rows used (0 when there are no marks).
    let rows: Int

    /// - Parameters:
    ///   - marks: each mark's x in pixels and its name, in time order.
    ///   - halfWidth: how far the marker reaches either side of its x.
    ///   - size: the names' font size.
    ///   - rightEdge: where names must end (the picture's width less a margin).
    init(_ marks: [(x: Double, name: String)], halfWidth: Double, size: Double, maxRows: Int, rightEdge: Double, maxLabelWidth: Double) {
        var rows = TimelineRows(maxRows: maxRows, gap: 6)
        var places: [Place] = []
        places.reserveCapacity(marks.count)
        for mark in marks {
            let name = TimelineText.clip(mark.name, toWidth: maxLabelWidth, size: size)
            let x0 = mark.x - halfWidth, x1 = mark.x + halfWidth
            var label: TimelineLabel?
            if !name.isEmpty {
                let after = TimelineLabel(name, x: x1 + 3, baseline: 0, size: size)
                label = after.box.maxX <= rightEdge ? after : TimelineLabel(name, x: x0 - 3, baseline: 0, size: size, anchor: .end)
            }
            if let label, let row = rows.place(min(x0, label.box.minX), max(x1, label.box.maxX)) {
                places.append(Place(row: row, x: mark.x, label: label))
            } else {
                let row = rows.place(x0, x1) ?? rows.force(x1)
                places.append(Place(row: row, x: mark.x, label: nil))
            }
        }
        self.places = places
        self.rows = rows.count
    }
}
