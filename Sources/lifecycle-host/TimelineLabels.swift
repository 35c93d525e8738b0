// The timeline's texts: how wide each is, the box it covers, and rows that keep labels apart.

/// One text the timeline draws, with the box it covers.
///
/// Every `<text>` of the picture is made from one of these (`TimelineDrawing.draw()` returns them
/// beside the SVG), so the boxes a test checks are the ones the renderer placed.
struct TimelineLabel: Equatable {
    enum Anchor: String {
        case start, middle, end
    }

    let text: String
    /// The anchor point: where `anchor` of the text sits, on the baseline.
    let x: Double
    let baseline: Double
    let size: Double
    let anchor: Anchor
    let bold: Bool

    init(_ text: String, x: Double, baseline: Double, size: Double, anchor: Anchor = .start, bold: Bool = false) {
        self.text = text
        self.x = x
        self.baseline = baseline
        self.size = size
        self.anchor = anchor
        self.bold = bold
    }

    /// The box the text covers in the picture's font (DejaVu Sans, the first of the SVG's families):
    /// its advance width, from the font's ascent above the baseline to its descent below it.
    var box: TimelineBox {
        let width = TimelineText.width(text, size: size, bold: bold)
        let minX: Double
        switch anchor {
        case .start: minX = x
        case .middle: minX = x - width / 2
        case .end: minX = x - width
        }
        return TimelineBox(minX: minX, minY: baseline - TimelineText.ascent * size,
                           maxX: minX + width, maxY: baseline + TimelineText.descent * size)
    }
}

/// An axis-aligned box in picture coordinates.
struct TimelineBox: Equatable {
    var minX: Double
    var minY: Double
    var maxX: Double
    var maxY: Double

    /// Whether the two boxes share any area (touching edges do not count).
    func intersects(_ other: TimelineBox) -> Bool {
        minX < other.maxX && other.minX < maxX && minY < other.maxY && other.minY < maxY
    }
}

/// Text measurement in DejaVu Sans, the font the SVG names first (the fallbacks it names, Helvetica
/// and Arial, are narrower, so a box measured here holds the text in them too).
enum TimelineText {
    /// The font's ascent and descent (hhea: 1901 and 483 of 2048 units per em), as fractions of the size.
    static let ascent = 1901.0 / 2048
    static let descent = 483.0 / 2048

    /// The width in pixels of `text` at `size` pixels: the sum of the glyphs' advance widths. Printable
    /// ASCII is measured exactly; any other character counts as 1.25 em (wider than DejaVu's widest
    /// Latin, Greek and Cyrillic glyphs, and than a CJK ideograph of a fallback font).
    static func width(_ text: String, size: Double, bold: Bool = false) -> Double {
        let table = bold ? boldAdvances : regularAdvances
        var units = 0
        for scalar in text.unicodeScalars {
            let value = Int(scalar.value)
            units += (32...126).contains(value) ? table[value - 32] : 2560
        }
        return Double(units) / 2048 * size
    }

    /// `text` shortened with "…" until it is at most `width` pixels wide at `size` ("" when not even
    /// the ellipsis fits).
    static func clip(_ text: String, toWidth width: Double, size: Double) -> String {
        if Self.width(text, size: size) <= width { return text }
        var characters = Array(text)
        while !characters.isEmpty {
            characters.removeLast()
            let candidate = String(characters) + "…"
            if Self.width(candidate, size: size) <= width { return candidate }
        }
        return Self.width("…", size: size) <= width ? "…" : ""
    }

    /// DejaVu Sans advance widths of U+0020…U+007E, in units of 1/2048 em.
    private static let regularAdvances: [Int] = [
        651, 821, 942, 1716, 1303, 1946, 1597, 563, 799, 799, 1024, 1716, 651, 739, 651, 690,
        1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 690, 690, 1716, 1716, 1716, 1087,
        2048, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604, 604, 1343, 1141, 1767, 1532, 1612,
        1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, 799, 690, 799, 1716, 1024,
        1024, 1255, 1300, 1126, 1300, 1260, 721, 1300, 1298, 569, 569, 1186, 569, 1995, 1298, 1253,
        1300, 1300, 842, 1067, 803, 1298, 1212, 1675, 1212, 1212, 1075, 1303, 690, 1303, 1716,
    ]

    /// DejaVu Sans Bold advance widths of U+0020…U+007E, in units of 1/2048 em.
    private static let boldAdvances: [Int] = [
        713, 934, 1067, 1716, 1425, 2052, 1786, 627, 936, 936, 1071, 1716, 778, 850, 778, 748,
        1425, 1425, 1425, 1425, 1425, 1425, 1425, 1425, 1425, 1425, 819, 819, 1716, 1716, 1716, 1188,
        2048, 1585, 1561, 1503, 1700, 1399, 1399, 1681, 1714, 762, 762, 1587, 1305, 2038, 1714, 1741,
        1501, 1741, 1577, 1475, 1397, 1663, 1585, 2259, 1579, 1483, 1485, 936, 748, 936, 1716, 1024,
        1024, 1382, 1466, 1214, 1466, 1389, 891, 1466, 1458, 702, 702, 1362, 702, 2134, 1458, 1407,
        1466, 1466, 1010, 1219, 979, 1458, 1335, 1892, 1321, 1335, 1192, 1458, 748, 1458, 1716,
    ]
}

/// Rows for items that must not overlap horizontally (the budget bars with their labels): each item
/// goes to the first row whose last item ends at least `gap` pixels before it starts.
///
/// O(rows) per item, at most `maxRows` rows; an item no row can take gets none.
struct TimelineRows {
    let maxRows: Int
    let gap: Double
    /// The right edge of each row's rightmost item.
    private(set) var rightEdges: [Double] = []

    init(maxRows: Int, gap: Double) {
        self.maxRows = maxRows
        self.gap = gap
    }

    var count: Int { rightEdges.count }

    /// The row for an item covering `minX`…`maxX`, now taken; nil when every row is in the way.
    mutating func place(_ minX: Double, _ maxX: Double) -> Int? {
        if let row = rightEdges.firstIndex(where: { $0 + gap <= minX }) {
            rightEdges[row] = maxX
            return row
        }
        guard rightEdges.count < maxRows else { return nil }
        rightEdges.append(maxX)
        return rightEdges.count - 1
    }

    /// Takes the row whose rightmost item ends first, whatever it overlaps (for an item without a
    /// label when every row is in the way): the row.
    mutating func force(_ maxX: Double) -> Int {
        guard let row = rightEdges.indices.min(by: { rightEdges[$0] < rightEdges[$1] }) else {
            rightEdges.append(maxX)
            return 0
        }
        rightEdges[row] = max(rightEdges[row], maxX)
        return row
    }
}
