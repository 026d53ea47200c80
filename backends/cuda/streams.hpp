// Streams, events and host functions.
//
// Default stream: each device's is a plugin-owned Stream whose handle is
// CU_STREAM_LEGACY, the legacy default stream of the device's primary
// context: the stream the CUDA runtime (and torch) use by default, so work
// accel queues there orders with theirs. Streams made by stream_create are
// CU_STREAM_NON_BLOCKING (as torch's stream pool makes them), so they do not
// synchronise implicitly with the legacy stream. Every operation makes the
// stream's device context current for its duration (CtxScope).
#pragma once

#include <cuda.h>

#include "accel/accel_plugin.h"

namespace accel_cuda {

struct Stream {
  int32_t device = 0;
  CUstream handle = nullptr;
  bool is_default = false;
};

struct Event {
  int32_t device = 0;
  CUevent handle = nullptr;
};

// lazy_init: one default Stream per device.
accel_status_t init_default_streams(int32_t count);

accel_status_t device_synchronize(int32_t device);
accel_status_t stream_priority_range(int32_t device, int32_t* least, int32_t* greatest);
accel_status_t stream_create(int32_t device, int32_t priority, accel_plugin_stream_t* stream);
accel_status_t stream_destroy(accel_plugin_stream_t stream);
accel_status_t default_stream(int32_t device, accel_plugin_stream_t* stream);
accel_status_t stream_query(accel_plugin_stream_t stream);
accel_status_t stream_synchronize(accel_plugin_stream_t stream);
accel_status_t stream_wait_event(accel_plugin_stream_t stream, accel_plugin_event_t event);
accel_status_t launch_host_func(accel_plugin_stream_t stream, accel_host_fn fn, void* user_data);

accel_status_t event_create(int32_t device, uint32_t flags, accel_plugin_event_t* event);
accel_status_t event_destroy(accel_plugin_event_t event);
accel_status_t event_record(accel_plugin_event_t event, accel_plugin_stream_t stream);
accel_status_t event_query(accel_plugin_event_t event);
accel_status_t event_synchronize(accel_plugin_event_t event);
accel_status_t event_elapsed_time(accel_plugin_event_t start, accel_plugin_event_t end, float* ms);

}  // namespace accel_cuda
