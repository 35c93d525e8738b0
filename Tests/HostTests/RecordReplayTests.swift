import Foundation
import HostInput
import TestSupport
import XCTest

/// `lifecycle-host run --record FILE` and `lifecycle-host replay FILE` (docs/recording.md): an
/// interactive run with control-socket requests, signals, typed lines and a plugin's own thread
/// posting, queuing work and ending its background task, replayed to the same trace — every line and
/// every time — and the same exit status, in the host's process and `--isolate`d; a new build of the
/// plugin replayed against it shows where it parts; a changed, truncated, damaged or foreign file is
/// refused with its reason.
final class RecordReplayTests: XCTestCase {
    /// On didEnterBackground: a background task, and a thread of the plugin's that posts three times,
    /// queues work (which posts), then ends the task. Each notification begins and ends a task named
    /// after it (`WORD N`), so that it shows in the trace.
    static func source(word: String, posts: Int = 3) -> String {
        #"""
        #include "lifecycle.h"
        #include <pthread.h>
        #include <stdio.h>
        #include <unistd.h>
        static const lc_host_api_t *host;
        static lc_plugin *me;
        static lc_task_id flush;
        static int seen;
        static void mark(const char *what) {
            char name[64];
            lc_task_id task;
            snprintf(name, sizeof name, "%s %d", what, ++seen);
            if (host->begin_background_task(me, name, NULL, NULL, &task) == LC_OK) host->end_background_task(me, task);
        }
        static void flushed(const lc_notification_t *note, void *ctx) { (void)note, (void)ctx; mark("\#(word)"); }
        static void worked(const lc_notification_t *note, void *ctx) { (void)note, (void)ctx; mark("work"); }
        static void work(void *ctx) { (void)ctx; host->post(me, "com.example.worked", NULL, NULL); }
        static void *flusher(void *arg) {
            (void)arg;
            for (int i = 0; i < \#(posts); i++) {
                usleep(20000);
                host->post(me, "com.example.flushed", NULL, NULL);
            }
            host->perform_async(me, work, NULL);
            usleep(20000);
            host->end_background_task(me, flush);
            return NULL;
        }
        static void entered(const lc_notification_t *note, void *ctx) {
            (void)note, (void)ctx;
            pthread_t thread;
            if (host->begin_background_task(me, "flush", NULL, NULL, &flush) != LC_OK) return;
            if (pthread_create(&thread, NULL, flusher, NULL) == 0) pthread_detach(thread);
        }
        static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
            (void)state; host = api; me = plugin;
            lc_status status = api->observe(plugin, "didEnterBackground", NULL, entered, NULL, NULL);
            if (status == LC_OK) status = api->observe(plugin, "com.example.flushed", NULL, flushed, NULL, NULL);
            return status != LC_OK ? status : api->observe(plugin, "com.example.worked", NULL, worked, NULL, NULL);
        }
        """# + "\n" + IsolationFixtures.descriptorSource("com.example.flusher")
    }

    /// The recorded run: the socket sends `home` (the thread's posts follow, then the suspension),
    /// then `foreground`; SIGUSR1, a typed `memory-warning`, and SIGTERM. - Returns: the recording, the run's
    /// JSON trace records and its status.
    private func record(_ plugin: String, _ extra: [String], in folder: String) throws -> (recording: String, trace: [[String: Any]], status: Int32) {
        let recording = folder + "/run.recording", socket = folder + "/host.sock"
        let host = try RunningProcess(HostEndToEndTests.host, ["run", "--trace", "json", "--interactive", "--socket", socket, "--no-pressure",
                                                               "--no-clock", "--plugin", plugin, "--record", recording] + extra)
        XCTAssertNotNil(host.waitForLine { $0.contains("\"name\":\"didBecomeActive\"") }, host.standardError)
        XCTAssertEqual(try CBuild.run(HostEndToEndTests.host, ["send", "--socket", socket, "home"]).output, "ok background\n")
        XCTAssertNotNil(host.waitForLine { $0.contains("\"name\":\"suspended\"") }, host.output.joined(separator: "\n"))
        XCTAssertEqual(try CBuild.run(HostEndToEndTests.host, ["send", "--socket", socket, "foreground"]).output, "ok active\n")
        host.signal(SIGUSR1)
        XCTAssertNotNil(host.waitForLine { $0.contains("\"name\":\"didReceiveMemoryWarning\"") })
        let count = host.output.count
        host.send("memory-warning")
        XCTAssertNotNil(host.waitForLine(after: count) { $0.contains("\"name\":\"didReceiveMemoryWarning\"") })
        usleep(200_000)
        host.signal(SIGTERM)
        let status = host.wait()
        let trace = host.output.compactMap { line -> [String: Any]? in
            guard line.hasPrefix("{") else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
        return (recording, trace, status)
    }

    /// A JSON trace record as the comparison reads it: time, state, kind, name, plugin, detail, scene
    /// (not `seq`: the socket's line is in the recorded run's trace only).
    static func key(_ record: [String: Any]) -> String {
        ["t", "state", "kind", "name", "plugin", "detail", "scene"].map { "\(record[$0] ?? "-")" }.joined(separator: " | ")
    }

    static func json(_ output: String) -> [[String: Any]] {
        output.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("{") else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
    }

    func testARecordedInteractiveRunReplaysToTheSameTraceAndStatusInProcessAndIsolated() throws {
        let plugin = try IsolationFixtures.build(Self.source(word: "flushed"), named: "flusher")
        for isolate in [[], ["--isolate"]] {
            let folder = try CBuild.temporaryFolder("record")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let recorded = try record(plugin, isolate, in: folder)
            XCTAssertEqual(recorded.status, 0, "\(isolate)")
            let recordedTrace = recorded.trace.filter { $0["kind"] as? String != "socket" }.map(Self.key)
            // What the run received is in it: the thread's three posts and its work, in order.
            let marks = recorded.trace.filter { ($0["kind"] as? String) == "background-task" && ($0["name"] as? String) == "begin" }
                .compactMap { $0["detail"] as? String }
            // In the host's process the work runs after the posts it follows; isolated, the work may
            // run in the plugin's process before the third post has come back from the host as a
            // notification (each task named after its place among them). Every one arrives, and the
            // terminate's didEnterBackground begins a last flush.
            if isolate.isEmpty {
                XCTAssertEqual(marks, ["#1 flush", "#2 flushed 1", "#3 flushed 2", "#4 flushed 3", "#5 work 4", "#6 flush"])
            } else {
                XCTAssertEqual(marks.map { $0.split(separator: " ")[1] }.sorted(), ["flush", "flush", "flushed", "flushed", "flushed", "work"],
                               "\(marks)")
            }
            XCTAssertEqual(recorded.trace.filter { ($0["kind"] as? String) == "input" }.compactMap { $0["detail"] as? String },
                           ["socket", "socket", "signal SIGUSR1", "stdin", "signal SIGTERM"], "\(isolate)")

            // The recording holds each input with what came with it: the signals' sender (this process).
            let entries = try Recording.read(path: recorded.recording).entries
            let signals = entries.compactMap { entry -> RecordedOSOrigin? in if case .os(_, let origin) = entry { origin } else { nil } }
            XCTAssertEqual(signals, [.signal(SIGUSR1, sender: getpid()), .signal(SIGTERM, sender: getpid())], "\(isolate)")
            XCTAssertEqual(entries.filter { if case .typed = $0 { true } else { false } }, [.typed("memory-warning")])
            XCTAssertEqual(entries.compactMap { if case .socket(let request, let response) = $0 { "\(request) → \(response)" } else { nil } },
                           ["send home → ok background", "send foreground → ok active"])

            let replay = try CBuild.run(HostEndToEndTests.host, ["replay", recorded.recording, "--trace", "json"])
            XCTAssertEqual(replay.status, 0, "\(isolate) " + replay.output)
            XCTAssertEqual(Self.json(replay.output).map(Self.key), recordedTrace, "\(isolate): the replay's trace is the recorded run's")
            XCTAssertGreaterThan(recordedTrace.count, 40)

            // --diff says so when nothing parts.
            let diff = try CBuild.run(HostEndToEndTests.host, ["replay", recorded.recording, "--diff"])
            XCTAssertEqual(diff.status, 0, diff.output)
            XCTAssertEqual(diff.output.split(separator: "\n").last.map(String.init),
                           "replay \(recorded.recording): the replay's trace matches the recording's, \(recordedTrace.count) lines")
        }
    }

    /// A new build that names its marks differently, replayed with `--plugin`: exit 10, and `--diff`
    /// shows the first line where the traces part, with the recording's lines before it.
    func testANewBuildReplayedAgainstARecordingShowsWhereItParts() throws {
        let folder = try CBuild.temporaryFolder("record-diff")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plugin = try IsolationFixtures.build(Self.source(word: "flushed"), named: "flusher")
        let newBuild = try IsolationFixtures.build(Self.source(word: "handled"), named: "flusher")
        let recorded = try record(plugin, [], in: folder)
        XCTAssertEqual(recorded.status, 0)
        let first = try XCTUnwrap(recorded.trace.firstIndex { ($0["detail"] as? String) == "#2 flushed 1" })
        let line = recorded.trace[first]

        let summary = try CBuild.run(HostEndToEndTests.host, mergingStandardError: true, ["replay", recorded.recording, "--plugin", newBuild])
        XCTAssertEqual(summary.status, 10, summary.output)
        let time = String(format: "%.6f", line["t"] as! Double)
        let recordedText = "\(time) background background-task begin com.example.flusher #2 flushed 1"
        let replayedText = "\(time) background background-task begin com.example.flusher #2 handled 1"
        XCTAssertTrue(summary.output.contains("lifecycle-host replay: \(newBuild) (sha256 "), summary.output)
        XCTAssertTrue(summary.output.contains("replay \(recorded.recording): the traces part at the recording's trace line "), summary.output)
        XCTAssertTrue(summary.output.contains("recorded '\(recordedText)', replayed '\(replayedText)'"), summary.output)

        let diff = try CBuild.run(HostEndToEndTests.host, ["replay", recorded.recording, "--plugin", newBuild, "--diff"])
        XCTAssertEqual(diff.status, 10, diff.output)
        let lines = diff.output.split(separator: "\n").map(String.init)
        let minus = try XCTUnwrap(lines.firstIndex(of: "- " + recordedText), diff.output)
        XCTAssertEqual(lines[minus + 1], "+ " + replayedText)
        XCTAssertTrue(lines[minus - 1].hasPrefix("= "), diff.output)
        XCTAssertTrue(lines[minus - 1].hasSuffix("#1 flush"), "the line before: the flush task's begin\n" + diff.output)
    }

    /// A recorded plugin file that changed is refused with both hashes, unless `--allow-changed`; a
    /// truncated, damaged or newer-format recording is refused with its reason.
    func testAChangedPluginATruncatedOrDamagedRecordingIsRefusedWithItsReason() throws {
        let folder = try CBuild.temporaryFolder("record-refusals")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let built = try IsolationFixtures.build(Self.source(word: "flushed"), named: "flusher")
        let plugin = folder + "/flusher.so"
        try FileManager.default.copyItem(atPath: built, toPath: plugin)
        let recorded = try record(plugin, [], in: folder)
        XCTAssertEqual(recorded.status, 0)
        let before = try PluginFileIdentity.of(path: plugin)

        try FileManager.default.removeItem(atPath: plugin)
        try FileManager.default.copyItem(atPath: try IsolationFixtures.build(Self.source(word: "handled"), named: "flusher"), toPath: plugin)
        let after = try PluginFileIdentity.of(path: plugin)
        let refused = try CBuild.run(HostEndToEndTests.host, mergingStandardError: true, ["replay", recorded.recording])
        XCTAssertEqual(refused.status, 1)
        let change = "the plugin file \(plugin) has changed since it was recorded: recorded sha256 \(before.sha256)"
            + (before.buildID.map { " (build-id \($0))" } ?? "") + ", now sha256 \(after.sha256)" + (after.buildID.map { " (build-id \($0))" } ?? "")
        XCTAssertEqual(refused.output, "lifecycle-host replay: \(change); --allow-changed replays it anyway, --plugin FILE replays a new build on purpose\n")
        let allowed = try CBuild.run(HostEndToEndTests.host, mergingStandardError: true, ["replay", recorded.recording, "--allow-changed", "--trace-output", "/dev/null"])
        XCTAssertEqual(allowed.status, 10, allowed.output)
        XCTAssertTrue(allowed.output.hasPrefix("lifecycle-host replay: \(change); replayed anyway (--allow-changed)\n"), allowed.output)

        let bytes = try Data(contentsOf: URL(fileURLWithPath: recorded.recording))
        let truncated = folder + "/truncated.recording", damaged = folder + "/damaged.recording", newer = folder + "/newer.recording"
        try bytes.prefix(bytes.count - 10).write(to: URL(fileURLWithPath: truncated))
        var flipped = bytes
        let middle = flipped.count / 2
        flipped[middle] = flipped[middle] == UInt8(ascii: "a") ? UInt8(ascii: "b") : UInt8(ascii: "a")
        try flipped.write(to: URL(fileURLWithPath: damaged))
        try ("lifecycle-recording\t2\n".data(using: .utf8)! + bytes.drop { $0 != 10 }.dropFirst()).write(to: URL(fileURLWithPath: newer))
        for (file, reason) in [(truncated, RecordingError.Cause.truncated(lines: 0)), (damaged, .checksumMismatch),
                               (newer, .unsupportedVersion(found: "2"))] {
            var expected: RecordingError?
            do { _ = try Recording.read(path: file) } catch { expected = error }
            let error = try XCTUnwrap(expected, file)
            if case .truncated = reason {
                guard case .truncated = error.cause else { return XCTFail("\(file): \(error.cause)") }
            } else if case .checksumMismatch = reason {
                // A flipped byte may break a line's syntax first: damaged either way.
                switch error.cause {
                case .checksumMismatch, .damaged: break
                default: XCTFail("\(file): \(error.cause)")
                }
            } else {
                XCTAssertEqual(error.cause, reason)
            }
            let run = try CBuild.run(HostEndToEndTests.host, mergingStandardError: true, ["replay", file])
            XCTAssertEqual(run.status, 1, run.output)
            XCTAssertEqual(run.output, "lifecycle-host replay: \(error.message)\n")
        }
    }

    func testRecordIsRefusedWithTheVirtualClockAndWithWatch() throws {
        for (option, words) in [(["--clock", "virtual"], "it cannot be used with --clock virtual"), (["--watch"], "cannot be used with --watch")] {
            let run = try CBuild.run(HostEndToEndTests.host, mergingStandardError: true, ["run", "--record", "/tmp/never.recording"] + option)
            XCTAssertEqual(run.status, 64, run.output)
            XCTAssertTrue(run.output.contains(words), run.output)
            XCTAssertFalse(FileManager.default.fileExists(atPath: "/tmp/never.recording"))
        }
    }
}
