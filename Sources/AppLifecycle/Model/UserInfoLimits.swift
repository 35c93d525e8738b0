/// The one set of limits every dictionary the host accepts keeps to — a notification's userInfo,
/// launch options, a payload, an annotation, an activity's userInfo, a state archive's values — the
/// same in the host's process and in an isolated plugin's.
///
/// - **Depth**: lists and dictionaries nest at most `maximumDepth` (64) levels below the dictionary
///   (its own entries are level 0): the archive format's limit, so every dictionary can be archived,
///   and every recursive walk of a value the host holds (rendering, encoding, equality, release) is at
///   most that deep.
/// - **Size**: its entries take at most `maximumBytes` in the archive encoding (`UserInfo.encodedSize`),
///   the payload of the largest archive the store accepts (64 MiB with its 20-byte header), so that
///   whatever a plugin may hold it may also save, and every frame between the host and a plugin's
///   process can carry it.
///
/// Where they are checked, each with an error for the one who asked: where a dictionary is built
/// (`UserInfo.setWithinLimits`, the C layer's `lc_dict_set_*`, `lc_dict_set_list`, `lc_list_append_*`),
/// where it is posted (`AppNotificationCenter.post`, `lc_app_post*`, `host->post*`), where an action
/// carries one (`Application.perform`), and where an archive is saved (`ArchiveStore.save`). A value
/// built past them in Swift (the subscript does not refuse) is refused at each of those doors.
public enum UserInfoLimits {
    /// Levels of lists and dictionaries below a dictionary's own entries: 64.
    public static let maximumDepth = ArchiveFormat.maxDepth
    /// Bytes of a dictionary's entries in the archive encoding: 67,108,844 (64 MiB − 20), the payload
    /// of an archive of `ArchiveStore.defaultMaxBytes`.
    public static let maximumBytes = ArchiveStore.defaultMaxBytes - ArchiveFormat.headerSize
}

/// A dictionary over one of `UserInfoLimits`: which limit, and what it measures. Typed: decide from
/// `limit` and `measured`, never from the words.
public struct UserInfoLimitExceeded: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Limit: Sendable, Hashable {
        /// `UserInfoLimits.maximumDepth`.
        case depth
        /// `UserInfoLimits.maximumBytes`.
        case bytes
    }

    public let limit: Limit
    /// The depth (levels) or size (bytes) measured, or that a change would have made (saturating:
    /// at most 255 levels, 2^56 − 1 bytes).
    public let measured: Int

    public init(_ limit: Limit, measured: Int) {
        self.limit = limit
        self.measured = measured
    }

    /// The limit's value.
    public var maximum: Int {
        switch limit {
        case .depth: UserInfoLimits.maximumDepth
        case .bytes: UserInfoLimits.maximumBytes
        }
    }

    /// `65 levels deep (at most 64)`, `67108845 bytes (at most 67108844)`.
    public var description: String {
        switch limit {
        case .depth: "\(measured) levels deep (at most \(maximum))"
        case .bytes: "\(measured) bytes (at most \(maximum))"
        }
    }

    /// The first limit a dictionary of `footprint` is over, or nil. Depth first: a value both too deep
    /// and too large is refused as deep.
    static func check(_ footprint: UserInfoFootprint) -> UserInfoLimitExceeded? {
        if footprint.depth > UserInfoLimits.maximumDepth { return UserInfoLimitExceeded(.depth, measured: footprint.depth) }
        if footprint.bytes > UserInfoLimits.maximumBytes { return UserInfoLimitExceeded(.bytes, measured: footprint.bytes) }
        return nil
    }

    /// The first limit a list whose items measure `items` (their bytes summed, the deepest: see
    /// `UserInfoFootprint.add`) is over as a dictionary's only value under an empty key, or nil: the
    /// least any dictionary holding it measures (8 + 9 bytes of key and header, one level more). O(1).
    package static func check(listItems items: UserInfoFootprint) -> UserInfoLimitExceeded? {
        check(UserInfoFootprint(bytes: UserInfoFootprint.adding(17, items.bytes), depth: items.depth + 1))
    }
}

extension UserInfo {
    /// The limit this dictionary is over, or nil when it keeps to `UserInfoLimits`. O(1).
    public var limitExceeded: UserInfoLimitExceeded? { UserInfoLimitExceeded.check(footprint_) }

    /// The limit setting `value` under `key` would put this dictionary over, or nil when the change
    /// keeps it within `UserInfoLimits` or makes it neither larger nor deeper (one already over the
    /// limits may shrink). Removing (`nil`) is never refused. Nothing changes.
    ///
    /// O(keys) to find the key (as the subscript), plus the new value's measure (O(1) for a scalar or a
    /// dictionary, O(the items reached through lists) for a list), plus O(keys) when it would replace
    /// one of the deepest values with a shallower one.
    public func limitExceeded(setting value: UserInfoValue?, forKey key: String) -> UserInfoLimitExceeded? {
        guard let value else { return nil }
        return limitExceeded(settingEntry: UserInfoFootprint(key: key, value: value), forKey: key)
    }

    /// `limitExceeded(setting:forKey:)` for an entry measured by the caller (`new`: the key's and the
    /// value's bytes, the value's depth), so that a large value can be refused before it is copied.
    package func limitExceeded(settingEntry new: UserInfoFootprint, forKey key: String) -> UserInfoLimitExceeded? {
        let before = footprint_
        var bytes = UserInfoFootprint.adding(before.bytes, new.bytes)
        var depth = Swift.max(before.depth, new.depth)
        if let index = keys_.firstIndex(of: key) {
            let old = UserInfoFootprint(key: key, value: values_[index])
            if !before.saturated { bytes = UserInfoFootprint.adding(before.bytes - old.bytes, new.bytes) }
            if old.depth == before.depth, new.depth < old.depth {
                depth = new.depth
                for other in values_.indices where other != index { depth = Swift.max(depth, UserInfoFootprint(value: values_[other]).depth) }
            }
        }
        let after = UserInfoFootprint(bytes: bytes, depth: depth)
        guard after.bytes > before.bytes || after.depth > before.depth else { return nil }
        return UserInfoLimitExceeded.check(after)
    }

    /// Sets `value` under `key` (nil removes it) as the subscript does, unless
    /// `limitExceeded(setting:forKey:)` refuses it: then nothing changes and the excess is thrown.
    public mutating func setWithinLimits(_ value: UserInfoValue?, forKey key: String) throws(UserInfoLimitExceeded) {
        if let excess = limitExceeded(setting: value, forKey: key) { throw excess }
        self[key] = value
    }
}
