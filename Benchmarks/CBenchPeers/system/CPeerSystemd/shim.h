#pragma once
// Only here for the module map; CBenchPeers includes <systemd/sd-event.h> itself.
#include <systemd/sd-event.h>
