import CLifecycleSystem
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
