extension AppNotificationCenter {
    /// What became of a post by interned id (`post(nameID:sender:userInfo:rawUserInfo:)`).
    package enum PostOutcome: Sendable, Equatable {
        /// Delivered (on the loop thread) or queued (from another).
        case posted
        /// The id is 0 or was never interned: nothing posted.
        case unknownName
        /// From another thread, over the loop queue's bound for that thread (see
        /// `post(_:sender:userInfo:)`): nothing queued.
        case refused
        /// On the loop thread, refused at the nesting limit (`maximumNesting`): nothing delivered.
        case nestingLimit
        /// The userInfo is over `UserInfoLimits` (`userInfo.limitExceeded` says which and by how much):
        /// nothing posted. No payload: an outcome stays one byte, returned in a register on the posting
        /// path that every post takes.
        case overLimit
    }
}
