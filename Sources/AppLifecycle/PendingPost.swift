/// A notification posted from a thread other than the loop's, waiting in the loop's queue.
///
/// Plain data: posting without a userInfo allocates nothing beyond the queue slot.
package struct PendingPost: Sendable {
    package var name: NotificationName
    /// The sender's identity (0: none).
    package var sender: UInt
    package var userInfo: UserInfo?

    package init(name: NotificationName, sender: UInt, userInfo: UserInfo?) {
        self.name = name
        self.sender = sender
        self.userInfo = userInfo
    }
}
