import AppLifecycle
@preconcurrency import Glibc

// lifecycle-host: the command-line host. For now it has one command, `demo`, which drives the engine
// through the seed's "Major State Changes" (launch, Home, return, lock, unlock) and prints the trace.

/// A delegate that implements every method (the defaults), so the trace shows each call.
final class DemoDelegate: ApplicationDelegate {}

func pad(_ s: String, _ width: Int) -> String { s.count >= width ? s : s + String(repeating: " ", count: width - s.count) }

func printTrace(_ event: TraceEvent) {
    let ms = Int64((event.time.secondsDouble * 1000).rounded())
    let time = "\(ms / 1000).\(String(repeating: "0", count: 3 - String(ms % 1000).count))\(ms % 1000)"
    var line = pad(time, 8) + pad(event.state.rawValue, 12) + pad(event.kind.rawValue, 14) + event.name
    if let observer = event.observer, !observer.isEmpty { line += "  [\(observer)]" }
    if let detail = event.detail, !detail.isEmpty { line += "  \(detail)" }
    print(line)
}

func runDemo() throws {
    let loop = try MainRunLoop()
    let app = Application(loop: loop)
    app.traceHandler = printTrace
    try app.addDelegate(DemoDelegate(), id: "demo")
    for name in [NotificationName.didFinishLaunching, .didBecomeActive, .willResignActive, .didEnterBackground,
                 .willEnterForeground, .protectedDataWillBecomeUnavailable, .protectedDataDidBecomeAvailable]
    {
        app.center.observe(name, owner: "demo-observer") { _ in }
    }
    print(pad("time", 8) + pad("state", 12) + pad("kind", 14) + "name")
    let steps: [(String, Action)] = [
        ("The app launches from scratch", .launch()),
        ("The user clicks the Home button", .home),
        ("The user summons the backgrounded app to the front", .foreground),
        ("The screen is locked", .lock),
        ("The screen is unlocked", .unlock),
    ]
    for (title, action) in steps {
        print("\n# \(title)")
        try app.perform(action)
    }
}

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "demo":
    do {
        try runDemo()
    } catch {
        fputs("lifecycle-host: \(error)\n", stderr)
        exit(1)
    }
case nil, "-h", "--help", "help":
    print("usage: lifecycle-host demo\n\n  demo   drive the engine through the Major State Changes and print the trace")
default:
    fputs("lifecycle-host: unknown command '\(arguments.first ?? "")' (try 'lifecycle-host help')\n", stderr)
    exit(64)
}
