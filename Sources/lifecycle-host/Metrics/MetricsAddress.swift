@preconcurrency import Glibc

/// Where `--metrics` listens: a numeric IPv4 or IPv6 address and a port, `127.0.0.1:9464` or
/// `[::1]:9464` (port 0: any free port, the trace's `metrics` line says which).
///
/// Numeric only: no name is looked up (a name would need the resolver, and `localhost` may mean
/// either family). Checked before it is used: the address by `inet_pton`, the port as 1–5 digits
/// at most 65535.
struct MetricsAddress: Equatable, Sendable, CustomStringConvertible {
    enum Family: Sendable { case ipv4, ipv6 }

    let host: String
    let port: UInt16
    let family: Family

    /// `127.0.0.1:9464`, `[::1]:9464`.
    var description: String { family == .ipv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Parses `HOST:PORT` or `[HOST]:PORT`; throws the reason in words.
    static func parse(_ text: String) throws(MetricsOptionError) -> MetricsAddress {
        guard text.utf8.count <= 64 else { throw MetricsOptionError("'\(text.prefix(64))…' is too long for an address and port") }
        let host: Substring, portText: Substring, family: Family
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw MetricsOptionError("'\(text)' is not [IPV6]:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
            family = .ipv6
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else {
                throw MetricsOptionError("'\(text)' is not ADDRESS:PORT (an IPv6 address goes in brackets: [::1]:9464)")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            family = .ipv4
        }
        guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let port = Int(portText), port <= 65535
        else { throw MetricsOptionError("the port in '\(text)' is not a number from 0 to 65535") }
        let address = MetricsAddress(host: String(host), port: UInt16(port), family: family)
        guard address.socketAddress() != nil else {
            throw MetricsOptionError("'\(host)' is not a numeric \(family == .ipv4 ? "IPv4" : "IPv6") address")
        }
        return address
    }

    /// The socket address, or nil when `host` does not parse.
    func socketAddress() -> SocketAddress? {
        switch family {
        case .ipv4:
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
            return .ipv4(address)
        case .ipv6:
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { return nil }
            return .ipv6(address)
        }
    }

    /// A bound socket's address as the host can print it (the port the kernel chose for port 0).
    static func bound(_ fd: Int32, like requested: MetricsAddress) -> MetricsAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { return requested }
        let port: UInt16 = withUnsafePointer(to: &storage) { pointer in
            requested.family == .ipv4
                ? pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
                : pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
        }
        return MetricsAddress(host: requested.host, port: port, family: requested.family)
    }
}

/// A `sockaddr_in` or `sockaddr_in6`, handed to `bind` as a `sockaddr`.
enum SocketAddress {
    case ipv4(sockaddr_in)
    case ipv6(sockaddr_in6)

    var family: Int32 {
        switch self {
        case .ipv4: AF_INET
        case .ipv6: AF_INET6
        }
    }

    func bind(_ fd: Int32) -> Int32 {
        switch self {
        case .ipv4(var address):
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .ipv6(var address):
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }
}

/// A `--metrics`, `--metrics-file` or `--metrics-interval` value that does not hold, in words.
struct MetricsOptionError: Error, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
