import CoreMetrics
import Logging

/// How an application is set up: budgets, watchdog policy, background behaviour, archive folder, logger.
///
/// A value type with defaults matching iOS; change what you need before creating the `Application`.
public struct Configuration: Sendable {
    /// Time budgets (as on iOS). Every one is measured on the monotonic clock.
    public struct Budgets: Sendable, Hashable {
        /// willFinishLaunching + state restoration + didFinishLaunching (and its notification). iOS: ≈5 s.
        public var launch: Duration = .seconds(5)
        /// applicationDidEnterBackground (and its notification) must return within this. iOS: ≈5 s.
        public var didEnterBackground: Duration = .seconds(5)
        /// applicationWillTerminate (and its notification). iOS: ≈5 s.
        public var willTerminate: Duration = .seconds(5)
        /// A fetch or remote-notification completion handler must be called within this. iOS: 30 s.
        public var completionHandler: Duration = .seconds(30)
        /// Background execution time granted after leaving the foreground, shared by all background tasks.
        public var backgroundTask: Duration = .seconds(30)
        /// How long before the background time runs out the expiration handlers are called.
        public var expirationWarning: Duration = .seconds(5)
        /// The main-thread hang budget: any one callback outside the launch, didEnterBackground and
        /// willTerminate phases (an observer, a delegate method, an expiration handler) that runs longer
        /// is reported (budget `hang`) and, under the `terminate` policy, kills the application. 5 s,
        /// as the phase budgets: iOS's watchdog kills an application whose main thread stops
        /// answering for a few seconds. Measured by sampling, so reported within a quarter of it (at
        /// most 1 s) after it ends.
        public var hang: Duration = .seconds(5)
        /// From a termination request (`Application.armTerminationDeadline`, a host's SIGTERM) to the end
        /// of the process; nil (the default): `didEnterBackground + willTerminate + hang` (15 s with the
        /// defaults), the longest a terminate from the foreground takes when every callback keeps its budget.
        public var terminate: Duration?

        /// The terminate budget in force: `terminate`, or its default.
        public var terminationBudget: Duration { terminate ?? didEnterBackground + willTerminate + hang }

        public init() {}
    }

    /// What happens when a callback overruns its budget.
    public struct WatchdogPolicy: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Kind: String { case terminate, report }
        fileprivate let kind: Kind
        /// As iOS: the application is killed (no willTerminate) and goes to not running.
        public static let terminate = WatchdogPolicy(kind: .terminate)
        /// The overrun is logged and traced, and the application goes on.
        public static let report = WatchdogPolicy(kind: .report)
        public var description: String { kind.rawValue }
        /// Parses `terminate` or `report`.
        public init?(name: String) {
            guard let kind = Kind(rawValue: name) else { return nil }
            self.kind = kind
        }
        private init(kind: Kind) { self.kind = kind }
    }

    /// The background modes an application declares (Info.plist `UIBackgroundModes`).
    public struct BackgroundModes: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        public static let audio = BackgroundModes(rawValue: 1 << 0)
        public static let location = BackgroundModes(rawValue: 1 << 1)
        public static let voip = BackgroundModes(rawValue: 1 << 2)
        public static let externalAccessory = BackgroundModes(rawValue: 1 << 3)
        public static let bluetoothCentral = BackgroundModes(rawValue: 1 << 4)
        public static let bluetoothPeripheral = BackgroundModes(rawValue: 1 << 5)
        /// Allows `backgroundFetch`; does not keep the application running.
        public static let fetch = BackgroundModes(rawValue: 1 << 6)
        /// Allows a remote notification to wake or launch the application; does not keep it running.
        public static let remoteNotification = BackgroundModes(rawValue: 1 << 7)
        public static let processing = BackgroundModes(rawValue: 1 << 8)

        /// The continuous modes: declaring any of them keeps the application in the background
        /// instead of suspending it (the engine does not model whether audio is actually playing).
        public static let continuous: BackgroundModes = [.audio, .location, .voip, .externalAccessory,
                                                          .bluetoothCentral, .bluetoothPeripheral]

        static let names: [(String, BackgroundModes)] = [
            ("audio", .audio), ("location", .location), ("voip", .voip), ("external-accessory", .externalAccessory),
            ("bluetooth-central", .bluetoothCentral), ("bluetooth-peripheral", .bluetoothPeripheral),
            ("fetch", .fetch), ("remote-notification", .remoteNotification), ("processing", .processing),
        ]

        /// Parses one mode name (`audio`, `fetch`, `remote-notification`, …).
        public init?(name: String) {
            guard let found = Self.names.first(where: { $0.0 == name }) else { return nil }
            self = found.1
        }

        /// Every mode name, in declaration order.
        public static var allNames: [String] { names.map(\.0) }

        /// The names of the modes in this set.
        public var names: [String] { Self.names.filter { contains($0.1) }.map(\.0) }
    }

    public var budgets = Budgets()
    public var watchdogPolicy: WatchdogPolicy = .terminate
    /// `UIApplicationExitsOnSuspend`: leaving the foreground terminates the application (as on iOS).
    public var exitsOnSuspend = false
    public var backgroundModes: BackgroundModes = []
    /// The scene manifest (`UIApplicationSceneManifest`): set, the application is scene-based (as iOS
    /// 13 and later) — scene delegates get the foreground and background callbacks, and a launch connects a
    /// scene. Nil (the default): an application without scenes, exactly as before scenes existed.
    public var sceneManifest: SceneManifest?
    /// Where state-preservation archives live (one file per delegate id); nil turns preservation off.
    public var archiveDirectory: String?
    /// The memory-warning escalation policy: the application is warned this many times in a row
    /// without relief (a `memory-warning normal` relieves it), and the next warning terminates it
    /// outright instead — no callback, as the system ends an application that "does not release enough
    /// memory" (seed 002; docs/lifecycle.md, decision 50). Nil (the default), or below 1: never. The
    /// host's `--memory-warning-limit`, C's `lc_config_t.memory_warning_limit` (at most 1,000).
    public var memoryWarningLimit: Int?
    /// The engine logs at debug level (and watchdog reports at warning); it never prints.
    public var logger = Logger(label: "AppLifecycle")
    /// Called on the watchdog thread (or the loop thread for completion/background-task overruns) for
    /// every overrun, as soon as it is noticed — while the overrunning callback may still be running.
    public var onWatchdogReport: (@Sendable (WatchdogReport) -> Void)?
    /// Called when the `.terminate` policy kills the application, on the thread that noticed it. A host
    /// process typically exits here, since a callback that never returns cannot be unwound.
    public var onWatchdogKill: (@Sendable (WatchdogReport) -> Void)?
    /// Called on the watchdog thread when a termination armed with `Application.armTerminationDeadline`
    /// has not ended the process within the terminate budget (budget `.terminate`, subject
    /// `.termination`), whatever the loop thread is doing. A host exits here; without it the overdue
    /// termination is only logged.
    public var onTerminationOverdue: (@Sendable (WatchdogReport) -> Void)?
    /// Where the application records its metrics (`LifecycleMetric`), through swift-metrics' API.
    /// Nil (the default): `MetricsSystem.factory`, as the program bootstrapped it. When that is
    /// swift-metrics' no-op (nothing bootstrapped), the application records nothing and holds no
    /// metrics at all: no counter, no timer, no clock read, nothing added to any path.
    public var metricsFactory: (any MetricsFactory)?

    public init() {}
}

/// One budget overrun: which observer, which event, how long.
public struct WatchdogReport: Sendable, CustomStringConvertible {
    /// The delegate or observer owner (a plugin id) that was running or did not call back.
    public let observer: String
    /// The callback or request: a delegate selector, a notification name, a completion handler, a background task.
    public let event: String
    /// The budget that was exceeded.
    public let budgetKind: Budget
    /// The budget's name: launch, didEnterBackground, willTerminate, completionHandler, backgroundTask.
    public var budgetName: String { budgetKind.rawValue }
    /// How long the budget was.
    public let budget: Duration
    /// Time from the start of the budget until the report.
    public let elapsed: Duration
    public let policy: Configuration.WatchdogPolicy
    /// What overran, typed.
    public let subject: Subject

    /// The budgets the watchdog keeps (see `Configuration.Budgets`).
    public enum Budget: String, Hashable, Sendable, CaseIterable {
        case launch, didEnterBackground, willTerminate, completionHandler, backgroundTask
        /// One callback outside the budgeted phases (`Budgets.hang`).
        case hang
        /// A termination request to the end of the process (`Budgets.terminationBudget`).
        case terminate
    }

    /// What overran a budget.
    public enum Subject: Hashable, Sendable {
        /// A delegate method or observer inside a budgeted phase (launch, didEnterBackground,
        /// willTerminate); `event` names it, or is the budget's name when nothing was running.
        case callback
        /// A completion handler of this delegate method that was not called in time.
        case completionHandler(DelegateMethod)
        /// A background task still open when the background time ran out.
        case backgroundTask(BackgroundTaskID, name: String)
        /// A callback outside the budgeted phases that ran past the hang budget: the outermost one
        /// (whose budget it is) and the innermost (where the loop thread was when it was reported).
        case hang(RunningCallback, in: RunningCallback)
        /// A termination requested for `reason` (e.g. `signal SIGTERM`) that had not ended the
        /// process at the end of the terminate budget; `running`/`in`: the outermost and innermost
        /// callbacks the loop thread was in then (nil: none — the loop was elsewhere).
        case termination(reason: String, running: RunningCallback?, in: RunningCallback?)
    }

    init(observer: String, event: String, budget budgetKind: Budget, of budget: Duration, elapsed: Duration,
         policy: Configuration.WatchdogPolicy, subject: Subject = .callback)
    {
        self.observer = observer
        self.event = event
        self.budgetKind = budgetKind
        self.budget = budget
        self.elapsed = elapsed
        self.policy = policy
        self.subject = subject
    }

    public var description: String {
        let who = observer.isEmpty ? "" : " by '\(observer)'"
        let times = "\(formatSeconds(elapsed)) of \(formatSeconds(budget))"
        switch subject {
        case .termination(let reason, let running, let inner):
            let doing = running.map { "the main thread was still in the \($0)" + Self.nested($0, inner) }
                ?? "the main thread was not in a callback"
            return "\(reason): the application did not end within the terminate budget (\(times)); \(doing)"
        case .hang(let outer, let inner):
            // Sampled: the callback ran at least this long (see `Budgets.hang`).
            return "\(event)\(who) overran the hang budget: at least \(times) (policy: \(policy))" + Self.nested(outer, inner)
        default:
            return "\(event)\(who) overran the \(budgetName) budget: \(times) (policy: \(policy))"
        }
    }

    /// `, now in the …` when the innermost callback is another one.
    private static func nested(_ outer: RunningCallback, _ inner: RunningCallback?) -> String {
        guard let inner, inner != outer else { return "" }
        return ", now in the \(inner)"
    }
}

/// Seconds with three decimals, e.g. `1.250 s`.
package func formatSeconds(_ d: Duration) -> String {
    let ms = Int64((d.secondsDouble * 1000).rounded())
    let fraction = String(ms % 1000)
    return "\(ms / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction) s"
}
