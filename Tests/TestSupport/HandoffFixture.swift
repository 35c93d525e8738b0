import Foundation

/// Tests/PluginHostTests/Fixtures/handoff_fixture.c built one of its three ways: the application
/// delegate's rows added after ABI 1.0 exported by name (ABI 1.0), in an `lc_plugin_delegate_t`
/// (ABI 1.1 with its 1.2 fields), or in an `lc_delegate_t` for `lc_app_add_delegate`.
public enum HandoffFixture: String, CaseIterable, Sendable {
    case exported, table, delegateStruct

    public static let source = CBuild.root + "/Tests/PluginHostTests/Fixtures/handoff_fixture.c"

    /// The plugin's id (each build has its own, so that two can be loaded into one application).
    public var id: String { "com.example.handoff.\(rawValue.lowercased())" }

    /// Compiles this build into `folder`; returns the shared object's path.
    public func build(in folder: String) throws -> String {
        var defines = ["FIXTURE_ID=\"\(id)\""]
        switch self {
        case .exported: break
        case .table: defines.append("FIXTURE_TABLE")
        case .delegateStruct: defines.append("FIXTURE_STRUCT")
        }
        return try CBuild.sharedObject(file: Self.source, defines: defines, named: "handoff_\(rawValue)", in: folder)
    }
}
