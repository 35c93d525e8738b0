import CLifecycleABI
@preconcurrency import Glibc
import PluginHost

/// The refusal for a folder given where a plugin file goes (`run --plugin DIR`, `check DIR`), saying
/// what to give instead (`instead`: "use --plugin-dir DIR …"), where the loader would only say that
/// it is not a regular file; nil for anything that is not a folder (the loader checks those).
func folderRefusal(_ path: String, instead: String) -> PluginRefusal? {
    var info = stat()
    guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
    return PluginRefusal(path: path, reason: "it is a folder, not a plugin file: \(instead)", status: lc_status(LC_ERR_PLUGIN_REFUSED))
}
