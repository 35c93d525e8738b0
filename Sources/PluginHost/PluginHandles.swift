import CLifecycleSystem
import Glibc
import Synchronization

/// The `lc_plugin *` values plugins and C programs hold: not the plugin object's address, which any
/// code in the process could find by scanning the heap and use in another plugin's name, but a token
/// that only this table turns back into the plugin — a slot index (low 32 bits, from 1) and a random
/// 32-bit generation from the kernel's generator, one per handle issued (high 32 bits; drawn 64 at a
/// time, so that issuing a handle makes no system call). A forged, damaged or retired
/// handle is refused, never dereferenced; on x86-64 and arm64 the token is not a usable address (a
/// plugin treating it as a pointer faults at once instead of reading host memory).
///
/// What it does not stop (include/lifecycle.h, "What the host's checks can and cannot stop"): code in
/// the host's process can read the handle a plugin keeps in its own memory. The host-API calls made on
/// the main thread are also checked against the plugin whose callback is running (`HostCalls`).
///
/// Guarantees:
/// - **Thread.** `issue` and `retire` take a lock; `plugin(for:)` is lock-free and [thread-safe].
/// - **Cost.** A lookup is O(1): a few atomic loads, no allocation, no retain.
/// - **Lifetime.** The table holds no reference: a plugin retires its handle as its object goes (at
///   the application's end, when no plugin code runs on its behalf). A lookup racing that end may see
///   the slot just before it is retired — as with the object pointer before, a plugin calling after
///   its application is gone is outside the contract.
package enum PluginHandles {
    // Chunks of 256 slots: the first load of a process initialises one chunk (a chunk of 4,096 cost
    // it ~74,000 instructions). Slots of retired handles are issued again, so the bound is on the
    // handles alive at once.
    private static let chunkBits = 8
    private static let chunkSize = 1 << chunkBits
    private static let maximumChunks = 1 << 10  // 262,144 handles alive at once

    private struct Slot: ~Copyable {
        let generation: Atomic<UInt64>
        let object: Atomic<UInt>
    }

    /// The chunks of slots, allocated as needed and never freed (lookups read them without a lock).
    // nonisolated(unsafe): the pointer never changes; its slots are atomics (chunks published with release stores).
    nonisolated(unsafe) private static let chunks: UnsafeMutablePointer<Atomic<UInt>> = {
        let chunks = UnsafeMutablePointer<Atomic<UInt>>.allocate(capacity: maximumChunks)
        for index in 0..<maximumChunks { (chunks + index).initialize(to: Atomic(0)) }
        return chunks
    }()

    private struct Issuer {
        var next = 0
        var free: [Int] = []
        /// Random generations drawn ahead, 64 at a time: one `getrandom` per 64 handles instead of
        /// one a handle (a system call a plugin load). Taken from the end; refilled when empty.
        var generations: [UInt32] = []

        /// A random nonzero generation (the kernel's generator, as `UInt32.random`).
        mutating func generation() -> UInt64 {
            while true {
                if generations.isEmpty {
                    generations = Array(unsafeUninitializedCapacity: 64) { buffer, count in
                        let bytes = UnsafeMutableRawBufferPointer(buffer)
                        if lcs_random_bytes(bytes.baseAddress, bytes.count) == 0 {
                            count = buffer.count
                        } else {  // refused (a seccomp filter, say): one at a time, as before
                            buffer.initializeElement(at: 0, to: UInt32.random(in: .min ... .max))
                            count = 1
                        }
                    }
                }
                let drawn = generations.removeLast()
                if drawn != 0 { return UInt64(drawn) }
            }
        }
    }

    private static let issuer = Mutex(Issuer())

    private static func slot(_ index: Int) -> UnsafeMutablePointer<Slot>? {
        guard index >= 0, index < maximumChunks * chunkSize else { return nil }
        let chunk = chunks[index >> chunkBits].load(ordering: .acquiring)
        guard chunk != 0 else { return nil }
        return UnsafeMutablePointer<Slot>(bitPattern: chunk)! + (index & (chunkSize - 1))
    }

    /// A new handle for `plugin`. [thread-safe]
    static func issue(for plugin: LoadedPlugin) -> OpaquePointer {
        let (index, generation) = issuer.withLock { issuer -> (Int, UInt64) in
            let generation = issuer.generation()
            if let reused = issuer.free.popLast() { return (reused, generation) }
            let index = issuer.next
            precondition(index < maximumChunks * chunkSize, "more than \(maximumChunks * chunkSize) plugin handles alive in one process")
            issuer.next += 1
            if index & (chunkSize - 1) == 0 {
                let chunk = UnsafeMutablePointer<Slot>.allocate(capacity: chunkSize)
                for offset in 0..<chunkSize { (chunk + offset).initialize(to: Slot(generation: Atomic(0), object: Atomic(0))) }
                chunks[index >> chunkBits].store(UInt(bitPattern: chunk), ordering: .releasing)
            }
            return (index, generation)
        }
        let slot = slot(index)!
        slot.pointee.object.store(UInt(bitPattern: Unmanaged.passUnretained(plugin).toOpaque()), ordering: .relaxed)
        slot.pointee.generation.store(generation, ordering: .releasing)
        return OpaquePointer(bitPattern: UInt(generation << 32 | UInt64(index + 1)))!
    }

    /// The plugin `handle` names, or nil: NULL, never issued, damaged, or retired. [thread-safe]
    package static func plugin(for handle: OpaquePointer?) -> LoadedPlugin? {
        guard let handle else { return nil }
        let bits = UInt64(UInt(bitPattern: handle))
        let generation = bits >> 32, number = Int(bits & 0xFFFF_FFFF)
        guard generation != 0, number != 0, let slot = slot(number - 1) else { return nil }
        guard slot.pointee.generation.load(ordering: .acquiring) == generation else { return nil }
        let object = slot.pointee.object.load(ordering: .relaxed)
        // The generation again: the slot was not retired (and reissued) while it was read.
        guard object != 0, slot.pointee.generation.load(ordering: .acquiring) == generation else { return nil }
        return Unmanaged<LoadedPlugin>.fromOpaque(UnsafeRawPointer(bitPattern: object)!).takeUnretainedValue()
    }

    /// Retires `handle`: from now on it names nothing; its slot is issued again later. [thread-safe]
    static func retire(_ handle: OpaquePointer) {
        let bits = UInt64(UInt(bitPattern: handle))
        let index = Int(bits & 0xFFFF_FFFF) - 1
        guard let slot = slot(index), slot.pointee.generation.load(ordering: .relaxed) == bits >> 32 else { return }
        slot.pointee.generation.store(0, ordering: .releasing)
        slot.pointee.object.store(0, ordering: .relaxed)
        issuer.withLock { $0.free.append(index) }
    }
}
