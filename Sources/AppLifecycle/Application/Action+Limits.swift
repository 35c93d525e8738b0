/// The dictionaries an action carries, checked against `UserInfoLimits` before anything runs: the
/// same doors as a post, so that nothing an action hands the plugins is deeper or larger than what a
/// plugin may build itself.
extension Action {
    /// The first dictionary of this action over `UserInfoLimits`: what it is, in words (`its options are`),
    /// and the limit. O(1) a dictionary (a list inside an annotation: O(its list items)).
    ///
    /// An activity is measured as the dictionary plugins receive (`UserActivity.dictionary`: its
    /// userInfo one level down), an annotation as the options dictionary it travels in.
    var dictionaryOverLimits: (what: String, excess: UserInfoLimitExceeded)? {
        switch kind {
        case .launch(let options, _, _):
            return options.limitExceeded.map { ("its options are", $0) }
        case .remoteNotification(let payload), .openRemoteNotification(let payload):
            return payload.limitExceeded.map { ("its payload is", $0) }
        case .localNotification(let info, _):
            return info.limitExceeded.map { ("its userInfo is", $0) }
        case .openURL(_, _, let annotation?, _):
            var options = UserInfo()
            options["annotation"] = annotation
            return options.limitExceeded.map { ("its annotation is", $0) }
        case .continueUserActivity(let activity, _, _), .updateUserActivity(let activity, _):
            return activity.dictionary.limitExceeded.map { ("its activity is", $0) }
        default:
            return nil
        }
    }
}

extension Application {
    /// Refuses an action carrying a dictionary over `UserInfoLimits`: `.invalidArgument`, naming the
    /// action, the dictionary and the limit (`action 'launch': its options are 65 levels deep (at most
    /// 64); nothing was done`). Nothing is traced or changed.
    func checkLimits(of action: Action) throws(ApplicationError) {
        guard let (what, excess) = action.dictionaryOverLimits else { return }
        throw ApplicationError(.invalidArgument, "action '\(action.name)': \(what) \(excess); nothing was done",
                               action: action.name, state: state)
    }
}
