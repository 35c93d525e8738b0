// The host's last words when its own process crashes (a plugin in its process, or the host itself):
// a fatal signal writes the trace's last line, removes the control socket's file, then goes on as it
// would have without us (the previous action: the Swift runtime's backtracer, or the default). Every
// step is async-signal-safe: the line is made from plain memory with hand-written number formatting,
// and written with write(2); the socket's path is kept as a C string; the plugins' code ranges are a
// fixed array published by a count.
#define _GNU_SOURCE
#include "lifecycle_system.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <execinfo.h>

enum { GUARD_SIGNALS = 7, GUARD_RANGES = 16384, GUARD_STACK = 64 * 1024 };

static const int guarded[GUARD_SIGNALS] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS };
static struct sigaction previous[GUARD_SIGNALS];

static atomic_int trace_fd = -1;
static atomic_int trace_json;
static _Atomic uint64_t trace_origin_ns;
static _Atomic uint64_t trace_seq;
static atomic_int trace_state;
static _Atomic(const char *) socket_path;
static atomic_flag handling = ATOMIC_FLAG_INIT;

struct code_range { uintptr_t start, end; const char *id; };
static struct code_range *ranges;
static atomic_size_t range_count;

static const char *const state_names[] = { "not-running", "inactive", "active", "background", "suspended" };

// MARK: Formatting without the C library's formatted output

struct line { char bytes[1024]; size_t length; };

static void put(struct line *line, const char *text) {
    while (*text && line->length < sizeof line->bytes - 1) line->bytes[line->length++] = *text++;
}

static void put_unsigned(struct line *line, uint64_t value, int min_digits) {
    char digits[24];
    int count = 0;
    do { digits[count++] = (char)('0' + value % 10); value /= 10; } while (value && count < 24);
    while (count < min_digits && count < 24) digits[count++] = '0';
    while (count > 0 && line->length < sizeof line->bytes - 1) line->bytes[line->length++] = digits[--count];
}

static void pad_to(struct line *line, size_t column) {
    if (line->length >= column) { put(line, " "); return; }
    while (line->length < column && line->length < sizeof line->bytes - 1) line->bytes[line->length++] = ' ';
}

// MARK: Who crashed

static uintptr_t fault_pc(void *context) {
    ucontext_t *uc = context;
    if (!uc) return 0;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    return 0;
#endif
}

static const char *owner_of(uintptr_t address) {
    size_t count = atomic_load_explicit(&range_count, memory_order_acquire);
    for (size_t i = 0; i < count; i++)
        if (address >= ranges[i].start && address < ranges[i].end) return ranges[i].id;
    return NULL;
}

/// The plugin whose code faulted (the faulting instruction), else the first one on the stack.
static const char *crashed_plugin(void *context) {
    const char *owner = owner_of(fault_pc(context));
    if (owner) return owner;
    void *frames[64];
    int count = backtrace(frames, 64);  // warmed at install: the unwinder is loaded already
    for (int i = 0; i < count && !owner; i++) owner = owner_of((uintptr_t)frames[i]);
    return owner;
}

// MARK: The handler

static void write_all(int fd, const char *bytes, size_t length) {
    while (length > 0) {
        ssize_t n = write(fd, bytes, length);
        if (n < 0) return;  // EINTR cannot happen here: every signal is blocked in the handler
        bytes += n;
        length -= (size_t)n;
    }
}

static void crashed(int signo, siginfo_t *info, void *context) {
    if (!atomic_flag_test_and_set(&handling)) {
        int fd = atomic_load(&trace_fd);
        if (fd >= 0) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            uint64_t ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec - atomic_load(&trace_origin_ns);
            uint64_t seq = atomic_fetch_add(&trace_seq, 1) + 1;
            int state = atomic_load(&trace_state);
            const char *state_name = state >= 0 && state < 5 ? state_names[state] : "not-running";
            const char *name = sigabbrev_np(signo);
            const char *plugin = crashed_plugin(context);
            struct line line = { .length = 0 };
            if (atomic_load(&trace_json)) {
                put(&line, "{\"t\":");
                put_unsigned(&line, ns / 1000000000u, 1);
                put(&line, ".");
                put_unsigned(&line, ns / 1000u % 1000000u, 6);
                put(&line, ",\"seq\":");
                put_unsigned(&line, seq, 1);
                put(&line, ",\"kind\":\"crash\",\"name\":\"SIG");
                put(&line, name ? name : "?");
                put(&line, "\",\"state\":\"");
                put(&line, state_name);
                put(&line, "\"");
                if (plugin) { put(&line, ",\"plugin\":\""); put(&line, plugin); put(&line, "\""); }
                put(&line, ",\"detail\":\"");
            } else {
                put_unsigned(&line, ns / 1000000000u, 1);
                put(&line, ".");
                put_unsigned(&line, ns / 1000000u % 1000u, 3);
                pad_to(&line, 9);
                put(&line, state_name);
                pad_to(&line, 21);
                put(&line, "crash");
                pad_to(&line, 37);
                put(&line, "SIG");
                put(&line, name ? name : "?");
                pad_to(&line, 89);
                if (plugin) { put(&line, plugin); put(&line, "  "); }
            }
            put(&line, "the host's process was killed by SIG");
            put(&line, name ? name : "?");
            if (plugin) { put(&line, " in the code of '"); put(&line, plugin); put(&line, "'"); }
            else put(&line, " (no plugin's code at the fault)");
            put(&line, atomic_load(&trace_json) ? "\"}\n" : "\n");
            write_all(fd, line.bytes, line.length);
        }
        const char *path = atomic_load(&socket_path);
        if (path) unlink(path);
    }
    // Go on as without us: the previous action for this signal, then the signal again. A fault the
    // kernel raised (si_code > 0) happens again when the instruction is retried; a sent one (abort,
    // kill) is raised again, delivered when this handler returns.
    for (int i = 0; i < GUARD_SIGNALS; i++)
        if (guarded[i] == signo) sigaction(signo, &previous[i], NULL);
    if (!info || info->si_code <= 0) raise(signo);
}

// MARK: Set-up

int lcs_crash_guard_install(int fd, int json, uint64_t origin_ns) {
    atomic_store(&trace_fd, fd);
    atomic_store(&trace_json, json != 0);
    atomic_store(&trace_origin_ns, origin_ns);
    static atomic_int installed;
    if (atomic_exchange(&installed, 1)) return 0;
    ranges = mmap(NULL, sizeof(struct code_range) * GUARD_RANGES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                  -1, 0);
    if (ranges == MAP_FAILED) ranges = NULL;
    void *frames[4];
    (void)backtrace(frames, 4);  // loads the unwinder now, not in the handler
    // An alternate stack for the main thread, so that a stack overflow there still gets its line.
    stack_t stack = { .ss_sp = mmap(NULL, GUARD_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                      .ss_size = GUARD_STACK, .ss_flags = 0 };
    if (stack.ss_sp != MAP_FAILED) sigaltstack(&stack, NULL);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = crashed;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigfillset(&action.sa_mask);
    for (int i = 0; i < GUARD_SIGNALS; i++)
        if (sigaction(guarded[i], &action, &previous[i]) != 0) return -1;
    return 0;
}

void lcs_crash_guard_note_line(uint64_t seq, int state) {
    atomic_store_explicit(&trace_seq, seq, memory_order_relaxed);
    atomic_store_explicit(&trace_state, state, memory_order_relaxed);
}

void lcs_crash_guard_set_socket(const char *path) {
    const char *copy = path ? strdup(path) : NULL;
    (void)atomic_exchange(&socket_path, copy);  // the old copy is kept: a handler may be reading it
}

int lcs_crash_guard_add_code(const char *id, uintptr_t start, uintptr_t end) {
    if (!ranges || !id) return -1;
    size_t index = atomic_load_explicit(&range_count, memory_order_relaxed);
    if (index >= GUARD_RANGES) return -1;
    ranges[index] = (struct code_range){ start, end, strdup(id) };
    atomic_store_explicit(&range_count, index + 1, memory_order_release);
    return 0;
}
