// sd-event (libsystemd) as a peer: cross-thread throughput and wake-up latency to a loop on the
// calling thread, woken through an eventfd io source (see include/bench_peers.h).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench_peers.h"
#include "peers_common.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <systemd/sd-event.h>

typedef struct peer_sdevent {
    peer_run run;  // first: the producers' `signal` casts back
    sd_event *event;
    sd_event_source *source;
    int eventfd;
    int queue_ready;
} peer_sdevent;

// The standard pattern: only the push that made the queue non-empty wakes the loop. The loop reads
// the eventfd before it takes the queue, so an item left behind was pushed after the take, into an
// empty queue, and its producer writes the eventfd after that read.
static void peer_sdevent_signal(peer_run *run, int was_empty) {
    if (!was_empty) return;
    uint64_t one = 1;
    ssize_t r;
    do {
        r = write(((peer_sdevent *)run)->eventfd, &one, sizeof one);
    } while (r < 0 && errno == EINTR);
}

static void peer_sdevent_drain_fd(int fd) {
    uint64_t value;
    ssize_t r;
    do {
        r = read(fd, &value, sizeof value);
    } while (r < 0 && errno == EINTR);  // EAGAIN: a wake-up already consumed; harmless
}

static int peer_sdevent_throughput_cb(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
    (void)source;
    (void)revents;
    peer_sdevent *state = userdata;
    peer_sdevent_drain_fd(fd);
    if (peer_run_handle_throughput(&state->run)) (void)sd_event_exit(state->event, 0);
    return 0;
}

static int peer_sdevent_latency_cb(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
    (void)source;
    (void)revents;
    peer_sdevent *state = userdata;
    peer_sdevent_drain_fd(fd);
    if (peer_run_handle_latency(&state->run)) (void)sd_event_exit(state->event, 0);
    return 0;
}

static void peer_sdevent_destroy(peer_sdevent *state) {
    if (state->source) sd_event_source_unref(state->source);  // removes the fd from the epoll set
    if (state->event) sd_event_unref(state->event);
    if (state->eventfd >= 0) close(state->eventfd);
    if (state->queue_ready) peer_queue_destroy(&state->run.queue);
    free(state);
}

static peer_sdevent *peer_sdevent_create(sd_event_io_handler_t callback) {
    peer_sdevent *state = calloc(1, sizeof *state);
    if (!state) return NULL;
    state->eventfd = -1;
    state->run.signal = peer_sdevent_signal;
    if (peer_queue_init(&state->run.queue) != 0) goto fail;
    state->queue_ready = 1;
    state->eventfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (state->eventfd < 0) goto fail;
    // A private loop (not sd_event_default, which is cached per thread and shared with other users).
    if (sd_event_new(&state->event) < 0) goto fail;
    if (sd_event_add_io(state->event, &state->source, state->eventfd, EPOLLIN, callback, state) < 0) goto fail;
    return state;
fail:
    peer_sdevent_destroy(state);
    return NULL;
}

static int peer_sdevent_loop(peer_run *run) {
    return sd_event_loop(((peer_sdevent *)run)->event) >= 0 ? 0 : -1;  // until the callback's sd_event_exit
}

int peer_sdevent_throughput(int producers, uint64_t count, uint64_t *elapsed_ns) {
    *elapsed_ns = 0;
    if (producers < 1 || producers > PEER_MAX_PRODUCERS) return -1;
    if (count == 0) return 0;
    peer_sdevent *state = peer_sdevent_create(peer_sdevent_throughput_cb);
    if (!state) return -1;
    int r = peer_run_throughput(&state->run, peer_sdevent_loop, producers, count, elapsed_ns);
    peer_sdevent_destroy(state);
    return r;
}

int peer_sdevent_latency(int producer_cpu, int consumer_cpu, int samples, long pause_ns, double *out_ns) {
    if (samples < 1 || !out_ns) return -1;
    peer_sdevent *state = peer_sdevent_create(peer_sdevent_latency_cb);
    if (!state) return -1;
    int r = peer_run_latency(&state->run, peer_sdevent_loop, producer_cpu, consumer_cpu, samples, pause_ns, out_ns);
    peer_sdevent_destroy(state);
    return r;
}
