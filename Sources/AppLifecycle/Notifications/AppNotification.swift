/// The identity of a notification's sender, for sender-filtered observation.
///
/// An identity only: the center never retains or dereferences it. `none` (0) means "no sender" when
/// posting and "any sender" when observing.
public struct NotificationSender: Hashable, Sendable {
    public let rawValue: UInt

    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// The identity of an object (not retained).
    public init(_ object: AnyObject) { rawValue = UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque()) }
    /// The identity of a C pointer.
    public init(pointer: UnsafeRawPointer) { rawValue = UInt(bitPattern: pointer) }

    public static let none = NotificationSender(rawValue: 0)
}

/// A notification as a Swift observer receives it.
public struct AppNotification: Sendable, CustomStringConvertible {
    public let name: NotificationName
    public let sender: NotificationSender
    /// The userInfo dictionary (empty when the poster gave none).
    public let userInfo: UserInfo

    public init(name: NotificationName, sender: NotificationSender = .none, userInfo: UserInfo = UserInfo()) {
        self.name = name
        self.sender = sender
        self.userInfo = userInfo
    }

    public var description: String {
        userInfo.isEmpty ? name.rawValue : "\(name.rawValue) \(userInfo)"
    }
}

/// What a raw observer receives, by pointer, for the duration of one call. Built once per post, not
/// once per observer.
///
/// Its layout is plain C's: five fields in this order with natural alignment (32 bytes on 64-bit
/// Linux), so that an embedder can declare the same struct in C and have raw observers called
/// directly, without a trampoline. The engine promises the layout; an embedder that relies on it
/// checks it (the C layer does, field by field, when it starts).
@frozen
package struct NotificationRecord {
    package var structSize: UInt32
    package var nameID: UInt32
    /// The canonical name, NUL-terminated, static storage.
    package var name: UnsafePointer<CChar>
    /// The sender's identity, or nil; never dereferenced.
    package var sender: UnsafeRawPointer?
    /// The userInfo as the embedder's bridge made it (`AppNotificationCenter.rawUserInfoBridge`), or nil.
    package var userInfo: UnsafeRawPointer?

    @inline(__always)
    init(name id: UInt32, cName: UnsafePointer<CChar>, sender: UInt, userInfo: UnsafeRawPointer? = nil) {
        structSize = UInt32(MemoryLayout<NotificationRecord>.size)
        nameID = id
        name = cName
        self.sender = UnsafeRawPointer(bitPattern: sender)
        self.userInfo = userInfo
    }
}

/// A raw observer: a C function taking the record and the context it was registered with.
package typealias RawObserverFunction = @convention(c) (UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Void

/// A handle to one observation, returned by `observe`; pass it to `removeObserver`.
public struct ObserverToken: Hashable, Sendable {
    /// Name id in the high 32 bits, a serial in the low 32 bits; never 0.
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    var nameID: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 32) }
}
