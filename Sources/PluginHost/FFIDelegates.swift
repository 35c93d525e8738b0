import AppLifecycle
// @preconcurrency: libffi's type descriptors (`ffi_type_pointer`, ...) are C globals that libffi never
// changes after load; only their addresses are taken here.
@preconcurrency import CFFI
import Synchronization

/// Calls a plugin's exported delegate functions (include/lifecycle.h, "Delegate functions") through
/// libffi, behind an ordinary `DelegateHandlers` table.
///
/// One table, `functions`, lists every delegate function: the method, the C symbol, the libffi
/// return and argument types, and how Swift values are marshalled (`Shape`). Binding looks each
/// symbol up (the plugin's respondsToSelector:) and sets the matching handler to a closure that
/// marshals the arguments and calls the C function with `ffi_call`. Adding a delegate method means
/// adding a row, plus a `Shape` case only when no existing one fits.
///
/// - Threads: every bound handler runs on the loop thread, as every delegate does; the C function is
///   called on that thread. The call interfaces are prepared once per signature, lazily and under a
///   lock, and shared read-only by all threads. Completion function pointers handed to plugins may be
///   called from any thread (see `CompletionClosurePool`).
/// - Ownership: dictionaries, strings and archives handed to a C function are owned by the host and
///   live exactly as long as the call (the header's rule). The plugin's function addresses must stay
///   mapped while the handlers exist (plugins are loaded with `RTLD_NODELETE`).
package enum FFIDelegates {
    /// A C type at the delegate ABI, as libffi describes it.
    package enum CType: Sendable, Hashable {
        case void
        /// C `bool`: one byte (`ffi_type_uint8`); a returned one is read from an `ffi_arg`-sized buffer.
        case bool
        case uint32
        /// Any data or function pointer (`lc_app *`, `const lc_dict *`, `const char *`, a completion function).
        case pointer
    }

    /// How a row's Swift handler maps onto its C arguments: each case names the handler it sets.
    package enum Shape: Sendable {
        /// `void f(lc_app *app)`
        case notify(WritableKeyPath<DelegateHandlers, ((Application) -> Void)?> & Sendable)
        /// `bool f(lc_app *app, const lc_dict *options)`
        case askWithDict(WritableKeyPath<DelegateHandlers, ((Application, UserInfo) -> Bool)?> & Sendable)
        /// `void f(lc_app *app, const lc_dict *dict)`
        case receiveDict(WritableKeyPath<DelegateHandlers, ((Application, UserInfo) -> Void)?> & Sendable)
        /// `bool f(lc_app *app, const char *url, const char *source_app, const lc_dict *annotation)`
        case openURL
        /// `void f(lc_app *app, void (*completion)(lc_fetch_result))`
        case fetch
        /// `void f(lc_app *app, const lc_dict *user_info, void (*completion)(lc_fetch_result))`
        case remoteNotificationWithCompletion
        /// `bool f(lc_app *app, [const] lc_dict *coder)`: the archive's values in a box; written back
        /// into the archive after the call when `writable` (the C parameter is not `const`).
        case askArchive(WritableKeyPath<DelegateHandlers, ((Application, StateArchive) -> Bool)?> & Sendable, writable: Bool)
        /// `void f(lc_app *app, [const] lc_dict *coder)`, as `askArchive`.
        case archive(WritableKeyPath<DelegateHandlers, ((Application, StateArchive) -> Void)?> & Sendable, writable: Bool)
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
                 [.pointer, .pointer], .askWithDict(\.willFinishLaunching)),
        Function(.didFinishLaunching, "application_didFinishLaunchingWithOptions", returns: .bool,
                 [.pointer, .pointer], .askWithDict(\.didFinishLaunching)),
        Function(.didBecomeActive, "applicationDidBecomeActive", returns: .void, [.pointer], .notify(\.didBecomeActive)),
        Function(.willResignActive, "applicationWillResignActive", returns: .void, [.pointer], .notify(\.willResignActive)),
        Function(.didEnterBackground, "applicationDidEnterBackground", returns: .void, [.pointer], .notify(\.didEnterBackground)),
        Function(.willEnterForeground, "applicationWillEnterForeground", returns: .void, [.pointer], .notify(\.willEnterForeground)),
        Function(.willTerminate, "applicationWillTerminate", returns: .void, [.pointer], .notify(\.willTerminate)),
        Function(.didReceiveMemoryWarning, "applicationDidReceiveMemoryWarning", returns: .void, [.pointer],
                 .notify(\.didReceiveMemoryWarning)),
        Function(.significantTimeChange, "applicationSignificantTimeChange", returns: .void, [.pointer],
                 .notify(\.significantTimeChange)),
        Function(.protectedDataWillBecomeUnavailable, "applicationProtectedDataWillBecomeUnavailable", returns: .void,
                 [.pointer], .notify(\.protectedDataWillBecomeUnavailable)),
        Function(.protectedDataDidBecomeAvailable, "applicationProtectedDataDidBecomeAvailable", returns: .void,
                 [.pointer], .notify(\.protectedDataDidBecomeAvailable)),
        Function(.openURL, "application_openURL", returns: .bool, [.pointer, .pointer, .pointer, .pointer], .openURL),
        Function(.performFetch, "application_performFetchWithCompletionHandler", returns: .void,
                 [.pointer, .pointer], .fetch),
        Function(.didReceiveRemoteNotificationWithCompletion,
                 "application_didReceiveRemoteNotification_fetchCompletionHandler", returns: .void,
                 [.pointer, .pointer, .pointer], .remoteNotificationWithCompletion),
        Function(.didReceiveRemoteNotification, "application_didReceiveRemoteNotification", returns: .void,
                 [.pointer, .pointer], .receiveDict(\.didReceiveRemoteNotification)),
        Function(.shouldSaveApplicationState, "application_shouldSaveApplicationState", returns: .bool,
                 [.pointer, .pointer], .askArchive(\.shouldSaveApplicationState, writable: true)),
        Function(.shouldRestoreApplicationState, "application_shouldRestoreApplicationState", returns: .bool,
                 [.pointer, .pointer], .askArchive(\.shouldRestoreApplicationState, writable: false)),
        Function(.willEncodeRestorableState, "application_willEncodeRestorableStateWithCoder", returns: .void,
                 [.pointer, .pointer], .archive(\.willEncodeRestorableState, writable: true)),
        Function(.didDecodeRestorableState, "application_didDecodeRestorableStateWithCoder", returns: .void,
                 [.pointer, .pointer], .archive(\.didDecodeRestorableState, writable: false)),
    ]

    /// Binds the delegate functions a plugin exports.
    ///
    /// Looks up every row's symbol with `lookup` and sets the matching handler for each one found.
    /// Returns immediately; nothing is called. The handlers hold `closures` strongly.
    /// - Parameters:
    ///   - lookup: finds an exported function by name (`dlsym` on the plugin's handle), nil when absent.
    ///   - app: passed unchanged as every function's first argument (`lc_app *`); never dereferenced here.
    ///   - closures: makes the completion function pointers of the fetch and remote-notification calls.
    /// - Returns: the handler table (add it with `Application.addDelegate(_:id:)`; call its handlers on
    ///   the loop thread only) and the methods found, in table order.
    package static func bind(lookup: (String) -> UnsafeMutableRawPointer?, app: OpaquePointer?,
                             closures: CompletionClosurePool) -> (handlers: DelegateHandlers, implemented: [DelegateMethod])
    {
        var handlers = DelegateHandlers()
        var implemented: [DelegateMethod] = []
        for function in functions {
            guard let address = lookup(function.symbol) else { continue }
            let call = BoundFunction(function: function, interface: callInterface(for: function.signature), address: address)
            install(call, app: app.map(UnsafeRawPointer.init), closures: closures, into: &handlers)
            implemented.append(function.method)
        }
        return (handlers, implemented)
    }

    // MARK: Marshalling

    private static func install(_ call: BoundFunction, app: UnsafeRawPointer?, closures: CompletionClosurePool,
                                into handlers: inout DelegateHandlers)
    {
        switch call.function.shape {
        case .notify(let handler):
            handlers[keyPath: handler] = { _ in call.void(.pointer(app)) }
        case .askWithDict(let handler):
            handlers[keyPath: handler] = { _, options in
                withDict(options) { call.bool(.pointer(app), .pointer($0)) }
            }
        case .receiveDict(let handler):
            handlers[keyPath: handler] = { _, info in
                withDict(info) { call.void(.pointer(app), .pointer($0)) }
            }
        case .openURL:
            handlers.openURL = { _, url, source, annotation in
                url.withCString { url in
                    withOptionalCString(source) { source in
                        withDict(annotationDict(annotation)) { annotation in
                            call.bool(.pointer(app), .pointer(url), .pointer(source), .pointer(annotation))
                        }
                    }
                }
            }
        case .fetch:
            handlers.performFetch = { _, handler in
                call.void(.pointer(app), .pointer(closures.makeCompletion(for: handler)))
            }
        case .remoteNotificationWithCompletion:
            handlers.didReceiveRemoteNotificationWithCompletion = { _, payload, handler in
                let completion = closures.makeCompletion(for: handler)
                withDict(payload) { call.void(.pointer(app), .pointer($0), .pointer(completion)) }
            }
        case .askArchive(let handler, let writable):
            handlers[keyPath: handler] = { _, archive in
                withArchive(archive, writable: writable) { call.bool(.pointer(app), .pointer($0)) }
            }
        case .archive(let handler, let writable):
            handlers[keyPath: handler] = { _, archive in
                withArchive(archive, writable: writable) { call.void(.pointer(app), .pointer($0)) }
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

    private static let interfaces = Mutex<[Signature: CallInterface]>([:])

    /// The prepared call interface for `signature`: made on first use, the same object afterwards.
    /// [thread-safe]
    package static func callInterface(for signature: Signature) -> CallInterface {
        interfaces.withLock { cache in
            if let interface = cache[signature] { return interface }
            let interface = CallInterface(signature)
            cache[signature] = interface
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
        case .pointer: return withUnsafeMutablePointer(to: &ffi_type_pointer) { $0 }
        }
    }
}

/// One argument value for `BoundFunction`.
enum FFIArgument {
    case pointer(UnsafeRawPointer?)
    case uint32(UInt32)
    case bool(Bool)

    var type: FFIDelegates.CType {
        switch self {
        case .pointer: return .pointer
        case .uint32: return .uint32
        case .bool: return .bool
        }
    }
}

/// A delegate function found in a plugin, with its prepared call interface. [loop-thread]: called
/// from the bound handlers only.
struct BoundFunction {
    let function: FFIDelegates.Function
    let interface: FFIDelegates.CallInterface
    let address: UnsafeMutableRawPointer

    /// Calls a function returning `void`.
    func void(_ arguments: FFIArgument...) {
        precondition(function.returnType == .void, "\(function.symbol) does not return void")
        _ = invoke(arguments)
    }

    /// Calls a function returning C `bool`.
    func bool(_ arguments: FFIArgument...) -> Bool {
        precondition(function.returnType == .bool, "\(function.symbol) does not return bool")
        return UInt8(truncatingIfNeeded: invoke(arguments)) != 0
    }

    /// `ffi_call` with every argument in its own 8-byte slot; returns the raw `ffi_arg` result.
    private func invoke(_ arguments: [FFIArgument]) -> ffi_arg {
        precondition(arguments.map(\.type) == function.argumentTypes, "\(function.symbol): arguments do not match its signature")
        let count = max(arguments.count, 1)
        return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: count) { slots in
            withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer?.self, capacity: count) { values in
                for (index, argument) in arguments.enumerated() {
                    let slot = UnsafeMutableRawPointer(slots.baseAddress! + index)
                    switch argument {
                    case .pointer(let pointer): slot.storeBytes(of: pointer, as: UnsafeRawPointer?.self)
                    case .uint32(let value): slot.storeBytes(of: value, as: UInt32.self)
                    case .bool(let value): slot.storeBytes(of: value ? 1 : 0, as: UInt8.self)
                    }
                    values[index] = slot
                }
                var result: ffi_arg = 0
                ffi_call(interface.cif, unsafeBitCast(address, to: (@convention(c) () -> Void).self), &result, values.baseAddress)
                return result
            }
        }
    }
}
