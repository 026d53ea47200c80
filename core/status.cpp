// Status names and messages (libuv's uv_err_name / uv_strerror pair).
#include "accel/accel.h"
#include "enum_value.hpp"

namespace {

struct StatusText {
  const char* name;
  const char* message;
};

#define ACCEL_STATUS_TEXT_(name, value, message) {"ACCEL_" #name, message},
constexpr StatusText kStatus[] = {ACCEL_STATUS_MAP(ACCEL_STATUS_TEXT_)};
#undef ACCEL_STATUS_TEXT_

// The tables are indexed by value: the map must count ACCEL_STATUS_COUNT
// entries with the values 0, 1, ... in order.
static_assert(sizeof kStatus / sizeof kStatus[0] == ACCEL_STATUS_COUNT,
              "ACCEL_STATUS_COUNT must equal the number of entries of ACCEL_STATUS_MAP");
#define ACCEL_STATUS_VALUE_(name, value, message) value,
constexpr int kStatusValue[] = {ACCEL_STATUS_MAP(ACCEL_STATUS_VALUE_)};
#undef ACCEL_STATUS_VALUE_
constexpr bool values_in_order() {
  for (int i = 0; i < ACCEL_STATUS_COUNT; ++i)
    if (kStatusValue[i] != i) return false;
  return true;
}
static_assert(values_in_order(), "ACCEL_STATUS_MAP must list the values 0, 1, ... in order");

constexpr const char* kBackendStatus[] = {"available", "no_devices", "unavailable", "rejected",
                                          "duplicate"};

}  // namespace

extern "C" {

const char* accel_status_name(accel_status_t status) {
  auto i = static_cast<unsigned>(accel::core::enum_value(status));
  return i < ACCEL_STATUS_COUNT ? kStatus[i].name : "ACCEL_STATUS_UNKNOWN";
}

const char* accel_status_message(accel_status_t status) {
  auto i = static_cast<unsigned>(accel::core::enum_value(status));
  return i < ACCEL_STATUS_COUNT ? kStatus[i].message : "unknown status";
}

const char* accel_backend_status_name(accel_backend_status_t status) {
  auto i = static_cast<unsigned>(accel::core::enum_value(status));
  return i < sizeof kBackendStatus / sizeof kBackendStatus[0] ? kBackendStatus[i] : "unknown";
}

const char* accel_version(void) { return ACCEL_VERSION_STRING; }

}  // extern "C"
