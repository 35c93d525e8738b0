// The moments and callbacks of a trace that the timeline and the Chrome export both show: actions,
// plugin failures, and delegate calls with their durations.
import AppLifecycle

extension TimelineAnalysis {
    /// An action performed (`home`, `url-session`, …), with the scene it names, if any.
    struct ActionMark: Equatable {
        var seq: UInt64
        /// The action's name (`Action.name`, as a scenario line spells it).
        var name: String
        var scene: String?
        var time: Double
    }

    /// A plugin that failed, or whose calls the host refused.
    struct FailureMark: Equatable {
        enum Kind: String, Equatable {
            /// An isolated plugin's process failed: a crash, an exit, a kill at a budget's end, a
            /// protocol violation, a start that failed, quotas ignored (`TraceEvent.Payload.pluginFailed`).
            case processFailed = "plugin-failed"
            /// Calls refused at one of the plugin's quotas (`quotaRefused`).
            case quotaRefused = "quota"
            /// A host-API call made with another plugin's handle, refused (`handleRefused`).
            case handleRefused = "handle-refused"
        }

        var seq: UInt64
        var kind: Kind
        /// The plugin that failed or was refused.
        var plugin: String
        /// What happened, short: the cause (`SIGSEGV`, `overran launch budget`, …), `quota timers`,
        /// `handle refused`.
        var cause: String
        /// The event's detail, for display only.
        var detail: String?
        var time: Double
    }

    /// One delegate call: from its `delegate` event to the next event of the trace.
    ///
    /// The engine traces a delegate call as it begins and runs everything on one thread, so the next
    /// event is traced once the call returned — or by something the call itself did (beginning a
    /// background task, posting, failing): then the span ends there, early. A span is never longer
    /// than the call, and the spans of one plugin never overlap.
    struct CallbackSpan: Equatable {
        var seq: UInt64
        /// The selector.
        var method: String
        /// The delegate's id: the plugin.
        var plugin: String
        /// The scene a scene delegate method was called for.
        var scene: String?
        var start: Double
        var end: Double
    }

    /// The actions of `events`, in order, read from their typed payloads.
    static func actions(in events: [TraceEvent]) -> [ActionMark] {
        events.compactMap { event in
            guard case .action(let action) = event.payload else { return nil }
            return ActionMark(seq: event.seq, name: action.name, scene: action.sceneID, time: event.time.secondsDouble)
        }
    }

    /// The plugin failures and refusals of `events`, in order, read from their typed payloads.
    static func failures(in events: [TraceEvent]) -> [FailureMark] {
        events.compactMap { event in
            let time = event.time.secondsDouble
            switch event.payload {
            case .pluginFailed(let failure):
                return FailureMark(seq: event.seq, kind: .processFailed, plugin: failure.plugin, cause: failure.causeName,
                                   detail: failure.description, time: time)
            case .quotaRefused(let refusal):
                return FailureMark(seq: event.seq, kind: .quotaRefused, plugin: refusal.plugin, cause: "quota \(refusal.kind.rawValue)",
                                   detail: event.detail, time: time)
            case .handleRefused(let function, _, let caller):
                return FailureMark(seq: event.seq, kind: .handleRefused, plugin: caller, cause: "handle refused (\(function))",
                                   detail: event.detail, time: time)
            default:
                return nil
            }
        }
    }

    /// The delegate calls of `events` (application and scene delegates), in order.
    static func callbacks(in events: [TraceEvent]) -> [CallbackSpan] {
        var spans: [CallbackSpan] = []
        for (index, event) in events.enumerated() {
            let call: (method: DelegateMethod, delegate: String, scene: String?)
            switch event.payload {
            case .delegateCalled(let method, let delegate): call = (method, delegate, nil)
            case .inScene(let scene, .delegateCalled(let method, let delegate)): call = (method, delegate, scene)
            default: continue
            }
            let start = event.time.secondsDouble
            let end = index + 1 < events.count ? max(events[index + 1].time.secondsDouble, start) : start
            spans.append(CallbackSpan(seq: event.seq, method: call.method.selector, plugin: call.delegate, scene: call.scene,
                                      start: start, end: end))
        }
        return spans
    }
}
