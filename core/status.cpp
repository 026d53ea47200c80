// Status names and messages (libuv's uv_err_name / uv_strerror pair).
#include "accel/accel.h"

namespace {

struct StatusText {
  const char* name;
  const char* message;
};

constexpr StatusText kStatus[ACCEL_STATUS_COUNT] = {
    {"ACCEL_SUCCESS", "success"},
    {"ACCEL_ERROR_INVALID_ARGUMENT", "invalid argument"},
    {"ACCEL_ERROR_INVALID_DEVICE", "invalid device index"},
    {"ACCEL_ERROR_NO_ACCELERATOR", "no accelerator is available"},
    {"ACCEL_ERROR_NOT_SUPPORTED", "operation not supported by the backend"},
    {"ACCEL_ERROR_NOT_READY", "work has not completed yet"},
    {"ACCEL_ERROR_OUT_OF_MEMORY", "out of memory"},
    {"ACCEL_ERROR_EVENT_NOT_RECORDED", "event has not been recorded"},
    {"ACCEL_ERROR_EVENT_NO_TIMING", "event was created without timing"},
    {"ACCEL_ERROR_DEVICE_MISMATCH", "object belongs to another device or backend"},
    {"ACCEL_ERROR_FORKED", "backend was initialised before fork() and is not fork-safe"},
    {"ACCEL_ERROR_BACKEND_UNAVAILABLE", "vendor library or driver is unavailable"},
    {"ACCEL_ERROR_BACKEND_FAILURE", "the vendor runtime reported an error"},
    {"ACCEL_ERROR_OUT_OF_RANGE", "index out of range"},
    {"ACCEL_ERROR_INTERNAL", "internal error"},
    {"ACCEL_ERROR_REENTRANT", "called from a plugin callback while the core holds a lock"},
};

constexpr const char* kBackendStatus[] = {"available", "no_devices", "unavailable", "rejected",
                                          "duplicate"};

}  // namespace

extern "C" {

const char* accel_status_name(accel_status_t status) {
  auto i = static_cast<unsigned>(status);
  return i < ACCEL_STATUS_COUNT ? kStatus[i].name : "ACCEL_STATUS_UNKNOWN";
}

const char* accel_status_message(accel_status_t status) {
  auto i = static_cast<unsigned>(status);
  return i < ACCEL_STATUS_COUNT ? kStatus[i].message : "unknown status";
}

const char* accel_backend_status_name(accel_backend_status_t status) {
  auto i = static_cast<unsigned>(status);
  return i < sizeof kBackendStatus / sizeof kBackendStatus[0] ? kBackendStatus[i] : "unknown";
}

const char* accel_version(void) { return ACCEL_VERSION_STRING; }

}  // extern "C"
