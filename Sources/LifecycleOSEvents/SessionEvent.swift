/// What the session's bus said (`SessionBusSource`): logind's lock and sleep, UPower's battery, the
/// power-profiles daemon's profile, or a message that was malformed and ignored.
///
/// Every value was decoded from a bus message whose types were checked (`SessionBusSource`); the
/// texts are printable ASCII, at most 63 bytes for a profile and 255 for a detail.
public enum SessionEvent: Hashable, Sendable, CustomStringConvertible {
    /// logind: the session this process is in, followed from now on (its object path, cut to 63
    /// bytes); before it is known, `Lock` and `Unlock` are not heard.
    case sessionFound(String)
    /// logind: the session's `Lock` signal.
    case lock
    /// logind: the session's `Unlock` signal.
    case unlock
    /// logind: the session's `LockedHint` property (read at start, then from `PropertiesChanged`).
    case lockedHint(Bool)
    /// logind: the manager's `PrepareForSleep(true)` (going to sleep) or `(false)` (woken).
    case prepareForSleep(Bool)
    /// UPower: `OnBattery` (read at start, then from `PropertiesChanged`).
    case onBattery(Bool)
    /// The power-profiles daemon: `ActiveProfile` (`power-saver`, `balanced`, `performance`).
    case powerProfile(String)
    /// A message of a watched kind with the wrong types or sizes, ignored: what and why
    /// (`PrepareForSleep from :1.4 on /org/freedesktop/login1 (signature 's'): not one boolean`).
    case malformed(String)

    /// `logind Lock`, `logind PrepareForSleep true`, `upower OnBattery true`,
    /// `power-profiles ActiveProfile power-saver`, `malformed: …`: the origin the host traces.
    public var description: String {
        switch self {
        case .sessionFound: "logind session"
        case .lock: "logind Lock"
        case .unlock: "logind Unlock"
        case .lockedHint(let locked): "logind LockedHint \(locked)"
        case .prepareForSleep(let sleeping): "logind PrepareForSleep \(sleeping)"
        case .onBattery(let on): "upower OnBattery \(on)"
        case .powerProfile(let profile): "power-profiles ActiveProfile \(profile)"
        case .malformed(let why): "malformed bus message: \(why)"
        }
    }
}
