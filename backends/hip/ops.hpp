// The plugin's operations (the vtable's members) and the device scope they
// share. Nothing here is exported: the plugin's only public symbol is the
// entry (exports.map).
#pragma once

#include <hip/hip_runtime_api.h>

#include <cstdint>
#include <string>

#include "accel/accel_plugin.h"
#include "../common/plugin_ops.hpp"

namespace accel_hip {

// Makes `device` the calling thread's HIP device for the scope and restores
// the caller's device afterwards, so an operation on a stream, event or
// pointer of another device does not change what hipGetDevice (and thus
// accel_current_device_index) answers.
class DeviceScope {
 public:
  DeviceScope() = default;
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  ~DeviceScope();
  accel_status_t enter(int32_t device);

 private:
  int previous_ = -1;
  bool switched_ = false;
};

// "on device 1"
std::string on_device(int32_t device);

// A stream handle: a created hipStream_t, or (is_default) the null stream of
// `device`, which HIP resolves through the current device.
struct Stream {
  int32_t device = 0;
  hipStream_t native = nullptr;
  bool is_default = false;
};

struct Event {
  int32_t device = 0;
  hipEvent_t native = nullptr;
  uint32_t flags = 0;
};

// lifecycle + devices (devices.cpp)
accel_status_t op_init();
accel_status_t op_device_count(int32_t* count);
accel_status_t op_lazy_init();
accel_status_t op_get_device_properties(int32_t device, accel_device_properties_t* props);
accel_status_t op_get_current_device(int32_t* device);
accel_status_t op_set_current_device(int32_t device, uint32_t flags);
// device_synchronize (devices.cpp); streams, events, host functions
// (streams.cpp); memory (memory.cpp): the shared list.
ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_DECLARE_OP)

}  // namespace accel_hip
