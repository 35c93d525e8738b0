import Foundation

/// Plugin files the loader must refuse before it maps them, made from a real plugin: copies with bytes
/// edited or cut (the loader tests and the hostile corpus share them).
public enum HostileFiles {
    /// A copy of `plugin` at `folder/name` (mode 0755) with `edit` applied to its bytes.
    public static func copy(of plugin: String, named name: String, in folder: String, _ edit: (inout [UInt8]) -> Void = { _ in }) throws -> String {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: plugin)))
        edit(&bytes)
        let path = folder + "/" + name
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o755]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        return path
    }

    /// Where an ELF64 file's program headers are, and its loadable segment that ends last in the file.
    public struct Layout {
        public let programHeaders: Int, programHeaderCount: Int
        public let lastSegment: (index: Int, offset: Int, size: Int)
        /// A length that cuts the file in the middle of `lastSegment`.
        public var insideLastSegment: Int { lastSegment.offset + lastSegment.size / 2 }
    }

    public static func layout(of plugin: String) throws -> Layout {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: plugin)))
        func field<T: FixedWidthInteger>(_ offset: Int, _ type: T.Type) -> Int {
            Int(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: T.self) })
        }
        let phoff = field(32, UInt64.self), phnum = field(56, UInt16.self)
        var last = (index: 0, offset: 0, size: 0)
        for index in 0..<phnum {
            let entry = phoff + index * 56
            guard field(entry, UInt32.self) == 1 else { continue }  // PT_LOAD
            let offset = field(entry + 8, UInt64.self), size = field(entry + 32, UInt64.self)
            if offset + size > last.offset + last.size { last = (index, offset, size) }
        }
        return Layout(programHeaders: phoff, programHeaderCount: phnum, lastSegment: last)
    }

    /// A copy of `plugin` cut in the middle of its last loadable segment (SIGBUS inside `dlopen`, were
    /// it mapped), and the loader's refusal of it.
    public static func truncated(_ plugin: String, in folder: String) throws -> (path: String, reason: String) {
        let layout = try layout(of: plugin)
        let cut = layout.insideLastSegment, last = layout.lastSegment
        let path = try copy(of: plugin, named: "truncated.so", in: folder) { $0.removeSubrange(cut...) }
        return (path, "truncated: segment \(last.index) (PT_LOAD, \(last.size) bytes at offset \(last.offset)) ends past the end of the file (\(cut) bytes)")
    }

    /// A copy of `plugin` that says it is built for AArch64, and the loader's refusal of it.
    public static func aarch64(_ plugin: String, in folder: String) throws -> (path: String, reason: String) {
        (try copy(of: plugin, named: "aarch64.so", in: folder) { $0[18] = 183; $0[19] = 0 },
         "built for AArch64 (EM_AARCH64, 183); this host is x86-64 (EM_X86_64, 62)")
    }
}
