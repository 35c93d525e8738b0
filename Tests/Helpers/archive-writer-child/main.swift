// archive-writer-child DIR ID [FIRST]
//
// A child process the archive tests kill with SIGKILL at a random moment.
//
// Without FIRST (StateArchiveTests.testKilledMidSaveLeavesACompleteArchive): saves archive A and
// archive B of observer ID in folder DIR alternately, for ever, printing "saved A" / "saved B" on
// stdout (unbuffered) after each completed save; the archive must then be exactly A or exactly B.
//
// With FIRST, a generation number (KillTrialTests): saves generations FIRST, FIRST + 1, … for ever,
// printing "saved N" after each; the archive must then be exactly the last generation reported or
// the one after it (saved, not yet reported): anything else is a corrupt archive or a lost save.
//
// Each archive holds a few small keys and a `.bytes` value whose content identifies it (4 MiB for A
// and B, 1 MiB for a generation: quicker trials, and more of them land between two saves' steps), so
// that one save takes measurable time (write + fsync) and a torn write could not go unnoticed.
// The tests import `writerFixture(_:)` and `generationFixture(_:)` from here, so the two sides cannot drift.
import AppLifecycle
import Glibc

/// Archive "A" or "B" (StateArchiveTests compares what it loads against these).
func writerFixture(_ name: String) -> UserInfo {
    // 1,024 pages of 4 KiB: the page number (8 bytes, little-endian), then the name's letter.
    let page = [UInt8](repeating: 0, count: 8) + [UInt8](repeating: name.utf8.first ?? 0, count: 4_088)
    var blob: [UInt8] = []
    blob.reserveCapacity(4 << 20)
    for number in 0..<1_024 {
        blob.append(contentsOf: page)
        for shift in 0..<8 { blob[number * 4_096 + shift] = UInt8(truncatingIfNeeded: number >> (8 * shift)) }
    }
    return [
        "archive": .string(name),
        "generation": .int(name == "A" ? 1 : 2),
        "title": .string("archive \(name) — ünïcödé ✓"),
        "ratio": .double(name == "A" ? 0.25 : -0.0),
        "flags": .list([.bool(name == "A"), .int(.min), .dict(["nested": .string(name)])]),
        "blob": .bytes(blob),
    ]
}

/// Generation `number`: its number, and 1 MiB of pages each holding the page's number and the generation's.
func generationFixture(_ number: Int64) -> UserInfo {
    var blob = [UInt8](repeating: 0, count: 1 << 20)
    for page in 0..<256 {
        for shift in 0..<8 {
            blob[page * 4_096 + shift] = UInt8(truncatingIfNeeded: page >> (8 * shift))
            blob[page * 4_096 + 8 + shift] = UInt8(truncatingIfNeeded: number >> (8 * shift))
        }
    }
    return ["generation": .int(number), "blob": .bytes(blob), "title": .string("generation \(number) ✓")]
}

/// Writes `text` to a file descriptor in full, retrying EINTR; false when the write fails.
func emit(_ text: String, to fd: Int32) -> Bool {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written < 0, errno == EINTR { continue }
        if written <= 0 { return false }
        offset += written
    }
    return true
}

let arguments = CommandLine.arguments
guard arguments.count == 3 || (arguments.count == 4 && Int64(arguments[3]) != nil) else {
    _ = emit("usage: archive-writer-child DIR ID [FIRST]\n", to: 2)
    exit(2)
}
let store = ArchiveStore(directory: arguments[1])
let id = arguments[2]

/// Saves `values` and reports it as `name`; exits on any failure.
func save(_ values: UserInfo, as name: String) {
    do {
        try store.save(values, id: id)
    } catch {
        _ = emit("archive-writer-child: \(error)\n", to: 2)
        exit(1)
    }
    guard emit("saved \(name)\n", to: 1) else { exit(1) }
}

if arguments.count == 4, var generation = Int64(arguments[3]) {
    while true {
        save(generationFixture(generation), as: "\(generation)")
        generation += 1
    }
}
let fixtures = [("A", writerFixture("A")), ("B", writerFixture("B"))]
while true {
    for (name, values) in fixtures { save(values, as: name) }
}
