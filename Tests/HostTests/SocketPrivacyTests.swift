@preconcurrency import Glibc
import Foundation
import TestSupport
import XCTest

@testable import lifecycle_host

/// The control socket cannot be taken over by another local user: without `XDG_RUNTIME_DIR` it lives
/// in a private folder the host makes (0700) and checks, and the client checks who answers
/// (`SO_PEERCRED`) before it sends anything.
final class SocketPrivacyTests: XCTestCase {
    let host = HostEndToEndTests.host
    let recorder = HostEndToEndTests.recorder
    private var directory = ""

    override func setUpWithError() throws {
        directory = try CBuild.temporaryFolder("privacy")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func message(_ body: () throws(ControlSocketError) -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return error.message
        }
    }

    // MARK: The private folder

    func testTheHostMakesThePrivateFolderAndRefusesOneThatIsNotPrivate() throws {
        let folder = SocketFolder(path: directory + "/lifecycle-host-\(geteuid())")
        let refuse = "; refusing to use it for the control socket (remove it, or set XDG_RUNTIME_DIR or --socket)"
        // Missing: the client says nobody listens; the host makes it, mode 0700 whatever the umask.
        XCTAssertEqual(message { () throws(ControlSocketError) in try folder.check() },
                       "no lifecycle-host is listening on \(folder.socketPath)")
        let savedMask = umask(0o077 | 0o700)
        defer { umask(savedMask) }
        XCTAssertNil(message { () throws(ControlSocketError) in try folder.prepare() })
        var info = stat()
        XCTAssertEqual(lstat(folder.path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o7777, 0o700)
        XCTAssertEqual(info.st_uid, geteuid())
        XCTAssertNil(message { () throws(ControlSocketError) in try folder.prepare() }, "an existing private folder is used as it is")

        // Open to others: refused, and left as it is.
        XCTAssertEqual(chmod(folder.path, 0o755), 0)
        XCTAssertEqual(message { () throws(ControlSocketError) in try folder.prepare() },
                       "the control socket folder \(folder.path) has mode 755, not 700: others can reach it\(refuse)")
        XCTAssertEqual(message { () throws(ControlSocketError) in try folder.check() },
                       "the control socket folder \(folder.path) has mode 755, not 700: others can reach it\(refuse)")
        XCTAssertEqual(lstat(folder.path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o7777, 0o755, "not repaired: it may not be ours")
        XCTAssertEqual(chmod(folder.path, 0o700), 0)

        // A symbolic link to a perfectly private folder: refused (lstat), whoever made it.
        let real = directory + "/real"
        XCTAssertEqual(mkdir(real, 0o700), 0)
        let link = SocketFolder(path: directory + "/linked")
        XCTAssertEqual(symlink(real, link.path), 0)
        XCTAssertEqual(message { () throws(ControlSocketError) in try link.prepare() },
                       "the control socket folder \(link.path) is a symbolic link, not a folder\(refuse)")
        // A file.
        let file = SocketFolder(path: directory + "/file")
        XCTAssertTrue(FileManager.default.createFile(atPath: file.path, contents: Data()))
        XCTAssertEqual(message { () throws(ControlSocketError) in try file.prepare() },
                       "the control socket folder \(file.path) is not a folder\(refuse)")
    }

    func testAFolderOwnedByAnotherUserIsRefused() throws {
        try XCTSkipUnless(geteuid() == 0, "needs root to give a folder to another user (uid 65534)")
        let folder = SocketFolder(path: directory + "/lifecycle-host-\(geteuid())")
        XCTAssertEqual(mkdir(folder.path, 0o700), 0)
        XCTAssertEqual(chown(folder.path, 65534, 65534), 0)
        XCTAssertEqual(message { () throws(ControlSocketError) in try folder.prepare() },
                       "the control socket folder \(folder.path) belongs to uid 65534, not to you (uid 0); refusing to use it for the control socket (remove it, or set XDG_RUNTIME_DIR or --socket)")
    }

    /// End to end, without XDG_RUNTIME_DIR: the host makes `$TMPDIR/lifecycle-host-<uid>/` (0700)
    /// with its socket inside and `status` finds it; a folder that is not private is refused by both.
    func testWithoutXDGRuntimeDirTheHostUsesItsPrivateFolder() throws {
        let environment = ["XDG_RUNTIME_DIR": "", "TMPDIR": directory]
        let folder = directory + "/lifecycle-host-\(geteuid())"
        let process = try RunningProcess(host, ["run", "--trace", "json", "--no-signals", "--no-pressure", "--no-clock",
                                                "--plugin", recorder], environment: environment)
        defer { _ = process.wait(timeout: 1) }
        XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"socket\",\"name\":\"\(folder)/lifecycle-host.sock\"") })
        var info = stat()
        XCTAssertEqual(lstat(folder, &info), 0)
        XCTAssertEqual(info.st_mode & 0o7777, 0o700)
        let status = try CBuild.run(host, ["status"], environment: environment)
        XCTAssertEqual(status.status, 0, status.output)
        XCTAssertTrue(status.output.hasPrefix("{\"state\":\"active\""), status.output)
        XCTAssertEqual(try CBuild.run(host, ["send", "terminate"], environment: environment).output, "ok not-running\n")
        XCTAssertEqual(process.wait(), 0)

        // Someone opened the folder up meanwhile: the host runs without a socket and says why; the
        // client refuses to use it.
        XCTAssertEqual(chmod(folder, 0o777), 0)
        let why = "the control socket folder \(folder) has mode 777, not 700: others can reach it; refusing to use it for the control socket (remove it, or set XDG_RUNTIME_DIR or --socket)"
        let second = try RunningProcess(host, ["run", "--trace", "json", "--no-signals", "--no-pressure", "--no-clock",
                                               "--interactive"], environment: environment)
        defer { _ = second.wait(timeout: 1) }
        XCTAssertNotNil(second.waitForLine { $0.contains("\"kind\":\"error\",\"name\":\"socket\"") && $0.contains(why) })
        let refused = try CBuild.run(host, ["status"], environment: environment)
        XCTAssertEqual(refused.status, 1)
        XCTAssertEqual(refused.output, "--stderr--\nlifecycle-host: \(why)\n")
        second.closeInput()
        XCTAssertEqual(second.wait(), 0)
    }

    // MARK: The client checks the server

    /// Another local user bound the socket first and answers with forged replies: the client must
    /// refuse it before sending the request. The impostor really runs as uid 65534 (nobody), in a
    /// forked child that drops root.
    func testTheClientRefusesAServerOfAnotherUser() throws {
        try XCTSkipUnless(geteuid() == 0, "needs root to run the impostor server as another user (nobody, uid 65534)")
        XCTAssertEqual(chmod(directory, 0o777), 0, "a folder where nobody may bind")
        let path = directory + "/impostor.sock"
        let impostor = try Impostor(path: path, connections: 2)

        XCTAssertEqual(message { () throws(ControlSocketError) in _ = try ControlClient.request(path: path, line: "status") },
                       "the process listening on \(path) runs as uid 65534, not as you (uid 0) or root; refusing to talk to it (another user may have taken the path; use --socket or XDG_RUNTIME_DIR)")
        // The built client, as a user runs it.
        let status = try CBuild.run(host, ["send", "--socket", path, "home"])
        XCTAssertEqual(status.status, 1)
        XCTAssertEqual(status.output, "--stderr--\nlifecycle-host: the process listening on \(path) runs as uid 65534, not as you (uid 0) or root; refusing to talk to it (another user may have taken the path; use --socket or XDG_RUNTIME_DIR)\n")
        XCTAssertEqual(impostor.finish(), [0, 0], "the impostor received no byte of either request")
    }
}

/// A Unix-socket server in a forked child running as uid/gid 65534: it accepts `connections`
/// connections, answers each with a forged `ok active` line, and reports how many bytes each sent.
private final class Impostor {
    private let pid: pid_t
    private let reportFD: Int32

    init(path: String, connections: Int) throws {
        // Everything the child needs is made before fork: it only makes system calls.
        var address = try ControlServer.address(path)
        let forged: [UInt8] = Array("ok active\n".utf8)
        var buffer = [UInt8](repeating: 0, count: 4096)
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw CocoaError(.fileWriteUnknown) }
        let child = fork()
        if child == 0 {
            Glibc.close(pipeFDs[0])
            let report = pipeFDs[1]
            if setgid(65534) != 0 || setuid(65534) != 0 { _exit(2) }
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if bound != 0 || chmod(path, 0o666) != 0 || listen(fd, 8) != 0 { _exit(3) }
            var ready: Int32 = -1
            _ = withUnsafeBytes(of: &ready) { write(report, $0.baseAddress, 4) }
            for _ in 0..<connections {
                let client = accept(fd, nil, nil)
                if client < 0 { _exit(4) }
                _ = forged.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                // Whatever the client sends within half a second (it should send nothing).
                var received: Int32 = 0
                var item = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                while poll(&item, 1, 500) > 0 {
                    let count = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                    if count <= 0 { break }
                    received += Int32(count)
                }
                _ = withUnsafeBytes(of: &received) { write(report, $0.baseAddress, 4) }
                Glibc.close(client)
            }
            _exit(0)
        }
        guard child > 0 else { throw CocoaError(.fileWriteUnknown) }
        Glibc.close(pipeFDs[1])
        pid = child
        reportFD = pipeFDs[0]
        guard readInt() == -1 else {
            var status: Int32 = 0
            waitpid(child, &status, 0)
            throw NSError(domain: "impostor", code: Int(status), userInfo: [NSLocalizedDescriptionKey: "the impostor could not start (status \(status))"])
        }
    }

    /// The next report, or nil at the end (or after 10 s without one).
    private func readInt() -> Int32? {
        var item = pollfd(fd: reportFD, events: Int16(POLLIN), revents: 0)
        guard poll(&item, 1, 10_000) > 0 else { return nil }
        var value: Int32 = 0
        let count = withUnsafeMutableBytes(of: &value) { read(reportFD, $0.baseAddress, 4) }
        return count == 4 ? value : nil
    }

    /// The bytes each connection sent, then the child is gone.
    func finish() -> [Int32] {
        var received: [Int32] = []
        while let value = readInt() { received.append(value) }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        Glibc.close(reportFD)
        return received
    }
}
