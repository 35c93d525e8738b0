/// The coder handed to `shouldSaveApplicationState`, `willEncodeRestorableState`,
/// `shouldRestoreApplicationState` and `didDecodeRestorableState`: one observer's key-value store.
///
/// Behaviour:
/// - One archive per observer. What `values` holds when the encoding callback returns is what is
///   saved, atomically: after a crash or a purge the archive on disk is the previous complete save or
///   this one, never a mix.
/// - An encoding that failed (`failure`: the delegate's process died or was cut off during the call,
///   or a write into the coder was refused) saves nothing: the previous archive is kept, and the
///   trace says so (`TraceEvent.Payload.archiveKept`).
/// - When decoding, `values` holds exactly what was saved: keys in the order they were first set, every
///   value bit for bit (doubles keep their sign of zero and NaN payloads, strings their exact UTF-8).
/// - Lists and dictionaries may nest at most 64 levels deep, and the entries take at most
///   `UserInfoLimits.maximumBytes`; a larger archive is refused when saved.
///
/// [main-thread] Not `Sendable`: it is used on the loop thread only, during the callback it was handed
/// to. Copy `values` (a `Sendable` value) to take the data elsewhere.
public final class StateArchive {
    /// The stored key-value pairs, in insertion order.
    public var values: UserInfo

    /// Why the delegate's encoding failed, nil while it has not: the first failure reported with
    /// `fail(_:)` during `shouldSaveApplicationState` or `willEncodeRestorableState`. Read by the engine
    /// after each of them: set, the archive is not saved and the previous one is kept.
    public private(set) var failure: EncodingFailure?

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

    /// Records that the encoding failed (the first failure is kept): the bridges to plugins call it
    /// when a write into the coder was refused or the plugin's process failed during the call.
    package func fail(_ failure: EncodingFailure) {
        if self.failure == nil { self.failure = failure }
    }
}

@available(*, unavailable, message: "StateArchive is used on the loop thread only; send its `values` instead")
extension StateArchive: Sendable {}

/// Why a delegate's encoding of its state failed (`StateArchive.failure`). Typed: decide from the
/// case; the strings are words for people.
public enum EncodingFailure: Sendable, Hashable {
    /// A write into the coder was refused: `function` (`lc_dict_set_bytes`, …) and the message it left.
    case writeRefused(function: String, message: String)
    /// The plugin's process failed during the call (died, overran its deadline, broke the protocol):
    /// the plugin was taken out.
    case pluginFailed(PluginFailure)
    /// The call did not reach the plugin's process (it was not running, or its frame would break a
    /// limit of the protocol: the log says which).
    case notDelivered

    /// `had a write into the coder refused: lc_dict_set_bytes: data is NULL`, `did not complete: the
    /// plugin's process failed (SIGSEGV)`, `could not be sent to the plugin's process`.
    public var words: String {
        switch self {
        case .writeRefused(_, let message): "had a write into the coder refused: \(message)"
        case .pluginFailed(let failure): "did not complete: the plugin's process failed (\(failure.causeName))"
        case .notDelivered: "could not be sent to the plugin's process"
        }
    }
}
