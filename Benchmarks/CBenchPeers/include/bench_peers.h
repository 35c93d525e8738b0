#pragma once
// The peer libraries the benchmark measures our notification center and main loop against: what a
// C developer would pick instead of us. Plain C; the implementations link GLib/GObject, libsigc++ 3
// (C++17), Qt 5's QtCore, libuv and libsystemd (sd-event), but nothing of theirs shows through this
// header.
//
// Every timing is CLOCK_MONOTONIC, in nanoseconds, and covers only the measured loop: set-up (type
// registration, connecting handlers, creating loops, fds and threads) and tear-down are outside it.
// Every function cleans up fully before it returns (no thread, fd, loop or handler is left behind),
// so each can be called any number of times in one process. Two once-per-process exceptions belong
// to the libraries: GLib keeps its registered GType, and libuv's first uv_loop_init opens a pipe pair
// (its signal lock) that it keeps for the life of the process. None is reentrant with itself across
// threads in a way that matters: each call builds its own objects (GLib's type is registered once
// per process, thread-safely).
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: synchronous emit (peer_*_emit): the shape of our "post to N observers" case

/// GLib/GObject signals. Calling thread only. Set-up (untimed): a minimal GObject subclass with one
/// signal "ping" (G_SIGNAL_RUN_LAST, no class handler, no arguments, no return value) is registered
/// on first use; one instance is made and `observers` handlers are connected to it with
/// `g_signal_connect`, each doing `++*(uint64_t *)user_data` on its own counter. Timed: `iterations`
/// calls of `g_signal_emit(instance, signal_id, 0)` with the signal id looked up once beforehand (the
/// fast form). Writes the elapsed nanoseconds of that loop alone to `*elapsed_ns` (when not NULL);
/// ns per emit = *elapsed_ns / iterations. Returns the sum of all counters (observers * iterations),
/// or 0 with `*elapsed_ns` = 0 when memory could not be had.
uint64_t peer_glib_emit(size_t observers, size_t iterations, uint64_t *elapsed_ns);

/// libsigc++ 3: a `sigc::signal<void()>` with `observers` slots connected (lambdas each capturing a
/// pointer to its own counter and doing `++*counter`). Calling thread only. Timed: `iterations` calls
/// of `signal.emit()`; `*elapsed_ns` (when not NULL) gets the elapsed nanoseconds of that loop alone.
/// Returns the sum of all counters (observers * iterations), or 0 with `*elapsed_ns` = 0 when a C++
/// exception (std::bad_alloc) was thrown; no exception crosses this function.
uint64_t peer_sigcpp_emit(size_t observers, size_t iterations, uint64_t *elapsed_ns);

// MARK: removing observers one by one (peer_*_disconnect): the shape of our "remove N observers" case

/// Qt 5 (QtCore): one `QObject`, `observers` functor connections to its own `objectNameChanged`
/// signal (lambdas each capturing a pointer to its own counter; no moc), their
/// `QMetaObject::Connection`s kept in a vector. Calling thread only; no QCoreApplication is needed for
/// direct connections. Timed: `observers` calls of `QObject::disconnect(connection)`, taking the
/// connections in the order `order[0 ..< observers]` (a permutation of 0 ..< observers; NULL:
/// registration order). Untimed after it: one emit, which must reach no slot. Returns how many
/// disconnects succeeded (observers), or 0 with `*elapsed_ns` = 0 when a slot was still reached or a
/// C++ exception (std::bad_alloc) was thrown; no exception crosses this function.
uint64_t peer_qt_disconnect(size_t observers, const uint32_t *order, uint64_t *elapsed_ns);

// MARK: cross-thread throughput to a main loop (peer_*_throughput)
//
// The loop runs on the calling thread; `producers` (1...64) new threads push `count` items in all
// (shares differ by at most one) into one unbounded queue (a growable array behind a pthread mutex).
// The loop's callback swaps the whole array out under the mutex and handles each item (adds it to a
// counter) outside it. Timed: from releasing the producers (they spin on a start flag, already made)
// to the loop having handled all `count` items. Writes that in nanoseconds to `*elapsed_ns`; items
// per second = count / (*elapsed_ns / 1e9). Returns 0, or -1 (with `*elapsed_ns` = 0) when a thread,
// fd or loop could not be made or `producers` is out of range. There is no back-pressure: a slow
// loop lets the queue grow (to `count` * 8 bytes at most), and it is handled in large batches.

/// libuv: a private `uv_loop_t` (uv_loop_init, not the default loop) and one `uv_async_t`; each
/// producer calls `uv_async_send` after every push (libuv coalesces the sends: its documented usage).
int peer_uv_throughput(int producers, uint64_t count, uint64_t *elapsed_ns);

/// sd-event: a private `sd_event` (sd_event_new), an eventfd registered with `sd_event_add_io`
/// (EPOLLIN); a producer writes the eventfd only when its push made the queue non-empty (the standard
/// pattern); the io callback reads the eventfd, then drains the queue.
int peer_sdevent_throughput(int producers, uint64_t count, uint64_t *elapsed_ns);

// MARK: one-way wake-up latency to a main loop (peer_*_latency)
//
// The loop runs on the calling thread, pinned to `consumer_cpu` for the call (its affinity mask is
// restored before returning); one producer thread, pinned to `producer_cpu`, with a 1 µs timer slack
// so its short sleeps are not stretched (as in anchor_ring_latency). -1 for either CPU: no pinning.
// Ping-pong: the producer stamps CLOCK_MONOTONIC, pushes the stamp (same mutex-protected queue as the
// throughput case) and signals the loop; the loop's callback reads the clock per item and records
// now - stamp; the producer waits (spinning with sched_yield) until that item has been handled, then
// sleeps `pause_ns`, so the loop is asleep in epoll_wait again and every sample includes its wake-up.
// Writes `samples` latencies in nanoseconds to `out_ns[0 ..< samples]`. Returns 0, or -1 when a
// thread, fd or loop could not be made (or samples < 1, or out_ns is NULL).

/// libuv: a private `uv_loop_t`, one `uv_async_t`, the producer signals with `uv_async_send`.
int peer_uv_latency(int producer_cpu, int consumer_cpu, int samples, long pause_ns, double *out_ns);

/// sd-event: a private `sd_event`, an eventfd io source; the producer writes the eventfd when its
/// push made the queue non-empty (always, here: one item at a time).
int peer_sdevent_latency(int producer_cpu, int consumer_cpu, int samples, long pause_ns, double *out_ns);

#ifdef __cplusplus
}
#endif
