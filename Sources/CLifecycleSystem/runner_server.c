// The plugin runners' fork server: see include/runner_server.h. Between the clone and the return (or
// the exec), the new process makes raw system calls only, as a child of vfork would.
#define _GNU_SOURCE
#include "runner_server.h"
#include "lcs_retry.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

/// `struct clone_args` of <linux/sched.h> up to `cgroup` (CLONE_ARGS_SIZE_VER2, Linux 5.7), spelled
/// here because that header's CLONE_* macros clash with <sched.h>'s.
struct lcs_clone_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

/// A copy of this process (on the same stack, as fork), the child of this process's parent; born in
/// the cgroup `cgroup` (a folder's descriptor) when it is not -1. The child's 0, the pid, or -1 and errno.
static long clone_beside(int cgroup) {
    if (cgroup < 0) return syscall(SYS_clone, (unsigned long)(CLONE_PARENT | SIGCHLD), 0L, 0L, 0L, 0L);
    struct lcs_clone_args arguments;
    memset(&arguments, 0, sizeof arguments);
    // No exit_signal with CLONE_PARENT (clone3 refuses one): the child's is this process's, SIGCHLD.
    arguments.flags = (uint64_t)CLONE_PARENT | CLONE_INTO_CGROUP;
    arguments.cgroup = (uint64_t)cgroup;
    return syscall(SYS_clone3, &arguments, sizeof arguments);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LCS_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LCS_SANITIZED 1
#endif

int lcs_built_with_sanitizer(void) {
#ifdef LCS_SANITIZED
    return 1;
#else
    // This file built without one, the process may still run a sanitizer's runtime (its Swift code
    // built with one): its entry points are then among the process's symbols.
    return dlsym(RTLD_DEFAULT, "__tsan_init") != NULL || dlsym(RTLD_DEFAULT, "__asan_init") != NULL;
#endif
}

/// What a request carries besides the descriptors: the asking thread's CPU affinity, and which
/// descriptors follow the runner's three (`LCS_REQUEST_STDIN` … `LCS_REQUEST_CGROUP`). Hostile in the
/// server: checked (`request_descriptors`) before use.
struct lcs_runner_request {
    cpu_set_t affinity;
    uint32_t attached;
    uint32_t reserved;
};

enum {
    LCS_REQUEST_STDIN = 1u << 0,
    LCS_REQUEST_STDOUT = 1u << 1,
    LCS_REQUEST_STDERR = 1u << 2,
    LCS_REQUEST_CGROUP = 1u << 3,
    LCS_REQUEST_KNOWN = 0xFu,
};

/// How many descriptors a request with `attached` carries: the socket, the progress page and the
/// working folder, then the standard descriptors attached, then the cgroup; -1 for unknown bits.
static int request_descriptors(uint32_t attached) {
    if (attached & ~(uint32_t)LCS_REQUEST_KNOWN) return -1;
    int count = 3;
    for (uint32_t bit = LCS_REQUEST_STDIN; bit <= LCS_REQUEST_CGROUP; bit <<= 1)
        if (attached & bit) count++;
    return count;
}

/// The new process's set-up: descriptors 3 and 4 (the runner's socket and progress page), 0 to 2 the
/// asking process's (closed where it had none), its own process group, no mask, default actions.
/// `standard[n]` is the received copy of the asker's descriptor n, or -1.
static void prepare_child(int socket, int progress, const int standard[3]) {
    // Out of the way first: any may already be 0 to 4, and the server's own socket is 3.
    int high_socket = fcntl(socket, F_DUPFD, 10);
    int high_progress = fcntl(progress, F_DUPFD, 10);
    if (high_socket < 0 || high_progress < 0) _exit(127);
    int high_standard[3] = {-1, -1, -1};
    for (int n = 0; n < 3; n++) {
        if (standard[n] < 0) continue;
        high_standard[n] = fcntl(standard[n], F_DUPFD, 10);
        if (high_standard[n] < 0) _exit(127);
    }
    // The originals (close-on-exec copies, wherever they landed) go before their slots are filled.
    close(socket);
    close(progress);
    for (int n = 0; n < 3; n++) if (standard[n] >= 0) close(standard[n]);
    if (dup2(high_socket, 3) < 0 || dup2(high_progress, 4) < 0) _exit(127);
    for (int n = 0; n < 3; n++) {
        if (high_standard[n] < 0) {
            close(n);
        } else if (dup2(high_standard[n], n) < 0) {
            _exit(127);
        }
    }
    close(high_socket);
    close(high_progress);
    for (int n = 0; n < 3; n++) if (high_standard[n] >= 0) close(high_standard[n]);
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct sigaction standard_action;
    memset(&standard_action, 0, sizeof standard_action);
    standard_action.sa_handler = SIG_DFL;
    for (int signo = 1; signo < NSIG; signo++) {
        if (signo == SIGKILL || signo == SIGSTOP) continue;
        sigaction(signo, &standard_action, NULL);
    }
}

static void answer(int fd, int32_t value) {
    (void)LCS_RETRY(send(fd, &value, sizeof value, MSG_NOSIGNAL));
}

int lcs_runner_server(int fd, const char *exec_path, const char *exec_command) {
    enum { MOST = 8 };
    for (;;) {
        struct lcs_runner_request request;
        struct iovec part = {.iov_base = &request, .iov_len = sizeof request};
        union {
            struct cmsghdr header;
            char space[CMSG_SPACE(MOST * sizeof(int))];
        } control;
        memset(&control, 0, sizeof control);
        struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space};
        ssize_t length = LCS_RETRY(recvmsg(fd, &message, MSG_CMSG_CLOEXEC));
        if (length <= 0) return -1;
        int received[MOST];
        int count = 0;
        for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
            if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
            size_t bytes = header->cmsg_len - CMSG_LEN(0);
            for (size_t offset = 0; offset + sizeof(int) <= bytes && count < MOST; offset += sizeof(int))
                memcpy(&received[count++], CMSG_DATA(header) + offset, sizeof(int));
        }
        if (length != (ssize_t)sizeof request || request.reserved != 0 || request_descriptors(request.attached) != count
            || (message.msg_flags & (MSG_CTRUNC | MSG_TRUNC))) {
            for (int index = 0; index < count; index++) close(received[index]);
            answer(fd, -EINVAL);
            continue;
        }
        // socket, progress, folder, then the standard descriptors attached, then the cgroup.
        int standard[3] = {-1, -1, -1};
        int next = 3;
        for (int n = 0; n < 3; n++) if (request.attached & (LCS_REQUEST_STDIN << n)) standard[n] = received[next++];
        int cgroup = (request.attached & LCS_REQUEST_CGROUP) ? received[next] : -1;
        long pid = clone_beside(cgroup);
        if (pid == 0) {
            // What the asking thread had: its working folder, its CPUs (the runner's thread inherits them).
            if (fchdir(received[2]) != 0) _exit(127);
            close(received[2]);
            if (cgroup >= 0) close(cgroup);
            (void)sched_setaffinity(0, sizeof request.affinity, &request.affinity);
            prepare_child(received[0], received[1], standard);
            if (!exec_path) return 0;
            char *arguments[] = {(char *)exec_path, (char *)exec_command, "--fd", "3", "--progress-fd", "4", NULL};
            execve(exec_path, arguments, environ);
            _exit(127);
        }
        int failure = errno;
        for (int index = 0; index < count; index++) close(received[index]);
        answer(fd, pid > 0 ? (int32_t)pid : -failure);
    }
}

static void *thread_body(void *body) {
    int (*function)(void) = (int (*)(void))body;
    return (void *)(intptr_t)function();
}

int lcs_run_on_new_thread(int (*body)(void)) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, thread_body, (void *)body) != 0) return -1;
    // The waiting thread takes no signal: one the body's thread blocks to read (signalfd, sigwait)
    // must not be delivered here instead.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    void *result = NULL;
    if (pthread_join(thread, &result) != 0) return -1;
    return (int)(intptr_t)result;
}

int lcs_runner_server_send(int fd, int socket, int progress, int cgroup) {
    struct lcs_runner_request request;
    memset(&request, 0, sizeof request);
    if (sched_getaffinity(0, sizeof request.affinity, &request.affinity) != 0) return -errno;
    int folder = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (folder < 0) return -errno;
    int descriptors[7] = {socket, progress, folder};
    size_t count = 3;
    // The standard descriptors as they are now (the server's may be older: it may have started before
    // this process pointed them elsewhere); one this process has closed is closed in the runner too.
    for (int n = 0; n < 3; n++) {
        if (fcntl(n, F_GETFD) < 0) continue;
        request.attached |= LCS_REQUEST_STDIN << n;
        descriptors[count++] = n;
    }
    if (cgroup >= 0) {
        request.attached |= LCS_REQUEST_CGROUP;
        descriptors[count++] = cgroup;
    }
    struct iovec part = {.iov_base = &request, .iov_len = sizeof request};
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(7 * sizeof(int))];
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1, .msg_control = control.space,
                             .msg_controllen = CMSG_SPACE(count * sizeof(int))};
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(count * sizeof(int));
    memcpy(CMSG_DATA(header), descriptors, count * sizeof(int));
    ssize_t sent = LCS_RETRY(sendmsg(fd, &message, MSG_NOSIGNAL));
    int failure = errno;
    close(folder);
    if (sent != (ssize_t)sizeof request) return sent < 0 ? -failure : -EPROTO;
    return 0;
}

int lcs_runner_server_answer(int fd, int timeout_ms) {
    struct pollfd watch = {.fd = fd, .events = POLLIN};
    int ready = LCS_RETRY(poll(&watch, 1, timeout_ms));
    if (ready < 0) return -errno;
    if (ready == 0) return -ETIMEDOUT;
    int32_t value = 0;
    ssize_t length = LCS_RETRY(recv(fd, &value, sizeof value, MSG_DONTWAIT));
    if (length == 0) return -EPIPE;
    if (length < 0) return -errno;
    if (length != (ssize_t)sizeof value || value == 0) return -EPROTO;
    return value;
}

pid_t lcs_gettid(void) { return (pid_t)syscall(SYS_gettid); }
