#define _GNU_SOURCE
#include "lifecycle_system.h"
#include "lcs_retry.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

int lcs_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

static int epoll_ctl_data(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}

int lcs_epoll_add(int epfd, int fd, uint32_t events, uint64_t data) {
    return epoll_ctl_data(epfd, EPOLL_CTL_ADD, fd, events, data);
}

int lcs_epoll_mod(int epfd, int fd, uint32_t events, uint64_t data) {
    return epoll_ctl_data(epfd, EPOLL_CTL_MOD, fd, events, data);
}

int lcs_epoll_del(int epfd, int fd) { return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL); }

int lcs_epoll_wait(int epfd, uint64_t *datas, uint32_t *masks, int max, int timeout_ms) {
    struct epoll_event evs[64];
    if (max > 64) max = 64;
    int n = epoll_wait(epfd, evs, max, timeout_ms);
    for (int i = 0; i < n; i++) {
        datas[i] = evs[i].data.u64;
        masks[i] = evs[i].events;
    }
    return n;
}

int lcs_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

int lcs_random_bytes(void *buffer, size_t size) {
    if (size > 256) { errno = EINVAL; return -1; }
    ssize_t r = LCS_RETRY(getrandom(buffer, size, 0));
    return r == (ssize_t)size ? 0 : -1;
}

int lcs_eventfd_signal(int fd) {
    uint64_t one = 1;
    ssize_t r = LCS_RETRY(write(fd, &one, sizeof one));
    return r == sizeof one || (r < 0 && errno == EAGAIN) ? 0 : -1;
}

int lcs_eventfd_drain(int fd) {
    uint64_t value;
    ssize_t r = LCS_RETRY(read(fd, &value, sizeof value));
    return r == sizeof value ? 0 : -1;
}

int lcs_timerfd_create(int clockid) { return timerfd_create(clockid, TFD_CLOEXEC | TFD_NONBLOCK); }

int lcs_timerfd_set_abs(int fd, uint64_t deadline_ns, int cancel_on_set) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    spec.it_value.tv_sec = (time_t)(deadline_ns / 1000000000ull);
    spec.it_value.tv_nsec = (long)(deadline_ns % 1000000000ull);
    int flags = TFD_TIMER_ABSTIME;
    if (cancel_on_set) flags |= TFD_TIMER_CANCEL_ON_SET;
    return timerfd_settime(fd, flags, &spec, NULL);
}

int64_t lcs_timerfd_read(int fd) {
    uint64_t count;
    ssize_t r = LCS_RETRY(read(fd, &count, sizeof count));
    if (r == sizeof count) return (int64_t)count;
    if (r < 0 && errno == EAGAIN) return 0;
    return -1;
}

static int change_mask(int how, int signo) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    return pthread_sigmask(how, &set, NULL) == 0 ? 0 : -1;
}

int lcs_block_signal(int signo) { return change_mask(SIG_BLOCK, signo); }
int lcs_unblock_signal(int signo) { return change_mask(SIG_UNBLOCK, signo); }

int lcs_signalfd(int fd, const int *signals, int count) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < count; i++) sigaddset(&set, signals[i]);
    return signalfd(fd, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int lcs_signalfd_read(int fd, int32_t *sender_pid) {
    struct signalfd_siginfo info;
    ssize_t r = LCS_RETRY(read(fd, &info, sizeof info));
    if (r == sizeof info) {
        if (sender_pid) *sender_pid = (int32_t)info.ssi_pid;
        return (int)info.ssi_signo;
    }
    if (r < 0 && errno == EAGAIN) return 0;
    return -1;
}

static uint64_t clock_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t lcs_monotonic_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
uint64_t lcs_monotonic_coarse_ns(void) { return clock_ns(CLOCK_MONOTONIC_COARSE); }
uint64_t lcs_realtime_ns(void) { return clock_ns(CLOCK_REALTIME); }

int lcs_thread_create_signals_blocked(pthread_t *thread, void *(*start)(void *), void *arg) {
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int result = pthread_create(thread, NULL, start, arg);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    return result;
}

const char *lcs_strerror(int code) {
    const char *text = strerrordesc_np(code);
    return text ? text : "unknown error";
}

int lcs_dl_load_base(void *handle, uintptr_t *base) {
    struct link_map *map = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == NULL) return -1;
    *base = (uintptr_t)map->l_addr;
    return 0;
}

// ---- Isolated plugins ----

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdlib.h>

int lcs_memfd_create(const char *name) { return (int)syscall(SYS_memfd_create, name, 1u /* MFD_CLOEXEC */); }

const char *lcs_signal_abbreviation(int signo) { return sigabbrev_np(signo); }

// The main executable's real path, read once (the loader names it by argv[0], which may be relative or a
// bare name found through PATH).
static char lcs_executable_path[PATH_MAX];
static pthread_once_t lcs_executable_path_once = PTHREAD_ONCE_INIT;

static void lcs_read_executable_path(void) {
    ssize_t count = readlink("/proc/self/exe", lcs_executable_path, sizeof lcs_executable_path - 1);
    lcs_executable_path[count > 0 ? count : 0] = 0;
}

const char *lcs_own_object_path(void) {
    Dl_info info;
    struct link_map *map = NULL;
    if (dladdr1((void *)&lcs_own_object_path, &info, (void **)&map, RTLD_DL_LINKMAP) == 0 || map == NULL) return NULL;
    if (map->l_name != NULL && map->l_name[0] != 0) return map->l_name;  // a shared object: the path it was loaded by
    pthread_once(&lcs_executable_path_once, lcs_read_executable_path);
    return lcs_executable_path[0] != 0 ? lcs_executable_path : NULL;
}

// The plugin runner `make install` records in the installed copies of liblifecycle.so and
// lifecycle-host (both link this file): it writes the path, NUL-padded to exactly LCS_RUNNER_SLOT_SIZE
// bytes, over this section's bytes in the file with `dd`, found with `readelf` (the Makefile's
// `install`). In a build folder the slot is empty. Non-const, so that no compiler folds the empty initial value into the reader.
__attribute__((section(".lifecycle_runner"), used, visibility("hidden"), aligned(1)))
char lcs_runner_slot[LCS_RUNNER_SLOT_SIZE] = "";

const char *lcs_installed_runner(void) {
    const volatile char *slot = lcs_runner_slot;
    if (slot[0] == 0 || slot[LCS_RUNNER_SLOT_SIZE - 1] != 0) return NULL;  // empty, or not NUL-terminated
    return (const char *)lcs_runner_slot;
}

int lcs_die_with_parent(void) { return prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); }

#include <execinfo.h>

int lcs_backtrace(void **frames, int size) { return size > 0 ? backtrace(frames, size) : 0; }

void lcs_close_from(int lowest) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowest, ~0u, 0u) == 0) return;
#endif
    DIR *dir = opendir("/proc/self/fd");
    if (!dir) return;
    int own = dirfd(dir);
    int found[1024];
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL && count < 1024) {
        int fd = atoi(entry->d_name);
        if (fd >= lowest && fd != own) found[count++] = fd;
    }
    closedir(dir);
    for (int i = 0; i < count; i++) close(found[i]);
}
