/// How large and how deep a dictionary, an entry or a value is, as `UserInfoLimits` measures them:
/// `bytes` in the archive encoding (`ArchiveFormat`: what an archive's payload or a frame's dictionary
/// field takes), `depth` in levels of lists and dictionaries (a scalar 0, a list or dictionary one more
/// than its deepest item; a dictionary's own footprint counts its entries, so `{"a": 1}` is 0 deep).
///
/// Kept in every `UserInfo`, up to date with each change, so that a check is O(1) and a dictionary
/// value's footprint is O(1); a list's is measured by walking the lists it holds (not the dictionaries
/// in them), with a stack of its own: no input depth makes it recurse. Both figures saturate (bytes at
/// 2^56 − 1, depth at 255), far past the limits, so sharing a value many times (copy-on-write) cannot
/// overflow them; a saturated dictionary is measured again when it shrinks.
///
/// Packed in one word, so that a `UserInfo` (and so a `UserInfoValue`) grows by 8 bytes only.
/// `package`: the C layer keeps one for each of its lists (`ListBox`), O(1) an append.
package struct UserInfoFootprint: Sendable {
    private var packed: UInt64

    static let byteCap = (1 << 56) - 1
    static let depthCap = 255

    package init(bytes: Int, depth: Int) {
        packed = UInt64(min(max(bytes, 0), Self.byteCap)) | UInt64(min(max(depth, 0), Self.depthCap)) << 56
    }

    package init() { packed = 0 }

    package var bytes: Int { Int(packed & UInt64(Self.byteCap)) }
    package var depth: Int { Int(packed >> 56) }
    /// Whether `bytes` hit its cap (its true value is unknown, and larger).
    var saturated: Bool { bytes == Self.byteCap }

    /// A sum of non-negative sizes that saturates at `byteCap` (never overflows).
    static func adding(_ a: Int, _ b: Int) -> Int {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? byteCap : min(sum, byteCap)
    }

    /// The footprint of the entry `key: value` for a scalar value whose body is `body` bytes (a string's
    /// UTF-8, raw bytes), measured before the value is made: size before content.
    package init(key: String, scalarBody body: Int) {
        self.init(bytes: Self.adding(17 + key.utf8.count, body), depth: 0)
    }

    /// The footprint of the entry `key: value`: 8 (the key's length) + the key's UTF-8 bytes + the value's.
    init(key: String, value: UserInfoValue) {
        let own = UserInfoFootprint(value: value)
        self.init(bytes: Self.adding(8 + key.utf8.count, own.bytes), depth: own.depth)
    }

    /// The footprint of `value`: 9 bytes of tag and length, then its body.
    package init(value: UserInfoValue) {
        switch value {
        case .string(let s): self.init(bytes: 9 + s.utf8.count, depth: 0)
        case .int, .double: self.init(bytes: 17, depth: 0)
        case .bool: self.init(bytes: 10, depth: 0)
        case .bytes(let b): self.init(bytes: 9 + b.count, depth: 0)
        case .dict(let info): self.init(bytes: Self.adding(9, info.footprint_.bytes), depth: info.footprint_.depth + 1)
        case .list(let items): self = Self.ofList(items)
        }
    }

    /// A list's footprint, walking nested lists with an explicit stack (a dictionary item is O(1)).
    private static func ofList(_ items: [UserInfoValue]) -> UserInfoFootprint {
        // One frame per list being measured: its items, the next item, the sum of its items' bytes,
        // and the deepest item's depth.
        var stack: [(items: [UserInfoValue], next: Int, bytes: Int, depth: Int)] = [(items, 0, 0, 0)]
        while true {
            let top = stack.count - 1
            if stack[top].next == stack[top].items.count {
                let done = UserInfoFootprint(bytes: adding(9, stack[top].bytes), depth: stack[top].depth + 1)
                stack.removeLast()
                guard let parent = stack.indices.last else { return done }
                stack[parent].bytes = adding(stack[parent].bytes, done.bytes)
                stack[parent].depth = max(stack[parent].depth, done.depth)
                continue
            }
            let item = stack[top].items[stack[top].next]
            stack[top].next += 1
            if case .list(let inner) = item {
                stack.append((inner, 0, 0, 0))
                continue
            }
            let own = UserInfoFootprint(value: item)
            stack[top].bytes = adding(stack[top].bytes, own.bytes)
            stack[top].depth = max(stack[top].depth, own.depth)
        }
    }

    /// Adds an entry's (or a list item's) footprint: the bytes summed, the deepest kept.
    package mutating func add(_ entry: UserInfoFootprint) {
        self = UserInfoFootprint(bytes: Self.adding(bytes, entry.bytes), depth: max(depth, entry.depth))
    }

    /// Takes an entry's footprint away. - Returns: false when the dictionary must be measured again
    /// (the entry was among the deepest, or the bytes had saturated).
    mutating func remove(_ entry: UserInfoFootprint) -> Bool {
        guard !saturated, entry.depth < depth || entry.depth == 0 else { return false }
        self = UserInfoFootprint(bytes: bytes - entry.bytes, depth: depth)
        return true
    }
}
