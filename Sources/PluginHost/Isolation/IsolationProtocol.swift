import AppLifecycle

/// The protocol between the host and an isolated plugin's process (the runner), over a Unix stream
/// socket pair. Version 1. All integers are little-endian.
///
/// ```
/// frame (at least 16 bytes, at most `maximumFrame`)
///   0  4  u32 size: the whole frame, header included
///   4  2  u16 kind (`FrameKind`)
///   6  1  u8  the application's state when the host sent it (host → runner; 0 the other way)
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
/// with the archive decoder's checks, ids against what that process owns. Anything else cuts the
/// process off (`PluginFailure.Cause.protocolViolation`).
enum IsolationProtocol {
    static let version: UInt32 = 1
    static let headerSize = 16
    /// The largest frame either side accepts (a userInfo or an archive travels in one frame).
    static let maximumFrame = 16 << 20
    /// The longest string field (names, messages, paths) a frame may carry.
    static let maximumString = 64 << 10
    /// At most this many custom notification names an isolated plugin may introduce.
    static let maximumCustomNames = 4096
    /// Bit 31 of a name field: the name's text follows.
    static let nameTextFollows: UInt32 = 1 << 31
}

/// What a frame is. Host → runner kinds are below 0x80, runner → host kinds from 0x80.
enum FrameKind: UInt16 {
    // Host → runner.
    /// Payload: u32 protocol version, u32 the loader's options (`PluginLoadOptions`), string path.
    case hello = 0x01
    /// The id is free: run init (no payload).
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
    /// `configurationForConnectingSceneSession:` named, answer 0 for NULL).
    case result = 0x8C
    /// Completion `word` was called. Payload: u32 lc_fetch_result, u8 repeated.
    case completed = 0x8D
    /// The answer to `sync` `word`.
    case synced = 0x8E
    /// Deinit returned (no payload).
    case unloaded = 0x8F

    var fromHost: Bool { rawValue < 0x80 }
}

/// Why a frame was refused: the words name the field and the limit.
struct ProtocolViolation: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// Builds frames at the end of a byte buffer.
struct FrameWriter {
    var bytes: [UInt8] = []
    private var start = 0

    /// Starts a frame; finish it with `end()`.
    mutating func begin(_ kind: FrameKind, word: UInt64 = 0, state: UInt8 = 0) {
        start = bytes.count
        // The 16-byte header in one append: size (0 until `end`), kind, state, a reserved 0, word.
        let header = (first: (UInt64(kind.rawValue) << 32 | UInt64(state) << 48).littleEndian, word: word.littleEndian)
        withUnsafeBytes(of: header) { bytes.append(contentsOf: $0) }
    }

    /// Writes the frame's size into its header.
    mutating func end() {
        let size = UInt32(bytes.count - start)
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: size.littleEndian, toByteOffset: start, as: UInt32.self) }
    }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func i32(_ value: Int32) { u32(UInt32(bitPattern: value)) }
    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func f64(_ value: Double) { u64(value.bitPattern) }

    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            u32(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// A dictionary, or none (nil).
    mutating func dictionary(_ value: UserInfo?) {
        guard let value else { return u32(UInt32.max) }
        if value.isEmpty { return u32(0) }  // no entries
        let lengthAt = bytes.count
        u32(0)
        ArchiveFormat.appendEntries(of: value, to: &bytes)
        let length = UInt32(bytes.count - lengthAt - 4)
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: length.littleEndian, toByteOffset: lengthAt, as: UInt32.self) }
    }

    /// A name: its id, with its text when `withText`.
    mutating func name(_ id: UInt32, text: String?) {
        guard let text else { return u32(id) }
        u32(id | IsolationProtocol.nameTextFollows)
        string(text)
    }

    /// A notification name: its id, with its text the first time a custom name crosses (`sent`
    /// remembers which have). Standard names are the same ids in every process.
    mutating func name(_ name: NotificationName, sent: inout Set<UInt32>) {
        if name.isStandard || sent.contains(name.id) {
            self.name(name.id, text: nil)
        } else {
            sent.insert(name.id)
            self.name(name.id, text: name.rawValue)
        }
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

    /// A dictionary, decoded with every check of the archive format; nil when none was sent.
    mutating func dictionary(_ what: String) throws(ProtocolViolation) -> UserInfo? {
        let length = try u32("\(what)'s length")
        if length == UInt32.max { return nil }
        if length == 0 { return UserInfo() }  // no entries (no copy to decode)
        let at = try take(Int(length), what)
        do {
            // Its own bytes: the decoder's words then count from the dictionary's start.
            return try ArchiveFormat.decodeEntries(Array(bytes[at..<(at + Int(length))]), from: 0, to: Int(length))
        } catch {
            throw ProtocolViolation("the \(kind) frame's \(what) is not a valid dictionary: \(error.message)")
        }
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
