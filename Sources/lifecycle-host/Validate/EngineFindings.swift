import AppLifecycle

/// The `budgets` and `completions` checks, in the step process: the engine's typed events that mean
/// the plugin broke a rule, as findings. Read from the payloads, never from the trace's words; the
/// words made here leave out measured times, so that the same fault reads the same in every run.
enum EngineFindings {
    /// The finding a trace event is, if any: a completion handler called again; an overrun (traced
    /// under the `report` policy; under `terminate` it comes through `overrun(_:)` instead).
    static func finding(_ event: TraceEvent) -> (check: ValidationCheck, text: String)? {
        finding(event.payload)
    }

    private static func finding(_ payload: TraceEvent.Payload) -> (check: ValidationCheck, text: String)? {
        switch payload {
        case .completionCalledAgain(let method, _, let result):
            let result = method.completionCarriesResult ? " (\(result))" : ""
            return (.completions, "the completion handler of \(method.selector) was called again\(result); the second call is ignored")
        case .watchdogOverrun(let report):
            return overrun(report)
        case .inScene(_, let inner):
            return finding(inner)
        default:
            return nil
        }
    }

    /// A budget overrun: a completion handler not called or a background task not ended in time
    /// (`completions`), or a callback that ran too long (`budgets`).
    static func overrun(_ report: WatchdogReport) -> (check: ValidationCheck, text: String) {
        let budget = formatSeconds(report.budget)
        switch report.subject {
        case .completionHandler(let method):
            return (.completions, "the completion handler of \(method.selector) was not called within the \(budget) \(report.budgetName) budget")
        case .backgroundTask(let id, let name):
            return (.completions, "background task #\(id)\(name.isEmpty ? "" : " \(name)") was still open when the \(budget) background time ran out")
        case .hang, .callback, .termination:
            return (.budgets, "\(report.event) overran the \(budget) \(report.budgetName) budget")
        }
    }

    /// The callback a trace event starts (what a crash right after it interrupted), if any.
    static func callback(_ event: TraceEvent) -> String? {
        callback(event.payload)
    }

    private static func callback(_ payload: TraceEvent.Payload) -> String? {
        switch payload {
        case .delegateCalled(let method, _): return method.selector
        case .notificationDelivered(let name, _, _): return name.rawValue
        case .backgroundTask(let id, .expiring, _, _): return "the expiration handler of background task #\(id)"
        case .inScene(_, let inner): return callback(inner)
        default: return nil
        }
    }
}
