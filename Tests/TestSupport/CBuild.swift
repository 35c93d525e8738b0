import Foundation

/// Builds C at test time and runs programs: the real compiler, the real loader.
public enum CBuild {
    /// The repository root (this file is Tests/TestSupport/CBuild.swift).
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    /// Where SwiftPM put the test binary, liblifecycle.so and the plugin products.
    public static let products: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: exe).deletingLastPathComponent()
        if url.path.hasSuffix(".xctest") || url.path.contains(".xctest/") {
            while url.path.contains(".xctest") { url.deleteLastPathComponent() }
        }
        return url.path
    }()

    public static func temporaryFolder(_ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "lc-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The XDG_CACHE_HOME of the programs `run` starts: one temporary folder per test process.
    public static let testCacheFolder = NSTemporaryDirectory() + "lc-test-cache-\(getpid())"

    /// Runs a program; returns its exit status and standard output (standard error appended after
    /// "--stderr--", or with `mergingStandardError` written into the same pipe, in the order written).
    @discardableResult
    public static func run(_ program: String, mergingStandardError: Bool = false, _ arguments: [String],
                           environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        // The host remembers scanned plugins under XDG_CACHE_HOME: a test's children use a folder of
        // the test process, never the user's cache (a test that cares passes its own).
        var base = ProcessInfo.processInfo.environment
        base["XDG_CACHE_HOME"] = testCacheFolder
        process.environment = base.merging(environment) { $1 }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = mergingStandardError ? out : err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = mergingStandardError ? Data() : err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        var text = String(decoding: stdout, as: UTF8.self)
        if !stderr.isEmpty { text += "--stderr--\n" + String(decoding: stderr, as: UTF8.self) }
        return (process.terminationStatus, text)
    }

    /// Compiles C source into a shared object with `cc -shared -fPIC -I include`.
    public static func sharedObject(_ source: String, named name: String, in folder: String) throws -> String {
        let file = folder + "/\(name).c"
        try source.write(toFile: file, atomically: true, encoding: .utf8)
        return try sharedObject(file: file, named: name, in: folder)
    }

    /// Compiles a C file (e.g. a fixture of the repository) into `folder/name.so`, each of `defines`
    /// passed as `-D` (`NAME` or `NAME=VALUE`, the value as C source).
    public static func sharedObject(file: String, defines: [String] = [], named name: String, in folder: String) throws -> String {
        let output = folder + "/\(name).so"
        let result = try run("/usr/bin/cc", ["-Wall", "-Werror", "-shared", "-fPIC", "-I", root + "/include"] + defines.map { "-D" + $0 }
                                 + [file, "-o", output])
        guard result.status == 0 else { throw NSError(domain: "cc", code: Int(result.status), userInfo: [NSLocalizedDescriptionKey: result.output]) }
        return output
    }

    /// Whether this test process runs under ThreadSanitizer (built with `--sanitize=thread`): its
    /// runtime is linked in. Memory figures mean little there (TSan's shadow memory counts in the
    /// resident set, about three times what the program touches).
    public static let underThreadSanitizer = dlsym(nil, "__tsan_init") != nil

    /// Whether this test process runs under AddressSanitizer (built with `--sanitize=address`): its
    /// runtime is linked in. Memory figures mean little there too (ASan's shadow memory and the
    /// quarantine of freed blocks, 256 MiB, count in the resident set).
    public static let underAddressSanitizer = dlsym(nil, "__asan_init") != nil

    /// Whether this test process runs under either sanitizer.
    public static var underSanitizer: Bool { underThreadSanitizer || underAddressSanitizer }

    /// "ThreadSanitizer" or "AddressSanitizer" (nil under neither): for what a test says when it
    /// leaves a check out under a sanitizer.
    public static var sanitizer: String? {
        underThreadSanitizer ? "ThreadSanitizer" : underAddressSanitizer ? "AddressSanitizer" : nil
    }

    /// The compiler (and its first flags) for a program linked with the built liblifecycle.so: `cc`;
    /// but when this test process runs under a sanitizer (`swift build --sanitize=thread` or
    /// `--sanitize=address`, as `.ci/run` does), the library calls the sanitizer's runtime, which a
    /// program gets only by being linked with `-fsanitize=…`: then the toolchain's own clang (the
    /// `clang` beside `swiftc` on PATH, whose runtime is the one Swift links), so that the program runs
    /// under the sanitizer as well. TSan's runtime has libdispatch interceptors: with it, the
    /// toolchain's libdispatch and BlocksRuntime too.
    public static let linkedProgramCompiler: (path: String, flags: [String]) = {
        guard underSanitizer else { return ("/usr/bin/cc", []) }
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        let bin = folders.first { FileManager.default.isExecutableFile(atPath: $0 + "/swiftc") && FileManager.default.isExecutableFile(atPath: $0 + "/clang") }
            ?? "/usr/bin"
        guard underThreadSanitizer else { return (bin + "/clang", ["-fsanitize=address"]) }
        let runtime = URL(fileURLWithPath: bin).deletingLastPathComponent().appendingPathComponent("lib/swift/linux").path
        return (bin + "/clang", ["-fsanitize=thread", "-L", runtime, "-Wl,-rpath,\(runtime)", "-ldispatch", "-lBlocksRuntime"])
    }()

    /// `linkedProgramCompiler` as the start of a shell command line (`cc` outside a sanitizer): for a
    /// test that builds a program linking liblifecycle.so the way a user types it.
    public static var linkedProgramCommand: String {
        let compiler = linkedProgramCompiler
        return compiler.path == "/usr/bin/cc" ? "cc" : ([compiler.path] + compiler.flags).map { "'\($0)'" }.joined(separator: " ")
    }

    /// Compiles the C program `fixture` (a path below the repository root) against include/lifecycle.h,
    /// linked with the built liblifecycle.so (`extra`: more compiler arguments), and runs it if it
    /// compiled. Returns both results; `run` is nil when the compile failed.
    public static func runLinkedProgram(_ fixture: String, in folder: String, extra: [String] = [])
        throws -> (compile: (status: Int32, output: String), run: (status: Int32, output: String)?)
    {
        let program = folder + "/" + URL(fileURLWithPath: fixture).deletingPathExtension().lastPathComponent
        let compiler = linkedProgramCompiler
        let compile = try run(compiler.path, compiler.flags + ["-Wall", "-Werror", root + "/" + fixture, "-I", root + "/include", "-L", products,
                                                               "-llifecycle", "-Wl,-rpath,\(products)"] + extra + ["-o", program])
        guard compile.status == 0 else { return (compile, nil) }
        return (compile, try run(program, []))
    }

    /// Where `got` (lines) differs from `want` (text, one line each): `line N: got '…', want '…'`, and
    /// a count line when they differ in length. Empty when they are the same.
    public static func mismatchedLines(_ got: [String], _ want: String) -> [String] {
        let wanted = (want + "\n").split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var differences: [String] = []
        for (index, line) in wanted.enumerated() {
            let found = index < got.count ? got[index] : "<end>"
            if found != line { differences.append("line \(index + 1): got '\(found)', want '\(line)'") }
        }
        if got.count != wanted.count { differences.append("\(got.count) lines, want \(wanted.count)") }
        return differences
    }

    /// A plugin source with the descriptor fields given (C expressions).
    public static func plugin(id: String = "com.example.test", magic: String = "LC_PLUGIN_MAGIC", major: String = "LC_ABI_VERSION_MAJOR",
                       minor: String = "LC_ABI_VERSION_MINOR", size: String = "sizeof(lc_plugin_descriptor_t)",
                       initBody: String = "return LC_OK;", extra: String = "", entry: Bool = true) -> String
    {
        """
        #include "lifecycle.h"
        static const lc_host_api_t *host;
        \(extra)
        static lc_status plugin_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
            (void)plugin, (void)state; host = api; (void)host;
            \(initBody)
        }
        static const lc_plugin_descriptor_t descriptor = {
            .struct_size = \(size), .magic = \(magic), .abi_major = \(major), .abi_minor = \(minor),
            .id = "\(id)", .version = "0.1", .description = "test", .init = plugin_init,
        };
        \(entry ? "LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }" : "LC_EXPORT int not_the_entry(void) { return descriptor.magic != 0; }")
        """
    }
}

