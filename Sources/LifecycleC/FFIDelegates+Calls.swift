import AppLifecycle
// @preconcurrency: libffi's type descriptors (`ffi_type_pointer`, ...) are C globals that libffi never
// changes after load; only their addresses are taken here.
@preconcurrency import CFFI
import Synchronization

// The delegate bridge's calls: one prepared `ffi_cif` per signature, and a call's arguments in a fixed
// frame on the stack.

extension FFIDelegates {
    // MARK: Call interfaces

    /// A prepared `ffi_cif` and its argument-type array: immutable once prepared, shared by every
    /// thread, and never freed (there is one per signature for the life of the process).
    package final class CallInterface: @unchecked Sendable {
        // @unchecked: immutable once prepared (libffi only reads the cif); published under a lock, never freed.
        let cif: UnsafeMutablePointer<ffi_cif>
        package let signature: Signature
        private let argumentTypes: UnsafeMutablePointer<UnsafeMutablePointer<ffi_type>?>
        /// The interface prepared before this one (the cache is a list).
        fileprivate let next: CallInterface?

        fileprivate init(_ signature: Signature, next: CallInterface?) {
            self.signature = signature
            self.next = next
            let count = signature.argumentCount
            cif = .allocate(capacity: 1)
            argumentTypes = .allocate(capacity: max(count, 1))
            for index in 0..<count { argumentTypes[index] = signature.argumentType(at: index).ffiType }
            let status = ffi_prep_cif(cif, FFI_DEFAULT_ABI, UInt32(count), signature.returnType.ffiType, argumentTypes)
            precondition(status == FFI_OK, "ffi_prep_cif failed (\(status.rawValue)) for \(signature)")
        }
    }

    /// The prepared interfaces: a handful (one per distinct signature), newest first, searched in
    /// order. A list, not a dictionary keyed by `Signature` nor an array: instantiating either type
    /// at run time cost the first plugin load of a process (a dictionary makes the runtime look up
    /// `Signature: Hashable` through every conformance record of the process, about 0.1 ms).
    private static let interfaces = Mutex<(newest: CallInterface?, count: Int)>((nil, 0))

    /// The prepared call interface for `signature`: made on first use, the same object afterwards.
    /// [thread-safe]
    package static func callInterface(for signature: Signature) -> CallInterface {
        interfaces.withLock { cache in
            var candidate = cache.newest
            while let interface = candidate {
                if interface.signature == signature { return interface }
                candidate = interface.next
            }
            let interface = CallInterface(signature, next: cache.newest)
            cache = (interface, cache.count + 1)
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

    init() {}

    /// A frame of two arguments.
    @inline(__always)
    init(_ a: UnsafeRawPointer?, _ b: UnsafeRawPointer?) {
        slots.0 = a
        slots.1 = b
        count = 2
    }

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
/// a fixed frame on the stack: a call allocates nothing and checks nothing.
///
/// Two ways to call, chosen when the row is bound:
/// - **direct** (`lc_plugin_delegate_t`, `lc_delegate_t`): the header declares each slot's C type, so
///   the caller knows it at compile time — every argument a pointer or a 64-bit token, the result
///   void, `bool` or a pointer. The function is called through a C function type of the frame's
///   arity whose arguments are all `const void *` and whose result is a 64-bit word: on the ABIs
///   this package builds for (x86-64 System V, AArch64 AAPCS64) that is the same call as the
///   declared type (each argument in the next integer register, the result in the first integer
///   return register; a `bool` is read from its low byte, as libffi's `ffi_arg` is). About 10
///   instructions where `ffi_call` took ~450. In the unsafe ledger (`docs/architecture.md`).
/// - **libffi** (ABI 1.0 exported functions, found by name): their types are the plugin's word, so
///   `ffi_call` with the cif prepared from the row's signature.
struct BoundFunction {
    let cif: UnsafeMutablePointer<ffi_cif>
    let entry: @convention(c) () -> Void
    /// Called through a C function type of its arity (see above) instead of `ffi_call`.
    let direct: Bool

    init(cif: UnsafeMutablePointer<ffi_cif>, address: UnsafeMutableRawPointer, direct: Bool) {
        self.cif = cif
        entry = unsafeBitCast(address, to: (@convention(c) () -> Void).self)
        self.direct = direct
    }

    /// Calls the function with the frame's slots (the cif's argument count says how many are read);
    /// returns the raw result word (`ffi_arg`).
    @inline(__always)
    func invoke(_ frame: Frame) -> ffi_arg {
        if direct { return invokeDirectly(frame) }
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

    /// Calls a libffi-bound function whose one argument is `argument` (a 1.0 exported function taking
    /// the application alone): no frame, one argument slot.
    @inline(__always)
    func invoke(_ argument: UnsafeRawPointer?) {
        var argument = argument
        var result: ffi_arg = 0
        withUnsafeMutablePointer(to: &argument) { slot in
            var values: UnsafeMutableRawPointer? = UnsafeMutableRawPointer(slot)
            ffi_call(cif, entry, &result, &values)
        }
    }

    typealias P = UnsafeRawPointer?

    /// The direct call, by the frame's arity (2 to 6: a 1.1 function takes the plugin and its state
    /// first; an `lc_delegate_t` one the application and, last, its context).
    @inline(__always)
    private func invokeDirectly(_ frame: Frame) -> ffi_arg {
        let s = frame.slots
        switch frame.count {
        case 2: return ffi_arg(unsafeBitCast(entry, to: (@convention(c) (P, P) -> UInt).self)(s.0, s.1))
        case 3: return ffi_arg(unsafeBitCast(entry, to: (@convention(c) (P, P, P) -> UInt).self)(s.0, s.1, s.2))
        case 4: return ffi_arg(unsafeBitCast(entry, to: (@convention(c) (P, P, P, P) -> UInt).self)(s.0, s.1, s.2, s.3))
        case 5: return ffi_arg(unsafeBitCast(entry, to: (@convention(c) (P, P, P, P, P) -> UInt).self)(s.0, s.1, s.2, s.3, s.4))
        default: return ffi_arg(unsafeBitCast(entry, to: (@convention(c) (P, P, P, P, P, P) -> UInt).self)(s.0, s.1, s.2, s.3, s.4, s.5))
        }
    }
}
