import AppLifecycle

/// The protocol between the host and an isolated plugin's process (the runner), over a Unix stream
/// socket pair. Version 6 (2: `proceed` carries the plugin's quotas, `quotaRefused`; 3:
/// `requestEnded`; 4: frames up to the archive cap and 1 MiB, `result` says whether the encoding
/// failed; 5: `quotaRefused` names the frame the refused call was made in; 6: `query`,
/// `sceneRequest`, protected data in the state byte). All integers are
/// little-endian.
///
/// ```
/// frame (at least 16 bytes, at most `maximumFrame`)
///   0  4  u32 size: the whole frame, header included
///   4  2  u16 kind (`FrameKind`)
///   6  1  u8  the application's state when the host sent it (host → runner; 0 the other way):
///             `LC_STATE_*` in the low bits, bit 7 set while protected data is unavailable (`stateByte`)
///   7  1  u8  reserved, 0
///   8  8  u64 word: a token, call id, request id, timer or task id (the kind says which)
///  16  …  the payload, the kind's fields in order:
///         u8 / u32 / u64 / f64 as such; a string as u32 length + UTF-8 bytes; a dictionary as u32
///         length + the archive format's entries (`ArchiveFormat.appendEntries(of:to:)`); a
///         notification name as u32 id, then (when bit 31 of the id is set) the name as a string —
///         sent the first time an id crosses, after which the id alone names it; a scene
///         (`SceneSnapshot`, host → runner) as u64 the scene's address in the host, string id, u8
///         `LC_SCENE_STATE_*`, u8 connected, string session id, string configuration name.
/// ```
///
/// The host sends `hello` first (with the protocol version); a runner of another version answers
/// `loadFailed` and exits. Every frame the host receives is hostile input: its size is checked before
/// anything is read, every field against the bytes left, strings for UTF-8 and length, dictionaries
/// with the archive decoder's checks and `UserInfoLimits` (their length before their entries), ids
/// against what that process owns. Anything else cuts the process off
/// (`PluginFailure.Cause.protocolViolation`).
///
/// Sizes: a dictionary travels whole in one frame, so frames are as large as the largest archive
/// the host accepts (`ArchiveStore.defaultMaxBytes`, 64 MiB; its entries are the largest dictionary
/// `UserInfoLimits` allows) plus 1 MiB for the fields around it (names, at most five strings of
/// 64 KiB, a scene); no chunking. Neither side ever writes a frame the other refuses: `FrameWriter`
/// checks every string, dictionary and the frame's size as it is built, and a frame that breaks a
/// rule is not sent (`FrameWriter.end` answers false and says why).
enum IsolationProtocol {
    static let version: UInt32 = 7
    static let headerSize = 16
    /// The largest frame either side accepts: 65 MiB (68,157,440 bytes), the archive cap
    /// (`ArchiveStore.defaultMaxBytes`) and 1 MiB. Written as a literal: a constant computed from
    /// another module's is initialised lazily, one `swift_once` check each frame read
    /// (`FrameLimitsTests` holds the two equal).
    static let maximumFrame = (64 << 20) + (1 << 20)
    /// The longest string field (names, messages, paths) a frame may carry.
    static let maximumString = 64 << 10
    /// The levels the host's own envelopes add around a dictionary it was given (a user activity's
    /// dictionary, the connection options' lists of them, an openURL context): what a frame from the
    /// host may nest beyond `UserInfoLimits.maximumDepth`. Frames from a plugin's process get none.
    static let envelopeDepth = 3
    /// Bit 31 of a name field: the name's text follows.
    static let nameTextFollows: UInt32 = 1 << 31
    /// The state byte's bits: the application's `LC_STATE_*`, and protected data unavailable.
    static let stateMask: UInt8 = 0x7F
    static let protectedDataUnavailable: UInt8 = 0x80
    /// A runner → host frame's state byte (0 otherwise): a post, an `end_background_task` or a
    /// completion sent from a thread of the plugin's process other than the one running the host's
    /// frames, or from that thread outside them (work it queued itself): input from the plugin's own
    /// threads, which a recording orders (`ForeignInput`). The only bit a runner may set.
    static let fromPluginThread: UInt8 = 0x01

    /// A host → runner frame's state byte: what the plugin's `state` and `is_protected_data_available`
    /// answer while the frame runs (as of when it was sent). [loop-thread]
    static func stateByte(_ app: Application) -> UInt8 { stateByte(app.frameContext) }

    /// `stateByte` of a context already read.
    @inline(__always)
    static func stateByte(_ context: Application.FrameContext) -> UInt8 {
        UInt8(truncatingIfNeeded: context.state.lcState) | (context.isProtectedDataAvailable ? 0 : protectedDataUnavailable)
    }
}

/// What a frame is. Host → runner kinds are below 0x80, runner → host kinds from 0x80.
enum FrameKind: UInt16 {
    // Host → runner.
    /// Payload: u32 protocol version, u32 the loader's options (`PluginLoadOptions`), string path.
    case hello = 0x01
    /// The id is free: run init. Payload: the plugin's quotas (`PluginQuotas.write(to:)`: u32 a kind).
    case proceed = 0x02
    /// Do not run init; exit. Payload: string reason.
    case refuse = 0x03
    /// Call observer `word`. Payload: name, u64 sender, u8 1 when the sender is a scene (then the
    /// scene: `SceneSnapshot`), dictionary (u32 0xFFFFFFFF: none).
    case notify = 0x04
    /// Call a delegate function. word: the call id (0: no answer wanted). Payload: u8 row, arguments
    /// (`DelegateArguments`: a scene delegate's call names its scene, a `SceneSnapshot`).
    case delegate = 0x05
    /// Timer `word` fired (no payload).
    case timerFired = 0x06
    /// Background task `word` is about to expire: call its expiration handler (no payload).
    case expire = 0x07
    /// Answer `synced` with the same word once everything sent before has run (no payload).
    case sync = 0x08
    /// The answer to request `word`. Payload: i32 status, u64 value, string message.
    case reply = 0x09
    /// Run deinit, answer `unloaded`, exit (no payload).
    case unload = 0x0A
    /// The request of completion key `word` (a fetch, a remote notification) ended in the host:
    /// completed, ended by its watchdog, or the application stopped. A call of its handler after this
    /// frame is late (`LC_ERR_NOT_FOUND`, as in the host's process). No payload.
    case requestEnded = 0x0B

    // Runner → host.
    /// The descriptor. Payload: string id, string version, string summary, u32 abi major, u32 abi minor.
    case described = 0x81
    /// The plugin was refused before init. Payload: i32 status, string reason.
    case loadFailed = 0x82
    /// Init returned. Payload: i32 status, string error, u64 delegate rows, u64 scene rows.
    case initDone = 0x83
    /// Observe (token `word`, chosen by the runner). Payload: name, u64 sender.
    case observe = 0x84
    /// Remove observer `word`.
    case removeObserver = 0x85
    /// Post. Payload: name, u64 sender, dictionary.
    case post = 0x86
    /// A log line. Payload: u32 level, string message.
    case log = 0x87
    /// Begin a background task (request `word`, answered by `reply`: the task id as value). Payload:
    /// string name, u8 whether it has an expiration handler.
    case beginTask = 0x88
    /// End background task `word`.
    case endTask = 0x89
    /// Add timer `word` (chosen by the runner). Payload: f64 seconds.
    case addTimer = 0x8A
    /// Cancel timer `word`.
    case cancelTimer = 0x8B
    /// The answer to delegate call `word`. Payload: u8 answer, dictionary (a writable archive's values;
    /// the activity `stateRestorationActivityForScene:` filled; `{"name": …}` the configuration
    /// `configurationForConnectingSceneSession:` named, answer 0 for NULL), u8 1 when a write into a
    /// writable archive was refused (then string the setter, string its message: the encoding failed,
    /// `StateArchive.failure`), else 0.
    case result = 0x8C
    /// Completion `word` was called. Payload: u32 lc_fetch_result, u8 repeated.
    case completed = 0x8D
    /// The answer to `sync` `word`.
    case synced = 0x8E
    /// Deinit returned (no payload).
    case unloaded = 0x8F
    /// The process refused a call of its plugin at a quota (`QuotaKind.index` `word`). Payload: u64 the
    /// number of the host's frame whose callback made the call (0: none). The host traces it and counts
    /// it towards the cut-off, which names that callback.
    case quotaRefused = 0x90
    /// Ask the application something (request `word`, answered by `reply`). Payload: u8 `HostQuery`.
    case query = 0x91
    /// A scene request of the plugin (request `word`, answered by `reply`: the status and message of
    /// the check). Payload: u8 kind (0 activation, 1 destruction, 2 refresh), u8 1 when a session id
    /// follows (else 0: a new session), string session id, dictionary activity (none: not sent).
    case sceneRequest = 0x92
    /// A session's userInfo (request `word`, answered by `reply`; a get's reply has the dictionary
    /// after its message). Payload: u8 0 get / 1 set, string session id, dictionary (set: the new
    /// userInfo; get: none).
    case sessionUserInfo = 0x93

    var fromHost: Bool { rawValue < 0x80 }
}

/// Why a frame was refused: the words name the field and the limit.
struct ProtocolViolation: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// Builds frames at the end of a byte buffer.
///
/// Never builds a frame the other side refuses: each string (at most `maximumString`), dictionary
/// (`UserInfoLimits`, with `envelopeDepth` more levels from the host; checked in O(1) before it is
/// encoded, so no depth makes the encoder recurse past them) and the frame's size (at most
/// `maximumFrame`, checked before it is converted) is checked as it is written; the first broken rule
/// makes `end()` take the whole frame back out and answer false, with the rule in `refusal`.
struct FrameWriter {
    var bytes: [UInt8] = []
    private var start = 0
    /// Whether the frame being built goes from the host (its limits: see `dictionaryProblem`).
    private var fromHost = false
    /// The first rule the frame being built broke.
    private var problem: String?
    /// The custom names whose text this writer has sent: its peer knows them by id from then on (one
    /// writer serves a channel, so a new process starts with none).
    private(set) var namesSent = NameIDSet()
    /// Ids first sent by the frame being built: a frame taken back takes them out of `namesSent`
    /// again, so that their text goes with the next frame that names them.
    private var introducedNames: [UInt32] = []
    /// Why the last frame `end()` took back was not sent (the rule it broke).
    private(set) var refusal = ""

    /// Starts a frame; finish it with `end()`.
    mutating func begin(_ kind: FrameKind, word: UInt64 = 0, state: UInt8 = 0) {
        start = bytes.count
        fromHost = kind.fromHost
        if problem != nil { problem = nil }
        if !introducedNames.isEmpty { introducedNames.removeAll() }
        // The 16-byte header in one append: size (0 until `end`), kind, state, a reserved 0, word.
        put(UInt64(kind.rawValue) << 32 | UInt64(state) << 48, word)
    }

    /// Writes the frame's size into its header. - Returns: false when the frame broke a rule of the
    /// protocol (a field, or its size over `maximumFrame`): it is taken back out, nothing of it will be
    /// sent, and `refusal` says why.
    @discardableResult
    mutating func end() -> Bool {
        let count = bytes.count - start
        if problem == nil, count > IsolationProtocol.maximumFrame {
            problem = "the frame would be \(count) bytes (at most \(IsolationProtocol.maximumFrame))"
        }
        if let problem {
            bytes.removeSubrange(start...)
            for id in introducedNames { namesSent.remove(id) }
            introducedNames.removeAll()
            refusal = problem
            self.problem = nil
            return false
        }
        let size = UInt32(count)
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: size.littleEndian, toByteOffset: start, as: UInt32.self) }
        return true
    }

    /// Notes the first rule the frame being built broke (`end()` takes the frame back).
    private mutating func broke(_ rule: @autoclosure () -> String) {
        if problem == nil { problem = rule() }
    }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u32(_ value: UInt32) { put(value) }
    mutating func i32(_ value: Int32) { u32(UInt32(bitPattern: value)) }
    mutating func u64(_ value: UInt64) { put(value) }
    mutating func f64(_ value: Double) { u64(value.bitPattern) }

    /// Appends `first` and `second` little-endian, in one growth of `bytes` written in place (not
    /// `append(contentsOf:)` of their bytes: a generic copy, ~90 instructions a field).
    @inline(__always)
    private mutating func put(_ first: UInt64, _ second: UInt64) {
        bytes.append(addingCapacity: 16) { span in
            span.withUnsafeMutableBufferPointer { buffer, initialized in
                let raw = UnsafeMutableRawBufferPointer(buffer)
                raw.storeBytes(of: first.littleEndian, toByteOffset: 0, as: UInt64.self)
                raw.storeBytes(of: second.littleEndian, toByteOffset: 8, as: UInt64.self)
                initialized = 16
            }
        }
    }

    /// Appends `value` little-endian (see `put(_:_:)`).
    @inline(__always)
    private mutating func put<T: FixedWidthInteger & BitwiseCopyable>(_ value: T) {
        bytes.append(addingCapacity: MemoryLayout<T>.size) { span in
            span.withUnsafeMutableBufferPointer { buffer, initialized in
                UnsafeMutableRawBufferPointer(buffer).storeBytes(of: value.littleEndian, as: T.self)
                initialized = MemoryLayout<T>.size
            }
        }
    }

    /// A string of at most `maximumString` bytes (a longer one breaks the frame).
    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            guard utf8.count <= IsolationProtocol.maximumString else {
                broke("a string of \(utf8.count) bytes (at most \(IsolationProtocol.maximumString))")
                return u32(0)
            }
            u32(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// Free text (a log line, a task's name): `value` cut to its first `maximumString` bytes, at a
    /// character's boundary, so that it always crosses.
    mutating func text(_ value: String) {
        guard value.utf8.count > IsolationProtocol.maximumString else { return string(value) }
        var end = value.utf8.index(value.utf8.startIndex, offsetBy: IsolationProtocol.maximumString)
        while end > value.utf8.startIndex, UTF8.isContinuation(value.utf8[end]) { value.utf8.formIndex(before: &end) }
        string(String(value[..<end]))
    }

    /// A dictionary, or none (nil). One over the rules (`dictionaryProblem`) breaks the frame; it is
    /// measured in O(1), before anything is encoded.
    mutating func dictionary(_ value: UserInfo?) {
        guard let value else { return u32(UInt32.max) }
        if value.isEmpty { return u32(0) }  // no entries
        if let problem = Self.dictionaryProblem(value, fromHost: fromHost) {
            broke(problem)
            return u32(UInt32.max)
        }
        let lengthAt = bytes.count
        u32(0)
        ArchiveFormat.appendEntries(of: value, to: &bytes)
        let length = UInt32(bytes.count - lengthAt - 4)
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: length.littleEndian, toByteOffset: lengthAt, as: UInt32.self) }
    }

    /// Why the other side would refuse `value` in a frame of this direction, or nil: from a plugin's
    /// process, over `UserInfoLimits`; from the host, deeper than them by more than `envelopeDepth`, or
    /// larger than a frame.
    static func dictionaryProblem(_ value: UserInfo, fromHost: Bool) -> String? {
        let depth = UserInfoLimits.maximumDepth + (fromHost ? IsolationProtocol.envelopeDepth : 0)
        let bytes = fromHost ? IsolationProtocol.maximumFrame : UserInfoLimits.maximumBytes
        if value.depth > depth { return "a dictionary \(value.depth) levels deep (at most \(depth))" }
        if value.encodedSize > bytes { return "a dictionary of \(value.encodedSize) bytes (at most \(bytes))" }
        return nil
    }

    /// A name: its id, with its text when `withText`.
    mutating func name(_ id: UInt32, text: String?) {
        guard let text else { return u32(id) }
        u32(id | IsolationProtocol.nameTextFollows)
        string(text)
    }

    /// A notification name: its id, with its text the first time a custom name crosses (`namesSent`
    /// remembers which have; a frame taken back withdraws what it introduced). Standard names are the
    /// same ids in every process.
    mutating func name(_ name: NotificationName) {
        if name.isStandard || namesSent.contains(name.id) {
            self.name(name.id, text: nil)
        } else {
            namesSent.insert(name.id)
            introducedNames.append(name.id)
            self.name(name.id, text: name.rawValue)
        }
    }


    /// A whole `notify` frame whose name goes by its id alone (a standard name, or a custom one whose
    /// text has crossed: `name(_:)` would write the id only), with no scene and no
    /// dictionary — a stream's usual frame — in one growth of `bytes`: the same 33 bytes as `begin`,
    /// `name`, `u64(sender)`, `u8(0)`, `dictionary(nil)` and `end()`, where those six calls cost ~400
    /// instructions (each append a generic growth of the array). Never breaks a rule. - Returns: false,
    /// writing nothing, for a custom name whose text has not crossed (`name(_:)` decides it then).
    mutating func plainNotificationFrame(word: UInt64, state: UInt8, nameID: UInt32, sender: UInt64) -> Bool {
        guard NotificationName.isStandardID(nameID) || namesSent.contains(nameID) else { return false }
        let size = PlainNotification.size
        bytes.append(addingCapacity: size) { span in
            span.withUnsafeMutableBufferPointer { buffer, initialized in
                let raw = UnsafeMutableRawBufferPointer(buffer)
                raw.storeBytes(of: UInt32(size).littleEndian, toByteOffset: 0, as: UInt32.self)
                raw.storeBytes(of: FrameKind.notify.rawValue.littleEndian, toByteOffset: 4, as: UInt16.self)
                raw.storeBytes(of: state, toByteOffset: 6, as: UInt8.self)
                raw.storeBytes(of: 0, toByteOffset: 7, as: UInt8.self)
                raw.storeBytes(of: word.littleEndian, toByteOffset: 8, as: UInt64.self)
                raw.storeBytes(of: nameID.littleEndian, toByteOffset: 16, as: UInt32.self)
                raw.storeBytes(of: sender.littleEndian, toByteOffset: 20, as: UInt64.self)
                raw.storeBytes(of: 0, toByteOffset: 28, as: UInt8.self)
                raw.storeBytes(of: UInt32.max, toByteOffset: 29, as: UInt32.self)
                initialized = size
            }
        }
        return true
    }

    /// Builds one frame: `begin`, `body`, `end()` (its result) — one access to a writer that is a
    /// stored property, where three calls would be three (each a dynamic exclusivity check).
    @inline(__always)
    mutating func frame(_ kind: FrameKind, word: UInt64 = 0, state: UInt8 = 0, _ body: (inout FrameWriter) -> Void) -> Bool {
        begin(kind, word: word, state: state)
        body(&self)
        return end()
    }

    var isEmpty: Bool { bytes.isEmpty }
}

/// One frame's fields, read in order; every read is checked against the bytes the frame has.
struct FrameReader {
    let bytes: [UInt8]
    /// Where the frame starts in `bytes`.
    let start: Int
    private(set) var offset: Int
    let end: Int
    let kind: FrameKind
    let state: UInt8
    let word: UInt64

    /// A reader of the frame that starts at `start` (its size already checked to fit `bytes`).
    init(_ bytes: [UInt8], at start: Int, size: Int, kind: FrameKind) {
        self.bytes = bytes
        self.kind = kind
        self.start = start
        offset = start + IsolationProtocol.headerSize
        end = start + size
        state = bytes[start + 6]
        word = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: start + 8, as: UInt64.self).littleEndian }
    }

    /// A copy of the whole frame (to read it again later: `FrameReader(copy)`).
    var frameBytes: [UInt8] { Array(bytes[start..<end]) }

    /// A reader of a frame copied with `frameBytes`.
    init(copy: [UInt8]) {
        let kind = FrameKind(rawValue: copy.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 4, as: UInt16.self).littleEndian })!
        self.init(copy, at: 0, size: copy.count, kind: kind)
    }

    // `what` names the field in a refusal only: an autoclosure, so that reading a field builds no string.

    private mutating func take(_ count: Int, _ what: @autoclosure () -> String) throws(ProtocolViolation) -> Int {
        guard count >= 0, end - offset >= count else {
            throw ProtocolViolation("the \(kind) frame ends inside its \(what()) (\(end - offset) bytes left, \(count) needed)")
        }
        defer { offset += count }
        return offset
    }

    mutating func u8(_ what: @autoclosure () -> String) throws(ProtocolViolation) -> UInt8 { bytes[try take(1, what())] }

    mutating func u32(_ what: @autoclosure () -> String) throws(ProtocolViolation) -> UInt32 {
        let at = try take(4, what())
        return bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self).littleEndian }
    }

    mutating func i32(_ what: @autoclosure () -> String) throws(ProtocolViolation) -> Int32 { Int32(bitPattern: try u32(what())) }

    mutating func u64(_ what: @autoclosure () -> String) throws(ProtocolViolation) -> UInt64 {
        let at = try take(8, what())
        return bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt64.self).littleEndian }
    }

    mutating func f64(_ what: @autoclosure () -> String) throws(ProtocolViolation) -> Double { Double(bitPattern: try u64(what())) }

    /// A string of at most `IsolationProtocol.maximumString` bytes of valid UTF-8.
    mutating func string(_ what: String) throws(ProtocolViolation) -> String {
        let length = Int(try u32("\(what)'s length"))
        guard length <= IsolationProtocol.maximumString else {
            throw ProtocolViolation("the \(kind) frame's \(what) is \(length) bytes (at most \(IsolationProtocol.maximumString))")
        }
        let at = try take(length, what)
        guard let text = String(validating: bytes[at..<(at + length)], as: UTF8.self) else {
            throw ProtocolViolation("the \(kind) frame's \(what) is not valid UTF-8")
        }
        return text
    }

    /// A dictionary, decoded with every check of the archive format; nil when none was sent. From a
    /// plugin's process it keeps to `UserInfoLimits` (its length checked before its entries are read);
    /// from the host it may nest `envelopeDepth` levels more (the host's own envelopes).
    mutating func dictionary(_ what: String) throws(ProtocolViolation) -> UserInfo? {
        let length = try u32("\(what)'s length")
        if length == UInt32.max { return nil }
        if length == 0 { return UserInfo() }  // no entries (no copy to decode)
        let fromHost = kind.fromHost
        if !fromHost, length > UserInfoLimits.maximumBytes {
            throw ProtocolViolation("the \(kind) frame's \(what) is \(length) bytes (at most \(UserInfoLimits.maximumBytes))")
        }
        let at = try take(Int(length), what)
        do {
            // Its own bytes: the decoder's words then count from the dictionary's start.
            return try ArchiveFormat.decodeEntries(Array(bytes[at..<(at + Int(length))]), from: 0, to: Int(length),
                                                   maxDepth: UserInfoLimits.maximumDepth + (fromHost ? IsolationProtocol.envelopeDepth : 0))
        } catch {
            throw ProtocolViolation("the \(kind) frame's \(what) is not a valid dictionary: \(error.message)")
        }
    }

    /// The fields of a `notify` frame written by `FrameWriter.plainNotificationFrame` — a name by id
    /// alone, no scene, no dictionary: exactly 17 bytes left, read in one step — or nil, nothing read,
    /// for any other (read it field by field).
    mutating func plainNotification() -> PlainNotification? {
        guard end - offset == 17 else { return nil }
        let start = start
        guard let plain = bytes.withUnsafeBytes({ PlainNotification(raw: $0, at: start) }) else { return nil }
        offset = end
        return plain
    }

    /// A name field: the id, and the text when it follows.
    mutating func name() throws(ProtocolViolation) -> (id: UInt32, text: String?) {
        let raw = try u32("name")
        guard raw & IsolationProtocol.nameTextFollows != 0 else { return (raw, nil) }
        return (raw & ~IsolationProtocol.nameTextFollows, try string("name"))
    }

    /// Refuses bytes left over after the last field.
    func finish() throws(ProtocolViolation) {
        guard offset == end else { throw ProtocolViolation("the \(kind) frame has \(end - offset) bytes after its last field") }
    }
}

/// A set of notification-name ids as a bitmap: ids are dense from 1 (`NameRegistry` issues them in
/// order), so membership is one word's bit — no hashing on the path of every notification that
/// crosses (a `Set<UInt32>` cost ~260 instructions a frame). Its size follows the largest id it holds.
struct NameIDSet {
    private var words: [UInt64] = []

    @inline(__always)
    func contains(_ id: UInt32) -> Bool {
        let word = Int(id >> 6)
        return word < words.count && words[word] & (1 << UInt64(id & 63)) != 0
    }

    mutating func insert(_ id: UInt32) {
        let word = Int(id >> 6)
        if word >= words.count { words.append(contentsOf: repeatElement(0, count: word + 1 - words.count)) }
        words[word] |= 1 << UInt64(id & 63)
    }

    mutating func remove(_ id: UInt32) {
        let word = Int(id >> 6)
        if word < words.count { words[word] &= ~(1 << UInt64(id & 63)) }
    }

}

/// What a `query` frame asks: what an isolated process cannot answer from its frames alone.
enum HostQuery: UInt8 {
    /// `background_time_remaining` (ABI 1.5): the reply's value is the seconds' `Double` bit pattern.
    case backgroundTimeRemaining = 1
    /// `session_list` (ABI 1.5): the reply's message is the session ids, oldest first, each followed
    /// by a newline (ids are `A-Z a-z 0-9 . _ -`); its value is how many.
    case sessionIDs = 2
    /// `is_low_power_mode_enabled` and `thermal_state` (ABI 1.6): the reply's value has Low Power
    /// Mode in bit 0 and the thermal state (`lc_thermal_state`) in bits 8 to 15.
    case deviceState = 3
}

/// A `notify` frame as `FrameWriter.plainNotificationFrame` writes it — the usual frame of a stream:
/// a name the process knows by id, no scene, no dictionary, 33 bytes — read from a buffer in one step.
/// The one decoder of that layout: `FrameReader.plainNotification` and the runner's batch
/// (`FrameChannel.nextPlainNotification`, which makes no reader and takes no reference) use it.
struct PlainNotification {
    static let size = 33
    let word: UInt64
    let state: UInt8
    let nameID: UInt32
    let sender: UInt64

    /// The frame at `at` in `raw` (its 33 bytes there, the caller checked), or nil when it is not a
    /// plain notification (another kind or size, reserved bytes set, a name's text, a scene, a
    /// dictionary): then nothing is taken, and it is read field by field.
    @inline(__always)
    init?(raw: UnsafeRawBufferPointer, at: Int) {
        guard raw.loadUnaligned(fromByteOffset: at, as: UInt32.self).littleEndian == UInt32(Self.size),
              raw.loadUnaligned(fromByteOffset: at + 4, as: UInt16.self).littleEndian == FrameKind.notify.rawValue,
              raw[at + 7] == 0
        else { return nil }
        let name = raw.loadUnaligned(fromByteOffset: at + 16, as: UInt32.self).littleEndian
        guard name & IsolationProtocol.nameTextFollows == 0, raw[at + 28] == 0,
              raw.loadUnaligned(fromByteOffset: at + 29, as: UInt32.self) == UInt32.max
        else { return nil }
        word = raw.loadUnaligned(fromByteOffset: at + 8, as: UInt64.self).littleEndian
        state = raw[at + 6]
        nameID = name
        sender = raw.loadUnaligned(fromByteOffset: at + 20, as: UInt64.self).littleEndian
    }
}
