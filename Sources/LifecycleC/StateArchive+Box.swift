// How a state archive crosses the C ABI and back: as a dictionary box (`lc_dict *coder`).
import AppLifecycle

extension StateArchive {
    /// Takes back what C wrote into `box`, the coder this archive was handed as; a write into it that
    /// was refused (`UserInfoBox.refusedWrite`) means the plugin's state was not encoded: the archive
    /// fails (`StateArchive.failure`, `.writeRefused`) and the engine keeps the previous one.
    package func take(_ box: UserInfoBox) {
        values = box.value
        if let refused = box.refusedWrite { fail(.writeRefused(function: refused.function, message: refused.message)) }
    }
}
