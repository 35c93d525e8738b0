import AppLifecycle
import CLifecycleABI
import CFFI
import Synchronization

/// Makes the completion function pointers (`void (*)(lc_fetch_result)`) handed to a plugin's fetch
/// and remote-notification delegate functions, and frees them once their request is over.
///
/// Each pointer is a libffi closure (`ffi_closure_alloc` + `ffi_prep_closure_loc`) bound to one
/// request's `FetchCompletionHandler`: calling it completes that request through the handler, which
/// reports and ignores a second call itself. A result outside `lc_fetch_result` counts as `.failed`.
///
/// Lifetime: a closure stays valid while its request is open (`FetchCompletionHandler.requestEnded`
/// is false). After the request ends it goes into a FIFO quarantine of the `quarantineLimit` most
/// recently ended closures, so that a late second call still lands safely (and is reported); older
/// ones are freed with `ffi_closure_free`. Ended requests are swept at each new allocation and on
/// `sweep()`; everything left is freed when the pool is deinitialised. A plugin that calls a pointer
/// after that many newer requests ended, or after the pool is gone, calls freed code.
///
/// One pool per application; the bound delegate handlers hold it, so it lives as long as they do.
///
/// Threads: [thread-safe]. Allocation and sweeping happen on the loop thread in practice; the
/// function pointers themselves may be called from any thread (the handler hops to the loop).
package final class CompletionClosurePool: Sendable {
    /// How many ended closures are kept valid for late calls.
    package static let quarantineLimit = 64

    /// @unchecked: the pointers are owned by the pool and touched only under its lock (or in deinit).
    private struct Entry: @unchecked Sendable {
        /// The writable closure (`ffi_closure *`), what `ffi_closure_free` takes.
        let closure: UnsafeMutableRawPointer
        /// The executable address handed to the plugin.
        let code: UnsafeMutableRawPointer
        /// Retained; the closure's `user_data`.
        let context: Unmanaged<CompletionContext>
    }

    private struct State {
        /// Closures whose request may still be open, in allocation order.
        var open: [Entry] = []
        /// Closures whose request has ended, oldest end first.
        var quarantine: [Entry] = []
    }

    private let state = Mutex(State())

    package init() {}

    deinit {
        state.withLock { state in
            for entry in state.open + state.quarantine { Self.free(entry) }
            state.open.removeAll()
            state.quarantine.removeAll()
        }
    }

    /// A new C function pointer that completes `handler`'s request when called.
    ///
    /// Sweeps ended requests first. [thread-safe]
    /// - Returns: the code address (a `void (*)(lc_fetch_result)`), owned by the pool; valid until the
    ///   request has ended and `quarantineLimit` later closures have ended too, or the pool is freed.
    package func makeCompletion(for handler: FetchCompletionHandler) -> UnsafeRawPointer {
        sweep()
        var code: UnsafeMutableRawPointer?
        guard let closure = ffi_closure_alloc(MemoryLayout<ffi_closure>.stride, &code), let code else {
            fatalError("ffi_closure_alloc failed: out of executable memory for completion handlers")
        }
        let context = Unmanaged.passRetained(CompletionContext(handler))
        let status = ffi_prep_closure_loc(
            closure.assumingMemoryBound(to: ffi_closure.self), Self.interface.cif,
            { _, _, arguments, userData in CompletionClosurePool.complete(arguments, userData) },
            context.toOpaque(), code)
        guard status == FFI_OK else {
            context.release()
            ffi_closure_free(closure)
            fatalError("ffi_prep_closure_loc failed (\(status.rawValue))")
        }
        state.withLock { $0.open.append(Entry(closure: closure, code: code, context: context)) }
        return UnsafeRawPointer(code)
    }

    /// Moves closures whose request has ended into the quarantine and frees those pushed out of it.
    /// [thread-safe]
    package func sweep() {
        state.withLock { state in
            var stillOpen: [Entry] = []
            for entry in state.open {
                if entry.context.takeUnretainedValue().handler.requestEnded {
                    state.quarantine.append(entry)
                } else {
                    stillOpen.append(entry)
                }
            }
            state.open = stillOpen
            let excess = state.quarantine.count - Self.quarantineLimit
            if excess > 0 {
                for entry in state.quarantine[..<excess] { Self.free(entry) }
                state.quarantine.removeFirst(excess)
            }
        }
    }

    /// How many closures are allocated: open requests plus the quarantine. [thread-safe]
    package var liveClosureCount: Int { state.withLock { $0.open.count + $0.quarantine.count } }

    // MARK: Private

    /// `void(uint32_t)`: the completion functions' interface, prepared once.
    private static let interface = FFIDelegates.callInterface(for: .init(returnType: .void, argumentTypes: [.uint32]))

    private static func free(_ entry: Entry) {
        ffi_closure_free(entry.closure)
        entry.context.release()
    }

    /// The closure body: any thread, as the plugin calls it.
    private static func complete(_ arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ userData: UnsafeMutableRawPointer?) {
        guard let userData, let argument = arguments?[0] else { return }
        let result: FetchResult
        switch argument.load(as: UInt32.self) {
        case 0: result = .newData
        case 1: result = .noData
        default: result = .failed  // LC_FETCH_FAILED, or a value the ABI does not define
        }
        Unmanaged<CompletionContext>.fromOpaque(userData).takeUnretainedValue().handler(result)
    }
}

/// What a completion closure's `user_data` points at.
private final class CompletionContext: Sendable {
    let handler: FetchCompletionHandler
    init(_ handler: FetchCompletionHandler) { self.handler = handler }
}
