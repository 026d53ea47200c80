// The optional groups of accel_plugin_api_t that ABI 1.1, 1.2 and 1.4 appended, each
// all-or-none and each announced by a capability bit. The loader checks
// them (plugin_groups.cpp); entry points ask whether a backend has one.
#pragma once

#include <string>

#include "accel/accel_plugin.h"
#include "backend.hpp"

namespace accel::core {

enum class PluginGroup {
  native_handles,
  host_memory,
  peer_copy,
  device_attributes,
  modules,
  graphs,
};

// For the loader, after the table is copied: NULLs the members of every
// group the plugin's struct_size does not wholly cover (an ABI 1.0 plugin,
// or 1.1 built before the group existed), and sets each group's capability
// bit in `capabilities` when the group is filled. Returns a rejection reason
// (plugin-abi rule 19) when a group is partly filled, or its bit is declared
// without the group; "" otherwise.
std::string check_plugin_groups(accel_plugin_api_t& api, size_t struct_size,
                                uint32_t& capabilities);

// `capabilities` with the group bits replaced by those of the groups `api`
// fills (after check_plugin_groups): how the core's copy of the plugin's
// capabilities is made, at load and again after device_count.
uint32_t with_group_bits(const accel_plugin_api_t& api, uint32_t capabilities);

// ACCEL_SUCCESS when `b` fills `group`; else ACCEL_ERROR_NOT_SUPPORTED with a
// message naming `fn`, the backend, what it lacks and why (ABI version).
accel_status_t require_group(const char* fn, const Backend& b, PluginGroup group);

}  // namespace accel::core
