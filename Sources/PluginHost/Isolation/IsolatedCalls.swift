import AppLifecycle
import LifecycleC

/// How a delegate function of an isolated plugin crosses: the arguments of one call, what it answers,
/// and which calls wait for the answer. Shared by the host's side (`IsolatedPlugin+Delegates`) and the
/// runner's (`RunnerDelegates`), row by row of the C layer's one table (`FFIDelegates.functions`).
struct DelegateArguments {
    /// The dictionary argument: launch options, a remote notification's payload, openURL's options, an
    /// archive's values, a user activity (`UserActivity.dictionary`).
    var dict: UserInfo?
    /// A URL, an activity type.
    var text: String?
    /// openURL's source application, a failed activity's error.
    var secondText: String?
    /// openURL's annotation, under the key "value".
    var annotation: UserInfo?
    /// The completion's key (fetch, remote notification with completion).
    var key: UInt64 = 0
    /// The scene a scene delegate's call is about.
    var scene: SceneSnapshot?

    func write(to out: inout FrameWriter) {
        out.dictionary(dict)
        out.dictionary(annotation)
        out.u8((text == nil ? 0 : 1) | (secondText == nil ? 0 : 2) | (scene == nil ? 0 : 4))
        if let text { out.string(text) }
        if let secondText { out.string(secondText) }
        scene?.write(to: &out)
        out.u64(key)
    }

    static func read(_ reader: inout FrameReader) throws(ProtocolViolation) -> DelegateArguments {
        // Fields read into locals, the value made once at the end (no copy of a half-made one).
        let dict = try reader.dictionary("argument")
        let annotation = try reader.dictionary("annotation")
        let present = try reader.u8("argument flags")
        let text = present & 1 != 0 ? try reader.string("text argument") : nil
        let secondText = present & 2 != 0 ? try reader.string("second text argument") : nil
        let scene = present & 4 != 0 ? try SceneSnapshot.read(&reader) : nil
        let key = try reader.u64("completion key")
        return DelegateArguments(dict: dict, text: text, secondText: secondText, annotation: annotation, key: key, scene: scene)
    }
}

enum IsolatedCalls {
    /// Whether row `row`'s call waits for the plugin's answer: it returns a value or fills a writable
    /// archive. The others (notifications of the application delegate, completions' requests, read-only
    /// archives, the scene delegate's calls but `stateRestorationActivityForScene:`) are sent without
    /// waiting, in order with the plugin's observers.
    static func waits(_ row: Int) -> Bool {
        switch FFIDelegates.functions[row].shape {
        case .askWithDict, .openURL, .openURLWithOptions, .askArchive, .askWithString, .askActivity, .configuration,
             .sceneRestoration:
            return true
        case .archive(_, let writable): return writable
        default: return false
        }
    }

    /// What a call answers when the plugin's process failed before answering: what an unimplemented
    /// method answers (`ApplicationDelegate`'s defaults): true for the launch methods, false otherwise.
    static func defaultAnswer(_ row: Int) -> Bool {
        let method = FFIDelegates.functions[row].method
        return method == .willFinishLaunching || method == .didFinishLaunching
    }
}

extension FFIDelegates.Rows {
    /// The rows of `bits`, as a process reported them: those of the scene delegate (`scene`) or of the
    /// application delegate; rows past the table or of the other kind are dropped.
    init(reported bits: UInt64, scene: Bool) {
        self.init()
        for row in FFIDelegates.functions.indices where bits & (1 << UInt64(row)) != 0 && FFIDelegates.functions[row].shape.isScene == scene {
            insert(row)
        }
    }

    func contains(_ row: Int) -> Bool { bits & (1 << UInt64(row)) != 0 }
}
