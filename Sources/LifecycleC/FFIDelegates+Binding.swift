import AppLifecycle
import CLifecycleABI
// @preconcurrency: libffi's type descriptors are C globals libffi never changes after load.
@preconcurrency import CFFI

// The delegate bridge's binding and marshalling: C function addresses become `DelegateHandlers`
// closures that put Swift values into C arguments, called the convention's way.

extension FFIDelegates {
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

        /// Whether the header declares the functions' C types (the 1.1 table's and `lc_delegate_t`'s
        /// slots): they are then called directly (`BoundFunction`), not through libffi.
        var isDeclared: Bool {
            if case .exported = self { return false }
            return true
        }

        /// The C types of a row's function under this convention.
        func signature(of function: Function) -> Signature {
            let shape = function.shape
            var signature = Signature(returnType: shape.returnType, pointers: 0)
            signature.append(.pointer)
            if case .pluginTable = self { signature.append(.pointer) }
            for _ in 0..<shape.coreArgumentCount { signature.append(.pointer) }
            if shape.takesCompletion {
                switch self {
                case .exported: signature.append(.pointer)
                case .delegateStruct: signature.append(.pointer); signature.append(.pointer)
                case .pluginTable: signature.append(.pointer); signature.append(.uint64)
                }
            }
            if case .delegateStruct = self { signature.append(.pointer) }
            return signature
        }
    }

    /// Which rows a binding implemented, one bit a row of `functions`: kept as bits so that binding
    /// allocates no array; `methods` lists them.
    package struct Rows: Sendable, Equatable {
        package private(set) var bits: UInt64 = 0

        package init() {}

        package mutating func insert(_ row: Int) { bits |= 1 << UInt64(row) }
        package func contains(_ row: Int) -> Bool { bits & (1 << UInt64(row)) != 0 }
        package var isEmpty: Bool { bits == 0 }
        /// The methods, in table order.
        package var methods: [DelegateMethod] { functions.indices.filter { bits & (1 << UInt64($0)) != 0 }.map { functions[$0].method } }
    }

    /// The scene delegate's rows (`Shape.isScene`), found once: a load tests a bit per row, not the
    /// row's shape (an enum with closures, copied and destroyed at each test).
    package static let sceneRows: Rows = {
        var rows = Rows()
        for index in functions.indices where functions[index].shape.isScene { rows.insert(index) }
        return rows
    }()

    /// The one delegate bridge: binds C functions given by address, one per row of `functions` (nil:
    /// not implemented), called the `convention`'s way. Every way C implements delegates (exported
    /// symbols, `lc_delegate_t`, `lc_plugin_delegate_t`) goes through here: one marshalling of
    /// dictionaries, strings, archives and completions; libffi for exported functions, a direct call
    /// for the header's declared slots (`BoundFunction`).
    /// The application delegate's rows only; the scene delegate's are bound by `bindScenes`.
    /// - Returns: the handler table (add it with `Application.addDelegate(_:id:)`; call its handlers on
    ///   the loop thread only) and the rows bound.
    package static func bind(addresses: UnsafeBufferPointer<UnsafeMutableRawPointer?>,
                             convention: Convention) -> (handlers: DelegateHandlers, rows: Rows)
    {
        var handlers = DelegateHandlers()
        let rows = bindRows(addresses, convention, scene: false) { install($0, $1, $2, into: &handlers) }
        return (handlers, rows)
    }

    /// `bind(addresses:convention:)` for the scene delegate's rows (ABI 1.2): the same addresses (one
    /// per row of `functions`), conventions, marshalling and calls; the application's rows are skipped.
    /// - Returns: the handler table (add it with `Application.addSceneDelegate(_:id:)`) and the rows bound.
    package static func bindScenes(addresses: UnsafeBufferPointer<UnsafeMutableRawPointer?>,
                                   convention: Convention) -> (handlers: SceneDelegateHandlers, rows: Rows)
    {
        var handlers = SceneDelegateHandlers()
        let rows = bindRows(addresses, convention, scene: true) { installScene($0, $1, $2, into: &handlers) }
        return (handlers, rows)
    }

    /// Binds the rows of one kind (scene delegate or application delegate) that have an address.
    private static func bindRows(_ addresses: UnsafeBufferPointer<UnsafeMutableRawPointer?>, _ convention: Convention,
                                 scene: Bool, _ install: (Function, BoundFunction, Receiver) -> Void) -> Rows
    {
        precondition(addresses.count == functions.count, "one address per row")
        precondition(functions.count <= 64, "Rows holds 64 rows")
        var rows = Rows()
        var receiver: Receiver?
        for index in functions.indices {
            guard let address = addresses[index], sceneRows.contains(index) == scene else { continue }
            let function = functions[index]
            let call = BoundFunction(cif: interface(forRow: index, convention).cif, address: address, direct: convention.isDeclared)
            let shared = receiver ?? Receiver(convention)
            receiver = shared
            install(function, call, shared)
            rows.insert(index)
        }
        return rows
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

    /// What comes before and after each method's own arguments, fixed when a delegate is bound, and
    /// how a completion travels. One per binding, shared by its handlers.
    ///
    /// A class, and its per-call fields plain pointers: each handler captures one reference, and a
    /// call reads those fields without copying the convention (copying it retained and released each
    /// of its references on every call).
    final class Receiver {
        enum Kind { case exported, delegateStruct, pluginTable }

        let convention: Convention
        private let kind: Kind
        /// The first argument: `lc_app *` (exported, lc_delegate_t) or `lc_plugin *` (1.1).
        private let first: UnsafeRawPointer?
        /// `lc_delegate_t`'s `ctx`, its last argument.
        private let ctx: UnsafeRawPointer?
        /// The 1.1 plugin's state, read at each call.
        private let stateCell: PluginStateCell?

        init(_ convention: Convention) {
            self.convention = convention
            switch convention {
            case .exported(let app, _, _, _):
                kind = .exported
                first = app
                ctx = nil
                stateCell = nil
            case .delegateStruct(let app, let ctx, _):
                kind = .delegateStruct
                first = app
                self.ctx = ctx
                stateCell = nil
            case .pluginTable(let plugin):
                kind = .pluginTable
                first = UnsafeRawPointer(plugin.handle)
                ctx = nil
                stateCell = plugin.stateCell
            }
        }

        /// Calls `function` with the method's own arguments `core` (as many as the row takes) and, for
        /// the completion-taking methods, the request's handler; returns the raw `ffi_arg` result.
        @inline(__always)
        func call(_ function: BoundFunction, _ method: DelegateMethod, _ a: UnsafeRawPointer? = nil,
                  _ b: UnsafeRawPointer? = nil, _ c: UnsafeRawPointer? = nil, core: Int,
                  completion: FetchCompletionHandler? = nil, completionTakesResult: Bool = true) -> ffi_arg
        {
            var frame = Frame()
            frame.append(first)
            if kind == .pluginTable { frame.append(stateCell?.value.map(UnsafeRawPointer.init)) }
            if core > 0 { frame.append(a) }
            if core > 1 { frame.append(b) }
            if core > 2 { frame.append(c) }
            if let completion { appendCompletion(completion, method, takesResult: completionTakesResult, to: &frame) }
            if kind == .delegateStruct { frame.append(ctx) }
            return function.invoke(frame)
        }

        /// The completion arguments of a fetch, remote-notification or URL-session call, the convention's
        /// way; `takesResult` false: the completion function takes no result (a URL session's).
        @inline(never)
        private func appendCompletion(_ completion: FetchCompletionHandler, _ method: DelegateMethod, takesResult: Bool,
                                      to frame: inout Frame)
        {
            switch convention {
            case .exported(_, let closures, let owner, let id):
                frame.append(closures.makeCompletion(for: completion, owner: owner, label: "\(id) \(method.selector)",
                                                     logger: owner?.owner?.app.configuration.logger, takesResult: takesResult))
            case .delegateStruct(_, _, let id):
                let token = Completions.register(completion, owner: nil, label: "\(id) \(method.selector)", logger: nil)
                frame.append(takesResult ? unsafeBitCast(Completions.delegateComplete, to: UnsafeRawPointer.self)
                                         : unsafeBitCast(Completions.delegateCompleteVoid, to: UnsafeRawPointer.self))
                frame.append(UnsafeRawPointer(bitPattern: UInt(token)))
            case .pluginTable(let plugin):
                let token = Completions.register(completion, owner: plugin, label: "\(plugin.id) \(method.selector)",
                                                 logger: plugin.owner?.app.configuration.logger)
                let type = type(of: plugin)
                frame.append(takesResult ? unsafeBitCast(type.completeFunction, to: UnsafeRawPointer.self)
                                         : unsafeBitCast(type.completeVoidFunction, to: UnsafeRawPointer.self))
                frame.append(UnsafeRawPointer(bitPattern: UInt(token)))  // the uint64 token, in its 8-byte slot
            }
        }

        /// A method with no arguments of its own and no result (`applicationDidBecomeActive`, …), the
        /// most called kind: its frame built in place, without `call`'s general one.
        @inline(__always)
        func notify(_ function: BoundFunction) {
            switch kind {
            case .exported: function.invoke(first)
            case .pluginTable: _ = function.invoke(Frame(first, stateCell?.value.map(UnsafeRawPointer.init)))
            case .delegateStruct: _ = function.invoke(Frame(first, ctx))
            }
        }

        @inline(__always)
        func void(_ function: BoundFunction, _ method: DelegateMethod, _ a: UnsafeRawPointer? = nil,
                  _ b: UnsafeRawPointer? = nil, _ c: UnsafeRawPointer? = nil, core: Int,
                  completion: FetchCompletionHandler? = nil, completionTakesResult: Bool = true)
        {
            _ = call(function, method, a, b, c, core: core, completion: completion, completionTakesResult: completionTakesResult)
        }

        /// A C `bool` result, read as the low byte of the `ffi_arg`.
        @inline(__always)
        func bool(_ function: BoundFunction, _ method: DelegateMethod, _ a: UnsafeRawPointer? = nil,
                  _ b: UnsafeRawPointer? = nil, _ c: UnsafeRawPointer? = nil, core: Int) -> Bool
        {
            UInt8(truncatingIfNeeded: call(function, method, a, b, c, core: core)) != 0
        }
    }

    private static func install(_ function: Function, _ f: BoundFunction, _ receiver: Receiver,
                                into handlers: inout DelegateHandlers)
    {
        let method = function.method
        switch function.shape {
        case .notify(let set):
            set(&handlers) { _ in receiver.notify(f) }
        case .askWithDict(let set):
            set(&handlers) { _, options in
                withDict(options) { receiver.bool(f, method, $0, core: 1) }
            }
        case .receiveDict(let set):
            set(&handlers) { _, info in
                withDict(info) { receiver.void(f, method, $0, core: 1) }
            }
        case .openURL:
            handlers.openURL = { _, url, source, annotation in
                url.withCString { url in
                    withOptionalCString(source) { source in
                        withDict(annotationDict(annotation)) { annotation in
                            receiver.bool(f, method, url, source, annotation, core: 3)
                        }
                    }
                }
            }
        case .openURLWithOptions:
            handlers.openURLWithOptions = { _, url, options in
                url.withCString { url in
                    withDict(options) { options in receiver.bool(f, method, url, options, core: 2) }
                }
            }
        case .fetch:
            handlers.performFetch = { _, handler in
                receiver.void(f, method, core: 0, completion: handler)
            }
        case .remoteNotificationWithCompletion:
            handlers.didReceiveRemoteNotificationWithCompletion = { _, payload, handler in
                withDict(payload) { receiver.void(f, method, $0, core: 1, completion: handler) }
            }
        case .urlSessionEvents:
            handlers.handleEventsForBackgroundURLSession = { _, identifier, handler in
                identifier.withCString { receiver.void(f, method, $0, core: 1, completion: handler.request, completionTakesResult: false) }
            }
        case .askArchive(let set, let writable):
            set(&handlers) { _, archive in
                withArchive(archive, writable: writable) { receiver.bool(f, method, $0, core: 1) }
            }
        case .archive(let set, let writable):
            set(&handlers) { _, archive in
                withArchive(archive, writable: writable) { receiver.void(f, method, $0, core: 1) }
            }
        case .configuration:
            handlers.configurationForConnecting = { _, session, options in
                session.persistentIdentifier.withCString { id in
                    withDict(connectionDict(options, restored: nil)) { options in
                        let name = receiver.call(f, method, id, options, core: 2)
                        guard let text = UnsafePointer<CChar>(bitPattern: UInt(name)) else { return .default }
                        return SceneConfiguration(name: String(cString: text))
                    }
                }
            }
        case .discardSessions:
            handlers.didDiscardSceneSessions = { _, sessions in
                var dict = UserInfo()
                for session in sessions { dict[session.persistentIdentifier] = .string(session.configurationName ?? "") }
                withDict(dict) { receiver.void(f, method, $0, core: 1) }
            }
        case .askWithString(let set):
            set(&handlers) { _, text in text.withCString { receiver.bool(f, method, $0, core: 1) } }
        case .receiveString(let set):
            set(&handlers) { _, text in text.withCString { receiver.void(f, method, $0, core: 1) } }
        case .askActivity(let set):
            set(&handlers) { _, activity in withDict(activity.dictionary) { receiver.bool(f, method, $0, core: 1) } }
        case .receiveActivity(let set):
            set(&handlers) { _, activity in withDict(activity.dictionary) { receiver.void(f, method, $0, core: 1) } }
        case .failActivity:
            handlers.didFailToContinueUserActivity = { _, type, error in
                type.withCString { type in error.withCString { receiver.void(f, method, type, $0, core: 2) } }
            }
        case .sceneNotify, .sceneWillConnect, .sceneOpenURLs, .sceneRestoration, .sceneWithString, .sceneActivity, .sceneFail:
            preconditionFailure("\(function.symbol) is a scene delegate method: bound by bindScenes")
        }
    }

    /// Runs `body` with an `lc_dict *` holding `info` (NULL for nil), alive until `body` returns.
    static func withDict<R>(_ info: UserInfo?, _ body: (UnsafeRawPointer?) -> R) -> R {
        guard let info else { return body(nil) }
        let box = UserInfoBox(info)
        return withExtendedLifetime(box) { body(UnsafeRawPointer(box.opaque)) }
    }

    /// Runs `body` with an `lc_dict *` holding the archive's values; copies them back when `writable`,
    /// with a refused write as the encoding's failure (`StateArchive.take`).
    private static func withArchive<R>(_ archive: StateArchive, writable: Bool, _ body: (UnsafeRawPointer?) -> R) -> R {
        let box = UserInfoBox(archive.values)
        let result = withExtendedLifetime(box) { body(UnsafeRawPointer(box.opaque)) }
        if writable { archive.take(box) }
        return result
    }

    static func withOptionalCString<R>(_ string: String?, _ body: (UnsafeRawPointer?) -> R) -> R {
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
}
