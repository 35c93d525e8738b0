import Foundation
import Glibc
import XCTest

// The archive-writer-child executable (Tests/Helpers/archive-writer-child), as the kill tests start
// it, and reading what it prints.

/// The archive-writer-child executable built next to the test bundle; skips (saying where it looked)
/// when it is not there.
func archiveWriterChild() throws -> String {
    var candidates: [String] = []
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        candidates.append((exe as NSString).deletingLastPathComponent)
    }
    if let first = CommandLine.arguments.first {
        let absolute = first.hasPrefix("/") ? first : FileManager.default.currentDirectoryPath + "/" + first
        candidates.append((absolute as NSString).deletingLastPathComponent)
    }
    for folder in candidates {
        let path = folder + "/archive-writer-child"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    throw XCTSkip("archive-writer-child is not built next to the test bundle (looked in \(candidates)); build it with `swift build`")
}

/// Reads `fd` until a line starting with `prefix` arrives; false on timeout or end of file.
func waitForLine(starting prefix: String, from fd: Int32, seconds: Double) -> Bool {
    var output = ChildOutput(fd: fd)
    return output.read(seconds: seconds) { text in text.hasPrefix(prefix) || text.contains("\n" + prefix) }
}

/// What a child prints on a pipe, read as it comes.
struct ChildOutput {
    let fd: Int32
    private(set) var text = ""
    /// Whether the child closed its end (it exited, or was killed).
    private(set) var ended = false

    init(fd: Int32) { self.fd = fd }

    /// Reads until `done(text)` holds (true), the end of the output or `seconds` pass (false).
    mutating func read(seconds: Double, until done: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !done(text) {
            guard !ended, Date() < deadline else { return false }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 100)
            if ready <= 0 { continue }
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            if count <= 0 {
                ended = true
                return done(text)
            }
            text += String(decoding: buffer[0..<count], as: UTF8.self)
        }
        return true
    }

    /// Reads to the end of the output (the child is gone); false if it does not end within `seconds`.
    mutating func readToEnd(seconds: Double) -> Bool {
        _ = read(seconds: seconds) { _ in false }
        return ended
    }

    /// The complete lines starting with `prefix`, without it.
    func lines(starting prefix: String) -> [Substring] {
        text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            .filter { $0.hasPrefix(prefix) }.map { $0.dropFirst(prefix.count) }
    }
}
