// The part of accel_plugin_api_t every vendor backend fills the same way:
// device_synchronize through mem_get_info, one function op_<member> each.
//
// Backends declare those functions with ACCEL_BACKEND_DECLARE_OP (the type
// comes from the vtable member itself, so a declaration cannot drift from
// accel_plugin.h) and wire them with ACCEL_BACKEND_VTABLE_OP, after their
// own init .. set_current_device members:
//
//   namespace accel_xyz { ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_DECLARE_OP) }
//   const accel_plugin_api_t g_api = {
//       ..., .set_current_device = nullptr,
//       ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_VTABLE_OP)
//   };
//
// The list is in the vtable's declaration order, which designated
// initializers require. Internal to the in-tree backends; a third-party
// plugin needs nothing but accel_plugin.h (see plugins/skeleton).
#pragma once

#include <type_traits>

#include "accel/accel_plugin.h"

#define ACCEL_BACKEND_COMMON_OPS(X)                                                  \
  X(device_synchronize)                                                              \
  X(stream_priority_range)                                                           \
  X(stream_create)                                                                   \
  X(stream_destroy)                                                                  \
  X(default_stream)                                                                  \
  X(stream_query)                                                                    \
  X(stream_synchronize)                                                              \
  X(stream_wait_event)                                                               \
  X(launch_host_func)                                                                \
  X(event_create)                                                                    \
  X(event_destroy)                                                                   \
  X(event_record)                                                                    \
  X(event_query)                                                                     \
  X(event_synchronize)                                                               \
  X(event_elapsed_time)                                                              \
  X(mem_alloc)                                                                       \
  X(mem_free)                                                                        \
  X(memcpy_async)                                                                    \
  X(memset_async)                                                                    \
  X(mem_get_info)

// `accel_status_t op_<member>(<the member's parameters>);`
#define ACCEL_BACKEND_DECLARE_OP(member) \
  std::remove_pointer_t<decltype(accel_plugin_api_t::member)> op_##member;

// `.member = op_<member>,` inside the vtable's initializer.
#define ACCEL_BACKEND_VTABLE_OP(member) .member = op_##member,
