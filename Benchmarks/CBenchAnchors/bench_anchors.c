#include "bench_anchors.h"

// ---- loading group (anchor_ffi_*) -------------------------------------------------------------------
#include <dlfcn.h>
#include <ffi.h>
#include <stdio.h>
#include <time.h>

static volatile uint64_t anchor_ffi_count;

void anchor_ffi_notify_target(void *app) {
    (void)app;
    anchor_ffi_count = anchor_ffi_count + 1;
}

bool anchor_ffi_launch_target(void *app, const void *options) {
    (void)app;
    (void)options;
    anchor_ffi_count = anchor_ffi_count + 1;
    return true;
}

uint64_t anchor_ffi_counter(void) { return anchor_ffi_count; }

void anchor_ffi_raw(void *fn, void *app, uint64_t iterations) {
    static ffi_cif cif;
    static ffi_type *arguments[1];
    static bool prepared;
    if (!prepared) {
        arguments[0] = &ffi_type_pointer;
        if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 1, &ffi_type_void, arguments) != FFI_OK) return;
        prepared = true;
    }
    void *values[1] = {&app};
    ffi_arg result;
    for (uint64_t i = 0; i < iterations; i++) ffi_call(&cif, FFI_FN(fn), &result, values);
}

uint64_t anchor_ffi_raw_bool(void *fn, void *app, const void *dict, uint64_t iterations) {
    static ffi_cif cif;
    static ffi_type *arguments[2];
    static bool prepared;
    if (!prepared) {
        arguments[0] = &ffi_type_pointer;
        arguments[1] = &ffi_type_pointer;
        if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 2, &ffi_type_uint8, arguments) != FFI_OK) return 0;
        prepared = true;
    }
    void *values[2] = {&app, &dict};
    uint64_t yes = 0;
    for (uint64_t i = 0; i < iterations; i++) {
        ffi_arg result = 0;
        ffi_call(&cif, FFI_FN(fn), &result, values);
        yes += (uint8_t)result != 0;
    }
    return yes;
}

void anchor_ffi_direct(void *fn, void *app, uint64_t iterations) {
    void (*volatile call)(void *) = (void (*)(void *))fn;
    for (uint64_t i = 0; i < iterations; i++) call(app);
}

uint64_t anchor_ffi_dlopen_all(const char *const *paths, size_t count) {
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (size_t i = 0; i < count; i++) {
        void *handle = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (!handle) {
            fprintf(stderr, "anchor_ffi_dlopen_all: %s\n", dlerror());
            return 0;
        }
        const void *(*entry)(void) = (const void *(*)(void))dlsym(handle, "lc_plugin_entry");
        if (!entry || !entry()) return 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    return (uint64_t)(end.tv_sec - start.tv_sec) * 1000000000u + (uint64_t)(end.tv_nsec - start.tv_nsec);
}

// MARK: posting (anchor_post_*)

void anchor_post_count(const void *record, void *ctx) {
    (void)record;
    ++*(uint64_t *)ctx;
}

/// The record a post builds: the same size and fields as lc_notification_t.
typedef struct {
    uint32_t struct_size;
    uint32_t name_id;
    const char *name;
    const void *sender;
    const void *user_info;
} anchor_post_record;

uint64_t anchor_post_c_loop(const anchor_post_fn *fns, void *const *ctxs, size_t n, size_t iterations) {
    uint64_t done = 0;
    for (size_t it = 0; it < iterations; it++) {
        anchor_post_record record = {sizeof(anchor_post_record), 42, "com.example.bench", NULL, NULL};
        for (size_t i = 0; i < n; i++) fns[i](&record, ctxs[i]);
        done += n;
    }
    return done;
}

#include <malloc.h>

size_t anchor_post_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

__attribute__((noinline)) void anchor_post_callgrind_mark(int phase) {
    __asm__ volatile("" : : "r"(phase) : "memory");
}

// ---- anchor_ring_*: the cross-thread group ----
// What a C programmer would write to hand items to a loop thread: a power-of-two SPSC ring of 64-bit
// items and an eventfd, the consumer sleeping in epoll_wait only when the ring is empty.

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// Affinity through the raw syscalls: the CPU_* macros need _GNU_SOURCE before the first include,
// which this shared file does not define. A mask of 1024 CPUs, as glibc's cpu_set_t.
typedef struct { unsigned long bits[1024 / (8 * sizeof(unsigned long))]; } anchor_ring_mask;
#define ANCHOR_RING_WORD_BITS (8 * sizeof(unsigned long))

static int anchor_ring_get_mask(anchor_ring_mask *mask) {
    memset(mask, 0, sizeof *mask);
    return syscall(SYS_sched_getaffinity, 0, sizeof *mask, mask) < 0 ? -1 : 0;
}

static int anchor_ring_set_mask(const anchor_ring_mask *mask) {
    return syscall(SYS_sched_setaffinity, 0, sizeof *mask, mask) == 0 ? 0 : -1;
}

int anchor_ring_allowed_cpu(int index) {
    anchor_ring_mask mask;
    if (anchor_ring_get_mask(&mask) != 0) return -1;
    for (int cpu = 0; cpu < 1024; cpu++) {
        if ((mask.bits[cpu / ANCHOR_RING_WORD_BITS] >> (cpu % ANCHOR_RING_WORD_BITS) & 1) && index-- == 0) return cpu;
    }
    return -1;
}

int anchor_ring_pin_self(int cpu) {
    if (cpu < 0 || cpu >= 1024) return 0;
    anchor_ring_mask mask;
    memset(&mask, 0, sizeof mask);
    mask.bits[cpu / ANCHOR_RING_WORD_BITS] = 1ul << (cpu % ANCHOR_RING_WORD_BITS);
    return anchor_ring_set_mask(&mask);
}

static __thread int anchor_ring_pinned_cpu = -1;

void anchor_ring_pin_self_once(int cpu) {
    if (cpu < 0 || anchor_ring_pinned_cpu == cpu) return;
    if (anchor_ring_pin_self(cpu) == 0) anchor_ring_pinned_cpu = cpu;
}

void *anchor_ring_affinity_save(void) {
    anchor_ring_mask *mask = malloc(sizeof *mask);
    if (mask && anchor_ring_get_mask(mask) != 0) {
        free(mask);
        return NULL;
    }
    return mask;
}

void anchor_ring_affinity_restore(void *saved) {
    if (!saved) return;
    (void)anchor_ring_set_mask(saved);
    anchor_ring_pinned_cpu = -1;
    free(saved);
}

void anchor_ring_timer_slack(unsigned long ns) { (void)prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0); }

uint64_t anchor_ring_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int anchor_ring_cf_wake_main_run_loop(void) {
    typedef void *(*get_main_fn)(void);
    typedef void (*wake_up_fn)(void *);
    static get_main_fn get_main;
    static wake_up_fn wake_up;
    if (!wake_up) {
        get_main = (get_main_fn)dlsym(RTLD_DEFAULT, "CFRunLoopGetMain");
        wake_up = (wake_up_fn)dlsym(RTLD_DEFAULT, "CFRunLoopWakeUp");
        if (!get_main || !wake_up) return -1;
    }
    wake_up(get_main());
    return 0;
}

#define ANCHOR_RING_CAPACITY 4096u

struct anchor_ring {
    // Producer and consumer indices on their own cache lines.
    _Alignas(64) uint64_t tail;  // next slot the producer fills
    _Alignas(64) uint64_t head;  // next slot the consumer takes
    _Alignas(64) uint64_t delivered;  // items the consumer has handled (the producer's ping-pong wait)
    uint64_t start_ns, end_ns;
    _Alignas(64) int go;
    int eventfd, epollfd;
    int producer_cpu, consumer_cpu;
    int samples;
    long pause_ns;
    double *out_ns;
    int producers;
    pthread_mutex_t producer_lock;  // taken only with several producers
    uint64_t items[ANCHOR_RING_CAPACITY];
};

// Push one item. Dekker-style: publish the tail, then look at the head; if the consumer had taken
// everything before this item, it may be asleep (or about to sleep): wake it. The consumer publishes
// its head, then re-reads the tail before sleeping, so one of the two always sees the other.
static void anchor_ring_push(struct anchor_ring *ring, uint64_t item) {
    uint64_t tail = ring->tail;
    while (tail - __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE) == ANCHOR_RING_CAPACITY) sched_yield();  // full
    ring->items[tail & (ANCHOR_RING_CAPACITY - 1)] = item;
    __atomic_store_n(&ring->tail, tail + 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&ring->head, __ATOMIC_SEQ_CST) == tail) {
        uint64_t one = 1;
        ssize_t r;
        do { r = write(ring->eventfd, &one, sizeof one); } while (r < 0 && errno == EINTR);
    }
}

// Waits (epoll_wait, then drains the eventfd) until the ring is non-empty; returns the tail seen.
static uint64_t anchor_ring_wait(struct anchor_ring *ring, uint64_t head) {
    for (;;) {
        uint64_t tail = __atomic_load_n(&ring->tail, __ATOMIC_SEQ_CST);
        if (tail != head) return tail;
        struct epoll_event event;
        int n = epoll_wait(ring->epollfd, &event, 1, -1);
        if (n == 1) {
            uint64_t value;
            (void)read(ring->eventfd, &value, sizeof value);
        }
    }
}

static void *anchor_ring_latency_consumer(void *arg) {
    struct anchor_ring *ring = arg;
    anchor_ring_pin_self(ring->consumer_cpu);
    __atomic_store_n(&ring->go, 1, __ATOMIC_RELEASE);
    uint64_t head = 0;
    while (head < (uint64_t)ring->samples) {
        uint64_t tail = anchor_ring_wait(ring, head);
        for (; head != tail; head++) {
            uint64_t sent = ring->items[head & (ANCHOR_RING_CAPACITY - 1)];
            uint64_t now = anchor_ring_now_ns();
            ring->out_ns[head] = (double)(now - sent);
            __atomic_store_n(&ring->head, head + 1, __ATOMIC_SEQ_CST);
            __atomic_store_n(&ring->delivered, head + 1, __ATOMIC_RELEASE);
        }
    }
    return NULL;
}

static void *anchor_ring_latency_producer(void *arg) {
    struct anchor_ring *ring = arg;
    anchor_ring_pin_self(ring->producer_cpu);
    anchor_ring_timer_slack(1000);
    while (!__atomic_load_n(&ring->go, __ATOMIC_ACQUIRE)) sched_yield();
    for (int i = 0; i < ring->samples; i++) {
        anchor_ring_push(ring, anchor_ring_now_ns());
        struct timespec pause = {0, ring->pause_ns};
        while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {}
        while (__atomic_load_n(&ring->delivered, __ATOMIC_ACQUIRE) < (uint64_t)i + 1) sched_yield();
    }
    return NULL;
}

static struct anchor_ring *anchor_ring_create(void) {
    struct anchor_ring *ring = aligned_alloc(64, (sizeof(struct anchor_ring) + 63) & ~(size_t)63);
    if (!ring) return NULL;
    memset(ring, 0, sizeof *ring);
    ring->eventfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    ring->epollfd = epoll_create1(EPOLL_CLOEXEC);
    pthread_mutex_init(&ring->producer_lock, NULL);
    struct epoll_event event = {.events = EPOLLIN, .data.u64 = 0};
    if (ring->eventfd < 0 || ring->epollfd < 0 || epoll_ctl(ring->epollfd, EPOLL_CTL_ADD, ring->eventfd, &event) != 0) {
        if (ring->eventfd >= 0) close(ring->eventfd);
        if (ring->epollfd >= 0) close(ring->epollfd);
        free(ring);
        return NULL;
    }
    return ring;
}

static void anchor_ring_destroy(struct anchor_ring *ring) {
    close(ring->eventfd);
    close(ring->epollfd);
    pthread_mutex_destroy(&ring->producer_lock);
    free(ring);
}

int anchor_ring_latency(int producer_cpu, int consumer_cpu, int samples, long pause_ns, double *out_ns) {
    struct anchor_ring *ring = anchor_ring_create();
    if (!ring) return -1;
    ring->producer_cpu = producer_cpu;
    ring->consumer_cpu = consumer_cpu;
    ring->samples = samples;
    ring->pause_ns = pause_ns;
    ring->out_ns = out_ns;
    pthread_t consumer, producer;
    if (pthread_create(&consumer, NULL, anchor_ring_latency_consumer, ring) != 0) {
        anchor_ring_destroy(ring);
        return -1;
    }
    if (pthread_create(&producer, NULL, anchor_ring_latency_producer, ring) != 0) {
        // Let the consumer finish: feed it the items it waits for.
        for (int i = 0; i < samples; i++) anchor_ring_push(ring, anchor_ring_now_ns());
        pthread_join(consumer, NULL);
        anchor_ring_destroy(ring);
        return -1;
    }
    pthread_join(producer, NULL);
    pthread_join(consumer, NULL);
    anchor_ring_destroy(ring);
    return 0;
}

static void *anchor_ring_throughput_consumer(void *arg) {
    struct anchor_ring *ring = arg;
    uint64_t head = 0, count = (uint64_t)ring->samples;
    volatile uint64_t sum = 0;
    while (head < count) {
        uint64_t tail = anchor_ring_wait(ring, head);
        for (; head != tail; head++) sum += ring->items[head & (ANCHOR_RING_CAPACITY - 1)];
        __atomic_store_n(&ring->head, head, __ATOMIC_SEQ_CST);
    }
    ring->end_ns = anchor_ring_now_ns();
    return NULL;
}

static void *anchor_ring_throughput_producer(void *arg) {
    struct anchor_ring *ring = arg;
    int share = ring->samples / ring->producers;
    while (!__atomic_load_n(&ring->go, __ATOMIC_ACQUIRE)) sched_yield();
    for (int i = 0; i < share; i++) {
        if (ring->producers > 1) pthread_mutex_lock(&ring->producer_lock);
        anchor_ring_push(ring, (uint64_t)i);
        if (ring->producers > 1) pthread_mutex_unlock(&ring->producer_lock);
    }
    return NULL;
}

int64_t anchor_ring_throughput(int producers, int count) {
    if (producers < 1 || producers > 64) return -1;
    struct anchor_ring *ring = anchor_ring_create();
    if (!ring) return -1;
    ring->producers = producers;
    ring->samples = count / producers * producers;
    pthread_t consumer, threads[64];
    int started = 0;
    if (pthread_create(&consumer, NULL, anchor_ring_throughput_consumer, ring) != 0) {
        anchor_ring_destroy(ring);
        return -1;
    }
    for (; started < producers; started++) {
        if (pthread_create(&threads[started], NULL, anchor_ring_throughput_producer, ring) != 0) break;
    }
    ring->start_ns = anchor_ring_now_ns();
    __atomic_store_n(&ring->go, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    int64_t result = -1;
    if (started == producers) {
        pthread_join(consumer, NULL);
        result = (int64_t)(ring->end_ns - ring->start_ns);
    } else {
        // A thread could not be made: push the missing shares from here so that the consumer finishes.
        uint64_t missing = (uint64_t)(producers - started) * (uint64_t)(ring->samples / producers);
        for (uint64_t i = 0; i < missing; i++) anchor_ring_push(ring, i);
        pthread_join(consumer, NULL);
    }
    anchor_ring_destroy(ring);
    return result;
}

#include <malloc.h>

size_t anchor_ffi_heap_in_use(void) { return mallinfo2().uordblks; }

// ---- A process boundary (the isolation group's floors) ----

#include <sys/socket.h>
#include <sys/wait.h>

static int anchor_fork_pinned(int child_cpu, int *pair) {
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (child_cpu >= 0) anchor_ring_pin_self(child_cpu);
        close(pair[0]);
        return 0;
    }
    close(pair[1]);
    return pid;
}

int anchor_process_round_trips(int child_cpu, int samples, double *out_ns) {
    int pair[2];
    int pid = anchor_fork_pinned(child_cpu, pair);
    if (pid < 0) return -1;
    if (pid == 0) {
        char byte;
        while (read(pair[1], &byte, 1) == 1) {
            if (write(pair[1], &byte, 1) != 1) break;
        }
        _exit(0);
    }
    char byte = 1;
    for (int i = 0; i < samples; i++) {
        uint64_t start = anchor_ring_now_ns();
        if (write(pair[0], &byte, 1) != 1 || read(pair[0], &byte, 1) != 1) break;
        out_ns[i] = (double)(anchor_ring_now_ns() - start);
    }
    close(pair[0]);
    waitpid(pid, NULL, 0);
    return 0;
}

int64_t anchor_process_stream(int child_cpu, int records, int record_size, int batch) {
    int pair[2];
    int pid = anchor_fork_pinned(child_cpu, pair);
    if (pid < 0) return -1;
    long long total = (long long)records * record_size;
    if (pid == 0) {
        static char buffer[256 << 10];
        long long got = 0;
        while (got < total) {
            ssize_t n = read(pair[1], buffer, sizeof buffer);
            if (n <= 0) _exit(1);
            got += n;
        }
        char done = 1;
        if (write(pair[1], &done, 1) != 1) _exit(1);
        _exit(0);
    }
    char *chunk = calloc(1, (size_t)batch);
    if (!chunk) return -1;
    uint64_t start = anchor_ring_now_ns();
    long long sent = 0;
    while (sent < total) {
        long long want = total - sent < batch ? total - sent : batch;
        ssize_t n = write(pair[0], chunk, (size_t)want);
        if (n <= 0) break;
        sent += n;
    }
    char done = 0;
    ssize_t n = read(pair[0], &done, 1);
    int64_t elapsed = (int64_t)(anchor_ring_now_ns() - start);
    free(chunk);
    close(pair[0]);
    waitpid(pid, NULL, 0);
    return n == 1 ? elapsed : -1;
}

// ---- anchor_rings_*: the cross-thread group, several producers without a shared lock -------------
// (appended by the cross-thread group; everything below is its own)
// What a C programmer would write to hand items from several threads to a loop thread without one
// lock they all take: each producer owns a single-producer single-consumer ring of 64-bit items; the
// consumer (the calling thread, as a main loop is) drains every ring in turn and, only when all of
// them are empty, sleeps in epoll_wait on one eventfd. The wake-up is Dekker-style on one flag: the
// consumer sets `sleeping`, then re-reads every tail before it sleeps; a producer publishes its tail,
// then reads `sleeping` and, when set, clears it and writes the eventfd (one write per sleep).

#define ANCHOR_RINGS_CAPACITY 4096u
#define ANCHOR_RINGS_MAX_PRODUCERS 64

struct anchor_rings;

struct anchor_rings_lane {
    _Alignas(64) uint64_t tail;  // next slot the producer fills (its cache line)
    _Alignas(64) uint64_t head;  // next slot the consumer takes, published after each batch
    _Alignas(64) uint64_t items[ANCHOR_RINGS_CAPACITY];
    struct anchor_rings *owner;
    uint64_t share;
};

struct anchor_rings {
    _Alignas(64) int sleeping;  // the consumer is (about to be) asleep in epoll_wait
    _Alignas(64) int go;
    int abort_run;  // the consumer gave up (or a thread could not be made): producers stop
    int eventfd, epollfd;
    struct anchor_rings_lane *lanes;
};

static void anchor_rings_wake(struct anchor_rings *rings) {
    if (__atomic_load_n(&rings->sleeping, __ATOMIC_SEQ_CST) && __atomic_exchange_n(&rings->sleeping, 0, __ATOMIC_SEQ_CST)) {
        uint64_t one = 1;
        ssize_t r;
        do { r = write(rings->eventfd, &one, sizeof one); } while (r < 0 && errno == EINTR);
    }
}

static void *anchor_rings_producer(void *arg) {
    struct anchor_rings_lane *lane = arg;
    struct anchor_rings *rings = lane->owner;
    while (!__atomic_load_n(&rings->go, __ATOMIC_ACQUIRE)) sched_yield();
    uint64_t tail = 0, head = 0;  // `head`: the consumer's, as last read (re-read only when the ring looks full)
    for (uint64_t i = 0; i < lane->share; i++) {
        while (tail - head == ANCHOR_RINGS_CAPACITY) {  // full
            head = __atomic_load_n(&lane->head, __ATOMIC_ACQUIRE);
            if (tail - head < ANCHOR_RINGS_CAPACITY) break;
            if (__atomic_load_n(&rings->abort_run, __ATOMIC_ACQUIRE)) return NULL;
            sched_yield();
        }
        lane->items[tail & (ANCHOR_RINGS_CAPACITY - 1)] = i;
        __atomic_store_n(&lane->tail, ++tail, __ATOMIC_SEQ_CST);
        anchor_rings_wake(rings);
    }
    return NULL;
}

int64_t anchor_rings_throughput(int producers, int count) {
    if (producers < 1 || producers > ANCHOR_RINGS_MAX_PRODUCERS || count < producers) return -1;
    struct anchor_rings rings;
    memset(&rings, 0, sizeof rings);
    size_t lanes_size = ((sizeof(struct anchor_rings_lane) + 63) & ~(size_t)63) * (size_t)producers;
    rings.lanes = aligned_alloc(64, lanes_size);
    if (!rings.lanes) return -1;
    memset(rings.lanes, 0, lanes_size);
    rings.eventfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    rings.epollfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event = {.events = EPOLLIN, .data.u64 = 0};
    int64_t result = -1;
    pthread_t threads[ANCHOR_RINGS_MAX_PRODUCERS];
    int started = 0;
    if (rings.eventfd < 0 || rings.epollfd < 0 || epoll_ctl(rings.epollfd, EPOLL_CTL_ADD, rings.eventfd, &event) != 0) goto done;
    uint64_t share = (uint64_t)(count / producers), total = share * (uint64_t)producers;
    for (; started < producers; started++) {
        rings.lanes[started].owner = &rings;
        rings.lanes[started].share = share;
        if (pthread_create(&threads[started], NULL, anchor_rings_producer, &rings.lanes[started]) != 0) break;
    }
    if (started < producers) {
        __atomic_store_n(&rings.abort_run, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&rings.go, 1, __ATOMIC_RELEASE);
        goto done;
    }
    uint64_t start = anchor_ring_now_ns(), deadline = start + 60ull * 1000000000ull;  // bound: never hang
    uint64_t handled = 0;
    volatile uint64_t sum = 0;
    __atomic_store_n(&rings.go, 1, __ATOMIC_RELEASE);
    while (handled < total) {
        uint64_t got = 0;
        for (int p = 0; p < producers; p++) {
            struct anchor_rings_lane *lane = &rings.lanes[p];
            uint64_t head = lane->head;  // only this thread writes it
            uint64_t tail = __atomic_load_n(&lane->tail, __ATOMIC_ACQUIRE);
            if (tail == head) continue;
            uint64_t s = 0;
            for (uint64_t h = head; h != tail; h++) s += lane->items[h & (ANCHOR_RINGS_CAPACITY - 1)];
            sum += s;
            __atomic_store_n(&lane->head, tail, __ATOMIC_RELEASE);
            got += tail - head;
        }
        handled += got;
        if (got) continue;
        // Every ring looked empty: announce the sleep, look again, then sleep.
        __atomic_store_n(&rings.sleeping, 1, __ATOMIC_SEQ_CST);
        int any = 0;
        for (int p = 0; p < producers && !any; p++) {
            any = __atomic_load_n(&rings.lanes[p].tail, __ATOMIC_SEQ_CST) != rings.lanes[p].head;
        }
        if (!any) {
            if (anchor_ring_now_ns() > deadline) break;
            struct epoll_event ready;
            if (epoll_wait(rings.epollfd, &ready, 1, 1000) == 1) {
                uint64_t value;
                (void)read(rings.eventfd, &value, sizeof value);
            }
        }
        __atomic_store_n(&rings.sleeping, 0, __ATOMIC_SEQ_CST);
    }
    uint64_t end = anchor_ring_now_ns();
    if (handled == total) result = (int64_t)(end - start);
    __atomic_store_n(&rings.abort_run, 1, __ATOMIC_RELEASE);
done:
    for (int i = 0; i < started; i++) pthread_join(threads[i], NULL);
    if (rings.eventfd >= 0) close(rings.eventfd);
    if (rings.epollfd >= 0) close(rings.epollfd);
    free(rings.lanes);
    return result;
}

size_t anchor_rings_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

size_t anchor_rings_rss_bytes(void) {
    FILE *file = fopen("/proc/self/statm", "r");
    if (!file) return 0;
    unsigned long size = 0, resident = 0;
    int n = fscanf(file, "%lu %lu", &size, &resident);
    fclose(file);
    return n == 2 ? (size_t)resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

size_t anchor_rings_arena_free(void) {
    struct mallinfo2 info = mallinfo2();
    return info.fordblks;
}

int anchor_rings_trim(void) { return malloc_trim(0); }
// ---- end of anchor_rings_* ----

// ---- anchor_deleg_*, anchor_process_round_trips_type: the delegates and isolation groups ----------
// (appended for DelegateBenchmarks.swift and IsolationBenchmarks.swift)

uint64_t anchor_deleg_c_loop(void *const *fns, size_t n, void *app, size_t iterations) {
    for (size_t it = 0; it < iterations; it++) {
        for (size_t i = 0; i < n; i++) ((void (*)(void *))fns[i])(app);
    }
    return (uint64_t)n * iterations;
}

uint64_t anchor_deleg_ffi_loop(void *const *fns, size_t n, void *app, size_t iterations) {
    static ffi_cif cif;
    static ffi_type *arguments[1];
    static bool prepared;
    if (!prepared) {
        arguments[0] = &ffi_type_pointer;
        if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, 1, &ffi_type_void, arguments) != FFI_OK) return 0;
        prepared = true;
    }
    void *values[1] = {&app};
    ffi_arg result;
    for (size_t it = 0; it < iterations; it++) {
        for (size_t i = 0; i < n; i++) ffi_call(&cif, FFI_FN(fns[i]), &result, values);
    }
    return (uint64_t)n * iterations;
}

int anchor_process_round_trips_type(int child_cpu, int samples, double *out_ns, int socket_type) {
    int pair[2];
    if (socketpair(AF_UNIX, socket_type | SOCK_CLOEXEC, 0, pair) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(pair[0]);
        close(pair[1]);
        return -1;
    }
    if (pid == 0) {
        if (child_cpu >= 0) anchor_ring_pin_self(child_cpu);
        close(pair[0]);
        char byte;
        while (read(pair[1], &byte, 1) == 1) {
            if (write(pair[1], &byte, 1) != 1) break;
        }
        _exit(0);
    }
    close(pair[1]);
    char byte = 1;
    int done = 0;
    for (; done < samples; done++) {
        uint64_t start = anchor_ring_now_ns();
        if (write(pair[0], &byte, 1) != 1 || read(pair[0], &byte, 1) != 1) break;
        out_ns[done] = (double)(anchor_ring_now_ns() - start);
    }
    close(pair[0]);
    waitpid(pid, NULL, 0);
    return done == samples ? 0 : -1;
}
// ---- end of anchor_deleg_* ----
