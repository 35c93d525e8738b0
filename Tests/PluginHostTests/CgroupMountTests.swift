@testable import PluginHost
import XCTest

/// Where a cgroup's folder is, read from a mountinfo text as the kernel writes it: the first
/// read-write mount of the wanted type whose root holds the cgroup, its escapes undone, optional
/// fields of any number, and lines that do not parse skipped.
final class CgroupMountTests: XCTestCase {
    private func cgroup2(_ path: String, _ mounts: String) -> String? {
        PluginCgroup.folder(of: path, in: mounts) { type, _ in type == "cgroup2" }
    }

    func testTheCgroupFolderIsBelowTheFirstReadWriteMountThatHoldsIt() {
        let mounts = """
            22 27 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw
            30 27 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 ro
            31 27 0:26 /user.slice /mnt/my\\040cgroups rw,relatime shared:9 master:3 - cgroup2 cgroup2 rw,nsdelegate
            32 27 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw
            not a mount line
            33 27 0:27 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer

            """
        // The read-only mount is skipped; the one whose root holds the path wins, escapes undone.
        XCTAssertEqual(cgroup2("/user.slice/user-0.slice/session-1.scope", mounts), "/mnt/my cgroups/user-0.slice/session-1.scope")
        XCTAssertEqual(cgroup2("/user.slice", mounts), "/mnt/my cgroups")
        // Not below that root ("/user.slices" is not "/user.slice/…"): the root mount.
        XCTAssertEqual(cgroup2("/user.slices/a", mounts), "/sys/fs/cgroup/user.slices/a")
        XCTAssertEqual(cgroup2("/", mounts), "/sys/fs/cgroup")
        // The super options reach the test: the v1 freezer by its option.
        XCTAssertEqual(PluginCgroup.folder(of: "/lifecycle", in: mounts) { type, options in type == "cgroup" && options.contains("freezer") },
                       "/sys/fs/cgroup/freezer/lifecycle")
        XCTAssertNil(cgroup2("/x", "22 27 0:21 / /proc rw - proc proc rw\n"))
        XCTAssertNil(cgroup2("/x", ""))
        // Too few fields before the separator, or none after it: skipped, not a crash.
        XCTAssertNil(cgroup2("/x", "1 2 3:4 / /a rw -\n1 2 3:4 / - cgroup2 x rw\n- cgroup2 x rw\n"))
    }
}
