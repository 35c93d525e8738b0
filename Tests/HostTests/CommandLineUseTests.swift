import Foundation
import HostInput
import AppLifecycle
import TestSupport
import XCTest

/// The command line as a person at the terminal meets it (issue 11, "a command line without
/// surprises"): the built `lifecycle-host`, real plugins, real processes. Each test is one thing
/// that got in a new user's way.
final class CommandLineUseTests: XCTestCase {
    let host = HostEndToEndTests.host
    let recorder = HostEndToEndTests.recorder

    /// Standard output and standard error of a `CBuild.run` result.
    private func split(_ output: String) -> (out: String, err: String) {
        let parts = output.components(separatedBy: "--stderr--\n")
        return (parts[0], parts.count > 1 ? parts[1] : "")
    }

    private func writeScenario(_ text: String, in folder: String, name: String = "s.scenario") throws -> String {
        let path = folder + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Every line of `text` is a JSON object; returns them.
    private func jsonLines(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { row in
            guard let object = try? JSONSerialization.jsonObject(with: Data(row.utf8)) as? [String: Any] else {
                XCTFail("not a JSON object: \(row)", file: file, line: line)
                return nil
            }
            return object
        }
    }

    // MARK: --version

    /// `--version` prints the host's version, the C ABI and the library with its path, read from the header the
    /// installed library is versioned by (the Makefile's VERSION is MAJOR.MINOR.0 of the same two
    /// numbers), exits 0 and does nothing else, alone or after a command.
    func testVersionNamesTheHostTheABIAndTheLibrary() throws {
        let header = try String(contentsOfFile: CBuild.root + "/include/lifecycle.h", encoding: .utf8)
        func define(_ name: String) throws -> String {
            let line = try XCTUnwrap(header.split(separator: "\n").first { $0.hasPrefix("#define \(name) ") })
            return String(line.split(separator: " ")[2])
        }
        let (major, minor) = (try define("LC_ABI_VERSION_MAJOR"), try define("LC_ABI_VERSION_MINOR"))
        let expected = """
            lifecycle-host \(major).\(minor).0
            C ABI \(major).\(minor) (include/lifecycle.h): loads plugins built for ABI \(major).0 to \(major).\(minor)
            library: liblifecycle \(major).\(minor).0, built into \(URL(fileURLWithPath: host).resolvingSymlinksInPath().path)
            plugin runner: \(URL(fileURLWithPath: host).resolvingSymlinksInPath().deletingLastPathComponent().path)/lifecycle-plugin-runner

            """
        for words in [["--version"], ["run", "--version"], ["demo", "--version"]] {
            // The runner beside the host, whatever the caller's environment names (empty is unset).
            let result = try CBuild.run(host, words, environment: ["LC_PLUGIN_RUNNER": ""])
            XCTAssertEqual(result.status, 0, "\(words)")
            XCTAssertEqual(result.output, expected, "\(words)")
        }
        let make = try CBuild.run("/bin/sh", ["-c", "make -s -C '\(CBuild.root)' print-version 2>/dev/null || echo no-make"])
        if make.output != "no-make\n" { XCTAssertEqual(make.output, "\(major).\(minor).0\n", "the Makefile's VERSION") }
    }

    // MARK: Shell completions

    /// bash completes the values of options, not only their names: files for --plugin (.so and folders),
    /// --script and validate's plugin, folders for --plugin-dir, the fixed words of --trace, --watchdog,
    /// --background-mode and --restart, and send's actions — through the functions of the script
    /// `--generate-completion-script bash` prints (what `make install` installs), as bash calls them.
    func testBashCompletesOptionValuesAndSendsActions() throws {
        let bash = try RequiredTool.path("bash", package: "bash", for: "to run the bash completion functions")
        let folder = try CBuild.temporaryFolder("completion")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: false)
        for file in ["a.so", "b.txt", "c.so"] { _ = FileManager.default.createFile(atPath: folder + "/" + file, contents: nil) }
        let script = try CBuild.run(host, ["--generate-completion-script", "bash"])
        XCTAssertEqual(script.status, 0)
        try script.output.write(toFile: folder + "/sub/lifecycle-host.bash", atomically: true, encoding: .utf8)
        let lines = [
            "lifecycle-host run --trace ", "lifecycle-host run --plugin \(folder)/", "lifecycle-host run --plugin-dir \(folder)/",
            "lifecycle-host run --watchdog r", "lifecycle-host run --background-mode ", "lifecycle-host run --restart ",
            "lifecycle-host run --script \(folder)/", "lifecycle-host validate \(folder)/", "lifecycle-host check \(folder)/",
            "lifecycle-host send ", "lifecycle-host send memory", "lifecycle-host demo --timeline \(folder)/",
        ]
        let driver = """
            source "$1"; shift
            for line in "$@"; do
                COMP_LINE="$line"; read -ra COMP_WORDS <<< "$line"; [[ "$line" == *" " ]] && COMP_WORDS+=("")
                COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_POINT=${#COMP_LINE}; COMPREPLY=()
                _lifecycle-host lifecycle-host "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
                printf "%s\\n" "${COMPREPLY[@]}" | sort -u | tr "\\n" " "; echo
            done
            """
        let result = try CBuild.run(bash, ["-c", driver, "bash", folder + "/sub/lifecycle-host.bash"] + lines)
        XCTAssertEqual(result.status, 0, result.output)
        let actions = ScenarioParser.commands.filter { $0 != "wait" }.sorted().joined(separator: " ")
        XCTAssertEqual(result.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init), [
            "json text ",
            "\(folder)/a.so \(folder)/c.so \(folder)/sub ",
            "\(folder)/sub ",
            "report ",
            Configuration.BackgroundModes.allNames.sorted().joined(separator: " ") + " ",
            "never on-failure on-failure: ",
            "\(folder)/a.so \(folder)/b.txt \(folder)/c.so \(folder)/sub ",
            "\(folder)/a.so \(folder)/c.so \(folder)/sub ",
            "\(folder)/a.so \(folder)/c.so \(folder)/sub ",
            actions + " ",
            "memory-warning ",
            "\(folder)/sub ",
            "",
        ])
    }

    // MARK: --help, always local

    /// `--help` on every subcommand prints that subcommand's help, exits 0, and does nothing else:
    /// `send --help` neither connects (no host is needed) nor sends `--help` as an action to a host
    /// that listens; `run --help` and `demo --help` run nothing.
    func testHelpOnEverySubcommandIsLocal() throws {
        let folder = try CBuild.temporaryFolder("help")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // No host anywhere: the default socket would be in this empty folder.
        let nobody = ["XDG_RUNTIME_DIR": folder]
        for command in ["run", "demo", "check", "send", "status"] {
            let result = try CBuild.run(host, [command, "--help"], environment: nobody)
            XCTAssertEqual(result.status, 0, "\(command): \(result.output)")
            XCTAssertTrue(result.output.hasPrefix("OVERVIEW: "), "\(command): \(result.output)")
            XCTAssertTrue(result.output.contains("USAGE: lifecycle-host \(command)"), "\(command): \(result.output)")
            XCTAssertFalse(result.output.contains("--stderr--"), "\(command): nothing on standard error: \(result.output)")
            XCTAssertEqual(try CBuild.run(host, ["help", command], environment: nobody).output, result.output, "help \(command)")
        }
        // `-h`, and --help anywhere among send's words before a `--`.
        let sendHelp = try CBuild.run(host, ["send", "--help"], environment: nobody).output
        // Words, not the wrapping (which moves as verbs are added).
        XCTAssertTrue(sendHelp.split(whereSeparator: \.isWhitespace).joined(separator: " ").contains("'wait' is for scenario files only"), sendHelp)
        for words in [["send", "-h"], ["send", "home", "--help"], ["send", "post", "com.example.x", "n=1", "-h"]] {
            let result = try CBuild.run(host, words, environment: nobody)
            XCTAssertEqual(result.status, 0, "\(words)")
            XCTAssertEqual(result.output, sendHelp, "\(words)")
        }

        // With a host listening: the help is printed, nothing reaches the host.
        let (process, socket) = try startHostWithSocket(in: folder)
        for words in [["send", "--socket", socket, "--help"], ["send", "home", "--socket", socket, "--help"], ["status", "--socket", socket, "--help"]] {
            let result = try CBuild.run(host, words)
            XCTAssertEqual(result.status, 0, "\(words)")
            XCTAssertTrue(result.output.hasPrefix("OVERVIEW: "), "\(words): \(result.output)")
        }
        let status = try CBuild.run(host, ["status", "--socket", socket])
        XCTAssertTrue(status.output.hasPrefix("{\"state\":\"active\""), status.output)
        XCTAssertEqual(try CBuild.run(host, ["send", "--socket", socket, "terminate"]).output, "ok not-running\n")
        XCTAssertEqual(process.wait(), 0)
        let fromSocket = process.output.filter { $0.contains("\"detail\":\"socket\"") }
        XCTAssertEqual(fromSocket.count, 1, "only the terminate came from the socket: \(fromSocket)")
        XCTAssertTrue(fromSocket.first?.contains("\"kind\":\"input\",\"name\":\"terminate\"") == true, "\(fromSocket)")
    }

    /// A bare `send` says what is missing and shows send's whole help (its usage and the actions),
    /// with the usage status, instead of trying anything.
    func testABareSendPrintsItsUsage() throws {
        let result = try CBuild.run(host, ["send"], environment: ["XDG_RUNTIME_DIR": try CBuild.temporaryFolder("bare-send")])
        XCTAssertEqual(result.status, 64)
        let (out, err) = split(result.output)
        XCTAssertEqual(out, "")
        XCTAssertTrue(err.hasPrefix("Error: send needs an action, e.g. 'lifecycle-host send home'\n\nOVERVIEW: Send an action"), err)
        XCTAssertTrue(err.contains("USAGE: lifecycle-host send"), err)
        XCTAssertTrue(err.contains("memory-warning, time-change"), "the actions are listed: \(err)")
    }

    // MARK: Usage errors

    /// Every bad command line exits 64 (docs/host.md) with `Error: …` first on standard error, and a
    /// mistyped command, option value, budget or mode gets the closest name. A failure that is not the
    /// command line's (a trace file that cannot be made) exits 1.
    func testEveryUsageErrorExits64WithASuggestionWhereOneIsClose() throws {
        let cases: [([String], String)] = [
            // (The list of commands grows with the commands: only its start is fixed.)
            (["rn"], "Error: unknown command 'rn' (did you mean 'run'?); the commands: run, demo, check, validate, replay, send, status, help\n"),
            (["stauts"], "Error: unknown command 'stauts' (did you mean 'status'?); the commands: run, demo, check, validate, replay, send, status, help\n"),
            (["x"], "Error: unknown command 'x'; the commands: run, "),
            (["run", "--scrip", "x"], "Error: Unknown option '--scrip'. Did you mean '--script'?\n"),
            (["run", "--trace", "jsn"], "Error: --trace must be text or json, not 'jsn' (did you mean 'json'?)\nUsage: lifecycle-host run <options>\n"),
            (["run", "--watchdog", "reprt"], "Error: --watchdog must be terminate or report, not 'reprt' (did you mean 'report'?)\n"),
            (["run", "--background-mode", "fetc"], "Error: unknown background mode 'fetc' (did you mean 'fetch'?) (audio, location, voip, "),
            (["run", "--budget", "lanch=2"], "Error: unknown budget 'lanch' (did you mean 'launch'?) (launch, did-enter-background, "),
            (["run", "--budget", "launch=1e10"], "Error: --budget launch=1e10: out of range: at most 9223372036 s (about 292 years)\n"),
            (["run", "--trace-output", ""], "Error: --trace-output needs a file name, or '-' for standard output\n"),
            (["demo", "--trace", "xml"], "Error: --trace must be text or json, not 'xml'\nUsage: lifecycle-host demo "),
            (["check"], "Error: Missing expected argument '<PLUGIN> ...'\n"),
            (["check", "--scan-budget", "0", "x.so"], "Error: --scan-budget 0: must be more than 0\nUsage: lifecycle-host check "),
            (["send", "--socket"], "Error: Missing value for '--socket <PATH>'\n"),
            (["send", "home", "--socket"], "Error: --socket needs a path\n"),
            (["status", "extra"], "Error: Unexpected argument 'extra'\n"),
        ]
        for (words, start) in cases {
            let result = try CBuild.run(host, words)
            XCTAssertEqual(result.status, 64, "\(words): \(result.output)")
            let (out, err) = split(result.output)
            XCTAssertEqual(out, "", "\(words)")
            XCTAssertTrue(err.hasPrefix(start), "\(words): \(err)")
        }
        let unwritable = try CBuild.run(host, ["run", "--no-socket", "--trace-output", "/nonexistent-folder/t.json"])
        XCTAssertEqual(unwritable.status, 1)
        XCTAssertEqual(unwritable.output, "--stderr--\nlifecycle-host: cannot open the trace output /nonexistent-folder/t.json: No such file or directory\n")
    }

    // MARK: The JSON trace, clean

    /// The README's own example (Greeter, lock-unlock, `--trace json`): every line of standard output
    /// is a JSON object, and Greeter's printing is on standard error — in process and isolated (the
    /// plugin's process inherits the redirected standard output). `--trace-output FILE` puts the
    /// trace in the file and leaves standard output to the plugins; `-` is standard output.
    func testTheReadmeGreeterExampleGivesOnlyJSONOnStandardOutput() throws {
        let folder = try CBuild.temporaryFolder("greeter-json")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let environment = ["XDG_RUNTIME_DIR": folder]  // the example opens the control socket at its default place
        let example = ["run", "--plugin", CBuild.products + "/libGreeter.so", "--script", HostEndToEndTests.scenarios + "/lock-unlock.scenario",
                       "--trace", "json"]
        let greeter = ["greeter: hello", "greeter: see you", "greeter: welcome back", "greeter: see you", "greeter: goodbye"]
        var traces: [[String]] = []
        for extra in [[], ["--isolate"], ["--trace-output", "-"]] {
            let result = try CBuild.run(host, example + extra, environment: environment)
            XCTAssertEqual(result.status, 0, "\(extra): \(result.output)")
            let (out, err) = split(result.output)
            let lines = jsonLines(out)
            XCTAssertEqual(lines.count, out.split(separator: "\n").count, "\(extra)")
            XCTAssertGreaterThan(lines.count, 20, "\(extra)")
            XCTAssertEqual(err.split(separator: "\n").map(String.init).filter { $0.hasPrefix("greeter:") }, greeter, "\(extra)")
            // The host's own plugin lines, and the isolated plugins' freezer (isolation's own), left out.
            traces.append(lines.compactMap { ["plugin", "plugin-freezer"].contains($0["kind"] as? String) ? nil : "\($0["kind"] ?? "") \($0["name"] ?? "")" })
        }
        XCTAssertEqual(traces[1], traces[0], "isolated: the same life cycle")
        XCTAssertEqual(traces[2], traces[0], "--trace-output -: the same as standard output")

        let file = folder + "/trace.json"
        let result = try CBuild.run(host, example + ["--trace-output", file], environment: environment)
        XCTAssertEqual(result.status, 0, result.output)
        let (out, _) = split(result.output)
        XCTAssertEqual(out.split(separator: "\n").map(String.init), greeter, "standard output is the plugin's")
        let written = jsonLines(try String(contentsOfFile: file, encoding: .utf8))
        XCTAssertEqual(written.compactMap { $0["kind"] as? String == "plugin" ? nil : "\($0["kind"] ?? "") \($0["name"] ?? "")" }, traces[0])
    }

    // MARK: Scenario, then prompt

    /// `--script` with `--interactive`: the whole scenario runs first, then the prompt reads; a line
    /// typed at once waits for the scenario's end (here past a `wait`) instead of cutting into it.
    func testTheScenarioRunsBeforeThePrompt() throws {
        let folder = try CBuild.temporaryFolder("script-prompt")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = try writeScenario("home\nwait 300ms\nforeground\nexpect-state active\n", in: folder)
        let process = try RunningProcess(host, ["run", "--interactive", "--script", script, "--trace", "json", "--no-socket", "--no-signals",
                                                "--no-pressure", "--no-clock", "--plugin", recorder, "--background-mode", "fetch"])
        process.send("lock")
        XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"input\",\"name\":\"lock\"") })
        process.closeInput()
        XCTAssertEqual(process.wait(), 0, process.standardError)
        let events = jsonLines(process.output.joined(separator: "\n")).map { "\($0["kind"] ?? "") \($0["name"] ?? "")" }
        let foreground = try XCTUnwrap(events.firstIndex(of: "action foreground"))
        let lock = try XCTUnwrap(events.firstIndex(of: "input lock"))
        XCTAssertLessThan(foreground, lock, "the scenario's last action before the typed line: \(events)")
        XCTAssertTrue(events.contains("input expect-state active"))
        XCTAssertEqual(process.standardError, "lifecycle-host: standard input closed with the application suspended: the host terminates it\n",
                       "the lock suspended it")
    }

    /// The prompt's `help` does not list `wait`, which the prompt refuses (it is for scenario files).
    func testThePromptsHelpListsOnlyWhatThePromptTakes() throws {
        let process = try RunningProcess(host, ["run", "--interactive", "--trace", "json", "--no-socket", "--no-signals",
                                                "--no-pressure", "--no-clock"])
        XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"didBecomeActive\"") })
        process.send("help")
        process.send("wait 1s")
        XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"error\",\"name\":\"wait 1s\"") })
        process.send("quit")
        XCTAssertEqual(process.wait(), 0)
        let help = process.standardError.split(separator: "\n").map(String.init)
        XCTAssertTrue(help.contains { $0.hasPrefix("expect-state STATE") }, process.standardError)
        XCTAssertTrue(help.contains("  help | quit"), process.standardError)
        XCTAssertFalse(help.contains { $0.hasPrefix("wait") }, process.standardError)
        XCTAssertTrue(help.contains("error: 'wait' is for scenario files"), process.standardError)
    }

    // MARK: Suggestions

    /// A mistyped memory-warning level, state, scene verb or scene state in a scenario gets the
    /// closest name, as a mistyped action does.
    func testMistypedLevelsAndStatesGetTheClosestName() throws {
        let folder = try CBuild.temporaryFolder("suggest")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for (line, message) in [
            ("memory-warning critcal", "unknown memory-warning level 'critcal' (did you mean 'critical'?) (normal, warning or critical)"),
            ("expect-state suspnded", "unknown state 'suspnded' (did you mean 'suspended'?) (not-running, inactive, active, background or suspended)"),
            ("scene conect main", "unknown scene verb 'conect' (did you mean 'connect'?) (connect, activate, deactivate, background, foreground, disconnect, discard, close)"),
            ("expect-scene main foreground-activ", "unknown scene state 'foreground-activ' (did you mean 'foreground-active'?) "
                + "(unattached, foreground-inactive, foreground-active, background, suspended)"),
            ("memory-warning x", "unknown memory-warning level 'x' (normal, warning or critical)"),
        ] {
            let script = try writeScenario("launch\n\(line)\nterminate\n", in: folder)
            let result = try CBuild.run(host, ["run", "--no-socket", "--no-pressure", "--no-clock", "--scenes", "--script", script])
            XCTAssertEqual(result.status, 2, line)
            XCTAssertEqual(result.output, "--stderr--\n\(script):2: \(message)\n", line)
        }
    }

    /// A plugin whose init observes a misspelled notification name and returns the failed call's status
    /// is refused with the host's words, "did you mean" included — by `check`, and by `run` in process
    /// and isolated.
    func testAPluginObservingAMisspelledNameIsToldTheClosestName() throws {
        let folder = try CBuild.temporaryFolder("misspelled")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plugin = try CBuild.sharedObject(CBuild.plugin(
            id: "com.example.misspelled",
            initBody: "return host->observe(plugin, \"didEnterBackgrond\", NULL, on_background, NULL, NULL);",
            extra: "static void on_background(const lc_notification_t *n, void *c) { (void)n, (void)c; }"), named: "misspelled", in: folder)
        let reason = "init failed with LC_ERR_UNKNOWN_NAME: unknown notification name 'didEnterBackgrond' (did you mean 'didEnterBackground'?); "
            + "custom names must be reverse-DNS style, e.g. 'com.example.didEnterBackgrond' (the last error a host call gave it in init; "
            + "the plugin set no message)"
        let check = try CBuild.run(host, ["check", plugin])
        XCTAssertEqual(check.status, 3)
        XCTAssertEqual(check.output, "\(plugin)\n  refused:     \(reason)\n")
        let script = try writeScenario("launch\nterminate\n", in: folder)
        for extra in [[], ["--isolate"]] {
            let run = try CBuild.run(host, ["run", "--no-socket", "--no-pressure", "--no-clock", "--script", script, "--plugin", plugin] + extra)
            // The only plugin asked for, refused: the run ends before the launch (status 9).
            XCTAssertEqual(run.status, 9, "\(extra)")
            XCTAssertTrue(split(run.output).err.contains("lifecycle-host: plugin refused: \(plugin): \(reason)\n"), "\(extra): \(run.output)")
        }
    }

    // MARK: Paths

    /// A path holding a line feed or an escape sequence is printed escaped (`\n`, `\u{1B}`), on its one
    /// line: in `check`'s report, the text trace, `validate`'s report and the lines on standard error.
    func testAPathWithALineFeedIsPrintedEscapedOnItsOneLine() throws {
        let folder = try CBuild.temporaryFolder("newline-path")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let odd = folder + "/nl\ndir\u{1B}[31m"
        try FileManager.default.createDirectory(atPath: odd, withIntermediateDirectories: false)
        let plugin = odd + "/libEcho.so", missing = odd + "/missing.so"
        try FileManager.default.copyItem(atPath: CBuild.products + "/libEcho.so", toPath: plugin)
        let shown = folder + "/nl\\ndir\\u{1B}[31m"
        let cache = ["XDG_CACHE_HOME": folder + "/cache"]

        let check = try CBuild.run(host, ["check", plugin, missing], environment: cache)
        XCTAssertEqual(check.status, 3, check.output)
        let report = split(check.output).out.split(separator: "\n").map(String.init)
        XCTAssertEqual(Array(report.prefix(2)), ["\(shown)/libEcho.so", "  id:          org.applifecycle.echo"], check.output)
        XCTAssertEqual(Array(report.suffix(2)), ["\(shown)/missing.so", "  refused:     cannot open: No such file or directory"], check.output)

        let script = try writeScenario("launch\nterminate\n", in: folder)
        let run = try CBuild.run(host, ["run", "--no-socket", "--no-signals", "--no-pressure", "--no-clock", "--script", script,
                                        "--plugin", plugin, "--plugin", missing], environment: cache)
        XCTAssertEqual(run.status, 3, run.output)
        let (out, err) = split(run.output)
        let rows = out.split(separator: "\n").map(String.init)
        XCTAssertEqual(rows.filter { !$0.hasPrefix("echo: ") && $0.first?.isNumber != true && !$0.hasPrefix("time ") }, [], "one row a line")
        XCTAssertEqual(rows.filter { $0.contains(" loaded ") }.map { $0.hasSuffix(" 1.0.0 \(shown)/libEcho.so") }, [true], out)
        XCTAssertEqual(rows.filter { $0.contains(" plugin refused ") }.map { $0.hasSuffix(" \(shown)/missing.so: cannot open: No such file or directory") },
                       [true], out)
        XCTAssertTrue(err.hasPrefix("lifecycle-host: plugin refused: \(shown)/missing.so: cannot open: No such file or directory\n"), err)

        let unread = try CBuild.run(host, ["run", "--no-socket", "--script", odd + "/none.scenario"])
        XCTAssertEqual(unread.status, 2, unread.output)
        XCTAssertEqual(split(unread.output).err, "lifecycle-host: cannot read scenario \(shown)/none.scenario: No such file or directory\n")

        let validate = try CBuild.run(host, ["validate", plugin], environment: cache)
        XCTAssertEqual(validate.status, 0, validate.output)
        XCTAssertEqual(split(validate.output).out.split(separator: "\n").first.map(String.init), "validate \(shown)/libEcho.so")
    }

    // MARK: Plugins

    /// `--plugin DIR` is refused saying to use --plugin-dir (not "not a regular file"); `check DIR`
    /// says to give the files in it. The other plugins run.
    func testAFolderGivenAsAPluginNamesTheOptionForFolders() throws {
        let folder = try CBuild.temporaryFolder("plugin-folder")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = try writeScenario("launch\nterminate\n", in: folder)
        let run = try CBuild.run(host, ["run", "--no-socket", "--no-pressure", "--no-clock", "--trace", "json", "--script", script,
                                        "--plugin", folder, "--plugin", CBuild.products + "/libEcho.so"])
        XCTAssertEqual(run.status, 3)
        let (out, err) = split(run.output)
        XCTAssertTrue(err.hasPrefix("lifecycle-host: plugin refused: \(folder): it is a folder, not a plugin file: use --plugin-dir \(folder) "
                                    + "to load the plugins in it\n"), err)
        XCTAssertTrue(err.contains("echo: willTerminate"), "Echo ran")
        XCTAssertTrue(out.contains("\"kind\":\"error\",\"name\":\"plugin refused\""), out)
        let check = try CBuild.run(host, ["check", folder])
        XCTAssertEqual(check.status, 3)
        XCTAssertEqual(check.output, "\(folder)\n  refused:     it is a folder, not a plugin file: give the plugin files in it (check \(folder)/*.so)\n")
    }

    /// A plugin implementing state preservation or background fetch without the option that turns it
    /// on: `run` says so (a `warning` trace line and a line on standard error), `check` names the
    /// option; with the options given, `run` says nothing.
    func testRunAndCheckNameTheOptionsPreservationAndFetchNeed() throws {
        let folder = try CBuild.temporaryFolder("needs")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let keeper = CBuild.products + "/libStateKeeper.so", greeter = CBuild.products + "/libGreeter.so"
        let script = try writeScenario("launch\nterminate\n", in: folder)
        let base = ["run", "--no-socket", "--no-pressure", "--no-clock", "--trace", "json", "--script", script, "--plugin", keeper, "--plugin", greeter]
        let environment = ["LC_STATEKEEPER_FILE": folder + "/protected.txt"]
        let preservation = "org.applifecycle.statekeeper implements state preservation (application:shouldSaveApplicationState:, "
            + "application:shouldRestoreApplicationState:, application:willEncodeRestorableStateWithCoder:, "
            + "application:didDecodeRestorableStateWithCoder:), which is off: run with --archive DIR to turn it on"
        let fetch = "org.applifecycle.greeter implements background fetch (application:performFetchWithCompletionHandler:), which is off: "
            + "run with --background-mode fetch to turn it on"

        let off = try CBuild.run(host, base, environment: environment)
        XCTAssertEqual(off.status, 0, off.output)
        let warnings = jsonLines(split(off.output).out).filter { $0["kind"] as? String == "warning" }
        XCTAssertEqual(warnings.map { "\($0["name"] ?? "") \($0["plugin"] ?? "") \($0["detail"] ?? "")" },
                       ["preservation off org.applifecycle.statekeeper \(preservation)", "fetch off org.applifecycle.greeter \(fetch)"])
        let errorLines = split(off.output).err.split(separator: "\n").map(String.init).filter { $0.hasPrefix("lifecycle-host:") }
        XCTAssertEqual(errorLines, ["lifecycle-host: \(preservation)", "lifecycle-host: \(fetch)"])

        let on = try CBuild.run(host, base + ["--archive", folder, "--background-mode", "fetch"], environment: environment)
        XCTAssertEqual(on.status, 0, on.output)
        XCTAssertFalse(on.output.contains("\"kind\":\"warning\""), on.output)
        XCTAssertFalse(on.output.contains("lifecycle-host:"), on.output)

        let check = try CBuild.run(host, ["check", keeper, greeter], environment: environment)
        XCTAssertEqual(check.status, 0)
        let needs = check.output.split(separator: "\n").filter { $0.hasPrefix("  needs:") }
        XCTAssertEqual(needs, [
            "  needs:       --archive DIR for state preservation (application:shouldSaveApplicationState:, application:shouldRestoreApplicationState:, "
                + "application:willEncodeRestorableStateWithCoder:, application:didDecodeRestorableStateWithCoder:)",
            "  needs:       --background-mode fetch for background fetch (application:performFetchWithCompletionHandler:)",
        ])
    }

    /// A plugin implementing one state-preservation gate without the other: `check` warns that
    /// neither is ever called (the engine would only trace `skipped` lines at run time); a plugin with
    /// both gates (StateKeeper) gets no warning.
    func testCheckWarnsOfAStatePreservationGateWithoutItsPair() throws {
        let folder = try CBuild.temporaryFolder("lone-gate")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        func plugin(_ name: String, exporting function: String, coder: String) throws -> String {
            try CBuild.sharedObject("""
                #define LC_DECLARE_DELEGATE_FUNCTIONS
                #include "lifecycle.h"
                bool \(function)(lc_app *app, \(coder) *coder) { (void)app, (void)coder; return true; }
                static lc_status fixture_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
                    (void)host, (void)plugin, (void)state; return LC_OK;
                }
                static const lc_plugin_descriptor_t descriptor = {
                    .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
                    .abi_minor = LC_ABI_VERSION_MINOR, .id = "com.example.\(name)", .version = "1", .description = "one gate",
                    .init = fixture_init,
                };
                LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
                """, named: name, in: folder)
        }
        let saveOnly = try plugin("saveonly", exporting: "application_shouldSaveApplicationState", coder: "lc_dict")
        let restoreOnly = try plugin("restoreonly", exporting: "application_shouldRestoreApplicationState", coder: "const lc_dict")
        let check = try CBuild.run(host, ["check", saveOnly, restoreOnly, CBuild.products + "/libStateKeeper.so"])
        XCTAssertEqual(check.status, 0, check.output)
        let warnings = check.output.split(separator: "\n").filter { $0.hasPrefix("  warning:") }
        XCTAssertEqual(warnings, [
            "  warning:     implements application:shouldSaveApplicationState: but not application:shouldRestoreApplicationState: "
                + "(state preservation needs both, as on iOS): its state is neither saved nor restored",
            "  warning:     implements application:shouldRestoreApplicationState: but not application:shouldSaveApplicationState: "
                + "(state preservation needs both, as on iOS): its state is neither saved nor restored",
        ], check.output)
    }

    // MARK: The demo's state

    /// Without --archive every demo starts from nothing, in a fresh folder it removes at the end: two
    /// demos print the same StateKeeper lines, restoring only what the run itself saved. With --archive
    /// the state stays in that folder and the next demo restores it.
    func testTheDemoStartsFromAFreshFolderUnlessGivenAnArchive() throws {
        let temporary = try CBuild.temporaryFolder("demo-tmp")
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        func keeperLines(_ extra: [String]) throws -> [String] {
            let result = try CBuild.run(host, ["demo"] + extra, environment: ["TMPDIR": temporary])
            XCTAssertEqual(result.status, 0, result.output)
            return result.output.split(separator: "\n").map(String.init).filter { $0.hasPrefix("statekeeper: ") }
        }
        let first = try keeperLines([])
        XCTAssertEqual(first.filter { $0.contains("counter") }, ["statekeeper: restored counter 4"], "only the run's own state: \(first)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: temporary), [], "the demo's folder is removed")
        XCTAssertEqual(try keeperLines([]), first)

        let archive = try CBuild.temporaryFolder("demo-archive")
        defer { try? FileManager.default.removeItem(atPath: archive) }
        XCTAssertEqual(try keeperLines(["--archive", archive]), first)
        XCTAssertTrue(FileManager.default.fileExists(atPath: archive + "/org.applifecycle.statekeeper.lcarchive"), "kept")
        XCTAssertEqual(try keeperLines(["--archive", archive]).filter { $0.contains("counter") },
                       ["statekeeper: restored counter 5", "statekeeper: restored counter 9"], "the next demo restores it")
    }

    // MARK: The end of a scenario

    /// A scenario that ends with the application still running does not leave the host running with
    /// no word: the host says so on standard error and in the trace (an `input terminate` line, detail
    /// `script FILE ended`), terminates it (willTerminate reaches the plugins) and exits 8.
    func testAScenarioLeavingTheApplicationRunningEndsWithStatus8() throws {
        let folder = try CBuild.temporaryFolder("left-running")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = try writeScenario("home\nforeground\n", in: folder)
        let start = Date()
        let result = try CBuild.run(host, ["run", "--trace", "json", "--no-pressure", "--no-clock", "--script", script,
                                           "--plugin", CBuild.products + "/libEcho.so"], environment: ["XDG_RUNTIME_DIR": folder])
        XCTAssertLessThan(Date().timeIntervalSince(start), 10, "it ended by itself")
        XCTAssertEqual(result.status, 8, result.output)
        let (out, err) = split(result.output)
        XCTAssertTrue(err.contains("lifecycle-host: \(script) ended with the application active: the host terminates it (end the scenario "
                                    + "with 'terminate' to end the run cleanly; exit status 8)\n"), err)
        XCTAssertEqual(Array(err.split(separator: "\n").filter { $0.hasPrefix("echo:") }.suffix(1)), ["echo: willTerminate"])
        let events = jsonLines(out)
        let input = try XCTUnwrap(events.first { $0["kind"] as? String == "input" && $0["name"] as? String == "terminate" })
        XCTAssertEqual(input["detail"] as? String, "script \(script) ended")
        XCTAssertEqual(events.last?["name"] as? String, "not-running")

        // The same scenario followed by the prompt: the prompt takes over, nothing is said.
        let process = try RunningProcess(host, ["run", "--interactive", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock",
                                                "--script", script])
        process.send("terminate")  // read once the scenario is over
        XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"not-running\"") })
        process.closeInput()
        XCTAssertEqual(process.wait(), 0)
        XCTAssertEqual(process.standardError, "")
    }
}
