#include "count.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "common.hpp"
#include "driver.hpp"
#include "errors.hpp"
#include "proc_gpus.hpp"
#include "visible_devices.hpp"

namespace accel_cuda {

namespace {

pid_t g_cuinit_pid = 0;
std::string g_source;
std::string g_why_driver;  // why counting needed the driver

// The slice of NVML used here (nvml.h is not needed to build).
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
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

// true when NVML answered; `why` says why not otherwise.
bool count_with_nvml(const char* path, bool want_uuids, Physical& out, std::string& why) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    why = fmt::format("cannot load {}: {}", path, e != nullptr ? e : "?");
    return false;
  }
  Nvml n{};
  n.init = reinterpret_cast<NvmlRet (*)()>(dlsym(h, "nvmlInit_v2"));
  n.shutdown = reinterpret_cast<NvmlRet (*)()>(dlsym(h, "nvmlShutdown"));
  n.count = reinterpret_cast<NvmlRet (*)(unsigned*)>(dlsym(h, "nvmlDeviceGetCount_v2"));
  n.by_index =
      reinterpret_cast<NvmlRet (*)(unsigned, nvmlDevice_t*)>(dlsym(h, "nvmlDeviceGetHandleByIndex_v2"));
  n.uuid = reinterpret_cast<NvmlRet (*)(nvmlDevice_t, char*, unsigned)>(dlsym(h, "nvmlDeviceGetUuid"));
  n.error_string = reinterpret_cast<const char* (*)(NvmlRet)>(dlsym(h, "nvmlErrorString"));
  auto err = [&](NvmlRet r) {
    return fmt::format("{} ({})", n.error_string != nullptr ? n.error_string(r) : "?", r);
  };
  // NVML stays loaded: unloading it buys nothing and some versions dislike it.
  if (n.init == nullptr || n.shutdown == nullptr || n.count == nullptr) {
    why = fmt::format("{} lacks nvmlInit_v2/nvmlDeviceGetCount_v2", path);
    return false;
  }
  if (NvmlRet r = n.init(); r != 0) {
    why = fmt::format("nvmlInit_v2 failed: {}", err(r));
    return false;
  }
  unsigned count = 0;
  NvmlRet r = n.count(&count);
  if (r != 0) {
    why = fmt::format("nvmlDeviceGetCount_v2 failed: {}", err(r));
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
  g_cuinit_pid = getpid();
  CUresult rc = d.cuInit(0);
  if (rc == CUDA_ERROR_NO_DEVICE) {
    *count = 0;
    fail(ACCEL_SUCCESS, fmt::format("no CUDA device: cuInit reports {}", error_text(rc)));
    return ACCEL_SUCCESS;
  }
  if (rc == CUDA_ERROR_STUB_LIBRARY) {
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                fmt::format("'{}' is the CUDA toolkit's stub library (cuInit returned "
                            "CUDA_ERROR_STUB_LIBRARY): no NVIDIA driver is installed",
                            d.path));
  }
  if (rc != CUDA_SUCCESS) return cuda_fail("cuInit", rc);
  int n = 0;
  rc = d.cuDeviceGetCount(&n);
  if (rc == CUDA_ERROR_NO_DEVICE) n = 0;
  else if (rc != CUDA_SUCCESS) return cuda_fail("cuDeviceGetCount", rc);
  *count = n;
  if (n == 0) fail(ACCEL_SUCCESS, "no CUDA device: cuDeviceGetCount reports 0 devices");
  log(ACCEL_LOG_DEBUG, fmt::format("counted {} device(s) with cuInit + cuDeviceGetCount (no NVML "
                                   "or /proc/driver/nvidia here): fork after discovery leaves "
                                   "CUDA unusable in the child",
                                   n));
  return ACCEL_SUCCESS;
}

}  // namespace

pid_t counted_with_cuinit_in() { return g_cuinit_pid; }
const std::string& count_source() { return g_source; }
const std::string& why_counted_with_driver() { return g_why_driver; }

accel_status_t count_devices(int32_t* count) {
  // CUDA_VISIBLE_DEVICES is the driver's variable, read as the driver reads
  // it (plain getenv), not accel configuration.
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const bool want_uuids = visible != nullptr && std::string(visible).find('-') != std::string::npos;

  Physical phys;
  bool have = false;
  std::string tried;
  const char* nvml_path = config_env("ACCEL_CUDA_NVML");
  if (nvml_path != nullptr && *nvml_path != '\0') {
    if (nvml_path[0] != '/') {
      tried = fmt::format("ACCEL_CUDA_NVML='{}' is not an absolute path; ignored", nvml_path);
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
    tried = "ACCEL_CUDA_DRIVER names a driver other than the system's, whose NVML and /proc "
            "would not describe it";
  }
  if (!have) {
    log(ACCEL_LOG_DEBUG, fmt::format("counting through the driver: {}", tried));
    g_why_driver = tried;
    return count_with_driver(count);
  }

  VisibleDevices v = resolve_visible_devices(visible, phys.count, phys.uuids);
  if (!v.resolved) {
    log(ACCEL_LOG_DEBUG, fmt::format("counting through the driver: {}", v.note));
    g_why_driver = v.note;
    return count_with_driver(count);
  }
  *count = static_cast<int32_t>(v.physical.size());
  if (!v.note.empty()) log(ACCEL_LOG_INFO, v.note);
  if (*count == 0) {
    fail(ACCEL_SUCCESS, phys.count == 0
                            ? fmt::format("{} reports no NVIDIA GPU", g_source)
                            : fmt::format("{} GPU(s) found through {}, none visible: {}",
                                          phys.count, g_source, v.note));
  }
  log(ACCEL_LOG_DEBUG, fmt::format("{} device(s) through {} ({} physical, CUDA_VISIBLE_DEVICES "
                                   "{})",
                                   *count, g_source, phys.count,
                                   visible != nullptr ? fmt::format("'{}'", visible) : "unset"));
  return ACCEL_SUCCESS;
}

}  // namespace accel_cuda
