#pragma once
// libffi's header lives in the multiarch include folder (pkg-config --cflags libffi prints nothing).
#include <ffi.h>
