// Scenes: a scene delegate in C, the ABI 1.2 way. A delegate table (lc_plugin_delegate_t) whose 1.2
// fields are scene functions, registered from init; per-scene state (activations, trips to the
// background) kept in the plugin's own state, keyed by scene id; observers of the six scene
// notifications that read the scene from note->sender. Run it with the host's --scenes.
//
// Build on its own:  cc -shared -fPIC -I include Plugins/Scenes/scenes.c -o libScenes.so

#include "lifecycle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_SCENES = 16 };

typedef struct scene_record {
    char id[64];
    int activations;
    int backgrounds;
} scene_record;

typedef struct scenes {
    const lc_host_api_t *host;
    lc_plugin *plugin; // for the observers, which receive only their ctx (this state)
    scene_record records[MAX_SCENES];
    int count;
} scenes;

static const char *id_of(scenes *s, lc_plugin *plugin, const lc_scene *scene) {
    const char *id = NULL;
    return s->host->scene_get_id(plugin, scene, &id) == LC_OK ? id : "?";
}

// The record of a scene, by id (a reconnection is a new handle but the same id); NULL when full.
static scene_record *record_of(scenes *s, lc_plugin *plugin, const lc_scene *scene) {
    const char *id = id_of(s, plugin, scene);
    for (int i = 0; i < s->count; i++) {
        if (strcmp(s->records[i].id, id) == 0) return &s->records[i];
    }
    if (s->count == MAX_SCENES) return NULL;
    scene_record *r = &s->records[s->count++];
    snprintf(r->id, sizeof r->id, "%s", id);
    r->activations = 0;
    r->backgrounds = 0;
    return r;
}

static void will_connect(lc_plugin *plugin, void *state, lc_scene *scene, const lc_dict *options) {
    scenes *s = state;
    const char *configuration = "?";
    s->host->scene_get_configuration_name(plugin, scene, &configuration);
    printf("scenes: %s connects (%s, %zu option(s))\n", id_of(s, plugin, scene), configuration, s->host->dict->count(options));
    fflush(stdout);
    record_of(s, plugin, scene);
}

static void did_become_active(lc_plugin *plugin, void *state, lc_scene *scene) {
    scene_record *r = record_of(state, plugin, scene);
    if (r) r->activations++;
}

static void did_enter_background(lc_plugin *plugin, void *state, lc_scene *scene) {
    scene_record *r = record_of(state, plugin, scene);
    if (r) r->backgrounds++;
}

static void did_disconnect(lc_plugin *plugin, void *state, lc_scene *scene) {
    scene_record *r = record_of(state, plugin, scene);
    if (!r) return;
    printf("scenes: %s disconnected after %d activation(s), %d trip(s) to the background\n", r->id, r->activations, r->backgrounds);
    fflush(stdout);
}

static void continue_activity(lc_plugin *plugin, void *state, lc_scene *scene, const lc_dict *activity) {
    scenes *s = state;
    const char *type = "?";
    s->host->dict->get_string(activity, "activityType", &type);
    printf("scenes: %s continues %s\n", id_of(s, plugin, scene), type);
    fflush(stdout);
}

static const lc_plugin_delegate_t delegate = {
    .struct_size = sizeof(lc_plugin_delegate_t), // covers the 1.2 scene fields
    .scene_will_connect = will_connect,
    .scene_did_disconnect = did_disconnect,
    .scene_did_become_active = did_become_active,
    .scene_did_enter_background = did_enter_background,
    .scene_continue_user_activity = continue_activity,
};

static const char *state_name(lc_scene_state state) {
    static const char *const names[] = {"unattached", "foreground-inactive", "foreground-active", "background", "suspended"};
    return state < sizeof names / sizeof names[0] ? names[state] : "unknown";
}

// An observer of the six scene notifications: the scene is the notification's sender.
static void on_scene_note(const lc_notification_t *note, void *ctx) {
    scenes *s = ctx;
    lc_scene_state scene_state = LC_SCENE_STATE_UNATTACHED;
    s->host->scene_get_state(s->plugin, note->sender, &scene_state);
    printf("scenes: %s %s (%s)\n", note->name, id_of(s, s->plugin, note->sender), state_name(scene_state));
    fflush(stdout);
}

static lc_status scenes_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
    scenes *s = calloc(1, sizeof *s);
    if (!s) return host->set_error(plugin, "out of memory"), LC_ERR_SYSTEM;
    s->host = host;
    s->plugin = plugin;
    const lc_name names[] = {LC_NAME_SCENE_WILL_CONNECT, LC_NAME_SCENE_DID_DISCONNECT, LC_NAME_SCENE_DID_ACTIVATE,
                             LC_NAME_SCENE_WILL_DEACTIVATE, LC_NAME_SCENE_WILL_ENTER_FOREGROUND,
                             LC_NAME_SCENE_DID_ENTER_BACKGROUND};
    lc_status status = host->set_delegate(plugin, &delegate);
    for (size_t i = 0; status == LC_OK && i < sizeof names / sizeof names[0]; i++) {
        status = host->observe_name(plugin, names[i], NULL, on_scene_note, s, NULL);
    }
    if (status != LC_OK) {
        host->set_error(plugin, "could not register the scene delegate and observers");
        free(s);
        return status;
    }
    *state = s;
    return LC_OK;
}

static void scenes_deinit(void *state) { free(state); }

static const lc_plugin_descriptor_t descriptor = {
    .struct_size = sizeof(lc_plugin_descriptor_t),
    .magic = LC_PLUGIN_MAGIC,
    .abi_major = LC_ABI_VERSION_MAJOR,
    .abi_minor = LC_ABI_VERSION_MINOR, // 1.2: scene functions and the host's scene accessors
    .id = "org.applifecycle.scenes",
    .version = "1.0.0",
    .description = "A scene delegate with per-scene state (ABI 1.2)",
    .init = scenes_init,
    .deinit = scenes_deinit,
};

LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
