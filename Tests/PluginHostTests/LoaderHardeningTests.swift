import AppLifecycle
import CLifecycleABI
import Foundation
import TestSupport
import XCTest
import CLifecycle
@testable import LifecycleC
@testable import PluginHost

/// The loader refuses before it opens: what is not a regular file, unsafe permissions, a damaged or
/// foreign ELF file, a descriptor outside the plugin's image. Each refusal has its exact message, and
/// Echo still loads beside it.
final class LoaderHardeningTests: XCTestCase {
    var folder = ""
    let echo = CBuild.products + "/libEcho.so"

    override func setUpWithError() throws {
        folder = try CBuild.temporaryFolder("hardening")
    }

    override func tearDown() {
        _ = try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder)
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Loads `path` expecting the refusal `reason` (the message is "<path>: <reason>"), then Echo.
    func assertRefused(_ path: String, _ reason: String, options: PluginLoadOptions = [], line: UInt = #line) throws {
        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        XCTAssertThrowsError(try handle.loadPlugin(path: path, options: options), path, line: line) { error in
            XCTAssertEqual((error as? PluginRefusal)?.message, "\(path): \(reason)", line: line)
            XCTAssertEqual((error as? PluginRefusal)?.status, lc_status(LC_ERR_PLUGIN_REFUSED), line: line)
        }
        assertEchoLoads(handle, line: line)
    }

    func assertEchoLoads(_ handle: AppHandle, line: UInt = #line) {
        XCTAssertEqual((try? handle.loadPlugin(path: echo))?.id, "org.applifecycle.echo", "Echo loads beside it", line: line)
    }

    /// A copy of Echo with `edit` applied to its bytes.
    func echoCopy(named name: String, _ edit: (inout [UInt8]) -> Void = { _ in }) throws -> String {
        try HostileFiles.copy(of: echo, named: name, in: folder, edit)
    }

    func testAFIFOIsRefusedPromptly() throws {
        let fifo = folder + "/fifo.so"
        XCTAssertEqual(mkfifo(fifo, 0o644), 0)
        let done = DispatchSemaphore(value: 0)
        let echo = echo
        nonisolated(unsafe) var message: String?
        nonisolated(unsafe) var echoLoaded = false
        // On its own thread (the loop's), so that a loader that blocks in open() fails the test.
        let thread = Thread {
            if let handle = try? AppHandle(configuration: Configuration()) {
                do { _ = try handle.loadPlugin(path: fifo) } catch { message = (error as? PluginRefusal)?.message }
                echoLoaded = (try? handle.loadPlugin(path: echo)) != nil
                handle.shutdown()
            }
            done.signal()
        }
        thread.start()
        if done.wait(timeout: .now() + 10) == .timedOut {
            let writer = open(fifo, O_WRONLY | O_NONBLOCK)  // let a blocked reader go
            if writer >= 0 { close(writer) }
            XCTFail("loading a FIFO blocked")
            _ = done.wait(timeout: .now() + 10)
            return
        }
        XCTAssertEqual(message, "\(fifo): it is a FIFO (named pipe), not a regular file")
        XCTAssertTrue(echoLoaded)
    }

    func testADirectoryADeviceAndASocketAreRefused() throws {
        try FileManager.default.createDirectory(atPath: folder + "/dir.so", withIntermediateDirectories: false)
        try assertRefused(folder + "/dir.so", "it is a directory, not a regular file")
        try assertRefused("/dev/null", "it is a character device, not a regular file")
        let socketPath = folder + "/socket.so"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { socketPath.utf8CString.withUnsafeBytes($0.copyMemory) }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        XCTAssertEqual(bound, 0)
        try assertRefused(socketPath, "it is a socket, not a regular file")
    }

    func testASymbolicLinkIsRefusedEvenToAGoodPlugin() throws {
        let link = folder + "/link.so"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: echo)
        try assertRefused(link, "it is a symbolic link to '\(echo)'; plugins are loaded from regular files only, never through a link")
    }

    /// Cut inside the ELF header, inside the program headers and inside a loadable segment: refused
    /// before anything maps the file (a segment past the end would be SIGBUS inside dlopen).
    func testTruncatedCopiesOfARealPluginAreRefusedWithoutACrash() throws {
        let layout = try HostileFiles.layout(of: echo)
        let phoff = layout.programHeaders, phnum = layout.programHeaderCount
        XCTAssertGreaterThan(layout.lastSegment.size, 0)
        let cases: [(Int, String)] = [
            (3, "not an ELF shared object"),
            (40, "truncated ELF header: the file is 40 bytes; an ELF64 header is 64"),
            (phoff + 56 + 10, "truncated: the program headers (\(phnum) × 56 bytes at offset \(phoff)) end past the end of the file (\(phoff + 66) bytes)"),
        ]
        for (cut, reason) in cases {
            let path = try echoCopy(named: "cut\(cut).so") { $0.removeSubrange(cut...) }
            try assertRefused(path, reason)
        }
        let insideSegment = try HostileFiles.truncated(echo, in: folder)
        try assertRefused(insideSegment.path, insideSegment.reason)
    }

    func testAForeignELFIsRefusedNamingWhatItIsBuiltFor() throws {
        let cases: [(String, (inout [UInt8]) -> Void, String)] = [
            ("riscv", { $0[18] = 243; $0[19] = 0 }, "built for RISC-V (EM_RISCV, 243); this host is x86-64 (EM_X86_64, 62)"),
            ("unknown", { $0[18] = 0x34; $0[19] = 0x12 }, "built for machine 4660 (e_machine); this host is x86-64 (EM_X86_64, 62)"),
            ("class32", { $0[4] = 1 }, "built for 32-bit ELF (ELFCLASS32, 1); this host is 64-bit (ELFCLASS64, 2)"),
            ("bigendian", { $0[5] = 2 }, "built big-endian (ELFDATA2MSB, 2); this host is little-endian (ELFDATA2LSB, 1)"),
            ("executable", { $0[16] = 2 }, "an ELF executable (ET_EXEC, 2), not a shared object (ET_DYN, 3)"),
            ("relocatable", { $0[16] = 1 }, "an ELF relocatable object (ET_REL, 1), not a shared object (ET_DYN, 3)"),
            ("phentsize", { $0[54] = 32 }, "program header entries are 32 bytes (e_phentsize); ELF64's are 56"),
            ("phnum", { $0[56] = 0; $0[57] = 0 }, "no program headers (e_phnum is 0)"),
        ]
        for (name, edit, reason) in cases {
            try assertRefused(try echoCopy(named: "\(name).so", edit), reason)
        }
        let aarch64 = try HostileFiles.aarch64(echo, in: folder)
        try assertRefused(aarch64.path, aarch64.reason)
    }

    /// A plugin linked with liblifecycle.so would run a second engine beside the host's (found through
    /// its RUNPATH), or fail in dlopen without saying why (not found): both are refused before dlopen,
    /// naming the library and what to do instead.
    func testAPluginLinkingTheHostLibraryIsRefusedSayingWhy() throws {
        let source = folder + "/linked.c"
        try CBuild.plugin(id: "com.example.linked").write(toFile: source, atomically: true, encoding: .utf8)
        let reason = "it links liblifecycle.so (DT_NEEDED): a plugin must not link the host's library (it would run an engine "
            + "of its own beside the host's); it reaches the host through lc_host_api_t only. Build it against lifecycle.h alone "
            + "(cc -I…/include without -llifecycle; a Swift package: the LifecycleABI product, not lifecycle)"
        for (name, extra) in [("linked", [String]()), ("linked-runpath", ["-Wl,-rpath,\(CBuild.products)"])] {
            let image = folder + "/\(name).so"
            // --no-as-needed: the fixture calls no lc_* function, and Debian's cc drops an unused library.
            let built = try CBuild.run("/usr/bin/cc", ["-shared", "-fPIC", "-I", CBuild.root + "/include", source, "-Wl,--no-as-needed",
                                                       "-L", CBuild.products, "-llifecycle"] + extra + ["-o", image])
            XCTAssertEqual(built.status, 0, built.output)
            try assertRefused(image, reason)
        }
    }

    func testUnsafePermissionsAreRefusedUnlessAllowed() throws {
        let file = try CBuild.sharedObject(CBuild.plugin(id: "com.example.writable"), named: "writable", in: folder)
        XCTAssertEqual(chmod(file, 0o666), 0)
        try assertRefused(file, "unsafe permissions: the file is group- and world-writable (mode 0666)")
        XCTAssertEqual(chmod(file, 0o620), 0)
        try assertRefused(file, "unsafe permissions: the file is group-writable (mode 0620)")
        let allowed = try AppHandle(configuration: Configuration())
        defer { allowed.shutdown() }
        XCTAssertEqual(try allowed.loadPlugin(path: file, options: .allowUnsafePermissions).id, "com.example.writable")
        assertEchoLoads(allowed)

        // A world-writable folder that is not sticky: anyone could have replaced the file in it.
        let open = folder + "/open"
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
        let inOpen = try CBuild.sharedObject(CBuild.plugin(id: "com.example.inopen"), named: "inopen", in: open)
        XCTAssertEqual(chmod(open, 0o777), 0)
        try assertRefused(inOpen, "unsafe permissions: the folder \(open) is group- and world-writable (mode 0777) and not a sticky folder owned by root")
        let folderAllowed = try AppHandle(configuration: Configuration())
        defer { folderAllowed.shutdown() }
        XCTAssertEqual(try folderAllowed.loadPlugin(path: inOpen, options: .allowUnsafePermissions).id, "com.example.inopen")
        assertEchoLoads(folderAllowed)

        // Sticky and owned by root, like /tmp: others cannot replace what is in it.
        if geteuid() == 0 {
            XCTAssertEqual(chmod(open, 0o1777), 0)
            let sticky = try AppHandle(configuration: Configuration())
            defer { sticky.shutdown() }
            XCTAssertEqual(try sticky.loadPlugin(path: inOpen).id, "com.example.inopen")
        }
    }

    func testAFileOwnedByAnotherUserIsRefusedUnlessAllowed() throws {
        try XCTSkipUnless(geteuid() == 0, "giving a file away needs root")
        let file = try CBuild.sharedObject(CBuild.plugin(id: "com.example.foreign"), named: "foreign", in: folder)
        XCTAssertEqual(chown(file, 4321, 4321), 0)
        try assertRefused(file, "unsafe owner: the file is owned by uid 4321, neither this process's user (uid 0) nor root")
        let sub = folder + "/theirs"
        try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: false)
        let inTheirs = try CBuild.sharedObject(CBuild.plugin(id: "com.example.intheirs"), named: "intheirs", in: sub)
        XCTAssertEqual(chown(sub, 4321, 4321), 0)
        try assertRefused(inTheirs, "unsafe owner: the folder \(sub) is owned by uid 4321, neither this process's user (uid 0) nor root")
        let allowed = try AppHandle(configuration: Configuration())
        defer { allowed.shutdown() }
        XCTAssertEqual(try allowed.loadPlugin(path: file, options: .allowUnsafePermissions).id, "com.example.foreign")
    }

    /// A folder reached through a symbolic link is checked where it really is, with its real parents.
    func testFoldersAreCheckedWhereTheyReallyAre() throws {
        let real = folder + "/real"
        try FileManager.default.createDirectory(atPath: real + "/plugins", withIntermediateDirectories: true)
        _ = try CBuild.sharedObject(CBuild.plugin(id: "com.example.linked"), named: "linked", in: real + "/plugins")
        try FileManager.default.createSymbolicLink(atPath: folder + "/link", withDestinationPath: real + "/plugins")
        XCTAssertEqual(chmod(real, 0o777), 0)
        for path in [folder + "/link/linked.so", real + "/plugins/../plugins/linked.so"] {
            try assertRefused(path, "unsafe permissions: the folder \(real) is group- and world-writable (mode 0777) and not a sticky folder owned by root")
        }
        XCTAssertEqual(chmod(real, 0o755), 0)
        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        XCTAssertEqual(try handle.loadPlugin(path: folder + "/link/linked.so").id, "com.example.linked", "safe where it really is")
    }

    /// A folder's chain is checked once: a later plugin from the same folder re-reads that folder
    /// alone, and its parents again only when the folder is no longer the same unchanged object.
    func testAFoldersChainIsCheckedOncePerChangeOfTheFolder() throws {
        let parent = folder + "/parent", plugins = parent + "/plugins"
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        let first = try CBuild.sharedObject(CBuild.plugin(id: "com.example.once1"), named: "once1", in: plugins)
        let second = try CBuild.sharedObject(CBuild.plugin(id: "com.example.once2"), named: "once2", in: plugins)
        let third = try CBuild.sharedObject(CBuild.plugin(id: "com.example.once3"), named: "once3", in: plugins)
        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        XCTAssertEqual(try handle.loadPlugin(path: first).id, "com.example.once1", "the chain is checked and passes")

        // A parent made unsafe afterwards is not re-read while the folder is the same unchanged object:
        // nobody could have swapped the folder or the files in it without changing it.
        XCTAssertEqual(chmod(parent, 0o777), 0)
        XCTAssertEqual(try handle.loadPlugin(path: second).id, "com.example.once2", "the folder is unchanged: its chain stands")

        // The folder replaced through the unsafe parent: another object, so the chain is checked again.
        XCTAssertEqual(rename(plugins, parent + "/old"), 0)
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: false)
        XCTAssertEqual(rename(parent + "/old/once3.so", third), 0)
        try assertRefused(third, "unsafe permissions: the folder \(parent) is group- and world-writable (mode 0777) and not a sticky folder owned by root")

        // The folder's own mode changed: read again at once (it is the one folder always re-read).
        XCTAssertEqual(chmod(parent, 0o755), 0)
        XCTAssertEqual(try handle.loadPlugin(path: third).id, "com.example.once3", "checked again, and safe again")
        XCTAssertEqual(chmod(plugins, 0o777), 0)
        let fourth = try CBuild.sharedObject(CBuild.plugin(id: "com.example.once4"), named: "once4", in: plugins)
        try assertRefused(fourth, "unsafe permissions: the folder \(plugins) is group- and world-writable (mode 0777) and not a sticky folder owned by root")
    }

    /// No descriptor is kept per plugin: loading 20 plugins leaves the process's descriptors as they were.
    func testLoadingKeepsNoDescriptorPerPlugin() throws {
        var paths: [String] = []
        for index in 0..<20 {
            paths.append(try CBuild.sharedObject(CBuild.plugin(id: "com.example.fd\(index)"), named: "fd\(index)", in: folder))
        }
        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        let before = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
        for (index, path) in paths.enumerated() {
            XCTAssertEqual(try handle.loadPlugin(path: path).id, "com.example.fd\(index)", "each load is its own image")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count, before, "no descriptor kept")
    }

    /// The descriptor (and its strings) must lie inside the plugin's own image: a pointer elsewhere is
    /// refused before it is read.
    func testADescriptorOrIdOutsideThePluginsImageIsRefused() throws {
        let heapDescriptor = try CBuild.sharedObject(CBuild.plugin(id: "com.example.heap", entry: false) + """

            #include <stdlib.h>
            #include <string.h>
            LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) {
                lc_plugin_descriptor_t *copy = malloc(sizeof *copy);
                memcpy(copy, &descriptor, sizeof *copy);
                return copy;
            }
            """, named: "heapdescriptor", in: folder)
        try assertRefused(heapDescriptor, "lc_plugin_entry() returned a pointer outside the plugin's own image; the descriptor must be static data of the plugin")
        let heapID = try CBuild.sharedObject("""
            #include "lifecycle.h"
            #include <string.h>
            static lc_status plugin_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
                (void)api, (void)plugin, (void)state; return LC_OK;
            }
            static lc_plugin_descriptor_t descriptor = {
                .struct_size = sizeof(lc_plugin_descriptor_t), .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
                .abi_minor = LC_ABI_VERSION_MINOR, .id = "com.example.static", .init = plugin_init,
            };
            LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) {
                descriptor.id = strdup("com.example.heapid");
                return &descriptor;
            }
            """, named: "heapid", in: folder)
        try assertRefused(heapID, "the descriptor's id points outside the plugin's own image, or is not NUL-terminated inside it")
    }

    /// A checked file swapped for another after it was opened: the descriptor's file is the one loaded.
    func testTheCheckedDescriptorIsTheFileLoaded() throws {
        let first = try CBuild.sharedObject(CBuild.plugin(id: "com.example.first"), named: "first", in: folder)
        let second = try CBuild.sharedObject(CBuild.plugin(id: "com.example.second"), named: "second", in: folder)
        let file = try PluginFile.open(first, options: [])
        XCTAssertEqual(rename(second, first), 0, "the path now names the second plugin")
        let image = try PluginImage.load(file, path: first)
        let entry = unsafeBitCast(try XCTUnwrap(dlsym(image.handle, LC_PLUGIN_ENTRY_SYMBOL)), to: lc_plugin_entry_fn.self)
        XCTAssertEqual(String(cString: try XCTUnwrap(entry()?.pointee.id)), "com.example.first")
        // Plugins loaded one after another reuse descriptor numbers: each is still its own image.
        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        XCTAssertEqual(try handle.loadPlugin(path: first).id, "com.example.second")
        assertEchoLoads(handle)
    }
}
