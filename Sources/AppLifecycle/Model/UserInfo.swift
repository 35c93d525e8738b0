/// One value of a userInfo dictionary: the property-list kinds plus raw bytes.
///
/// Values are plain data (`Sendable`, `Hashable`); they cross threads and the C ABI by copy.
public enum UserInfoValue: Sendable, Hashable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case bytes([UInt8])
    case list([UserInfoValue])
    case dict(UserInfo)

    /// The value as a string, when it is one.
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    /// The value as an integer, when it is one.
    public var intValue: Int64? { if case .int(let i) = self { return i } else { return nil } }
    /// The value as a double (integers convert), when it is a number.
    public var doubleValue: Double? {
        switch self {
        case .double(let d): return d
        case .int(let i): return Double(i)
        default: return nil
        }
    }
    /// The value as a boolean, when it is one.
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    /// The value as a dictionary, when it is one.
    public var dictValue: UserInfo? { if case .dict(let d) = self { return d } else { return nil } }
    /// The value as a list, when it is one.
    public var listValue: [UserInfoValue]? { if case .list(let l) = self { return l } else { return nil } }
}

extension UserInfoValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: UserInfoValue...) { self = .list(elements) }
    public init(dictionaryLiteral elements: (String, UserInfoValue)...) {
        var info = UserInfo()
        for (key, value) in elements { info[key] = value }
        self = .dict(info)
    }
}

extension UserInfoValue: CustomStringConvertible {
    /// A JSON rendering (bytes as a hex string prefixed `0x`), stable for traces and tests.
    ///
    /// Recurses once a level, as the synthesized equality and hashing and a value's release do: every
    /// value the host renders, compares or holds kept to `UserInfoLimits` at the door it came through
    /// (64 levels; 67 with the host's own envelopes), so none of them goes deeper than that.
    public var description: String {
        switch self {
        case .string(let s): return jsonQuoted(s)
        case .int(let i): return String(i)
        case .double(let d): return d.isFinite ? String(d) : "null"
        case .bool(let b): return b ? "true" : "false"
        case .bytes(let bytes):
            let hex = "0123456789abcdef".utf8.map { $0 }
            var out = "\"0x"
            for b in bytes {
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(b >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(b & 15)]))
            }
            return out + "\""
        case .list(let l): return "[" + l.map(\.description).joined(separator: ",") + "]"
        case .dict(let d): return d.description
        }
    }
}

/// A small ordered dictionary of typed values: the userInfo of a notification, the launch options,
/// a remote-notification payload, and the key-value store of a state archive.
///
/// Keys keep their insertion order (so traces and archives are deterministic); setting an existing
/// key replaces its value in place; setting `nil` removes it. Lookups are linear: these dictionaries
/// hold a handful of entries.
///
/// Every dictionary knows its size and depth as `UserInfoLimits` measures them (`encodedSize`,
/// `depth`), kept up to date by each change at O(1) beside it (a list value: O(the items reached
/// through lists)). The subscript never refuses; `setWithinLimits(_:forKey:)` does, and so does every
/// door of the host a dictionary passes (`limitExceeded`).
public struct UserInfo: Sendable, Hashable {
    @usableFromInline var keys_: [String] = []
    @usableFromInline var values_: [UserInfoValue] = []
    /// The size and depth of the entries (see `UserInfoFootprint`); not part of the value's identity.
    var footprint_ = UserInfoFootprint()

    public init() {}

    public var count: Int { keys_.count }
    public var isEmpty: Bool { keys_.isEmpty }
    /// The keys in insertion order.
    public var keys: [String] { keys_ }

    /// The bytes the entries take in the archive encoding: an archive of this dictionary is 20 bytes
    /// more (`ArchiveFormat`). Saturates at 2^56 − 1. O(1).
    public var encodedSize: Int { footprint_.bytes }

    /// The levels of lists and dictionaries below the entries (0 for scalars only). Saturates at 255. O(1).
    public var depth: Int { footprint_.depth }

    public subscript(key: String) -> UserInfoValue? {
        get {
            guard let index = keys_.firstIndex(of: key) else { return nil }
            return values_[index]
        }
        set {
            if let index = keys_.firstIndex(of: key) {
                let old = UserInfoFootprint(key: key, value: values_[index])
                if let newValue {
                    values_[index] = newValue
                    if footprint_.remove(old) {
                        footprint_.add(UserInfoFootprint(key: key, value: newValue))
                    } else {
                        remeasure()
                    }
                } else {
                    keys_.remove(at: index)
                    values_.remove(at: index)
                    if !footprint_.remove(old) { remeasure() }
                }
            } else if let newValue {
                keys_.append(key)
                values_.append(newValue)
                footprint_.add(UserInfoFootprint(key: key, value: newValue))
            }
        }
    }

    /// Appends an entry whose key is known to be absent, with its footprint measured by the caller
    /// (the archive decoder: the bytes it read, the depth it saw). O(1).
    mutating func appendNew(key: String, value: UserInfoValue, footprint: UserInfoFootprint) {
        keys_.append(key)
        values_.append(value)
        footprint_.add(footprint)
    }

    /// Measures every entry again: after a removal of one of the deepest entries, or once saturated.
    private mutating func remeasure() {
        var total = UserInfoFootprint()
        for index in keys_.indices { total.add(UserInfoFootprint(key: keys_[index], value: values_[index])) }
        footprint_ = total
    }

    /// The entry at `index` in insertion order.
    public func entry(at index: Int) -> (key: String, value: UserInfoValue) { (keys_[index], values_[index]) }

    /// The key at `index` in insertion order.
    @inlinable
    public func key(at index: Int) -> String { keys_[index] }

    /// The value at `index` in insertion order.
    @inlinable
    public func value(at index: Int) -> UserInfoValue { values_[index] }

    /// Equal when the entries are, in order (the footprint follows from them, and two strings equal
    /// as Swift compares them may differ in UTF-8 bytes).
    public static func == (lhs: UserInfo, rhs: UserInfo) -> Bool { lhs.keys_ == rhs.keys_ && lhs.values_ == rhs.values_ }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(keys_)
        hasher.combine(values_)
    }
}

extension UserInfo: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, UserInfoValue)...) {
        for (key, value) in elements { self[key] = value }
    }
}

extension UserInfo: Sequence {
    public func makeIterator() -> AnyIterator<(key: String, value: UserInfoValue)> {
        var index = 0
        return AnyIterator {
            guard index < keys_.count else { return nil }
            defer { index += 1 }
            return (keys_[index], values_[index])
        }
    }
}

extension UserInfo: CustomStringConvertible {
    /// A JSON object rendering, keys in insertion order.
    public var description: String {
        var out = "{"
        for index in keys_.indices {
            if index > 0 { out += "," }
            out += jsonQuoted(keys_[index]) + ":" + values_[index].description
        }
        return out + "}"
    }
}

/// Quotes a string as a JSON string literal (the one JSON quoting of the project: traces, status
/// replies and userInfo renderings all use it).
public func jsonQuoted(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if scalar.value < 0x20 {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}
