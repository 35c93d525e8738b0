import AppLifecycle

/// What `validate` runs and for how long (`--only`, `--fail-fast`, `--check-timeout`).
struct ValidationSelection {
    /// `--only CHECK` (repeatable): the checks reported; nil: all. `load` and `init` always run (nothing
    /// runs without them); a sequence runs when its check is selected, or when a check every
    /// sequence adds to (`budgets`, `completions`, `host-api`, `output`, `unload`) is.
    var only: Set<String>?
    /// `--fail-fast`: after the first check that fails, the sequences not begun are not run.
    var failFast = false
    /// `--check-timeout DURATION`: the most one check's process may take (a hanging plugin's check
    /// fails at it); nil: the budgets' sum and 10 s (`Validator.stepDeadline`).
    var checkTimeout: Duration?

    /// Whether `sequence` runs.
    func runs(_ sequence: ValidationSequence) -> Bool {
        guard let only else { return true }
        return only.contains(ValidationCheck.sequence(sequence.id).id) || ValidationCheck.aggregates.contains { only.contains($0.id) }
    }

    /// `--only` values checked: each a check id (the error names the closest one).
    static func parse(only values: [String]) throws(HostFailure) -> Set<String>? {
        guard !values.isEmpty else { return nil }
        let known = ValidationCheck.allIDs
        for value in values where !known.contains(value) {
            throw HostFailure("--only \(value): not a check\(didYouMean(value, among: known)) (the checks: \(known.joined(separator: ", ")))")
        }
        return Set(values)
    }
}

/// Hears of each check of `validate` as it ends: `ValidateCommand` prints the text report as it goes.
protocol ValidationProgress: AnyObject {
    /// The plugin became known (after its scan and its describing step).
    func described(_ report: ValidationReport)
    /// `check` ended (a sequence ran or was skipped; `load`, `init` and `delegates` after the describing
    /// step); `report` holds it. Not called for checks outside `--only`.
    func ended(_ check: ValidationReport.Check)
    /// Every check ended: `report` is final.
    func finished(_ report: ValidationReport)
}

/// Tells a `ValidationProgress` which checks ended, once each, in order, within `--only`.
struct ProgressTracker {
    let progress: ValidationProgress?
    let only: Set<String>?
    private var told: Set<String> = []
    private var described = false

    init(progress: ValidationProgress?, only: Set<String>?) {
        self.progress = progress
        self.only = only
    }

    mutating func ended(_ checks: [ValidationCheck], _ report: ValidationReport) {
        guard let progress else { return }
        if !described {
            described = true
            progress.described(report)
        }
        for check in checks where !told.contains(check.id) && only.map({ $0.contains(check.id) }) ?? true {
            told.insert(check.id)
            if let entry = report.entry(check) { progress.ended(entry) }
        }
    }

    /// The end: the report limited to `--only`, the checks not told yet told, then `finished`.
    mutating func finish(_ report: inout ValidationReport) {
        if let only { report.keep(only: only) }
        report.sort()
        ended(report.checks.map(\.check), report)
        progress?.finished(report)
    }
}
