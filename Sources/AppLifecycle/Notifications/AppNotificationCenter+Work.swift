import LifecycleRunLoop
import Synchronization

/// A C function queued with its context to run on the loop thread (`lc_app_perform_async`, a plugin's
/// `perform_async`).
package typealias RawWorkFunction = @convention(c) (UnsafeMutableRawPointer?) -> Void

/// Who queued work (a plugin), named once: its owner name and, once its first work has run, its index
/// in the owner table of the one center it is used with. [thread-safe]
///
/// Made once per plugin and passed with each of its calls, so that queuing work hashes no string and
/// allocates nothing: the message carries a reference to it (a retain), and the loop looks the name up
/// only the first time.
package final class WorkOwner: Sendable {
    package let name: String
    /// 0 until the loop first ran this owner's work (the empty owner is never a `WorkOwner`).
    fileprivate let index = Atomic<UInt32>(0)
    /// How many of its work items are queued and have not started (a relaxed count: exact on the loop
    /// thread between loop turns, which is where a reload reads it).
    private let queued = Atomic<Int>(0)

    /// How many of its work items are queued and have not started. [thread-safe]
    package var queuedWork: Int { queued.load(ordering: .relaxed) }
    fileprivate func queuedOne() { queued.wrappingAdd(1, ordering: .relaxed) }
    fileprivate func startedOne() { queued.wrappingSubtract(1, ordering: .relaxed) }

    package init(_ name: String) { self.name = name }
}

extension AppNotificationCenter {
    /// Queues `function(context)` to run on the loop thread, marked in the callback probe as
    /// "posted work" of `owner` (nil: the embedder's own), unless this thread is over the loop queue's
    /// bound. [thread-safe]
    ///
    /// A message of its own (the function, the context and the owner in place): nothing is allocated
    /// per call. It runs on a later loop turn, in this thread's order with its posts; once the center
    /// is gone, work still queued is dropped, never called.
    /// - Returns: false, with nothing queued, when refused by the queue's bound (`MainRunLoop.send`).
    @inline(__always)
    package func enqueueWork(_ function: RawWorkFunction, context: UnsafeMutableRawPointer?, owner: WorkOwner?) -> Bool {
        owner?.queuedOne()
        let sent = loop.send(LoopMessage(target: state.pointee.workTarget!,
                                         word0: UInt64(UInt(bitPattern: unsafeBitCast(function, to: Int.self))),
                                         word1: UInt(bitPattern: context), payload: owner))
        if !sent { owner?.startedOne() }
        return sent
    }

    /// Runs one queued work message. [loop-thread]
    fileprivate func runWork(_ message: borrowing LoopMessage) {
        if state.pointee.gatesForeignInput { return gateWork(message) }
        let function = unsafeBitCast(Int(bitPattern: UInt(truncatingIfNeeded: message.word0)), to: RawWorkFunction.self)
        let context = UnsafeMutableRawPointer(bitPattern: message.word1)
        let owner = startedWork(message.payload.map { unsafeDowncast($0, to: WorkOwner.self) })
        runMarked(state.pointee.workBits, owner: owner) { function(context) }
    }

    /// Counts `work`'s item as started and gives its owner's index in the owner table (0: none),
    /// looked up by name the first time only.
    @inline(__always)
    private func startedWork(_ work: WorkOwner?) -> UInt32 {
        guard let work else { return 0 }
        work.startedOne()
        var owner = work.index.load(ordering: .relaxed)
        if owner == 0 {
            owner = ownerID(work.name)
            work.index.store(owner, ordering: .relaxed)
        }
        return owner
    }

    /// Queued work while a gate holds foreign input: handed to it, run (marked as its owner's) when
    /// it runs. The owner's queued count drops then, not now: a reload still sees it waiting.
    @inline(never)
    private func gateWork(_ message: borrowing LoopMessage) {
        let function = unsafeBitCast(Int(bitPattern: UInt(truncatingIfNeeded: message.word0)), to: RawWorkFunction.self)
        let context = UInt(truncatingIfNeeded: message.word1)
        let work = message.payload.map { unsafeDowncast($0, to: WorkOwner.self) }
        state.pointee.foreignInputGate?(ForeignInput(.work(owner: work?.name ?? "")) { [weak self] in
            guard let self else { return }
            let owner = startedWork(work)
            runMarked(state.pointee.workBits, owner: owner) { function(UnsafeMutableRawPointer(bitPattern: context)) }
        })
    }

    /// Registers the work receiver with the loop (from `init`). [loop-thread]
    func addWorkTarget() {
        let receiver = WorkReceiver()
        state.pointee.workBits = CallbackProbe.bits(.other, subject: probe.labelID("posted work"))
        state.pointee.workTarget = loop.addTarget(receiver)
        receiver.center = Unmanaged.passUnretained(self)
    }
}

/// The center's receiver of queued work (see `CenterReceiver`: removed in the center's deinit, so it
/// never outlives it).
final class WorkReceiver: LoopMessageReceiver {
    var center: Unmanaged<AppNotificationCenter>?

    override func receive(_ message: borrowing LoopMessage) {
        center!._withUnsafeGuaranteedRef { $0.runWork(message) }
    }
}
