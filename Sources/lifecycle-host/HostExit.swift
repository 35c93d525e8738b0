import AppLifecycle

/// The exit statuses of `lifecycle-host run` (documented in docs/host.md).
enum HostExit {
    /// A clean end: the application was terminated or purged.
    static let ok: Int32 = 0
    /// Something else failed (the host could not start, a bad option).
    static let failure: Int32 = 1
    /// A scenario line was bad or did not hold (`FILE:LINE: message` on standard error).
    static let scriptError: Int32 = 2
    /// At least one plugin was refused (the others ran).
    static let pluginRefused: Int32 = 3
    /// The watchdog killed the application (policy terminate): a budgeted phase overran, or a callback
    /// ran past the hang budget. The process exits at once, from the watchdog thread.
    static let watchdogKill: Int32 = 4
    /// A termination (SIGTERM, SIGINT) did not end the process within the terminate budget: the
    /// watchdog thread ended it (the main thread was stuck, e.g. in a callback that never returns).
    static let terminationOverdue: Int32 = 5
    /// Code that is not the host's (a plugin) called `exit()` while the host ran: intercepted, reported
    /// in an `exit` trace line, and the process exits with this instead of the status asked for.
    static let pluginExit: Int32 = 6
    /// The run ended, but an isolated plugin's process failed on the way (the trace's `plugin-failed`).
    static let isolatedPluginFailed: Int32 = 7
    /// The scenario ended with the application still running (no `--interactive` to take over): the
    /// host said so, on standard error and in the trace, and terminated it.
    static let scenarioLeftRunning: Int32 = 8
    /// Plugins were asked for (`--plugin`, `--plugin-dir`) and none could be loaded: the run ended
    /// before the launch (each refusal was reported), unless `--allow-no-plugins`.
    static let noPlugins: Int32 = 9
    /// `replay`: the replay's trace or exit status parted from the recording's (the first difference
    /// on standard error; `--diff` shows it in context). A replay that matches exits with the
    /// recorded run's status.
    static let replayDiverged: Int32 = 10
    /// A bad command line (`EX_USAGE`, as ArgumentParser exits for the errors it finds): an unknown
    /// command or option, a value that does not parse or is out of range, a missing argument.
    static let usage: Int32 = 64

    /// The statuses as `--help` and the man page's EXIT STATUS show them: one line a status, its number
    /// first (the man page makes each line an entry). A test keeps it in step with the constants.
    static let summary = """
        Exit status of 'run':
          0   a clean end: the application was terminated or purged
          1   a failure: the host could not start
          2   a scenario line was bad or did not hold
          3   a plugin was refused (the others ran)
          4   the watchdog killed the application (a budget or the hang budget overran)
          5   a termination (SIGTERM, SIGINT) was not done within the terminate budget
          6   a plugin called exit()
          7   an isolated plugin's process failed
          8   the scenario ended with the application running (the host terminated it)
          9   plugins were asked for and none could be loaded (see --allow-no-plugins)
        Other commands: 'replay' the recorded run's status when it matches, or 10 the replay parted from the recording, 1 the recording or a plugin file could not be used; 'check' 0, or 3 a plugin refused, 6 a plugin called exit() when scanned; 'validate' 0, or 1 a check failed, 2 the plugin could not be validated; 'send' and 'status' 0, or 1 the host answered an error or could not be reached. Every command:
          64  a bad command line
        """

    /// Whether `event` is the watchdog killing the application, which makes the run end with
    /// `watchdogKill`. Read from the event's typed payload, never from its words.
    static func isWatchdogKill(_ event: TraceEvent) -> Bool {
        if case .stateChanged(_, .notRunning, .killedByWatchdog) = event.payload { return true }
        return false
    }
}
