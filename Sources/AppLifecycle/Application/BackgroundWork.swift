import Synchronization

/// Identifies a background task (`UIBackgroundTaskIdentifier`).
public struct BackgroundTaskID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { String(rawValue) }
}

/// What the engine knows of an open background task.
public struct BackgroundTaskInfo: Sendable, CustomStringConvertible {
    public let id: BackgroundTaskID
    public let name: String
    /// Who began it (a plugin id), or empty.
    public let owner: String
    /// Whether its expiration handler has been called.
    public let expirationHandlerCalled: Bool
    public var description: String { "#\(id) \(name)" + (owner.isEmpty ? "" : " [\(owner)]") }
}

/// The completion handler of one fetch or remote-notification request (one per delegate called).
///
/// Call it once, from any thread, with the result. A second call is reported in the trace and ignored.
/// Not calling it within the completion budget (30 s) goes to the watchdog policy. The application
/// stays in the background, not suspended, until every handler of the request has been called.
public final class FetchCompletionHandler: Sendable {
    private let called = Atomic<Bool>(false)
    private let ended = Atomic<Bool>(false)
    private let complete: @Sendable (FetchResult, _ repeated: Bool) -> Void
    /// Run once when the request ends (`whenEnded`).
    private let endObserver = Mutex<(@Sendable () -> Void)?>(nil)

    /// A handler whose calls go to `complete` (with whether the call is a repeat): for carriers of a
    /// request to another process (an isolated plugin's side of a completion).
    package init(complete: @escaping @Sendable (FetchResult, Bool) -> Void) { self.complete = complete }

    /// Completes the request. [thread-safe]
    public func callAsFunction(_ result: FetchResult) {
        let repeated = called.exchange(true, ordering: .acquiringAndReleasing)
        complete(result, repeated)
    }

    /// Whether it has been called.
    public var wasCalled: Bool { called.load(ordering: .acquiring) }

    /// Whether the request is over: completed, timed out, or the application stopped running. A
    /// C function pointer bound to this handler may be freed after that. [thread-safe]
    package var requestEnded: Bool { ended.load(ordering: .acquiring) }

    /// Ends the request: from now on a call is late. The engine's when the request is over; a carrier
    /// of a request to another process marks its side ended when told. [thread-safe] Runs the
    /// `whenEnded` body, once, on the calling thread.
    package func markEnded() {
        let observer = endObserver.withLock { observer in
            ended.store(true, ordering: .releasing)
            defer { observer = nil }
            return observer
        }
        observer?()
    }

    /// Runs `body` once when the request ends (at once, on this thread, if it has): for a carrier of
    /// the request to another process, which must tell that process. The engine ends requests on its
    /// loop thread. [thread-safe] One body: a second replaces the first.
    package func whenEnded(_ body: @escaping @Sendable () -> Void) {
        let now = endObserver.withLock { observer in
            if ended.load(ordering: .acquiring) { return true }
            observer = body
            return false
        }
        if now { body() }
    }
}

/// The completion handler of `application:handleEventsForBackgroundURLSession:completionHandler:`,
/// which carries no result (Apple's `() -> Void`).
///
/// Call it once, from any thread, when the session's events are processed. A second call is
/// reported in the trace and ignored. Not calling it within the completion budget (30 s) goes to the
/// watchdog policy. The application stays in the background, not suspended, until it is called. It
/// is a fetch request's handler underneath (one request table, one budget), completed with no result.
public struct URLSessionCompletionHandler: Sendable {
    /// The request it completes.
    package let request: FetchCompletionHandler

    package init(_ request: FetchCompletionHandler) { self.request = request }

    /// Completes the request. [thread-safe]
    public func callAsFunction() { request(.noData) }

    /// Whether it has been called.
    public var wasCalled: Bool { request.wasCalled }
}
