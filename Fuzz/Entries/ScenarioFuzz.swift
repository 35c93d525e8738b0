// Fuzz target `scenario`: the bytes as a scenario file, and each of its lines as the prompt and
// `send` take one.
import AppLifecycle
import HostInput

enum ScenarioFuzz {
    static let file = "fuzz.scenario"

    static func run(_ bytes: [UInt8]) -> FuzzOutcome {
        var outcome = FuzzOutcome()
        // As the host reads a scenario file (invalid UTF-8 becomes U+FFFD).
        let text = String(decoding: bytes, as: UTF8.self)
        do {
            let lines = try ScenarioParser.parse(text: text, file: file)
            outcome.accepted = lines.count
            for line in lines {
                outcome.check(!line.command.description.isEmpty, "\(line.location): a command without a description")
            }
        } catch {
            outcome.refused(error.description)
            outcome.check(error.location.hasPrefix(file + ":"), "an error located at '\(error.location)', not in \(file)")
        }
        // Every line on its own, trimmed as the prompt trims it: its words, which must survive being
        // quoted and read again (`lifecycle-host send` builds its request so), and the line parsed.
        for raw in text.utf8.split(separator: 10, omittingEmptySubsequences: false) {
            let line = String(decoding: raw, as: UTF8.self).trimmingWhitespace()
            let words: [String]
            do {
                words = try ScenarioParser.tokenize(line)
            } catch {
                outcome.refused(error.message)
                continue
            }
            let requoted = words.map(ScenarioParser.quote).joined(separator: " ")
            let again = try? ScenarioParser.tokenize(requoted)
            outcome.check(again == words, "the words \(words) quoted as \(requoted.debugDescription) read back as \(again.map { "\($0)" } ?? "an error")")
            do {
                _ = try ScenarioParser.parse(line: line)
            } catch {
                outcome.refused(error.message)
            }
        }
        return outcome
    }
}
