@preconcurrency import Glibc

// C plugins the benchmarks build at the start of a group, with `cc` and the public header only, as a
// plugin's author would: `cc -shared -fPIC -O2 -I include`.

/// The repository's include folder (lifecycle.h), found from this file's path at build time: the bench
/// package sits in the repository's Benchmarks/ folder.
public func includeFolder() -> String {
    let file = #filePath
    var parts = file.split(separator: "/", omittingEmptySubsequences: false)
    parts.removeLast(3)  // Benchmarks/BenchHarness/Plugins.swift
    return parts.joined(separator: "/") + "/include"
}

/// Builds `source` into the shared object `image` with `cc -shared -fPIC -O2 -I include` and `flags`;
/// false (with cc's output) when it fails.
public func buildPlugin(source: String, image: String, flags: [String] = []) -> Bool {
    let arguments = ["-shared", "-fPIC", "-O2", "-I", includeFolder()] + flags + ["-o", image, source]
    guard let run = timedRun("/usr/bin/env", ["cc"] + arguments, errorsToOutput: true) else { return false }
    if run.status != 0 { warn("lifecycle-bench: cc \(arguments.joined(separator: " ")) failed:\n\(run.output)") }
    return run.status == 0
}
