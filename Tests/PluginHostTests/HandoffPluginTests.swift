import AppLifecycle
import CLifecycle
import CLifecycleABI
import Foundation
import Glibc
import TestSupport
import XCTest
@testable import LifecycleC
@testable import PluginHost

/// The application delegate's rows added after ABI 1.0 — `application:openURL:options:` (1.1), the
/// scene-session and Handoff methods (1.2) — as exported 1.0 symbols found with dlsym and called
/// through libffi, from a plugin loaded by the real loader and driven by the real engine
/// (Fixtures/handoff_fixture.c). Each function logs its receiver, the application's state and its
/// arguments (dictionaries read key by key through the host's typed getters); the tests assert the
/// exact calls between the notifications, their arguments, that the answers steer the engine as
/// docs/lifecycle.md says (decision 30: only the launch methods' answers change the Handoff sequence;
/// the first configuration names the session), and that the same rows in an `lc_plugin_delegate_t`
/// and an `lc_delegate_t` give the same calls in the same order.
final class HandoffPluginTests: XCTestCase {
    /// The three builds of the fixture, compiled once per test process.
    static let builds = Result { () throws -> [HandoffFixture: String] in
        let folder = try CBuild.temporaryFolder("handoff")
        return try Dictionary(uniqueKeysWithValues: HandoffFixture.allCases.map { ($0, try $0.build(in: folder)) })
    }

    let edit = UserActivity(activityType: "com.example.edit", title: "Draft", userInfo: ["doc": 7, "tags": ["a", "b"]])
    let editText = #"{activityType="com.example.edit" title="Draft" userInfo={doc=7 tags=["a","b"]}}"#
    let editJSON = #"{"activityType":"com.example.edit","title":"Draft","userInfo":{"doc":7,"tags":["a","b"]}}"#

    var editOptions: String { #"{"userActivityType":"com.example.edit","userActivityDictionary":\#(editJSON)}"# }

    /// A launch's first trace lines with the fixture as delegate `id`: the state, its
    /// willFinishLaunching, the notification with the launch options.
    func launched(_ id: String, options: String? = nil) -> [String] {
        ["state inactive", "delegate application:willFinishLaunchingWithOptions: [\(id)]",
         "notification didFinishLaunching" + (options.map { " (\($0))" } ?? "")]
    }

    /// The trace lines of becoming active (without scenes) with the fixture as delegate `id`.
    func becameActive(_ id: String) -> [String] {
        ["state active", "delegate applicationDidBecomeActive: [\(id)]", "notification didBecomeActive"]
    }

    // MARK: ABI 1.0: exported symbols through libffi

    func testExportedFunctionsAreBoundByTheLoaderAndNoSceneRows() throws {
        let rig = try HandoffRig(.exported)
        defer { rig.shutdown() }
        XCTAssertEqual(rig.plugin.implementedMethods, [
            .willFinishLaunching, .didBecomeActive, .willEnterForeground, .openURLWithOptions, .configurationForConnecting,
            .didDiscardSceneSessions, .willContinueUserActivity, .continueUserActivity, .didFailToContinueUserActivity,
            .didUpdateUserActivity,
        ])
        XCTAssertEqual(rig.plugin.implementedSceneMethods, [])
        XCTAssertEqual(rig.plugin.observedNames.map(\.rawValue),
                       ["didFinishLaunching", "didBecomeActive", "willResignActive", "didEnterBackground", "willEnterForeground"])
    }

    /// Handoff without scenes (decision 30): a launch by an activity, an update, a failure, an URL
    /// with options, Home, and a resume by an activity — each step's trace and the fixture's log.
    func testExportedHandoffFunctionsInOrderWithTheirArguments() throws {
        let rig = try HandoffRig(.exported)
        defer { rig.shutdown() }
        let id = rig.delegateID
        let steps = try Self.applicationScenario(rig, activity: edit)
        XCTAssertEqual(steps[0].trace, launched(id, options: editOptions) + [
            "delegate application:willContinueUserActivityWithType: [\(id)]",
            "delegate application:continueUserActivity:restorationHandler: [\(id)]",
        ] + becameActive(id))
        XCTAssertEqual(steps[0].log, [
            #"willFinishLaunching [ok] state=inactive options={userActivityType="com.example.edit" userActivityDictionary=\#(editText)} -> true"#,
            "note didFinishLaunching state=inactive",
            "willContinueUserActivity [ok] state=inactive type=com.example.edit -> true",
            "continueUserActivity [ok] state=inactive type=com.example.edit activity=\(editText) -> true",
            "applicationDidBecomeActive [ok] state=active",
            "note didBecomeActive state=active",
        ])
        // update-activity: the one call, the state unchanged; a title-less activity has no "title" key.
        XCTAssertEqual(steps[1].trace, ["delegate application:didUpdateUserActivity: [\(id)]"])
        XCTAssertEqual(steps[1].log, [#"didUpdateUserActivity [ok] state=active activity={activityType="com.example.edit" userInfo={doc=8}}"#])
        // A failure while active: willContinue, then didFail instead of continue.
        XCTAssertEqual(steps[2].trace, [
            "delegate application:willContinueUserActivityWithType: [\(id)]",
            "delegate application:didFailToContinueUserActivityWithType:error: [\(id)]",
        ])
        XCTAssertEqual(steps[2].log, [
            "willContinueUserActivity [ok] state=active type=com.example.mail -> true",
            "didFailToContinueUserActivity [ok] state=active type=com.example.mail error=the activity could not be fetched",
        ])
        XCTAssertEqual(steps[3].trace, ["delegate application:openURL:options: [\(id)]"])
        XCTAssertEqual(steps[3].log, [#"openURL:options: [ok] state=active url=x://doc/7 options={sourceApplication="com.example.src" annotation={k="v"}} -> true"#])
        XCTAssertEqual(steps[4].trace, [
            "notification willResignActive", "state inactive", "state background", "notification didEnterBackground", "state suspended",
        ])
        XCTAssertEqual(steps[4].log, ["note willResignActive state=active", "note didEnterBackground state=background"])
        // Suspended: brought to the foreground first, the two calls while inactive, then active.
        XCTAssertEqual(steps[5].trace, [
            "state background",
            "notification willEnterForeground",
            "delegate applicationWillEnterForeground: [\(id)]",
            "state inactive",
            "delegate application:willContinueUserActivityWithType: [\(id)]",
            "delegate application:continueUserActivity:restorationHandler: [\(id)]",
        ] + becameActive(id))
        XCTAssertEqual(steps[5].log, [
            "note willEnterForeground state=background",
            "applicationWillEnterForeground [ok] state=background",
            "willContinueUserActivity [ok] state=inactive type=com.example.read -> true",
            #"continueUserActivity [ok] state=inactive type=com.example.read activity={activityType="com.example.read" userInfo={}} -> true"#,
            "applicationDidBecomeActive [ok] state=active",
            "note didBecomeActive state=active",
        ])
        XCTAssertEqual(rig.handle.app.state, .active)
    }

    /// What the answers steer (docs/lifecycle.md, decision 30): a launch method answering false skips
    /// both Handoff calls of that launch, and only of that launch; the answers of willContinue and
    /// continue do not change the sequence. A failed continuation launches with the type only.
    func testTheAnswersSteerTheEngineAsDocumented() throws {
        // Both Handoff methods answering false: the same trace, the same calls, the same arguments.
        let yesSteps = try HandoffRig.run(.exported) { try Self.applicationScenario($0, activity: edit) }
        let no = try HandoffRig(.exported)
        defer { no.shutdown() }
        XCTAssertEqual(no.setAnswer("willContinueUserActivity", false), 0)
        XCTAssertEqual(no.setAnswer("continueUserActivity", false), 0)
        let noSteps = try Self.applicationScenario(no, activity: edit).map { $0.naming(no.delegateID) }
        XCTAssertEqual(noSteps.map(\.trace), yesSteps.map(\.trace))
        XCTAssertEqual(noSteps.flatMap(\.log).filter { $0.hasSuffix("-> false") }.count, 5, "three willContinue, two continue")
        XCTAssertEqual(noSteps.map { $0.log.map { $0.replacingOccurrences(of: "-> false", with: "-> true") } }, yesSteps.map(\.log))

        // willFinishLaunching answering false: the launch goes on, the continuation is skipped.
        no.perform(.terminate)
        _ = no.take()
        XCTAssertEqual(no.setAnswer("willFinishLaunching", false), 0)
        let id = no.delegateID
        let declined = try no.step(.continueUserActivity(edit))
        XCTAssertEqual(declined.trace, launched(id, options: editOptions) + [
            "skipped application:willContinueUserActivityWithType: (a launch method returned false)",
            "skipped application:continueUserActivity:restorationHandler: (a launch method returned false)",
        ] + becameActive(id))
        XCTAssertEqual(declined.log, [
            #"willFinishLaunching [ok] state=inactive options={userActivityType="com.example.edit" userActivityDictionary=\#(editText)} -> false"#,
            "note didFinishLaunching state=inactive",
            "applicationDidBecomeActive [ok] state=active",
            "note didBecomeActive state=active",
        ])
        // Running, the launch answer no longer matters.
        XCTAssertEqual(try no.step(.continueUserActivity(edit)).log, [
            "willContinueUserActivity [ok] state=active type=com.example.edit -> false",
            "continueUserActivity [ok] state=active type=com.example.edit activity=\(editText) -> false",
        ])

        // A failed continuation of a not-running application: launch options with the type only.
        no.perform(.terminate)
        _ = no.take()
        XCTAssertEqual(no.setAnswer("willFinishLaunching", true), 0)
        let failed = try no.step(.failToContinueUserActivity(type: "com.example.edit", error: "offline"))
        XCTAssertEqual(failed.trace, launched(id, options: #"{"userActivityType":"com.example.edit"}"#) + [
            "delegate application:willContinueUserActivityWithType: [\(id)]",
            "delegate application:didFailToContinueUserActivityWithType:error: [\(id)]",
        ] + becameActive(id))
        XCTAssertEqual(failed.log, [
            #"willFinishLaunching [ok] state=inactive options={userActivityType="com.example.edit"} -> true"#,
            "note didFinishLaunching state=inactive",
            "willContinueUserActivity [ok] state=inactive type=com.example.edit -> false",
            "didFailToContinueUserActivity [ok] state=inactive type=com.example.edit error=offline",
            "applicationDidBecomeActive [ok] state=active",
            "note didBecomeActive state=active",
        ])
        XCTAssertEqual(no.setAnswer("noSuchMethod", true), -1)
    }

    /// A scene-based application: the configuration is asked with the connection options (the
    /// activity that connects the scene) and its answer names the session; discarded sessions come as
    /// a dictionary; the application's Handoff and openURL functions are never called (the scenes'
    /// delegates are told instead).
    func testExportedSceneSessionFunctionsAndNoApplicationHandoffWithScenes() throws {
        let rig = try HandoffRig(.exported, scenes: true)
        defer { rig.shutdown() }
        let id = rig.delegateID
        let steps = try Self.sceneScenario(rig, activity: edit)
        // A scene-based application launches in the background and leaves it with its scene.
        XCTAssertEqual(steps[0].trace, ["state background"] + launched(id).dropFirst() + [
            "delegate application:configurationForConnectingSceneSession:options: [\(id)] {editor}",
            "notification sceneWillConnect {editor}",
            "notification sceneWillEnterForeground {editor}",
            "notification willEnterForeground",
            "scene-state foreground-inactive {editor}",
            "state inactive",
            "scene-state foreground-active {editor}",
            "state active",
            "notification sceneDidActivate {editor}",
            "notification didBecomeActive",
        ])
        XCTAssertEqual(steps[0].log, [
            "willFinishLaunching [ok] state=background options={} -> true",
            "note didFinishLaunching state=background",
            "configurationForConnecting [ok] state=background session=editor options={userActivities=[\(editText)]} -> Editor",
            "note willEnterForeground state=background",
            "note didBecomeActive state=active",
        ])
        XCTAssertEqual(steps[1].log, [], "update-activity goes to the scene's delegates")
        XCTAssertEqual(steps[2].log, [], "a failed continuation goes to the scene's delegates")
        XCTAssertEqual(steps[3].log, [], "open-url goes to the scene's delegates")
        XCTAssertEqual(steps[1...3].flatMap(\.trace).filter { $0.hasPrefix("delegate") }, [])
        XCTAssertEqual(steps[4].trace, [
            "delegate application:configurationForConnectingSceneSession:options: [\(id)] {side}",
            "notification sceneWillConnect {side}",
            "notification sceneWillEnterForeground {side}",
            "scene-state foreground-inactive {side}",
            "scene-state foreground-active {side}",
            "notification sceneDidActivate {side}",
        ])
        XCTAssertEqual(steps[4].log, ["configurationForConnecting [ok] state=active session=side options={} -> NULL"])
        XCTAssertEqual(steps[5].trace.filter { $0.hasPrefix("delegate") }, ["delegate application:didDiscardSceneSessions: [\(id)] {side}"])
        XCTAssertEqual(steps[5].log, [#"didDiscardSceneSessions [ok] state=active sessions={side="Default Configuration"}"#])
        XCTAssertEqual(rig.handle.app.sceneSessions.map(\.persistentIdentifier), ["editor"])
        XCTAssertEqual(rig.handle.app.sceneSessions.map(\.configurationName), ["Editor"], "the answer names the session")
    }

    // MARK: The same rows through the tables

    /// The three ways C implements these rows — exported symbols (1.0), `lc_plugin_delegate_t` (1.1
    /// with its 1.2 fields) and `lc_delegate_t` — give the same calls, arguments and answers in the
    /// same order, with and without scenes. `lc_delegate_t` has no `open_url_with_options` field: on
    /// that path the URL reaches no function of the fixture.
    func testExportedSymbolsAndBothTablesGiveTheSameCallsInTheSameOrder() throws {
        var runs: [HandoffFixture: (application: [HandoffRig.Step], scenes: [HandoffRig.Step])] = [:]
        for fixture in HandoffFixture.allCases {
            let application = try HandoffRig.run(fixture) { try Self.applicationScenario($0, activity: edit) }
            let scenes = try HandoffRig.run(fixture, scenes: true) { try Self.sceneScenario($0, activity: edit) }
            runs[fixture] = (application, scenes)
        }
        let exported = try XCTUnwrap(runs[.exported]), table = try XCTUnwrap(runs[.table]), delegate = try XCTUnwrap(runs[.delegateStruct])
        XCTAssertEqual(exported.application.flatMap(\.log).count, 18, "the exported run made its calls")
        XCTAssertEqual(table.application, exported.application)
        XCTAssertEqual(table.scenes, exported.scenes)
        let openURL = 3  // the step of applicationScenario that opens an URL
        for (index, (got, want)) in zip(delegate.application, exported.application).enumerated() where index != openURL {
            XCTAssertEqual(got, want, "step \(index)")
        }
        XCTAssertEqual(delegate.application[openURL], HandoffRig.Step(trace: [], log: []))
        XCTAssertEqual(delegate.scenes, exported.scenes)
    }

    // MARK: Scenarios

    /// Without scenes: continue (launching), update, fail (active), open-url, Home, continue (resuming).
    static func applicationScenario(_ rig: HandoffRig, activity: UserActivity) throws -> [HandoffRig.Step] {
        [
            try rig.step(.continueUserActivity(activity)),
            try rig.step(.updateUserActivity(UserActivity(activityType: "com.example.edit", userInfo: ["doc": 8]))),
            try rig.step(.failToContinueUserActivity(type: "com.example.mail", error: "the activity could not be fetched")),
            try rig.step(.openURL("x://doc/7", sourceApplication: "com.example.src", annotation: ["k": "v"])),
            try rig.step(.home),
            try rig.step(.continueUserActivity(UserActivity(activityType: "com.example.read"))),
        ]
    }

    /// With scenes: continue into scene `editor` (launching; configuration "Editor"), update, fail and
    /// open-url there, connect `side` (configuration NULL), disconnect and discard it.
    static func sceneScenario(_ rig: HandoffRig, activity: UserActivity) throws -> [HandoffRig.Step] {
        rig.setConfiguration("Editor")
        let launch = try rig.step(.continueUserActivity(activity, scene: "editor"))
        rig.setConfiguration(nil)
        return [
            launch,
            try rig.step(.updateUserActivity(UserActivity(activityType: "com.example.edit", userInfo: ["doc": 8]), scene: "editor")),
            try rig.step(.failToContinueUserActivity(type: "com.example.mail", error: "offline", scene: "editor")),
            try rig.step(.openURL("x://doc/7", sourceApplication: "com.example.src", scene: "editor")),
            try rig.step(.connectScene("side")),
            try rig.step {
                try $0.perform(.moveSceneToBackground("side"))
                try $0.perform(.disconnectScene("side"))
                try $0.perform(.discardSceneSession("side"))
            },
        ]
    }
}

/// One application (scene-based or not) with one build of the handoff fixture loaded by the real
/// loader (for `lc_delegate_t`, also added with `lc_app_add_delegate`); its trace and the fixture's log.
///
/// The fixture keeps its log and answers in the image, which the loader never unloads: shut a rig
/// down before making the next of the same build.
final class HandoffRig {
    /// What one action did: the trace (every event but the action) and the fixture's log lines.
    struct Step: Equatable {
        var trace: [String]
        var log: [String]

        /// The trace with delegate `id` written `[delegate]`, to compare runs under different ids.
        func naming(_ id: String) -> Step {
            Step(trace: trace.map { $0.replacingOccurrences(of: "[\(id)]", with: "[delegate]") }, log: log)
        }
    }

    let fixture: HandoffFixture
    let handle: AppHandle
    let plugin: LoadedPlugin
    /// The id the delegate calls are traced under.
    let delegateID: String
    private let image: UnsafeMutableRawPointer
    private var trace: [String] = []
    private var logSeen = 0

    init(_ fixture: HandoffFixture, scenes: Bool = false) throws {
        let path = try XCTUnwrap(try HandoffPluginTests.builds.get()[fixture])
        var configuration = Configuration()
        if scenes { configuration.sceneManifest = SceneManifest() }
        configuration.watchdogPolicy = .report
        self.fixture = fixture
        handle = try AppHandle(configuration: configuration)
        plugin = try handle.loadPlugin(path: path)
        image = try XCTUnwrap(dlopen(path, RTLD_NOW | RTLD_NOLOAD))
        delegateID = fixture == .delegateStruct ? "com.example.handoff.delegate" : fixture.id
        function("handoff_reset", (@convention(c) () -> Void).self)()
        function("handoff_expect_app", (@convention(c) (OpaquePointer?) -> Void).self)(handle.opaque)
        if fixture == .delegateStruct {
            var d = lc_delegate_t()
            function("handoff_fill_delegate", (@convention(c) (UnsafeMutablePointer<lc_delegate_t>) -> Void).self)(&d)
            XCTAssertEqual(handle.addDelegate(id: delegateID, &d), lc_status(LC_OK), String(cString: lc_last_error_message()))
            XCTAssertEqual(plugin.implementedMethods, [], "this build exports no delegate function")
        }
        handle.swiftTraceHandler = { [unowned self] event in
            if event.kind != .action { self.trace.append(event.description) }
        }
    }

    func shutdown() { handle.shutdown() }

    /// `body`'s steps on a new rig, shut down after, the delegate's id written `[delegate]` in the
    /// trace (to compare runs under different ids).
    static func run(_ fixture: HandoffFixture, scenes: Bool = false, _ body: (HandoffRig) throws -> [Step]) throws -> [Step] {
        let rig = try HandoffRig(fixture, scenes: scenes)
        defer { rig.shutdown() }
        return try body(rig).map { $0.naming(rig.delegateID) }
    }

    private func function<F>(_ name: String, _ type: F.Type) -> F {
        guard let address = dlsym(image, name) else { preconditionFailure("the fixture exports no \(name)") }
        return unsafeBitCast(address, to: type)
    }

    func setAnswer(_ method: String, _ value: Bool) -> Int32 {
        function("handoff_set_answer", (@convention(c) (UnsafePointer<CChar>, Bool) -> Int32).self)(method, value)
    }

    func setConfiguration(_ name: String?) {
        let set = function("handoff_set_configuration", (@convention(c) (UnsafePointer<CChar>?) -> Void).self)
        if let name { name.withCString { set($0) } } else { set(nil) }
    }

    /// Performs an action whose trace and log are not looked at.
    func perform(_ action: Action) {
        XCTAssertNoThrow(try handle.app.perform(action))
    }

    /// The trace and the log since the last call.
    func take() -> Step {
        let all = String(cString: function("handoff_log", (@convention(c) () -> UnsafePointer<CChar>).self)())
            .split(separator: "\n").map(String.init)
        defer { trace = []; logSeen = all.count }
        return Step(trace: trace, log: Array(all[logSeen...]))
    }

    func step(_ action: Action) throws -> Step { try step { try $0.perform(action) } }

    func step(_ body: (Application) throws -> Void) throws -> Step {
        _ = take()
        try body(handle.app)
        return take()
    }
}
