import AppLifecycle

/// What is wrong with one scenario line (without the FILE:LINE prefix).
package struct ScenarioError: Error, Sendable, CustomStringConvertible {
    package let message: String
    package var description: String { message }

    package init(message: String) { self.message = message }
}

/// One parsed line of a scenario file, with where it came from.
package struct ScenarioLine: Sendable {
    package let file: String
    package let line: Int
    package let text: String
    package let command: HostCommand
    /// The line's comment (after an unquoted `#` that starts a word), trimmed; nil without one. The
    /// demo prints it before the line's events.
    package var comment: String? = nil
    /// `FILE:LINE`, the prefix of every error about this line.
    package var location: String { "\(file):\(line)" }
}

/// Parses scenario lines: one action a line, `#` starts a comment.
///
/// Grammar (also typed at the interactive prompt and sent over the control socket):
/// `launch [background] [KEY=VALUE...]`, `home`, `foreground`, `interrupt`, `dismiss`, `accept`,
/// `lock`, `unlock`, `memory-warning [normal|warning|critical]`, `time-change`, `low-power on|off`,
/// `thermal nominal|fair|serious|critical`,
/// `open-url URL [source=APP] [KEY=VALUE...]`, `fetch`, `url-session ID`, `remote-notification [KEY=VALUE...]`,
/// `open-notification [KEY=VALUE...]`, `local-notification [open] [KEY=VALUE...]`,
/// `remote-registration token=HEX | error=MESSAGE`,
/// `post NAME [KEY=VALUE...]`, `wait DURATION`, `expect-state STATE`, `terminate`, `purge`; scenes:
/// `scene connect ID [background]`, `scene activate|deactivate|background|foreground|disconnect|discard ID`,
/// `expect-scene ID STATE`, `launch scene=ID`, `open-url URL scene=ID`; Handoff:
/// `continue-activity TYPE [scene=ID] [title=TEXT] [error=MESSAGE] [KEY=VALUE...]`,
/// `update-activity TYPE [scene=ID] [title=TEXT] [KEY=VALUE...]`; plugins: `reload ID [PATH] [--force]`.
/// VALUEs are typed: `true`/`false` → bool, `12` → integer, `1.5` → double, anything else (or
/// anything in double quotes) → string. DURATIONs: `250ms`, `2s`, `1.5s`, `100us`, `1m`, at most
/// `Seconds.maximum` (9223372036 s).
package enum ScenarioParser {
    /// The largest scenario file read, in bytes (16 MiB): checked before it is read.
    package static let maxFileBytes = 16 << 20

    package static let commands = [
        "launch", "home", "foreground", "interrupt", "dismiss", "accept", "lock", "unlock", "memory-warning",
        "time-change", "low-power", "thermal", "open-url", "fetch", "url-session", "remote-notification", "open-notification", "local-notification", "remote-registration", "post", "wait", "expect-state", "terminate", "purge",
        "scene", "expect-scene", "continue-activity", "update-activity", "reload",
    ]

    /// The verbs of `scene VERB ID`.
    package static let sceneVerbs = ["connect", "activate", "deactivate", "background", "foreground", "disconnect", "discard", "close"]

    /// One line each, as `help` prints them.
    package static let help = """
        launch [background] [KEY=VALUE...]   launch (into the background), with launch options
        home                                 Home button: willResignActive, didEnterBackground
        foreground                           return to the app
        interrupt | dismiss | accept         an alert interruption begins / is dismissed / is taken
        lock | unlock                        the Sleep/Wake button, unlocking
        memory-warning [normal|warning|critical]
        time-change                          a significant time change
        low-power on|off                     Low Power Mode turns on / off (powerStateDidChange)
        thermal nominal|fair|serious|critical   the thermal state changes (thermalStateDidChange)
        open-url URL [source=APP]            open a URL (launches the app if needed)
        fetch                                a background fetch
        url-session ID                       the transfers of background URL session ID finished (wakes the app)
        remote-notification [KEY=VALUE...]   a push notification with its payload
        open-notification [KEY=VALUE...]     the user opens the app from a push notification's alert
        local-notification [open] [KEY=VALUE...]   a local notification fires (open: the user opens the app from it)
        remote-registration token=HEX | error=MESSAGE   the answer to the app's remote-notification registration
        post NAME [KEY=VALUE...]             post a notification (standard, UIKit alias, or dotted custom name)
        wait DURATION                        let time pass (250ms, 2s)
        expect-state STATE                   check the state (not-running, inactive, active, background, suspended)
        terminate | purge                    the system terminates / purges the app
        scene connect ID [background]        a new scene, user-requested (foreground) or system-requested (background)
        scene activate|deactivate ID         a foreground scene becomes active / inactive
        scene background|foreground ID       a scene leaves / returns to the foreground
        scene disconnect|discard ID          the system disconnects a scene / the user closes it (session discarded)
        scene close ID                       the user swipes a foreground scene away in the app switcher
        expect-scene ID STATE                check a scene's state (unattached, foreground-inactive, foreground-active, background, suspended)
        continue-activity TYPE [scene=ID] [title=T] [error=MESSAGE] [KEY=VALUE...]   Handoff (launches or resumes the app)
        update-activity TYPE [scene=ID] [title=T] [KEY=VALUE...]                     the current activity was updated
        launch … scene=ID, open-url … scene=ID                                      target one scene (--scenes)
        reload ID [PATH] [--force]           replace plugin ID with a new build of its file (or of PATH), keeping its state
        """

    /// `help` without the lines of `verbs` (a line's first word is its verb): the prompt and `send`
    /// refuse `wait`, so their help does not list it.
    package static func help(omitting verbs: Set<String>) -> String {
        help.split(separator: "\n").filter { !verbs.contains(String($0.drop { $0 == " " }.prefix { $0 != " " })) }.joined(separator: "\n")
    }

    /// Parses a whole file's text; the first bad line throws with `FILE:LINE: message`.
    ///
    /// Lines end with LF or CR LF (a file saved on Windows): the CR is not part of the line. (Split on
    /// bytes: in a Swift `String` CR LF is one `Character`, so splitting on the character "\n" would
    /// find no line break at all in a CR LF file.) A UTF-8 byte order mark (EF BB BF, as some Windows
    /// editors write) at the very start of the text is skipped; anywhere else it is text like any other.
    package static func parse(text: String, file: String) throws(ScenarioFileError) -> [ScenarioLine] {
        var lines: [ScenarioLine] = []
        let bytes = text.utf8.starts(with: byteOrderMark) ? text.utf8.dropFirst(byteOrderMark.count) : text.utf8[...]
        for (index, raw) in bytes.split(separator: 10, omittingEmptySubsequences: false).enumerated() {
            let text = String(decoding: raw.last == 13 ? raw.dropLast() : raw, as: UTF8.self)
            do {
                var comment: String?
                if let command = try parse(words: tokenize(text, comment: &comment)) {
                    lines.append(ScenarioLine(file: file, line: index + 1, text: text, command: command, comment: comment))
                }
            } catch {
                throw ScenarioFileError(location: "\(file):\(index + 1)", message: error.message)
            }
        }
        return lines
    }

    /// The UTF-8 byte order mark (U+FEFF).
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// Parses one line; nil for a blank or comment line.
    package static func parse(line: String) throws(ScenarioError) -> HostCommand? {
        try parse(words: tokenize(line))
    }

    /// `parse(line:)` of a line already split into words.
    static func parse(words: [String]) throws(ScenarioError) -> HostCommand? {
        guard let verb = words.first else { return nil }
        let args = Array(words.dropFirst())
        func noArguments() throws(ScenarioError) {
            if !args.isEmpty { throw ScenarioError(message: "'\(verb)' takes no arguments") }
        }
        switch verb {
        case "launch":
            var rest = args[...]
            let background = rest.first == "background"
            if background { rest = rest.dropFirst() }
            var options = try keyValues(Array(rest), verb)
            let scene = try take("scene", from: &options, verb)
            if let scene { return .action(.launch(options: options, inBackground: background, scene: scene)) }
            return .action(.launch(options: options, inBackground: background))
        case "home": try noArguments(); return .action(.home)
        case "foreground": try noArguments(); return .action(.foreground)
        case "interrupt": try noArguments(); return .action(.beginInterruption)
        case "dismiss": try noArguments(); return .action(.dismissInterruption)
        case "accept": try noArguments(); return .action(.acceptInterruption)
        case "lock": try noArguments(); return .action(.lock)
        case "unlock": try noArguments(); return .action(.unlock)
        case "time-change": try noArguments(); return .action(.significantTimeChange)
        case "low-power":
            guard args.count == 1, args[0] == "on" || args[0] == "off" else {
                throw ScenarioError(message: "'low-power' needs on or off")
            }
            return .action(.powerState(lowPower: args[0] == "on"))
        case "thermal":
            guard args.count == 1, let state = ThermalState(name: args[0]) else {
                throw ScenarioError(message: "'thermal' needs one of nominal, fair, serious, critical")
            }
            return .action(.thermalState(state))
        case "fetch": try noArguments(); return .action(.backgroundFetch)
        case "url-session":
            guard args.count == 1 else { throw ScenarioError(message: "'url-session' needs one session identifier, e.g. url-session com.example.downloads") }
            return .action(.urlSessionEvents(args[0]))
        case "terminate": try noArguments(); return .action(.terminate)
        case "purge": try noArguments(); return .action(.purge)
        case "memory-warning":
            guard args.count <= 1 else { throw ScenarioError(message: "'memory-warning' takes at most one level") }
            guard let level = args.isEmpty ? .warning : MemoryWarningLevel(rawValue: args[0]) else {
                throw ScenarioError(message: "unknown memory-warning level '\(args[0])'\(didYouMean(args[0], among: MemoryWarningLevel.allCases.map(\.rawValue))) (normal, warning or critical)")
            }
            return .action(.memoryWarning(level))
        case "open-url":
            guard let url = args.first else { throw ScenarioError(message: "'open-url' needs a URL") }
            var annotation = try keyValues(Array(args.dropFirst()), verb)
            let source = annotation["source"]?.stringValue
            annotation["source"] = nil
            let scene = try take("scene", from: &annotation, verb)
            let given: UserInfoValue? = annotation.isEmpty ? nil : .dict(annotation)
            if let scene { return .action(.openURL(url, sourceApplication: source, annotation: given, scene: scene)) }
            return .action(.openURL(url, sourceApplication: source, annotation: given))
        case "scene":
            guard let sceneVerb = args.first else {
                throw ScenarioError(message: "'scene' needs a verb and a scene id: scene \(sceneVerbs.joined(separator: "|")) ID")
            }
            guard sceneVerbs.contains(sceneVerb) else {
                throw ScenarioError(message: "unknown scene verb '\(sceneVerb)'\(didYouMean(sceneVerb, among: sceneVerbs)) (\(sceneVerbs.joined(separator: ", ")))")
            }
            guard args.count >= 2 else { throw ScenarioError(message: "'scene \(sceneVerb)' needs a scene id") }
            let id = args[1]
            let extra = Array(args.dropFirst(2))
            if sceneVerb == "connect", extra == ["background"] { return .action(.connectScene(id, inBackground: true)) }
            guard extra.isEmpty else {
                throw ScenarioError(message: sceneVerb == "connect" ? "'scene connect' takes a scene id and optionally 'background'"
                                                                    : "'scene \(sceneVerb)' takes one scene id")
            }
            switch sceneVerb {
            case "connect": return .action(.connectScene(id))
            case "activate": return .action(.activateScene(id))
            case "deactivate": return .action(.deactivateScene(id))
            case "background": return .action(.moveSceneToBackground(id))
            case "foreground": return .action(.bringSceneToForeground(id))
            case "disconnect": return .action(.disconnectScene(id))
            case "close": return .action(.closeScene(id))
            default: return .action(.discardSceneSession(id))
            }
        case "expect-scene":
            guard args.count == 2 else { throw ScenarioError(message: "'expect-scene' needs a scene id and a state") }
            guard let state = SceneState(name: args[1]) else {
                let states = SceneState.allCases.map(\.rawValue)
                throw ScenarioError(message: "unknown scene state '\(args[1])'\(didYouMean(args[1], among: states)) (\(states.joined(separator: ", ")))")
            }
            return .expectScene(args[0], state)
        case "continue-activity", "update-activity":
            guard let type = args.first else { throw ScenarioError(message: "'\(verb)' needs an activity type, e.g. com.example.editing") }
            guard !type.contains("=") else { throw ScenarioError(message: "'\(verb)' needs an activity type first, got '\(type)'") }
            var info = try keyValues(Array(args.dropFirst()), verb)
            let scene = try take("scene", from: &info, verb)
            let title = try take("title", from: &info, verb)
            if verb == "update-activity" {
                return .action(.updateUserActivity(UserActivity(activityType: type, title: title, userInfo: info), scene: scene))
            }
            if let error = try take("error", from: &info, verb) {
                return .action(.failToContinueUserActivity(type: type, error: error, scene: scene))
            }
            return .action(.continueUserActivity(UserActivity(activityType: type, title: title, userInfo: info), scene: scene))
        case "remote-notification":
            return .action(.remoteNotification(try keyValues(args, verb)))
        case "open-notification":
            return .action(.openRemoteNotification(try keyValues(args, verb)))
        case "local-notification":
            let opened = args.first == "open"
            return .action(.localNotification(try keyValues(opened ? Array(args.dropFirst()) : args, verb), opened: opened))
        case "remote-registration":
            var info = try keyValues(args, verb)
            let token = try take("token", from: &info, verb)
            let error = try take("error", from: &info, verb)
            guard info.isEmpty, (token == nil) != (error == nil) else {
                throw ScenarioError(message: "'remote-registration' takes token=HEX or error=MESSAGE")
            }
            if let token { return .action(.remoteRegistration(token: token)) }
            return .action(.remoteRegistration(error: error ?? ""))
        case "post":
            guard let name = args.first else { throw ScenarioError(message: "'post' needs a notification name") }
            let notificationName: NotificationName
            do { notificationName = try NotificationName(name) } catch { throw ScenarioError(message: error.message) }
            return .post(notificationName, try keyValues(Array(args.dropFirst()), verb))
        case "reload":
            return try reload(args)
        case "wait":
            guard args.count == 1 else { throw ScenarioError(message: "'wait' needs one duration, e.g. 'wait 500ms'") }
            return .wait(try duration(args[0]))
        case "expect-state":
            guard args.count == 1 else { throw ScenarioError(message: "'expect-state' needs one state") }
            guard let state = ApplicationState(name: args[0]) else {
                let states = ApplicationState.allCases.map(\.rawValue)
                throw ScenarioError(message: "unknown state '\(args[0])'\(didYouMean(args[0], among: states)) (not-running, inactive, active, background or suspended)")
            }
            return .expectState(state)
        default:
            var message = "unknown action '\(verb)'"
            if let close = suggestion(for: verb) { message += " (did you mean '\(close)'?)" }
            throw ScenarioError(message: message + "; 'help' lists the actions")
        }
    }

    /// Splits on white space; double quotes group (with \" and \\ escapes); `#` outside quotes ends the line.
    ///
    /// Reads Unicode scalars, not characters: a quote or a space followed by a combining mark is still
    /// a quote or a space (as a grapheme cluster the pair is one `Character`, which is neither, so a
    /// quoted word starting with a combining mark read back as an unterminated quote; found by the
    /// `scenario` fuzz target, Fuzz/regressions/scenario/quoted-combining-mark).
    package static func tokenize(_ line: String) throws(ScenarioError) -> [String] {
        var comment: String?
        return try tokenize(line, comment: &comment)
    }

    /// `tokenize`, and the comment after the words (trimmed; nil without a `#` or with nothing after it).
    static func tokenize(_ line: String, comment: inout String?) throws(ScenarioError) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        var inWord = false
        var quoted = false
        var escaped = false
        let scalars = line.unicodeScalars
        for index in scalars.indices {
            let scalar = scalars[index]
            if quoted {
                if escaped {
                    current.append(scalar)
                    escaped = false
                } else if scalar == "\\" {
                    escaped = true
                } else if scalar == "\"" {
                    quoted = false
                } else {
                    current.append(scalar)
                }
                continue
            }
            if scalar == "#" && !inWord {
                let rest = String(scalars[scalars.index(after: index)...]).trimmingWhitespace()
                comment = rest.isEmpty ? nil : rest
                break
            }
            if scalar.properties.isWhitespace {
                if inWord { words.append(String(current)) }
                current = String.UnicodeScalarView()
                inWord = false
            } else if scalar == "\"" {
                quoted = true
                inWord = true
            } else {
                current.append(scalar)
                inWord = true
            }
        }
        if quoted { throw ScenarioError(message: "unterminated quoted string") }
        if inWord { words.append(String(current)) }
        return words
    }

    /// A word as `tokenize` reads it back: quoted (with `\"` and `\\` escaped) when it is empty or
    /// holds white space, a quote or a `#`; as it is otherwise. `tokenize` of the quoted words joined
    /// by spaces gives the words again (`lifecycle-host send` builds its request line so).
    package static func quote(_ word: String) -> String {
        let scalars = word.unicodeScalars
        guard scalars.isEmpty || scalars.contains(where: { $0.properties.isWhitespace || $0 == "\"" || $0 == "#" }) else { return word }
        var out = String.UnicodeScalarView()
        out.append("\"")
        for scalar in scalars {
            if scalar == "\"" || scalar == "\\" { out.append("\\") }
            out.append(scalar)
        }
        out.append("\"")
        return String(out)
    }

    /// `KEY=VALUE` words as a typed dictionary.
    package static func keyValues(_ words: [String], _ verb: String) throws(ScenarioError) -> UserInfo {
        var info = UserInfo()
        for word in words {
            guard let equals = word.firstIndex(of: "="), equals != word.startIndex else {
                throw ScenarioError(message: "'\(verb)' expects KEY=VALUE, got '\(word)'")
            }
            let key = String(word[..<equals])
            info[key] = value(String(word[word.index(after: equals)...]))
        }
        return info
    }

    /// Removes `key` from `info` and returns it as a string (any typed value, as written); nil when absent.
    package static func take(_ key: String, from info: inout UserInfo, _ verb: String) throws(ScenarioError) -> String? {
        guard let value = info[key] else { return nil }
        info[key] = nil
        let text = value.stringValue ?? value.description
        if text.isEmpty { throw ScenarioError(message: "'\(verb)': \(key)= needs a value") }
        return text
    }

    package static func value(_ text: String) -> UserInfoValue {
        if text == "true" { return .bool(true) }
        if text == "false" { return .bool(false) }
        if let integer = Int64(text) { return .int(integer) }
        if text.contains("."), let double = Double(text), double.isFinite { return .double(double) }
        return .string(text)
    }

    /// A `wait` duration: checked by `Seconds.parse` (at most `Seconds.maximum`) before it is converted.
    package static func duration(_ text: String) throws(ScenarioError) -> Duration {
        do {
            return try Seconds.parse(text)
        } catch {
            throw ScenarioError(message: "bad duration '\(text)': \(error.message)")
        }
    }

    /// The first of `commands` closest to `verb`, if one is within an edit distance of 3.
    private static func suggestion(for verb: String) -> String? { closestWord(to: verb, among: commands) }
}

/// A scenario file error: `FILE:LINE: message`.
package struct ScenarioFileError: Error, Sendable, CustomStringConvertible {
    package let location: String
    package let message: String
    package var description: String { "\(location): \(message)" }
}
