/// A registered delegate or scene delegate (`Application.DelegateSlot`, `SceneDelegateSlot`): kept in
/// an array in registration order, so in ascending tokens.
protocol RegisteredSlot: AnyObject {
    var id: String { get }
    var token: UInt64 { get }
    /// Sets its removed flag: a loop over a copy of the slots skips it from now on.
    func markRemoved()
}

/// The ids of an application's delegates (or scene delegates), sorted, each with its token: the
/// duplicate check of an add and a removal by id search it by halving, so that a thousand plugins'
/// delegates are not compared one by one. Two arrays of types a process has made already, not one of
/// pairs: the storage of a new element type has its metadata made at run time, ~11,000–15,000
/// instructions in a process's first plugin load (callgrind: `[UInt64]` cost 11,000, pairs 15,000).
/// [loop-thread: the application's]
struct SlotIDs {
    private var ids: [String] = []
    /// Tokens (all below 2^63) as `Int`: see above.
    private var tokens: [Int] = []

    func contains(_ id: String) -> Bool { ids.sortedPosition(of: id) { $0 }.found }

    /// The token registered under `id`, or nil.
    func token(of id: String) -> UInt64? {
        let position = ids.sortedPosition(of: id) { $0 }
        return position.found ? UInt64(tokens[position.index]) : nil
    }

    /// Adds `id` with its token; false (nothing added) when `id` is there already.
    mutating func insert(_ id: String, token: UInt64) -> Bool {
        let position = ids.sortedPosition(of: id) { $0 }
        guard !position.found else { return false }
        ids.insert(id, at: position.index)
        tokens.insert(Int(truncatingIfNeeded: token), at: position.index)
        return true
    }

    mutating func remove(_ id: String) {
        let position = ids.sortedPosition(of: id) { $0 }
        guard position.found else { return }
        ids.remove(at: position.index)
        tokens.remove(at: position.index)
    }
}

extension Array where Element: RegisteredSlot {
    /// Where the slot with `token` is (the slots are in ascending tokens), or nil. O(log n).
    func index(ofToken token: UInt64) -> Int? {
        let position = sortedPosition(of: token) { $0.token }
        return position.found ? position.index : nil
    }

    /// Takes out the slot at `index`: its id out of `ids`, its removed flag set (a loop under way
    /// skips it). The slots after it move up one (a move of pointers, once per removal).
    mutating func removeSlot(at index: Int, ids: inout SlotIDs) {
        ids.remove(self[index].id)
        self[index].markRemoved()
        remove(at: index)
    }
}

extension Application.DelegateSlot: RegisteredSlot {
    func markRemoved() { removed.store(true, ordering: .relaxed) }
}

extension Application.SceneDelegateSlot: RegisteredSlot {
    func markRemoved() { removed.store(true, ordering: .relaxed) }
}
