// What the backends' interop scenarios share: the native handles of accel's
// objects, each call REQUIREd to succeed (Catch2).
#pragma once

#include <accel/accel.h>

#include <catch2/catch.hpp>

#include <cstring>

namespace backend_test {

// A zeroed accel_native_handle_t whose struct_size is set.
inline accel_native_handle_t empty_native() {
  accel_native_handle_t h;
  std::memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  return h;
}

inline accel_native_handle_t native_of(accel_stream_t s) {
  accel_native_handle_t h = empty_native();
  const accel_status_t st = accel_stream_native_handle(s, &h);
  INFO("accel_stream_native_handle: " << accel_status_name(st) << ": " << accel_last_error());
  REQUIRE(st == ACCEL_SUCCESS);
  return h;
}

inline accel_native_handle_t device_native_of(int32_t device) {
  accel_native_handle_t h = empty_native();
  const accel_status_t st = accel_device_native_handle(device, &h);
  INFO("accel_device_native_handle: " << accel_status_name(st) << ": " << accel_last_error());
  REQUIRE(st == ACCEL_SUCCESS);
  return h;
}

}  // namespace backend_test
