import Foundation
import TestSupport
import XCTest
@testable import lifecycle_host

/// `make install` into a temporary prefix, used the way a C developer and a person at the terminal use
/// an installed library; the checkout's pkg-config file; the man page kept in sync with the command.
final class InstallTests: XCTestCase {
    /// The library's version, from the C ABI version of include/lifecycle.h ("1.2.0").
    private static let version: String = {
        let header = (try? String(contentsOfFile: CBuild.root + "/include/lifecycle.h", encoding: .utf8)) ?? ""
        func value(_ name: String) -> String {
            for line in header.split(separator: "\n") where line.hasPrefix("#define \(name) ") {
                return String(line.split(separator: " ")[2])
            }
            return "?"
        }
        return "\(value("LC_ABI_VERSION_MAJOR")).\(value("LC_ABI_VERSION_MINOR")).0"
    }()

    private static var major: String { String(version.split(separator: ".")[0]) }

    /// Every file `make install` puts under the prefix (symbolic links included), relative to it.
    private static var installedFiles: Set<String> {
        Set<String>([
            "bin/lifecycle-host",
            "include/lifecycle.h", "include/lifecycle_testkit.h",
            "lib/liblifecycle.so", "lib/liblifecycle.so.\(major)", "lib/liblifecycle.so.\(version)",
            "lib/liblifecycle-testkit.so", "lib/liblifecycle-testkit.so.\(major)", "lib/liblifecycle-testkit.so.\(version)",
            "lib/pkgconfig/lifecycle.pc", "lib/pkgconfig/lifecycle-testkit.pc",
            "lib/lifecycle/lifecycle-plugin-runner",
            "lib/lifecycle/examples/libEcho.so", "lib/lifecycle/examples/libStateKeeper.so",
            "lib/lifecycle/examples/libGreeter.so", "lib/lifecycle/examples/libCacheTrimmer.so",
            "share/man/man1/lifecycle-host.1",
            "share/bash-completion/completions/lifecycle-host",
            "share/zsh/site-functions/_lifecycle-host",
            "share/fish/vendor_completions.d/lifecycle-host.fish",
        ]).union(documentation)
    }

    /// docs/ as `make install` puts it under share/doc/lifecycle: the pages and pictures, the scenarios.
    private static var documentation: Set<String> {
        let docs = CBuild.root + "/docs"
        let pages = ((try? FileManager.default.contentsOfDirectory(atPath: docs)) ?? [])
            .filter { $0.hasSuffix(".md") || $0.hasSuffix(".svg") }.map { "share/doc/lifecycle/\($0)" }
        let scenarios = ((try? FileManager.default.contentsOfDirectory(atPath: docs + "/scenarios")) ?? [])
            .filter { $0.hasSuffix(".scenario") }.map { "share/doc/lifecycle/scenarios/\($0)" }
        return Set(pages + scenarios)
    }

    /// `make install` refuses a library built with AddressSanitizer, rightly: ASan puts a redzone after
    /// each global it instruments, the 4096-byte runner slot included, so the library's .lifecycle_runner
    /// section is 5120 bytes, not the size the Makefile writes the runner's path over.
    private func skipUnderAddressSanitizer() throws {
        try XCTSkipIf(CBuild.underAddressSanitizer, "make install cannot install an AddressSanitizer build: ASan's redzone after "
                      + "the runner slot makes the .lifecycle_runner section 5120 bytes, not 4096")
    }

    /// The path of a tool the test needs (RequiredTool: skipped with the reason where it is missing,
    /// failed under CI's LC_TEST_REQUIRE_TOOLS=1).
    private func tool(_ name: String, package: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        try RequiredTool.path(name, package: package, for: "to install the package (make install) and use what it installed",
                              file: file, line: line)
    }

    /// Runs a shell command line; fails the test (with its output) unless it exits 0.
    @discardableResult
    private func sh(_ command: String, environment: [String: String] = [:], file: StaticString = #filePath,
                    line: UInt = #line) throws -> String
    {
        let result = try CBuild.run("/bin/sh", ["-c", command], environment: environment)
        XCTAssertEqual(result.status, 0, "\(command)\n\(result.output)", file: file, line: line)
        return result.output
    }

    /// Every file and symbolic link under `folder`, relative to it (folders themselves left out).
    private func files(under folder: String) throws -> Set<String> {
        var found: Set<String> = []
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return found }
        while let path = walker.nextObject() as? String {
            let attributes = try FileManager.default.attributesOfItem(atPath: folder + "/" + path)
            if attributes[.type] as? FileAttributeType != .typeDirectory { found.insert(path) }
        }
        return found
    }

    /// A plugin in C: observes the background and the end, says so; built with only `pkg-config --cflags`.
    private static let plugin = """
        #include <lifecycle.h>
        #include <stdio.h>
        static void on_note(const lc_notification_t *note, void *ctx) {
            (void)ctx;
            printf("plugin: %s\\n", note->name);
            fflush(stdout);
        }
        static lc_status plugin_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
            (void)state;
            lc_status s = host->observe(plugin, "didEnterBackground", NULL, on_note, NULL, NULL);
            return s == LC_OK ? host->observe(plugin, "willTerminate", NULL, on_note, NULL, NULL) : s;
        }
        static const lc_plugin_descriptor_t descriptor = {
            .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
            .abi_minor = LC_ABI_VERSION_MINOR, .id = "com.example.installed", .version = "1.0",
            .description = "built against an installed liblifecycle", .init = plugin_init,
        };
        LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
        """

    /// A C program that links the library, loads the plugin named on its command line and drives it.
    private static let program = """
        #include <lifecycle.h>
        #include <stdio.h>
        #define CHECK(call) do { lc_status s_ = (call); if (s_ != LC_OK) { \\
            fprintf(stderr, "%s: %s\\n", #call, lc_last_error_message()); return 1; } } while (0)
        int main(int argc, char **argv) {
            if (argc != 2) return 2;
            uint32_t major, minor;
            lc_abi_version(&major, &minor);
            printf("abi %u.%u\\n", major, minor);
            lc_app *app = NULL;
            CHECK(lc_app_create(NULL, &app));
            lc_plugin *plugin = NULL;
            CHECK(lc_app_load_plugin(app, argv[1], &plugin));
            printf("loaded %s\\n", lc_plugin_id(plugin));
            CHECK(lc_app_perform_simple(app, LC_ACTION_LAUNCH));
            CHECK(lc_app_perform_simple(app, LC_ACTION_HOME));
            printf("state %s\\n", lc_state_name(lc_app_state(app)));
            CHECK(lc_app_perform_simple(app, LC_ACTION_FOREGROUND));
            CHECK(lc_app_perform_simple(app, LC_ACTION_TERMINATE));
            printf("state %s\\n", lc_state_name(lc_app_state(app)));
            lc_app_destroy(app);
            return 0;
        }
        """

    /// A C program that loads the plugin named on its command line isolated (in a process of its own,
    /// the plugin runner the installed library finds by itself) and drives it; it prints its own pid.
    private static let isolatedProgram = """
        #include <lifecycle.h>
        #include <stdio.h>
        #include <unistd.h>
        #define CHECK(call) do { lc_status s_ = (call); if (s_ != LC_OK) { \\
            fprintf(stderr, "%s: %s\\n", #call, lc_last_error_message()); return 1; } } while (0)
        int main(int argc, char **argv) {
            if (argc != 2) return 2;
            printf("host %d\\n", (int)getpid());
            fflush(stdout);
            lc_app *app = NULL;
            CHECK(lc_app_create(NULL, &app));
            lc_load_options_t options = { .struct_size = sizeof options, .flags = LC_LOAD_ISOLATED };
            lc_plugin *plugin = NULL;
            CHECK(lc_app_load_plugin_with_options(app, argv[1], &options, &plugin));
            printf("loaded %s isolated\\n", lc_plugin_id(plugin));
            fflush(stdout);
            CHECK(lc_app_perform_simple(app, LC_ACTION_LAUNCH));
            CHECK(lc_app_perform_simple(app, LC_ACTION_HOME));
            printf("state %s\\n", lc_state_name(lc_app_state(app)));
            fflush(stdout);
            CHECK(lc_app_perform_simple(app, LC_ACTION_FOREGROUND));
            CHECK(lc_app_perform_simple(app, LC_ACTION_TERMINATE));
            printf("state %s\\n", lc_state_name(lc_app_state(app)));
            lc_app_destroy(app);
            return 0;
        }
        """

    func testMakeInstallIntoATemporaryPrefixThenUninstall() throws {
        try skipUnderAddressSanitizer()
        let make = try tool("make", package: "make")
        _ = try tool("patchelf", package: "patchelf")
        _ = try tool("pkg-config", package: "pkg-config")
        let readelf = try tool("readelf", package: "binutils")
        let folder = try CBuild.temporaryFolder("install")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let prefix = folder + "/prefix"
        let root = CBuild.root

        // The real make install, from the build the tests run with.
        let install = try CBuild.run(make, ["-C", root, "install", "PREFIX=\(prefix)", "BUILD_DIR=\(CBuild.products)"])
        XCTAssertEqual(install.status, 0, install.output)
        XCTAssertEqual(try files(under: prefix), Self.installedFiles)

        // The library: the real file with its soname, and the two links of a C library.
        let lib = prefix + "/lib"
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: lib + "/liblifecycle.so"), "liblifecycle.so.\(Self.major)")
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: lib + "/liblifecycle.so.\(Self.major)"),
                       "liblifecycle.so.\(Self.version)")
        let dynamic = try sh("'\(readelf)' -d '\(lib)/liblifecycle.so.\(Self.version)'")
        XCTAssertTrue(dynamic.contains("Library soname: [liblifecycle.so.\(Self.major)]"), dynamic)
        XCTAssertFalse(dynamic.contains("$ORIGIN"), "the installed RUNPATH names the Swift runtime only")
        // It finds the Swift runtime by itself (RUNPATH), with no LD_LIBRARY_PATH.
        let ldd = try sh("env -u LD_LIBRARY_PATH ldd '\(lib)/liblifecycle.so.\(Self.version)'")
        XCTAssertFalse(ldd.contains("not found"), ldd)
        XCTAssertTrue(ldd.contains("libswiftCore.so => /"), ldd)

        // The pkg-config file names the prefix.
        let pkg = ["PKG_CONFIG_PATH": lib + "/pkgconfig"]
        XCTAssertEqual(try sh("pkg-config --modversion lifecycle", environment: pkg), Self.version + "\n")
        XCTAssertEqual(try sh("pkg-config --variable=prefix lifecycle", environment: pkg), prefix + "\n")
        let installedHeader = try String(contentsOfFile: prefix + "/include/lifecycle.h", encoding: .utf8)
        XCTAssertEqual(installedHeader, try String(contentsOfFile: root + "/include/lifecycle.h", encoding: .utf8))

        // A C plugin and a C program built with nothing but pkg-config's flags, run with a clean environment.
        // (Under a sanitizer the program is built by the sanitizer's compiler: the library needs its runtime.)
        let cc = CBuild.linkedProgramCommand
        try Self.plugin.write(toFile: folder + "/plugin.c", atomically: true, encoding: .utf8)
        try Self.program.write(toFile: folder + "/program.c", atomically: true, encoding: .utf8)
        try sh("cd '\(folder)' && cc -Wall -Werror -shared -fPIC plugin.c $(pkg-config --cflags lifecycle) -o plugin.so", environment: pkg)
        try sh("cd '\(folder)' && \(cc) -Wall -Werror program.c $(pkg-config --cflags --libs lifecycle) -o program", environment: pkg)
        let output = try sh("env -u LD_LIBRARY_PATH '\(folder)/program' '\(folder)/plugin.so'")
        XCTAssertEqual(output, """
            abi \(Self.version.split(separator: ".").prefix(2).joined(separator: "."))
            loaded com.example.installed
            plugin: didEnterBackground
            state suspended
            plugin: didEnterBackground
            plugin: willTerminate
            state not-running

            """)
        let needed = try sh("'\(readelf)' -d '\(folder)/program'")
        XCTAssertTrue(needed.contains("Shared library: [liblifecycle.so.\(Self.major)]"), "linked by soname: \(needed)")
        let resolved = try sh("env -u LD_LIBRARY_PATH ldd '\(folder)/program'")
        XCTAssertTrue(resolved.contains("liblifecycle.so.\(Self.major) => \(lib)/liblifecycle.so.\(Self.major)"), resolved)

        // The test kit's example test, built with nothing but `pkg-config lifecycle-testkit` (which brings
        // lifecycle's flags along), run on the built Sessions plugin with a clean environment.
        let kitDynamic = try sh("'\(readelf)' -d '\(lib)/liblifecycle-testkit.so.\(Self.version)'")
        XCTAssertTrue(kitDynamic.contains("Library soname: [liblifecycle-testkit.so.\(Self.major)]"), kitDynamic)
        XCTAssertTrue(kitDynamic.contains("Shared library: [liblifecycle.so.\(Self.major)]"), kitDynamic)
        let kitLdd = try sh("env -u LD_LIBRARY_PATH ldd '\(lib)/liblifecycle-testkit.so.\(Self.version)'")
        XCTAssertFalse(kitLdd.contains("not found"), kitLdd)
        XCTAssertTrue(kitLdd.contains("liblifecycle.so.\(Self.major) => \(lib)/liblifecycle.so.\(Self.major)"), kitLdd)
        try sh("cd '\(folder)' && \(cc) -Wall -Werror '\(root)/Plugins/Sessions/sessions_test.c' $(pkg-config --cflags --libs lifecycle-testkit) -o kit_test",
               environment: pkg)
        XCTAssertEqual(try sh("env -u LD_LIBRARY_PATH '\(folder)/kit_test' '\(CBuild.products)/libSessions.so' 2>/dev/null"),
                       "sessions_test: 23 passed, 0 failed\n")
        XCTAssertEqual(try String(contentsOfFile: prefix + "/include/lifecycle_testkit.h", encoding: .utf8),
                       try String(contentsOfFile: root + "/include/lifecycle_testkit.h", encoding: .utf8))

        // The same plugin isolated, from a C program built with the prefix's pkg-config file only and run
        // with an empty environment (no LC_PLUGIN_RUNNER, no LD_LIBRARY_PATH): the installed library
        // starts the runner `make install` recorded in it, the installed lifecycle-plugin-runner.
        let runner = "\(lib)/lifecycle/lifecycle-plugin-runner"
        for file in ["\(lib)/liblifecycle.so.\(Self.version)", "\(prefix)/bin/lifecycle-host"] {
            let recorded = try sh("'\(readelf)' -p .lifecycle_runner '\(file)'")
            XCTAssertTrue(recorded.contains("]  \(runner)\n"), "\(file): \(recorded)")
        }
        try Self.isolatedProgram.write(toFile: folder + "/isolated.c", atomically: true, encoding: .utf8)
        try sh("cd '\(folder)' && \(cc) -Wall -Werror isolated.c $(pkg-config --cflags --libs lifecycle) -o isolated", environment: pkg)
        let isolated = try sh("cd / && env -i '\(folder)/isolated' '\(folder)/plugin.so'")
        var lines = isolated.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertTrue(lines.first?.hasPrefix("host ") == true, isolated)
        lines.removeFirst()
        XCTAssertEqual(lines, ["loaded com.example.installed isolated", "plugin: didEnterBackground", "state suspended",
                               "plugin: didEnterBackground", "plugin: willTerminate", "state not-running", ""], isolated)

        // The installed host: names itself and the installed library, checks the plugin, and runs the
        // demo with the installed example plugins.
        let host = prefix + "/bin/lifecycle-host"
        let version = try sh("'\(host)' --version")
        XCTAssertTrue(version.hasSuffix("built into \(host)\nplugin runner: \(runner)\ninstalled library: \(lib)/liblifecycle.so.\(Self.major)\n"),
                      version)
        // The installed host runs the plugin isolated with an empty environment: it starts the runner
        // recorded in it, whose process is the plugin's.
        try "launch\nterminate\n".write(toFile: folder + "/s.scenario", atomically: true, encoding: .utf8)
        let isolatedHost = try sh("cd / && env -i '\(host)' run --isolate --no-socket --no-pressure --no-clock --trace json "
                                  + "--plugin '\(folder)/plugin.so' --script '\(folder)/s.scenario' 2>&1")
        XCTAssertTrue(isolatedHost.contains("\"kind\":\"plugin\",\"name\":\"loaded\""), isolatedHost)
        XCTAssertTrue(isolatedHost.contains("com.example.installed"), isolatedHost)
        XCTAssertTrue(isolatedHost.contains("\"name\":\"willTerminate\""), isolatedHost)
        let check = try sh("'\(host)' check '\(folder)/plugin.so'")
        XCTAssertTrue(check.contains("com.example.installed"), check)
        let demo = try sh("'\(host)' demo --archive '\(folder)/archive' 2>&1")
        XCTAssertTrue(demo.contains("org.applifecycle.cachetrimmer"), "the demo loaded the installed examples: \(demo.prefix(600))")

        // The man page, found by man through the prefix.
        _ = try tool("man", package: "man-db")
        let page = try sh("MANPATH='\(prefix)/share/man' MANWIDTH=100 man -P cat lifecycle-host 2>&1")
        XCTAssertTrue(page.contains("lifecycle-host run"), page)
        XCTAssertTrue(page.contains("--timeline"), page)

        // The documentation the man page's FILES and SEE ALSO name, where they name it.
        XCTAssertEqual(try String(contentsOfFile: prefix + "/share/doc/lifecycle/host.md", encoding: .utf8),
                       try String(contentsOfFile: root + "/docs/host.md", encoding: .utf8))
        XCTAssertTrue(page.contains("PREFIX/share/doc/lifecycle/"), page)

        // The completions: bash completes a subcommand and an option; zsh and fish scripts are theirs.
        let completion = prefix + "/share/bash-completion/completions/lifecycle-host"
        let words = try sh("""
            bash -c 'source "$0"; complete_words() { COMP_LINE="$1"; read -ra COMP_WORDS <<< "$1"; \
            [[ "$1" == *" " ]] && COMP_WORDS+=(""); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMP_POINT=${#COMP_LINE}; \
            COMPREPLY=(); _lifecycle-host lifecycle-host "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"; \
            printf "%s\\n" "${COMPREPLY[@]}" | sort -u | tr "\\n" " "; echo; }; \
            complete_words "lifecycle-host r"; complete_words "lifecycle-host run --pl"; complete_words "lifecycle-host s"' '\(completion)'
            """)
        XCTAssertEqual(words, "replay run \n--plugin --plugin-dir --plugin-quota \nsend status \n")
        let zsh = try String(contentsOfFile: prefix + "/share/zsh/site-functions/_lifecycle-host", encoding: .utf8)
        XCTAssertTrue(zsh.hasPrefix("#compdef lifecycle-host"), String(zsh.prefix(80)))
        let fish = try String(contentsOfFile: prefix + "/share/fish/vendor_completions.d/lifecycle-host.fish", encoding: .utf8)
        XCTAssertTrue(fish.contains("complete -c 'lifecycle-host'") || fish.contains("complete -c lifecycle-host"), String(fish.prefix(400)))
        XCTAssertTrue(fish.contains("plugin-dir"))

        // make uninstall removes every file it installed, and the examples' own folders.
        let uninstall = try CBuild.run(make, ["-C", root, "uninstall", "PREFIX=\(prefix)"])
        XCTAssertEqual(uninstall.status, 0, uninstall.output)
        XCTAssertEqual(try files(under: prefix), [])
        XCTAssertFalse(FileManager.default.fileExists(atPath: lib + "/lifecycle"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: prefix + "/share/doc/lifecycle"))
    }

    func testDestdirStagesUnderItButNamesThePrefix() throws {
        try skipUnderAddressSanitizer()
        let make = try tool("make", package: "make")
        _ = try tool("patchelf", package: "patchelf")
        let stage = try CBuild.temporaryFolder("stage")
        defer { try? FileManager.default.removeItem(atPath: stage) }
        let install = try CBuild.run(make, ["-C", CBuild.root, "install", "PREFIX=/usr/local", "DESTDIR=\(stage)",
                                            "BUILD_DIR=\(CBuild.products)", "PC_RPATH=0"])
        XCTAssertEqual(install.status, 0, install.output)
        XCTAssertEqual(try files(under: stage), Set(Self.installedFiles.map { "usr/local/" + $0 }))
        let pc = try String(contentsOfFile: stage + "/usr/local/lib/pkgconfig/lifecycle.pc", encoding: .utf8)
        XCTAssertTrue(pc.contains("prefix=/usr/local\nlibdir=/usr/local/lib\nincludedir=/usr/local/include\n"), pc)
        XCTAssertTrue(pc.contains("Libs: -L${libdir} -llifecycle\n"), "PC_RPATH=0: no -rpath: \(pc)")
        XCTAssertTrue(pc.contains("Version: \(Self.version)\n"))
        // The runner recorded in the library is the prefix's, not the stage's.
        let readelf = try tool("readelf", package: "binutils")
        let recorded = try CBuild.run(readelf, ["-p", ".lifecycle_runner", stage + "/usr/local/lib/liblifecycle.so.\(Self.version)"])
        XCTAssertTrue(recorded.output.contains("]  /usr/local/lib/lifecycle/lifecycle-plugin-runner\n"), recorded.output)
        let recordedInHost = try CBuild.run(readelf, ["-p", ".lifecycle_runner", stage + "/usr/local/bin/lifecycle-host"])
        XCTAssertTrue(recordedInHost.output.contains("]  /usr/local/lib/lifecycle/lifecycle-plugin-runner\n"), recordedInHost.output)
        let uninstall = try CBuild.run(make, ["-C", CBuild.root, "uninstall", "PREFIX=/usr/local", "DESTDIR=\(stage)"])
        XCTAssertEqual(uninstall.status, 0, uninstall.output)
        XCTAssertEqual(try files(under: stage), [])
    }

    func testInstallWithoutPatchelfSaysWhatToDo() throws {
        let make = try tool("make", package: "make")
        let prefix = try CBuild.temporaryFolder("nopatchelf")
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let result = try CBuild.run(make, ["-C", CBuild.root, "install", "PREFIX=\(prefix)", "BUILD_DIR=\(CBuild.products)",
                                           "PATCHELF=patchelf-not-installed"])
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.output.contains("make install: patchelf not found"), result.output)
        XCTAssertTrue(result.output.contains("apt-get install patchelf"), result.output)
        XCTAssertEqual(try files(under: prefix), [], "nothing installed")
        let unbuilt = try CBuild.run(make, ["-C", CBuild.root, "install", "PREFIX=\(prefix)", "BUILD_DIR=\(prefix)/nothing"])
        XCTAssertNotEqual(unbuilt.status, 0)
        XCTAssertTrue(unbuilt.output.contains("\(prefix)/nothing/liblifecycle.so is missing: run 'make'"), unbuilt.output)
    }

    /// The documented C build from a checkout (pkgconfig/lifecycle.pc, docs/c-api.md) after a debug
    /// build only, and after a release build only: a copy of the checkout's layout with one build folder.
    func testCheckoutPkgConfigWorksAfterADebugOrAReleaseBuild() throws {
        _ = try tool("pkg-config", package: "pkg-config")
        let checkout = try CBuild.temporaryFolder("checkout")
        defer { try? FileManager.default.removeItem(atPath: checkout) }
        let files = FileManager.default
        try files.createDirectory(atPath: checkout + "/pkgconfig", withIntermediateDirectories: true)
        try files.createDirectory(atPath: checkout + "/.build", withIntermediateDirectories: true)
        try files.copyItem(atPath: CBuild.root + "/pkgconfig/lifecycle.pc", toPath: checkout + "/pkgconfig/lifecycle.pc")
        try files.createSymbolicLink(atPath: checkout + "/include", withDestinationPath: CBuild.root + "/include")
        let pc = try String(contentsOfFile: CBuild.root + "/pkgconfig/lifecycle.pc", encoding: .utf8)
        XCTAssertTrue(pc.contains("\nVersion: \(Self.version)\n"), "the checkout's .pc has the header's version")
        let kitPC = try String(contentsOfFile: CBuild.root + "/pkgconfig/lifecycle-testkit.pc", encoding: .utf8)
        XCTAssertTrue(kitPC.contains("\nVersion: \(Self.version)\n"), "the checkout's lifecycle-testkit.pc has the header's version")
        let source = CBuild.root + "/Tests/PluginHostTests/Fixtures/embed_cycle.c"
        // `cc`; under a sanitizer its compiler, as the library needs its runtime (CBuild.linkedProgramCompiler).
        let cc = CBuild.linkedProgramCommand
        for configuration in ["debug", "release"] {
            try? files.removeItem(atPath: checkout + "/.build/debug")
            try? files.removeItem(atPath: checkout + "/.build/release")
            try files.createSymbolicLink(atPath: checkout + "/.build/\(configuration)", withDestinationPath: CBuild.products)
            let program = checkout + "/app-\(configuration)"
            // Exactly the documented line.
            try sh("\(cc) '\(source)' $(pkg-config --cflags --libs lifecycle) -o '\(program)'", environment: ["PKG_CONFIG_PATH": checkout + "/pkgconfig"])
            XCTAssertEqual(try sh("env -u LD_LIBRARY_PATH '\(program)'"), "ok\n", configuration)
            let ldd = try sh("env -u LD_LIBRARY_PATH ldd '\(program)'")
            XCTAssertTrue(ldd.contains("liblifecycle.so => \(checkout)/pkgconfig/../.build/\(configuration)/liblifecycle.so"), ldd)
        }
        // And in this checkout, with whichever build it has.
        let program = checkout + "/app"
        try sh("\(cc) '\(source)' $(pkg-config --cflags --libs lifecycle) -o '\(program)'", environment: ["PKG_CONFIG_PATH": CBuild.root + "/pkgconfig"])
        XCTAssertEqual(try sh("env -u LD_LIBRARY_PATH '\(program)'"), "ok\n")
    }

    /// docs/man/lifecycle-host.1 is what lifecycle-manual makes of the command's definitions now
    /// (after a change to the command line: `make man`), and groff reads it without a warning.
    func testManPageIsInSyncWithTheCommandLine() throws {
        let groff = try tool("groff", package: "groff-base")
        let generated = try sh("'\(CBuild.products)/lifecycle-host' --experimental-dump-help | '\(CBuild.products)/lifecycle-manual' --version \(Self.version)")
        let checkedIn = try String(contentsOfFile: CBuild.root + "/docs/man/lifecycle-host.1", encoding: .utf8)
        if generated != checkedIn {
            let got = generated.split(separator: "\n", omittingEmptySubsequences: false)
            let want = checkedIn.split(separator: "\n", omittingEmptySubsequences: false)
            let first = Array(zip(got, want)).firstIndex { $0.0 != $0.1 } ?? min(got.count, want.count)
            XCTFail("docs/man/lifecycle-host.1 is out of date (run 'make man'): line \(first + 1) is '\(first < want.count ? want[first] : "<end>")', the command line now gives '\(first < got.count ? got[first] : "<end>")'")
        }
        // Plain text: no overstriking for bold or underline (-P-cbou).
        let rendered = try CBuild.run(groff, ["-man", "-Tutf8", "-ww", "-P-cbou", CBuild.root + "/docs/man/lifecycle-host.1"])
        XCTAssertEqual(rendered.status, 0)
        XCTAssertFalse(rendered.output.contains("--stderr--"), "groff warned: \(rendered.output)")
        let text = rendered.output
        for word in ["NAME", "SYNOPSIS", "COMMANDS", "run", "demo", "check", "send", "status", "--plugin-dir", "--script", "--socket"] {
            XCTAssertTrue(text.contains(word), "the page shows \(word)")
        }
        // The sections a man page reader looks for, in the usual order.
        let sections = text.split(separator: "\n").filter { $0.first?.isUppercase == true && $0.uppercased() == $0 }.map(String.init)
        XCTAssertEqual(sections, ["NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"])
        // Real placeholders: no option's value is named after the option itself (`--archive archive`).
        for line in checkedIn.split(separator: "\n") where line.hasPrefix("\\fB\\-\\-") {
            let words = line.replacingOccurrences(of: "\\-", with: "-").replacingOccurrences(of: "\\fB", with: "")
                .replacingOccurrences(of: "\\fI", with: "").replacingOccurrences(of: "\\fR", with: "").split(separator: " ")
            if words.count == 2 { XCTAssertNotEqual(words[1], words[0].dropFirst(2), "a placeholder that only repeats the option: \(line)") }
        }
        // EXIT STATUS lists every status `run` ends with, from the host's own constants.
        let exit = String(text[text.range(of: "EXIT STATUS")!.lowerBound..<text.range(of: "ENVIRONMENT")!.lowerBound])
        for status in [HostExit.ok, HostExit.failure, HostExit.scriptError, HostExit.pluginRefused, HostExit.watchdogKill,
                       HostExit.terminationOverdue, HostExit.pluginExit, HostExit.isolatedPluginFailed, HostExit.scenarioLeftRunning,
                       HostExit.noPlugins, HostExit.usage] {
            XCTAssertTrue(exit.contains("\n       \(status) "), "EXIT STATUS names \(status): \(exit)")
        }
        // A bad input gets a clear error, not a page.
        let bad = try CBuild.run("/bin/sh", ["-c", "echo '{\"nope\": 1}' | '\(CBuild.products)/lifecycle-manual' --version 1"])
        XCTAssertEqual(bad.status, 1)
        XCTAssertTrue(bad.output.contains("lifecycle-manual: standard input is not ArgumentParser's --experimental-dump-help output"), bad.output)
    }
}
