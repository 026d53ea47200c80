#include "plugin_groups.hpp"

#include <cstddef>
#include <iterator>

#include "error.hpp"

namespace accel::core {

namespace {

struct GroupInfo {
  PluginGroup group;
  const char* what;  // "native handles", for messages
  uint32_t cap;
  // Byte offsets of the group's members in accel_plugin_api_t.
  size_t first, last;
  uint32_t since_minor = 1;  // the ABI minor that added the group
};

#define ACCEL_MEMBER_OFFSET(m) offsetof(accel_plugin_api_t, m)
constexpr GroupInfo kGroups[] = {
    {PluginGroup::native_handles, "native handles", ACCEL_PLUGIN_CAP_NATIVE_HANDLES,
     ACCEL_MEMBER_OFFSET(stream_native_handle), ACCEL_MEMBER_OFFSET(stream_from_native)},
    {PluginGroup::host_memory, "pinned host memory", ACCEL_PLUGIN_CAP_HOST_MEMORY,
     ACCEL_MEMBER_OFFSET(host_alloc), ACCEL_MEMBER_OFFSET(host_unregister)},
    {PluginGroup::peer_copy, "peer copies", ACCEL_PLUGIN_CAP_PEER_COPY,
     ACCEL_MEMBER_OFFSET(device_can_access_peer), ACCEL_MEMBER_OFFSET(memcpy_peer_async)},
    {PluginGroup::device_attributes, "device attributes", ACCEL_PLUGIN_CAP_DEVICE_ATTRIBUTES,
     ACCEL_MEMBER_OFFSET(device_get_attribute), ACCEL_MEMBER_OFFSET(get_device_capability)},
    {PluginGroup::modules, "modules and kernels", ACCEL_PLUGIN_CAP_MODULES,
     ACCEL_MEMBER_OFFSET(module_formats), ACCEL_MEMBER_OFFSET(launch_kernel), 2},
    {PluginGroup::graphs, "native graphs", ACCEL_PLUGIN_CAP_GRAPHS,
     ACCEL_MEMBER_OFFSET(graph_support), ACCEL_MEMBER_OFFSET(graph_exec_destroy), 4},
};
#undef ACCEL_MEMBER_OFFSET

// Every member of the table is a function pointer of one size.
using AnyFn = void (*)();
static_assert(sizeof(AnyFn) == sizeof(accel_plugin_api_t::stream_native_handle));

AnyFn* member_at(accel_plugin_api_t& api, size_t offset) {
  return reinterpret_cast<AnyFn*>(reinterpret_cast<char*>(&api) + offset);
}

const GroupInfo& info(PluginGroup g) {
  for (const auto& gi : kGroups)
    if (gi.group == g) return gi;
  return kGroups[0];
}

}  // namespace

std::string check_plugin_groups(accel_plugin_api_t& api, size_t struct_size,
                                uint32_t& capabilities) {
  for (const auto& g : kGroups) {
    size_t end = g.last + sizeof(AnyFn);
    size_t members = (g.last - g.first) / sizeof(AnyFn) + 1;
    if (struct_size < end) {
      // Not part of the plugin's table: whatever lies there is not ours.
      for (size_t i = 0; i < members; ++i) *member_at(api, g.first + i * sizeof(AnyFn)) = nullptr;
    }
    size_t set = 0;
    for (size_t i = 0; i < members; ++i)
      set += *member_at(api, g.first + i * sizeof(AnyFn)) != nullptr;
    if (set != 0 && set != members) {
      return std::string(g.what) + " operations must be all set or all NULL (plugin-abi rule 19)";
    }
    if (set == 0 && (capabilities & g.cap) != 0) {
      return std::string("capabilities declare ") + g.what +
             " but the table leaves those operations NULL (plugin-abi rule 19)";
    }
    if (set == members) capabilities |= g.cap;
  }
  return {};
}

uint32_t with_group_bits(const accel_plugin_api_t& api, uint32_t capabilities) {
  auto& table = const_cast<accel_plugin_api_t&>(api);  // read only
  for (const auto& g : kGroups) {
    capabilities &= ~g.cap;
    if (*member_at(table, g.first) != nullptr) capabilities |= g.cap;
  }
  return capabilities;
}

accel_status_t require_group(const char* fn, const Backend& b, PluginGroup group) {
  const GroupInfo& g = info(group);
  if ((b.capabilities & g.cap) != 0) return ACCEL_SUCCESS;
  if (b.abi_minor < g.since_minor) {
    return failf(ACCEL_ERROR_NOT_SUPPORTED,
                 "{}: backend '{}' has no {}: its plugin was built for ABI {}.{}, before they "
                 "existed (ABI 1.{})",
                 fn, b.name, g.what, b.abi_major, b.abi_minor, g.since_minor);
  }
  return failf(ACCEL_ERROR_NOT_SUPPORTED, "{}: backend '{}' does not support {}", fn, b.name,
               g.what);
}

}  // namespace accel::core
