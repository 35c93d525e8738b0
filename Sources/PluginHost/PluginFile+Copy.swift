import CLifecycleSystem
import Glibc
import LifecycleRunLoop

extension PluginFile {
    /// The size of one copying step of `privateCopy(of:size:)`.
    private static let copyChunk = 1 << 16

    /// Copies the `size` bytes of the file `fd` (from offset 0) into a new anonymous file in memory
    /// (`memfd_create`, close-on-exec), and returns that file's descriptor; `fd` is left open.
    ///
    /// What a reload loads (`PluginLoadOptions.privateCopy`): the copy has a device and inode no mapped
    /// image has, so neither the loader's image table nor the dynamic linker (which also knows an
    /// object by device and inode) answers with the image of the old build — which they would for a
    /// file rewritten in place (`cp` over it keeps its inode) — and a file rewritten while it is being
    /// loaded cannot change what was checked. The copy is bounded by the file's size when it was
    /// opened: a file that grows meanwhile is copied up to that size and then refused by the ELF checks
    /// if that cut it short. [thread-safe]
    /// - Throws: the reason, when the anonymous file cannot be made, or reading or writing fails.
    static func privateCopy(of fd: Int32, size: UInt64) throws(PluginFileProblem) -> Int32 {
        let copy = lcs_memfd_create("lifecycle-plugin-reload")
        guard copy >= 0 else { throw PluginFileProblem("cannot make its private copy (memfd_create): \(String(cString: strerror(errno)))") }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: copyChunk, alignment: 16)
        defer { buffer.deallocate() }
        var offset: UInt64 = 0
        while offset < size {
            let want = Int(min(UInt64(copyChunk), size - offset))
            let got = readFully(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<want]), at: offset)
            guard got == want else {
                let why = got < 0 ? String(cString: strerror(errno)) : "it ended at byte \(offset + UInt64(max(got, 0))) of \(size)"
                close(copy)
                throw PluginFileProblem("cannot read it for its private copy: \(why)")
            }
            var written = 0
            while written < got {
                do throws(SystemCallError) {
                    let count = try systemCall("write") { write(copy, buffer.baseAddress! + written, got - written) }
                    if count == 0 { throw SystemCallError("write", errno: EIO) }
                    written += count
                } catch {
                    close(copy)
                    throw PluginFileProblem("cannot write its private copy: \(String(cString: strerror(error.errno)))")
                }
            }
            offset += UInt64(got)
        }
        return copy
    }
}
