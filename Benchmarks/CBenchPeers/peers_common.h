#pragma once
// Private to CBenchPeers (not under include/): the pieces peers_uv.c and peers_sdevent.c share —
// the clock, CPU pinning, the start flag and the mutex-protected growable queue. All static inline,
// so nothing here is exported. Include after defining _GNU_SOURCE (pthread_*affinity_np, prctl).
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define PEER_MAX_PRODUCERS 64

static inline uint64_t peer_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/// Pins the calling thread to `cpu` (no-op for cpu < 0). 0, or an errno value.
static inline int peer_pin_self(int cpu) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/// A thread's sleep in a short nanosleep is otherwise stretched by the default 50 µs timer slack.
static inline void peer_timer_slack(unsigned long ns) { (void)prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0); }

static inline void peer_nanosleep(long ns) {
    if (ns <= 0) return;
    struct timespec pause = {ns / 1000000000L, ns % 1000000000L};
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {}
}

// MARK: the queue: a growable array of uint64_t behind a mutex; the consumer swaps it out whole.

typedef struct peer_buffer {
    uint64_t *items;
    size_t count, capacity;
} peer_buffer;

typedef struct peer_queue {
    pthread_mutex_t lock;
    peer_buffer pending;  // producers append here (under lock)
    peer_buffer spare;    // the consumer's: swapped with `pending` under lock, handled outside it
} peer_queue;

static inline int peer_queue_init(peer_queue *queue) {
    memset(queue, 0, sizeof *queue);
    return pthread_mutex_init(&queue->lock, NULL) == 0 ? 0 : -1;
}

static inline void peer_queue_destroy(peer_queue *queue) {
    pthread_mutex_destroy(&queue->lock);
    free(queue->pending.items);
    free(queue->spare.items);
    memset(queue, 0, sizeof *queue);
}

/// Appends `item`; *was_empty tells whether this push made the queue non-empty. 0, or -1 (no memory).
static inline int peer_queue_push(peer_queue *queue, uint64_t item, int *was_empty) {
    pthread_mutex_lock(&queue->lock);
    peer_buffer *b = &queue->pending;
    if (b->count == b->capacity) {
        size_t capacity = b->capacity ? b->capacity * 2 : 1024;
        uint64_t *items = realloc(b->items, capacity * sizeof *items);
        if (!items) {
            pthread_mutex_unlock(&queue->lock);
            return -1;
        }
        b->items = items;
        b->capacity = capacity;
    }
    if (was_empty) *was_empty = b->count == 0;
    b->items[b->count++] = item;
    pthread_mutex_unlock(&queue->lock);
    return 0;
}

/// Consumer only: takes everything pushed so far (swapping buffers under the lock, so producers keep
/// the capacity the consumer had). The returned buffer stays valid until the next take.
static inline const peer_buffer *peer_queue_take(peer_queue *queue) {
    queue->spare.count = 0;
    pthread_mutex_lock(&queue->lock);
    peer_buffer taken = queue->pending;
    queue->pending = queue->spare;
    pthread_mutex_unlock(&queue->lock);
    queue->spare = taken;
    return &queue->spare;
}

// MARK: affinity of the calling (loop) thread, saved and restored around a pinned latency run

typedef struct peer_affinity {
    cpu_set_t set;
    int saved;
} peer_affinity;

static inline void peer_affinity_pin(peer_affinity *saved, int cpu) {
    saved->saved = 0;
    if (cpu < 0) return;
    if (pthread_getaffinity_np(pthread_self(), sizeof saved->set, &saved->set) == 0) saved->saved = 1;
    (void)peer_pin_self(cpu);
}

static inline void peer_affinity_restore(peer_affinity *saved) {
    if (saved->saved) (void)pthread_setaffinity_np(pthread_self(), sizeof saved->set, &saved->set);
    saved->saved = 0;
}

/// Spin (yielding) until *flag is non-zero.
static inline void peer_wait_flag(const int *flag) {
    while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) sched_yield();
}

// MARK: the cross-thread run shared by the libuv and sd-event cases
//
// A loop file embeds `peer_run` as the first member of its own state, sets `signal` (wake the loop:
// uv_async_send, or an eventfd write when `was_empty`), and calls peer_run_handle_* from its loop
// callback, stopping the loop when that returns 1.

typedef struct peer_run peer_run;
struct peer_run {
    peer_queue queue;
    void (*signal)(peer_run *run, int was_empty);
    int go;         // producers released (atomic)
    int abort_run;  // set with go when the run is abandoned before it starts: producers push nothing
    int failed;     // a producer could not push (no memory): the loop stops early (atomic)
    int stop;       // the loop has returned: a waiting latency producer gives up (atomic)
    uint64_t total;  // items the loop must handle
    uint64_t handled, sum;  // loop thread only
    uint64_t start_ns, end_ns;
    uint64_t delivered;  // latency: items handled, published to the producer (atomic)
    double *out_ns;      // latency samples
    long pause_ns;
    int producer_cpu;
};

typedef struct peer_producer_arg {
    peer_run *run;
    uint64_t share;
} peer_producer_arg;

static inline void peer_run_fail(peer_run *run) {
    __atomic_store_n(&run->failed, 1, __ATOMIC_RELEASE);
    run->signal(run, 1);
}

static inline void *peer_throughput_producer(void *raw) {
    peer_producer_arg *arg = (peer_producer_arg *)raw;
    peer_run *run = arg->run;
    peer_wait_flag(&run->go);
    if (run->abort_run) return NULL;
    for (uint64_t i = 0; i < arg->share; i++) {
        int was_empty;
        if (peer_queue_push(&run->queue, i, &was_empty) != 0) {
            peer_run_fail(run);
            return NULL;
        }
        run->signal(run, was_empty);
    }
    return NULL;
}

static inline void *peer_latency_producer(void *raw) {
    peer_run *run = (peer_run *)raw;
    (void)peer_pin_self(run->producer_cpu);
    peer_timer_slack(1000);
    peer_wait_flag(&run->go);
    if (run->abort_run) return NULL;
    for (uint64_t i = 0; i < run->total; i++) {
        int was_empty;
        if (peer_queue_push(&run->queue, peer_now_ns(), &was_empty) != 0) {
            peer_run_fail(run);
            return NULL;
        }
        run->signal(run, was_empty);
        while (__atomic_load_n(&run->delivered, __ATOMIC_ACQUIRE) < i + 1) {
            if (__atomic_load_n(&run->stop, __ATOMIC_ACQUIRE)) return NULL;  // the loop failed
            sched_yield();
        }
        peer_nanosleep(run->pause_ns);
    }
    return NULL;
}

/// Loop thread: handles everything queued; 1 when the run is over (all handled, or failed).
static inline int peer_run_handle_throughput(peer_run *run) {
    const peer_buffer *got = peer_queue_take(&run->queue);
    uint64_t sum = run->sum;
    for (size_t i = 0; i < got->count; i++) sum += got->items[i];
    run->sum = sum;
    run->handled += got->count;
    if (run->handled >= run->total) {
        run->end_ns = peer_now_ns();
        return 1;
    }
    return __atomic_load_n(&run->failed, __ATOMIC_ACQUIRE);
}

static inline int peer_run_handle_latency(peer_run *run) {
    const peer_buffer *got = peer_queue_take(&run->queue);
    for (size_t i = 0; i < got->count; i++) {
        uint64_t now = peer_now_ns();
        if (run->handled < run->total) run->out_ns[run->handled] = (double)(now - got->items[i]);
        run->handled++;
        __atomic_store_n(&run->delivered, run->handled, __ATOMIC_RELEASE);
    }
    return run->handled >= run->total || __atomic_load_n(&run->failed, __ATOMIC_ACQUIRE);
}

/// Makes `n` threads running `fn(args[i])`, all waiting for run->go. On failure, releases the ones
/// made with abort_run set, joins them and returns -1.
static inline int peer_run_start_threads(peer_run *run, pthread_t *threads, int n, void *(*fn)(void *),
                                         void *args, size_t arg_size) {
    int started = 0;
    for (; started < n; started++) {
        if (pthread_create(&threads[started], NULL, fn, (char *)args + (size_t)started * arg_size) != 0) break;
    }
    if (started == n) return 0;
    run->abort_run = 1;
    __atomic_store_n(&run->go, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    return -1;
}

/// After the loop returned (done or not): lets a waiting producer go, then joins them all.
static inline void peer_run_join(peer_run *run, pthread_t *threads, int n) {
    __atomic_store_n(&run->stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
}

/// Splits `count` items over `producers` (shares differ by at most one).
static inline void peer_run_shares(peer_run *run, peer_producer_arg *args, int producers, uint64_t count) {
    for (int i = 0; i < producers; i++) {
        args[i].run = run;
        args[i].share = count / (uint64_t)producers + ((uint64_t)i < count % (uint64_t)producers ? 1 : 0);
    }
}

/// Runs the loop of the state whose first member is `run` until its callback stops it; 0, or -1
/// when the loop reported an error.
typedef int (*peer_loop_fn)(peer_run *run);

/// The throughput measurement on a loop already made (the caller checked `producers` and `count`,
/// and destroys the loop afterwards): starts the producers, releases them, runs the loop until
/// every item is handled, joins them. 0 with `*elapsed_ns` set, or -1.
static inline int peer_run_throughput(peer_run *run, peer_loop_fn run_loop, int producers, uint64_t count,
                                      uint64_t *elapsed_ns) {
    run->total = count;
    pthread_t threads[PEER_MAX_PRODUCERS];
    peer_producer_arg args[PEER_MAX_PRODUCERS];
    peer_run_shares(run, args, producers, count);
    if (peer_run_start_threads(run, threads, producers, peer_throughput_producer, args, sizeof args[0]) != 0) return -1;
    run->start_ns = peer_now_ns();
    __atomic_store_n(&run->go, 1, __ATOMIC_RELEASE);
    int r = run_loop(run);
    peer_run_join(run, threads, producers);
    int ok = r >= 0 && run->handled == count;
    if (ok) *elapsed_ns = run->end_ns - run->start_ns;
    return ok ? 0 : -1;
}

/// The latency measurement on a loop already made (the caller checked `samples` and `out_ns`, and
/// destroys the loop afterwards): pins this thread to `consumer_cpu` for the run, starts the one
/// producer, runs the loop until every sample is taken, joins it. 0, or -1.
static inline int peer_run_latency(peer_run *run, peer_loop_fn run_loop, int producer_cpu, int consumer_cpu,
                                   int samples, long pause_ns, double *out_ns) {
    run->total = (uint64_t)samples;
    run->out_ns = out_ns;
    run->pause_ns = pause_ns;
    run->producer_cpu = producer_cpu;
    peer_affinity affinity;
    peer_affinity_pin(&affinity, consumer_cpu);
    pthread_t producer;
    if (peer_run_start_threads(run, &producer, 1, peer_latency_producer, run, sizeof *run) != 0) {
        peer_affinity_restore(&affinity);
        return -1;
    }
    __atomic_store_n(&run->go, 1, __ATOMIC_RELEASE);
    int r = run_loop(run);
    peer_run_join(run, &producer, 1);
    peer_affinity_restore(&affinity);
    return r >= 0 && run->handled == (uint64_t)samples ? 0 : -1;
}

