// libsigc++ 3 (C++17) as a peer of our notification center's synchronous post (bench_peers.h).
#include "bench_peers.h"

#include <sigc++/sigc++.h>

#include <ctime>
#include <new>
#include <vector>

namespace {

uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace

extern "C" uint64_t peer_sigcpp_emit(size_t observers, size_t iterations, uint64_t *elapsed_ns) {
    if (elapsed_ns) *elapsed_ns = 0;
    try {
        std::vector<uint64_t> counters(observers, 0);
        sigc::signal<void()> signal;
        for (size_t i = 0; i < observers; i++) {
            uint64_t *counter = &counters[i];
            signal.connect([counter] { ++*counter; });
        }

        uint64_t start = now_ns();
        for (size_t i = 0; i < iterations; i++) signal.emit();
        uint64_t end = now_ns();

        uint64_t sum = 0;
        for (uint64_t counter : counters) sum += counter;
        if (elapsed_ns) *elapsed_ns = end - start;
        return sum;  // the signal (and its slots) is destroyed here
    } catch (...) {
        return 0;
    }
}
