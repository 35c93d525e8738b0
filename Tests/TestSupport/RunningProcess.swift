import Foundation
import Synchronization

/// A child process whose standard output is read line by line while it runs.
public final class RunningProcess: @unchecked Sendable {
    private final class Store: Sendable {
        let lines = Mutex<[String]>([])
        let errorText = Mutex<String>("")
        let done = Mutex<Bool>(false)
    }
    private let process: Process
    private let store = Store()
    private let reader: Thread

    /// Starts `program`; standard input is a pipe left open (`closeInput()` sends EOF).
    public init(_ program: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        inputPipe = input
        let store = self.store
        reader = Thread {
            var pending = Data()
            let handle = out.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    store.lines.withLock { $0.append(line) }
                }
            }
            let rest = err.fileHandleForReading.readDataToEndOfFile()
            store.errorText.withLock { $0 = String(decoding: rest, as: UTF8.self) }
            store.done.withLock { $0 = true }
        }
        try process.run()
        reader.start()
    }

    private let inputPipe: Pipe

    public var pid: Int32 { process.processIdentifier }

    /// The lines read so far.
    public var output: [String] { store.lines.withLock { $0 } }

    /// Standard error (complete once the process has exited).
    public var standardError: String { store.errorText.withLock { $0 } }

    /// Waits until a line satisfies `match`; returns it, or nil after `timeout` seconds.
    /// Only lines from index `after` on are considered.
    @discardableResult
    public func waitForLine(timeout: Double = 10, after: Int = 0, _ match: (String) -> Bool) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let lines = output  // a copy: `match` may look at the process too
            if lines.count > after, let line = lines[after...].first(where: match) { return line }
            usleep(5_000)
        }
        return nil
    }

    /// Writes a line to the process's standard input.
    public func send(_ line: String) { inputPipe.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    public func closeInput() { try? inputPipe.fileHandleForWriting.close() }

    /// Sends a signal.
    public func signal(_ signo: Int32) { kill(process.processIdentifier, signo) }

    /// The one-letter state from /proc/PID/stat ("T" when stopped).
    public var procState: String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(close, offsetBy: 2)...].split(separator: " ").first.map(String.init)
    }

    /// Waits for the exit (killing the process after `timeout` seconds) and returns the status.
    public func wait(timeout: Double = 20) -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(5_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        while !store.done.withLock({ $0 }) { usleep(1_000) }
        return process.terminationStatus
    }
}
