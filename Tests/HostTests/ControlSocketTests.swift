@preconcurrency import Glibc
import AppLifecycle
import Foundation
import Synchronization
import XCTest

@testable import lifecycle_host

/// Real sockets: the server runs on the test thread's loop, clients on other threads (or a child process).
final class ControlSocketTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        var template = Array("/tmp/lh-sock-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        XCTAssertNotNil(made)
        directory = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private var socketPath: String { directory + "/host.sock" }

    /// An echo handler recording what it was given.
    private func echoServer(_ loop: MainRunLoop, log: RequestLog? = nil) throws -> ControlServer {
        try ControlServer(path: socketPath, loop: loop) { line, _ in
            log?.append(line)
            return "ok: \(line)"
        }
    }

    // MARK: Round trips

    func testRequestResponseRoundTrip() throws {
        let loop = try MainRunLoop()
        let server = try echoServer(loop)
        let path = socketPath
        let reply = try serve(loop) { try ControlClient.request(path: path, line: "hello world") }
        XCTAssertEqual(reply, "ok: hello world")
        server.close()
    }

    func testTwoRequestsOnOneConnection() throws {
        let loop = try MainRunLoop()
        let server = try echoServer(loop)
        let path = socketPath
        let replies = try serve(loop) { () throws -> [String?] in
            let client = try RawClient(path: path)
            // Pipelined in one write, then one more after reading.
            try client.send("first\nsecond\n")
            let first = try client.readLine()
            let second = try client.readLine()
            try client.send("third\n")
            return [first, second, try client.readLine()]
        }
        XCTAssertEqual(replies, ["ok: first", "ok: second", "ok: third"])
        server.close()
    }

    func testHalfLineThenRest() throws {
        let loop = try MainRunLoop()
        let log = RequestLog()
        let server = try echoServer(loop, log: log)
        let path = socketPath
        let reply = try serve(loop) { () throws -> String? in
            let client = try RawClient(path: path)
            try client.send("hal")
            usleep(200_000)
            // Nothing answered for half a line.
            XCTAssertTrue(log.lines.isEmpty)
            XCTAssertEqual(try client.readLine(timeout: .milliseconds(100)), RawClient.timedOut)
            try client.send("f a line\r\n")
            return try client.readLine()
        }
        XCTAssertEqual(reply, "ok: half a line")
        XCTAssertEqual(log.lines, ["half a line"])
        server.close()
    }

    func testOverlongLineIsRefusedAndClosed() throws {
        let loop = try MainRunLoop()
        let log = RequestLog()
        let server = try echoServer(loop, log: log)
        let path = socketPath
        let (reply, after) = try serve(loop) { () throws -> (String?, String?) in
            let client = try RawClient(path: path)
            try client.send("short\n")
            XCTAssertEqual(try client.readLine(), "ok: short")
            // 70 KiB: the server may close before taking it all, so a failing send is fine.
            try? client.send(String(repeating: "x", count: 70 * 1024) + "\n")
            return (try client.readLine(), try client.readLine())
        }
        XCTAssertEqual(reply, "error: request too long")
        XCTAssertNil(after, "the connection is closed after the error")
        XCTAssertEqual(log.lines, ["short"])
        // A line of exactly the limit is accepted.
        let longest = String(repeating: "y", count: ControlServer.maxRequestLength)
        let ok = try serve(loop) { try ControlClient.request(path: path, line: longest) }
        XCTAssertEqual(ok, "ok: " + longest)
        server.close()
    }

    // MARK: Limits (ControlServer+Limits.swift)

    /// An unfinished request line is answered with an error, and the connection closed, 5 s after its
    /// first byte; a connection that holds nothing unfinished has no deadline, however long it waits.
    func testAnUnfinishedLineIsTurnedAwayAfterFiveSecondsAndAnIdleConnectionIsNot() throws {
        let loop = try MainRunLoop()
        let log = RequestLog()
        let server = try echoServer(loop, log: log)
        let path = socketPath
        let (reply, after, held, patient) = try serve(loop, timeout: .seconds(40)) { () throws -> (String?, String?, Duration, String?) in
            let idle = try RawClient(path: path)
            let client = try RawClient(path: path)
            let started = MonotonicInstant.now
            try client.send("done\nstatus but no line feed")
            XCTAssertEqual(try client.readLine(), "ok: done")
            let reply = try client.readLine(timeout: .seconds(10))
            let held = MonotonicInstant.now.duration(since: started)
            let after = try client.readLine()
            try idle.send("still here\n")
            return (reply, after, held, try idle.readLine())
        }
        XCTAssertEqual(reply, "error: request not finished within 5 s")
        XCTAssertNil(after, "closed after the error")
        XCTAssertGreaterThanOrEqual(held, .milliseconds(4900))
        XCTAssertLessThan(held, .seconds(8))
        XCTAssertEqual(patient, "ok: still here")
        XCTAssertEqual(log.lines, ["done", "still here"], "the unfinished line never reached the handler")
        server.close()
    }

    /// 100 clients each holding an unfinished 60,000-byte line: the server holds 64 connections (at
    /// most 64 × 64 KiB of partial lines), turns the other 36 away at once, closes the 64 at their
    /// deadline, then serves as before.
    func testConnectionsAreBoundedAndThoseBeyondAreTurnedAway() throws {
        let loop = try MainRunLoop()
        let server = try echoServer(loop)
        let path = socketPath
        let probe = LoopProbe(loop: loop, server: server)
        let (held, turnedAway, answers, fresh) = try serve(loop, timeout: .seconds(60)) { () throws -> (Int, [String?], [String?], String) in
            let partial = String(repeating: "x", count: 60_000)
            var clients: [RawClient] = []
            for _ in 0..<64 {
                let client = try RawClient(path: path)
                try client.send(partial)
                clients.append(client)
            }
            // Every one of the 64 holds its bytes at the server (none is idle) before more come.
            XCTAssertTrue(probe.waitUntil { $0.connections.count == 64 && $0.connections.values.allSatisfy { !$0.input.isEmpty } })
            var turnedAway: [String?] = []
            for _ in 0..<36 {
                let late = try RawClient(path: path)
                let first = try late.readLine(timeout: .milliseconds(500))
                turnedAway += [first, first == RawClient.timedOut ? nil : try late.readLine()]
            }
            let held = probe.read { $0.connections.count } ?? -1
            // Their deadlines were all armed within moments: 10 s in all for the 64 answers.
            let deadline = MonotonicInstant.now + .seconds(10)
            let answers = try clients.map { try $0.readLine(timeout: max(deadline.duration(since: MonotonicInstant.now), .milliseconds(100))) }
            return (held, turnedAway, answers, try ControlClient.request(path: path, line: "after"))
        }
        XCTAssertEqual(held, 64)
        XCTAssertEqual(turnedAway, Array(repeating: ["error: too many connections (at most 64)", nil], count: 36).flatMap { $0 })
        XCTAssertEqual(answers, Array(repeating: "error: request not finished within 5 s", count: 64))
        XCTAssertEqual(fresh, "ok: after")
        server.close()
    }

    /// 64 clients that connect and say nothing do not lock the others out: a new client takes the
    /// place of the one idle longest, which is told why and closed.
    func testANewClientTakesThePlaceOfTheConnectionIdleLongest() throws {
        let loop = try MainRunLoop()
        let server = try echoServer(loop)
        let path = socketPath
        let probe = LoopProbe(loop: loop, server: server)
        let (reply, oldest, second) = try serve(loop, timeout: .seconds(40)) { () throws -> (String, [String?], String?) in
            var silent: [RawClient] = []
            for _ in 0..<64 {
                silent.append(try RawClient(path: path))
                let count = silent.count
                XCTAssertTrue(probe.waitUntil { $0.connections.count == count }, "accepted in order")
            }
            let reply = try ControlClient.request(path: path, line: "hello")
            return (reply, [try silent[0].readLine(), try silent[0].readLine()], try silent[1].readLine(timeout: .milliseconds(200)))
        }
        XCTAssertEqual(reply, "ok: hello")
        XCTAssertEqual(oldest, ["error: closed to make room: at most 64 connections, and this one was idle longest", nil])
        XCTAssertEqual(second, RawClient.timedOut, "only the idlest made room")
        server.close()
    }

    func testTwoClientsInterleaved() throws {
        let loop = try MainRunLoop()
        let server = try echoServer(loop)
        let path = socketPath
        let replies = try serve(loop) { () throws -> [String?] in
            let a = try RawClient(path: path)
            let b = try RawClient(path: path)
            try a.send("from a, par")
            try b.send("from b, par")
            try b.send("t one\n")
            let b1 = try b.readLine()
            try a.send("t one\nfrom a, part two\n")
            let a1 = try a.readLine()
            let a2 = try a.readLine()
            try b.send("from b, part two\n")
            return [b1, a1, a2, try b.readLine()]
        }
        XCTAssertEqual(replies, ["ok: from b, part one", "ok: from a, part one", "ok: from a, part two", "ok: from b, part two"])
        server.close()
    }

    func testBlankLinesIgnoredAndInvalidUTF8Answered() throws {
        let loop = try MainRunLoop()
        let log = RequestLog()
        let server = try ControlServer(path: socketPath, loop: loop) { line, _ in
            log.append(line)
            return "two\nlines"
        }
        let path = socketPath
        let replies = try serve(loop) { () throws -> [String?] in
            let client = try RawClient(path: path)
            try client.send("\n\r\n  \t\n")
            try client.send(Array("bad ".utf8) + [0xFF, 0xFE, 10])
            let bad = try client.readLine()
            try client.send("good\n")
            return [bad, try client.readLine()]
        }
        XCTAssertEqual(replies, ["error: request is not UTF-8", "two lines"])
        XCTAssertEqual(log.lines, ["good"])
        server.close()
    }

    func testHalfClosedClientGetsItsAnswers() throws {
        let loop = try MainRunLoop()
        let server = try echoServer(loop)
        let path = socketPath
        let replies = try serve(loop) { () throws -> [String?] in
            let client = try RawClient(path: path)
            // The last line has no line feed: the end of the stream ends it.
            try client.send("one\ntwo")
            client.shutdownWrite()
            return [try client.readLine(), try client.readLine(), try client.readLine()]
        }
        XCTAssertEqual(replies, ["ok: one", "ok: two", nil])
        server.close()
    }

    /// A reply given later (`PendingReply`, what `run --record` does at its gate points): the requests
    /// behind it wait, unread, and are answered in order after it — even when the client has ended its
    /// stream meanwhile; a client gone before the reply hurts nothing.
    func testALaterReplyKeepsTheOrderAndTheConnection() throws {
        let loop = try MainRunLoop()
        let handled = RequestLog()
        let server = try ControlServer(path: socketPath, loop: loop) { line, later in
            handled.append(line)
            guard line.hasPrefix("later") else { return "now: \(line)" }
            let reply = later()
            loop.addTimer(after: .milliseconds(100)) { reply.send("later: \(line)") }
            return nil
        }
        let path = socketPath
        let replies = try serve(loop) { () throws -> [String?] in
            let client = try RawClient(path: path)
            try client.send("later one\nnow two\nlater three\nnow four")
            client.shutdownWrite()
            return [try client.readLine(), try client.readLine(), try client.readLine(), try client.readLine(), try client.readLine()]
        }
        XCTAssertEqual(replies, ["later: later one", "now: now two", "later: later three", "now: now four", nil])
        XCTAssertEqual(handled.lines, ["later one", "now two", "later three", "now four"])

        // Gone before its reply: the reply goes nowhere, the server serves the next client.
        let gone = try serve(loop) { () throws -> String? in
            let client = try RawClient(path: path)
            try client.send("later five\n")
            client.close()
            usleep(200_000)
            return try ControlClient.request(path: path, line: "six")
        }
        XCTAssertEqual(gone, "now: six")
        server.close()
    }

    func testClientGoneMidResponseDoesNotHurtServer() throws {
        let loop = try MainRunLoop()
        let big = String(repeating: "z", count: 4 << 20)
        let server = try ControlServer(path: socketPath, loop: loop) { line, _ in line == "big" ? big : "ok: \(line)" }
        let path = socketPath
        let reply = try serve(loop) { () throws -> String in
            let client = try RawClient(path: path)
            try client.send("big\nbig\nbig\n")
            usleep(100_000)
            client.close()  // 12 MiB of answers unread: the server gets EPIPE/ECONNRESET.
            usleep(100_000)
            return try ControlClient.request(path: path, line: "still there?")
        }
        XCTAssertEqual(reply, "ok: still there?")
        server.close()
    }

    func testSlowReaderDoesNotBlockOthers() throws {
        let loop = try MainRunLoop()
        // 1 MiB answers: far more than the socket buffers hold, so the server must wait for writability.
        let server = try ControlServer(path: socketPath, loop: loop) { line, _ in
            line.hasPrefix("big") ? line + ":" + String(repeating: "z", count: 1 << 20) : "ok: \(line)"
        }
        let path = socketPath
        let (quick, elapsed, answers) = try serve(loop) { () throws -> (String, Duration, [String?]) in
            let slow = try RawClient(path: path)
            try slow.send("big1\nbig2\nbig3\n")
            usleep(100_000)
            let started = MonotonicInstant.now
            let quick = try ControlClient.request(path: path, line: "quick", timeout: .seconds(2))
            let elapsed = MonotonicInstant.now.duration(since: started)
            usleep(200_000)
            let answers = try (0..<3).map { _ in try slow.readLine() }
            return (quick, elapsed, answers)
        }
        XCTAssertEqual(quick, "ok: quick")
        XCTAssertLessThan(elapsed, .seconds(1), "a slow reader must not hold up the loop")
        XCTAssertEqual(answers.map { $0?.prefix(5) }, ["big1:", "big2:", "big3:"])
        XCTAssertEqual(answers.map { $0?.utf8.count }, [5 + (1 << 20), 5 + (1 << 20), 5 + (1 << 20)])
        server.close()
    }

    func testCloseFromHandlerStillAnswers() throws {
        let loop = try MainRunLoop()
        var server: ControlServer?
        server = try ControlServer(path: socketPath, loop: loop) { line, _ in
            if line == "quit" { server?.close() }
            return "bye"
        }
        let path = socketPath
        let reply = try serve(loop) { try ControlClient.request(path: path, line: "quit") }
        XCTAssertEqual(reply, "bye")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path), "close() unlinks the socket")
        server = nil
    }

    /// The server's sockets are the loop's own IO sources: no epoll descriptor of its own, and every
    /// client and the listener are gone from the process once it closes.
    func testServesOnTheLoopsOwnEpollWithoutDescriptorsLeft() throws {
        func descriptors() -> [String] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            return names.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
        }
        let loop = try MainRunLoop()
        let epolls = descriptors().filter { $0.contains("eventpoll") }.count
        let sockets = descriptors().filter { $0.hasPrefix("socket:") }.count
        let server = try echoServer(loop)
        let path = socketPath
        let replies = try serve(loop) { () throws -> [String?] in
            let clients = try (0..<3).map { _ in try RawClient(path: path) }
            for (index, client) in clients.enumerated() { try client.send("c\(index)\n") }
            return try clients.map { try $0.readLine() }
        }
        XCTAssertEqual(replies, ["ok: c0", "ok: c1", "ok: c2"])
        XCTAssertEqual(descriptors().filter { $0.contains("eventpoll") }.count, epolls, "no epoll set of its own")
        server.close()
        XCTAssertEqual(descriptors().filter { $0.hasPrefix("socket:") }.count, sockets, "listener and clients closed")
    }

    // MARK: The socket file

    func testSocketModeIs0600() throws {
        let loop = try MainRunLoop()
        let server = try echoServer(loop)
        var info = stat()
        XCTAssertEqual(lstat(socketPath, &info), 0)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFSOCK)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        server.close()
        XCTAssertNotEqual(lstat(socketPath, &info), 0, "close() removes the file")
    }

    func testStaleSocketIsReplaced() throws {
        // Bound, then closed without unlink: a host that died.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertEqual(ControlServer.bind(fd, try ControlServer.address(socketPath)), 0)
        Glibc.close(fd)
        XCTAssertTrue(FileManager.default.fileExists(atPath: socketPath))

        let loop = try MainRunLoop()
        let server = try echoServer(loop)
        let path = socketPath
        XCTAssertEqual(try serve(loop) { try ControlClient.request(path: path, line: "ping") }, "ok: ping")
        server.close()
    }

    func testLiveSocketIsNotStolen() throws {
        let loop = try MainRunLoop()
        let server = try echoServer(loop)
        XCTAssertThrowsError(try echoServer(loop)) { error in
            XCTAssertEqual("\(error)", "another lifecycle-host is listening on \(self.socketPath)")
        }
        // The first server is untouched.
        let path = socketPath
        XCTAssertEqual(try serve(loop) { try ControlClient.request(path: path, line: "ping") }, "ok: ping")
        server.close()
    }

    func testNonSocketFileIsRefused() throws {
        XCTAssertTrue(FileManager.default.createFile(atPath: socketPath, contents: Data("keep me".utf8)))
        let loop = try MainRunLoop()
        XCTAssertThrowsError(try echoServer(loop)) { error in
            XCTAssertTrue("\(error)".contains("exists and is not a socket"), "\(error)")
        }
        XCTAssertEqual(FileManager.default.contents(atPath: socketPath), Data("keep me".utf8))
    }

    func testClientToMissingPath() {
        let path = socketPath
        XCTAssertThrowsError(try ControlClient.request(path: path, line: "ping")) { error in
            XCTAssertEqual("\(error)", "no lifecycle-host is listening on \(path)")
        }
    }

    func testClientTimesOut() throws {
        // Listening, but nobody serves: the connection is queued and never answered.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(fd) }
        XCTAssertEqual(ControlServer.bind(fd, try ControlServer.address(socketPath)), 0)
        XCTAssertEqual(listen(fd, 4), 0)
        let started = MonotonicInstant.now
        XCTAssertThrowsError(try ControlClient.request(path: socketPath, line: "ping", timeout: .milliseconds(300))) { error in
            XCTAssertEqual("\(error)", "no response from the lifecycle-host on \(self.socketPath) within 300 ms")
        }
        let elapsed = MonotonicInstant.now.duration(since: started)
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(290))
        XCTAssertLessThan(elapsed, .seconds(2))
    }

    func testClientRefusesMalformedRequests() {
        XCTAssertThrowsError(try ControlClient.request(path: socketPath, line: "a\nb"))
        XCTAssertThrowsError(try ControlClient.request(path: socketPath, line: "  "))
        XCTAssertThrowsError(try ControlClient.request(path: socketPath, line: String(repeating: "x", count: 65537)))
        XCTAssertThrowsError(try ControlClient.request(path: "/tmp/" + String(repeating: "p", count: 120), line: "x")) { error in
            XCTAssertTrue("\(error)".contains("too long"), "\(error)")
        }
    }

    func testDefaultPath() throws {
        let saved = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) }
        defer {
            if let saved { setenv("XDG_RUNTIME_DIR", saved, 1) } else { unsetenv("XDG_RUNTIME_DIR") }
        }
        setenv("XDG_RUNTIME_DIR", directory, 1)
        XCTAssertEqual(ControlServer.defaultPath(), directory + "/lifecycle-host.sock")
        XCTAssertNil(ControlServer.defaultLocation().folder, "XDG_RUNTIME_DIR is the user's own: no folder of ours to check")
        let savedTMPDIR = getenv("TMPDIR").map { String(cString: $0) }
        defer { if let savedTMPDIR { setenv("TMPDIR", savedTMPDIR, 1) } else { unsetenv("TMPDIR") } }
        unsetenv("TMPDIR")
        // Not /tmp/lifecycle-host-<uid>.sock any more (another user could bind it first), but a socket
        // in a private folder.
        setenv("XDG_RUNTIME_DIR", directory + "/missing", 1)
        XCTAssertEqual(ControlServer.defaultPath(), "/tmp/lifecycle-host-\(geteuid())/lifecycle-host.sock")
        unsetenv("XDG_RUNTIME_DIR")
        XCTAssertEqual(ControlServer.defaultPath(), "/tmp/lifecycle-host-\(geteuid())/lifecycle-host.sock")
        XCTAssertEqual(ControlServer.defaultLocation().folder, SocketFolder(path: "/tmp/lifecycle-host-\(geteuid())"))
        setenv("TMPDIR", directory + "/", 1)
        XCTAssertEqual(ControlServer.defaultPath(), directory + "/lifecycle-host-\(geteuid())/lifecycle-host.sock")
        setenv("TMPDIR", "relative", 1)
        XCTAssertEqual(ControlServer.defaultPath(), "/tmp/lifecycle-host-\(geteuid())/lifecycle-host.sock")
    }

    // MARK: Peer credentials

    func testOtherUserIsRejected() throws {
        try XCTSkipUnless(geteuid() == 0, "needs root to run a client as another user")
        // The folder is open to everyone, so that only the socket's own mode (then SO_PEERCRED) decides.
        XCTAssertEqual(chmod(directory, 0o777), 0)
        let loop = try MainRunLoop()
        let log = RequestLog()
        let server = try echoServer(loop, log: log)

        // 0600: the kernel refuses the connect (EACCES) before the server sees anything.
        let refused = try runAsNobody(loop, path: socketPath)
        XCTAssertEqual(refused.connectErrno, EACCES)

        // 0666 (for the test only): the connect succeeds and SO_PEERCRED turns the peer away.
        XCTAssertEqual(chmod(socketPath, 0o666), 0)
        let rejected = try runAsNobody(loop, path: socketPath)
        XCTAssertEqual(rejected.connectErrno, 0)
        XCTAssertEqual(rejected.reply, "error: permission denied (uid 65534)\n")
        XCTAssertTrue(log.lines.isEmpty, "the handler never sees a rejected peer's request")

        // Root is served.
        let path = socketPath
        XCTAssertEqual(try serve(loop) { try ControlClient.request(path: path, line: "ping") }, "ok: ping")
        server.close()
    }

    /// Forks a child that becomes uid/gid 65534, connects, sends `ping`, and reports what it read.
    private func runAsNobody(_ loop: MainRunLoop, path: String) throws -> (connectErrno: Int32, reply: String) {
        // Everything the child needs is made before fork: it only makes system calls.
        var address = try ControlServer.address(path)
        let request: [UInt8] = Array("ping\n".utf8)
        var buffer = [UInt8](repeating: 0, count: 256)
        var pipeFDs: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&pipeFDs), 0)
        let pid = fork()
        if pid == 0 {
            Glibc.close(pipeFDs[0])
            var status: Int32 = 0
            if setgid(65534) != 0 || setuid(65534) != 0 { _exit(2) }
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            if connected != 0 { status = errno }
            _ = withUnsafeBytes(of: &status) { write(pipeFDs[1], $0.baseAddress, 4) }
            if connected == 0 {
                _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                while true {
                    let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if count <= 0 { break }
                    _ = buffer.withUnsafeBytes { write(pipeFDs[1], $0.baseAddress, count) }
                }
            }
            _exit(0)
        }
        XCTAssertGreaterThan(pid, 0)
        Glibc.close(pipeFDs[1])
        let readFD = pipeFDs[0]
        defer { Glibc.close(readFD) }

        // Serve while collecting the child's report (until it exits and the pipe ends).
        var report: [UInt8] = []
        var finished = false
        let source = try loop.addReader(fd: readFD) {
            var chunk = [UInt8](repeating: 0, count: 512)
            let count = chunk.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
            if count > 0 {
                report += chunk[0..<count]
            } else {
                finished = true
                loop.stop()
            }
        }
        try loop.run(for: .seconds(10))
        source.cancel()
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        XCTAssertTrue(finished, "the child did not finish")
        XCTAssertEqual(status, 0, "the child could not become nobody")
        guard report.count >= 4 else { return (-1, "") }
        let code = report[0..<4].withUnsafeBytes { $0.loadUnaligned(as: Int32.self) }
        return (code, String(decoding: report[4...], as: UTF8.self))
    }
}

// MARK: Helpers

/// Runs `client` on another thread while the loop serves on this one; returns its result.
private func serve<T: Sendable>(_ loop: MainRunLoop, timeout: Duration = .seconds(20),
                                _ client: @escaping @Sendable () throws -> T) throws -> T
{
    let box = ResultBox<T>()
    let thread = Thread {
        let result = Result { try client() }
        box.result.withLock { $0 = result }
        loop.stop()
    }
    thread.start()
    try loop.run(for: timeout)
    guard let result = box.result.withLock({ $0 }) else {
        XCTFail("the client did not finish within \(timeout)")
        throw CancellationError()
    }
    return try result.get()
}

/// Looks at the server from a client thread: the work runs on the loop's thread (`MainRunLoop.perform`)
/// and the client waits for it, at most 5 s.
private final class LoopProbe: @unchecked Sendable {
    // @unchecked: `server` is touched only on the loop's thread, inside `perform`.
    private let loop: MainRunLoop
    private let server: ControlServer

    init(loop: MainRunLoop, server: ControlServer) {
        self.loop = loop
        self.server = server
    }

    /// `body(server)` on the loop's thread; nil if the loop did not get to it within 5 s.
    func read<T: Sendable>(_ body: @escaping @Sendable (ControlServer) -> T) -> T? {
        let box = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        loop.perform { [self] in
            let value = body(server)
            box.withLock { $0 = value }
            done.signal()
        }
        guard done.wait(timeout: .now() + 5) == .success else { return nil }
        return box.withLock { $0 }
    }

    /// Whether `condition(server)` came true within 5 s (checked every 10 ms).
    func waitUntil(_ condition: @escaping @Sendable (ControlServer) -> Bool) -> Bool {
        let deadline = MonotonicInstant.now + .seconds(5)
        while MonotonicInstant.now < deadline {
            if read(condition) == true { return true }
            usleep(10_000)
        }
        return false
    }
}

/// A client thread's result, handed to the test thread.
private final class ResultBox<T: Sendable>: @unchecked Sendable {
    // @unchecked: `any Error` is not Sendable; the value is written once, then read, under the lock.
    let result = Mutex<Result<T, any Error>?>(nil)
}

/// The lines a handler was given, readable from any thread.
private final class RequestLog: Sendable {
    private let storage = Mutex<[String]>([])
    func append(_ line: String) { storage.withLock { $0.append(line) } }
    var lines: [String] { storage.withLock { $0 } }
}

/// A blocking Unix-socket client that speaks raw bytes.
private final class RawClient: @unchecked Sendable {
    static let timedOut = "<timed out>"
    private var fd: Int32
    private var pending: [UInt8] = []

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        if let error = ControlServer.connect(fd, try ControlServer.address(path)) {
            throw Failure(description: "connect: errno \(error.errno)")
        }
    }

    deinit { close() }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw Failure(description: "send: errno \(errno)") }
            offset += sent
        }
    }

    func shutdownWrite() { _ = shutdown(fd, Int32(SHUT_WR)) }

    /// The next line without its line feed; nil at the end of the stream (or on a reset);
    /// `timedOut` if nothing complete came in time.
    func readLine(timeout: Duration = .seconds(5)) throws -> String? {
        let deadline = MonotonicInstant.now + timeout
        while true {
            if let newline = pending.firstIndex(of: 10) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeFirst(newline + 1)
                return line
            }
            let now = MonotonicInstant.now
            guard now < deadline else { return Self.timedOut }
            var item = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ms = Int32(clamping: (deadline.nanoseconds - now.nanoseconds) / 1_000_000 + 1)
            guard poll(&item, 1, ms) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == ECONNRESET { return nil }
            guard count >= 0 else { throw Failure(description: "recv: errno \(errno)") }
            if count == 0 { return nil }
            pending += chunk[0..<count]
        }
    }
}
