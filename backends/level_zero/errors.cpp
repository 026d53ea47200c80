// ze_result_t names, the accel status they map to, and the helpers that report
// failures and log through the host services.
#include "l0.hpp"

#include <cstdio>

namespace accel_ze {

const accel_host_services_t* g_host = nullptr;

namespace {

// The host table may be older (smaller) than ours: read no member past its
// struct_size.
bool host_has(size_t member_end) { return g_host != nullptr && g_host->struct_size >= member_end; }

}  // namespace

const char* ze_result_name(ze_result_t r) {
  switch (static_cast<uint32_t>(r)) {
    case 0x0: return "ZE_RESULT_SUCCESS";
    case 0x1: return "ZE_RESULT_NOT_READY";
    case 0x70000001: return "ZE_RESULT_ERROR_DEVICE_LOST";
    case 0x70000002: return "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY";
    case 0x70000003: return "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY";
    case 0x70000004: return "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE";
    case 0x70000005: return "ZE_RESULT_ERROR_MODULE_LINK_FAILURE";
    case 0x70000006: return "ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET";
    case 0x70000007: return "ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE";
    case 0x7ff00001: return "ZE_RESULT_EXP_ERROR_DEVICE_IS_NOT_VERTEX";
    case 0x7ff00002: return "ZE_RESULT_EXP_ERROR_VERTEX_IS_NOT_DEVICE";
    case 0x7ff00003: return "ZE_RESULT_EXP_ERROR_REMOTE_DEVICE";
    case 0x7ff00004: return "ZE_RESULT_EXP_ERROR_OPERANDS_INCOMPATIBLE";
    case 0x7ff00005: return "ZE_RESULT_EXP_RTAS_BUILD_RETRY";
    case 0x7ff00006: return "ZE_RESULT_EXP_RTAS_BUILD_DEFERRED";
    case 0x70010000: return "ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS";
    case 0x70010001: return "ZE_RESULT_ERROR_NOT_AVAILABLE";
    case 0x70020000: return "ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE";
    case 0x70020001: return "ZE_RESULT_WARNING_DROPPED_DATA";
    case 0x78000001: return "ZE_RESULT_ERROR_UNINITIALIZED";
    case 0x78000002: return "ZE_RESULT_ERROR_UNSUPPORTED_VERSION";
    case 0x78000003: return "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE";
    case 0x78000004: return "ZE_RESULT_ERROR_INVALID_ARGUMENT";
    case 0x78000005: return "ZE_RESULT_ERROR_INVALID_NULL_HANDLE";
    case 0x78000006: return "ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE";
    case 0x78000007: return "ZE_RESULT_ERROR_INVALID_NULL_POINTER";
    case 0x78000008: return "ZE_RESULT_ERROR_INVALID_SIZE";
    case 0x78000009: return "ZE_RESULT_ERROR_UNSUPPORTED_SIZE";
    case 0x7800000a: return "ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT";
    case 0x7800000b: return "ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT";
    case 0x7800000c: return "ZE_RESULT_ERROR_INVALID_ENUMERATION";
    case 0x7800000d: return "ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION";
    case 0x7800000e: return "ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT";
    case 0x7800000f: return "ZE_RESULT_ERROR_INVALID_NATIVE_BINARY";
    case 0x78000010: return "ZE_RESULT_ERROR_INVALID_GLOBAL_NAME";
    case 0x78000011: return "ZE_RESULT_ERROR_INVALID_KERNEL_NAME";
    case 0x78000012: return "ZE_RESULT_ERROR_INVALID_FUNCTION_NAME";
    case 0x78000013: return "ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION";
    case 0x78000014: return "ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION";
    case 0x78000015: return "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX";
    case 0x78000016: return "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE";
    case 0x78000017: return "ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE";
    case 0x78000018: return "ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED";
    case 0x78000019: return "ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE";
    case 0x7800001a: return "ZE_RESULT_ERROR_OVERLAPPING_REGIONS";
    case 0x7800001b: return "ZE_RESULT_WARNING_ACTION_REQUIRED";
    case 0x7800001c: return "ZE_RESULT_ERROR_INVALID_KERNEL_HANDLE";
    case 0x7ffffffe: return "ZE_RESULT_ERROR_UNKNOWN";
    default: return "ZE_RESULT_UNKNOWN";
  }
}

accel_status_t status_of(ze_result_t r) {
  switch (r) {
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY:
      return ACCEL_ERROR_OUT_OF_MEMORY;
    default:
      return ACCEL_ERROR_BACKEND_FAILURE;
  }
}



bool log_on(accel_log_level_t level) {
  if (!host_has(offsetof(accel_host_services_t, log_enabled) + sizeof(void*)) ||
      g_host->log_enabled == nullptr)
    return host_has(offsetof(accel_host_services_t, log) + sizeof(void*)) && g_host->log;
  return g_host->log_enabled(g_host, level) != 0;
}

void log_msg(accel_log_level_t level, const char* fmt, ...) {
  if (!host_has(offsetof(accel_host_services_t, log) + sizeof(void*)) || g_host->log == nullptr)
    return;
  if (!log_on(level)) return;
  try {
    va_list ap;
    va_start(ap, fmt);
    std::string s = vformat(fmt, ap);
    va_end(ap);
    g_host->log(g_host, level, s.c_str());
  } catch (...) {
    // Logging never fails an operation.
  }
}

const char* host_env(const char* name) {
  if (!host_has(offsetof(accel_host_services_t, get_env) + sizeof(void*)) ||
      g_host->get_env == nullptr)
    return nullptr;
  return g_host->get_env(g_host, name);
}

static void set_error_text(accel_status_t status, const std::string& msg) {
  if (host_has(offsetof(accel_host_services_t, set_error) + sizeof(void*)) && g_host->set_error)
    g_host->set_error(g_host, status, msg.c_str());
}

accel_status_t fail(accel_status_t status, const char* fmt, ...) {
  try {
    va_list ap;
    va_start(ap, fmt);
    std::string s = vformat(fmt, ap);
    va_end(ap);
    set_error_text(status, s);
  } catch (...) {
    set_error_text(status, "out of host memory while describing a failure");
  }
  return status;
}

std::string describe_failure(const char* call, ze_result_t r, ze_driver_handle_t driver) {
  std::string msg = format("%s failed: %s (0x%08x)", call, ze_result_name(r),
                           static_cast<unsigned>(r));
  if (driver != nullptr && ze.zeDriverGetLastErrorDescription != nullptr) {
    const char* text = nullptr;
    if (ze.zeDriverGetLastErrorDescription(driver, &text) == ZE_RESULT_SUCCESS &&
        text != nullptr && *text != '\0') {
      msg += ": ";
      msg += text;
    }
  }
  return msg;
}

accel_status_t ze_fail(const char* call, ze_result_t r, ze_driver_handle_t driver,
                       const char* context_fmt, ...) {
  accel_status_t st = status_of(r);
  try {
    std::string msg = describe_failure(call, r, driver);
    if (context_fmt != nullptr) {
      va_list ap;
      va_start(ap, context_fmt);
      msg += " (" + vformat(context_fmt, ap) + ")";
      va_end(ap);
    }
    log_msg(ACCEL_LOG_DEBUG, "%s", msg.c_str());
    set_error_text(st, msg);
  } catch (...) {
    set_error_text(st, call);
  }
  return st;
}

}  // namespace accel_ze
