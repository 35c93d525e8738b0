@preconcurrency import Glibc
import LifecycleRunLoop
import Synchronization

/// What a validation step (`ValidationStep`, the plugin's process) tells the validator, on descriptor 3:
/// one record a line, tab-separated fields, written as things happen (a crash loses nothing written).
///
/// The plugin runs in that process and could write there too: the validator reads the records as
/// hostile input (lines and fields bounded, unknown or malformed lines dropped).
enum StepRecord: Equatable {
    /// The plugin loaded: what it is, observes and implements.
    case described(PluginSummary)
    /// The step's process entered a phase.
    case phase(StepPhase)
    /// A step of the sequence begins (its scenario line, or validate's own words).
    case step(String)
    /// The engine starts a callback the plugin may have: a notification's observers, a delegate
    /// method, an expiration handler.
    case callback(String)
    /// Something a check fails for (`check`: a `ValidationCheck` id).
    case finding(check: String, text: String)
    /// A host-API call of the plugin was refused: the first refusal of its kind (function, status,
    /// `afterUnload`: made in or after its deinit), whose message is the finding's reason.
    case refused(function: String, status: String, message: String, afterUnload: Bool)
    /// The plugin called `exit(status)`: intercepted, the process ends with `HostExit.pluginExit`.
    case exit(Int32)
    /// The sequence could not go on (an action illegal in the state the plugin left): the words.
    case stuck(String)
    /// The step ran to its end.
    case done

    /// The record as one line (no line feed). Tabs and line feeds inside a field become spaces.
    var line: String {
        func clean(_ text: String) -> String {
            String(text.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? " " : $0 })
        }
        let fields: [String] = switch self {
        case .described(let p):
            ["described", p.id, p.version, p.abi, p.summary, p.observes.joined(separator: ","), p.delegates.joined(separator: ","),
             p.sceneMethods.joined(separator: ",")]
        case .phase(let phase): ["phase", phase.rawValue]
        case .step(let text): ["step", text]
        case .callback(let name): ["callback", name]
        case .finding(let check, let text): ["finding", check, text]
        case .refused(let function, let status, let message, let after): ["refused", function, status, after ? "after" : "before", message]
        case .exit(let status): ["exit", String(status)]
        case .stuck(let text): ["stuck", text]
        case .done: ["done"]
        }
        return fields.map(clean).joined(separator: "\t")
    }

    /// Reads one line back; nil for anything malformed.
    init?(line: Substring) {
        let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        func list(_ text: String) -> [String] { text.isEmpty ? [] : text.split(separator: ",").map(String.init) }
        switch (f.first, f.count) {
        case ("described", 8):
            self = .described(PluginSummary(id: f[1], version: f[2], abi: f[3], summary: f[4], observes: list(f[5]), delegates: list(f[6]),
                                            sceneMethods: list(f[7])))
        case ("phase", 2):
            guard let phase = StepPhase(rawValue: f[1]) else { return nil }
            self = .phase(phase)
        case ("step", 2): self = .step(f[1])
        case ("callback", 2): self = .callback(f[1])
        case ("finding", 3): self = .finding(check: f[1], text: f[2])
        case ("refused", 5) where f[3] == "after" || f[3] == "before":
            self = .refused(function: f[1], status: f[2], message: f[4], afterUnload: f[3] == "after")
        case ("exit", 2):
            guard let status = Int32(f[1]) else { return nil }
            self = .exit(status)
        case ("stuck", 2): self = .stuck(f[1])
        case ("done", 1): self = .done
        default: return nil
        }
    }
}

/// Where a step's process is: what a crash interrupted.
enum StepPhase: String {
    /// Opening the plugin and running its init.
    case load
    /// After its init returned, before the sequence: `ValidationStep.settle` for what init started.
    case afterInit = "after-init"
    /// Taking it through the sequence.
    case sequence
    /// Unloading it: its registrations removed, its deinit called.
    case unloading = "deinit"
    /// After its deinit returned: nothing of it should run any more.
    case afterDeinit = "after-deinit"
}

/// What a plugin is, observes and implements, as its step process found it loaded.
struct PluginSummary: Equatable {
    var id: String
    var version: String
    /// `MAJOR.MINOR`.
    var abi: String
    var summary: String
    var observes: [String]
    var delegates: [String]
    var sceneMethods: [String]
}

/// The step process's side of the channel. [thread-safe] One lock around each line: the watchdog
/// thread, a plugin's thread and the main thread may all write.
final class StepRecordWriter: Sendable {
    private let fd: Int32
    private let lock = Mutex<Void>(())

    init(fd: Int32) { self.fd = fd }

    func write(_ record: StepRecord) {
        var bytes = Array((record.line + "\n").utf8)
        lock.withLock { _ in
            var offset = 0
            while offset < bytes.count {
                guard let n = try? systemCall("write", { bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) } }),
                      n > 0 else { return }
                offset += n
            }
        }
        bytes.removeAll()
    }
}

/// The validator's side: whole lines out of the bytes as they come, each at most 64 KiB (a longer
/// one is dropped whole), at most 100,000 records a step (more are dropped).
struct StepRecordReader {
    private(set) var records: [StepRecord] = []
    private var pending: [UInt8] = []
    private var skipping = false
    static let maximumLine = 65536
    static let maximumRecords = 100_000

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        for byte in bytes {
            if byte == 0x0A {
                if !skipping, records.count < Self.maximumRecords,
                   let record = StepRecord(line: Substring(String(decoding: pending, as: UTF8.self))) {
                    records.append(record)
                }
                pending.removeAll(keepingCapacity: true)
                skipping = false
            } else if pending.count < Self.maximumLine {
                pending.append(byte)
            } else {
                skipping = true
            }
        }
    }
}
