import CLifecycleSystem

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

/// What a raw observer receives, by pointer, for the duration of one call: the C ABI's
/// `lc_notification_t`, so that C observers are called directly, without a trampoline.
///
/// Built once per post, not once per observer. `user_info` points at a `UserInfoBox` or is nil.
package typealias NotificationRecord = lc_notification_t

extension lc_notification_t {
    /// The record as an `AppNotification` (copies the userInfo reference).
    package var notification: AppNotification {
        AppNotification(name: NotificationName(id: name_id),
                        sender: NotificationSender(rawValue: UInt(bitPattern: sender)),
                        userInfo: user_info.map { UserInfoBox.from($0).value } ?? UserInfo())
    }
}

/// A raw observer: the C ABI's `lc_observer_fn`.
package typealias RawObserverFunction = @convention(c) (UnsafePointer<lc_notification_t>?, UnsafeMutableRawPointer?) -> Void

/// A handle to one observation, returned by `observe`; pass it to `removeObserver`.
public struct ObserverToken: Hashable, Sendable {
    /// Name id in the high 32 bits, a serial in the low 32 bits; never 0.
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    var nameID: UInt32 { UInt32(truncatingIfNeeded: rawValue >> 32) }
}
