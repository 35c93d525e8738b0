/// A check of `validate`, in report order: the sequences' checks come between `init` and `budgets`.
enum ValidationCheck: Hashable, Sendable {
    case load, initialise
    /// The delegate methods it implements can all be called (`PluginNeed.warnings`: state
    /// preservation's two gates together).
    case delegates
    /// One sequence (`ValidationSequence.id`): the plugin survived it (no signal, no exit, no
    /// watchdog kill) and the sequence could run to its end.
    case sequence(String)
    case budgets, completions, hostAPI, output, unload

    /// The stable id (the report's first column, the JSON's `id`).
    var id: String {
        switch self {
        case .load: "load"
        case .initialise: "init"
        case .delegates: "delegates"
        case .sequence(let name): "sequence:\(name)"
        case .budgets: "budgets"
        case .completions: "completions"
        case .hostAPI: "host-api"
        case .output: "output"
        case .unload: "unload"
        }
    }

    /// The checks a step process may name in a `finding` record.
    init?(findingID id: String) {
        switch id {
        case "budgets": self = .budgets
        case "completions": self = .completions
        case "host-api": self = .hostAPI
        case "unload": self = .unload
        default: return nil
        }
    }

    /// What passing it means.
    var summary: String {
        switch self {
        case .load:
            "opens as the host opens it: a regular file, not a link, safe permissions, a sound ELF shared object for this machine, "
                + "a valid descriptor (in a process of its own)"
        case .initialise: "init returns LC_OK in time, in a process of its own and in the host's"
        case .delegates: "every delegate method it implements can be called: state preservation's two gates together, as on iOS"
        case .sequence(let name): ValidationSequence.named(name)?.summary ?? name
        case .budgets: "no callback overruns its budget (launch, didEnterBackground, willTerminate, hang)"
        case .completions: "every completion handler is called exactly once and in time; every background task is ended in time"
        case .hostAPI:
            "no host-API call is refused: no post at the nesting limit or past the queue bound, nothing done to another plugin's "
                + "observer, task or timer"
        case .output: "standard output stays readable beside a JSON trace: whole lines, UTF-8, no control characters, none that looks like JSON"
        case .unload: "deinit returns; nothing of the plugin is left registered, and nothing of it runs, after it"
        }
    }
}

/// The outcome of `validate`: each check passed, failed (with its findings) or was skipped (with why).
struct ValidationReport {
    enum Result: String { case pass, fail, skip }

    /// One reason a check failed, with the sequences it happened in (none: not in a sequence).
    struct Finding: Equatable {
        var reason: String
        var sequences: [String]
    }

    struct Check {
        let check: ValidationCheck
        var result: Result
        var findings: [Finding] = []
        /// Why it was skipped.
        var note: String?
        /// How long it took, in seconds (the processes that ran it; nil: it did not run).
        var seconds: Double?
    }

    let path: String
    var plugin: PluginSummary?
    private(set) var checks: [Check] = []
    /// The validator could not start a process it needed (exit status 2).
    var couldNotRun = false

    init(path: String) { self.path = path }

    var passed: Int { checks.filter { $0.result == .pass }.count }
    var failed: Int { checks.filter { $0.result == .fail }.count }
    var skipped: Int { checks.filter { $0.result == .skip }.count }

    /// 0: every check that ran passed; 1: at least one failed; 2: the validator could not run.
    var exitStatus: Int32 { couldNotRun ? 2 : failed > 0 ? 1 : 0 }

    /// Adds `check` (once): passed until a finding fails it.
    mutating func begin(_ check: ValidationCheck) {
        if !checks.contains(where: { $0.check == check }) { checks.append(Check(check: check, result: .pass)) }
    }

    /// Fails `check` for `reason` (in `sequence`, if any). The same reason from several sequences is
    /// one finding naming them all.
    mutating func fail(_ check: ValidationCheck, _ reason: String, in sequence: String? = nil) {
        begin(check)
        let index = checks.firstIndex { $0.check == check }!
        checks[index].result = .fail
        if let existing = checks[index].findings.firstIndex(where: { $0.reason == reason }) {
            if let sequence, !checks[index].findings[existing].sequences.contains(sequence) {
                checks[index].findings[existing].sequences.append(sequence)
            }
        } else {
            checks[index].findings.append(Finding(reason: reason, sequences: sequence.map { [$0] } ?? []))
        }
    }

    /// Adds `seconds` to the time `check` took.
    mutating func time(_ check: ValidationCheck, _ seconds: Double) {
        begin(check)
        let index = checks.firstIndex { $0.check == check }!
        checks[index].seconds = (checks[index].seconds ?? 0) + seconds
    }

    /// The check `check`, if the report has it.
    func entry(_ check: ValidationCheck) -> Check? { checks.first { $0.check == check } }

    /// Keeps only the checks whose id is in `ids` (`--only`).
    mutating func keep(only ids: Set<String>) { checks.removeAll { !ids.contains($0.check.id) } }

    /// Skips `check` for `note` (a check already failed stays failed).
    mutating func skip(_ check: ValidationCheck, _ note: String) {
        begin(check)
        let index = checks.firstIndex { $0.check == check }!
        guard checks[index].result != .fail else { return }
        checks[index].result = .skip
        checks[index].note = note
    }

    /// The checks in report order.
    mutating func sort() {
        func rank(_ check: ValidationCheck) -> Int {
            switch check {
            case .load: 0
            case .initialise: 1
            case .delegates: 2
            case .sequence(let name): 3 + (ValidationSequence.all.firstIndex { $0.id == name } ?? ValidationSequence.all.count)
            case .budgets: 100
            case .completions: 101
            case .hostAPI: 102
            case .output: 103
            case .unload: 104
            }
        }
        checks.sort { rank($0.check) < rank($1.check) }
    }
}

extension ValidationCheck {
    /// The checks every sequence adds to, decided when the last has run.
    static let aggregates: [ValidationCheck] = [.budgets, .completions, .hostAPI, .output, .unload]

    /// Every check id, in report order: what `--only` accepts.
    static var allIDs: [String] {
        ([ValidationCheck.load, .initialise, .delegates] + ValidationSequence.all.map { .sequence($0.id) } + aggregates).map(\.id)
    }
}
