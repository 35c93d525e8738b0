@preconcurrency import Glibc
import LifecycleRunLoop

/// What the process metrics read from `/proc`, parsed from bytes that are checked before they are
/// believed: a size bound on every read, the fields found by position after the command name (which
/// may hold spaces and parentheses), every number all decimal digits, at most 19 of them, and within
/// `Int64` (checked as it is converted). A file that fails a check gives nil, never a guess.
enum ProcFiles {
    /// `/proc/self/stat` is one line of about 300 bytes; more than this is not believed.
    static let statLimit = 4096
    /// `/proc/stat` grows with CPUs and interrupts (its `intr` line); more than this is not read.
    static let systemStatLimit = 1 << 20

    /// The fields of `/proc/<pid>/stat` the metrics use (proc(5): utime 14, stime 15, starttime 22,
    /// vsize 23, rss 24), in the kernel's units.
    struct ProcessStat: Equatable {
        /// User and system CPU time, in clock ticks (`sysconf(_SC_CLK_TCK)`).
        var userTicks: Int64
        var systemTicks: Int64
        /// When the process started, in clock ticks since boot.
        var startTicks: Int64
        /// Virtual memory size, bytes.
        var virtualBytes: Int64
        /// Resident set size, pages.
        var residentPages: Int64
    }

    /// Parses `/proc/<pid>/stat`: nil when it is larger than `statLimit`, has no `)` closing the
    /// command name, too few fields, or a field that is not a plain decimal number.
    static func processStat(_ bytes: ArraySlice<UInt8>) -> ProcessStat? {
        guard bytes.count <= statLimit, let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        // After ") ": field 3 (state) is the first.
        let fields = bytes[(close + 1)...].split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
        func field(_ number: Int) -> Int64? {
            let index = number - 3
            return index < fields.count ? decimal(fields[index]) : nil
        }
        guard let user = field(14), let system = field(15), let start = field(22), let virtual = field(23), let resident = field(24) else {
            return nil
        }
        return ProcessStat(userTicks: user, systemTicks: system, startTicks: start, virtualBytes: virtual, residentPages: resident)
    }

    /// The boot time in seconds since the epoch: the `btime` line of `/proc/stat`; nil when there is
    /// none or its number is not plain decimal.
    static func bootTime(_ bytes: ArraySlice<UInt8>) -> Int64? {
        for line in bytes.split(separator: UInt8(ascii: "\n")) where line.starts(with: "btime ".utf8) {
            return decimal(line.dropFirst("btime ".utf8.count))
        }
        return nil
    }

    /// A plain decimal number (digits only, 1 to 19 of them, at most `Int64.max`, a trailing newline
    /// allowed); else nil.
    static func decimal(_ bytes: ArraySlice<UInt8>) -> Int64? {
        var digits = bytes
        if digits.last == UInt8(ascii: "\n") { digits = digits.dropLast() }
        guard !digits.isEmpty, digits.count <= 19 else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            // 19 digits may still pass Int64.max: checked, never trapped.
            let (tens, over) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = tens.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !over, !carry else { return nil }
            value = sum
        }
        return value
    }

    /// The file at `path`, at most `limit` bytes; nil when it cannot be read or holds more
    /// (`WholeFile.read`). [thread-safe]
    static func read(_ path: String, limit: Int) -> [UInt8]? { try? WholeFile.read(path, atMost: limit) }

    /// How many descriptors the process has open: the entries of `/proc/self/fd` but the one the
    /// listing itself opened; nil when the folder cannot be opened. O(descriptors). [thread-safe]
    static func openDescriptors() -> Int? {
        guard let folder = opendir("/proc/self/fd") else { return nil }
        defer { closedir(folder) }
        var count = 0
        while let entry = readdir(folder) {
            let name = entry.pointee.d_name
            // "." and "..": the first byte '.', the second NUL or '.' followed by NUL.
            if name.0 == CChar(UInt8(ascii: ".")), name.1 == 0 || (name.1 == CChar(UInt8(ascii: ".")) && name.2 == 0) { continue }
            count += 1
        }
        return max(count - 1, 0)  // the listing's own descriptor (dirfd(folder)) is one of them
    }
}
