import AppLifecycle
import CLifecycleSystem
import LifecycleC

// An isolated plugin's delegate, as the engine sees it: a `DelegateHandlers` table whose handlers send
// frames — without waiting for void methods, waiting (within the call's deadline) for the answer of
// the others. Row by row of the C layer's one table, by the row's shape.

extension IsolatedPlugin {
    /// The handlers of the application delegate rows the plugin's process reported.
    func makeHandlers(_ rows: FFIDelegates.Rows) -> DelegateHandlers {
        var h = DelegateHandlers()
        for row in FFIDelegates.functions.indices where rows.contains(row) {
            switch FFIDelegates.functions[row].shape {
            case .notify(let set):
                set(&h) { [unowned self] _ in send(row, DelegateArguments()) }
            case .askWithDict(let set):
                set(&h) { [unowned self] _, options in ask(row, DelegateArguments(dict: options)).answer }
            case .receiveDict(let set):
                set(&h) { [unowned self] _, info in send(row, DelegateArguments(dict: info)) }
            case .openURL:
                h.openURL = { [unowned self] _, url, source, annotation in
                    ask(row, DelegateArguments(text: url, secondText: source, annotation: annotation.map { ["value": $0] })).answer
                }
            case .openURLWithOptions:
                h.openURLWithOptions = { [unowned self] _, url, options in ask(row, DelegateArguments(dict: options, text: url)).answer }
            case .fetch:
                h.performFetch = { [unowned self] _, handler in send(row, DelegateArguments(key: keep(handler))) }
            case .remoteNotificationWithCompletion:
                h.didReceiveRemoteNotificationWithCompletion = { [unowned self] _, payload, handler in
                    send(row, DelegateArguments(dict: payload, key: keep(handler)))
                }
            case .urlSessionEvents:
                h.handleEventsForBackgroundURLSession = { [unowned self] _, identifier, handler in
                    send(row, DelegateArguments(text: identifier, key: keep(handler.request)))
                }
            case .askArchive(let set, let writable):
                set(&h) { [unowned self] _, archive in
                    let reply = ask(row, DelegateArguments(dict: archive.values))
                    if writable { take(reply, into: archive) }
                    return reply.answer
                }
            case .archive(let set, let writable):
                set(&h) { [unowned self] _, archive in
                    guard writable else { return send(row, DelegateArguments(dict: archive.values)) }
                    take(ask(row, DelegateArguments(dict: archive.values)), into: archive)
                }
            case .askWithString(let set):
                set(&h) { [unowned self] _, text in ask(row, DelegateArguments(text: text)).answer }
            case .receiveString(let set):
                set(&h) { [unowned self] _, text in send(row, DelegateArguments(text: text)) }
            case .askActivity(let set):
                set(&h) { [unowned self] _, activity in ask(row, DelegateArguments(dict: activity.dictionary)).answer }
            case .receiveActivity(let set):
                set(&h) { [unowned self] _, activity in send(row, DelegateArguments(dict: activity.dictionary)) }
            case .failActivity:
                h.didFailToContinueUserActivity = { [unowned self] _, type, error in
                    send(row, DelegateArguments(text: type, secondText: error))
                }
            case .configuration:
                h.configurationForConnecting = { [unowned self] _, session, options in
                    let reply = ask(row, DelegateArguments(dict: FFIDelegates.connectionDict(options, restored: nil),
                                                           text: session.persistentIdentifier))
                    guard reply.answer else { return .default }  // NULL, or the process failed
                    guard case .string(let name)? = reply.archive?["name"] else {
                        // The call is finished (answered): named here, not found among the frames in flight.
                        let method = FFIDelegates.functions[row].method.selector
                        fail(.protocolViolation("the answer to \(method) names no configuration"), during: method)
                        return .default
                    }
                    return SceneConfiguration(name: name)
                }
            case .discardSessions:
                h.didDiscardSceneSessions = { [unowned self] _, sessions in
                    var dict = UserInfo()
                    for session in sessions { dict[session.persistentIdentifier] = .string(session.configurationName ?? "") }
                    send(row, DelegateArguments(dict: dict))
                }
            default:
                continue
            }
        }
        return h
    }

    /// A call that needs no answer: sent with the notifications, not waited for.
    func send(_ row: Int, _ arguments: DelegateArguments) {
        sendEvent(.delegate, .delegate(row)) { out in
            out.u8(UInt8(row))
            arguments.write(to: &out)
        }
    }

    /// A call whose answer the engine needs: sent at once, then waited for until its deadline (its own,
    /// whatever the process's progress page says). A plugin that failed meanwhile (or fails now)
    /// answers what an unimplemented method answers.
    ///
    /// `failure` is set when the call did not complete (`.pluginFailed`: the process failed, with the
    /// report; `.notDelivered`: it was not running, or the frame could not be sent), or when the plugin
    /// answered that a write into a writable archive was refused (`.writeRefused`).
    func ask(_ row: Int, _ arguments: DelegateArguments) -> (answer: Bool, archive: UserInfo?, failure: EncodingFailure?) {
        var fallback: (answer: Bool, archive: UserInfo?, failure: EncodingFailure?) {
            (IsolatedCalls.defaultAnswer(row), nil, failure.map { .pluginFailed($0) } ?? .notDelivered)
        }
        guard status == .running else { return fallback }
        let call = nextCall
        nextCall += 1
        waitingCall = call
        callAnswer = nil
        defer { waitingCall = 0 }
        let sent = sendFrame(.delegate, word: call, .delegate(row), flush: true) { out in
            out.u8(UInt8(row))
            arguments.write(to: &out)
        }
        guard wait(for: sent, until: { callAnswer != nil }), let answer = callAnswer else { return fallback }
        // The runner answers at the end of the call's callback, having run every frame before it in
        // order: all are finished, so the sync at the action's end has nothing to wait for (one round
        // trip an action instead of two) unless more was sent since.
        if let sent { events.finish(through: sent.number, at: lcs_monotonic_ns()) }
        return answer
    }

    /// What a writable archive's call answered, into `archive`: the values the plugin left, or the
    /// encoding's failure (the call did not complete, a write was refused, or no values came back), so
    /// that the engine keeps the previous archive.
    private func take(_ reply: (answer: Bool, archive: UserInfo?, failure: EncodingFailure?), into archive: StateArchive) {
        if let failure = reply.failure { return archive.fail(failure) }
        guard let values = reply.archive else { return archive.fail(.notDelivered) }
        archive.values = values
    }
}
