// accel.h and accel_plugin.h from C++, built with -Wall -Wextra -Werror
// -pedantic: the headers must compile warning-free as C++ too, with C linkage.
// accel_plugin_helpers.hpp too, here in the project's C++ (plugin_helpers_test
// uses it as C++17).
#include <accel/accel.h>
#include <accel/accel_plugin.h>
#include <accel/accel_plugin_helpers.hpp>

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(std::is_same<decltype(&accel_device_count), int32_t (*)()>::value,
              "accel_device_count signature");
static_assert(ACCEL_PLUGIN_API_V1_SIZE <= sizeof(accel_plugin_api_t), "V1 size");
static_assert(offsetof(accel_device_properties_t, struct_size) == 0, "struct_size first");
static_assert(offsetof(accel_memory_stats_t, struct_size) == 0, "struct_size first");
static_assert(offsetof(accel_backend_info_t, struct_size) == 0, "struct_size first");
static_assert(offsetof(accel_plugin_api_t, struct_size) == 0, "struct_size first");
static_assert(offsetof(accel_host_services_t, struct_size) == 0, "struct_size first");

int main() {
  // Needs no backend: these never touch a device.
  const char* v = accel_version();
  const char* n = accel_status_name(ACCEL_SUCCESS);
  if (v == nullptr || std::strlen(v) == 0 || std::strcmp(n, "ACCEL_SUCCESS") != 0) {
    std::printf("0 passed, 1 failed\n");
    return 1;
  }
  std::printf("1 passed, 0 failed\n");
  return 0;
}
