import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc

// The status side of the C ABI: the thread-local last error, status and state names, and the
// mapping from `ApplicationError` to `lc_status`.

// MARK: - Last error (thread-local)

/// The key of the calling thread's last error message: a malloc'd C string, freed by the key's
/// destructor when the thread exits, or by the next failure on that thread.
private let lastErrorKey: pthread_key_t = {
    var key = pthread_key_t()
    let result = pthread_key_create(&key) { pointer in free(pointer) }
    precondition(result == 0, "pthread_key_create failed: \(errnoDescription(result))")
    return key
}()

private func errnoDescription(_ code: Int32) -> String {
    guard let text = lcs_strerror(code) else { return "error \(code)" }
    return String(cString: text)
}

/// Records `message` as the calling thread's last error and returns `status`, so that a failing
/// path reads `return lcFail(...)`. The previous message of this thread is freed. [thread-safe]
@discardableResult
package func lcFail(_ status: lc_status, _ message: String) -> lc_status {
    let copy = message.withCString { strdup($0) }
    let previous = pthread_getspecific(lastErrorKey)
    pthread_setspecific(lastErrorKey, copy)
    free(previous)
    return status
}

/// Forgets the calling thread's last error message: `lcLastErrorMessage()` is "" until the next
/// failure on this thread (the loader clears it before a plugin's `init`, to tell what failed in
/// it). [thread-safe]
package func lcClearLastError() {
    let previous = pthread_getspecific(lastErrorKey)
    pthread_setspecific(lastErrorKey, nil)
    free(previous)
}

/// `lcFail` for the header's `LC_ERR_*` constants, which Swift imports as `Int`. [thread-safe]
@discardableResult
package func lcFail(_ status: Int, _ message: String) -> lc_status {
    lcFail(lc_status(status), message)
}

/// Records an engine error as the calling thread's last error and returns its `lc_status`. [thread-safe]
@discardableResult
package func lcFail(_ error: ApplicationError) -> lc_status {
    lcFail(lcStatus(for: error.code), error.message)
}

/// Records any error: an `ApplicationError` keeps its code, anything else is `LC_ERR_INTERNAL`. [thread-safe]
@discardableResult
package func lcFail(_ error: any Error, in function: String) -> lc_status {
    if let error = error as? ApplicationError { return lcFail(error) }
    return lcFail(LC_ERR_INTERNAL, "\(function): \(error)")
}

/// Records "`function`: `argument` is NULL" and returns `LC_ERR_INVALID_ARGUMENT`. [thread-safe]
@discardableResult
package func lcNull(_ function: String, _ argument: String) -> lc_status {
    lcFail(LC_ERR_INVALID_ARGUMENT, "\(function): \(argument) is NULL")
}

/// Records "`function`: no notification name has id `id`" and returns `LC_ERR_UNKNOWN_NAME`. Kept
/// out of line: the fast paths that check ids only branch to it. [thread-safe]
@inline(never)
package func lcUnknownNameID(_ id: UInt32, _ function: String) -> lc_status {
    lcFail(LC_ERR_UNKNOWN_NAME, "\(function): no notification name has id \(id) (ids come from lc_name_intern; 0 is never valid)")
}

/// Records that a post or `perform_async` from this thread was refused by the loop queue's bound and
/// returns `LC_ERR_QUEUE_FULL`. [thread-safe]
@discardableResult
package func lcQueueFull(_ function: String) -> lc_status {
    lcFail(LC_ERR_QUEUE_FULL, "\(function): refused: this thread already has \(MainRunLoop.maxQueuedPerThread) posts waiting for the main loop "
        + "(or all threads \(MainRunLoop.maxQueued)); nothing was queued: retry after the loop has run, or post less")
}

/// The `lc_status` of a post by interned id, whose userInfo was `userInfo`. [thread-safe]
package func lcStatus(_ outcome: AppNotificationCenter.PostOutcome, name id: UInt32, userInfo: OpaquePointer?, _ function: String) -> lc_status {
    switch outcome {
    case .posted: lc_status(LC_OK)
    case .unknownName: lcUnknownNameID(id, function)
    case .refused: lcQueueFull(function)
    case .nestingLimit: lcNestingLimit(NotificationName(internedID: id)?.rawValue ?? "#\(id)", function)
    case .overLimit: lcPostLimitRefusal(userInfo, function) ?? lcFail(LC_ERR_INTERNAL, "\(function): a userInfo over the limits that is not")
    }
}

/// Records "`function`: 'NAME' was not posted: …" and returns LC_ERR_NESTING_LIMIT. [thread-safe]
@inline(never)
package func lcNestingLimit(_ name: String, _ function: String) -> lc_status {
    lcFail(LC_ERR_NESTING_LIMIT, "\(function): '\(name)' was not posted: \(AppNotificationCenter.maximumNesting) dispatches are "
        + "already nested (the nesting limit; an observer re-posting from its own callback?); nothing was delivered")
}

/// Decodes a C string from the caller as UTF-8; on invalid UTF-8 records
/// "`function`: `argument` is not valid UTF-8" (LC_ERR_INVALID_ARGUMENT) and returns nil. [thread-safe]
package func lcString(_ pointer: UnsafePointer<CChar>, _ function: String, _ argument: String) -> String? {
    if let string = String(validatingCString: pointer) { return string }
    lcFail(LC_ERR_INVALID_ARGUMENT, "\(function): \(argument) is not valid UTF-8")
    return nil
}

/// The calling thread's last error message ("" if none): owned by the library, valid until the next
/// failing call on this thread. [thread-safe]
package func lcLastErrorMessage() -> UnsafePointer<CChar> {
    if let message = pthread_getspecific(lastErrorKey) {
        return UnsafePointer(message.assumingMemoryBound(to: CChar.self))
    }
    return cString("")
}

/// A failure to hand back to a C caller as a status and a message (`lcFail(error.status, error.message)`).
package struct CStatusError: Error, Sendable {
    package let status: lc_status
    package let message: String

    package init(status: lc_status, message: String) {
        self.status = status
        self.message = message
    }
}

// MARK: - Status codes

/// The `lc_status` for an engine error code; codes added later map to `LC_ERR_INTERNAL`. [thread-safe]
package func lcStatus(for code: ApplicationError.Code) -> lc_status {
    switch code {
    case .illegalAction: lc_status(LC_ERR_ILLEGAL_ACTION)
    case .actionInProgress: lc_status(LC_ERR_ACTION_IN_PROGRESS)
    case .backgroundModeMissing: lc_status(LC_ERR_BACKGROUND_MODE_MISSING)
    case .unknownBackgroundTask: lc_status(LC_ERR_NOT_FOUND)
    case .unknownNotificationName: lc_status(LC_ERR_UNKNOWN_NAME)
    case .invalidNotificationName: lc_status(LC_ERR_INVALID_NAME)
    case .notOnLoopThread: lc_status(LC_ERR_WRONG_THREAD)
    case .archiveUnreadable, .archiveCorrupt, .archiveWriteFailed: lc_status(LC_ERR_ARCHIVE)
    case .system: lc_status(LC_ERR_SYSTEM)
    case .invalidArgument: lc_status(LC_ERR_INVALID_ARGUMENT)
    case .unknownScene: lc_status(LC_ERR_NOT_FOUND)
    default: lc_status(LC_ERR_INTERNAL)
    }
}

/// A status constant's name and generic sentence.
private struct StatusText {
    let name: StaticString
    let message: StaticString
}

private func statusText(_ status: lc_status) -> StatusText {
    switch Int(status) {
    case LC_OK: StatusText(name: "LC_OK", message: "success")
    case LC_ERR_INVALID_ARGUMENT:
        StatusText(name: "LC_ERR_INVALID_ARGUMENT", message: "an argument is NULL, too small or out of range")
    case LC_ERR_ILLEGAL_ACTION:
        StatusText(name: "LC_ERR_ILLEGAL_ACTION", message: "the action is not legal in the current state; nothing changed")
    case LC_ERR_ACTION_IN_PROGRESS:
        StatusText(name: "LC_ERR_ACTION_IN_PROGRESS",
                   message: "an action was started from inside a callback of another action")
    case LC_ERR_BACKGROUND_MODE_MISSING:
        StatusText(name: "LC_ERR_BACKGROUND_MODE_MISSING",
                   message: "the action needs a background mode the application does not declare")
    case LC_ERR_UNKNOWN_NAME:
        StatusText(name: "LC_ERR_UNKNOWN_NAME",
                   message: "not a standard notification name, an alias, or a dotted custom name")
    case LC_ERR_INVALID_NAME:
        StatusText(name: "LC_ERR_INVALID_NAME", message: "the name is empty, too long, or contains white space")
    case LC_ERR_WRONG_THREAD:
        StatusText(name: "LC_ERR_WRONG_THREAD", message: "a main-thread function was called from another thread")
    case LC_ERR_NOT_FOUND:
        StatusText(name: "LC_ERR_NOT_FOUND", message: "no such observer, task, key, plugin or delegate")
    case LC_ERR_TYPE_MISMATCH:
        StatusText(name: "LC_ERR_TYPE_MISMATCH", message: "the dictionary value has another type")
    case LC_ERR_ARCHIVE:
        StatusText(name: "LC_ERR_ARCHIVE", message: "a state archive could not be read or written")
    case LC_ERR_SYSTEM: StatusText(name: "LC_ERR_SYSTEM", message: "a system call failed")
    case LC_ERR_PLUGIN_REFUSED:
        StatusText(name: "LC_ERR_PLUGIN_REFUSED", message: "a plugin failed a check or its init")
    case LC_ERR_VERSION: StatusText(name: "LC_ERR_VERSION", message: "the ABI versions do not match")
    case LC_ERR_DUPLICATE: StatusText(name: "LC_ERR_DUPLICATE", message: "the id is already in use")
    case LC_ERR_INTERNAL: StatusText(name: "LC_ERR_INTERNAL", message: "an internal error in the library")
    case LC_ERR_QUEUE_FULL:
        StatusText(name: "LC_ERR_QUEUE_FULL", message: "this thread has too many posts waiting for the main loop; nothing was queued")
    case LC_ERR_NESTING_LIMIT:
        StatusText(name: "LC_ERR_NESTING_LIMIT", message: "a post from inside 64 nested dispatches was refused; nothing was delivered")
    case LC_ERR_QUOTA:
        StatusText(name: "LC_ERR_QUOTA", message: "the plugin is at one of its quotas; nothing changed")
    default: StatusText(name: "LC_STATUS_UNKNOWN", message: "not a known status code")
    }
}

/// The constant's name, e.g. "LC_ERR_ILLEGAL_ACTION"; "LC_STATUS_UNKNOWN" for other values.
/// Static storage. [thread-safe]
package func lcStatusName(_ status: lc_status) -> UnsafePointer<CChar> { cString(statusText(status).name) }

/// A generic sentence for the code. Static storage. [thread-safe]
package func lcStatusMessage(_ status: lc_status) -> UnsafePointer<CChar> { cString(statusText(status).message) }

/// The ABI version of this library; either pointer may be NULL. [thread-safe]
package func lcABIVersion(_ major: UnsafeMutablePointer<UInt32>?, _ minor: UnsafeMutablePointer<UInt32>?) {
    major?.pointee = UInt32(LC_ABI_VERSION_MAJOR)
    minor?.pointee = UInt32(LC_ABI_VERSION_MINOR)
}

// MARK: - States

extension ApplicationState {
    /// The state for a C `lc_state`, or nil for a value outside the enum.
    package init?(lcState: lc_state) {
        switch Int(lcState) {
        case LC_STATE_NOT_RUNNING: self = .notRunning
        case LC_STATE_INACTIVE: self = .inactive
        case LC_STATE_ACTIVE: self = .active
        case LC_STATE_BACKGROUND: self = .background
        case LC_STATE_SUSPENDED: self = .suspended
        default: return nil
        }
    }

    /// The state as a C `lc_state`.
    package var lcState: lc_state {
        switch self {
        case .notRunning: lc_state(LC_STATE_NOT_RUNNING)
        case .inactive: lc_state(LC_STATE_INACTIVE)
        case .active: lc_state(LC_STATE_ACTIVE)
        case .background: lc_state(LC_STATE_BACKGROUND)
        case .suspended: lc_state(LC_STATE_SUSPENDED)
        }
    }
}

/// "not-running", "inactive", "active", "background", "suspended"; "unknown" for other values.
/// Static storage. [thread-safe]
package func lcStateName(_ state: lc_state) -> UnsafePointer<CChar> {
    let name: StaticString =
        switch ApplicationState(lcState: state) {
        case .notRunning: "not-running"
        case .inactive: "inactive"
        case .active: "active"
        case .background: "background"
        case .suspended: "suspended"
        case nil: "unknown"
        }
    return cString(name)
}

/// A string literal as a C string: static storage, NUL-terminated (`StaticString.utf8Start`).
private func cString(_ string: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(string.utf8Start).assumingMemoryBound(to: CChar.self)
}
