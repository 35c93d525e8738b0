#pragma once
// The C anchors the benchmark measures our engine against: what a C programmer would write instead.
#include <stddef.h>
#include <stdint.h>

// ---- loading group (anchor_ffi_*): libffi delegate calls, raw plugin loading ----------------------
#include <stdbool.h>

/// `void applicationDidBecomeActive(lc_app *app)` for the benchmark: increments a counter.
void anchor_ffi_notify_target(void *app);
/// `bool application_didFinishLaunchingWithOptions(lc_app *app, const lc_dict *options)`: increments, returns true.
bool anchor_ffi_launch_target(void *app, const void *options);
/// How many times the two targets above ran.
uint64_t anchor_ffi_counter(void);
/// `iterations` raw `ffi_call`s of `void fn(void *app)` through one cif prepared once (on first use).
void anchor_ffi_raw(void *fn, void *app, uint64_t iterations);
/// `iterations` raw `ffi_call`s of `bool fn(void *app, const void *dict)`; returns how many answered true.
uint64_t anchor_ffi_raw_bool(void *fn, void *app, const void *dict, uint64_t iterations);
/// `iterations` direct calls of `void fn(void *app)` through a function pointer the compiler cannot see through.
void anchor_ffi_direct(void *fn, void *app, uint64_t iterations);
/// `dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)` + `dlsym("lc_plugin_entry")` + calling it, for each of
/// `count` paths; returns the elapsed nanoseconds (CLOCK_MONOTONIC), or 0 when one failed.
uint64_t anchor_ffi_dlopen_all(const char *const *paths, size_t count);

// MARK: posting (anchor_post_*)

/// The observer shape the posting anchors call: the same as lc_observer_fn (first argument: the record).
typedef void (*anchor_post_fn)(const void *record, void *ctx);

/// Minimal observer work: `++*(uint64_t *)ctx`. Used by our C-path observers and the plain C loop alike.
void anchor_post_count(const void *record, void *ctx);

/// The plain C anchor: `iterations` times, builds a record like a post does and calls the `n`
/// function pointers in order. Returns a value depending on the work, so nothing is optimised away.
uint64_t anchor_post_c_loop(const anchor_post_fn *fns, void *const *ctxs, size_t n, size_t iterations);

/// Bytes of heap in use (glibc mallinfo2(): uordblks, plus hblkhd for blocks malloc mmapped), for
/// memory-per-observer figures.
size_t anchor_post_heap_in_use(void);

/// A marker for callgrind: `--dump-before=anchor_post_callgrind_mark` splits the profile at each call.
void anchor_post_callgrind_mark(int phase);

// ---- anchor_ring_*: the cross-thread group (a C SPSC ring + eventfd, CPU pinning helpers) ----

/// The `index`-th CPU (0-based) in the calling thread's affinity mask, or -1 when there are fewer.
int anchor_ring_allowed_cpu(int index);
/// Pins the calling thread to `cpu`; 0 or -1 (errno).
int anchor_ring_pin_self(int cpu);
/// Pins the calling thread to `cpu` unless this thread already pinned itself there with this call.
void anchor_ring_pin_self_once(int cpu);
/// The calling thread's affinity mask (opaque; give it to `anchor_ring_affinity_restore`, which frees it).
void *anchor_ring_affinity_save(void);
void anchor_ring_affinity_restore(void *saved);
/// Sets the calling thread's timer slack (`PR_SET_TIMERSLACK`), so short sleeps are not stretched by 50 µs.
void anchor_ring_timer_slack(unsigned long ns);
/// `CLOCK_MONOTONIC` in nanoseconds.
uint64_t anchor_ring_now_ns(void);
/// `CFRunLoopWakeUp(CFRunLoopGetMain())`, looked up in the loaded Foundation (swift-corelibs-foundation
/// exports CoreFoundation's symbols but Swift cannot import them on Linux); 0, or -1 when not found.
/// `RunLoop.perform` (CFRunLoopPerformBlock) only enqueues: a sleeping run loop must be woken.
int anchor_ring_cf_wake_main_run_loop(void);

/// One-way latency through a single-producer single-consumer ring plus an eventfd: a producer thread
/// pinned to `producer_cpu` stamps the monotonic clock, pushes the stamp and writes the eventfd only
/// when it made the ring non-empty; a consumer thread pinned to `consumer_cpu` blocks in `epoll_wait`
/// only when the ring is empty and reads the clock on receipt. Ping-pong: one item at a time, the
/// producer pausing `pause_ns` after each so that every sample includes the consumer's wake-up.
/// Writes `samples` latencies (ns) to `out_ns`; returns 0, or -1 when a thread or fd cannot be made.
int anchor_ring_latency(int producer_cpu, int consumer_cpu, int samples, long pause_ns, double *out_ns);

/// Throughput through the same ring: `producers` threads (a mutex serialises them when > 1) push
/// `count` items in all as fast as they can while the consumer pops; returns the elapsed nanoseconds
/// from the start signal to the last item received, or -1.
int64_t anchor_ring_throughput(int producers, int count);
/// Round trips between this process and a child over a Unix stream socket pair: one byte there, one
/// back, `samples` times (the floor of a call into another process: two context switches on one CPU).
/// The child is forked and pinned to `child_cpu` (-1: left as is); the caller pins itself. Writes each
/// round trip (ns) to `out_ns`; returns 0, or -1 when the socket pair or the child cannot be made.
int anchor_process_round_trips(int child_cpu, int samples, double *out_ns);
/// One-way throughput to a child process over a Unix stream socket pair: `records` records of
/// `record_size` bytes written in `batch`-byte writes, read by the child in 256 KiB reads; returns the
/// nanoseconds from the first write to the child's report that it has read them all, or -1.
int64_t anchor_process_stream(int child_cpu, int records, int record_size, int batch);
/// The heap in use now: mallinfo2().uordblks, in bytes.
size_t anchor_ffi_heap_in_use(void);

// ---- anchor_rings_*: the cross-thread group, several producers without a shared lock ----
// (appended by the cross-thread group)

/// Throughput through one SPSC ring per producer (4096 items each) and one eventfd: `producers`
/// (1...64) new threads push `count / producers` items each into their own ring; the calling thread,
/// as a main loop, drains every ring in turn and sleeps in epoll_wait on the eventfd only when all are
/// empty (a producer writes the eventfd only when the consumer announced its sleep). Returns the
/// nanoseconds from releasing the producers to the last item handled, or -1 (a thread or fd could not
/// be made, or the items did not all arrive within 60 s).
int64_t anchor_rings_throughput(int producers, int count);
/// Bytes of heap in use now (glibc mallinfo2(), all arenas): uordblks + hblkhd.
size_t anchor_rings_heap_in_use(void);
/// Bytes free inside malloc's arenas (mallinfo2().fordblks): kept by the process, not in use.
size_t anchor_rings_arena_free(void);
/// The resident set size now (/proc/self/statm), in bytes; 0 when it cannot be read.
size_t anchor_rings_rss_bytes(void);
/// `malloc_trim(0)`: hands the free memory of every arena back to the system; 1 when some was released.
int anchor_rings_trim(void);

// ---- anchor_deleg_*, anchor_process_round_trips_type: the delegates and isolation groups ----------
// (appended for DelegateBenchmarks.swift and IsolationBenchmarks.swift)

/// The C loop a host keeping an array of callbacks would write: `iterations` times, calls the `n`
/// functions `void fn(void *app)` in order through plain function pointers. Returns n × iterations.
uint64_t anchor_deleg_c_loop(void *const *fns, size_t n, void *app, size_t iterations);
/// The same with one raw `ffi_call` per function, through one cif (`void (void *)`) prepared once.
/// Returns n × iterations (0 when the cif cannot be prepared).
uint64_t anchor_deleg_ffi_loop(void *const *fns, size_t n, void *app, size_t iterations);
/// `anchor_process_round_trips` over a Unix socket pair of `socket_type` (SOCK_STREAM or
/// SOCK_SEQPACKET): one byte there and back to a forked child pinned to `child_cpu` (-1: left as is),
/// `samples` times; each round trip (ns) to `out_ns`. Returns 0, or -1 when the pair or child cannot be
/// made or a round trip failed.
int anchor_process_round_trips_type(int child_cpu, int samples, double *out_ns, int socket_type);
// ---- end of anchor_deleg_* ----
