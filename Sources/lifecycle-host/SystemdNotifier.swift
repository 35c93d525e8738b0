import AppLifecycle
@preconcurrency import Glibc

/// systemd's readiness protocol (`sd_notify(3)`), without libsystemd: one datagram a message to the
/// `AF_UNIX` socket named by `NOTIFY_SOCKET` — a path, or an abstract name written with a leading `@`.
///
/// With `Type=notify` the service manager waits for `READY=1` (sent once the application has
/// launched), hears `STOPPING=1` when the run begins to end, and — with `WatchdogSec=` — expects
/// `WATCHDOG=1` at least every `WATCHDOG_USEC` microseconds: the host sends it every half of that
/// from a timer of its main run loop, so a main thread stuck in a plugin's callback stops the
/// keep-alives and systemd restarts the service. `WATCHDOG_PID`, when set, must be this process.
///
/// The variables are read once, at the start of `run`, and removed from the environment so that the
/// host's children (isolated plugins' processes) do not talk to the service manager as the service.
/// Messages are sent without blocking (`MSG_DONTWAIT`): a service manager that does not read loses
/// them, never stalls the loop. [loop-thread]
final class SystemdNotifier {
    /// The most microseconds `WATCHDOG_USEC` may say (the keep-alive interval must fit a Duration).
    static let maxWatchdogMicroseconds: UInt64 = 1 << 53

    private let fd: Int32
    private let address: sockaddr_un
    private let length: socklen_t
    /// The keep-alive interval (half of `WATCHDOG_USEC`), nil without a watchdog.
    let keepAlive: Duration?
    private var timer: LoopSource?
    private var readySent = false
    private var stoppingSent = false

    /// The variables `fromEnvironment` reads and takes out of the environment.
    static let variables = ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"]

    /// The notifier `NOTIFY_SOCKET` asks for, nil when it is unset; the variables are removed from the
    /// environment either way. A value that does not hold is a problem in words (`problem`), and no
    /// notifier. Call at the start of `run`, before any other thread reads the environment.
    static func fromEnvironment(problem: (String) -> Void) -> SystemdNotifier? {
        let socketPath = getenv("NOTIFY_SOCKET").map { String(cString: $0) }
        let usec = getenv("WATCHDOG_USEC").map { String(cString: $0) }
        let pid = getenv("WATCHDOG_PID").map { String(cString: $0) }
        for name in variables { unsetenv(name) }
        guard let socketPath else { return nil }
        var keepAlive: Duration?
        if let usec, pid == nil || pid == String(getpid()) {
            guard let micro = UInt64(usec), micro > 0, micro <= maxWatchdogMicroseconds, usec.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                problem("WATCHDOG_USEC '\(usec.prefix(32))' is not a number of microseconds from 1 to \(maxWatchdogMicroseconds); no keep-alive")
                return Self(socketPath: socketPath, keepAlive: nil, problem: problem)
            }
            keepAlive = .microseconds(Int64(micro / 2))
        }
        return Self(socketPath: socketPath, keepAlive: keepAlive, problem: problem)
    }

    private init?(socketPath: String, keepAlive: Duration?, problem: (String) -> Void) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(socketPath.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.first == UInt8(ascii: "/") || bytes.first == UInt8(ascii: "@"), bytes.count >= 2, bytes.count < capacity, !bytes.contains(0) else {
            problem("NOTIFY_SOCKET '\(socketPath.prefix(120))' is not an absolute path or an @abstract name shorter than \(capacity) bytes")
            return nil
        }
        let abstract = bytes[0] == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }  // an abstract name: a leading NUL, no terminator, the length exact
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            if !abstract { raw[bytes.count] = 0 }
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path) ?? 2
        length = socklen_t(pathOffset + bytes.count + (abstract ? 0 : 1))
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            problem("NOTIFY_SOCKET: socket: \(String(cString: strerror(errno)))")
            return nil
        }
        self.address = address
        self.keepAlive = keepAlive
    }

    deinit {
        timer?.cancel()
        _ = close(fd)
    }

    /// Starts the keep-alive timer (with `WATCHDOG_USEC`), sending the first `WATCHDOG=1` now.
    func start(loop: MainRunLoop) {
        guard let keepAlive, timer == nil else { return }
        send("WATCHDOG=1")
        timer = loop.addRealTimeTimer(after: keepAlive, repeating: keepAlive) { [unowned self] in send("WATCHDOG=1") }
    }

    /// `READY=1` (with the state as `STATUS=`), once, the first time the application is running.
    func applicationRan(_ state: ApplicationState) {
        guard !readySent, state != .notRunning else { return }
        readySent = true
        send("READY=1\nSTATUS=application \(state.rawValue)\nMAINPID=\(getpid())")
    }

    /// `STOPPING=1`, once: the run begins to end. The keep-alive goes on until the process ends.
    func stopping() {
        guard !stoppingSent else { return }
        stoppingSent = true
        send("STOPPING=1")
    }

    /// One datagram; false when it could not be sent (no listener, a full queue).
    @discardableResult
    func send(_ message: String) -> Bool {
        var address = address
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { target in
                bytes.withUnsafeBytes { Glibc.sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), target, length) }
            }
        }
        return sent == bytes.count
    }
}
