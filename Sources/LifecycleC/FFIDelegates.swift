import AppLifecycle
import Glibc

/// The one delegate bridge of the C layer: C functions implementing delegate methods become an
/// ordinary `DelegateHandlers` table, called through libffi. Every way C implements delegates goes
/// through it — a plugin's exported ABI 1.0 functions (found by the plugins module in the plugin's
/// symbol table), a plugin's ABI 1.1 `lc_plugin_delegate_t`, and `lc_delegate_t` (`lc_app_add_delegate`) — with one
/// marshalling of dictionaries, strings, archives and completions, and one way to call.
///
/// One table, `functions` (this file), lists every delegate function: the method, the C symbol, the
/// libffi return and argument types, and how Swift values are marshalled (`Shape`). Binding
/// (`FFIDelegates+Binding.swift`) sets a handler for each row given an address, as a closure that
/// marshals the arguments and calls the C function with `ffi_call` (`FFIDelegates+Calls.swift`).
/// Adding a delegate method means adding a row, plus a `Shape` case only when no existing one fits.
/// Scene delegate methods are rows too (`Shape.isScene`): they bind into a `SceneDelegateHandlers`
/// (`bindScenes`) through the same conventions, marshalling and calls.
///
/// - Threads: every bound handler runs on the loop thread, as every delegate does; the C function is
///   called on that thread. The call interfaces are prepared once per signature, lazily and under a
///   lock, and shared read-only by all threads. Completion function pointers handed to plugins may be
///   called from any thread (see `CompletionClosurePool`).
/// - Ownership: dictionaries, strings and archives handed to a C function are owned by the host and
///   live exactly as long as the call (the header's rule). The C function addresses must stay
///   mapped while the handlers exist (plugins are loaded with `RTLD_NODELETE`).
package enum FFIDelegates {
    /// A C type at the delegate ABI, as libffi describes it.
    package enum CType: UInt8, Sendable, Hashable {
        case void
        /// C `bool`: one byte (`ffi_type_uint8`); a returned one is read from an `ffi_arg`-sized buffer.
        case bool
        case uint32
        /// `uint64_t` (an `lc_completion_token`).
        case uint64
        /// Any data or function pointer (`lc_app *`, `const lc_dict *`, `const char *`, a completion function).
        case pointer
    }

    /// How a row's Swift handler maps onto its C arguments: each case names the handler it sets.
    ///
    /// The handler is named by a setter (`{ $0.didBecomeActive = $1 }`) rather than a key path: the
    /// runtime instantiates key-path literals on first use, which made the first plugin load of a
    /// process pay for 19 of them (about 0.15 ms), and every write through one goes through the
    /// generic key-path machinery.
    package enum Shape: Sendable {
        package typealias Setter<Handler> = @Sendable (inout DelegateHandlers, Handler?) -> Void
        /// A scene delegate's handler (`SceneDelegateHandlers`), set as `Setter` sets an application's.
        package typealias SceneSetter<Handler> = @Sendable (inout SceneDelegateHandlers, Handler?) -> Void

        /// `void f(lc_app *app)`
        case notify(Setter<(Application) -> Void>)
        /// `bool f(lc_app *app, const lc_dict *options)`
        case askWithDict(Setter<(Application, UserInfo) -> Bool>)
        /// `void f(lc_app *app, const lc_dict *dict)`
        case receiveDict(Setter<(Application, UserInfo) -> Void>)
        /// `bool f(lc_app *app, const char *url, const char *source_app, const lc_dict *annotation)`
        case openURL
        /// `bool f(lc_app *app, const char *url, const lc_dict *options)`
        case openURLWithOptions
        /// `void f(lc_app *app, void (*completion)(lc_fetch_result))`
        case fetch
        /// `void f(lc_app *app, const lc_dict *user_info, void (*completion)(lc_fetch_result))`
        case remoteNotificationWithCompletion
        /// `bool f(lc_app *app, [const] lc_dict *coder)`: the archive's values in a box; written back
        /// into the archive after the call when `writable` (the C parameter is not `const`).
        case askArchive(Setter<(Application, StateArchive) -> Bool>, writable: Bool)
        /// `void f(lc_app *app, [const] lc_dict *coder)`, as `askArchive`.
        case archive(Setter<(Application, StateArchive) -> Void>, writable: Bool)

        // ABI 1.2: the application's scene-session and Handoff methods. A user activity crosses as a
        // dictionary (`UserActivity.dictionary`: activityType, title, userInfo).

        /// `const char *f(lc_app *app, const char *session_id, const lc_dict *options)`: a configuration name.
        case configuration
        /// `void f(lc_app *app, const lc_dict *sessions)`: one key per session id, its configuration name.
        case discardSessions
        /// `bool f(lc_app *app, const char *text)`
        case askWithString(Setter<(Application, String) -> Bool>)
        /// `bool f(lc_app *app, const lc_dict *activity)`
        case askActivity(Setter<(Application, UserActivity) -> Bool>)
        /// `void f(lc_app *app, const lc_dict *activity)`
        case receiveActivity(Setter<(Application, UserActivity) -> Void>)
        /// `void f(lc_app *app, const char *activity_type, const char *error)`
        case failActivity
        /// `void f(lc_app *app, const char *text)` (ABI 1.5: a device token, an error)
        case receiveString(Setter<(Application, String) -> Void>)
        /// `void f(lc_app *app, const char *identifier, void (*completion)(void))`: a URL session's
        /// events, with a completion that carries no result.
        case urlSessionEvents

        // ABI 1.2: the scene delegate's methods; each takes the scene (`lc_scene *`) first.

        /// `void f(lc_app *app, lc_scene *scene)`
        case sceneNotify(SceneSetter<(Application, Scene) -> Void>)
        /// `void f(lc_app *app, lc_scene *scene, const lc_dict *options)`: the connection options.
        case sceneWillConnect
        /// `void f(lc_app *app, lc_scene *scene, const lc_dict *contexts)`
        case sceneOpenURLs
        /// `bool f(lc_app *app, lc_scene *scene, lc_dict *activity)`: fills a writable activity.
        case sceneRestoration
        /// `void f(lc_app *app, lc_scene *scene, const char *text)`
        case sceneWithString(SceneSetter<(Application, Scene, String) -> Void>)
        /// `void f(lc_app *app, lc_scene *scene, const lc_dict *activity)`
        case sceneActivity(SceneSetter<(Application, Scene, UserActivity) -> Void>)
        /// `void f(lc_app *app, lc_scene *scene, const char *activity_type, const char *error)`
        case sceneFail

        /// What every row of this shape returns, and (below) the arguments it takes; checked against the
        /// row's declared C types when a 1.0 row is bound, never per call.
        var returnType: CType {
            switch self {
            case .notify, .receiveDict, .fetch, .remoteNotificationWithCompletion, .archive, .discardSessions,
                 .receiveActivity, .failActivity, .receiveString, .urlSessionEvents, .sceneNotify, .sceneWillConnect, .sceneOpenURLs, .sceneWithString,
                 .sceneActivity, .sceneFail: return .void
            case .askWithDict, .askArchive, .openURL, .openURLWithOptions, .askWithString, .askActivity,
                 .sceneRestoration: return .bool
            case .configuration: return .pointer
            }
        }

        /// The method's own arguments (all pointers), between the receiver and the completion.
        var coreArgumentCount: Int {
            switch self {
            case .notify, .fetch: return 0
            case .askWithDict, .receiveDict, .askArchive, .archive, .remoteNotificationWithCompletion, .discardSessions,
                 .askWithString, .askActivity, .receiveActivity, .receiveString, .urlSessionEvents, .sceneNotify: return 1
            case .openURLWithOptions, .configuration, .failActivity, .sceneWillConnect, .sceneOpenURLs, .sceneRestoration,
                 .sceneWithString, .sceneActivity: return 2
            case .openURL, .sceneFail: return 3
            }
        }

        /// Whether the row is a scene delegate method (bound into `SceneDelegateHandlers`).
        package var isScene: Bool {
            switch self {
            case .sceneNotify, .sceneWillConnect, .sceneOpenURLs, .sceneRestoration, .sceneWithString, .sceneActivity,
                 .sceneFail: return true
            default: return false
            }
        }

        /// Whether the method hands over a completion (fetch, remote notification with completion, URL session).
        var takesCompletion: Bool {
            switch self {
            case .fetch, .remoteNotificationWithCompletion, .urlSessionEvents: return true
            default: return false
            }
        }

        /// Whether its completion takes a result (`lc_fetch_result`); a URL session's takes none.
        var completionTakesResult: Bool {
            if case .urlSessionEvents = self { return false }
            return true
        }
    }

    /// One exported delegate function.
    package struct Function: Sendable {
        package let method: DelegateMethod
        /// The exported C symbol, exactly as include/lifecycle.h declares it (as a C string: `symbolNames`).
        package let symbol: String
        /// Its C type under ABI 1.0: every argument is a pointer.
        package let signature: Signature
        package let shape: Shape

        init(_ method: DelegateMethod, _ symbol: String, returns: CType, pointers: Int, _ shape: Shape) {
            self.method = method
            self.symbol = symbol
            signature = Signature(returnType: returns, pointers: pointers)
            self.shape = shape
        }

        package var returnType: CType { signature.returnType }
        package var argumentTypes: [CType] { signature.argumentTypes }
    }

    /// A C function type; rows with equal signatures share one prepared `ffi_cif`.
    ///
    /// Packed in one integer (the return type, the count, then 3 bits an argument): comparing two is
    /// one compare, and making one allocates nothing (binding a plugin makes one a row).
    package struct Signature: Sendable, Hashable, CustomStringConvertible {
        /// At most this many arguments (the longest delegate call takes six).
        static let maximumArguments = 8
        private var bits: UInt32

        package init(returnType: CType, argumentTypes: [CType]) {
            precondition(argumentTypes.count <= Self.maximumArguments, "a delegate function takes at most \(Self.maximumArguments) arguments")
            bits = UInt32(returnType.rawValue)
            for type in argumentTypes { append(type) }
        }

        /// `returnType f(void *, …)` with `pointers` pointer arguments.
        init(returnType: CType, pointers: Int) {
            bits = UInt32(returnType.rawValue)
            for _ in 0..<pointers { append(.pointer) }
        }

        package var returnType: CType { CType(rawValue: UInt8(bits & 0x7))! }
        var argumentCount: Int { Int((bits >> 3) & 0xF) }
        func argumentType(at index: Int) -> CType { CType(rawValue: UInt8((bits >> (7 + 3 * UInt32(index))) & 0x7))! }
        package var argumentTypes: [CType] { (0..<argumentCount).map(argumentType(at:)) }

        mutating func append(_ type: CType) {
            let count = argumentCount
            precondition(count < Self.maximumArguments, "a delegate function takes at most \(Self.maximumArguments) arguments")
            bits = (bits & ~(0xF << 3)) | UInt32(count + 1) << 3 | UInt32(type.rawValue) << (7 + 3 * UInt32(count))
        }

        package var description: String { "\(returnType)(\(argumentTypes.map { "\($0)" }.joined(separator: ", ")))" }
    }

    /// A row's exported symbol as a C string and its length: what a load reads of every row, so that
    /// it looks up each symbol without making a C string of it.
    package struct SymbolName: Sendable {
        /// The C string's address (an integer: `Sendable` with no unchecked field); allocated once,
        /// never freed (the table lives as long as the process).
        private let address: UInt
        package let length: Int
        package var cString: UnsafePointer<CChar> { UnsafePointer(bitPattern: address)! }

        init(_ symbol: String) {
            address = UInt(bitPattern: symbol.withCString { strdup($0) }!)
            length = symbol.utf8.count
        }
    }

    /// The rows' symbols, one per row of `functions`, in a buffer of plain values of their own: a load
    /// looks up every row's symbol, and reading a row of `functions` copies it whole (its method, its
    /// symbol's string and its shape's closure: a retain and a release of each), ~13,000 instructions a
    /// load for the 44 rows. Allocated once, never freed, as `functions`.
    // nonisolated(unsafe): built once by the lazy static init from `functions`, never written or freed afterwards.
    nonisolated(unsafe) package static let symbolNames: UnsafeBufferPointer<SymbolName> = {
        let names = UnsafeMutablePointer<SymbolName>.allocate(capacity: functions.count)
        for index in functions.indices { (names + index).initialize(to: SymbolName(functions[index].symbol)) }
        return UnsafeBufferPointer(start: names, count: functions.count)
    }()

    /// The delegate functions, in header order.
    ///
    /// In a buffer allocated once and never freed, not an `Array`: making `[Function]`'s type at run
    /// time (demangling its name) cost the first plugin load of a process about 10 µs.
    // nonisolated(unsafe): built once by the lazy static init, never written or freed afterwards; rows are immutable values.
    nonisolated(unsafe) package static let functions: UnsafeBufferPointer<Function> = {
        let rows = UnsafeMutablePointer<Function>.allocate(capacity: 64)
        var count = 0
        func add(_ function: Function) {
            precondition(count < 64, "at most 64 rows (`Rows` is 64 bits)")
            (rows + count).initialize(to: function)
            count += 1
        }
        add(Function(.willFinishLaunching, "application_willFinishLaunchingWithOptions", returns: .bool,
                     pointers: 2, .askWithDict({ $0.willFinishLaunching = $1 })))
        add(Function(.didFinishLaunching, "application_didFinishLaunchingWithOptions", returns: .bool,
                     pointers: 2, .askWithDict({ $0.didFinishLaunching = $1 })))
        add(Function(.didBecomeActive, "applicationDidBecomeActive", returns: .void, pointers: 1, .notify({ $0.didBecomeActive = $1 })))
        add(Function(.willResignActive, "applicationWillResignActive", returns: .void, pointers: 1, .notify({ $0.willResignActive = $1 })))
        add(Function(.didEnterBackground, "applicationDidEnterBackground", returns: .void, pointers: 1, .notify({ $0.didEnterBackground = $1 })))
        add(Function(.willEnterForeground, "applicationWillEnterForeground", returns: .void, pointers: 1, .notify({ $0.willEnterForeground = $1 })))
        add(Function(.willTerminate, "applicationWillTerminate", returns: .void, pointers: 1, .notify({ $0.willTerminate = $1 })))
        add(Function(.didReceiveMemoryWarning, "applicationDidReceiveMemoryWarning", returns: .void, pointers: 1,
                     .notify({ $0.didReceiveMemoryWarning = $1 })))
        add(Function(.significantTimeChange, "applicationSignificantTimeChange", returns: .void, pointers: 1,
                     .notify({ $0.significantTimeChange = $1 })))
        add(Function(.protectedDataWillBecomeUnavailable, "applicationProtectedDataWillBecomeUnavailable", returns: .void,
                     pointers: 1, .notify({ $0.protectedDataWillBecomeUnavailable = $1 })))
        add(Function(.protectedDataDidBecomeAvailable, "applicationProtectedDataDidBecomeAvailable", returns: .void,
                     pointers: 1, .notify({ $0.protectedDataDidBecomeAvailable = $1 })))
        add(Function(.openURL, "application_openURL", returns: .bool, pointers: 4, .openURL))
        add(Function(.performFetch, "application_performFetchWithCompletionHandler", returns: .void,
                     pointers: 2, .fetch))
        add(Function(.didReceiveRemoteNotificationWithCompletion,
                     "application_didReceiveRemoteNotification_fetchCompletionHandler", returns: .void,
                     pointers: 3, .remoteNotificationWithCompletion))
        add(Function(.didReceiveRemoteNotification, "application_didReceiveRemoteNotification", returns: .void,
                     pointers: 2, .receiveDict({ $0.didReceiveRemoteNotification = $1 })))
        add(Function(.shouldSaveApplicationState, "application_shouldSaveApplicationState", returns: .bool,
                     pointers: 2, .askArchive({ $0.shouldSaveApplicationState = $1 }, writable: true)))
        add(Function(.shouldRestoreApplicationState, "application_shouldRestoreApplicationState", returns: .bool,
                     pointers: 2, .askArchive({ $0.shouldRestoreApplicationState = $1 }, writable: false)))
        add(Function(.willEncodeRestorableState, "application_willEncodeRestorableStateWithCoder", returns: .void,
                     pointers: 2, .archive({ $0.willEncodeRestorableState = $1 }, writable: true)))
        add(Function(.didDecodeRestorableState, "application_didDecodeRestorableStateWithCoder", returns: .void,
                     pointers: 2, .archive({ $0.didDecodeRestorableState = $1 }, writable: false)))
        // Appended (the 1.1 table's last field): application:openURL:options: (Apple, "Managing your app's life cycle").
        add(Function(.openURLWithOptions, "application_openURL_options", returns: .bool, pointers: 3, .openURLWithOptions))
        // Appended in ABI 1.2 (the 1.2 fields of the tables, in this order): scene sessions and Handoff …
        add(Function(.configurationForConnecting, "application_configurationForConnectingSceneSession_options",
                     returns: .pointer, pointers: 3, .configuration))
        add(Function(.didDiscardSceneSessions, "application_didDiscardSceneSessions", returns: .void, pointers: 2, .discardSessions))
        add(Function(.willContinueUserActivity, "application_willContinueUserActivityWithType", returns: .bool, pointers: 2,
                     .askWithString({ $0.willContinueUserActivity = $1 })))
        add(Function(.continueUserActivity, "application_continueUserActivity_restorationHandler", returns: .bool, pointers: 2,
                     .askActivity({ $0.continueUserActivity = $1 })))
        add(Function(.didFailToContinueUserActivity, "application_didFailToContinueUserActivityWithType_error", returns: .void,
                     pointers: 3, .failActivity))
        add(Function(.didUpdateUserActivity, "application_didUpdateUserActivity", returns: .void, pointers: 2,
                     .receiveActivity({ $0.didUpdateUserActivity = $1 })))
        // … then the scene delegate's methods, in `DelegateMethod.sceneMethods` order.
        add(Function(.sceneWillConnect, "scene_willConnectToSession_options", returns: .void, pointers: 3, .sceneWillConnect))
        add(Function(.sceneDidDisconnect, "sceneDidDisconnect", returns: .void, pointers: 2, .sceneNotify({ $0.didDisconnect = $1 })))
        add(Function(.sceneDidBecomeActive, "sceneDidBecomeActive", returns: .void, pointers: 2, .sceneNotify({ $0.didBecomeActive = $1 })))
        add(Function(.sceneWillResignActive, "sceneWillResignActive", returns: .void, pointers: 2,
                     .sceneNotify({ $0.willResignActive = $1 })))
        add(Function(.sceneWillEnterForeground, "sceneWillEnterForeground", returns: .void, pointers: 2,
                     .sceneNotify({ $0.willEnterForeground = $1 })))
        add(Function(.sceneDidEnterBackground, "sceneDidEnterBackground", returns: .void, pointers: 2,
                     .sceneNotify({ $0.didEnterBackground = $1 })))
        add(Function(.sceneOpenURLContexts, "scene_openURLContexts", returns: .void, pointers: 3, .sceneOpenURLs))
        add(Function(.stateRestorationActivity, "stateRestorationActivityForScene", returns: .bool, pointers: 3, .sceneRestoration))
        add(Function(.sceneWillContinueUserActivity, "scene_willContinueUserActivityWithType", returns: .void, pointers: 3,
                     .sceneWithString({ $0.willContinueUserActivity = $1 })))
        add(Function(.sceneContinueUserActivity, "scene_continueUserActivity", returns: .void, pointers: 3,
                     .sceneActivity({ $0.continueUserActivity = $1 })))
        add(Function(.sceneDidFailToContinueUserActivity, "scene_didFailToContinueUserActivityWithType_error", returns: .void,
                     pointers: 4, .sceneFail))
        add(Function(.sceneDidUpdateUserActivity, "scene_didUpdateUserActivity", returns: .void, pointers: 3,
                     .sceneActivity({ $0.didUpdateUserActivity = $1 })))
        // Appended in ABI 1.5: scene:restoreInteractionStateWithUserActivity: (decision 48), then the
        // application delegate's older methods (decision 54).
        add(Function(.sceneRestoreInteractionState, "scene_restoreInteractionStateWithUserActivity", returns: .void, pointers: 3,
                     .sceneActivity({ $0.restoreInteractionState = $1 })))
        add(Function(.applicationDidFinishLaunching, "applicationDidFinishLaunching", returns: .void, pointers: 1,
                     .notify({ $0.applicationDidFinishLaunching = $1 })))
        add(Function(.handleOpenURL, "application_handleOpenURL", returns: .bool, pointers: 2, .askWithString({ $0.handleOpenURL = $1 })))
        add(Function(.didReceiveLocalNotification, "application_didReceiveLocalNotification", returns: .void, pointers: 2,
                     .receiveDict({ $0.didReceiveLocalNotification = $1 })))
        add(Function(.didRegisterForRemoteNotifications, "application_didRegisterForRemoteNotificationsWithDeviceToken", returns: .void,
                     pointers: 2, .receiveString({ $0.didRegisterForRemoteNotifications = $1 })))
        add(Function(.didFailToRegisterForRemoteNotifications, "application_didFailToRegisterForRemoteNotificationsWithError",
                     returns: .void, pointers: 2, .receiveString({ $0.didFailToRegisterForRemoteNotifications = $1 })))
        add(Function(.handleEventsForBackgroundURLSession, "application_handleEventsForBackgroundURLSession_completionHandler",
                     returns: .void, pointers: 3, .urlSessionEvents))
        return UnsafeBufferPointer(start: rows, count: count)
    }()
}
