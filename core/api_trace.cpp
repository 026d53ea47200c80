// accel_range_push/pop, accel_trace_flush, accel_trace_enabled.
//
// Ranges are forwarded to NVTX while the cuda backend is current: NVTX v3
// is header-only (it ships with the CUDA toolkit headers) and does nothing
// until a tool such as Nsight Systems injects itself through
// NVTX_INJECTION64_PATH, so accel links nothing for it.
#include <cstring>

#include "guard.hpp"
#include "runtime.hpp"
#include "trace.hpp"
#include "trace_buffer.hpp"

#if ACCEL_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

using namespace accel::core;

namespace {

thread_local uint32_t t_range_depth = 0;

// The current accelerator is chosen once, by discovery (which this call
// runs if nothing has yet).
[[maybe_unused]] bool cuda_current() {
  try {
    Backend* b = runtime().current;
    return b != nullptr && b->name == "cuda";
  } catch (...) {
    return false;
  }
}

void record_range(Ph ph, const char* name) {
  TraceRec r;
  r.ph = ph;
  r.pid = trace_pid();
  r.tid = trace_host_tid();
  r.ts = trace_now_ns() - trace_t0();
  copy_text(r.text, name);
  std::lock_guard lock(trace_mutex());
  trace_push_locked(r);
}

}  // namespace

extern "C" {

accel_status_t accel_range_push(const char* name) {
  if (name == nullptr) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "accel_range_push: name is NULL");
  }
  ++t_range_depth;
  if (trace_on()) record_range(Ph::begin, name);
#if ACCEL_HAVE_NVTX
  if (cuda_current()) nvtxRangePushA(name);
#endif
  return ACCEL_SUCCESS;
}

accel_status_t accel_range_pop(void) {
  if (t_range_depth == 0) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "accel_range_pop: no range is open on this thread (more pops than pushes)");
  }
  --t_range_depth;
  if (trace_on()) record_range(Ph::end, nullptr);
#if ACCEL_HAVE_NVTX
  if (cuda_current()) nvtxRangePop();
#endif
  return ACCEL_SUCCESS;
}

accel_status_t accel_trace_flush(void) {
  auto body = [] { return trace_flush(); };
  return guarded_body("accel_trace_flush", body);
}

int accel_trace_enabled(void) { return trace_on() ? 1 : 0; }

}  // extern "C"
