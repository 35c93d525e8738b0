// CHECK(call): a C fixture's lc_* call that must succeed; on failure it prints the call, the status
// name and the last error message, and exits with 1 (the test then shows the output).
#pragma once

#include <lifecycle.h>

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                     \
    do {                                                                                                \
        lc_status s_ = (call);                                                                          \
        if (s_ != LC_OK) {                                                                              \
            printf("%s failed: %s: %s\n", #call, lc_status_name(s_), lc_last_error_message());          \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)
