#pragma once

// Thin wrappers over Linux syscalls that Swift's Glibc module does not export.
// Each returns what the syscall returns (-1 and errno on failure); callers retry on EINTR (Swift:
// `systemCall`), except lcs_eventfd_signal, lcs_eventfd_drain, lcs_timerfd_read and lcs_signalfd_read,
// which retry it themselves.

#include <stdint.h>

#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A spin-wait hint to the CPU (x86 `pause`, arm64 `yield`): lets the sibling hyper-thread run and
/// eases the memory-order pipeline flush when the awaited value changes.
static inline void lcs_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/// Asks for the cache line at `address` in a writable state ahead of a store to it (x86 `prefetchw`
/// where the CPU has it, arm64 `prfm pstl1keep`). Never faults, whatever the address.
static inline void lcs_prefetch_for_write(const void *address) {
    __builtin_prefetch(address, 1, 3);
}

/// The calling thread's identity, read in one instruction: its thread pointer (the x86-64 `%fs` base,
/// which glibc makes the thread's `pthread_t`; AArch64 `TPIDR_EL0`). Unique among live threads.
/// `pthread_self()` gives the same on x86-64 but is a call through the PLT: the loop-bound checks
/// (`MainRunLoop.preconditionOnLoopThread`) run at every public member of the engine.
static inline uintptr_t lcs_thread_id(void) {
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 11)
    return (uintptr_t)__builtin_thread_pointer();
#else
    return (uintptr_t)pthread_self();
#endif
}

/// A thread's count of the messages it has queued on one run loop's queue since that queue's last
/// take (the per-thread bound of the cross-thread queue): which queue, which take, how many.
typedef struct lcs_producer_tally {
    const void *queue;
    uint64_t epoch;
    int64_t count;
} lcs_producer_tally;

/// The calling thread's tally (thread-local storage: a few instructions, no call, no lock).
///
/// Initial-exec: the tally is found at a fixed offset from the thread pointer, one load, instead of a
/// call to `__tls_get_addr` on every post (the general model a shared library gets by default). It
/// takes 24 bytes of the static TLS block, which glibc reserves room for even when the library is
/// loaded with `dlopen`.
static inline lcs_producer_tally *lcs_producer_tally_self(void) {
    static _Thread_local lcs_producer_tally tally __attribute__((tls_model("initial-exec")));
    return &tally;
}

int lcs_epoll_create(void);
int lcs_epoll_add(int epfd, int fd, uint32_t events, uint64_t data);
int lcs_epoll_mod(int epfd, int fd, uint32_t events, uint64_t data);
int lcs_epoll_del(int epfd, int fd);
/// Waits for up to `max` events; writes fd-data pairs to `datas` and event masks to `masks`.
int lcs_epoll_wait(int epfd, uint64_t *datas, uint32_t *masks, int max, int timeout_ms);

/// Fills `size` bytes (at most 256) from the kernel's random generator (getrandom(2), retried on
/// EINTR); returns 0, or -1 with errno when it could not fill them all.
int lcs_random_bytes(void *buffer, size_t size);

int lcs_eventfd(void);
int lcs_eventfd_signal(int fd);
/// Drains the counter; returns 0 or -1 (EAGAIN when nothing was pending).
int lcs_eventfd_drain(int fd);

int lcs_timerfd_create(int clockid);
/// Arms a timer at an absolute time on its clock (nanoseconds); 0 disarms.
int lcs_timerfd_set_abs(int fd, uint64_t deadline_ns, int cancel_on_set);
/// Reads the expiration count; returns >0, 0 (EAGAIN), or -1 with errno (ECANCELED on a clock step).
int64_t lcs_timerfd_read(int fd);

/// Blocks `signo` in the calling thread (so signalfd can take it) and returns 0 or -1.
int lcs_block_signal(int signo);
int lcs_unblock_signal(int signo);
/// Creates (fd < 0) or updates a signalfd for the given set of signals.
int lcs_signalfd(int fd, const int *signals, int count);
/// Reads one siginfo; returns the signal number, 0 when none is pending, or -1.
int lcs_signalfd_read(int fd, int32_t *sender_pid);

/// Starts a thread that has every signal blocked from its first instruction (the caller's mask is
/// set to all around pthread_create, then restored), so that a process's signals stay pending for a
/// signalfd instead of landing on a helper thread. Returns pthread_create's result (0 or an errno).
int lcs_thread_create_signals_blocked(pthread_t *thread, void *(*start)(void *), void *arg);

/// The text of an errno value; static storage, thread-safe.
const char *lcs_strerror(int code);

/// The load base (link map `l_addr`) of a `dlopen` handle: returns 0, or -1 (dlerror says why).
int lcs_dl_load_base(void *handle, uintptr_t *base);

uint64_t lcs_monotonic_ns(void);
/// CLOCK_MONOTONIC_COARSE: the monotonic clock at the last tick (at most one tick behind it), cheaper
/// to read.
uint64_t lcs_monotonic_coarse_ns(void);
uint64_t lcs_realtime_ns(void);

// ---- Isolated plugins (Sources/PluginHost/Isolation) ----

/// An anonymous file in memory (memfd_create), close-on-exec; -1 and errno on failure.
int lcs_memfd_create(const char *name);
/// Asks for SIGKILL when the parent (the thread that started this process) goes
/// (prctl PR_SET_PDEATHSIG); 0 or -1.
int lcs_die_with_parent(void);
/// The signal's abbreviation without "SIG" ("SEGV"), or NULL for a number that names none. Static storage.
const char *lcs_signal_abbreviation(int signo);
/// The path of the binary this code is linked into, or NULL: a shared object's as the loader opened it
/// (dladdr1), the main executable's real path (/proc/self/exe; the loader names it by argv[0]). Static
/// storage. [thread-safe]
const char *lcs_own_object_path(void);
/// The size of the section `.lifecycle_runner` (the Makefile's RUNNER_SLOT_SIZE must match).
#define LCS_RUNNER_SLOT_SIZE 4096
/// The plugin runner's path that `make install` wrote into the `.lifecycle_runner` section of the binary
/// this code is linked into (the installed liblifecycle.so or lifecycle-host),
/// or NULL (a build folder's copy, or a damaged slot). Static storage.
const char *lcs_installed_runner(void);
/// The calling thread's return addresses, innermost first, at most `size` (glibc's backtrace);
/// how many were written. Not async-signal-safe (its first call loads the unwinder).
int lcs_backtrace(void **frames, int size);
/// The crash guard (crash_guard.c): on SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP or SIGSYS in
/// this process it writes one last trace line to `fd` — kind "crash", the signal, the last traced
/// state, the plugin whose code faulted (the faulting instruction, else the first plugin frame on the
/// stack), as JSON (`json`) or text, `t` counted from `origin_ns` (CLOCK_MONOTONIC) — removes the
/// socket file, then restores the previous action and lets the signal go on (the Swift runtime's
/// backtracer, or the default: the process dies of the signal). Async-signal-safe. Installing again
/// only changes the trace's fd, format and origin. 0, or -1 when sigaction fails.
int lcs_crash_guard_install(int fd, int json, uint64_t origin_ns);
/// The trace's last line so far: its seq, and its state (0 not-running … 4 suspended). [thread-safe]
void lcs_crash_guard_note_line(uint64_t seq, int state);
/// The control socket's file to remove (copied; NULL: none). [thread-safe]
void lcs_crash_guard_set_socket(const char *path);
/// A plugin's code range (`id` copied), at most 16,384 in all; -1 when full. [one thread at a time]
int lcs_crash_guard_add_code(const char *id, uintptr_t start, uintptr_t end);
/// Closes every descriptor from `lowest` up (close_range, else one by one).
void lcs_close_from(int lowest);
/// 64-bit atomic load (acquire) and store (release) on shared memory another process writes.
static inline uint64_t lcs_load_acquire_u64(const uint64_t *address) { return __atomic_load_n(address, __ATOMIC_ACQUIRE); }
static inline void lcs_store_release_u64(uint64_t *address, uint64_t value) { __atomic_store_n(address, value, __ATOMIC_RELEASE); }

#ifdef __cplusplus
}
#endif
