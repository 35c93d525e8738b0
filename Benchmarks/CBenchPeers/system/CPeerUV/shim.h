#pragma once
// Only here for the module map; CBenchPeers includes <uv.h> itself.
#include <uv.h>
