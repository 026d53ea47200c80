// The vtable of the Level Zero backend and its entry point; the operations
// live in count.cpp, library.cpp, devices.cpp, streams.cpp, interop.cpp,
// events.cpp, hostfn.cpp, memory.cpp, modules.cpp and launch.cpp.
//
// Lifecycle (README.md has the details):
//  - entry: stores the host services; touches no Level Zero.
//  - init: dlopen()s libze_loader.so.1; missing -> ACCEL_ERROR_BACKEND_UNAVAILABLE.
//  - device_count: zeInit(ZE_INIT_FLAG_GPU_ONLY) (zeInitDrivers where the
//    loader has it) and enumeration: Level Zero cannot count otherwise. No
//    context is created. A failing zeInit is 0 devices with the reason.
//  - lazy_init: one context per driver.
// Not fork-safe; no native current device (Level Zero has none).
// ABI 1.3: pointer_get_device (memory.cpp).
#define ACCEL_BACKEND_POINTER_GET_DEVICE accel::level_zero::op_pointer_get_device
#include "backend.hpp"

ACCEL_BACKEND_PLUGIN(accel::level_zero, "level_zero", 200,
                     ACCEL_PLUGIN_CAP_TIMING_EVENTS | ACCEL_PLUGIN_CAP_HOST_FUNCTIONS |
                         ACCEL_PLUGIN_CAP_STREAM_PRIORITIES | ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT);
