// Where `lifecycle-host demo` finds the example plugins.
@preconcurrency import Glibc

/// The folder of the example plugins: next to the executable (a SwiftPM build folder), else
/// `../lib/lifecycle/examples` from it, where `make install` puts them under its prefix. When neither
/// has them, the executable's folder (the demo then builds them from the package, or says what to do).
func examplePluginFolder() -> String {
    let folder = executableFolder()
    guard access(folder + "/libEcho.so", R_OK) != 0,
          let resolved = realpath(folder + "/../lib/lifecycle/examples", nil)
    else { return folder }
    defer { free(resolved) }
    let installed = String(cString: resolved)
    return access(installed + "/libEcho.so", R_OK) == 0 ? installed : folder
}
