#pragma once

// The plugin runners' fork server (runner_server.c): one process, started once per starting thread,
// that makes each isolated plugin's process by forking itself instead of by `exec`. Linux only.

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Serves the host's requests on `fd` (a `SOCK_SEQPACKET` socket), one at a time, until it ends.
///
/// A request is the asking thread's CPU affinity (a `cpu_set_t`) and a word saying which descriptors
/// are attached (`SCM_RIGHTS`): the runner's socket, its progress page and the asking process's working
/// folder, then those of the asking process's standard input, output and error it has open, and
/// optionally a cgroup v2 folder. For each, a process is made with `clone(CLONE_PARENT)` —
/// the child of this process's parent (the host, which then waits for it, gets its `SIGCHLD` and its
/// parent-death signal), not of this one — born in that cgroup when one is given (`clone3` with
/// `CLONE_INTO_CGROUP`: no migration afterwards, whose first costs the kernel an RCU grace period,
/// ~10 ms), in that working folder, on those CPUs, and its pid (or `-errno`) is sent back as a 4-byte
/// integer, in the order asked (requests may be sent ahead of the answers). Anything else (another
/// length, unknown bits, descriptors that do not match the word, a truncated message) is answered
/// `-EINVAL`, its descriptors closed.
///
/// In the new process the socket and the progress page are moved to 3 and 4 and the standard
/// descriptors to 0 to 2 (one the asker had closed is closed: the runner's are the asker's at the
/// request, not this server's, which may have started before the asker pointed them elsewhere);
/// other descriptors stay open (the runner closes them), the process leads a process group of its own,
/// its signal mask is empty and every signal has its default action; then this function returns 0
/// there. When `exec_path` is not NULL the new process runs `exec_path exec_command --fd 3
/// --progress-fd 4` instead and never returns (for sanitizer builds, whose runtimes do not survive a
/// fork without exec).
///
/// - Returns: 0 in each new process; -1 in the server once `fd` ends or breaks.
int lcs_runner_server(int fd, const char *exec_path, const char *exec_command);

/// Runs `body` on a new thread (default attributes) and waits for it. - Returns: what `body`
/// returned, or -1 when no thread could be made.
int lcs_run_on_new_thread(int (*body)(void));

/// Asks the server at `fd` for a process (see `lcs_runner_server`), handing it `socket`, `progress`
/// and, unless -1, `cgroup`, with the calling thread's CPU affinity, working folder and standard
/// descriptors; the answer comes
/// later (`lcs_runner_server_answer`), in the order asked. - Returns: 0, or `-errno` (`-EPIPE` when the
/// server is gone).
int lcs_runner_server_send(int fd, int socket, int progress, int cgroup);

/// Waits up to `timeout_ms` for the server's next answer. - Returns: the pid; `-errno` (the server's,
/// or this side's: `-ETIMEDOUT`, `-EPIPE` when the server is gone, `-EPROTO` for a malformed answer).
int lcs_runner_server_answer(int fd, int timeout_ms);

/// The calling thread's kernel id (`gettid`).
pid_t lcs_gettid(void);

/// Whether this process runs a sanitizer's runtime (AddressSanitizer, ThreadSanitizer: this C code
/// built with one, or the runtime's entry points found among the process's symbols), whose state a
/// fork without `exec` does not keep consistent: 1 or 0.
int lcs_built_with_sanitizer(void);

#ifdef __cplusplus
}
#endif
