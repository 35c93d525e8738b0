// Fuzz target `control`: the bytes as what a client sends on one connection, framed and answered as
// the server answers them (each request dispatched to a real Application), and each response read
// back as the client reads it; the same bytes also as a hostile server's response.
import AppLifecycle
import HostInput

enum ControlFuzz {
    /// The first byte chooses the application (bit 0: scene-based) and how the bytes arrive (bits 1-7:
    /// in chunks of 1 to 128 bytes); the rest is the connection's stream, which ends after it.
    static func run(_ bytes: [UInt8]) -> FuzzOutcome {
        var outcome = FuzzOutcome()
        guard let setup = bytes.first else { return outcome }
        let stream = Array(bytes.dropFirst())
        let chunk = Int(setup >> 1) + 1
        let loop: MainRunLoop
        do { loop = try MainRunLoop() } catch {
            outcome.check(false, "no run loop: \(error)")
            return outcome
        }
        var configuration = Configuration()
        if setup & 1 == 1 { configuration.sceneManifest = SceneManifest() }
        let app = Application(configuration: configuration, loop: loop)

        // The server's side, as ControlServer reads a connection: partial lines kept between reads.
        var input: [UInt8] = []
        var scanned = 0  // bytes of `input` known to hold no line feed, as ControlServer keeps them
        var responses: [[UInt8]] = []
        var offset = 0
        reading: while true {
            let end = min(stream.count, offset + chunk)
            input.append(contentsOf: stream[offset..<end])
            offset = end
            let atEnd = offset == stream.count
            let drained = ControlFraming.drain(input, known: scanned, atEnd: atEnd, while: { true }) { frame in
                let response = ControlFraming.response(to: frame) { line in
                    ControlRequest(line: line).response(
                        status: { "{\"state\":\"\(app.state.rawValue)\"}" },
                        perform: { $0.perform(on: app, fromScript: false) },
                        state: { app.state })
                }
                if let response { responses.append(response) }
            }
            switch drained {
            case .waiting(let consumed):
                input.removeFirst(consumed)
                scanned = input.count
                outcome.check(input.count <= ControlFraming.maxRequestLength, "\(input.count) bytes kept for a partial line")
                if atEnd {
                    outcome.check(input.isEmpty, "the end of the stream left \(input.count) bytes unanswered")
                    break reading
                }
            case .tooLong:
                responses.append(ControlFraming.responseBytes(ControlFraming.tooLongResponse))
                break reading
            case .stopped:
                outcome.check(false, "the server stopped without being asked to")
                break reading
            }
        }

        // The client's side: each response is exactly one line, read back whole.
        for response in responses {
            outcome.check(response.last == 10 && response.dropLast().allSatisfy { $0 != 10 && $0 != 13 },
                          "a response that is not exactly one line")
            var reader = ControlFraming.ResponseReader()
            let line = read(response, with: &reader, chunk: chunk)
            outcome.check(line == .line(String(decoding: response.dropLast(), as: UTF8.self)), "a response read back as \(line)")
            guard case .line(let text) = line else { continue }
            if text.hasPrefix("error: ") {
                outcome.refused(String(text.dropFirst("error: ".count)))
            } else {
                outcome.check(text.hasPrefix("ok") || text.hasPrefix("{"), "a response that is neither ok nor error: \(text.prefix(80))")
                outcome.accepted += 1
            }
        }

        // The same bytes as a hostile server's response: the client takes the first line, or waits.
        var reader = ControlFraming.ResponseReader()
        let first = read(stream, with: &reader, chunk: chunk)
        if let newline = stream.firstIndex(of: 10) {
            outcome.check(first == .line(String(decoding: stream[..<newline], as: UTF8.self)), "a server's line read as \(first)")
        } else {
            outcome.check(first == .needMore, "a response without a line feed read as \(first)")
        }
        return outcome
    }

    /// Feeds `bytes` to `reader` `chunk` bytes at a time, until it has an answer.
    private static func read(_ bytes: [UInt8], with reader: inout ControlFraming.ResponseReader, chunk: Int) -> ControlFraming.ResponseReader.Progress {
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + chunk)
            let progress = reader.append(bytes[offset..<end])
            if progress != .needMore { return progress }
            offset = end
        }
        return .needMore
    }
}
