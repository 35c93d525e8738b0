// libFuzzer's entry for the scenario target (built by Fuzz/run with --sanitize=fuzzer; see Fuzz/README.md).
import FuzzEntries

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 { FuzzTarget.scenario.fuzz(data, size) }
