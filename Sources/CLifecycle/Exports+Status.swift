import CLifecycleABI
import CLifecycleSystem
import LifecycleC

// The exported status functions of include/lifecycle.h. `@c @implementation`: the compiler checks
// each signature against the header's declaration. Every one is [thread-safe].

@c @implementation public func lc_abi_version(_ major: UnsafeMutablePointer<UInt32>?, _ minor: UnsafeMutablePointer<UInt32>?) {
    lcABIVersion(major, minor)
}

@c @implementation public func lc_status_name(_ status: lc_status) -> UnsafePointer<CChar>? { lcStatusName(status) }

@c @implementation public func lc_status_message(_ status: lc_status) -> UnsafePointer<CChar>? { lcStatusMessage(status) }

@c @implementation public func lc_last_error_message() -> UnsafePointer<CChar>? { lcLastErrorMessage() }

@c @implementation public func lc_state_name(_ state: lc_state) -> UnsafePointer<CChar>? { lcStateName(state) }
