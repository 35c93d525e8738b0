/// A Handoff activity (`NSUserActivity`): what a user was doing, to be continued by the application
/// or one of its scenes (Apple's "Managing your app's life cycle", Handoff).
///
/// A value: the engine copies it into launch options, connection options, trace details and
/// per-scene restoration archives.
public struct UserActivity: Sendable, Hashable, CustomStringConvertible {
    /// The activity type, reverse-DNS by convention (`com.example.editing`). Never empty.
    public var activityType: String
    /// A user-visible title, or nil.
    public var title: String?
    /// The activity's state, as a typed dictionary.
    public var userInfo: UserInfo

    public init(activityType: String, title: String? = nil, userInfo: UserInfo = UserInfo()) {
        self.activityType = activityType
        self.title = title
        self.userInfo = userInfo
    }

    /// `type` then the title and userInfo when present: `com.example.edit "Draft" {"doc":7}`.
    public var description: String {
        var text = activityType
        if let title { text += " " + jsonQuoted(title) }
        if !userInfo.isEmpty { text += " \(userInfo)" }
        return text
    }

    /// The activity as a dictionary (`activityType`, `title`, `userInfo`): the value of launch option
    /// `userActivityDictionary`, and what a scene's restoration archive holds.
    public var dictionary: UserInfo {
        var dictionary: UserInfo = ["activityType": .string(activityType)]
        if let title { dictionary["title"] = .string(title) }
        dictionary["userInfo"] = .dict(userInfo)
        return dictionary
    }

    /// The activity a dictionary made by `dictionary` describes; nil when `activityType` is missing
    /// or empty, or a field has the wrong type.
    public init?(dictionary: UserInfo) {
        guard let type = dictionary["activityType"]?.stringValue, !type.isEmpty else { return nil }
        var title: String?
        if let value = dictionary["title"] {
            guard let text = value.stringValue else { return nil }
            title = text
        }
        var info = UserInfo()
        if let value = dictionary["userInfo"] {
            guard let dict = value.dictValue else { return nil }
            info = dict
        }
        self.init(activityType: type, title: title, userInfo: info)
    }
}
