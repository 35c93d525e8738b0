// GLib/GObject signals as a peer of our notification center's synchronous post (bench_peers.h).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench_peers.h"

#include <stdlib.h>
#include <time.h>

#include <glib-object.h>

// A minimal GObject subclass whose only feature is the signal "ping": no arguments, no return value,
// G_SIGNAL_RUN_LAST and no class handler, as an application would declare a notification.
typedef struct {
    GObject parent_instance;
} PeerEmitter;

typedef struct {
    GObjectClass parent_class;
} PeerEmitterClass;

static GType peer_emitter_get_type(void);
G_DEFINE_TYPE(PeerEmitter, peer_emitter, G_TYPE_OBJECT)

static guint peer_emitter_ping_signal;

static void peer_emitter_class_init(PeerEmitterClass *klass) {
    peer_emitter_ping_signal = g_signal_new("ping", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                            NULL, G_TYPE_NONE, 0);
}

static void peer_emitter_init(PeerEmitter *self) { (void)self; }

static void peer_glib_count(PeerEmitter *emitter, gpointer user_data) {
    (void)emitter;
    ++*(uint64_t *)user_data;
}

static uint64_t peer_glib_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t peer_glib_emit(size_t observers, size_t iterations, uint64_t *elapsed_ns) {
    if (elapsed_ns) *elapsed_ns = 0;
    uint64_t *counters = calloc(observers ? observers : 1, sizeof *counters);
    if (!counters) return 0;
    // g_object_new registers the type (and the signal) once per process, thread-safely.
    PeerEmitter *emitter = g_object_new(peer_emitter_get_type(), NULL);
    for (size_t i = 0; i < observers; i++) g_signal_connect(emitter, "ping", G_CALLBACK(peer_glib_count), &counters[i]);
    guint signal = peer_emitter_ping_signal;

    uint64_t start = peer_glib_now_ns();
    for (size_t i = 0; i < iterations; i++) g_signal_emit(emitter, signal, 0);
    uint64_t end = peer_glib_now_ns();

    g_object_unref(emitter);  // the last reference: disconnects and frees every handler
    uint64_t sum = 0;
    for (size_t i = 0; i < observers; i++) sum += counters[i];
    free(counters);
    if (elapsed_ns) *elapsed_ns = end - start;
    return sum;
}
