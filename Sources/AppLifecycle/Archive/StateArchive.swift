/// The coder handed to `shouldSaveApplicationState`, `willEncodeRestorableState`,
/// `shouldRestoreApplicationState` and `didDecodeRestorableState`: one observer's key-value store.
///
/// Behaviour:
/// - One archive per observer. What `values` holds when the encoding callback returns is what is
///   saved, atomically: after a crash or a purge the archive on disk is the previous complete save or
///   this one, never a mix.
/// - When decoding, `values` holds exactly what was saved: keys in the order they were first set, every
///   value bit for bit (doubles keep their sign of zero and NaN payloads, strings their exact UTF-8).
/// - Lists and dictionaries may nest at most 64 levels deep; a deeper archive is refused when saved.
///
/// [main-thread] Not `Sendable`: it is used on the loop thread only, during the callback it was handed
/// to. Copy `values` (a `Sendable` value) to take the data elsewhere.
public final class StateArchive {
    /// The stored key-value pairs, in insertion order.
    public var values: UserInfo

    /// Creates an archive holding `values` (empty by default).
    public init(values: UserInfo = UserInfo()) {
        self.values = values
    }

    /// The value stored under `key`, or nil. Setting a value replaces an existing one in place (its
    /// position is kept); setting `nil` removes the key.
    public subscript(key: String) -> UserInfoValue? {
        get { values[key] }
        set { values[key] = newValue }
    }
}

@available(*, unavailable, message: "StateArchive is used on the loop thread only; send its `values` instead")
extension StateArchive: Sendable {}
