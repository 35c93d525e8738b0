#pragma once

// AppLifecycle's public C ABI.
//
// This header is the stable, versioned C interface for observer plugins and for C programs that
// embed the engine. The engine (Swift, Sources/AppLifecycle) is the single implementation; the C
// ABI is a thin face over it. Only the version is defined so far: the C ABI (liblifecycle.so, the
// plugin descriptor, the host-API table) is not built yet.

#define LC_ABI_VERSION_MAJOR 0
#define LC_ABI_VERSION_MINOR 1
