import AppLifecycle
import CLifecycleABI
// @preconcurrency: libffi's type descriptors are C globals libffi never changes after load.
@preconcurrency import CFFI
import Logging
import Synchronization

/// The one completion mechanism of the C layer: every fetch or remote-notification request handed to
/// C code gets a **token**, a 64-bit id drawn from one process-wide counter and never reused, looked
/// up in one table. What C code calls is a static function plus that token:
///
/// - ABI 1.1 plugin delegate tables: `lc_complete_fn complete` + `lc_completion_token token`
///   (`complete(plugin, token, result)`, the plugins module's function: `PluginIdentity.completeFunction`),
///   checked against the calling plugin;
/// - `lc_delegate_t` (lc_app_add_delegate): `complete(void *completion, result)` with the token as
///   the `completion` pointer's bits;
/// - ABI 1.0 exported delegate functions: a libffi closure (`CompletionClosurePool`) that holds a
///   token and completes through this table.
///
/// Guarantees (ABI 1.1 and `lc_delegate_t`): a token completes its own request at most once. A late
/// call (the request ended: completed, ended by the watchdog, or the application stopped), a repeated
/// call, an unknown token, or (1.1) another plugin's token returns `LC_ERR_NOT_FOUND`, is logged
/// (and, while the request is still known, traced by the engine as "called again" or "late"), and
/// completes nothing — no other request, ever, since no token is issued twice.
///
/// A result outside `lc_fetch_result` is range-checked before anything else (`UnknownResult`): ABI
/// 1.1's `complete`, which returns a status, refuses it (`LC_ERR_INVALID_ARGUMENT`, logged; nothing is
/// completed and the request stays open); the two forms that return nothing (`lc_delegate_t`'s and ABI
/// 1.0's) take it as `LC_FETCH_FAILED`, as documented, since their caller could not learn of a refusal.
///
/// Memory: an entry lives while its request is open; ended ones are swept when the table has doubled
/// since the last sweep (amortised O(1) per request).
package enum Completions {
    struct Entry {
        let handler: FetchCompletionHandler
        /// The plugin the token was issued to (`ObjectIdentifier` bits), 0 for no plugin.
        let owner: UInt
        /// Who receives it (delegate or plugin id) and its method, for messages.
        let label: String
        let logger: Logger
        /// Set by the first call: later calls are repeats.
        var called = false
    }

    struct State {
        var next: UInt64 = 1
        var entries: [UInt64: Entry] = [:]
        var sweepAt = 64
    }

    private static let state = Mutex(State())
    /// For messages about tokens nobody knows any more.
    static let fallbackLogger = Logger(label: "lifecycle.completions")

    /// Issues a new token for `handler`'s request. [thread-safe]
    /// - Parameters:
    ///   - owner: the plugin that may complete it (checked by the 1.1 entry point), or nil.
    ///   - label: e.g. "org.example.plugin application:performFetchWithCompletionHandler:".
    package static func register(_ handler: FetchCompletionHandler, owner: (any PluginIdentity)?, label: String,
                                 logger: Logger?) -> UInt64
    {
        let ownerBits = owner.map { UInt(bitPattern: ObjectIdentifier($0)) } ?? 0
        return state.withLock { s in
            if s.entries.count >= s.sweepAt {
                s.entries = s.entries.filter { !$0.value.handler.requestEnded }
                s.sweepAt = max(64, s.entries.count * 2)
            }
            let token = s.next
            s.next += 1
            s.entries[token] = Entry(handler: handler, owner: ownerBits, label: label, logger: logger ?? fallbackLogger)
            return token
        }
    }

    /// What `complete` does with a result outside `lc_fetch_result`.
    package enum UnknownResult: Sendable {
        /// `LC_ERR_INVALID_ARGUMENT`, logged; nothing is completed, the token is not used up (its request
        /// stays open: a call with a valid result may still complete it, within its budget).
        case refused
        /// Taken as `LC_FETCH_FAILED` (the forms that return no status: `lc_delegate_t`, ABI 1.0).
        case countsAsFailed
    }

    /// Completes the request of `token`, if it is open and (with a `caller`) the caller's. [thread-safe]
    ///
    /// `result` is range-checked first (`isFetchResult`); one outside `lc_fetch_result` is handled as
    /// `unknownResult` says.
    /// - Parameter caller: the plugin that calls (ABI 1.1); nil where the caller cannot be known.
    /// - Returns: LC_OK, LC_ERR_INVALID_ARGUMENT (a result outside its enum, `.refused`), or
    ///   LC_ERR_NOT_FOUND (late, repeated, unknown or foreign token), the message set.
    package static func complete(_ token: UInt64, _ result: lc_fetch_result, caller: (any PluginIdentity)?,
                                 function: String, unknownResult: UnknownResult = .refused) -> lc_status
    {
        enum Outcome { case complete(FetchCompletionHandler), report(FetchCompletionHandler?, String, Logger) }
        let callerBits = caller.map { UInt(bitPattern: ObjectIdentifier($0)) }
        let who = caller.map { "plugin '\($0.id)'" } ?? "a caller"
        var result = result
        if !isFetchResult(result), unknownResult == .countsAsFailed { result = lc_fetch_result(LC_FETCH_FAILED) }
        guard isFetchResult(result) else {
            let message = "\(function): \(who) completed token \(token) with result \(result); LC_FETCH_NEW_DATA (0), LC_FETCH_NO_DATA (1) "
                + "or LC_FETCH_FAILED (2); nothing was completed"
            let logger = state.withLock { $0.entries[token]?.logger } ?? caller?.owner?.app.configuration.logger ?? fallbackLogger
            logger.warning("\(message)")
            return lcFail(lc_status(LC_ERR_INVALID_ARGUMENT), message)
        }
        let outcome: Outcome = state.withLock { s in
            guard var entry = s.entries[token] else {
                return .report(nil, "\(function): \(who) completed token \(token), which names no open request (completed, ended, or never issued); ignored",
                               caller?.owner?.app.configuration.logger ?? fallbackLogger)
            }
            if let callerBits, entry.owner != callerBits {
                return .report(nil, "\(function): \(who) completed token \(token), which belongs to another plugin; ignored", entry.logger)
            }
            if entry.called {
                return .report(entry.handler, "\(function): token \(token) (\(entry.label)) was already completed; the repeated call is ignored", entry.logger)
            }
            entry.called = true
            s.entries[token] = entry
            if entry.handler.requestEnded {
                return .report(entry.handler, "\(function): token \(token) (\(entry.label)) completed after its request ended; ignored", entry.logger)
            }
            return .complete(entry.handler)
        }
        switch outcome {
        case .complete(let handler):
            handler(fetchResult(result))
            return lc_status(LC_OK)
        case .report(let handler, let message, let logger):
            logger.warning("\(message)")
            // Still known: the engine traces it ("called again", or "late"), and changes nothing.
            handler?(fetchResult(result))
            return lcFail(lc_status(LC_ERR_NOT_FOUND), message)
        }
    }

    /// Whether `result` is one of `lc_fetch_result`'s values (`LC_FETCH_NEW_DATA` to `LC_FETCH_FAILED`). [thread-safe]
    package static func isFetchResult(_ result: lc_fetch_result) -> Bool { result <= lc_fetch_result(LC_FETCH_FAILED) }

    /// How many requests the table still knows (open ones, and ended ones not swept yet). [thread-safe]
    package static var entryCount: Int { state.withLock { $0.entries.count } }

    /// What `lc_delegate_t` functions receive as `complete`: the token travels as the pointer's bits.
    static let delegateComplete: @convention(c) (UnsafeMutableRawPointer?, lc_fetch_result) -> Void = { token, result in
        _ = complete(UInt64(UInt(bitPattern: token)), result, caller: nil, function: "lc_delegate_t completion", unknownResult: .countsAsFailed)
    }

    /// `delegateComplete` for a completion without a result (`void (*complete)(void *completion)`: a
    /// URL session's, ABI 1.5).
    static let delegateCompleteVoid: @convention(c) (UnsafeMutableRawPointer?) -> Void = { token in
        _ = complete(UInt64(UInt(bitPattern: token)), lc_fetch_result(LC_FETCH_NO_DATA), caller: nil, function: "lc_delegate_t completion")
    }
}

/// The completion function pointers (`void (*)(lc_fetch_result)`, and `void (*)(void)` for a URL
/// session's) of ABI 1.0 exported delegate functions, which carry no token: each is a libffi closure
/// whose slot holds the token of the request it currently serves, and completes through `Completions`.
/// A closure keeps its C type for good: one of each type is reused only for that type.
///
/// What ABI 1.0 can be promised (the pointer is all the plugin calls with, so nothing in a call tells
/// one request served by an address from the next):
///
/// 1. **No freed code, ever.** A closure is never freed (`ffi_closure_free` is never called): a
///    pointer called at any time, even after its plugin was unloaded or its application destroyed,
///    lands in valid code.
/// 2. **A request that ended without its call** (watchdog, application stopped or destroyed, plugin
///    unloaded) leaves its closure bound to that ended token for good: the closure is never reused,
///    so calling it later is reported and completes nothing.
/// 3. **A repeated call** of a closure that did complete its request is reported and completes
///    nothing as long as the closure has not been reused; it is reused only once its request ended
///    **and** `reuseDelay` (60 s) has passed since. A repeat arriving after that may complete the
///    request the address serves by then. (ABI 1.1 tokens are never reused: no such window.)
///
/// Memory is bounded by the open requests, plus the closures completed within the last `reuseDelay`,
/// plus those whose request ended uncalled (each one a plugin bug the watchdog reported).
///
/// Threads: [thread-safe]. The function pointers may be called from any thread.
package final class CompletionClosurePool: Sendable {
    /// How long a completed closure waits before it serves another request.
    package static let defaultReuseDelay: Duration = .seconds(60)

    /// One closure: its code address, and the request it serves.
    final class Slot: Sendable {
        /// The executable address handed to the plugin (bits: a pointer is not Sendable).
        let code: UInt
        /// The token of the request served now (never 0 once made).
        let token = Atomic<UInt64>(0)
        /// Whether the closure was called since it was (re)bound.
        let called = Atomic<Bool>(false)
        /// `void (*)(lc_fetch_result)` (true) or `void (*)(void)`.
        let takesResult: Bool

        init(code: UInt, takesResult: Bool) {
            self.code = code
            self.takesResult = takesResult
        }
    }

    /// Completed slots of one C type and when their request was seen ended, oldest first: reusable
    /// after the delay.
    private struct Cooling {
        var items: [(slot: Slot, since: MonotonicInstant)] = []
        var start = 0

        mutating func takeReady(now: MonotonicInstant, after delay: Duration) -> Slot? {
            guard start < items.count, now.duration(since: items[start].since) >= delay else { return nil }
            let slot = items[start].slot
            start += 1
            if start > 64, start * 2 > items.count {
                items.removeFirst(start)
                start = 0
            }
            return slot
        }
    }

    private struct Bound {
        let slot: Slot
        let handler: FetchCompletionHandler
    }

    private struct State {
        /// Slots whose request may still be open.
        var open: [Bound] = []
        /// Completed slots, by C type (`takesResult`, then not): reusable after the delay.
        var cooling = Cooling()
        var coolingVoid = Cooling()
        /// Slots whose request ended uncalled: never reused.
        var dead = 0
        var made = 0
    }

    private let state = Mutex(State())
    private let reuseDelay: Duration

    /// The pool every application shares (closures are never freed, so one pool bounds them all).
    package static let shared = CompletionClosurePool()

    package init(reuseDelay: Duration = defaultReuseDelay) { self.reuseDelay = reuseDelay }

    /// A C function pointer that completes `handler`'s request through a fresh token. [thread-safe]
    /// - Parameter takesResult: a `void (*)(lc_fetch_result)` (true) or a `void (*)(void)`, whose call
    ///   completes with no result (`LC_FETCH_NO_DATA` underneath).
    /// - Returns: the code address; valid for the life of the process.
    package func makeCompletion(for handler: FetchCompletionHandler, owner: (any PluginIdentity)? = nil, label: String = "",
                                logger: Logger? = nil, takesResult: Bool = true) -> UnsafeRawPointer
    {
        let token = Completions.register(handler, owner: owner, label: label, logger: logger)
        let slot: Slot = state.withLock { s in
            sweep(&s)
            let now = MonotonicInstant.now
            let reused = takesResult ? s.cooling.takeReady(now: now, after: reuseDelay) : s.coolingVoid.takeReady(now: now, after: reuseDelay)
            if let reused { return reused }
            s.made += 1
            return Self.makeSlot(takesResult: takesResult)
        }
        slot.called.store(false, ordering: .releasing)
        slot.token.store(token, ordering: .releasing)
        state.withLock { $0.open.append(Bound(slot: slot, handler: handler)) }
        return UnsafeRawPointer(bitPattern: slot.code)!
    }

    /// Sorts slots whose request has ended: completed ones start cooling, uncalled ones die. [thread-safe]
    package func sweep() { state.withLock { sweep(&$0) } }

    private func sweep(_ s: inout State) {
        guard s.open.contains(where: { $0.handler.requestEnded }) else { return }
        let now = MonotonicInstant.now
        var stillOpen: [Bound] = []
        for bound in s.open {
            if !bound.handler.requestEnded {
                stillOpen.append(bound)
            } else if bound.slot.called.load(ordering: .acquiring) {
                if bound.slot.takesResult { s.cooling.items.append((bound.slot, now)) } else { s.coolingVoid.items.append((bound.slot, now)) }
            } else {
                s.dead += 1
            }
        }
        s.open = stillOpen
    }

    /// Closures made so far (never freed). [thread-safe]
    package var liveClosureCount: Int { state.withLock { $0.made } }
    /// Closures bound to requests that ended uncalled (never reused). [thread-safe]
    package var deadClosureCount: Int { state.withLock { $0.dead } }

    // MARK: Private

    /// `void(uint32_t)`: the completion functions' interface, prepared once; `void(void)` for those
    /// without a result.
    private static let interface = FFIDelegates.callInterface(for: .init(returnType: .void, argumentTypes: [.uint32]))
    private static let voidInterface = FFIDelegates.callInterface(for: .init(returnType: .void, argumentTypes: []))

    private static func makeSlot(takesResult: Bool) -> Slot {
        var code: UnsafeMutableRawPointer?
        guard let closure = ffi_closure_alloc(MemoryLayout<ffi_closure>.stride, &code), let code else {
            fatalError("ffi_closure_alloc failed: out of executable memory for completion handlers")
        }
        let slot = Slot(code: UInt(bitPattern: code), takesResult: takesResult)
        // Retained for good: the closure's user_data outlives every pool (a plugin may call any time).
        let context = Unmanaged.passRetained(slot)
        let status = ffi_prep_closure_loc(
            closure.assumingMemoryBound(to: ffi_closure.self), takesResult ? interface.cif : voidInterface.cif,
            { _, _, arguments, userData in CompletionClosurePool.call(arguments, userData) },
            context.toOpaque(), code)
        precondition(status == FFI_OK, "ffi_prep_closure_loc failed (\(status.rawValue))")
        return slot
    }

    /// The closure body: any thread, as the plugin calls it.
    private static func call(_ arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ userData: UnsafeMutableRawPointer?) {
        guard let userData else { return }
        let slot = Unmanaged<Slot>.fromOpaque(userData).takeUnretainedValue()
        let result: lc_fetch_result
        if slot.takesResult {
            guard let argument = arguments?[0] else { return }
            result = argument.load(as: UInt32.self)
        } else {
            result = lc_fetch_result(LC_FETCH_NO_DATA)  // `void (*)(void)`: no argument to read
        }
        slot.called.store(true, ordering: .releasing)
        _ = Completions.complete(slot.token.load(ordering: .acquiring), result, caller: nil,
                                 function: "completion", unknownResult: .countsAsFailed)
    }
}
