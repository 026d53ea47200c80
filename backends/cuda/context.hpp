// Devices and their primary contexts, the calling thread's current device,
// and the scope that makes a device's context current for one operation.
//
// The current device is the CUDA runtime's: the primary context current on
// the calling thread (cuCtxSetCurrent), so accel and code using the CUDA
// runtime or driver API directly agree in both directions. Operations on a
// device other than the current one switch contexts only for their duration
// (CtxScope restores the caller's context), as torch's device guards do.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "accel/accel.h"

namespace accel_cuda {

// lazy_init: cuInit (unless counting did it in this process), the driver's
// device count checked against the core's, CUdevice handles.
accel_status_t init_devices(int32_t expected_count);

int32_t device_count();
CUdevice cu_device(int32_t device);

// The device's primary context, retained on first use (never released:
// plugins live until process exit).
accel_status_t primary_context(int32_t device, CUcontext* ctx);

accel_status_t get_current_device(int32_t* device);
accel_status_t set_current_device(int32_t device, uint32_t flags);

// Makes `device`'s primary context current for the scope; restores what was
// current before on exit. If no context was current and `device` is the
// thread's current accel device (set with ACCEL_PLUGIN_SET_DEVICE_MAYBE, or
// the initial device 0), the context stays current: the lazy half of
// "maybe" and the CUDA runtime's implicit device-0 context.
class CtxScope {
 public:
  explicit CtxScope(int32_t device);
  ~CtxScope();
  CtxScope(const CtxScope&) = delete;
  CtxScope& operator=(const CtxScope&) = delete;
  accel_status_t status() const { return status_; }

 private:
  accel_status_t status_ = ACCEL_SUCCESS;
  bool restore_ = false;
  CUcontext previous_ = nullptr;
};

}  // namespace accel_cuda
