import AppLifecycle
import CLifecycleABI
// @preconcurrency: libffi's type descriptors (`ffi_type_pointer`, ...) are C globals that libffi never
// changes after load; only their addresses are taken here.
@preconcurrency import CFFI
import Synchronization

/// The one delegate bridge of the C layer: C functions implementing delegate methods become an
/// ordinary `DelegateHandlers` table, called through libffi. Every way C implements delegates goes
/// through it — a plugin's exported ABI 1.0 functions (found by the plugins module with `dlsym`), a
/// plugin's ABI 1.1 `lc_plugin_delegate_t`, and `lc_delegate_t` (`lc_app_add_delegate`).
///
/// One table, `functions`, lists every delegate function: the method, the C symbol, the libffi
/// return and argument types, and how Swift values are marshalled (`Shape`). Binding sets a handler
/// for each row given an address, as a closure that marshals the arguments and calls the C function
/// with `ffi_call`. Adding a delegate method means adding a row, plus a `Shape` case only when no
/// existing one fits.
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

    /// How a delegate's C functions are called: what comes before and after each method's own
    /// arguments, and how a completion travels. The three ways C code implements delegates.
    package enum Convention {
        /// ABI 1.0 exported functions (found by name): `f(lc_app *app, args…[, void (*completion)(lc_fetch_result)])`,
        /// the completion a libffi closure from `closures`; `owner` is the plugin that exports them.
        case exported(app: UnsafeRawPointer?, closures: CompletionClosurePool, owner: (any PluginIdentity)?, id: String)
        /// `lc_delegate_t` (lc_app_add_delegate): `f(lc_app *app, args…[, complete, void *token], void *ctx)`.
        case delegateStruct(app: UnsafeRawPointer?, ctx: UnsafeRawPointer?, id: String)
        /// `lc_plugin_delegate_t` (ABI 1.1): `f(lc_plugin *plugin, void *state, args…[, lc_complete_fn, lc_completion_token])`,
        /// the state read at each call (what the plugin's init stored).
        case pluginTable(any PluginIdentity)

        /// The C types of a row's function under this convention.
        func signature(of function: Function) -> Signature {
            var arguments: [CType]
            switch self {
            case .exported, .delegateStruct: arguments = [.pointer]
            case .pluginTable: arguments = [.pointer, .pointer]
            }
            arguments += Array(repeating: .pointer, count: function.shape.coreArgumentCount)
            if function.shape.takesCompletion {
                switch self {
                case .exported: arguments.append(.pointer)
                case .delegateStruct: arguments += [.pointer, .pointer]
                case .pluginTable: arguments += [.pointer, .uint64]
                }
            }
            if case .delegateStruct = self { arguments.append(.pointer) }
            return Signature(returnType: function.shape.returnType, argumentTypes: arguments)
        }
    }

    /// The one delegate bridge: binds C functions given by address, one per row of `functions` (nil:
    /// not implemented), called the `convention`'s way. Every way C implements delegates (exported
    /// symbols, `lc_delegate_t`, `lc_plugin_delegate_t`) goes through here: one marshalling of
    /// dictionaries, strings, archives and completions, one way to call (libffi).
    package static func bind(addresses: UnsafeBufferPointer<UnsafeMutableRawPointer?>,
                             convention: Convention) -> (handlers: DelegateHandlers, implemented: [DelegateMethod])
    {
        precondition(addresses.count == functions.count, "one address per row")
        var handlers = DelegateHandlers()
        var implemented: [DelegateMethod] = []
        implemented.reserveCapacity(addresses.lazy.filter { $0 != nil }.count)
        for index in functions.indices {
            guard let address = addresses[index] else { continue }
            let function = functions[index]
            let call = BoundFunction(cif: interface(forRow: index, convention).cif, address: address)
            install(function, Caller(function: call, convention: convention), into: &handlers)
            implemented.append(function.method)
        }
        return (handlers, implemented)
    }

    /// The call interface of row `index` under `convention`; for exported functions, checked against
    /// the row's declared C types (the calls themselves check nothing).
    private static func interface(forRow index: Int, _ convention: Convention) -> CallInterface {
        let function = functions[index]
        let signature = convention.signature(of: function)
        if case .exported = convention {
            precondition(signature == function.signature, "\(function.symbol): its C types do not match its shape (\(function.shape))")
        }
        return callInterface(for: signature)
    }

    // MARK: Marshalling

    /// A bound function and its convention: puts the receiver's arguments around the method's own.
    struct Caller {
        let function: BoundFunction
        let convention: Convention

        /// Calls with the method's own arguments `core` (as many as the row takes) and, for the
        /// completion-taking methods, the request's handler; returns the raw `ffi_arg` result.
        @inline(__always)
        func call(_ method: DelegateMethod, _ a: UnsafeRawPointer? = nil, _ b: UnsafeRawPointer? = nil,
                  _ c: UnsafeRawPointer? = nil, core: Int, completion: FetchCompletionHandler? = nil) -> ffi_arg
        {
            var frame = Frame()
            switch convention {
            case .exported(let app, _, _, _), .delegateStruct(let app, _, _):
                frame.append(app)
            case .pluginTable(let plugin):
                frame.append(UnsafeRawPointer(plugin.opaque))
                frame.append(plugin.state.map(UnsafeRawPointer.init))
            }
            if core > 0 { frame.append(a) }
            if core > 1 { frame.append(b) }
            if core > 2 { frame.append(c) }
            if let completion {
                switch convention {
                case .exported(_, let closures, let owner, let id):
                    frame.append(closures.makeCompletion(for: completion, owner: owner, label: "\(id) \(method.selector)",
                                                         logger: owner?.owner?.app.configuration.logger))
                case .delegateStruct(_, _, let id):
                    let token = Completions.register(completion, owner: nil, label: "\(id) \(method.selector)", logger: nil)
                    frame.append(unsafeBitCast(Completions.delegateComplete, to: UnsafeRawPointer.self))
                    frame.append(UnsafeRawPointer(bitPattern: UInt(token)))
                case .pluginTable(let plugin):
                    let token = Completions.register(completion, owner: plugin, label: "\(plugin.id) \(method.selector)",
                                                     logger: plugin.owner?.app.configuration.logger)
                    frame.append(unsafeBitCast(type(of: plugin).completeFunction, to: UnsafeRawPointer.self))
                    frame.append(UnsafeRawPointer(bitPattern: UInt(token)))  // the uint64 token, in its 8-byte slot
                }
            }
            if case .delegateStruct(_, let ctx, _) = convention { frame.append(ctx) }
            return function.invoke(frame)
        }

        @inline(__always)
        func void(_ method: DelegateMethod, _ a: UnsafeRawPointer? = nil, _ b: UnsafeRawPointer? = nil,
                  _ c: UnsafeRawPointer? = nil, core: Int, completion: FetchCompletionHandler? = nil)
        {
            _ = call(method, a, b, c, core: core, completion: completion)
        }

        /// A C `bool` result, read as the low byte of the `ffi_arg`.
        @inline(__always)
        func bool(_ method: DelegateMethod, _ a: UnsafeRawPointer? = nil, _ b: UnsafeRawPointer? = nil,
                  _ c: UnsafeRawPointer? = nil, core: Int) -> Bool
        {
            UInt8(truncatingIfNeeded: call(method, a, b, c, core: core)) != 0
        }
    }

    private static func install(_ function: Function, _ call: Caller, into handlers: inout DelegateHandlers) {
        let method = function.method
        switch function.shape {
        case .notify(let set):
            set(&handlers) { _ in call.void(method, core: 0) }
        case .askWithDict(let set):
            set(&handlers) { _, options in
                withDict(options) { call.bool(method, $0, core: 1) }
            }
        case .receiveDict(let set):
            set(&handlers) { _, info in
                withDict(info) { call.void(method, $0, core: 1) }
            }
        case .openURL:
            handlers.openURL = { _, url, source, annotation in
                url.withCString { url in
                    withOptionalCString(source) { source in
                        withDict(annotationDict(annotation)) { annotation in
                            call.bool(method, url, source, annotation, core: 3)
                        }
                    }
                }
            }
        case .fetch:
            handlers.performFetch = { _, handler in
                call.void(method, core: 0, completion: handler)
            }
        case .remoteNotificationWithCompletion:
            handlers.didReceiveRemoteNotificationWithCompletion = { _, payload, handler in
                withDict(payload) { call.void(method, $0, core: 1, completion: handler) }
            }
        case .askArchive(let set, let writable):
            set(&handlers) { _, archive in
                withArchive(archive, writable: writable) { call.bool(method, $0, core: 1) }
            }
        case .archive(let set, let writable):
            set(&handlers) { _, archive in
                withArchive(archive, writable: writable) { call.void(method, $0, core: 1) }
            }
        }
    }

    /// Runs `body` with an `lc_dict *` holding `info` (NULL for nil), alive until `body` returns.
    private static func withDict<R>(_ info: UserInfo?, _ body: (UnsafeRawPointer?) -> R) -> R {
        guard let info else { return body(nil) }
        let box = UserInfoBox(info)
        return withExtendedLifetime(box) { body(UnsafeRawPointer(box.opaque)) }
    }

    /// Runs `body` with an `lc_dict *` holding the archive's values; copies them back when `writable`.
    private static func withArchive<R>(_ archive: StateArchive, writable: Bool, _ body: (UnsafeRawPointer?) -> R) -> R {
        let box = UserInfoBox(archive.values)
        let result = withExtendedLifetime(box) { body(UnsafeRawPointer(box.opaque)) }
        if writable { archive.values = box.value }
        return result
    }

    private static func withOptionalCString<R>(_ string: String?, _ body: (UnsafeRawPointer?) -> R) -> R {
        guard let string else { return body(nil) }
        return string.withCString { body(UnsafeRawPointer($0)) }
    }

    /// An openURL annotation as a dictionary: a dictionary as is, any other value under "value".
    private static func annotationDict(_ annotation: UserInfoValue?) -> UserInfo? {
        switch annotation {
        case nil: return nil
        case .dict(let dict): return dict
        case let value?: return ["value": value]
        }
    }

    // MARK: Call interfaces

    /// A prepared `ffi_cif` and its argument-type array: immutable once prepared, shared by every
    /// thread, and never freed (there is one per signature for the life of the process).
    package final class CallInterface: @unchecked Sendable {
        let cif: UnsafeMutablePointer<ffi_cif>
        package let signature: Signature
        private let argumentTypes: UnsafeMutablePointer<UnsafeMutablePointer<ffi_type>?>

        fileprivate init(_ signature: Signature) {
            self.signature = signature
            let count = signature.argumentTypes.count
            cif = .allocate(capacity: 1)
            argumentTypes = .allocate(capacity: max(count, 1))
            for (index, type) in signature.argumentTypes.enumerated() { argumentTypes[index] = type.ffiType }
            let status = ffi_prep_cif(cif, FFI_DEFAULT_ABI, UInt32(count), signature.returnType.ffiType, argumentTypes)
            precondition(status == FFI_OK, "ffi_prep_cif failed (\(status.rawValue)) for \(signature)")
        }
    }

    /// The prepared interfaces: a handful (one per distinct signature), searched in order. An array,
    /// not a dictionary keyed by `Signature`: instantiating that dictionary type makes the runtime look
    /// up `Signature: Hashable` through every conformance record of the process (about 0.1 ms, paid by
    /// the first plugin load).
    private static let interfaces = Mutex<[CallInterface]>([])

    /// The prepared call interface for `signature`: made on first use, the same object afterwards.
    /// [thread-safe]
    package static func callInterface(for signature: Signature) -> CallInterface {
        interfaces.withLock { cache in
            if let interface = cache.first(where: { $0.signature == signature }) { return interface }
            let interface = CallInterface(signature)
            cache.append(interface)
            return interface
        }
    }

    /// How many call interfaces have been prepared so far. [thread-safe]
    package static var preparedInterfaceCount: Int { interfaces.withLock { $0.count } }
}

extension FFIDelegates.CType {
    /// libffi's description of the type (static storage in libffi).
    var ffiType: UnsafeMutablePointer<ffi_type> {
        switch self {
        case .void: return withUnsafeMutablePointer(to: &ffi_type_void) { $0 }
        case .bool: return withUnsafeMutablePointer(to: &ffi_type_uint8) { $0 }
        case .uint32: return withUnsafeMutablePointer(to: &ffi_type_uint32) { $0 }
        case .uint64: return withUnsafeMutablePointer(to: &ffi_type_uint64) { $0 }
        case .pointer: return withUnsafeMutablePointer(to: &ffi_type_pointer) { $0 }
        }
    }
}

/// The arguments of one call, each in its own 8-byte slot (pointers, and the 64-bit token): at
/// most six (a 1.1 remote notification: plugin, state, user_info, complete, token; an `lc_delegate_t`
/// open_url: app, url, source, annotation, ctx). On the stack; a call allocates nothing.
struct Frame {
    var slots: (UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?) =
        (nil, nil, nil, nil, nil, nil)
    var count = 0

    @inline(__always)
    mutating func append(_ value: UnsafeRawPointer?) {
        switch count {
        case 0: slots.0 = value
        case 1: slots.1 = value
        case 2: slots.2 = value
        case 3: slots.3 = value
        case 4: slots.4 = value
        default: slots.5 = value
        }
        count += 1
    }
}

/// A delegate function found in a plugin, with its prepared call interface. [loop-thread]: called
/// from the bound handlers only.
///
/// Every argument is pointer-sized (checked when a row is bound), so a call stores its arguments in
/// a fixed frame on the stack: a call allocates nothing and checks nothing, and costs `ffi_call`
/// plus a few stores.
struct BoundFunction {
    let cif: UnsafeMutablePointer<ffi_cif>
    let entry: @convention(c) () -> Void

    init(cif: UnsafeMutablePointer<ffi_cif>, address: UnsafeMutableRawPointer) {
        self.cif = cif
        entry = unsafeBitCast(address, to: (@convention(c) () -> Void).self)
    }

    /// `ffi_call` with the frame's slots (the cif's argument count says how many are read); returns
    /// the raw `ffi_arg` result.
    @inline(__always)
    func invoke(_ frame: Frame) -> ffi_arg {
        var slots = frame.slots
        var result: ffi_arg = 0
        withUnsafeMutableBytes(of: &slots) { slots in
            let base = slots.baseAddress!
            var values: (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?,
                         UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) =
                (base, base + 8, base + 16, base + 24, base + 32, base + 40)
            withUnsafeMutableBytes(of: &values) { values in
                ffi_call(cif, entry, &result, values.baseAddress!.assumingMemoryBound(to: UnsafeMutableRawPointer?.self))
            }
        }
        return result
    }
}
