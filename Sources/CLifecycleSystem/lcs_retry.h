#pragma once
// Private to the shim (not under include/): the one EINTR loop of its C code, as Swift's `systemCall`.

#include <errno.h>

/// Evaluates `expr` (one system call returning -1 and setting errno on failure) again while it fails
/// with EINTR; the value is its last result, of its own type, with errno as the call left it.
/// Never for close(): on Linux the descriptor is released even when close reports EINTR.
#define LCS_RETRY(expr)                                                  \
    ({                                                                   \
        __typeof__(expr) lcs_retry_result_;                              \
        do {                                                             \
            lcs_retry_result_ = (expr);                                  \
        } while (lcs_retry_result_ == -1 && errno == EINTR);             \
        lcs_retry_result_;                                               \
    })
