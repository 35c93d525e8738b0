import AppLifecycle
import CLifecycle
import CLifecycleABI
import Foundation
import Glibc
import LifecycleC
import PluginHost
import XCTest

/// The libffi delegate calls against a real C plugin image: Fixtures/ffi_delegate_fixture.c, compiled
/// at test time, opened with dlopen and bound with dlsym, driven by a real `Application` on a real loop.
final class FFIDelegateTests: XCTestCase {
    override func setUpWithError() throws {
        try Fixture.shared.get().reset()
    }

    override func tearDownWithError() throws {
        let fixture = try Fixture.shared.get()
        fixture.joinThreads()
        fixture.reset()
    }

    // MARK: The table

    func testTableMatchesTheHeaderPrototypes() throws {
        let declared = try HeaderPrototypes.parse(Fixture.repositoryRoot.appendingPathComponent("include/lifecycle.h"))
        XCTAssertEqual(declared.count, 45, "20 of ABI 1.0-1.1, 18 of 1.2 (scenes and Handoff), 7 of 1.5 (restoreInteractionState, the older methods)")
        XCTAssertEqual(FFIDelegates.functions.count, 45)
        XCTAssertEqual(Set(FFIDelegates.functions.map(\.symbol)), Set(declared.keys))
        XCTAssertEqual(Set(FFIDelegates.functions.map(\.method)).count, 45, "one row per delegate method")
        XCTAssertEqual(FFIDelegates.functions.filter(\.shape.isScene).map(\.method), DelegateMethod.sceneMethods,
                       "the scene rows, in SceneDelegateHandlers order")
        for function in FFIDelegates.functions {
            XCTAssertEqual(declared[function.symbol], function.signature, function.symbol)
        }
        // Every method of the Swift handler table has its row.
        var all = DelegateHandlers()
        all.willFinishLaunching = { _, _ in true }
        all.didFinishLaunching = { _, _ in true }
        all.didBecomeActive = { _ in }
        all.willResignActive = { _ in }
        all.didEnterBackground = { _ in }
        all.willEnterForeground = { _ in }
        all.willTerminate = { _ in }
        all.didReceiveMemoryWarning = { _ in }
        all.significantTimeChange = { _ in }
        all.protectedDataWillBecomeUnavailable = { _ in }
        all.protectedDataDidBecomeAvailable = { _ in }
        all.openURL = { _, _, _, _ in true }
        all.performFetch = { _, _ in }
        all.didReceiveRemoteNotificationWithCompletion = { _, _, _ in }
        all.didReceiveRemoteNotification = { _, _ in }
        all.shouldSaveApplicationState = { _, _ in true }
        all.shouldRestoreApplicationState = { _, _ in true }
        all.willEncodeRestorableState = { _, _ in }
        all.didDecodeRestorableState = { _, _ in }
        all.openURLWithOptions = { _, _, _ in true }
        all.configurationForConnecting = { _, _, _ in .default }
        all.didDiscardSceneSessions = { _, _ in }
        all.willContinueUserActivity = { _, _ in true }
        all.continueUserActivity = { _, _ in true }
        all.didFailToContinueUserActivity = { _, _, _ in }
        all.didUpdateUserActivity = { _, _ in }
        all.applicationDidFinishLaunching = { _ in }
        all.handleOpenURL = { _, _ in true }
        all.didReceiveLocalNotification = { _, _ in }
        all.didRegisterForRemoteNotifications = { _, _ in }
        all.didFailToRegisterForRemoteNotifications = { _, _ in }
        all.handleEventsForBackgroundURLSession = { _, _, _ in }
        XCTAssertEqual(FFIDelegates.functions.filter { !$0.shape.isScene }.map(\.method), all.implementedMethods)
    }

    func testBindingFindsEveryExportedFunction() throws {
        let fixture = try Fixture.shared.get()
        var asked: [String] = []
        let bound = FFIDelegates.bind(lookup: { asked.append($0); return fixture.symbol($0) }, app: Rig.appPointer,
                                      closures: CompletionClosurePool())
        // The application delegate's rows (the scene rows are bindScenes'); the fixture exports the 20 of ABI 1.0-1.1.
        XCTAssertEqual(asked, FFIDelegates.functions.filter { !$0.shape.isScene }.map(\.symbol))
        XCTAssertEqual(bound.implemented, FFIDelegates.functions.prefix(20).map(\.method))
        XCTAssertEqual(bound.handlers.implementedMethods, bound.implemented)
    }

    func testBindingWithNoSymbolsImplementsNothing() {
        var asked = 0
        let bound = FFIDelegates.bind(lookup: { _ in asked += 1; return nil }, app: Rig.appPointer, closures: CompletionClosurePool())
        XCTAssertEqual(asked, 32)
        XCTAssertEqual(bound.implemented, [])
        XCTAssertEqual(bound.handlers.implementedMethods, [])
    }

    func testCallInterfacesArePreparedOncePerSignatureAndShared() throws {
        let fixture = try Fixture.shared.get()
        _ = FFIDelegates.bind(lookup: fixture.symbol, app: nil, closures: CompletionClosurePool())
        let signatures = Set(FFIDelegates.functions.map(\.signature))
        let first = signatures.map { FFIDelegates.callInterface(for: $0) }
        let prepared = FFIDelegates.preparedInterfaceCount
        XCTAssertGreaterThanOrEqual(prepared, signatures.count)
        XCTAssertLessThanOrEqual(prepared, signatures.count * 3 + 1,
                                 "rows share, per convention (exported, lc_delegate_t, 1.1 table); plus the completion closures' void(uint32)")
        _ = FFIDelegates.bind(lookup: fixture.symbol, app: nil, closures: CompletionClosurePool())
        let second = signatures.map { FFIDelegates.callInterface(for: $0) }
        XCTAssertEqual(FFIDelegates.preparedInterfaceCount, prepared, "binding again prepares nothing")
        for (a, b) in zip(first, second) { XCTAssertTrue(a === b) }
    }

    // MARK: Calls

    /// Drives every action and checks each C call's arguments, the dictionaries' contents, the answers
    /// and the app pointer, step by step; at the end every row of the table has been called.
    func testEveryDelegateFunctionIsCalledWithItsArguments() throws {
        let archives = try Fixture.temporaryDirectory("archives")
        let rig = try Rig {
            $0.backgroundModes = [.fetch, .remoteNotification]
            $0.archiveDirectory = archives.path
        }
        // A second delegate exporting only the variant without a completion handler (the engine calls
        // that one only when the completion variant is missing), with its own app pointer.
        let other = OpaquePointer(bitPattern: 0xB0B0)!
        let onlyPlain = FFIDelegates.bind(
            lookup: { $0 == "application_didReceiveRemoteNotification" ? rig.fixture.symbol($0) : nil },
            app: other, closures: rig.pool)
        XCTAssertEqual(onlyPlain.implemented, [.didReceiveRemoteNotification])
        try rig.app.addDelegate(onlyPlain.handlers, id: "com.example.plain")
        rig.spy.writes["application_shouldSaveApplicationState"] = ["counter": 7]
        rig.spy.writes["application_willEncodeRestorableStateWithCoder"] = ["title": "draft"]
        let a = "app=5eeda110"

        try rig.perform(.launch(options: ["source": "test"]))
        XCTAssertEqual(rig.newLog(), [
            "application_willFinishLaunchingWithOptions \(a) options=dict -> 1",
            "application_didFinishLaunchingWithOptions \(a) options=dict -> 1",
            "applicationDidBecomeActive \(a)",
        ])
        XCTAssertEqual(rig.spy.take(), [
            #"application_willFinishLaunchingWithOptions {"source":"test"}"#,
            #"application_didFinishLaunchingWithOptions {"source":"test"}"#,
        ])

        try rig.perform(.openURL("https://example.com/a?b=c", sourceApplication: "com.example.src", annotation: 42))
        try rig.perform(.openURL("x://b"))
        try rig.perform(.openURL("x://c", annotation: ["k": "v", "n": [1, 2]]))
        XCTAssertEqual(rig.newLog(), [
            "application_openURL \(a) url=https://example.com/a?b=c source=com.example.src annotation=dict -> 1",
            "application_openURL \(a) url=x://b source=NULL annotation=NULL -> 1",
            "application_openURL \(a) url=x://c source=NULL annotation=dict -> 1",
        ])
        XCTAssertEqual(rig.spy.take(), [
            #"application_openURL {"value":42}"#,
            "application_openURL NULL",
            #"application_openURL {"k":"v","n":[1,2]}"#,
        ])

        // seed 004's application:openURL:options:, from a delegate exporting it (called instead of the
        // older form, which this one does not export anyway): the options as a dictionary, never NULL.
        let withOptions = FFIDelegates.bind(
            lookup: { $0 == "application_openURL_options" ? rig.fixture.symbol($0) : nil }, app: other, closures: rig.pool)
        XCTAssertEqual(withOptions.implemented, [.openURLWithOptions])
        try rig.app.addDelegate(withOptions.handlers, id: "com.example.options")
        try rig.perform(.openURL("x://d", sourceApplication: "com.example.src", annotation: 5))
        try rig.perform(.openURL("x://e"))
        XCTAssertEqual(rig.newLog(), [
            "application_openURL \(a) url=x://d source=com.example.src annotation=dict -> 1",
            "application_openURL_options app=b0b0 url=x://d options=dict -> 1",
            "application_openURL \(a) url=x://e source=NULL annotation=NULL -> 1",
            "application_openURL_options app=b0b0 url=x://e options=dict -> 1",
        ])
        XCTAssertEqual(rig.spy.take(), [
            #"application_openURL {"value":5}"#,
            #"application_openURL_options {"sourceApplication":"com.example.src","annotation":5}"#,
            "application_openURL NULL",
            "application_openURL_options {}",
        ])
        XCTAssertTrue(rig.app.removeDelegate(id: "com.example.options"))

        try rig.perform(.memoryWarning(.critical))
        try rig.perform(.significantTimeChange)
        XCTAssertEqual(rig.newLog(), ["applicationDidReceiveMemoryWarning \(a)", "applicationSignificantTimeChange \(a)"])

        rig.fixture.setCompletion(.now, result: 1)
        try rig.perform(.remoteNotification(["aps": ["badge": 3]]))
        XCTAssertEqual(rig.newLog(), [
            "application_didReceiveRemoteNotification_fetchCompletionHandler \(a) user_info=dict completion=fn",
            "application_didReceiveRemoteNotification app=b0b0 user_info=dict",
        ])
        XCTAssertEqual(rig.spy.take(), [
            #"application_didReceiveRemoteNotification_fetchCompletionHandler {"aps":{"badge":3}}"#,
            #"application_didReceiveRemoteNotification {"aps":{"badge":3}}"#,
        ])
        XCTAssertTrue(rig.traceLines.contains(
            "completion application:didReceiveRemoteNotification:fetchCompletionHandler: [com.example.ffi] (noData)"))

        try rig.perform(.home)
        XCTAssertEqual(rig.newLog(), [
            "applicationWillResignActive \(a)",
            "applicationDidEnterBackground \(a)",
            "application_shouldSaveApplicationState \(a) coder=dict -> 1",
            "application_willEncodeRestorableStateWithCoder \(a) coder=dict",
        ])
        // shouldSave got an empty coder and wrote into it; willEncode got what shouldSave wrote.
        XCTAssertEqual(rig.spy.take(), [
            "application_shouldSaveApplicationState {}",
            #"application_willEncodeRestorableStateWithCoder {"counter":7}"#,
        ])
        XCTAssertTrue(rig.traceLines.contains("archive saved [com.example.ffi] (2 keys)"))
        XCTAssertEqual(rig.app.state, .suspended)

        rig.fixture.setCompletion(.now, result: 0)
        try rig.perform(.backgroundFetch)
        // Woken from suspension: didEnterBackground (and the save after it) before the fetch (seed 002).
        XCTAssertEqual(rig.newLog(), [
            "applicationDidEnterBackground \(a)",
            "application_shouldSaveApplicationState \(a) coder=dict -> 1",
            "application_willEncodeRestorableStateWithCoder \(a) coder=dict",
            "application_performFetchWithCompletionHandler \(a) completion=fn",
        ])
        XCTAssertEqual(rig.traceLines.suffix(2), [
            "completion application:performFetchWithCompletionHandler: [com.example.ffi] (newData)", "state suspended",
        ])

        try rig.perform(.foreground)
        XCTAssertEqual(rig.newLog(), ["applicationWillEnterForeground \(a)", "applicationDidBecomeActive \(a)"])

        try rig.perform(.lock)
        XCTAssertEqual(rig.newLog(), [
            "applicationWillResignActive \(a)",
            "applicationDidEnterBackground \(a)",
            "application_shouldSaveApplicationState \(a) coder=dict -> 1",
            "application_willEncodeRestorableStateWithCoder \(a) coder=dict",
            "applicationProtectedDataWillBecomeUnavailable \(a)",
        ])
        try rig.perform(.unlock)
        XCTAssertEqual(rig.newLog(), [
            "applicationProtectedDataDidBecomeAvailable \(a)",
            "applicationWillEnterForeground \(a)",
            "applicationDidBecomeActive \(a)",
        ])

        try rig.perform(.terminate)
        // Through the background (seed 001); saved there, not again before willTerminate.
        XCTAssertEqual(rig.newLog(), [
            "applicationWillResignActive \(a)",
            "applicationDidEnterBackground \(a)",
            "application_shouldSaveApplicationState \(a) coder=dict -> 1",
            "application_willEncodeRestorableStateWithCoder \(a) coder=dict",
            "applicationWillTerminate \(a)",
        ])
        XCTAssertEqual(rig.app.state, .notRunning)

        // Relaunch: what shouldSave and willEncode wrote comes back.
        _ = rig.spy.take()
        rig.spy.writes = [:]
        try rig.perform(.launch())
        XCTAssertEqual(rig.newLog(), [
            "application_willFinishLaunchingWithOptions \(a) options=dict -> 1",
            "application_shouldRestoreApplicationState \(a) coder=dict -> 1",
            "application_didDecodeRestorableStateWithCoder \(a) coder=dict",
            "application_didFinishLaunchingWithOptions \(a) options=dict -> 1",
            "applicationDidBecomeActive \(a)",
        ])
        XCTAssertEqual(rig.spy.take(), [
            "application_willFinishLaunchingWithOptions {}",
            #"application_shouldRestoreApplicationState {"counter":7,"title":"draft"}"#,
            #"application_didDecodeRestorableStateWithCoder {"counter":7,"title":"draft"}"#,
            "application_didFinishLaunchingWithOptions {}",
        ])

        let calledSymbols = Set(rig.fullLog.compactMap { $0.split(separator: " ").first.map(String.init) })
        XCTAssertEqual(calledSymbols, Set(FFIDelegates.functions.prefix(20).map(\.symbol)),
                       "every row of ABI 1.0-1.1 was called (the 1.2 rows: SceneABITests)")
        XCTAssertTrue(rig.fullLog.allSatisfy { $0.contains(" \(a)") || $0.contains(" app=b0b0") }, "the app pointer passes through unchanged")
        XCTAssertFalse(rig.traceLines.contains { $0.hasPrefix("error") }, rig.traceLines.joined(separator: "\n"))
    }

    func testLaunchMethodAnsweringFalseSuppressesOpenURL() throws {
        let rig = try Rig()
        XCTAssertEqual(rig.fixture.setReturn("application_willFinishLaunchingWithOptions", false), 0)
        try rig.perform(.openURL("app://x", sourceApplication: "com.example.src", annotation: ["k": true]))
        XCTAssertEqual(rig.newLog(), [
            "application_willFinishLaunchingWithOptions app=5eeda110 options=dict -> 0",
            "application_didFinishLaunchingWithOptions app=5eeda110 options=dict -> 1",
            "applicationDidBecomeActive app=5eeda110",
        ])
        XCTAssertEqual(rig.spy.take().first,
                       #"application_willFinishLaunchingWithOptions {"url":"app://x","sourceApplication":"com.example.src","annotation":{"k":true}}"#)
        XCTAssertTrue(rig.traceLines.contains("skipped application:openURL:sourceApplication:annotation: (a launch method returned false)"))
    }

    func testBoolAnswersAreReadFromTheReturnBuffer() throws {
        let rig = try Rig()
        let h = rig.handlers
        let app = rig.app
        for value in [false, true, false] {
            for function in FFIDelegates.functions.prefix(20) where function.returnType == .bool {
                XCTAssertEqual(rig.fixture.setReturn(function.symbol, value), 0)
            }
            XCTAssertEqual(h.willFinishLaunching?(app, [:]), value)
            XCTAssertEqual(h.didFinishLaunching?(app, ["k": 1]), value)
            XCTAssertEqual(h.openURL?(app, "u://v", nil, nil), value)
            XCTAssertEqual(h.shouldSaveApplicationState?(app, StateArchive()), value)
            XCTAssertEqual(h.shouldRestoreApplicationState?(app, StateArchive(values: ["a": 1])), value)
        }
        XCTAssertEqual(rig.newLog().count, 15)
    }

    func testRestoreGateAndSaveGateAreEachDelegatesOwn() throws {
        let archives = try Fixture.temporaryDirectory("gates")
        let rig = try Rig { $0.archiveDirectory = archives.path }
        rig.spy.writes["application_shouldSaveApplicationState"] = ["v": 1]
        try rig.perform(.launch())
        try rig.perform(.terminate)  // saves {"v":1}

        // shouldSave answering false: no willEncode and no save, whatever it wrote into its coder.
        rig.spy.writes["application_shouldSaveApplicationState"] = ["v": 2]
        XCTAssertEqual(rig.fixture.setReturn("application_shouldSaveApplicationState", false), 0)
        try rig.perform(.launch())
        _ = rig.newLog()
        try rig.perform(.terminate)
        XCTAssertEqual(rig.newLog().filter { $0.contains("State") }, [
            "application_shouldSaveApplicationState app=5eeda110 coder=dict -> 0",
        ])

        // shouldRestore answering false: didDecode is not called; the coder held the last save.
        XCTAssertEqual(rig.fixture.setReturn("application_shouldRestoreApplicationState", false), 0)
        _ = rig.spy.take()
        try rig.perform(.launch())
        XCTAssertEqual(rig.newLog().filter { $0.contains("State") }, [
            "application_shouldRestoreApplicationState app=5eeda110 coder=dict -> 0",
        ])
        XCTAssertTrue(rig.spy.take().contains(#"application_shouldRestoreApplicationState {"v":1}"#))
    }

    // MARK: Completion function pointers

    func testCompletionCalledOnceCompletesTheRequest() throws {
        let rig = try Rig.background()
        rig.fixture.setCompletion(.now, result: 0)
        try rig.perform(.backgroundFetch)
        XCTAssertEqual(rig.traceLines.suffix(3), [
            "delegate application:performFetchWithCompletionHandler: [com.example.ffi]",
            "completion application:performFetchWithCompletionHandler: [com.example.ffi] (newData)",
            "state suspended",
        ])
        rig.fixture.setCompletion(.now, result: 2)
        try rig.perform(.remoteNotification(["id": 9]))
        XCTAssertEqual(rig.traceLines.suffix(2), [
            "completion application:didReceiveRemoteNotification:fetchCompletionHandler: [com.example.ffi] (failed)",
            "state suspended",
        ])
    }

    func testCompletionCalledTwiceIsReportedAndNothingBreaks() throws {
        let rig = try Rig.background()
        rig.fixture.setCompletion(.twice, result: 1)
        try rig.perform(.backgroundFetch)
        XCTAssertEqual(rig.traceLines.suffix(4), [
            "delegate application:performFetchWithCompletionHandler: [com.example.ffi]",
            "completion application:performFetchWithCompletionHandler: [com.example.ffi] (noData)",
            "error completion handler called again [com.example.ffi] (application:performFetchWithCompletionHandler:: the second call (noData) is ignored)",
            "state suspended",
        ])
        // A third, late call through the same pointer after the request ended still lands safely.
        rig.pool.sweep()
        rig.fixture.callLastCompletion(0)
        XCTAssertEqual(rig.traceLines.last,
                       "error completion handler called again [com.example.ffi] (application:performFetchWithCompletionHandler:: the second call (newData) is ignored)")
        // And the next request works as usual.
        rig.fixture.setCompletion(.now, result: 0)
        try rig.perform(.backgroundFetch)
        XCTAssertEqual(rig.traceLines.suffix(2), [
            "completion application:performFetchWithCompletionHandler: [com.example.ffi] (newData)", "state suspended",
        ])
    }

    func testCompletionNeverCalledIsEndedByTheWatchdog() throws {
        let rig = try Rig.background {
            $0.budgets.completionHandler = .milliseconds(150)
            $0.watchdogPolicy = .report
        }
        rig.fixture.setCompletion(.never, result: 0)
        try rig.perform(.backgroundFetch)
        XCTAssertEqual(rig.app.state, .background, "the open request keeps the application running")
        XCTAssertEqual(rig.pool.liveClosureCount, 1)
        try rig.runLoop(until: { rig.app.state == .suspended })
        XCTAssertEqual(rig.traceLines.suffix(2), [
            "watchdog completion handler of application:performFetchWithCompletionHandler: [com.example.ffi] (completion handler of application:performFetchWithCompletionHandler: by 'com.example.ffi' overran the completionHandler budget: 0.150 s of 0.150 s (policy: report))",
            "state suspended",
        ])
        // Ended: quarantined, not freed; a late call lands and is recognised as late.
        rig.pool.sweep()
        XCTAssertEqual(rig.pool.liveClosureCount, 1)
        rig.fixture.callLastCompletion(1)
        XCTAssertEqual(rig.traceLines.last,
                       "completion application:performFetchWithCompletionHandler: [com.example.ffi] (noData, late: the watchdog had already ended the request)")
    }

    func testCompletionFromAnotherThreadCompletesOnTheLoop() throws {
        let rig = try Rig.background()
        rig.fixture.setCompletion(.onThread, result: 1)
        try rig.perform(.backgroundFetch)
        XCTAssertEqual(rig.app.state, .background)
        try rig.runLoop(until: { rig.app.state == .suspended })
        rig.fixture.joinThreads()
        XCTAssertEqual(rig.traceLines.suffix(2), [
            "completion application:performFetchWithCompletionHandler: [com.example.ffi] (noData)", "state suspended",
        ])
        XCTAssertEqual(rig.offLoopTraceEvents, 0, "traced on the loop thread")
        XCTAssertTrue(rig.fullLog.contains("thread calls completion 1"))
    }

    func testResultOutsideTheEnumCountsAsFailed() throws {
        let rig = try Rig.background()
        rig.fixture.setCompletion(.now, result: 7)
        let before = rig.traceLines.count
        try rig.perform(.backgroundFetch)
        XCTAssertEqual(Array(rig.traceLines[before...]), [
            "state background",
            "delegate applicationDidEnterBackground: [com.example.ffi]",
            "notification didEnterBackground",
            "delegate application:performFetchWithCompletionHandler: [com.example.ffi]",
            "completion application:performFetchWithCompletionHandler: [com.example.ffi] (failed)",
            "state suspended",
        ])
    }

    /// ABI 1.0: a completion pointer called again after 100 later requests is reported and completes
    /// nothing — its closure was not reused (a completed closure waits `reuseDelay` first) — and one
    /// whose request the watchdog ended is never reused at all.
    func testCompletionCalledAfterAHundredLaterRequestsCompletesNothing() throws {
        let rig = try Rig.background { $0.watchdogPolicy = .report }
        rig.fixture.setCompletion(.now, result: 0)
        try rig.perform(.backgroundFetch)
        let first = try XCTUnwrap(rig.fixture.lastCompletion)
        // A request left open meanwhile must not be completed by the stale call.
        rig.fixture.setCompletion(.now, result: 0)
        for _ in 0..<100 { try rig.perform(.backgroundFetch) }
        XCTAssertEqual(rig.traceLines.filter { $0.hasPrefix("completion ") }.count, 101)
        XCTAssertEqual(Set((0..<5).map { _ in rig.pool.liveClosureCount }).count, 1)
        XCTAssertLessThanOrEqual(rig.pool.liveClosureCount, 101, "no reuse within the delay")
        rig.fixture.setCompletion(.never, result: 0)
        try rig.perform(.backgroundFetch)
        XCTAssertEqual(rig.app.state, .background, "one request open")
        let before = rig.traceLines.count
        first(1)
        XCTAssertEqual(Array(rig.traceLines[before...]), [], "nothing completed (the table has forgotten the ended request: logged only)")
        XCTAssertTrue(String(cString: lc_last_error_message()).hasSuffix("which names no open request (completed, ended, or never issued); ignored"),
                      String(cString: lc_last_error_message()))
        XCTAssertEqual(rig.app.state, .background, "the open request is still open")
        rig.fixture.callLastCompletion(0)
        XCTAssertEqual(rig.app.state, .suspended)
    }

    /// ABI 1.0: a completed closure serves a new request only after the reuse delay, and a closure
    /// whose request ended uncalled is never reused; no closure is ever freed.
    func testClosuresAreReusedOnlyAfterTheirDelayAndNeverWhenUncalled() throws {
        let rig = try Rig.background { $0.watchdogPolicy = .report; $0.budgets.completionHandler = .milliseconds(50) }
        let pool = CompletionClosurePool(reuseDelay: .milliseconds(300))
        var handlers: [FetchCompletionHandler] = []
        rig.app.removeDelegate(id: "com.example.ffi")
        var swift = DelegateHandlers()
        swift.performFetch = { _, handler in handlers.append(handler) }
        try rig.app.addDelegate(swift, id: "com.example.swift")
        func completion() throws -> UnsafeRawPointer {
            try rig.perform(.backgroundFetch)
            return pool.makeCompletion(for: try XCTUnwrap(handlers.last))
        }
        func call(_ pointer: UnsafeRawPointer) { unsafeBitCast(pointer, to: (@convention(c) (UInt32) -> Void).self)(0) }
        let a = try completion()
        call(a)
        XCTAssertEqual(rig.app.state, .suspended)
        let uncalled = try completion()  // never called: the watchdog ends it
        try rig.runLoop(until: { rig.app.state == .suspended })
        let b = try completion()
        XCTAssertNotEqual(b, a, "too early to reuse")
        call(b)
        usleep(350_000)
        var seen: Set<UnsafeRawPointer> = []
        for _ in 0..<4 {
            let next = try completion()
            seen.insert(next)
            call(next)
        }
        XCTAssertTrue(seen.contains(a), "reused after the delay")
        XCTAssertFalse(seen.contains(uncalled), "never reused")
        XCTAssertEqual(pool.deadClosureCount, 1)
        XCTAssertEqual(pool.liveClosureCount, 6, "a, uncalled, b, then three new while b cools")
        // The dead one, called late, lands safely and completes nothing.
        let open = try completion()
        call(uncalled)
        XCTAssertEqual(rig.app.state, .background)
        call(open)
        XCTAssertEqual(rig.app.state, .suspended)
    }

    /// ABI 1.5: a URL session's completion is a `void (*)(void)` closure; a cooled closure is reused
    /// only for a request of its own C type (a `void (*)(lc_fetch_result)` never serves it, nor the
    /// other way round), and its call completes its request with no result to read.
    func testResultlessClosuresAreReusedOnlyForTheirOwnType() throws {
        let rig = try Rig.background { $0.watchdogPolicy = .report }
        let pool = CompletionClosurePool(reuseDelay: .milliseconds(50))
        var fetches: [FetchCompletionHandler] = []
        var sessions: [URLSessionCompletionHandler] = []
        rig.app.removeDelegate(id: "com.example.ffi")
        var swift = DelegateHandlers()
        swift.performFetch = { _, handler in fetches.append(handler) }
        swift.handleEventsForBackgroundURLSession = { _, _, handler in sessions.append(handler) }
        try rig.app.addDelegate(swift, id: "com.example.swift")
        func session() throws -> UnsafeRawPointer {
            try rig.perform(.urlSessionEvents("com.example.s"))
            return pool.makeCompletion(for: try XCTUnwrap(sessions.last).request, takesResult: false)
        }
        func callVoid(_ pointer: UnsafeRawPointer) { unsafeBitCast(pointer, to: (@convention(c) () -> Void).self)() }
        let a = try session()
        XCTAssertEqual(rig.app.state, .background)
        callVoid(a)
        XCTAssertEqual(rig.app.state, .suspended)
        XCTAssertTrue(try XCTUnwrap(sessions.last).wasCalled)
        pool.sweep()
        usleep(80_000)
        // A fetch after the delay gets a new closure of its own type, not `a`.
        try rig.perform(.backgroundFetch)
        let fetch = pool.makeCompletion(for: try XCTUnwrap(fetches.last))
        XCTAssertNotEqual(fetch, a)
        unsafeBitCast(fetch, to: (@convention(c) (UInt32) -> Void).self)(0)
        XCTAssertEqual(rig.app.state, .suspended)
        // The next URL session reuses `a`.
        XCTAssertEqual(try session(), a)
        callVoid(a)
        XCTAssertEqual(rig.app.state, .suspended)
        XCTAssertEqual(pool.liveClosureCount, 2)
    }
}

// MARK: - Helpers

/// The compiled fixture image, opened once per test process.
final class Fixture: @unchecked Sendable {
    // @unchecked: the handle and function pointers are immutable; the image's state is used from the
    // test thread (and the fixture's own threads, under its lock).
    typealias Hook = @convention(c) (UnsafePointer<CChar>?, OpaquePointer?, UnsafeMutableRawPointer?) -> Void

    enum CompletionMode: Int32 { case now = 0, twice = 1, never = 2, onThread = 3 }

    static let shared = Result { try Fixture() }

    /// The repository root: the nearest folder above this file holding include/lifecycle.h.
    static var repositoryRoot: URL {
        var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("include/lifecycle.h").path) { return url }
            url.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized
    }

    static func temporaryDirectory(_ name: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ffi-delegate-tests-\(getpid())-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    let handle: UnsafeMutableRawPointer
    let reset: @convention(c) () -> Void
    private let log_: @convention(c) () -> UnsafeMutablePointer<CChar>?
    private let setHook_: @convention(c) (Hook?, UnsafeMutableRawPointer?) -> Void
    private let setReturn_: @convention(c) (UnsafePointer<CChar>?, Bool) -> Int32
    private let setCompletion_: @convention(c) (Int32, UInt32) -> Void
    private let callLastCompletion_: @convention(c) (UInt32) -> Void
    private let lastCompletion_: @convention(c) () -> (@convention(c) (UInt32) -> Void)?
    let joinThreads: @convention(c) () -> Void

    private init() throws {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/ffi_delegate_fixture.c")
        let output = try Self.temporaryDirectory("image").appendingPathComponent("libffi_delegate_fixture.so")
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        compiler.arguments = ["cc", "-shared", "-fPIC", "-Wall", "-Werror", "-I", Self.repositoryRoot.appendingPathComponent("include").path,
                              "-o", output.path, source.path, "-lpthread"]
        let errors = Pipe()
        compiler.standardError = errors
        try compiler.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        compiler.waitUntilExit()
        guard compiler.terminationStatus == 0 else { throw FixtureError("cc failed: \(message)") }
        guard let handle = dlopen(output.path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) else {
            throw FixtureError("dlopen: \(String(cString: dlerror()))")
        }
        self.handle = handle
        func function<F>(_ name: String, _ type: F.Type) throws -> F {
            guard let address = dlsym(handle, name) else { throw FixtureError("missing \(name)") }
            return unsafeBitCast(address, to: F.self)
        }
        reset = try function("fixture_reset", (@convention(c) () -> Void).self)
        log_ = try function("fixture_log", (@convention(c) () -> UnsafeMutablePointer<CChar>?).self)
        setHook_ = try function("fixture_set_hook", (@convention(c) (Hook?, UnsafeMutableRawPointer?) -> Void).self)
        setReturn_ = try function("fixture_set_return", (@convention(c) (UnsafePointer<CChar>?, Bool) -> Int32).self)
        setCompletion_ = try function("fixture_set_completion", (@convention(c) (Int32, UInt32) -> Void).self)
        callLastCompletion_ = try function("fixture_call_last_completion", (@convention(c) (UInt32) -> Void).self)
        lastCompletion_ = try function("fixture_last_completion", (@convention(c) () -> (@convention(c) (UInt32) -> Void)?).self)
        joinThreads = try function("fixture_join_threads", (@convention(c) () -> Void).self)
    }

    /// `dlsym` on the image: the plugin's respondsToSelector:.
    func symbol(_ name: String) -> UnsafeMutableRawPointer? { dlsym(handle, name) }

    var log: [String] {
        guard let text = log_() else { return [] }
        defer { free(text) }
        return String(cString: text).split(separator: "\n").map(String.init)
    }

    func setHook(_ spy: DictSpy?) {
        guard let spy else { return setHook_(nil, nil) }
        setHook_({ symbol, dict, context in
            Unmanaged<DictSpy>.fromOpaque(context!).takeUnretainedValue().record(String(cString: symbol!), dict)
        }, Unmanaged.passUnretained(spy).toOpaque())
    }

    func setReturn(_ symbol: String, _ value: Bool) -> Int32 { setReturn_(symbol, value) }
    func setCompletion(_ mode: CompletionMode, result: UInt32) { setCompletion_(mode.rawValue, result) }
    func callLastCompletion(_ result: UInt32) { callLastCompletion_(result) }
    var lastCompletion: (@convention(c) (UInt32) -> Void)? { lastCompletion_() }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Sees every dictionary the fixture is handed, during the call, through the `lc_dict *` it got:
/// records its contents and writes what `writes` says for that symbol (as a plugin would through
/// the dictionary setters).
final class DictSpy {
    private(set) var seen: [String] = []
    var writes: [String: UserInfo] = [:]

    func record(_ symbol: String, _ dict: OpaquePointer?) {
        guard let dict else { return seen.append("\(symbol) NULL") }
        let box = UserInfoBox.from(dict)
        seen.append("\(symbol) \(box.value)")
        for (key, value) in writes[symbol] ?? [:] { box.value[key] = value }
    }

    func take() -> [String] {
        defer { seen.removeAll() }
        return seen
    }
}

/// One application on a loop bound to the test's thread, with the fixture bound as its delegate.
final class Rig {
    static var appPointer: OpaquePointer { OpaquePointer(bitPattern: 0x5EED_A110)! }

    let fixture: Fixture
    let loop: MainRunLoop
    let app: Application
    let pool = CompletionClosurePool()
    let spy = DictSpy()
    let handlers: DelegateHandlers
    var traceLines: [String] = []
    var offLoopTraceEvents = 0
    private var logSeen = 0

    init(_ configure: (inout Configuration) -> Void = { _ in }) throws {
        fixture = try Fixture.shared.get()
        fixture.setHook(spy)
        var configuration = Configuration()
        configure(&configuration)
        loop = try MainRunLoop()
        app = Application(configuration: configuration, loop: loop)
        // Every exported function but application_openURL_options, which would be called instead of
        // application_openURL: the tests drive the older form here and the newer one separately.
        let bound = FFIDelegates.bind(lookup: { [fixture] in $0 == "application_openURL_options" ? nil : fixture.symbol($0) },
                                      app: Self.appPointer, closures: pool)
        handlers = bound.handlers
        try app.addDelegate(bound.handlers, id: "com.example.ffi")
        app.traceHandler = { [unowned self] event in
            if !self.loop.isOnLoopThread { self.offLoopTraceEvents += 1 }
            if event.kind != .action { self.traceLines.append(event.description) }
        }
    }

    /// A suspended application declaring fetch and remote notifications.
    static func background(_ configure: (inout Configuration) -> Void = { _ in }) throws -> Rig {
        let rig = try Rig {
            $0.backgroundModes = [.fetch, .remoteNotification]
            configure(&$0)
        }
        try rig.perform(.launch())
        try rig.perform(.home)
        XCTAssertEqual(rig.app.state, .suspended)
        _ = rig.newLog()
        return rig
    }

    func perform(_ action: Action) throws { try app.perform(action) }

    var fullLog: [String] { fixture.log }

    /// The fixture's log lines since the last call.
    func newLog() -> [String] {
        let all = fixture.log
        defer { logSeen = all.count }
        return Array(all[logSeen...])
    }

    func runLoop(until condition: () -> Bool, timeout: Duration = .seconds(10)) throws {
        let deadline = MonotonicInstant.now + timeout
        while !condition(), MonotonicInstant.now < deadline {
            try loop.run(until: min(deadline, MonotonicInstant.now + .milliseconds(5)))
        }
    }
}

/// The delegate-function prototypes of include/lifecycle.h, as libffi signatures.
enum HeaderPrototypes {
    static func parse(_ header: URL) throws -> [String: FFIDelegates.Signature] {
        let text = try String(contentsOf: header, encoding: .utf8)
        guard let start = text.range(of: "#ifdef LC_DECLARE_DELEGATE_FUNCTIONS"),
              let end = text.range(of: "#endif", range: start.upperBound..<text.endIndex)
        else { throw FixtureError("no delegate-function section in \(header.path)") }
        var result: [String: FFIDelegates.Signature] = [:]
        // Comments out first: they may sit between declarations and hold semicolons.
        let code = text[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in line.range(of: "//").map { String(line[..<$0.lowerBound]) } ?? String(line) }.joined(separator: "\n")
        for declaration in code.split(separator: ";") {
            let flat = declaration.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            guard flat.hasPrefix("LC_EXPORT "), let open = flat.firstIndex(of: "(") else { continue }
            let head = flat[flat.index(flat.startIndex, offsetBy: 10)..<open].split(separator: " ")
            var name = String(head.last!)
            let returnType: FFIDelegates.CType
            if name.hasPrefix("*") {  // `const char *f(…)`: returns a pointer
                name.removeFirst()
                returnType = .pointer
            } else {
                returnType = try cType(String(head.dropLast().joined(separator: " ")))
            }
            // Arguments: split at commas outside nested parentheses (function-pointer parameters).
            var arguments: [String] = [], current = "", depth = 0
            for character in flat[flat.index(after: open)...] {
                if character == "(" { depth += 1 }
                if character == ")" {
                    if depth == 0 { break }
                    depth -= 1
                }
                if character == ",", depth == 0 {
                    arguments.append(current)
                    current = ""
                } else {
                    current.append(character)
                }
            }
            arguments.append(current)
            result[name] = FFIDelegates.Signature(returnType: returnType, argumentTypes: try arguments.map { try cType($0) })
        }
        return result
    }

    private static func cType(_ declaration: String) throws -> FFIDelegates.CType {
        if declaration.contains("*") { return .pointer }
        let type = declaration.split(separator: " ").first { $0 != "const" }.map(String.init) ?? ""
        switch type {
        case "void": return .void
        case "bool": return .bool
        case "uint32_t", "lc_fetch_result", "lc_state": return .uint32
        default: throw FixtureError("unknown C type in '\(declaration)'")
        }
    }
}
