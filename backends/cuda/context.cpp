#include "context.hpp"

#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "common.hpp"
#include "count.hpp"
#include "driver.hpp"
#include "errors.hpp"

namespace accel_cuda {

namespace {

struct DeviceSlot {
  CUdevice dev = 0;
  std::once_flag once;
  std::atomic<CUcontext> ctx{nullptr};
  CUresult retain_rc = CUDA_SUCCESS;
};

int32_t g_count = 0;
DeviceSlot* g_slots = nullptr;  // never freed: live until exit, like the plugin

// The accel device this thread last chose (or 0): a NULL current context
// stands for it. See CtxScope.
thread_local int32_t t_device = 0;

}  // namespace

accel_status_t init_devices(int32_t expected_count) {
  Driver& d = driver();
  // A fork() child of a process that ran cuInit never gets here: the core
  // refuses the backend there (the plugin does not declare
  // ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE after counting with cuInit).
  if (counted_with_cuinit_in() == 0) {
    CUresult rc = d.cuInit(0);
    if (rc == CUDA_ERROR_STUB_LIBRARY) {
      return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                  fmt::format("cuInit: '{}' is the CUDA toolkit's stub library: no NVIDIA "
                              "driver is installed",
                              d.path));
    }
    if (rc != CUDA_SUCCESS) return cuda_fail("cuInit", rc);
  }
  int n = 0;
  ACCEL_CU_TRY(cuDeviceGetCount, (&n));
  if (n < expected_count) {
    return fail(ACCEL_ERROR_BACKEND_FAILURE,
                fmt::format("{} counted {} device(s) but the driver (cuDeviceGetCount) reports "
                            "{}; check CUDA_VISIBLE_DEVICES and the driver installation",
                            count_source(), expected_count, n));
  }
  if (n > expected_count) {
    log(ACCEL_LOG_WARN, fmt::format("the driver reports {} devices, {} counted {}; using the "
                                    "first {}",
                                    n, count_source(), expected_count, expected_count));
  }
  g_slots = new DeviceSlot[static_cast<size_t>(expected_count)];
  for (int32_t i = 0; i < expected_count; ++i) {
    ACCEL_CU_TRY(cuDeviceGet, (&g_slots[i].dev, i));
  }
  g_count = expected_count;
  return ACCEL_SUCCESS;
}

int32_t device_count() { return g_count; }
CUdevice cu_device(int32_t device) { return g_slots[device].dev; }

accel_status_t primary_context(int32_t device, CUcontext* ctx) {
  DeviceSlot& s = g_slots[device];
  CUcontext c = s.ctx.load(std::memory_order_acquire);
  if (c == nullptr) {
    std::call_once(s.once, [&] {
      CUcontext made = nullptr;
      s.retain_rc = driver().cuDevicePrimaryCtxRetain(&made, s.dev);
      if (s.retain_rc == CUDA_SUCCESS) s.ctx.store(made, std::memory_order_release);
    });
    c = s.ctx.load(std::memory_order_acquire);
    if (c == nullptr) {
      return cuda_fail("cuDevicePrimaryCtxRetain", s.retain_rc,
                       fmt::format("for device {}", device));
    }
  }
  *ctx = c;
  return ACCEL_SUCCESS;
}

accel_status_t get_current_device(int32_t* device) {
  Driver& d = driver();
  CUcontext cur = nullptr;
  if (d.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur == nullptr) {
    *device = -1;  // no context: the core's per-thread index stands
    return ACCEL_SUCCESS;
  }
  CUdevice dev = 0;
  ACCEL_CU_TRY(cuCtxGetDevice, (&dev));
  *device = -1;
  for (int32_t i = 0; i < g_count; ++i) {
    if (g_slots[i].dev == dev) {
      *device = i;
      break;
    }
  }
  return ACCEL_SUCCESS;
}

accel_status_t set_current_device(int32_t device, uint32_t flags) {
  if ((flags & ACCEL_PLUGIN_SET_DEVICE_MAYBE) != 0 &&
      g_slots[device].ctx.load(std::memory_order_acquire) == nullptr) {
    unsigned ctx_flags = 0;
    int active = 0;
    ACCEL_CU_TRY(cuDevicePrimaryCtxGetState, (g_slots[device].dev, &ctx_flags, &active));
    if (active == 0) {
      // Don't create the context: unbind the current one so the core's
      // index (which it records) is what the thread reports, and bind the
      // target's context when an operation first needs it.
      ACCEL_CU_TRY(cuCtxSetCurrent, (nullptr));
      t_device = device;
      return ACCEL_SUCCESS;
    }
  }
  CUcontext ctx = nullptr;
  if (auto st = primary_context(device, &ctx); st != ACCEL_SUCCESS) return st;
  ACCEL_CU_TRY(cuCtxSetCurrent, (ctx));
  t_device = device;
  return ACCEL_SUCCESS;
}

CtxScope::CtxScope(int32_t device) {
  Driver& d = driver();
  CUcontext target = nullptr;
  status_ = primary_context(device, &target);
  if (status_ != ACCEL_SUCCESS) return;
  CUcontext cur = nullptr;
  CUresult rc = d.cuCtxGetCurrent(&cur);
  if (rc != CUDA_SUCCESS) {
    status_ = cuda_fail("cuCtxGetCurrent", rc);
    return;
  }
  if (cur == target) return;
  rc = d.cuCtxSetCurrent(target);
  if (rc != CUDA_SUCCESS) {
    status_ = cuda_fail("cuCtxSetCurrent", rc, fmt::format("for device {}", device));
    return;
  }
  if (cur == nullptr && device == t_device) return;  // bound lazily, stays
  restore_ = true;
  previous_ = cur;
}

CtxScope::~CtxScope() {
  if (restore_) driver().cuCtxSetCurrent(previous_);
}

}  // namespace accel_cuda
