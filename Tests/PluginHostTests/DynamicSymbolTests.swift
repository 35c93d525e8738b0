import AppLifecycle
import CLifecycleABI
import Foundation
import Glibc
import TestSupport
import XCTest
@testable import LifecycleC
@testable import PluginHost

/// The loader finds a plugin's entry and delegate functions in the plugin's own dynamic symbol table
/// (`DynamicSymbols`) instead of one `dlsym` each: real plugins built with GNU and System V hash
/// tables, small and large, give `dlsym`'s answer for every name; a function only a library the
/// plugin needs defines is not the plugin's; damaged tables are answered `.unsure` (then `dlsym`
/// decides), never read outside the image.
final class DynamicSymbolTests: XCTestCase {
    /// Where the plugins of one test are built (made on first use); removed after it.
    private var made: String?
    private var folder: String {
        get throws {
            if let made { return made }
            made = try CBuild.temporaryFolder("symbols")
            return made!
        }
    }
    override func tearDown() { made.map { try? FileManager.default.removeItem(atPath: $0) } }

    /// Every delegate symbol, the entry, and names the plugins below define in other ways.
    let names = FFIDelegates.functions.map(\.symbol) + [
        "lc_plugin_entry", "exported_counter", "helper_0", "helper_63", "helper_99", "not_defined_anywhere", "",
    ]

    /// A plugin defining delegate functions as global, weak, hidden and static (local) functions, an
    /// exported variable, and `helpers` more exported functions.
    func source(helpers: Int) -> String {
        """
        #include "lifecycle.h"
        static lc_status plugin_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
            (void)api, (void)plugin, (void)state; return LC_OK;
        }
        static const lc_plugin_descriptor_t descriptor = {
            .struct_size = sizeof(lc_plugin_descriptor_t), .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
            .abi_minor = LC_ABI_VERSION_MINOR, .id = "com.example.symbols", .init = plugin_init,
        };
        LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
        int exported_counter;
        LC_EXPORT void applicationDidBecomeActive(lc_app *app) { (void)app; exported_counter++; }
        LC_EXPORT bool application_didFinishLaunchingWithOptions(lc_app *app, const lc_dict *options) { (void)app, (void)options; return 1; }
        __attribute__((weak)) void applicationWillResignActive(lc_app *app) { (void)app; exported_counter--; }
        __attribute__((visibility("hidden"))) void applicationDidEnterBackground(lc_app *app) { (void)app; exported_counter += 2; }
        static void applicationWillTerminate(lc_app *app) { (void)app; exported_counter += 3; }
        LC_EXPORT void sceneDidBecomeActive(lc_app *app, lc_scene *scene) { (void)app, (void)scene; exported_counter += 4; }
        LC_EXPORT void *keep_local(void) { return (void *)applicationWillTerminate; }
        \((0..<helpers).map { "LC_EXPORT int helper_\($0)(void) { return \($0); }" }.joined(separator: "\n"))
        """
    }

    func build(_ name: String, helpers: Int = 0, source: String? = nil, flags: [String] = []) throws -> String {
        let file = try folder + "/\(name).c", output = try folder + "/\(name).so"
        try (source ?? self.source(helpers: helpers)).write(toFile: file, atomically: true, encoding: .utf8)
        let result = try CBuild.run("/usr/bin/cc", ["-shared", "-fPIC", "-I", CBuild.root + "/include", file, "-o", output] + flags)
        XCTAssertEqual(result.status, 0, result.output)
        return output
    }

    func image(_ path: String) throws -> PluginImage {
        try PluginImage.load(try PluginFile.open(path, options: []), path: path)
    }

    func assertAgreesWithDlsym(_ image: PluginImage, line: UInt = #line) {
        for name in names {
            XCTAssertEqual(image.symbol(name), dlsym(image.handle, name), "'\(name)'", line: line)
        }
    }

    func testGNUAndSystemVTablesSmallAndLargeAnswerAsDlsym() throws {
        let cases: [(String, Int, [String])] = [
            ("gnu-small", 0, ["-Wl,--hash-style=gnu"]),  // ≤ 64 names: the lengths decide most lookups
            ("sysv-small", 0, ["-Wl,--hash-style=sysv"]),
            ("gnu-large", 100, ["-Wl,--hash-style=gnu"]),  // > 64 names: every lookup hashes
            ("sysv-large", 100, ["-Wl,--hash-style=sysv"]),
            ("both", 100, ["-Wl,--hash-style=both"]),
        ]
        for (name, helpers, flags) in cases {
            let image = try image(try build(name, helpers: helpers, flags: flags))
            assertAgreesWithDlsym(image)
            XCTAssertNotNil(image.symbol("applicationDidBecomeActive"), name)
            XCTAssertNotNil(image.symbol("applicationWillResignActive"), "\(name): a weak definition is the plugin's")
            XCTAssertNil(image.symbol("applicationDidEnterBackground"), "\(name): hidden")
            XCTAssertNil(image.symbol("applicationWillTerminate"), "\(name): static")
            XCTAssertEqual(image.symbol("helper_99") != nil, helpers == 100, name)
        }
    }

    /// A named symbol version is left to `dlsym` (which picks the default version): same answer.
    func testVersionedSymbolsAreLeftToDlsym() throws {
        let script = try folder + "/versions.map"
        try "PLUGIN_1 { global: lc_plugin_entry; application*; scene*; exported_counter; local: *; };\n"
            .write(toFile: script, atomically: true, encoding: .utf8)
        let image = try image(try build("versioned", flags: ["-Wl,--version-script=" + script]))
        assertAgreesWithDlsym(image)
        XCTAssertNotNil(image.symbol("lc_plugin_entry"))
        XCTAssertNil(image.symbol("helper_0"))
    }

    /// Decision: a delegate function is looked up in the plugin file itself; one only a library the
    /// plugin links defines is not bound (dlsym on the plugin's handle would find it there).
    func testAFunctionOnlyALinkedLibraryDefinesIsNotThePlugins() throws {
        _ = try build("libdep", source: "void applicationWillEnterForeground(void *app) { (void)app; }\n")
        let path = try build("linking", flags: ["-L", try folder, "-Wl,--no-as-needed", "-l:libdep.so", "-Wl,-rpath," + (try folder)])
        let image = try image(path)
        XCTAssertNotNil(dlsym(image.handle, "applicationWillEnterForeground"), "dlsym searches the linked library")
        XCTAssertNil(image.symbol("applicationWillEnterForeground"))

        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        let plugin = try handle.loadPlugin(path: path)
        XCTAssertEqual(plugin.implementedMethods, [.didFinishLaunching, .didBecomeActive, .willResignActive])
        XCTAssertEqual(plugin.implementedSceneMethods, [.sceneDidBecomeActive])
    }

    /// Through the loader: a System V table's functions are bound and called.
    func testTheLoaderBindsASystemVPluginsFunctions() throws {
        let path = try build("sysv-loaded", helpers: 100, flags: ["-Wl,--hash-style=sysv"])
        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        let plugin = try handle.loadPlugin(path: path)
        XCTAssertEqual(plugin.implementedMethods, [.didFinishLaunching, .didBecomeActive, .willResignActive])
        let counter = try XCTUnwrap(dlsym(try XCTUnwrap(plugin.image).handle, "exported_counter")).assumingMemoryBound(to: Int32.self)
        try handle.app.perform(.launch())
        XCTAssertEqual(counter.pointee, 1, "applicationDidBecomeActive was called")
    }

    // MARK: Damaged tables, read from memory laid out here

    /// A fake image in one buffer: a dynamic section, a GNU hash table (one bucket, one chain), the
    /// symbols and their names; `edit` damages it before it is read.
    struct FakeImage {
        /// The hash table last: a chain that does not end runs to the end of the image.
        static let dynamic = 0, symbols = 0x100, strings = 0x300, versions = 0x400, hash = 0x500, size = 0x600
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        let ranges = UnsafeMutableBufferPointer<UInt>.allocate(capacity: 2)
        var base: UInt { UInt(bitPattern: memory.baseAddress) }

        init(names: [String], versioned: Bool = false, edit: (FakeImage) -> Void = { _ in }) {
            memory.initializeMemory(as: UInt8.self, repeating: 0)
            ranges[0] = base
            ranges[1] = base + UInt(Self.size)
            var entries: [(Int64, UInt64)] = [(Int64(DT_GNU_HASH), UInt64(Self.hash)), (Int64(DT_SYMTAB), UInt64(Self.symbols)),
                                              (Int64(DT_STRTAB), UInt64(Self.strings)), (Int64(DT_STRSZ), 0x100), (Int64(DT_SYMENT), 24)]
            if versioned { entries.append((Int64(DT_VERSYM), UInt64(Self.versions))) }
            for (index, (tag, value)) in (entries + [(Int64(DT_NULL), 0)]).enumerated() {
                memory.storeBytes(of: tag, toByteOffset: Self.dynamic + 16 * index, as: Int64.self)
                memory.storeBytes(of: value, toByteOffset: Self.dynamic + 16 * index + 8, as: UInt64.self)
            }
            // nbuckets 1, symoffset 1, one Bloom word with every bit set, shift 6; bucket 0 → symbol 1.
            for (offset, value) in [(0, UInt32(1)), (4, 1), (8, 1), (12, 6)] {
                memory.storeBytes(of: value, toByteOffset: Self.hash + offset, as: UInt32.self)
            }
            memory.storeBytes(of: UInt64.max, toByteOffset: Self.hash + 16, as: UInt64.self)
            memory.storeBytes(of: UInt32(1), toByteOffset: Self.hash + 24, as: UInt32.self)
            var name = 1
            for (index, text) in names.enumerated() {
                let symbol = Self.symbols + 24 * (index + 1)
                memory.storeBytes(of: UInt32(name), toByteOffset: symbol, as: UInt32.self)  // st_name
                memory.storeBytes(of: UInt8(0x12), toByteOffset: symbol + 4, as: UInt8.self)  // GLOBAL FUNC
                memory.storeBytes(of: UInt16(9), toByteOffset: symbol + 6, as: UInt16.self)  // a section
                memory.storeBytes(of: UInt64(0x40 + index), toByteOffset: symbol + 8, as: UInt64.self)  // st_value
                for byte in text.utf8 {
                    memory.storeBytes(of: byte, toByteOffset: Self.strings + name, as: UInt8.self)
                    name += 1
                }
                name += 1
                var hash: UInt32 = 5381
                for byte in text.utf8 { hash = hash &* 33 &+ UInt32(byte) }
                let last = index == names.count - 1
                memory.storeBytes(of: last ? hash | 1 : hash & ~1, toByteOffset: Self.hash + 28 + 4 * index, as: UInt32.self)
                if versioned { memory.storeBytes(of: UInt16(index == 0 ? 2 : 1), toByteOffset: Self.versions + 2 * (index + 1), as: UInt16.self) }
            }
            edit(self)
        }

        func store<T>(_ value: T, at offset: Int) { memory.storeBytes(of: value, toByteOffset: offset, as: T.self) }

        func lookup(_ name: String) -> String {
            let symbols = DynamicSymbols.read(base: base, dynamicStart: UInt(Self.dynamic), dynamicSize: 0x100,
                                              segments: ReadableSegments(ranges: UnsafeBufferPointer(ranges)))
            switch name.withCString({ symbols.lookup($0, length: name.utf8.count) }) {
            case .found(let address): return "found +\(String(UInt(bitPattern: address) - base, radix: 16))"
            case .absent: return "absent"
            case .unsure: return "unsure"
            }
        }

        func free() {
            memory.deallocate()
            ranges.deallocate()
        }
    }

    func testAWellFormedTableAnswersFromItsOwnSymbols() {
        let image = FakeImage(names: ["alpha", "beta", "gamma"])
        defer { image.free() }
        XCTAssertEqual(image.lookup("alpha"), "found +40")
        XCTAssertEqual(image.lookup("gamma"), "found +42")
        XCTAssertEqual(image.lookup("delta"), "absent", "a length no name has")
        XCTAssertEqual(image.lookup("betas"), "absent", "the length of 'alpha', another hash")
    }

    func testDamagedTablesAreUnsureAndNeverReadOutsideTheImage() {
        let cases: [(String, String, (FakeImage) -> Void)] = [
            ("a chain without its end", "betas", { $0.store(UInt32(0), at: FakeImage.hash + 28 + 8) }),
            ("a bucket before the symbol offset", "alpha", { $0.store(UInt32(5), at: FakeImage.hash + 4) }),
            ("a name past the string table", "alpha", { $0.store(UInt32(0x1000), at: FakeImage.symbols + 24) }),
            ("symbols 16 bytes each", "alpha", { $0.store(UInt64(16), at: FakeImage.dynamic + 16 * 4 + 8) }),
            ("Bloom words not a power of 2", "alpha", { $0.store(UInt32(3), at: FakeImage.hash + 8) }),
            ("the hash table outside the image", "alpha", { $0.store(UInt64(0x10_0000), at: FakeImage.dynamic + 8) }),
            ("more buckets than the segment holds", "alpha", { $0.store(UInt32(0x1000), at: FakeImage.hash) }),
        ]
        for (damage, name, edit) in cases {
            let image = FakeImage(names: ["alpha", "beta", "gamma"], edit: edit)
            XCTAssertEqual(image.lookup(name), "unsure", damage)
            image.free()
        }
    }

    /// Symbol 1's binding and type (`st_info`), visibility (`st_other`) and section, as glibc's
    /// `dlsym` judges them: found, not the plugin's, or left to `dlsym`.
    func testEachKindOfSymbolIsJudgedAsTheDynamicLinkerWould() {
        let symbol = FakeImage.symbols + 24
        let cases: [(String, String, (FakeImage) -> Void)] = [
            ("global function", "found +40", { _ in }),
            ("weak function", "found +40", { $0.store(UInt8(0x22), at: symbol + 4) }),
            ("global object", "found +40", { $0.store(UInt8(0x11), at: symbol + 4) }),
            ("local", "absent", { $0.store(UInt8(0x02), at: symbol + 4) }),
            ("hidden", "absent", { $0.store(UInt8(2), at: symbol + 5) }),
            ("internal", "absent", { $0.store(UInt8(1), at: symbol + 5) }),
            ("undefined, no value", "absent", { $0.store(UInt16(0), at: symbol + 6); $0.store(UInt64(0), at: symbol + 8) }),
            ("undefined, with a value", "unsure", { $0.store(UInt16(0), at: symbol + 6) }),
            ("a section symbol", "absent", { $0.store(UInt8(0x13), at: symbol + 4) }),
            ("indirect function", "unsure", { $0.store(UInt8(0x1A), at: symbol + 4) }),
            ("thread-local", "unsure", { $0.store(UInt8(0x16), at: symbol + 4) }),
            ("unique", "unsure", { $0.store(UInt8(0xA2), at: symbol + 4) }),
            ("absolute", "unsure", { $0.store(UInt16(0xFFF1), at: symbol + 6) }),
        ]
        for (kind, answer, edit) in cases {
            let image = FakeImage(names: ["alpha", "beta"], edit: edit)
            XCTAssertEqual(image.lookup("alpha"), answer, kind)
            XCTAssertEqual(image.lookup("beta"), "found +41", kind)
            image.free()
        }
    }

    func testANamedVersionIsUnsureAndTheBaseVersionFound() {
        let image = FakeImage(names: ["alpha", "beta"], versioned: true)
        defer { image.free() }
        XCTAssertEqual(image.lookup("alpha"), "unsure")
        XCTAssertEqual(image.lookup("beta"), "found +41")
    }
}
