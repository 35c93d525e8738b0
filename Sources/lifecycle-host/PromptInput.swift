@preconcurrency import Glibc
import AppLifecycle

/// Standard input as the prompt's lines (`run --interactive`): read without blocking when the loop
/// says it is readable, split by `LineReader`, with a `lifecycle> ` prompt on standard error when
/// standard input is a terminal.
///
/// [loop-thread] Made, read and closed on the loop's thread; `handler` runs there, one line at a time,
/// in the order typed. Once closed (end of input, or `close()` from the handler) no more lines come,
/// not even the rest of a chunk already read.
final class PromptInput {
    enum Event: Equatable {
        /// One line, without its line break.
        case line(String)
        /// A line longer than `LineReader.maxLineBytes`: dropped.
        case tooLong
        /// End of input (or a read error): the reader is closed.
        case closed
    }

    private var lines = LineReader()
    private var source: LoopSource?
    private let handler: (Event) -> Void

    /// Whether lines may still come.
    var isOpen: Bool { source != nil }

    /// Starts reading standard input on `loop` (made non-blocking) and shows the prompt.
    init(loop: MainRunLoop, handler: @escaping (Event) -> Void) throws(RunLoopError) {
        self.handler = handler
        let flags = fcntl(STDIN_FILENO, F_GETFL)
        _ = fcntl(STDIN_FILENO, F_SETFL, flags | O_NONBLOCK)
        source = try loop.addReader(fd: STDIN_FILENO) { [unowned self] in self.read() }
        showPrompt()
    }

    /// `lifecycle> ` on standard error, when standard input is a terminal.
    func showPrompt() {
        guard isOpen, isatty(STDIN_FILENO) == 1 else { return }
        fputs("lifecycle> ", stderr)
        fflush(stderr)
    }

    /// Stops reading (idempotent).
    func close() {
        source?.cancel()
        source = nil
    }

    private func read() {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let n: Int
        do throws(SystemCallError) {
            n = try systemCall("read") { chunk.withUnsafeMutableBytes { Glibc.read(STDIN_FILENO, $0.baseAddress, $0.count) } }
        } catch {
            if error.errno == EAGAIN { return }
            n = -1  // any other failure ends the input, as the end of the file does
        }
        guard n > 0 else {
            close()
            return handler(.closed)
        }
        for line in lines.append(chunk[0..<n]) {
            switch line {
            case .text(let text): handler(.line(text))
            case .tooLong: handler(.tooLong)
            }
            if !isOpen { return }
        }
    }
}
