// ze_result_t names and descriptions, the accel status each maps to, and the
// one shape of a Level Zero failure (vendor_fail).
#include "backend.hpp"

namespace accel::level_zero {

namespace {

// By value rather than enumerator: some results are newer than the 1.8
// headers this is built against.
constexpr accel::plugin::VendorCode kResults[] = {
    {0x0, "ZE_RESULT_SUCCESS", "success"},
    {0x1, "ZE_RESULT_NOT_READY", "the synchronization object is not signalled yet"},
    {0x70000001, "ZE_RESULT_ERROR_DEVICE_LOST",
     "the device hung, was reset or removed, or its driver was updated"},
    {0x70000002, "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY", "not enough host memory"},
    {0x70000003, "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", "not enough device memory"},
    {0x70000004, "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE", "building the module failed"},
    {0x70000005, "ZE_RESULT_ERROR_MODULE_LINK_FAILURE", "linking the modules failed"},
    {0x70000006, "ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET", "the device needs a reset"},
    {0x70000007, "ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE", "the device is in a low-power state"},
    {0x7ff00001, "ZE_RESULT_EXP_ERROR_DEVICE_IS_NOT_VERTEX", "the device is not a fabric vertex"},
    {0x7ff00002, "ZE_RESULT_EXP_ERROR_VERTEX_IS_NOT_DEVICE", "the fabric vertex is not a device"},
    {0x7ff00003, "ZE_RESULT_EXP_ERROR_REMOTE_DEVICE", "the fabric vertex is a remote device"},
    {0x7ff00004, "ZE_RESULT_EXP_ERROR_OPERANDS_INCOMPATIBLE", "the operands are incompatible"},
    {0x7ff00005, "ZE_RESULT_EXP_RTAS_BUILD_RETRY",
     "the acceleration structure build must be retried"},
    {0x7ff00006, "ZE_RESULT_EXP_RTAS_BUILD_DEFERRED",
     "the acceleration structure build was deferred"},
    {0x70010000, "ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS", "permission denied"},
    {0x70010001, "ZE_RESULT_ERROR_NOT_AVAILABLE", "the resource is in use by someone else"},
    {0x70020000, "ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE", "a required dependency is missing"},
    {0x70020001, "ZE_RESULT_WARNING_DROPPED_DATA", "data may have been dropped"},
    {0x78000001, "ZE_RESULT_ERROR_UNINITIALIZED", "the driver is not initialized"},
    {0x78000002, "ZE_RESULT_ERROR_UNSUPPORTED_VERSION", "unsupported version"},
    {0x78000003, "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE", "unsupported feature"},
    {0x78000004, "ZE_RESULT_ERROR_INVALID_ARGUMENT", "invalid argument"},
    {0x78000005, "ZE_RESULT_ERROR_INVALID_NULL_HANDLE", "invalid handle"},
    {0x78000006, "ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE",
     "the object is still in use by the device"},
    {0x78000007, "ZE_RESULT_ERROR_INVALID_NULL_POINTER", "a pointer argument is NULL"},
    {0x78000008, "ZE_RESULT_ERROR_INVALID_SIZE", "invalid size"},
    {0x78000009, "ZE_RESULT_ERROR_UNSUPPORTED_SIZE", "the device does not support this size"},
    {0x7800000a, "ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT",
     "the device does not support this alignment"},
    {0x7800000b, "ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT",
     "the synchronization object is in an invalid state"},
    {0x7800000c, "ZE_RESULT_ERROR_INVALID_ENUMERATION", "invalid enumerator"},
    {0x7800000d, "ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION",
     "the device does not support this enumerator"},
    {0x7800000e, "ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT",
     "the device does not support this image format"},
    {0x7800000f, "ZE_RESULT_ERROR_INVALID_NATIVE_BINARY",
     "the device does not support this native binary"},
    {0x78000010, "ZE_RESULT_ERROR_INVALID_GLOBAL_NAME", "no such global variable in the module"},
    {0x78000011, "ZE_RESULT_ERROR_INVALID_KERNEL_NAME", "no such kernel in the module"},
    {0x78000012, "ZE_RESULT_ERROR_INVALID_FUNCTION_NAME", "no such function in the module"},
    {0x78000013, "ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION", "invalid group size dimension"},
    {0x78000014, "ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION",
     "invalid global width dimension"},
    {0x78000015, "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX", "invalid kernel argument index"},
    {0x78000016, "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE", "invalid kernel argument size"},
    {0x78000017, "ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE",
     "invalid kernel attribute value"},
    {0x78000018, "ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED", "the module must be linked first"},
    {0x78000019, "ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE",
     "the command list type does not match the queue"},
    {0x7800001a, "ZE_RESULT_ERROR_OVERLAPPING_REGIONS", "the copy regions overlap"},
    {0x7800001b, "ZE_RESULT_WARNING_ACTION_REQUIRED",
     "an action is required to complete the operation"},
    {0x7800001c, "ZE_RESULT_ERROR_INVALID_KERNEL_HANDLE", "invalid kernel handle"},
    {0x7ffffffe, "ZE_RESULT_ERROR_UNKNOWN", "unknown or internal error"},
};

const accel::plugin::VendorCode* find_result(ze_result_t r) noexcept {
  return accel::plugin::find_vendor_code(kResults, static_cast<uint32_t>(r));
}

accel_status_t status_of(ze_result_t r) noexcept {
  switch (r) {
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY:
      return ACCEL_ERROR_OUT_OF_MEMORY;
    case ZE_RESULT_NOT_READY:
      return ACCEL_ERROR_NOT_READY;
    default:
      return ACCEL_ERROR_BACKEND_FAILURE;
  }
}

// The driver's own description where there is one (spec 1.6+; the Debian 1.8
// loader lacks it): more specific than the result's.
const char* result_text(ze_result_t code, ze_driver_handle_t driver) noexcept {
  if (driver != nullptr && ze.zeDriverGetLastErrorDescription != nullptr) {
    const char* described = nullptr;
    if (ze.zeDriverGetLastErrorDescription(driver, &described) == ZE_RESULT_SUCCESS &&
        described != nullptr && *described != '\0')
      return described;
  }
  const accel::plugin::VendorCode* info = find_result(code);
  return info != nullptr ? info->text : nullptr;
}

}  // namespace

const char* ze_result_name(ze_result_t r) noexcept {
  const accel::plugin::VendorCode* info = find_result(r);
  return info != nullptr ? info->name : "ZE_RESULT_UNKNOWN";
}

std::string vendor_failure(const char* call, ze_result_t code, ze_driver_handle_t driver) {
  return accel::plugin::vendor_failure_message(call, ze_result_name(code), code,
                                               result_text(code, driver));
}

accel_status_t vendor_fail(const char* call, ze_result_t code, ze_driver_handle_t driver) noexcept {
  const char* text = result_text(code, driver);
  accel::plugin::log(ACCEL_LOG_DEBUG, "%s failed: %s (%lld): %s", call, ze_result_name(code),
                     static_cast<long long>(code), text != nullptr ? text : "no description");
  return accel::plugin::vendor_fail(status_of(code), call, ze_result_name(code), code, text);
}

}  // namespace accel::level_zero
