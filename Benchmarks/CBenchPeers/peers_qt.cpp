// Qt 5 (QtCore) as a peer of our observer removal: QObject::connect returns a QMetaObject::Connection,
// QObject::disconnect(connection) removes one (bench_peers.h).
#include "bench_peers.h"

#include <QtCore/QObject>

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

extern "C" uint64_t peer_qt_disconnect(size_t observers, const uint32_t *order, uint64_t *elapsed_ns) {
    if (elapsed_ns) *elapsed_ns = 0;
    try {
        std::vector<uint64_t> counters(observers, 0);
        std::vector<QMetaObject::Connection> connections;
        connections.reserve(observers);
        QObject sender;
        // QObject's own signal objectNameChanged: a functor connection needs no moc.
        for (size_t i = 0; i < observers; i++) {
            uint64_t *counter = &counters[i];
            connections.push_back(QObject::connect(&sender, &QObject::objectNameChanged,
                                                   [counter](const QString &) { ++*counter; }));
        }

        uint64_t disconnected = 0;
        uint64_t start = now_ns();
        for (size_t i = 0; i < observers; i++) {
            if (QObject::disconnect(connections[order ? order[i] : i])) disconnected++;
        }
        uint64_t end = now_ns();

        sender.setObjectName(QStringLiteral("after"));  // must reach no slot
        for (uint64_t counter : counters) {
            if (counter != 0) return 0;
        }
        if (elapsed_ns) *elapsed_ns = end - start;
        return disconnected;
    } catch (...) {
        return 0;
    }
}
