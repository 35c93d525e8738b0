// The fuzz targets: each a plain function of bytes, called alike by a libFuzzer executable and by the
// regression tests.
import HostInput

/// What one input came to. Any input must end here: a crash, a trap or a hang inside is the bug a
/// fuzzer looks for; `violations` are the properties the target checks that did not hold.
package struct FuzzOutcome: Sendable, Equatable {
    /// Items taken without an error: scenario lines, answered requests, archive entries.
    package var accepted = 0
    /// The errors the input got, as a user would read them, in order (refusals are fine).
    package var errors: [String] = []
    /// Properties that did not hold (a round trip that changed something, an error without words). A
    /// libFuzzer executable stops at the first input with one, as at a crash.
    package var violations: [String] = []

    package init() {}

    mutating func check(_ holds: Bool, _ what: @autoclosure () -> String) {
        if !holds { violations.append(what()) }
    }

    /// Records an error message; an empty one is a violation (every refusal says why).
    mutating func refused(_ message: String) {
        errors.append(message)
        check(!message.trimmingWhitespace().isEmpty, "an error without a message")
    }
}

/// The fuzz targets (Fuzz/README.md).
package enum FuzzTarget: String, CaseIterable, Sendable {
    /// Scenario files and lines: the parser the prompt and `send` use.
    case scenario
    /// The control socket: framing a connection's bytes, parsing and dispatching each request to a
    /// real `Application`, and the client reading the response back.
    case control
    /// The state-preservation archive decoder, and the store's reading of an archive file.
    case archive

    /// Runs one input.
    package func run(_ bytes: [UInt8]) -> FuzzOutcome {
        switch self {
        case .scenario: return ScenarioFuzz.run(bytes)
        case .control: return ControlFuzz.run(bytes)
        case .archive: return ArchiveFuzz.run(bytes)
        }
    }

    /// The body of `LLVMFuzzerTestOneInput`: runs the input, and traps when a property did not hold
    /// (libFuzzer then saves the input as a crash).
    package func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        let outcome = run(bytes)
        if let first = outcome.violations.first { fatalError("fuzz-\(rawValue): \(first)") }
        return 0
    }
}
