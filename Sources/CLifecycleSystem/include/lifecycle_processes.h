#pragma once

// The processes an isolated plugin starts (lifecycle_processes.c): watching a process end, keeping a
// process's orphaned descendants, and killing a whole tree of processes. Linux only.

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// `pidfd_open(pid, 0)`: a descriptor that becomes readable when `pid` (a child of this process) has
/// exited; close-on-exec. -1 and errno (ENOSYS before Linux 5.3).
int lcs_pidfd_open(pid_t pid);

/// Whether `pid` (a child of this process) has exited, without reaping it (`waitid` with `WNOWAIT`):
/// 1 yes, 0 no, -1 and errno (not a child, or already reaped).
int lcs_child_has_exited(pid_t pid);

/// Makes this process a child subreaper (`PR_SET_CHILD_SUBREAPER`): a descendant whose parent dies is
/// re-parented to this process instead of init, so it stays in this process's tree. 0, or -1 and errno.
int lcs_become_subreaper(void);

/// Sends SIGKILL to every live descendant of `root` (not `root` itself), found through
/// `/proc/ROOT/task/*/children` and down from there: one pass after another (a millisecond apart, at
/// most `passes`) until a pass finds no live one, so that what a dying process's children become
/// (re-parented to a subreaper `root`) is found too. Zombies are left to their parent. At most 4,096
/// processes a pass. Async-signal-safe (open, read, getdents64, kill, nanosleep; no allocation).
/// - Returns: how many signals were sent.
int lcs_kill_descendants(pid_t root, int passes);

/// Installs, in this process, a handler for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP and
/// SIGSYS that kills this process's descendants (`lcs_kill_descendants`), then lets the signal end the
/// process as it would have (the default action: the process dies of that signal), on an alternate
/// stack of the calling thread; and an exit handler (`atexit`) that kills them on `exit()`. For the
/// plugin runner, which is a subreaper: what its plugin started does not outlive it. 0, or -1.
int lcs_kill_descendants_at_end(void);

#ifdef __cplusplus
}
#endif
