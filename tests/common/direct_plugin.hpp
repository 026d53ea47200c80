// direct_plugin.hpp - a plugin's vtable without the core: for benchmarks
// that compare accel with the plugin called directly, and for tests of what
// a plugin checks by itself. Header-only, test code only.
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "accel/accel_plugin.h"

namespace accel_test {

inline void quiet_log(const accel_host_services_t*, accel_log_level_t, const char*) {}
inline int log_off(const accel_host_services_t*, accel_log_level_t) { return 0; }
inline void ignore_error(const accel_host_services_t*, accel_status_t, const char*) {}
inline const char* plain_getenv(const accel_host_services_t*, const char* name) {
  return std::getenv(name);
}

// Host services that log nothing and read the environment with getenv;
// `set_error` receives the plugin's error details (dropped by default).
inline accel_host_services_t quiet_host(void (*set_error)(const accel_host_services_t*,
                                                          accel_status_t,
                                                          const char*) = ignore_error) {
  return {sizeof(accel_host_services_t),
          ACCEL_PLUGIN_ABI_MAJOR,
          ACCEL_PLUGIN_ABI_MINOR,
          nullptr,
          quiet_log,
          log_off,
          set_error,
          plain_getenv};
}

// A file name no other copy has had in this process or has now on this
// machine: dlopen returns the object already loaded under a name it is
// given again (even after that file was removed), so each copy needs its
// own. The pid and a counter keep names apart within and across processes;
// mkstemps creates the file, so no other process can be handed the same
// one. "" when no file could be made.
inline std::string unique_copy_name() {
  static std::atomic<unsigned> counter{0};
  std::string name = (std::filesystem::temp_directory_path() /
                      ("accel-private-plugin-" + std::to_string(getpid()) + "-" +
                       std::to_string(counter.fetch_add(1)) + "-XXXXXX.so"))
                         .string();
  const int fd = mkstemps(name.data(), 3);
  if (fd < 0) return "";
  close(fd);
  return name;
}

// The vtable of a private instance of the plugin file `path`, initialised
// and counted (device count in *count): the file is copied first, under a
// name of its own (unique_copy_name), because dlopen of the path the core
// loaded, or of a copy's name loaded before, would return that instance.
// Each call makes a new instance. The host services must outlive the
// plugin. nullptr when any step fails.
inline const accel_plugin_api_t* open_private_copy(const char* path,
                                                   const accel_host_services_t* host,
                                                   int32_t* count) {
  if (path == nullptr) return nullptr;
  const std::string copy = unique_copy_name();
  if (copy.empty()) return nullptr;
  std::error_code ec;
  std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) {
    std::filesystem::remove(copy, ec);
    return nullptr;
  }
  void* h = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::filesystem::remove(copy, ec);
  if (h == nullptr) return nullptr;
  auto entry = reinterpret_cast<accel_plugin_entry_fn>(dlsym(h, ACCEL_PLUGIN_ENTRY_NAME));
  const accel_plugin_api_t* a =
      entry != nullptr ? entry(ACCEL_PLUGIN_ABI_MAJOR, ACCEL_PLUGIN_ABI_MINOR, host) : nullptr;
  if (a == nullptr || (a->init != nullptr && a->init() != ACCEL_SUCCESS) ||
      a->device_count(count) != ACCEL_SUCCESS)
    return nullptr;
  return a;
}

}  // namespace accel_test
