// The stream sanitizer (ACCEL_STREAM_SANITIZER): records which streams read
// and write each allocation accel knows and the events, waits and
// synchronizes that order them, and reports unordered accesses from two
// streams and frees while another stream may still use a block. The design
// follows torch's CUDA sanitizer (torch.cuda._sanitizer): per-stream vector
// clocks, event records and waits as happens-before edges, per-allocation
// access records.
#pragma once

#include <atomic>
#include <cstddef>

#include "accel/accel.h"

namespace accel::core::sanitizer {

enum class Mode : int { unknown = -1, off = 0, report = 1, abort = 2 };

// The mode from ACCEL_STREAM_SANITIZER, read once ("1" reports and
// continues, "abort" aborts after the report, "0" or unset is off; another
// value is warned about and leaves it off).
extern std::atomic<int> g_mode;
Mode read_mode();

// The hooks' only cost when off: one relaxed load.
inline bool on() {
  const int m = g_mode.load(std::memory_order_relaxed);
  if (m == static_cast<int>(Mode::off)) [[likely]]
    return false;
  return m > 0 || read_mode() != Mode::off;
}

// The access a call makes: `fn` is the public entry point, `caller` its
// return address, `arg` the kernel argument index or -1.
struct Call {
  const char* fn;
  const void* caller;
  const char* kernel = nullptr;
  int arg = -1;
};

// Each takes the sanitizer's lock briefly; none waits for device work.
void on_alloc(const void* ptr, const accel_stream_s* stream);
void on_read(const void* ptr, const accel_stream_s* stream, const Call& call);
void on_write(const void* ptr, const accel_stream_s* stream, const Call& call);
// A free ordered on `stream` (nullptr: the stream the block was allocated on).
void on_free(const void* ptr, const accel_stream_s* stream, const Call& call);
void on_record_stream(const void* ptr, const accel_stream_s* stream);
void on_event_record(const accel_event_s* event, const accel_stream_s* stream);
void on_stream_wait(const accel_stream_s* stream, const accel_event_s* event);
void on_event_synchronize(const accel_event_s* event);
void on_stream_synchronize(const accel_stream_s* stream);
void on_device_synchronize();

// Fork handlers (fork.cpp): held across fork, released in both processes.
void lock_for_fork();
void unlock_after_fork();

}  // namespace accel::core::sanitizer
