import CLifecycleABI
@preconcurrency import Glibc
import PluginHost

/// What `lifecycle-host --version` prints: the host's version, the C ABI it speaks and the library it
/// runs, with paths. The version is the C ABI's, as the installed library's (the Makefile's VERSION:
/// MAJOR.MINOR.0); both come from include/lifecycle.h, so the three can never disagree. The host links
/// the engine and the C layer into itself: the library it runs is that code, the code of
/// liblifecycle.so of the same version (`lc_abi_version` there answers the same ABI), at the
/// executable's own path. Its isolated plugins run in the plugin runner, a separate executable: the one
/// an isolated plugin would start now (`IsolationRunner.resolve`), or why there is none. Installed by
/// `make install`, the shared library sits in the prefix's `lib` beside the host's `bin`: named when it
/// is there.
enum HostVersion {
    static let abi = "\(LC_ABI_VERSION_MAJOR).\(LC_ABI_VERSION_MINOR)"
    static let version = "\(abi).0"

    static var text: String {
        let executable = executablePath() ?? "this executable"
        var lines = [
            "lifecycle-host \(version)",
            "C ABI \(abi) (include/lifecycle.h): loads plugins built for ABI \(LC_ABI_VERSION_MAJOR).0 to \(abi)",
            "library: liblifecycle \(version), built into \(executable)",
        ]
        do throws(IsolationStartError) {
            lines.append("plugin runner: \(try IsolationRunner.resolve())")
        } catch {
            lines.append("plugin runner: not found: \(error.message)")
        }
        if let installed = installedLibrary(beside: executable) { lines.append("installed library: \(installed)") }
        return lines.joined(separator: "\n")
    }

    /// The running executable's path (`/proc/self/exe`), nil when it cannot be read.
    static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `PREFIX/lib/liblifecycle.so.MAJOR` for an executable at `PREFIX/bin/…`, when that file exists.
    static func installedLibrary(beside executable: String) -> String? {
        guard let slash = executable.lastIndex(of: "/") else { return nil }
        let bin = executable[..<slash]
        guard bin.hasSuffix("/bin") else { return nil }
        let library = String(bin.dropLast("bin".count)) + "lib/liblifecycle.so.\(LC_ABI_VERSION_MAJOR)"
        return access(library, F_OK) == 0 ? library : nil
    }
}
