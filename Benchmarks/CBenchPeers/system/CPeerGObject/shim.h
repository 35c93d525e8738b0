#pragma once
// Only here for the module map; CBenchPeers includes <glib-object.h> itself.
#include <glib-object.h>
