/// One HTTP/1.x request to the metrics port, read as hostile input: at most `maxBytes` bytes up to
/// the blank line that ends its head, and only its first line parsed — `METHOD TARGET HTTP/1.x` —
/// every byte of it checked. Header lines are not parsed (nothing of them is used); a body is never
/// read (the connection is closed after the response).
///
/// The answer is decided from the typed outcome (`Outcome`), never from words.
enum MetricsRequest {
    /// The most bytes of a request head (request line and headers) before its blank line.
    static let maxBytes = 8192
    /// The longest request line.
    static let maxLineBytes = 1024

    /// What a complete head asks for.
    enum Outcome: Equatable {
        /// `GET /metrics` (`head`: `HEAD /metrics`, no body); a query string is ignored.
        case metrics(head: Bool)
        /// A path other than `/metrics`.
        case notFound
        /// A method other than GET and HEAD.
        case methodNotAllowed
        /// A request line that does not parse, or a version other than HTTP/1.0 and HTTP/1.1.
        case badRequest
        /// No blank line within `maxBytes`.
        case tooLarge
    }

    /// The outcome once `buffer` holds a whole head (up to its blank line), `.tooLarge` when it holds
    /// `maxBytes` without one, nil while more may come. O(n) in the bytes held.
    static func outcome(_ buffer: [UInt8]) -> Outcome? {
        guard let end = headEnd(buffer) else { return buffer.count >= maxBytes ? .tooLarge : nil }
        guard end <= maxBytes else { return .tooLarge }
        return parseLine(buffer[..<(buffer.firstIndex(of: 10) ?? end)])
    }

    /// The index just past the blank line (`\r\n\r\n` or `\n\n`), if there is one.
    static func headEnd(_ buffer: [UInt8]) -> Int? {
        var index = 0
        var newlines = 0
        while index < buffer.count {
            switch buffer[index] {
            case 10:
                newlines += 1
                if newlines == 2 { return index + 1 }
            case 13: break
            default: newlines = 0
            }
            index += 1
        }
        return nil
    }

    /// The request line (without its `\n`; a `\r` before it dropped): three words separated by one
    /// space each, visible ASCII only.
    static func parseLine(_ bytes: ArraySlice<UInt8>) -> Outcome {
        var line = bytes
        if line.last == 13 { line = line.dropLast() }
        guard !line.isEmpty, line.count <= maxLineBytes, line.allSatisfy({ $0 > 32 && $0 < 127 || $0 == 32 }) else { return .badRequest }
        let words = line.split(separator: 32, omittingEmptySubsequences: false)
        guard words.count == 3, !words[0].isEmpty, !words[1].isEmpty else { return .badRequest }
        let version = String(decoding: words[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else { return .badRequest }
        let method = String(decoding: words[0], as: UTF8.self)
        guard method.utf8.allSatisfy({ $0 >= 65 && $0 <= 90 }) else { return .badRequest }
        guard method == "GET" || method == "HEAD" else { return .methodNotAllowed }
        let target = words[1]
        let path = target.prefix { $0 != UInt8(ascii: "?") }
        guard target.first == UInt8(ascii: "/") else { return .badRequest }
        return path.elementsEqual("/metrics".utf8) ? .metrics(head: method == "HEAD") : .notFound
    }

    /// The whole response for `outcome`: status line, headers, blank line, body (none for HEAD).
    static func response(_ outcome: Outcome, metrics: () -> String) -> [UInt8] {
        let status: String, body: String
        var extra = ""
        var sendBody = true
        switch outcome {
        case .metrics(let head):
            status = "200 OK"
            body = metrics()
            sendBody = !head
        case .notFound:
            status = "404 Not Found"
            body = "not found: the metrics are at /metrics\n"
        case .methodNotAllowed:
            status = "405 Method Not Allowed"
            body = "only GET and HEAD are served\n"
            extra = "Allow: GET, HEAD\r\n"
        case .badRequest:
            status = "400 Bad Request"
            body = "bad request line\n"
        case .tooLarge:
            status = "431 Request Header Fields Too Large"
            body = "request head larger than \(maxBytes) bytes\n"
        }
        let type = outcome == .metrics(head: true) || outcome == .metrics(head: false)
            ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8"
        let head = "HTTP/1.1 \(status)\r\nContent-Type: \(type)\r\nContent-Length: \(body.utf8.count)\r\n\(extra)Connection: close\r\n\r\n"
        return Array(head.utf8) + (sendBody ? Array(body.utf8) : [])
    }

    /// The status code of `outcome`, for the requests counter.
    static func code(_ outcome: Outcome) -> String {
        switch outcome {
        case .metrics: "200"
        case .notFound: "404"
        case .methodNotAllowed: "405"
        case .badRequest: "400"
        case .tooLarge: "431"
        }
    }
}
