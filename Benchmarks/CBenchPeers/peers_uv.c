// libuv as a peer: cross-thread throughput and wake-up latency to a loop on the calling thread,
// woken with uv_async_t (see include/bench_peers.h for what is measured).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "bench_peers.h"
#include "peers_common.h"

#include <uv.h>

typedef struct peer_uv {
    peer_run run;  // first: the producers' `signal` casts back
    uv_loop_t loop;
    uv_async_t async;
    int loop_ready, async_ready, queue_ready;
} peer_uv;

// Producers call this after every push: uv_async_send is thread-safe and coalesces (a send while one
// is pending costs an atomic load), which is how libuv documents it.
static void peer_uv_signal(peer_run *run, int was_empty) {
    (void)was_empty;
    uv_async_send(&((peer_uv *)run)->async);
}

static void peer_uv_throughput_cb(uv_async_t *handle) {
    peer_uv *state = (peer_uv *)handle->data;
    if (peer_run_handle_throughput(&state->run)) uv_stop(&state->loop);
}

static void peer_uv_latency_cb(uv_async_t *handle) {
    peer_uv *state = (peer_uv *)handle->data;
    if (peer_run_handle_latency(&state->run)) uv_stop(&state->loop);
}

static void peer_uv_destroy(peer_uv *state) {
    if (state->async_ready) {
        uv_close((uv_handle_t *)&state->async, NULL);
        // Runs the close; a wake-up still pending is dispatched first and finds the queue empty.
        (void)uv_run(&state->loop, UV_RUN_DEFAULT);
    }
    if (state->loop_ready) (void)uv_loop_close(&state->loop);
    if (state->queue_ready) peer_queue_destroy(&state->run.queue);
    free(state);
}

static peer_uv *peer_uv_create(uv_async_cb callback) {
    peer_uv *state = calloc(1, sizeof *state);
    if (!state) return NULL;
    state->run.signal = peer_uv_signal;
    if (peer_queue_init(&state->run.queue) != 0) goto fail;
    state->queue_ready = 1;
    if (uv_loop_init(&state->loop) != 0) goto fail;
    state->loop_ready = 1;
    if (uv_async_init(&state->loop, &state->async, callback) != 0) goto fail;
    state->async_ready = 1;
    state->async.data = state;
    return state;
fail:
    peer_uv_destroy(state);
    return NULL;
}

static int peer_uv_loop(peer_run *run) {
    (void)uv_run(&((peer_uv *)run)->loop, UV_RUN_DEFAULT);  // until the callback's uv_stop
    return 0;
}

int peer_uv_throughput(int producers, uint64_t count, uint64_t *elapsed_ns) {
    *elapsed_ns = 0;
    if (producers < 1 || producers > PEER_MAX_PRODUCERS) return -1;
    if (count == 0) return 0;
    peer_uv *state = peer_uv_create(peer_uv_throughput_cb);
    if (!state) return -1;
    int r = peer_run_throughput(&state->run, peer_uv_loop, producers, count, elapsed_ns);
    peer_uv_destroy(state);
    return r;
}

int peer_uv_latency(int producer_cpu, int consumer_cpu, int samples, long pause_ns, double *out_ns) {
    if (samples < 1 || !out_ns) return -1;
    peer_uv *state = peer_uv_create(peer_uv_latency_cb);
    if (!state) return -1;
    int r = peer_run_latency(&state->run, peer_uv_loop, producer_cpu, consumer_cpu, samples, pause_ns, out_ns);
    peer_uv_destroy(state);
    return r;
}
