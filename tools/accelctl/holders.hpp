// RAII holders for accel handles in accelctl's checks and benchmarks:
// released on every path (an early return, an exception), a stream drained
// before it is destroyed.
#pragma once

#include <accel/accel.h>

namespace accelctl {

struct Stream {
  accel_stream_t s = nullptr;
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (s != nullptr) {
      accel_stream_synchronize(s);
      accel_stream_destroy(s);
    }
  }
};

struct Event {
  accel_event_t e = nullptr;
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (e != nullptr) accel_event_destroy(e);
  }
};

}  // namespace accelctl
