// report.cpp - the read-only commands: summary (no subcommand), backends, devices.
#include <accel/accel.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.hpp"
#include "info.hpp"

namespace accelctl {
namespace {

std::string join(const std::vector<std::string>& words, const char* sep) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += sep;
    out += w;
  }
  return out;
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

size_t name_width(const std::vector<BackendEntry>& entries, size_t minimum) {
  size_t w = minimum;
  for (const auto& e : entries) w = std::max(w, display_name(e.name).size());
  return w;
}

void print_current_header() {
  const char* cur = accel_current_accelerator();
  if (cur != nullptr) {
    const int32_t n = accel_device_count();
    fmt::print("Current accelerator: {} ({} device{})\n", cur, n, n == 1 ? "" : "s");
  } else {
    fmt::print("Current accelerator: none\n");
  }
  fmt::print("Selection: {}\n", accel_selection_reason());
}

nlohmann::json backends_json(const std::vector<BackendEntry>& entries) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& e : entries) list.push_back(to_json(e));
  return list;
}

}  // namespace

int run_summary(bool json) {
  const auto entries = gather_backends();
  if (json) {
    nlohmann::json j = {
        {"version", accel_version()},
        {"current_accelerator", current_accelerator_json()},
        {"selection_reason", accel_selection_reason()},
        {"device_count", accel_device_count()},
        {"backends", backends_json(entries)},
    };
    fmt::print("{}\n", json_document(std::move(j)));
    return 0;
  }
  fmt::print("accel {}\n", accel_version());
  print_current_header();
  if (entries.empty()) {
    fmt::print(
        "Backends: none found (the Selection line names the plugin folders searched; "
        "install plugins there or set ACCEL_PLUGIN_PATH)\n");
    return 0;
  }
  fmt::print("Backends ({} candidate{}):\n", entries.size(), entries.size() == 1 ? "" : "s");
  const size_t nw = name_width(entries, 4);
  fmt::print("    {:<{}}  {:<11}  {:>7}  {}\n", "NAME", nw, "STATUS", "DEVICES", "REASON");
  for (const auto& e : entries) {
    fmt::print("  {} {:<{}}  {:<11}  {:>7}  {}\n", e.current ? '*' : ' ', display_name(e.name), nw,
               e.status, e.device_count, or_dash(e.reason));
  }
  return 0;
}

int run_backends(bool json) {
  const auto entries = gather_backends();
  if (json) {
    nlohmann::json j = {
        {"current_accelerator", current_accelerator_json()},
        {"selection_reason", accel_selection_reason()},
        {"backends", backends_json(entries)},
    };
    fmt::print("{}\n", json_document(std::move(j)));
    return 0;
  }
  print_current_header();
  if (entries.empty()) {
    fmt::print(
        "No backend candidates found (the Selection line names the plugin folders "
        "searched; install plugins there or set ACCEL_PLUGIN_PATH).\n");
    return 0;
  }
  fmt::print("\n");
  const size_t nw = name_width(entries, 4);
  fmt::print("    {:<{}}  {:<11}  {:>7}  {:>8}  {:<5}  {}\n", "NAME", nw, "STATUS", "DEVICES",
             "PRIORITY", "ABI", "CAPABILITIES");
  for (const auto& e : entries) {
    const std::string caps = join(capability_words(e.capabilities), ",");
    fmt::print("  {} {:<{}}  {:<11}  {:>7}  {:>8}  {:<5}  {}\n", e.current ? '*' : ' ',
               display_name(e.name), nw, e.status, e.device_count, e.priority,
               fmt::format("{}.{}", e.abi_major, e.abi_minor), or_dash(caps));
    fmt::print("      path:    {}\n", or_dash(e.path));
    fmt::print("      reason:  {}\n", or_dash(e.reason));
    fmt::print("      runtime: {}\n", runtime_version_text(e));
  }
  fmt::print("\n(* = current accelerator)\n");
  return 0;
}

int run_devices(bool json) {
  const int32_t count = accel_device_count();
  std::vector<DeviceEntry> devices;
  bool ok = true;
  for (int32_t i = 0; i < count; ++i) {
    devices.push_back(gather_device(i));
    ok = ok && devices.back().ok();
  }
  // After the devices: their queries initialised the backend, and some
  // vendors (hip) tell their version only from an initialised runtime.
  const auto entries = gather_backends();
  const BackendEntry* current = find_current(entries);
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& d : devices) list.push_back(to_json(d));
    nlohmann::json j = {
        {"current_accelerator", current_accelerator_json()},
        {"selection_reason", accel_selection_reason()},
        {"device_count", count},
        {"devices", list},
        {"runtime_version",
         current != nullptr ? runtime_version_json(*current) : nlohmann::json(nullptr)},
    };
    fmt::print("{}\n", json_document(std::move(j)));
    return ok ? 0 : 1;
  }
  print_current_header();
  if (current != nullptr) fmt::print("Runtime: {}\n", runtime_version_text(*current));
  if (devices.empty()) fmt::print("No devices.\n");
  for (const auto& d : devices) {
    fmt::print("\n");
    if (!d.props_ok) {
      fmt::print("Device {}: properties unavailable\n  error:          {}\n", d.index,
                 d.props_error);
    } else {
      const auto& p = d.props;
      fmt::print("Device {}: {}\n", d.index, p.name);
      fmt::print("  vendor:         {}\n", or_dash(p.vendor));
      fmt::print("  total memory:   {} bytes ({})\n", p.total_memory, gib_string(p.total_memory));
      fmt::print("  uuid:           {}\n", p.has_uuid != 0 ? uuid_string(p.uuid) : "-");
      fmt::print("  pci bus id:     {}\n", or_dash(p.pci_bus_id));
      fmt::print("  architecture:   {}\n", or_dash(p.architecture));
      fmt::print("  compute units:  {}\n",
                 p.compute_units > 0 ? std::to_string(p.compute_units) : "unknown");
      fmt::print("  graphs:         {}\n", or_dash(p.graphs));
    }
    if (d.free_bytes && d.total_bytes) {
      fmt::print("  memory info:    {} free of {} bytes ({} of {})\n", *d.free_bytes,
                 *d.total_bytes, gib_string(*d.free_bytes), gib_string(*d.total_bytes));
    } else if (!d.mem_info_error.empty()) {
      fmt::print("  memory info:    error: {}\n", d.mem_info_error);
    } else {
      fmt::print("  memory info:    not supported by the backend\n");
    }
    if (d.supported_dtypes)
      fmt::print("  dtypes:         {}\n", fmt::join(dtype_names(*d.supported_dtypes), " "));
    if (d.module_formats) {
      fmt::print("  kernel formats: {}\n",
                 *d.module_formats != 0 ? fmt::format("{}", fmt::join(module_format_names(
                                                                          *d.module_formats),
                                                                      " "))
                                        : std::string("none (the backend has no modules)"));
    }
    if (!d.attributes_error.empty()) {
      fmt::print("  attributes:     error: {}\n", d.attributes_error);
    } else if (d.attributes.empty()) {
      fmt::print("  attributes:     not supported by the backend\n");
    } else {
      fmt::print("  attributes:\n");
      for (size_t a = 0; a < d.attributes.size(); ++a)
        fmt::print("    {:<28}{}\n", accel_device_attr_name(static_cast<accel_device_attr_t>(a)),
                   d.attributes[a] ? std::to_string(*d.attributes[a]) : "-");
    }
  }
  return ok ? 0 : 1;
}

}  // namespace accelctl
