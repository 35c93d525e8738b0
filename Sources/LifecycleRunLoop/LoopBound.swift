import CLifecycleSystem
import Synchronization
import Glibc

// Loop-bound state, checked: a member that only the loop's thread may use compares the calling thread
// with the loop's on every use (one read of the thread pointer and one compare), as SwiftNIO's `NIOLoopBound`
// and `EventLoop.preconditionInEventLoop` do. A use from another thread would be a data race — memory
// corrupted later, somewhere else; the check turns it into a crash at the call, naming the member.

extension MainRunLoop {
    /// Traps unless the calling thread is the loop's, naming `member`: the check a loop-bound public
    /// member makes on entry. [thread-safe]
    @inlinable @inline(__always)
    package func preconditionOnLoopThread(_ member: StaticString, file: StaticString = #fileID, line: UInt = #line) {
        if _slowPath(UInt(lcs_thread_id()) != ownerID) { Self.loopThreadViolation(member, file: file, line: line) }
    }

    /// The crash of a loop-bound member used from another thread (its words printed in every build).
    @usableFromInline
    package static func loopThreadViolation(_ member: StaticString, file: StaticString, line: UInt) -> Never {
        fatalError("\(member) must be used on the thread that runs its main run loop; it was used from another thread", file: file, line: line)
    }
}

/// A value that only `loop`'s thread may touch, checked: every read and write (and `init`) compares the
/// calling thread with the loop's and traps on any other, naming the value. [loop-thread: checked]
///
/// Sendable because nothing but the loop's thread can reach the value: a copy handed to another
/// thread traps there at its first use instead of racing.
public struct LoopBound<Value>: @unchecked Sendable {
    // @unchecked: every access to `storage` goes through `value`, which checks the thread.
    public let loop: MainRunLoop
    @usableFromInline let name: StaticString
    @usableFromInline var storage: Value

    /// `value`, bound to `loop`; `name` is what a wrong-thread use is reported as (`"Application.state"`).
    @inlinable
    public init(_ value: Value, loop: MainRunLoop, name: StaticString) {
        loop.preconditionOnLoopThread(name)
        self.loop = loop
        self.name = name
        storage = value
    }

    /// The value; traps on any thread but the loop's. Changed in place (no copy of the value).
    @inlinable
    public var value: Value {
        @inline(__always)
        get {
            loop.preconditionOnLoopThread(name)
            return storage
        }
        @inline(__always)
        _modify {
            loop.preconditionOnLoopThread(name)
            yield &storage
        }
    }
}

/// Up to eight loop-bound bytes ("lanes") in one word, checked as `LoopBound` is (every read and write
/// compares the calling thread with the loop's and traps on any other, naming the member the caller
/// gives), stored in an `Atomic<UInt64>` held by a `let`. [loop-thread: checked]
///
/// Why: a `LoopBound` is a `var` of its class, so every use from outside the class is a dynamic
/// exclusivity check (`swift_beginAccess`, its thread-local access set, `swift_endAccess`: ~115
/// instructions a read, measured). An `Atomic` in a `let` has no such check, and its relaxed loads and
/// stores are plain moves on x86-64 and arm64, so a read costs the thread check and a load. One word
/// for all the lanes: a reader that needs several (every frame sent to an isolated plugin reads the
/// application's state, protected-data flag and budgeted phase) pays one check and one load for all of
/// them (`word(_:)`). Only the loop's thread ever touches it, so relaxed ordering is all it needs, and a
/// write is a load and a store (no compare-and-swap). No `_modify`: read, then write.
public struct LoopBoundBytes: ~Copyable, Sendable {
    public let loop: MainRunLoop
    @usableFromInline let storage: Atomic<UInt64>

    /// The lanes `lanes` (lane 0 first; the missing ones are 0), bound to `loop`; `name` is what a
    /// wrong-thread use of `init` is reported as.
    @inlinable
    public init(_ lanes: [UInt8], loop: MainRunLoop, name: StaticString) {
        loop.preconditionOnLoopThread(name)
        precondition(lanes.count <= 8, "LoopBoundBytes holds at most 8 lanes")
        self.loop = loop
        var word: UInt64 = 0
        for (index, lane) in lanes.enumerated() { word |= UInt64(lane) << (8 * UInt64(index)) }
        storage = Atomic(word)
    }

    /// Every lane at once (lane `i` in bits `8i..<8i+8`); traps on any thread but the loop's, naming
    /// `member`.
    @inlinable @inline(__always)
    public func word(_ member: StaticString) -> UInt64 {
        loop.preconditionOnLoopThread(member)
        return storage.load(ordering: .relaxed)
    }

    /// Lane `lane` (0..<8); traps on any thread but the loop's, naming `member`.
    @inlinable @inline(__always)
    public func lane(_ lane: Int, _ member: StaticString) -> UInt8 {
        UInt8(truncatingIfNeeded: word(member) >> (8 * UInt64(lane & 7)))
    }

    /// Replaces lane `lane` (0..<8), leaving the others; traps on any thread but the loop's, naming
    /// `member`.
    @inlinable @inline(__always)
    public func set(_ lane: Int, _ value: UInt8, _ member: StaticString) {
        let shift = 8 * UInt64(lane & 7)
        let old = word(member)
        storage.store(old & ~(0xFF << shift) | UInt64(value) << shift, ordering: .relaxed)
    }
}
