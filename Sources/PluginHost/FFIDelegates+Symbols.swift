import AppLifecycle
import Glibc
import CLifecycleABI
import LifecycleC

// Where a plugin's delegate functions come from: its exported symbols (ABI 1.0) or the table its init
// registered (ABI 1.1). Both end in the C layer's one bridge, `FFIDelegates.bind(addresses:convention:)`.

extension FFIDelegates {
    /// Binds the delegate functions a plugin exports (ABI 1.0).
    ///
    /// Looks up every row's symbol with `lookup` and sets the matching handler for each one found.
    /// Returns immediately; nothing is called.
    /// - Parameters:
    ///   - lookup: finds an exported function by name, a C string of the given length (the loader:
    ///     `PluginImage.symbol`, the plugin's own dynamic symbol table), nil when absent.
    ///   - app: passed unchanged as every function's first argument (`lc_app *`); never dereferenced here.
    ///   - closures: makes the completion function pointers of the fetch and remote-notification calls.
    ///   - owner: the plugin that exports them (labels and logs its completions), nil for none.
    /// - Returns: the handler table (add it with `Application.addDelegate(_:id:)`; call its handlers on
    ///   the loop thread only) and the rows found.
    package static func bind(symbols lookup: (_ name: UnsafePointer<CChar>, _ length: Int) -> UnsafeMutableRawPointer?, app: OpaquePointer?,
                             closures: CompletionClosurePool, owner: (any PluginIdentity)? = nil,
                             id: String = "") -> (handlers: DelegateHandlers, rows: Rows)
    {
        // withUnsafeTemporaryAllocation: every symbol first (in table order), on the stack.
        withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer?.self, capacity: functions.count) { addresses in
            // The application delegate's rows only: the scene rows are looked up by bindScenes(symbols:…).
            let scene = sceneRows, names = symbolNames
            for index in functions.indices {
                addresses[index] = scene.contains(index) ? nil : lookup(names[index].cString, names[index].length)
            }
            return bind(addresses: UnsafeBufferPointer(addresses),
                        convention: .exported(app: app.map(UnsafeRawPointer.init), closures: closures, owner: owner, id: id))
        }
    }

    /// `bind(symbols:…)` for the scene delegate functions a plugin exports (ABI 1.2): each
    /// `scene…` symbol found becomes a `SceneDelegateHandlers` handler. Returns immediately; nil when
    /// the plugin exports none of them (most plugins: then no handler table is built at all).
    package static func bindScenes(symbols lookup: (_ name: UnsafePointer<CChar>, _ length: Int) -> UnsafeMutableRawPointer?,
                                   app: OpaquePointer?,
                                   owner: (any PluginIdentity)? = nil, id: String = "") -> (handlers: SceneDelegateHandlers, rows: Rows)?
    {
        withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer?.self, capacity: functions.count) { addresses in
            var found = false
            let scene = sceneRows, names = symbolNames
            for index in functions.indices {
                addresses[index] = scene.contains(index) ? lookup(names[index].cString, names[index].length) : nil
                found = found || addresses[index] != nil
            }
            guard found else { return nil }
            return bindScenes(addresses: UnsafeBufferPointer(addresses),
                              convention: .exported(app: app.map(UnsafeRawPointer.init), closures: CompletionClosurePool.shared,
                                                    owner: owner, id: id))
        }
    }

    /// `bind(symbols:…)` with the methods found, in table order.
    package static func bind(lookup: (String) -> UnsafeMutableRawPointer?, app: OpaquePointer?,
                             closures: CompletionClosurePool, owner: (any PluginIdentity)? = nil,
                             id: String = "") -> (handlers: DelegateHandlers, implemented: [DelegateMethod])
    {
        let bound = bind(symbols: { name, _ in lookup(String(cString: name)) }, app: app, closures: closures, owner: owner, id: id)
        return (bound.handlers, bound.rows.methods)
    }

    /// The function addresses of an `lc_plugin_delegate_t` of `size` bytes, one per row: its fields are
    /// the rows in order (a shorter struct's missing tail is NULL).
    static func pluginTableAddresses(_ table: UnsafePointer<lc_plugin_delegate_t>, size: Int) -> [UnsafeMutableRawPointer?] {
        typealias T = lc_plugin_delegate_t
        let first = MemoryLayout<T>.offset(of: \T.will_finish_launching)!
        let stride = MemoryLayout<UnsafeMutableRawPointer?>.stride
        precondition(MemoryLayout<T>.offset(of: \T.handle_events_for_background_url_session)! == first + stride * (functions.count - 1)
                         && MemoryLayout<T>.offset(of: \T.open_url_with_options)! == first + stride * 19
                         && MemoryLayout<T>.offset(of: \T.perform_fetch)! == first + stride * 12,
                     "lc_plugin_delegate_t's fields are no longer the rows of `functions`, in order")
        let raw = UnsafeRawPointer(table)
        return functions.indices.map { index in
            let offset = first + stride * index
            return offset + stride <= min(size, MemoryLayout<T>.size) ? raw.load(fromByteOffset: offset, as: UnsafeMutableRawPointer?.self) : nil
        }
    }
}

extension LoadedPlugin {
    /// Binds the plugin's application delegate functions: the 1.1 table its init registered, else
    /// (1.0) the functions it exports, found by name. Returns immediately; nothing is called.
    /// - Returns: the handlers (call them on the loop thread) and the rows bound.
    /// Inlined: returning the table (two dozen closures) through a call cost each load ~9k instructions.
    @inline(__always)
    func bindDelegates() -> (handlers: DelegateHandlers, rows: FFIDelegates.Rows) {
        if let table = delegateTable {
            return table.withUnsafeBufferPointer { FFIDelegates.bind(addresses: $0, convention: .pluginTable(self)) }
        }
        // The exported functions, found by name in the plugin's own symbol table (`PluginImage.symbol`).
        guard let image else { return (DelegateHandlers(), FFIDelegates.Rows()) }
        return FFIDelegates.bind(symbols: { image.symbol($0, length: $1) }, app: owner?.opaque,
                                 closures: CompletionClosurePool.shared, owner: self, id: id)
    }
}
