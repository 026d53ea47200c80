#include "count.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common.hpp"
#include "kfd_topology.hpp"
#include "runtime.hpp"
#include "visible_devices.hpp"

namespace accel_hip {

namespace {

constexpr const char* kSystemTopology = "/sys/class/kfd/kfd/topology/nodes";
constexpr const char* kSystemKfd = "/dev/kfd";

int32_t g_count = 0;
std::string g_source;

std::string plural(size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// How the loaded HIP runtime reads HIP_/CUDA_VISIBLE_DEVICES: its release,
// from the name of the file dlopen() found (symlinks resolved).
HipRules runtime_rules() {
  const Runtime& rt = runtime();
  std::string lib = rt.file.empty() ? rt.name : rt.file;
  if (char* real = realpath(lib.c_str(), nullptr)) {
    lib = real;
    std::free(real);
  }
  return hip_rules_for_library(lib);
}

// The KFD device node: absent, inaccessible, or "" when usable.
std::string kfd_problem(const std::string& kfd) {
  if (access(kfd.c_str(), F_OK) != 0) {
    return kfd + " is absent (the amdgpu kernel driver is not loaded, or the device was not "
                 "passed into this container)";
  }
  if (access(kfd.c_str(), R_OK | W_OK) != 0) {
    return kfd + " is not accessible: " + std::strerror(errno) +
           " (the user must be in the group owning it, usually 'render')";
  }
  return {};
}

accel_status_t count_from_topology(const std::string& dir, const KfdTopology& t,
                                   const std::string& kfd, int32_t* count) {
  g_source = "KFD topology";
  *count = 0;
  if (t.gpus.empty()) {
    explain(format("the KFD topology (%s) lists no GPU node (%s); HIP runtime %s", dir.c_str(),
                   plural(static_cast<size_t>(t.nodes), "node").c_str(), runtime_label().c_str()));
    return ACCEL_SUCCESS;
  }
  if (std::string problem = kfd_problem(kfd); !problem.empty()) {
    explain(format("the KFD topology (%s) lists %s but %s", dir.c_str(),
                   plural(t.gpus.size(), "GPU").c_str(), problem.c_str()));
    return ACCEL_SUCCESS;
  }
  std::vector<std::string> uuids;
  for (const auto& g : t.gpus) uuids.push_back(g.uuid);
  // The runtime's own variables, read as ROCr and HIP read them (plain
  // getenv, setuid or not), so the count always equals what the runtime
  // will show; they name devices, never a file to load.
  VisibleDevices vis = resolve_visible_devices(std::getenv("ROCR_VISIBLE_DEVICES"),
                                               std::getenv("HIP_VISIBLE_DEVICES"),
                                               std::getenv("CUDA_VISIBLE_DEVICES"), uuids,
                                               runtime_rules());
  *count = static_cast<int32_t>(vis.physical.size());
  if (*count == 0) {
    explain(format("all %s of the KFD topology are hidden: %s", plural(t.gpus.size(), "GPU").c_str(),
                   vis.note.c_str()));
    return ACCEL_SUCCESS;
  }
  std::string msg = format("%s from the KFD topology (%s)", plural(static_cast<size_t>(*count), "GPU").c_str(),
                           dir.c_str());
  if (!vis.note.empty()) msg += "; " + vis.note;
  msg += "; HIP runtime " + runtime_label();
  explain(msg);
  log(ACCEL_LOG_DEBUG, msg);
  return ACCEL_SUCCESS;
}

accel_status_t count_from_runtime(const std::string& why, int32_t* count) {
  g_source = "hipGetDeviceCount";
  *count = 0;
  note_runtime_initialised();
  set_init_reason("hipGetDeviceCount ran at discovery (" + why + ")");
  log(ACCEL_LOG_DEBUG, "counting with hipGetDeviceCount: " + why +
                           "; the HIP runtime is now initialised (not fork-safe)");
  int n = 0;
  hipError_t rc = runtime().hipGetDeviceCount(&n);
  std::string kfd = kfd_problem(kSystemKfd);
  if (rc == hipErrorNoDevice || (rc == hipSuccess && n <= 0)) {
    explain(format("no AMD GPU: hipGetDeviceCount %s [HIP runtime %s]; %s",
                   rc == hipSuccess ? "returned 0 devices" : ("failed: " + error_text(rc)).c_str(),
                   runtime_label().c_str(), kfd.empty() ? "/dev/kfd is present" : kfd.c_str()));
    return ACCEL_SUCCESS;
  }
  if (rc != hipSuccess) {
    return hip_fail("hipGetDeviceCount", rc, "[HIP runtime " + runtime_label() + "]");
  }
  *count = n;
  explain(format("%s from hipGetDeviceCount (%s; the runtime is initialised, so fork() children "
                 "cannot use it); HIP runtime %s",
                 plural(static_cast<size_t>(n), "GPU").c_str(), why.c_str(), runtime_label().c_str()));
  return ACCEL_SUCCESS;
}

}  // namespace

namespace {

std::string find_no_gpu_reason() {
  const char* topo_env = config_env("ACCEL_HIP_KFD_TOPOLOGY");
  const char* runtime_env = config_env("ACCEL_HIP_RUNTIME");
  if ((topo_env != nullptr && *topo_env != '\0') || (runtime_env != nullptr && *runtime_env != '\0'))
    return {};
  KfdTopology t = read_kfd_topology(kSystemTopology);
  if (t.readable) return {};
  const char* kfd_env = config_env("ACCEL_HIP_KFD_DEVICE");
  std::string problem = kfd_problem(kfd_env != nullptr && *kfd_env != '\0' ? kfd_env : kSystemKfd);
  if (problem.empty()) return {};
  // ROCr finds GPUs only through /dev/kfd: without it hipGetDeviceCount can
  // only say hipErrorNoDevice, after loading (~15 ms: ROCr, comgr, LLVM) and
  // initialising the whole runtime, which also makes the process fork-unsafe.
  return format("the KFD topology %s is not readable (%s) and %s; the HIP runtime was not loaded",
                kSystemTopology, t.error.c_str(), problem.c_str());
}

}  // namespace

// Asked by init and again by device_count: the sysfs walk runs once.
const std::string& visibly_no_gpu() {
  static const std::string why = find_no_gpu_reason();
  return why;
}

accel_status_t count_devices(int32_t* count) {
  const char* topo_env = config_env("ACCEL_HIP_KFD_TOPOLOGY");
  const char* kfd_env = config_env("ACCEL_HIP_KFD_DEVICE");
  std::string kfd = kfd_env != nullptr && *kfd_env != '\0' ? kfd_env : kSystemKfd;
  accel_status_t st;
  if (topo_env != nullptr && *topo_env != '\0') {
    KfdTopology t = read_kfd_topology(topo_env);
    st = t.readable ? count_from_topology(topo_env, t, kfd, count)
                    : count_from_runtime(format("ACCEL_HIP_KFD_TOPOLOGY=%s is not readable: %s",
                                                topo_env, t.error.c_str()),
                                         count);
  } else if (runtime().explicit_path) {
    st = count_from_runtime("ACCEL_HIP_RUNTIME names a runtime the system's KFD topology may not "
                            "describe",
                            count);
  } else {
    KfdTopology t = read_kfd_topology(kSystemTopology);
    if (t.readable) {
      st = count_from_topology(kSystemTopology, t, kfd, count);
    } else if (const std::string& why = visibly_no_gpu(); !why.empty()) {
      g_source = "KFD device node";
      *count = 0;
      explain("no AMD GPU: " + why);
      st = ACCEL_SUCCESS;
    } else {
      st = count_from_runtime(format("the KFD topology %s is not readable: %s", kSystemTopology,
                                     t.error.c_str()),
                              count);
    }
  }
  if (st == ACCEL_SUCCESS) g_count = *count;
  return st;
}

int32_t counted_devices() { return g_count; }

const std::string& count_source() { return g_source; }

}  // namespace accel_hip
