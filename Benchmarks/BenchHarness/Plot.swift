@preconcurrency import Glibc

// The plot for docs/benchmarks.md: cost of one post against the number of observers, log–log, for
// the C ABI (lc_app_post_name to C observers) beside the plain C loop, GLib and libsigc++, and the
// Swift API (closures) beside Foundation, from the posting rows.

/// The SVG, or nil when the posting rows are missing (e.g. --filter left them out).
public func postingPlot(_ rows: [Row]) -> String? {
    var series: [String: [(n: Double, ns: Double)]] = [:]
    let oursC = "C ABI: lc_app_post_name, C observers", oursSwift = "Swift API: center.post, Swift closures"
    let cLoop = "plain C loop", glib = "GLib g_signal_emit", sigc = "libsigc++ emit", foundation = "Foundation NotificationCenter"
    /// The leading number of `text` after `prefix` ("… to 1000 C observers" → 1000).
    func count(_ text: String, after prefix: String) -> Double? {
        guard text.hasPrefix(prefix) else { return nil }
        return Double(text.dropFirst(prefix.count).prefix { $0.isNumber })
    }
    for row in rows where row.group == "posting" && !row.name.contains("other names") && !row.name.contains("userInfo") {
        if let n = count(row.name, after: "C ABI: lc_app_post_name to ") {
            series[oursC, default: []].append((n, row.ours.median))
            for anchor in row.anchors {
                let label = anchor.label.hasPrefix("plain C loop") ? cLoop : anchor.label.hasPrefix("GLib") ? glib
                    : anchor.label.hasPrefix("libsigc++") ? sigc : nil
                if let label { series[label, default: []].append((n, anchor.figure.median)) }
            }
        } else if row.name.hasPrefix("Swift API: center.post to Swift closures, "),
                  let n = count(row.name, after: "Swift API: center.post to Swift closures, ")
        {
            series[oursSwift, default: []].append((n, row.ours.median))
            for anchor in row.anchors where anchor.label == foundation {
                series[foundation, default: []].append((n, anchor.figure.median))
            }
        }
    }
    let order = [(oursC, "#1b7f3b"), (oursSwift, "#2f6fd0"), (cLoop, "#555555"), (glib, "#8e44ad"), (sigc, "#d68910"),
                 (foundation, "#c0392b")]
    let points = series.values.flatMap { $0 }
    guard !points.isEmpty else { return nil }
    func log10(_ x: Double) -> Double { x > 0 ? Glibc.log10(x) : 0 }
    let minN = 1.0, maxN = max(1_000.0, points.map(\.n).max() ?? 1_000)
    let minY = pow10(floor(log10(points.map(\.ns).min() ?? 1))), maxY = pow10(ceil(log10(points.map(\.ns).max() ?? 10)))
    let width = 880.0, height = 440.0, left = 80.0, right = 330.0, top = 40.0, bottom = 60.0
    func x(_ n: Double) -> Double { left + (log10(n) - log10(minN)) / (log10(maxN) - log10(minN)) * (width - left - right) }
    func y(_ ns: Double) -> Double { top + (1 - (log10(ns) - log10(minY)) / (log10(maxY) - log10(minY))) * (height - top - bottom) }
    var svg = """
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif" font-size="12">
        <rect width="100%" height="100%" fill="white"/>
        <text x="\(left)" y="22" font-size="15" font-weight="bold">Cost of one post against the number of observers (log–log)</text>

        """
    var decade = minY
    while decade <= maxY * 1.001 {
        svg += "<line x1=\"\(left)\" x2=\"\(width - right)\" y1=\"\(y(decade))\" y2=\"\(y(decade))\" stroke=\"#e4e4e4\"/>"
        svg += "<text x=\"\(left - 8)\" y=\"\(y(decade) + 4)\" text-anchor=\"end\">\(label(decade)) ns</text>\n"
        decade *= 10
    }
    for n in [1.0, 10, 100, 1_000] where n <= maxN {
        svg += "<line x1=\"\(x(n))\" x2=\"\(x(n))\" y1=\"\(top)\" y2=\"\(height - bottom)\" stroke=\"#e4e4e4\"/>"
        svg += "<text x=\"\(x(n))\" y=\"\(height - bottom + 18)\" text-anchor=\"middle\">\(Int(n))</text>\n"
    }
    svg += "<text x=\"\((left + width - right) / 2)\" y=\"\(height - 18)\" text-anchor=\"middle\">observers of the posted name</text>\n"
    for (index, (name, colour)) in order.enumerated() {
        guard let data = series[name]?.sorted(by: { $0.n < $1.n }), !data.isEmpty else { continue }
        let path = data.map { "\(x($0.n)),\(y($0.ns))" }.joined(separator: " ")
        svg += "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(colour)\" stroke-width=\"2\"/>"
        for p in data {
            svg += "<circle cx=\"\(x(p.n))\" cy=\"\(y(p.ns))\" r=\"3.5\" fill=\"\(colour)\"><title>\(name): \(Int(p.n)) observers, \(Figure.format(p.ns)) ns</title></circle>"
        }
        let ly = top + 20 + Double(index) * 22
        svg += "<line x1=\"\(width - right + 16)\" x2=\"\(width - right + 40)\" y1=\"\(ly)\" y2=\"\(ly)\" stroke=\"\(colour)\" stroke-width=\"2\"/>"
        svg += "<text x=\"\(width - right + 46)\" y=\"\(ly + 4)\">\(name)</text>\n"
    }
    return svg + "</svg>\n"
}

private func label(_ value: Double) -> String { value >= 1 ? String(Int(value)) : String(value) }
private func pow10(_ e: Double) -> Double { var r = 1.0; if e >= 0 { for _ in 0..<Int(e) { r *= 10 } } else { for _ in 0..<Int(-e) { r /= 10 } }; return r }
