// The timeline recorder (collects trace events, hands them to the drawing) and its colours.
import AppLifecycle

/// Collects trace events during a run and draws them as a standalone SVG 1.1 timeline.
///
/// The picture, top to bottom, over one time axis in seconds since the first launch:
/// - **state**: the application state as coloured bands — not running grey, inactive yellow,
///   active green, background blue, suspended purple; one band per interval between state changes.
/// - **scenes** (a scene-based application): one lane per scene, in the order the scenes first
///   appear, with the scene's state as bands in the colour of the matching application state
///   (foreground-inactive yellow, foreground-active green, background blue, suspended purple); no band
///   while it is unattached. Read from the typed scene-state changes.
/// - **actions**: a mark at each action, with its name (`home`, `url-session`, …) beside it, in up
///   to three rows so that no two names overlap (a name that finds no room is left to the `<title>`).
/// - **plugin failures** (when there are any): a red triangle at each failure of an isolated
///   plugin's process (crash, exit, kill at a budget's end, protocol violation, quotas ignored) and
///   each refusal of a plugin's calls (a quota, another plugin's handle), labelled `PLUGIN: CAUSE`
///   (`com.example.segv: SIGSEGV`), with a dashed red line down the picture at that instant; their
///   ticks are red too. Read from the typed payloads (`TimelineAnalysis.failures`).
/// - **budgets**: the watchdog-budgeted phases (launch, didEnterBackground, willTerminate) as bars from
///   the first to the last event of the phase; the part past the budget of a phase that overran it
///   (a watchdog overrun reports that budget) is red. Phases, overruns and tasks are read from the
///   events' typed payloads, never from their words.
/// - **background tasks**: one bar per task from its `begin` to its `end` event (or to the end of the
///   run or of the process), stacked when they overlap; an expiration warning is an orange mark, an
///   end forced by the watchdog a red one.
/// - **events**: one tick per trace event, in a lane per kind, coloured by kind; hovering a tick shows
///   its sequence number, time, kind, name, observer, detail and the state after it (`<title>`).
/// - a time axis fitted to the run (`TimelineDrawing.axis`), and a legend.
///
/// Not thread-safe: record from one thread (the trace handler runs on the loop thread).
final class TimelineRecorder {
    /// The recorded events, in order.
    private(set) var events: [TraceEvent] = []

    init() {}

    /// Adds one event; feed it every event of the trace handler, in order.
    func record(_ event: TraceEvent) {
        events.append(event)
    }

    /// The timeline of the events recorded so far, as an SVG 1.1 document.
    /// - Parameter width: the picture's width in pixels (at least 480); the height follows the content.
    func svg(width: Int = 1200) -> String {
        TimelineDrawing(events: events, width: max(width, 480)).render()
    }

    /// Escapes text for XML character data and attribute values, and replaces the characters XML 1.0
    /// cannot hold (most C0 controls, U+FFFE, U+FFFF) with U+FFFD.
    /// `inAttribute`: tab, line feed and carriage return become character references too, which an
    /// attribute value keeps (a parser normalises literal ones to spaces).
    static func xmlEscape(_ text: String, inAttribute: Bool = false) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r":
                if inAttribute { out += "&#\(scalar.value);" } else { out.unicodeScalars.append(scalar) }
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}

// MARK: - Colours and names

enum TimelineStyle {
    static func colour(of state: ApplicationState) -> String {
        switch state {
        case .notRunning: return "#9e9e9e"
        case .inactive: return "#f2c94c"
        case .active: return "#43a047"
        case .background: return "#1e88e5"
        case .suspended: return "#8e44ad"
        }
    }

    /// The known kinds, in lane order, with their colours.
    /// A scene state in the colour of the application state it matches.
    static func colour(of state: SceneState) -> String {
        switch state {
        case .unattached: return colour(of: ApplicationState.notRunning)
        case .foregroundInactive: return colour(of: ApplicationState.inactive)
        case .foregroundActive: return colour(of: ApplicationState.active)
        case .background: return colour(of: ApplicationState.background)
        case .suspended: return colour(of: ApplicationState.suspended)
        }
    }

    static let kinds: [(TraceEvent.Kind, String)] = [
        (.action, "#212121"), (.state, "#6d4c41"), (.sceneState, "#8d6e63"), (.delegate, "#1565c0"), (.notification, "#00897b"),
        (.queued, "#7b1fa2"), (.discarded, "#9e9e9e"), (.skipped, "#bdbdbd"), (.backgroundTask, "#3949ab"),
        (.completion, "#2e7d32"), (.archive, "#ef6c00"), (.watchdog, "#e53935"), (.error, "#b71c1c"),
        (.pluginFailed, failureColour), (.quota, failureColour), (.handleRefused, failureColour),
        (.pluginRestarted, "#558b2f"), (.pluginBacklog, "#f9a825"), (.sceneRequest, "#5d4037"),
        (.pluginFreezer, "#0277bd"),
    ]
    static let otherKind = "#757575"

    static func colour(of kind: TraceEvent.Kind) -> String {
        kinds.first { $0.0 == kind }?.1 ?? otherKind
    }

    static let phaseColour = "#90a4ae"
    static let overrunColour = "#e53935"
    static let taskColour = "#90caf9"
    static let taskStroke = "#1565c0"
    static let expiringColour = "#fb8c00"
    /// A plugin failure or refusal: its mark, its name, its line down the picture and its ticks.
    static let failureColour = "#d50000"
}
