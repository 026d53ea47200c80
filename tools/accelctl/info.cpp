// info.cpp - gathers backend and device information from libaccelcore.
#include "info.hpp"

#include <fmt/format.h>

#include <cstring>
#include <utility>

namespace accelctl {

std::string failure_detail(const char* call, accel_status_t status) {
  std::string detail =
      fmt::format("{}: {} ({})", call, accel_status_name(status), accel_status_message(status));
  const char* last = accel_last_error();
  if (last != nullptr && last[0] != '\0') detail += fmt::format(": {}", last);
  return detail;
}

static std::string safe(const char* s) { return s != nullptr ? std::string(s) : std::string(); }

std::vector<BackendEntry> gather_backends() {
  std::vector<BackendEntry> out;
  const size_t count = accel_backend_count();
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    accel_backend_info_t info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    BackendEntry e;
    const accel_status_t st = accel_get_backend_info(i, &info);
    if (st != ACCEL_SUCCESS) {
      e.status = "unknown";
      e.reason = failure_detail("accel_get_backend_info", st);
      out.push_back(std::move(e));
      continue;
    }
    e.name = safe(info.name);
    e.path = safe(info.path);
    e.status = safe(accel_backend_status_name(info.status));
    e.reason = safe(info.reason);
    e.abi_major = info.abi_major;
    e.abi_minor = info.abi_minor;
    e.priority = info.priority;
    e.device_count = info.device_count;
    e.capabilities = info.capabilities;
    e.current = info.is_current != 0;
    e.runtime_version = safe(info.runtime_version);
    out.push_back(std::move(e));
  }
  return out;
}

const BackendEntry* find_current(const std::vector<BackendEntry>& entries) {
  for (const auto& e : entries)
    if (e.current) return &e;
  return nullptr;
}

DeviceEntry gather_device(int32_t index) {
  DeviceEntry d;
  d.index = index;
  std::memset(&d.props, 0, sizeof d.props);
  d.props.struct_size = sizeof d.props;
  accel_status_t st = accel_get_device_properties(index, &d.props);
  d.props_ok = st == ACCEL_SUCCESS;
  if (!d.props_ok) d.props_error = failure_detail("accel_get_device_properties", st);
  // Strings come from a plugin: make sure they are terminated whatever it did.
  d.props.name[sizeof d.props.name - 1] = '\0';
  d.props.vendor[sizeof d.props.vendor - 1] = '\0';
  d.props.pci_bus_id[sizeof d.props.pci_bus_id - 1] = '\0';
  d.props.architecture[sizeof d.props.architecture - 1] = '\0';
  d.props.graphs[sizeof d.props.graphs - 1] = '\0';

  size_t free_b = 0, total_b = 0;
  st = accel_mem_get_info(index, &free_b, &total_b);
  if (st == ACCEL_SUCCESS) {
    d.free_bytes = free_b;
    d.total_bytes = total_b;
  } else if (st != ACCEL_ERROR_NOT_SUPPORTED) {
    d.mem_info_error = failure_detail("accel_mem_get_info", st);
  }

  int64_t v = 0;
  st = accel_device_get_attribute(index, ACCEL_DEVICE_ATTR_WARP_SIZE, &v);
  if (st == ACCEL_SUCCESS || st == ACCEL_ERROR_NOT_SUPPORTED) {
    for (int a = 0; a < ACCEL_DEVICE_ATTR_COUNT; ++a) {
      st = accel_device_get_attribute(index, static_cast<accel_device_attr_t>(a), &v);
      if (st == ACCEL_SUCCESS) {
        d.attributes.emplace_back(v);
      } else if (st == ACCEL_ERROR_NOT_SUPPORTED) {
        d.attributes.emplace_back(std::nullopt);
      } else {
        d.attributes_error = failure_detail("accel_device_get_attribute", st);
        break;
      }
    }
    // A backend without the attribute group answers NOT_SUPPORTED for all.
    bool any = false;
    for (const auto& a : d.attributes) any = any || a.has_value();
    if (!any) d.attributes.clear();
  } else {
    d.attributes_error = failure_detail("accel_device_get_attribute", st);
  }
  accel_device_capability_t cap;
  std::memset(&cap, 0, sizeof cap);
  cap.struct_size = sizeof cap;
  if (accel_get_device_capability(index, &cap) == ACCEL_SUCCESS)
    d.supported_dtypes = cap.supported_dtypes;
  uint64_t formats = 0;
  if (accel_device_module_formats(index, &formats) == ACCEL_SUCCESS) d.module_formats = formats;
  return d;
}

std::vector<std::string> module_format_names(uint64_t formats) {
  std::vector<std::string> out;
  for (unsigned f = 0; f < ACCEL_MODULE_FORMAT_COUNT; ++f)
    if ((formats & ACCEL_MODULE_FORMAT_BIT(f)) != 0)
      out.emplace_back(accel_module_format_name(static_cast<accel_module_format_t>(f)));
  return out;
}

std::vector<std::string> dtype_names(uint64_t dtypes) {
  static const std::pair<accel_dtype_t, const char*> kNames[] = {
      {ACCEL_DTYPE_UINT8, "uint8"},           {ACCEL_DTYPE_INT8, "int8"},
      {ACCEL_DTYPE_INT16, "int16"},           {ACCEL_DTYPE_INT32, "int32"},
      {ACCEL_DTYPE_INT64, "int64"},           {ACCEL_DTYPE_FLOAT16, "float16"},
      {ACCEL_DTYPE_FLOAT32, "float32"},       {ACCEL_DTYPE_FLOAT64, "float64"},
      {ACCEL_DTYPE_COMPLEX32, "complex32"},   {ACCEL_DTYPE_COMPLEX64, "complex64"},
      {ACCEL_DTYPE_COMPLEX128, "complex128"}, {ACCEL_DTYPE_BOOL, "bool"},
      {ACCEL_DTYPE_BFLOAT16, "bfloat16"},
  };
  std::vector<std::string> out;
  for (const auto& [dtype, name] : kNames)
    if ((dtypes & ACCEL_DTYPE_BIT(dtype)) != 0) out.emplace_back(name);
  return out;
}

std::vector<std::string> capability_words(uint32_t caps) {
  static const std::pair<uint32_t, const char*> kWords[] = {
      {ACCEL_CAP_NATIVE_CURRENT_DEVICE, "native_current_device"},
      {ACCEL_CAP_FORK_SAFE, "fork_safe"},
      {ACCEL_CAP_TIMING_EVENTS, "timing_events"},
      {ACCEL_CAP_HOST_FUNCTIONS, "host_functions"},
      {ACCEL_CAP_STREAM_PRIORITIES, "stream_priorities"},
      {ACCEL_CAP_DISCOVERY_FORK_SAFE, "discovery_fork_safe"},
      {ACCEL_CAP_CROSS_DEVICE_WAIT, "cross_device_wait"},
      {ACCEL_CAP_NATIVE_HANDLES, "native_handles"},
      {ACCEL_CAP_HOST_MEMORY, "host_memory"},
      {ACCEL_CAP_PEER_COPY, "peer_copy"},
      {ACCEL_CAP_DEVICE_ATTRIBUTES, "device_attributes"},
      {ACCEL_CAP_MODULES, "modules"},
  };
  std::vector<std::string> words;
  uint32_t known = 0;
  for (const auto& [bit, word] : kWords) {
    known |= bit;
    if ((caps & bit) != 0) words.emplace_back(word);
  }
  if ((caps & ~known) != 0) words.push_back(fmt::format("unknown_0x{:x}", caps & ~known));
  return words;
}

std::string uuid_string(const uint8_t uuid[16]) {
  std::string s;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", uuid[i]);
  }
  return s;
}

std::string gib_string(uint64_t bytes) {
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string display_name(const std::string& name) { return name.empty() ? "(unnamed)" : name; }

std::string runtime_version_text(const BackendEntry& e) {
  if (!e.runtime_version.empty()) return e.runtime_version;
  if (e.status != "available" && e.status != "no_devices") return "-";
  // Plugin ABI 1.0 has no runtime_version member (accel_plugin.h changelog).
  if (e.abi_major == 1 && e.abi_minor == 0) return "unknown (plugin ABI 1.0)";
  return "unknown";
}

nlohmann::json runtime_version_json(const BackendEntry& e) {
  return e.runtime_version.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.runtime_version);
}

nlohmann::json current_accelerator_json() {
  const char* cur = accel_current_accelerator();
  return cur != nullptr ? nlohmann::json(cur) : nlohmann::json(nullptr);
}

nlohmann::json to_json(const BackendEntry& e) {
  return {
      {"name", e.name},
      {"path", e.path},
      {"status", e.status},
      {"reason", e.reason},
      {"abi_version", fmt::format("{}.{}", e.abi_major, e.abi_minor)},
      {"priority", e.priority},
      {"device_count", e.device_count},
      {"capabilities", capability_words(e.capabilities)},
      {"current", e.current},
      {"runtime_version", runtime_version_json(e)},
  };
}

nlohmann::json to_json(const DeviceEntry& d) {
  nlohmann::json j = {{"index", d.index}};
  if (d.props_ok) {
    const auto& p = d.props;
    j["name"] = p.name;
    j["vendor"] = p.vendor;
    j["total_memory"] = p.total_memory;
    j["total_memory_gib"] = static_cast<double>(p.total_memory) / (1024.0 * 1024.0 * 1024.0);
    j["uuid"] = p.has_uuid != 0 ? nlohmann::json(uuid_string(p.uuid)) : nlohmann::json(nullptr);
    j["pci_bus_id"] =
        p.pci_bus_id[0] != '\0' ? nlohmann::json(p.pci_bus_id) : nlohmann::json(nullptr);
    j["architecture"] = p.architecture;
    j["compute_units"] = p.compute_units;
    j["graphs"] = p.graphs;
  } else {
    j["error"] = d.props_error;
  }
  // accel_mem_get_info: {"free": bytes, "total": bytes}, null when unsupported.
  if (d.free_bytes && d.total_bytes)
    j["mem_info"] = {{"free", *d.free_bytes}, {"total", *d.total_bytes}};
  else
    j["mem_info"] = nullptr;
  if (!d.mem_info_error.empty()) j["mem_info_error"] = d.mem_info_error;
  // {"warp_size": 32, "clock_rate_khz": null (not supported), ...}; null when
  // the backend has no attributes.
  if (!d.attributes.empty()) {
    nlohmann::json attrs = nlohmann::json::object();
    for (size_t a = 0; a < d.attributes.size(); ++a) {
      const char* name = accel_device_attr_name(static_cast<accel_device_attr_t>(a));
      attrs[name] = d.attributes[a] ? nlohmann::json(*d.attributes[a]) : nlohmann::json(nullptr);
    }
    j["attributes"] = attrs;
  } else {
    j["attributes"] = nullptr;
  }
  if (!d.attributes_error.empty()) j["attributes_error"] = d.attributes_error;
  j["supported_dtypes"] = d.supported_dtypes ? nlohmann::json(dtype_names(*d.supported_dtypes))
                                             : nlohmann::json(nullptr);
  j["module_formats"] = d.module_formats ? nlohmann::json(module_format_names(*d.module_formats))
                                         : nlohmann::json(nullptr);
  return j;
}

std::string json_text(const nlohmann::json& value) {
  return value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string json_document(nlohmann::json doc) {
  doc["schema_version"] = kJsonSchemaVersion;
  return json_text(doc);
}

}  // namespace accelctl
