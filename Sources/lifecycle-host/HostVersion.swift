import CLifecycleABI

/// What `lifecycle-host --version` prints: the host's version, the C ABI it speaks and the library it
/// runs. The version is the C ABI's, as the installed library's (the Makefile's VERSION: MAJOR.MINOR.0);
/// both come from include/lifecycle.h, so the three can never disagree. The host links the engine and
/// the C layer into itself: the library it runs is that code, the code of liblifecycle.so of the same
/// version (`lc_abi_version` there answers the same ABI).
enum HostVersion {
    static let abi = "\(LC_ABI_VERSION_MAJOR).\(LC_ABI_VERSION_MINOR)"
    static let version = "\(abi).0"

    static var text: String {
        """
        lifecycle-host \(version)
        C ABI \(abi) (include/lifecycle.h): loads plugins built for ABI \(LC_ABI_VERSION_MAJOR).0 to \(abi)
        library: liblifecycle \(version), built into this executable (also its plugin runner)
        """
    }
}
