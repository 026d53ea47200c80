// Device attributes and torch's device capability (ABI 1.1).
#include <algorithm>
#include <cstring>

#include "checks.hpp"
#include "guard.hpp"
#include "host_services.hpp"
#include "plugin_groups.hpp"

using namespace accel::core;

namespace {

#define ACCEL_ATTR_NAME_(name, value, text, unit) text,
constexpr const char* kAttrNames[] = {ACCEL_DEVICE_ATTR_MAP(ACCEL_ATTR_NAME_)};
#undef ACCEL_ATTR_NAME_
static_assert(std::size(kAttrNames) == ACCEL_DEVICE_ATTR_COUNT,
              "ACCEL_DEVICE_ATTR_COUNT must equal the number of entries of ACCEL_DEVICE_ATTR_MAP");

// Every dtype accel.h names: what a device supports unless its backend
// says otherwise (torch's DeviceCapability starts with every bit set).
constexpr uint64_t kAllDtypes =
    ACCEL_DTYPE_BIT(ACCEL_DTYPE_UINT8) | ACCEL_DTYPE_BIT(ACCEL_DTYPE_INT8) |
    ACCEL_DTYPE_BIT(ACCEL_DTYPE_INT16) | ACCEL_DTYPE_BIT(ACCEL_DTYPE_INT32) |
    ACCEL_DTYPE_BIT(ACCEL_DTYPE_INT64) | ACCEL_DTYPE_BIT(ACCEL_DTYPE_FLOAT16) |
    ACCEL_DTYPE_BIT(ACCEL_DTYPE_FLOAT32) | ACCEL_DTYPE_BIT(ACCEL_DTYPE_FLOAT64) |
    ACCEL_DTYPE_BIT(ACCEL_DTYPE_COMPLEX32) | ACCEL_DTYPE_BIT(ACCEL_DTYPE_COMPLEX64) |
    ACCEL_DTYPE_BIT(ACCEL_DTYPE_COMPLEX128) | ACCEL_DTYPE_BIT(ACCEL_DTYPE_BOOL) |
    ACCEL_DTYPE_BIT(ACCEL_DTYPE_BFLOAT16);

}  // namespace

extern "C" {

const char* accel_device_attr_name(accel_device_attr_t attr) {
  auto i = static_cast<unsigned>(attr);
  return i < ACCEL_DEVICE_ATTR_COUNT ? kAttrNames[i] : nullptr;
}

accel_status_t accel_device_get_attribute(int32_t device, accel_device_attr_t attr,
                                          int64_t* value) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (value == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: value is NULL", fn);
    if (static_cast<unsigned>(attr) >= ACCEL_DEVICE_ATTR_COUNT) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: attr {} is outside [0, {})", fn,
                   static_cast<int>(attr), ACCEL_DEVICE_ATTR_COUNT);
    }
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    if (auto st = require_group(fn, *b, PluginGroup::device_attributes); st != ACCEL_SUCCESS)
      return st;
    int64_t v = 0;
    auto st = call_plugin(*b, "device_get_attribute",
                          [&] { return b->api.device_get_attribute(target, attr, &v); });
    if (st != ACCEL_SUCCESS) return st;
    *value = v;
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_get_device_capability(int32_t device, accel_device_capability_t* capability) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st = check_sized_struct(fn, capability, "capability", "accel_device_capability_t");
        st != ACCEL_SUCCESS)
      return st;
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    accel_device_capability_t full{};
    full.struct_size = sizeof full;
    full.supported_dtypes = kAllDtypes;
    if ((b->capabilities & ACCEL_PLUGIN_CAP_DEVICE_ATTRIBUTES) != 0) {
      auto st = call_plugin(*b, "get_device_capability",
                            [&] { return b->api.get_device_capability(target, &full); });
      if (st != ACCEL_SUCCESS) return st;
      full.supported_dtypes &= kAllDtypes;  // a plugin only clears bits
    }
    copy_sized_struct(capability, full);
    return ACCEL_SUCCESS;
  });
}

}  // extern "C"
