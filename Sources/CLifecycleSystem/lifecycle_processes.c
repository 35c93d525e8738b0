// Process trees: an isolated plugin's runner, and whatever its plugin forks. Everything here that a
// signal handler calls is async-signal-safe: raw system calls, fixed buffers on the stack, no stdio,
// no allocation.
#define _GNU_SOURCE
#include "lifecycle_processes.h"
#include "lcs_retry.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

int lcs_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0u); }

int lcs_child_has_exited(pid_t pid) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0) return -1;
    return info.si_pid == pid ? 1 : 0;
}

int lcs_become_subreaper(void) { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

// MARK: Walking /proc without the C library's formatted IO

/// Writes "/proc/<pid>/<rest>" into `path` (at least 64 bytes).
static void proc_path(char *path, pid_t pid, const char *middle, pid_t tid, const char *rest) {
    char digits[16];
    size_t length = 0;
    const char *prefix = "/proc/";
    while (*prefix) path[length++] = *prefix++;
    for (int pass = 0; pass < 2; pass++) {
        pid_t value = pass == 0 ? pid : tid;
        if (pass == 1) {
            if (!middle) break;
            while (*middle) path[length++] = *middle++;
        }
        int count = 0;
        do {
            digits[count++] = (char)('0' + value % 10);
            value /= 10;
        } while (value > 0 && count < 15);
        while (count > 0) path[length++] = digits[--count];
    }
    while (*rest) path[length++] = *rest++;
    path[length] = 0;
}

/// Reads a small /proc file into `buffer` (NUL-terminated); its length, or -1.
static ssize_t read_small(const char *path, char *buffer, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t length = 0;
    while (length < size - 1) {
        ssize_t n = LCS_RETRY(read(fd, buffer + length, size - 1 - length));
        if (n <= 0) break;
        length += (size_t)n;
    }
    close(fd);
    buffer[length] = 0;
    return (ssize_t)length;
}

/// Whether `pid` is alive: it exists and is not a zombie (the state after the command's last ')').
static int is_live(pid_t pid) {
    char path[64], stat[512];
    proc_path(path, pid, NULL, 0, "/stat");
    if (read_small(path, stat, sizeof stat) <= 0) return 0;
    const char *close_paren = NULL;
    for (const char *c = stat; *c; c++) if (*c == ')') close_paren = c;
    if (!close_paren || close_paren[1] != ' ') return 0;
    char state = close_paren[2];
    return state != 'Z' && state != 'X' && state != 'x';
}

enum { MAX_TREE = 4096 };

/// Appends the children of every thread of `pid` to `found` (up to MAX_TREE in all).
static void add_children(pid_t pid, pid_t *found, int *count) {
    char path[64];
    proc_path(path, pid, NULL, 0, "/task");
    int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;
    char entries[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, dir, entries, sizeof entries);
        if (n <= 0) break;
        for (long offset = 0; offset < n;) {
            struct dirent64 *entry = (struct dirent64 *)(entries + offset);
            offset += entry->d_reclen;
            pid_t tid = 0;
            const char *c = entry->d_name;
            if (*c < '0' || *c > '9') continue;
            for (; *c >= '0' && *c <= '9'; c++) tid = tid * 10 + (*c - '0');
            char children_path[96], list[4096];
            proc_path(children_path, pid, "/task/", tid, "/children");
            if (read_small(children_path, list, sizeof list) <= 0) continue;
            pid_t child = 0;
            int digits = 0;
            for (const char *p = list;; p++) {
                if (*p >= '0' && *p <= '9') {
                    child = child * 10 + (*p - '0');
                    digits++;
                    continue;
                }
                if (digits > 0 && *count < MAX_TREE) found[(*count)++] = child;
                child = 0;
                digits = 0;
                if (*p == 0) break;
            }
        }
    }
    close(dir);
}

int lcs_kill_descendants(pid_t root, int passes) {
    pid_t tree[MAX_TREE];
    int sent = 0;
    for (int pass = 0; pass < passes; pass++) {
        int count = 0;
        add_children(root, tree, &count);
        int live = 0;
        // Breadth first: each one's children are appended behind it, and it is killed once listed.
        for (int index = 0; index < count; index++) {
            pid_t pid = tree[index];
            if (!is_live(pid)) continue;
            live++;
            if (kill(pid, SIGKILL) == 0) sent++;
            add_children(pid, tree, &count);
        }
        if (live == 0) break;
        struct timespec pause = { 0, 1000000 };
        nanosleep(&pause, NULL);
    }
    return sent;
}

// MARK: The runner's own end

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS };

static void kill_descendants_and_die(int signo) {
    int saved = errno;
    lcs_kill_descendants(getpid(), 64);
    // SA_RESETHAND restored the default action: a fault returns to the instruction and faults again,
    // a raised signal is raised again; either way the process dies of `signo`.
    errno = saved;
    raise(signo);
}

static void kill_descendants_at_exit(void) { lcs_kill_descendants(getpid(), 64); }

int lcs_kill_descendants_at_end(void) {
    static char alternate[64 * 1024];
    stack_t stack = { .ss_sp = alternate, .ss_size = sizeof alternate, .ss_flags = 0 };
    sigaltstack(&stack, NULL);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = kill_descendants_and_die;
    action.sa_flags = SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        if (sigaction(fatal_signals[i], &action, NULL) != 0) return -1;
    }
    return atexit(kill_descendants_at_exit) == 0 ? 0 : -1;
}
