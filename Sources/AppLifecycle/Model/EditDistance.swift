// The bounded edit distance behind every "did you mean …?".

/// The edit distance of `a` and `b` (insertions, deletions and substitutions of bytes) if it is at
/// most `limit`, else nil.
///
/// [thread-safe] O(1) when the lengths differ by more than `limit` (the distance is at least that);
/// otherwise O(|a| × (2 × limit + 1)): only the cells within `limit` of the diagonal are computed, and
/// it stops at the first row whose every cell is over the limit. So a suggestion for a hostile 64 KiB
/// word costs next to nothing (the full table cost 0.27 s of the host's loop for one control request).
package func editDistance(_ a: [UInt8], _ b: [UInt8], atMost limit: Int) -> Int? {
    guard limit >= 0, abs(a.count - b.count) <= limit else { return nil }
    if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
    let over = limit + 1  // stands for every distance past the limit
    var previous = (0...b.count).map { min($0, over) }
    var current = [Int](repeating: over, count: b.count + 1)
    for i in 1...a.count {
        let low = max(1, i - limit)
        let high = min(b.count, i + limit)
        current[low - 1] = low == 1 ? min(i, over) : over
        var rowMinimum = current[low - 1]
        if low <= high {
            for j in low...high {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost, over)
                rowMinimum = min(rowMinimum, current[j])
            }
        }
        if high < b.count { current[high + 1] = over }
        if rowMinimum > limit { return nil }
        swap(&previous, &current)
    }
    return previous[b.count] <= limit ? previous[b.count] : nil
}

/// The candidate closest to `word` by `editDistance` (the first of equally close ones), if one is
/// within `limit` and within half the word's length (at least 1), so that a word of one or two
/// letters is not "corrected" into an unrelated one: the word of every "did you mean …?"
/// (mistyped actions, subcommands, levels, states, option values).
///
/// [thread-safe] O(candidates × |word| × limit) at most, whatever `word`'s length (see `editDistance`).
package func closestWord(to word: String, among candidates: some Sequence<String>, atMost limit: Int = 3) -> String? {
    let typed = Array(word.utf8)
    let limit = min(limit, max(1, typed.count / 2))
    var best: (word: String, distance: Int)?
    for candidate in candidates {
        guard let distance = editDistance(Array(candidate.utf8), typed, atMost: min(limit, (best?.distance ?? limit + 1) - 1)) else { continue }
        best = (candidate, distance)
        if distance == 0 { break }
    }
    return best?.word
}

/// `" (did you mean 'WORD'?)"` for the closest of `candidates`, or "" when none is close.
package func didYouMean(_ word: String, among candidates: some Sequence<String>) -> String {
    closestWord(to: word, among: candidates).map { " (did you mean '\($0)'?)" } ?? ""
}
