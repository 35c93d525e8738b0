// The words and status of a post whose userInfo is over the dictionary limits (`UserInfoLimits`), the
// same for every door of the C ABI: `lc_app_post`, `lc_app_post_name`, `host->post`, `host->post_name`,
// in the host's process and in an isolated plugin's.
import AppLifecycle
import CLifecycleABI

/// Records "`function`: the userInfo is 67 levels deep (at most 64); nothing was posted" and returns
/// `LC_ERR_INVALID_ARGUMENT`. [thread-safe]
@inline(never)
package func lcUserInfoOverLimit(_ excess: UserInfoLimitExceeded, _ function: String) -> lc_status {
    lcFail(LC_ERR_INVALID_ARGUMENT, "\(function): the userInfo is \(excess); nothing was posted")
}

/// The refusal of a post with the dictionary `userInfo` (NULL: none) when it is over `UserInfoLimits`,
/// else nil. O(1). [thread-safe, one thread per dictionary]
package func lcPostLimitRefusal(_ userInfo: OpaquePointer?, _ function: String) -> lc_status? {
    guard let userInfo, let excess = UserInfoBox.from(userInfo).current.limitExceeded else { return nil }
    return lcUserInfoOverLimit(excess, function)
}
