import AppLifecycle

/// The one delegate bridge of the C layer: C functions implementing delegate methods become an
/// ordinary `DelegateHandlers` table, called through libffi. Every way C implements delegates goes
/// through it — a plugin's exported ABI 1.0 functions (found by the plugins module with `dlsym`), a
/// plugin's ABI 1.1 `lc_plugin_delegate_t`, and `lc_delegate_t` (`lc_app_add_delegate`).
///
/// One table, `functions` (this file), lists every delegate function: the method, the C symbol, the
/// libffi return and argument types, and how Swift values are marshalled (`Shape`). Binding
/// (`FFIDelegates+Binding.swift`) sets a handler for each row given an address, as a closure that
/// marshals the arguments and calls the C function with `ffi_call` (`FFIDelegates+Calls.swift`).
/// Adding a delegate method means adding a row, plus a `Shape` case only when no existing one fits.
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
    package enum CType: Sendable, Hashable {
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

        /// `void f(lc_app *app)`
        case notify(Setter<(Application) -> Void>)
        /// `bool f(lc_app *app, const lc_dict *options)`
        case askWithDict(Setter<(Application, UserInfo) -> Bool>)
        /// `void f(lc_app *app, const lc_dict *dict)`
        case receiveDict(Setter<(Application, UserInfo) -> Void>)
        /// `bool f(lc_app *app, const char *url, const char *source_app, const lc_dict *annotation)`
        case openURL
        /// `void f(lc_app *app, void (*completion)(lc_fetch_result))`
        case fetch
        /// `void f(lc_app *app, const lc_dict *user_info, void (*completion)(lc_fetch_result))`
        case remoteNotificationWithCompletion
        /// `bool f(lc_app *app, [const] lc_dict *coder)`: the archive's values in a box; written back
        /// into the archive after the call when `writable` (the C parameter is not `const`).
        case askArchive(Setter<(Application, StateArchive) -> Bool>, writable: Bool)
        /// `void f(lc_app *app, [const] lc_dict *coder)`, as `askArchive`.
        case archive(Setter<(Application, StateArchive) -> Void>, writable: Bool)

        /// What every row of this shape returns, and (below) the arguments it takes; checked against the
        /// row's declared C types when a 1.0 row is bound, never per call.
        var returnType: CType {
            switch self {
            case .notify, .receiveDict, .fetch, .remoteNotificationWithCompletion, .archive: return .void
            case .askWithDict, .askArchive, .openURL: return .bool
            }
        }

        /// The method's own arguments (all pointers), between the receiver and the completion.
        var coreArgumentCount: Int {
            switch self {
            case .notify, .fetch: return 0
            case .askWithDict, .receiveDict, .askArchive, .archive, .remoteNotificationWithCompletion: return 1
            case .openURL: return 3
            }
        }

        /// Whether the method hands over a completion (fetch, remote notification with completion).
        var takesCompletion: Bool {
            switch self {
            case .fetch, .remoteNotificationWithCompletion: return true
            default: return false
            }
        }
    }

    /// One exported delegate function.
    package struct Function: Sendable {
        package let method: DelegateMethod
        /// The exported C symbol, exactly as include/lifecycle.h declares it.
        package let symbol: String
        package let returnType: CType
        package let argumentTypes: [CType]
        package let shape: Shape

        init(_ method: DelegateMethod, _ symbol: String, returns: CType, _ arguments: [CType], _ shape: Shape) {
            self.method = method
            self.symbol = symbol
            returnType = returns
            argumentTypes = arguments
            self.shape = shape
        }

        package var signature: Signature { Signature(returnType: returnType, argumentTypes: argumentTypes) }
    }

    /// A C function type; rows with equal signatures share one prepared `ffi_cif`.
    package struct Signature: Sendable, Hashable {
        package let returnType: CType
        package let argumentTypes: [CType]

        package init(returnType: CType, argumentTypes: [CType]) {
            self.returnType = returnType
            self.argumentTypes = argumentTypes
        }
    }

    /// The delegate functions, in header order.
    package static let functions: [Function] = [
        Function(.willFinishLaunching, "application_willFinishLaunchingWithOptions", returns: .bool,
                 [.pointer, .pointer], .askWithDict({ $0.willFinishLaunching = $1 })),
        Function(.didFinishLaunching, "application_didFinishLaunchingWithOptions", returns: .bool,
                 [.pointer, .pointer], .askWithDict({ $0.didFinishLaunching = $1 })),
        Function(.didBecomeActive, "applicationDidBecomeActive", returns: .void, [.pointer], .notify({ $0.didBecomeActive = $1 })),
        Function(.willResignActive, "applicationWillResignActive", returns: .void, [.pointer], .notify({ $0.willResignActive = $1 })),
        Function(.didEnterBackground, "applicationDidEnterBackground", returns: .void, [.pointer], .notify({ $0.didEnterBackground = $1 })),
        Function(.willEnterForeground, "applicationWillEnterForeground", returns: .void, [.pointer], .notify({ $0.willEnterForeground = $1 })),
        Function(.willTerminate, "applicationWillTerminate", returns: .void, [.pointer], .notify({ $0.willTerminate = $1 })),
        Function(.didReceiveMemoryWarning, "applicationDidReceiveMemoryWarning", returns: .void, [.pointer],
                 .notify({ $0.didReceiveMemoryWarning = $1 })),
        Function(.significantTimeChange, "applicationSignificantTimeChange", returns: .void, [.pointer],
                 .notify({ $0.significantTimeChange = $1 })),
        Function(.protectedDataWillBecomeUnavailable, "applicationProtectedDataWillBecomeUnavailable", returns: .void,
                 [.pointer], .notify({ $0.protectedDataWillBecomeUnavailable = $1 })),
        Function(.protectedDataDidBecomeAvailable, "applicationProtectedDataDidBecomeAvailable", returns: .void,
                 [.pointer], .notify({ $0.protectedDataDidBecomeAvailable = $1 })),
        Function(.openURL, "application_openURL", returns: .bool, [.pointer, .pointer, .pointer, .pointer], .openURL),
        Function(.performFetch, "application_performFetchWithCompletionHandler", returns: .void,
                 [.pointer, .pointer], .fetch),
        Function(.didReceiveRemoteNotificationWithCompletion,
                 "application_didReceiveRemoteNotification_fetchCompletionHandler", returns: .void,
                 [.pointer, .pointer, .pointer], .remoteNotificationWithCompletion),
        Function(.didReceiveRemoteNotification, "application_didReceiveRemoteNotification", returns: .void,
                 [.pointer, .pointer], .receiveDict({ $0.didReceiveRemoteNotification = $1 })),
        Function(.shouldSaveApplicationState, "application_shouldSaveApplicationState", returns: .bool,
                 [.pointer, .pointer], .askArchive({ $0.shouldSaveApplicationState = $1 }, writable: true)),
        Function(.shouldRestoreApplicationState, "application_shouldRestoreApplicationState", returns: .bool,
                 [.pointer, .pointer], .askArchive({ $0.shouldRestoreApplicationState = $1 }, writable: false)),
        Function(.willEncodeRestorableState, "application_willEncodeRestorableStateWithCoder", returns: .void,
                 [.pointer, .pointer], .archive({ $0.willEncodeRestorableState = $1 }, writable: true)),
        Function(.didDecodeRestorableState, "application_didDecodeRestorableStateWithCoder", returns: .void,
                 [.pointer, .pointer], .archive({ $0.didDecodeRestorableState = $1 }, writable: false)),
    ]
}
