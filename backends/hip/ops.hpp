// The plugin's operations (the vtable's members) and the device scope they
// share. Nothing here is exported: the plugin's only public symbol is the
// entry (exports.map).
#pragma once

#include <hip/hip_runtime_api.h>

#include <cstdint>
#include <string>

#include "accel/accel_plugin.h"

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
accel_status_t op_device_synchronize(int32_t device);

// streams, events, host functions (streams.cpp)
accel_status_t op_stream_priority_range(int32_t device, int32_t* least, int32_t* greatest);
accel_status_t op_stream_create(int32_t device, int32_t priority, accel_plugin_stream_t* out);
accel_status_t op_stream_destroy(accel_plugin_stream_t stream);
accel_status_t op_default_stream(int32_t device, accel_plugin_stream_t* out);
accel_status_t op_stream_query(accel_plugin_stream_t stream);
accel_status_t op_stream_synchronize(accel_plugin_stream_t stream);
accel_status_t op_stream_wait_event(accel_plugin_stream_t stream, accel_plugin_event_t event);
accel_status_t op_launch_host_func(accel_plugin_stream_t stream, accel_host_fn fn, void* user_data);
accel_status_t op_event_create(int32_t device, uint32_t flags, accel_plugin_event_t* out);
accel_status_t op_event_destroy(accel_plugin_event_t event);
accel_status_t op_event_record(accel_plugin_event_t event, accel_plugin_stream_t stream);
accel_status_t op_event_query(accel_plugin_event_t event);
accel_status_t op_event_synchronize(accel_plugin_event_t event);
accel_status_t op_event_elapsed_time(accel_plugin_event_t start, accel_plugin_event_t end,
                                     float* ms);

// memory (memory.cpp)
accel_status_t op_mem_alloc(int32_t device, size_t bytes, void** ptr);
accel_status_t op_mem_free(int32_t device, void* ptr);
accel_status_t op_memcpy_async(void* dst, const void* src, size_t bytes, accel_memcpy_kind_t kind,
                               accel_plugin_stream_t stream);
accel_status_t op_memset_async(void* dst, int value, size_t bytes, accel_plugin_stream_t stream);
accel_status_t op_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes);

}  // namespace accel_hip
