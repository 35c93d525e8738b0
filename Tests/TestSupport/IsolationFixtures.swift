import Foundation

/// Misbehaving plugins for the isolation tests, built with `cc` at test time: each is one C source,
/// with its id and its misdeed spelled in the source.
public enum IsolationFixtures {
    /// A plugin `id` that observes `name` (and `extraInit` in init) and runs `body` in the observer.
    public static func observer(id: String, name: String, body: String, extra: String = "", extraInit: String = "") -> String {
        """
        #include "lifecycle.h"
        #include <signal.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <unistd.h>
        static const lc_host_api_t *host;
        static lc_plugin *me;
        \(extra)
        static void fixture_observer(const lc_notification_t *note, void *ctx) {
            (void)note, (void)ctx;
            \(body)
        }
        static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
            (void)state; host = api; me = plugin;
            \(extraInit)
            return host->observe(plugin, "\(name)", NULL, fixture_observer, NULL, NULL);
        }
        \(descriptor(id))
        """
    }

    /// A plugin whose init runs `body` (which returns a status).
    public static func initialiser(id: String, body: String) -> String {
        """
        #include "lifecycle.h"
        #include <signal.h>
        #include <stdlib.h>
        #include <unistd.h>
        static lc_status fixture_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
            (void)host, (void)plugin, (void)state;
            \(body)
        }
        \(descriptor(id))
        """
    }

    /// A plugin whose init returns `LC_OK` and whose deinit runs `body`.
    public static func finaliser(id: String, body: String) -> String {
        initialiser(id: id, body: "return LC_OK;")
            .replacingOccurrences(of: ".init = fixture_init,", with: ".init = fixture_init, .deinit = fixture_deinit,")
            .replacingOccurrences(of: "static const lc_plugin_descriptor_t descriptor", with: """
                static void fixture_deinit(void *state) { (void)state; \(body) }
                static const lc_plugin_descriptor_t descriptor
                """)
    }

    /// A plugin exporting ABI 1.0 delegate functions (`functions`: their C definitions).
    public static func exporter(id: String, functions: String) -> String {
        """
        #define LC_DECLARE_DELEGATE_FUNCTIONS
        #include "lifecycle.h"
        #include <stdio.h>
        static lc_status fixture_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
            (void)host, (void)plugin, (void)state; return LC_OK;
        }
        \(functions)
        \(descriptor(id))
        """
    }

    /// An ABI 1.1 plugin whose fetch completes `times` times at once through its token.
    public static func completer(id: String, times: Int) -> String {
        """
        #include "lifecycle.h"
        #include <stdio.h>
        static void perform_fetch(lc_plugin *plugin, void *state, lc_complete_fn complete, lc_completion_token token) {
            (void)state;
            for (int i = 0; i < \(times); i++) {
                lc_status status = complete(plugin, token, LC_FETCH_NEW_DATA);
                printf("completer: call %d -> %d\\n", i + 1, (int)status);
                fflush(stdout);
            }
        }
        static const lc_plugin_delegate_t delegate = { .struct_size = sizeof(lc_plugin_delegate_t), .perform_fetch = perform_fetch };
        static lc_status fixture_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
            (void)state; return host->set_delegate(plugin, &delegate);
        }
        \(descriptor(id))
        """
    }

    /// The descriptor of a fixture `id` whose init is `fixture_init`, and its entry point.
    public static func descriptorSource(_ id: String) -> String { descriptor(id) }

    static func descriptor(_ id: String) -> String {
        """
        static const lc_plugin_descriptor_t descriptor = {
            .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
            .abi_minor = LC_ABI_VERSION_MINOR, .id = "\(id)", .version = "1.0", .description = "isolation fixture",
            .init = fixture_init,
        };
        LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
        """
    }

    /// C: `progress_page()`, the address of the runner's progress page in the plugin's process (the
    /// shared page, found by its name in /proc/self/maps: `[0]` the frame it handles, `[1]` the frames
    /// it finished), or NULL. Needs <stdio.h> and <string.h> before it.
    public static let progressPageSource = """
        static volatile unsigned long *progress_page(void) {
            FILE *maps = fopen("/proc/self/maps", "r");
            char line[1024];
            unsigned long start = 0;
            while (maps && fgets(line, sizeof line, maps)) {
                if (strstr(line, "lifecycle-plugin-progress")) { sscanf(line, "%lx-", &start); break; }
            }
            if (maps) fclose(maps);
            return (volatile unsigned long *)start;
        }
        """

    /// Builds `source` as `name.so` in a folder of its own; the path.
    public static func build(_ source: String, named name: String) throws -> String {
        try CBuild.sharedObject(source, named: name, in: try CBuild.temporaryFolder("isolation-\(name)"))
    }
}
