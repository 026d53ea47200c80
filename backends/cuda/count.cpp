// Discovery: op_init (loads the driver) and op_device_count, which counts
// without a CUDA context where it can, so that a fork() child may still use
// CUDA: NVML, then /proc/driver/nvidia/gpus, each resolved through
// CUDA_VISIBLE_DEVICES; the driver (cuInit + cuDeviceGetCount) only when
// neither can answer.
//
// Sources, in order:
//  1. ACCEL_CUDA_NVML=/abs/path: that NVML library (tests use the fake one);
//  2. unless ACCEL_CUDA_DRIVER names another driver (the system's NVML and
//     /proc would then describe a different driver): libnvidia-ml.so.1, then
//     /proc/driver/nvidia/gpus;
//  3. the driver itself. cuInit has then run during discovery, so a fork()ed
//     child cannot use CUDA any more: the plugin does not declare
//     ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE, and the core refuses the backend
//     in such a child with ACCEL_ERROR_FORKED (core/fork.cpp: the plugin
//     keeps no fork state of its own and never asks which process it is in).
#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "backend.hpp"
#include "proc_gpus.hpp"
#include "visible_devices.hpp"

// NVML's device type, declared where nvml.h declares it (global, C): a
// function type naming a struct of accel's namespace would not be the type
// libnvidia-ml's functions have (clang's -fsanitize=function checks it).
struct nvmlDevice_st;

namespace accel::cuda {

namespace {

// Written by op_device_count under the core's discovery lock, read-only after.
int32_t g_count = 0;
bool g_ran_cuinit = false;  // counting went through the driver
std::string g_source;

// The slice of NVML used here (nvml.h is not needed to build).
using nvmlDevice_t = ::nvmlDevice_st*;
using NvmlRet = int;
struct Nvml {
  NvmlRet (*init)();
  NvmlRet (*shutdown)();
  NvmlRet (*count)(unsigned*);
  NvmlRet (*by_index)(unsigned, nvmlDevice_t*);
  NvmlRet (*uuid)(nvmlDevice_t, char*, unsigned);
  const char* (*error_string)(NvmlRet);
};

struct Physical {
  int count = 0;
  std::vector<std::string> uuids;  // empty when unknown
};

// true when NVML answered; `why` says why not otherwise. NVML is opened with
// plain dlopen, not VendorLibrary: failing here is no error to report, only
// a reason to count another way.
bool count_with_nvml(const char* path, bool want_uuids, Physical& out, std::string& why) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    why = format("cannot load %s: %s", path, e != nullptr ? e : "?");
    return false;
  }
  Nvml n{};
  n.init = reinterpret_cast<NvmlRet (*)()>(dlsym(h, "nvmlInit_v2"));
  n.shutdown = reinterpret_cast<NvmlRet (*)()>(dlsym(h, "nvmlShutdown"));
  n.count = reinterpret_cast<NvmlRet (*)(unsigned*)>(dlsym(h, "nvmlDeviceGetCount_v2"));
  n.by_index = reinterpret_cast<NvmlRet (*)(unsigned, nvmlDevice_t*)>(
      dlsym(h, "nvmlDeviceGetHandleByIndex_v2"));
  n.uuid =
      reinterpret_cast<NvmlRet (*)(nvmlDevice_t, char*, unsigned)>(dlsym(h, "nvmlDeviceGetUuid"));
  n.error_string = reinterpret_cast<const char* (*)(NvmlRet)>(dlsym(h, "nvmlErrorString"));
  auto err = [&](NvmlRet r) {
    return format("%s (%d)", n.error_string != nullptr ? n.error_string(r) : "?", r);
  };
  // NVML stays loaded: unloading it buys nothing and some versions dislike it.
  if (n.init == nullptr || n.shutdown == nullptr || n.count == nullptr) {
    why = format("%s lacks nvmlInit_v2/nvmlDeviceGetCount_v2", path);
    return false;
  }
  if (NvmlRet r = n.init(); r != 0) {
    why = "nvmlInit_v2 failed: " + err(r);
    return false;
  }
  unsigned count = 0;
  NvmlRet r = n.count(&count);
  if (r != 0) {
    why = "nvmlDeviceGetCount_v2 failed: " + err(r);
    n.shutdown();
    return false;
  }
  out.count = static_cast<int>(count);
  out.uuids.clear();
  if (want_uuids && n.by_index != nullptr && n.uuid != nullptr) {
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t dev = nullptr;
      char buf[96] = {};
      if (n.by_index(i, &dev) != 0 || n.uuid(dev, buf, sizeof buf) != 0) {
        out.uuids.clear();
        break;
      }
      out.uuids.emplace_back(buf);
    }
  }
  n.shutdown();
  return true;
}

// cuInit + cuDeviceGetCount: the last resort, which poisons fork.
accel_status_t count_with_driver(int32_t* count) {
  g_source = "cuDeviceGetCount";
  Driver& d = driver();
  g_ran_cuinit = true;
  CUresult rc = d.cuInit(0);
  if (rc == CUDA_ERROR_NO_DEVICE) {
    *count = 0;
    fail(ACCEL_SUCCESS, "no CUDA device: " + plugin::vendor_failure_message("cuInit", code_name(rc),
                                                                            rc, code_text(rc)));
    return ACCEL_SUCCESS;
  }
  if (rc == CUDA_ERROR_STUB_LIBRARY)
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                "'%s' is the CUDA toolkit's stub library (cuInit returned "
                "CUDA_ERROR_STUB_LIBRARY): no NVIDIA driver is installed",
                d.path.c_str());
  if (rc != CUDA_SUCCESS) return vendor_fail("cuInit", rc);
  int n = 0;
  rc = d.cuDeviceGetCount(&n);
  if (rc == CUDA_ERROR_NO_DEVICE)
    n = 0;
  else if (rc != CUDA_SUCCESS)
    return vendor_fail("cuDeviceGetCount", rc);
  *count = n;
  if (n == 0) fail(ACCEL_SUCCESS, "no CUDA device: cuDeviceGetCount reports 0 devices");
  plugin::log(ACCEL_LOG_DEBUG,
              "counted %d device(s) with cuInit + cuDeviceGetCount (no NVML or "
              "/proc/driver/nvidia here): fork after discovery leaves CUDA unusable in the child",
              n);
  return ACCEL_SUCCESS;
}

accel_status_t count_devices(int32_t* count) {
  // CUDA_VISIBLE_DEVICES is the driver's variable, read as the driver reads
  // it (plain getenv), not accel configuration.
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const bool want_uuids = visible != nullptr && std::string(visible).find('-') != std::string::npos;

  Physical phys;
  bool have = false;
  std::string tried;
  const char* nvml_path = plugin::env("ACCEL_CUDA_NVML");
  if (nvml_path != nullptr && *nvml_path != '\0') {
    if (nvml_path[0] != '/') {
      tried = format("ACCEL_CUDA_NVML='%s' is not an absolute path; ignored", nvml_path);
    } else if (count_with_nvml(nvml_path, want_uuids, phys, tried)) {
      have = true;
      g_source = "NVML";
    }
  } else if (!driver().explicit_path) {
    if (count_with_nvml("libnvidia-ml.so.1", want_uuids, phys, tried)) {
      have = true;
      g_source = "NVML";
    } else {
      ProcGpus proc;
      if (read_proc_gpus("/proc/driver/nvidia/gpus", proc)) {
        phys.count = proc.count;
        phys.uuids = proc.uuids;
        have = true;
        g_source = "/proc/driver/nvidia/gpus";
      } else {
        tried += "; /proc/driver/nvidia/gpus is absent";
      }
    }
  } else {
    tried =
        "ACCEL_CUDA_DRIVER names a driver other than the system's, whose NVML and /proc "
        "would not describe it";
  }
  if (!have) {
    plugin::log(ACCEL_LOG_DEBUG, "counting through the driver: %s", tried.c_str());
    return count_with_driver(count);
  }

  VisibleDevices v = resolve_visible_devices(visible, phys.count, phys.uuids);
  if (!v.resolved) {
    plugin::log(ACCEL_LOG_DEBUG, "counting through the driver: %s", v.note.c_str());
    return count_with_driver(count);
  }
  *count = static_cast<int32_t>(v.physical.size());
  if (!v.note.empty()) plugin::log(ACCEL_LOG_INFO, v.note);
  if (*count == 0) {
    fail(ACCEL_SUCCESS, phys.count == 0 ? format("%s reports no NVIDIA GPU", g_source.c_str())
                                        : format("%d GPU(s) found through %s, none visible: %s",
                                                 phys.count, g_source.c_str(), v.note.c_str()));
  }
  plugin::log(ACCEL_LOG_DEBUG, "%d device(s) through %s (%d physical, CUDA_VISIBLE_DEVICES %s)",
              int(*count), g_source.c_str(), phys.count,
              visible != nullptr ? format("'%s'", visible).c_str() : "unset");
  return ACCEL_SUCCESS;
}

}  // namespace

int32_t counted_devices() noexcept { return g_count; }
const std::string& count_source() noexcept { return g_source; }

// Loads the driver only: no cuInit, no context.
accel_status_t op_init() {
  return guarded("init", [] { return open_driver(); });
}

accel_status_t op_device_count(int32_t* count) {
  return guarded("device_count", [&] {
    accel_status_t st = count_devices(count);
    if (st == ACCEL_SUCCESS) g_count = *count;
    // Counting through NVML or /proc ran no CUDA code: a fork() child may
    // still initialise CUDA itself. After cuInit it may not, and the core
    // refuses the backend there because the bit is missing.
    if (!g_ran_cuinit) declare_discovery_fork_safe();
    return st;
  });
}

}  // namespace accel::cuda
