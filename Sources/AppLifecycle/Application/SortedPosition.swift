extension Array {
    /// In an array sorted by `key` (ascending, each key once): where `target` is, or would be inserted,
    /// and whether it is there. O(log n) calls of `key`. The application's delegate and scene delegate
    /// slots (by token), their ids, its open completion requests (by id), and the plugin set's loaded
    /// plugins (by load number and by id) are kept sorted so that finding one that grows with the
    /// plugins is a search by halving, not a walk. Inlinable: the plugin set's searches are on each load.
    @inlinable
    package func sortedPosition<Key: Comparable>(of target: Key, by key: (Element) -> Key) -> (index: Int, found: Bool) {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if key(self[middle]) < target { low = middle + 1 } else { high = middle }
        }
        return (low, low < count && key(self[low]) == target)
    }
}
