// The vtable every in-tree backend fills the same way: one function
// op_<member> per member of accel_plugin_api_t, in the namespace of the
// backend. Internal to the in-tree backends; a third-party plugin needs
// nothing but accel_plugin.h (see plugins/skeleton).
//
// A backend declares its operations in its backend.hpp with
// ACCEL_BACKEND_DECLARE_OP (the type comes from the vtable member itself, so
// a declaration cannot drift from accel_plugin.h); for a member it leaves
// NULL it writes ACCEL_BACKEND_NO_OP(member) instead. Its plugin.cpp is then
//
//   accel_plugin_api_t g_api = ACCEL_BACKEND_VTABLE("name", priority, capabilities);
//   ACCEL_PLUGIN_DEFINE_ENTRY(accel::name::g_api);
//
// The lists are in the vtable's declaration order, which designated
// initializers require.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "accel/accel_plugin.h"
#include "accel/accel_plugin_helpers.hpp"

// Discovery and devices: the lifecycle members after init and before the
// current device.
#define ACCEL_BACKEND_DISCOVERY_OPS(X) \
  X(device_count)                      \
  X(lazy_init)                         \
  X(get_device_properties)

// Discovery, lifecycle and devices.
#define ACCEL_BACKEND_LIFECYCLE_OPS(X) \
  X(init)                              \
  ACCEL_BACKEND_DISCOVERY_OPS(X)       \
  X(get_current_device)                \
  X(set_current_device)

// For a backend whose vendor API has no current device: the core keeps the
// per-thread index.
#define ACCEL_BACKEND_NO_CURRENT_DEVICE_OPS \
  ACCEL_BACKEND_NO_OP(get_current_device)   \
  ACCEL_BACKEND_NO_OP(set_current_device)

// Synchronisation, streams, events, memory, and ABI 1.1's runtime_version.
#define ACCEL_BACKEND_COMMON_OPS(X) \
  X(device_synchronize)             \
  X(stream_priority_range)          \
  X(stream_create)                  \
  X(stream_destroy)                 \
  X(default_stream)                 \
  X(stream_query)                   \
  X(stream_synchronize)             \
  X(stream_wait_event)              \
  X(launch_host_func)               \
  X(event_create)                   \
  X(event_destroy)                  \
  X(event_record)                   \
  X(event_query)                    \
  X(event_synchronize)              \
  X(event_elapsed_time)             \
  X(mem_alloc)                      \
  X(mem_free)                       \
  X(memcpy_async)                   \
  X(memset_async)                   \
  X(mem_get_info)                   \
  X(runtime_version)

// The ABI 1.1 groups, in declaration order (native handles, host memory,
// peer copies, device attributes): all of a group or none of it.
#define ACCEL_BACKEND_NATIVE_HANDLE_OPS(X) \
  X(stream_native_handle)                  \
  X(event_native_handle)                   \
  X(device_native_handle)                  \
  X(stream_from_native)
#define ACCEL_BACKEND_HOST_MEMORY_OPS(X) \
  X(host_alloc)                          \
  X(host_free)                           \
  X(host_register)                       \
  X(host_unregister)
#define ACCEL_BACKEND_PEER_OPS(X) \
  X(device_can_access_peer)       \
  X(device_enable_peer_access)    \
  X(memcpy_peer_async)
#define ACCEL_BACKEND_ATTRIBUTE_OPS(X) \
  X(device_get_attribute)              \
  X(get_device_capability)
#define ACCEL_BACKEND_INTEROP_OPS(X) \
  ACCEL_BACKEND_NATIVE_HANDLE_OPS(X) \
  ACCEL_BACKEND_HOST_MEMORY_OPS(X)   \
  ACCEL_BACKEND_PEER_OPS(X)          \
  ACCEL_BACKEND_ATTRIBUTE_OPS(X)

// The ABI 1.2 modules group: all of it or none of it.
#define ACCEL_BACKEND_MODULE_OPS(X) \
  X(module_formats)                 \
  X(module_load)                    \
  X(module_unload)                  \
  X(kernel_create)                  \
  X(kernel_destroy)                 \
  X(kernel_get_attributes)          \
  X(kernel_get_params)              \
  X(launch_kernel)

// For a backend without modules (yet): every member NULL.
#define ACCEL_BACKEND_NO_MODULE_OPS ACCEL_BACKEND_MODULE_OPS(ACCEL_BACKEND_NO_OP)

// For a backend without the ABI 1.1 groups (yet): every member NULL.
#define ACCEL_BACKEND_NO_INTEROP_OPS ACCEL_BACKEND_INTEROP_OPS(ACCEL_BACKEND_NO_OP)

// `accel_status_t op_<member>(<the member's parameters>);`
#define ACCEL_BACKEND_DECLARE_OP(member) \
  std::remove_pointer_t<decltype(accel_plugin_api_t::member)> op_##member;

// A member the backend leaves NULL ("not supported", plugin-abi rule 20).
#define ACCEL_BACKEND_NO_OP(member) inline constexpr std::nullptr_t op_##member = nullptr;

namespace accel::backend {

// The answer of a native-handle operation (accel.h's table says what each
// backend puts in each member); struct_size and backend stay the core's.
// Returns ACCEL_SUCCESS, the operation's status.
inline accel_status_t set_native_handle(accel_native_handle_t* out, accel_native_type_t type,
                                        void* handle, void* context, int64_t ordinal) noexcept {
  out->type = type;
  out->handle = handle;
  out->context = context;
  out->ordinal = ordinal;
  return ACCEL_SUCCESS;
}

// The frame of a peer operation: guarded(), both indices checked by the
// backend's device_at (the first failure's status returned, device_at has
// set the error), then body(Device* device, Device* peer).
template <typename Device, typename Body>
accel_status_t on_device_pair(const char* op,
                              accel_status_t (*device_at)(int32_t, Device*&) noexcept,
                              int32_t device, int32_t peer, Body&& body) noexcept {
  return accel::plugin::guarded(op, [&]() -> accel_status_t {
    Device *a = nullptr, *b = nullptr;
    if (accel_status_t st = device_at(device, a); st != ACCEL_SUCCESS) return st;
    if (accel_status_t st = device_at(peer, b); st != ACCEL_SUCCESS) return st;
    return body(a, b);
  });
}

// accel's name of a device attribute ("max_threads_per_block"), from
// accel.h's ACCEL_DEVICE_ATTR_MAP, for the backends' messages: a plugin
// never calls libaccelcore (accel_device_attr_name), whose functions are not
// visible to it when the core itself was opened RTLD_LOCAL (as a Python
// extension's dependency is).
inline const char* device_attr_name(accel_device_attr_t attr) noexcept {
  switch (attr) {
#define ACCEL_BACKEND_ATTR_NAME(name, value, text, unit) \
  case ACCEL_DEVICE_ATTR_##name:                         \
    return text;
    ACCEL_DEVICE_ATTR_MAP(ACCEL_BACKEND_ATTR_NAME)
#undef ACCEL_BACKEND_ATTR_NAME
    default:
      return "unknown attribute";
  }
}

// The frame of an operation on one device: guarded() (an exception becomes
// a status, nothing unwinds into the core), the index checked by the
// backend's device_at (its status returned, the error set), then
// body(Device*), whose status is the operation's.
template <typename Device, typename Body>
accel_status_t on_device(const char* op, accel_status_t (*device_at)(int32_t, Device*&) noexcept,
                         int32_t device, Body&& body) noexcept {
  return accel::plugin::guarded(op, [&]() -> accel_status_t {
    Device* d = nullptr;
    if (accel_status_t st = device_at(device, d); st != ACCEL_SUCCESS) return st;
    return body(d);
  });
}

}  // namespace accel::backend

// Declares on_device(op, device, body) and on_device_pair(op, device, peer,
// body) in a backend's namespace: the frames above with its device_at.
#define ACCEL_BACKEND_DEVICE_FRAMES(device_at)                                     \
  template <typename Body>                                                         \
  accel_status_t on_device(const char* op, int32_t device, Body&& body) noexcept { \
    return ::accel::backend::on_device(op, device_at, device, body);               \
  }                                                                                \
  template <typename Body>                                                         \
  accel_status_t on_device_pair(const char* op, int32_t device, int32_t peer,      \
                                Body&& body) noexcept {                            \
    return ::accel::backend::on_device_pair(op, device_at, device, peer, body);    \
  }

// `.member = op_<member>,` inside the vtable's initializer.
#define ACCEL_BACKEND_VTABLE_OP(member) .member = op_##member,

// ABI 1.3 members a backend provides: define ACCEL_BACKEND_POINTER_GET_DEVICE
// / ACCEL_BACKEND_STREAM_SET_NAME to its op before including this header;
// left undefined, the member is NULL (not supported).
#ifndef ACCEL_BACKEND_POINTER_GET_DEVICE
#define ACCEL_BACKEND_POINTER_GET_DEVICE nullptr
#endif
#ifndef ACCEL_BACKEND_STREAM_SET_NAME
#define ACCEL_BACKEND_STREAM_SET_NAME nullptr
#endif

// ABI 1.4's graph group (accel_plugin.h): a backend with native graphs
// defines ACCEL_BACKEND_NATIVE_GRAPHS before including this header and
// provides op_graph_support .. op_graph_exec_destroy; without it the group is
// NULL and the core records that backend's graphs.
#ifdef ACCEL_BACKEND_NATIVE_GRAPHS
#define ACCEL_BACKEND_GRAPH_MEMBERS                                               \
  .graph_support = op_graph_support, .graph_record_begin = op_graph_record_begin, \
  .graph_record_end = op_graph_record_end, .graph_launch = op_graph_launch,       \
  .graph_exec_destroy = op_graph_exec_destroy,
#else
#define ACCEL_BACKEND_GRAPH_MEMBERS                                    \
  .graph_support = nullptr, .graph_record_begin = nullptr,             \
  .graph_record_end = nullptr, .graph_launch = nullptr,                \
  .graph_exec_destroy = nullptr,
#endif

// The whole table of a backend named `backend_name` (static storage).
#define ACCEL_BACKEND_VTABLE(backend_name, backend_priority, backend_capabilities)               \
  accel_plugin_api_t {                                                                           \
    .struct_size = sizeof(accel_plugin_api_t), .abi_major = ACCEL_PLUGIN_ABI_MAJOR,              \
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR, .name = (backend_name), .priority = (backend_priority), \
    .capabilities = (backend_capabilities),                                                      \
    ACCEL_BACKEND_LIFECYCLE_OPS(ACCEL_BACKEND_VTABLE_OP)                                         \
        ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_VTABLE_OP)                                        \
            ACCEL_BACKEND_INTEROP_OPS(ACCEL_BACKEND_VTABLE_OP)                                   \
                ACCEL_BACKEND_MODULE_OPS(ACCEL_BACKEND_VTABLE_OP)                                \
                    .pointer_get_device = ACCEL_BACKEND_POINTER_GET_DEVICE,                      \
    .stream_set_name = ACCEL_BACKEND_STREAM_SET_NAME, ACCEL_BACKEND_GRAPH_MEMBERS               \
  }

// A vendor backend's plugin.cpp, at global scope: the table `g_api` of
// namespace `ns` (not const: declare_discovery_fork_safe() adds
// ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE when counting started no vendor
// runtime; the backend's counting calls it under the core's discovery lock,
// before the core reads the capabilities again) and the plugin's one
// exported symbol.
#define ACCEL_BACKEND_PLUGIN(ns, backend_name, backend_priority, backend_capabilities) \
  namespace ns {                                                                       \
  namespace {                                                                          \
  accel_plugin_api_t g_api =                                                           \
      ACCEL_BACKEND_VTABLE(backend_name, backend_priority, backend_capabilities);      \
  }                                                                                    \
  void declare_discovery_fork_safe() noexcept {                                        \
    g_api.capabilities |= ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE;                        \
  }                                                                                    \
  }                                                                                    \
  ACCEL_PLUGIN_DEFINE_ENTRY(ns::g_api)
