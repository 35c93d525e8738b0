import Foundation
import TestSupport
import XCTest

/// The built host running `run --trace json` with its control socket at `folder/host.sock`, the
/// recorder plugin loaded and the application active; the process and the socket path.
func startHostWithSocket(in folder: String, _ extra: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws
    -> (process: RunningProcess, socket: String)
{
    let socket = folder + "/host.sock"
    let process = try RunningProcess(HostEndToEndTests.host, ["run", "--trace", "json", "--socket", socket, "--no-signals",
                                                              "--no-pressure", "--no-clock", "--plugin", HostEndToEndTests.recorder] + extra)
    XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"didBecomeActive\"") }, file: file, line: line)
    return (process, socket)
}
