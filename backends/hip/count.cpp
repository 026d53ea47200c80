// init and device_count: loading the runtime only when a GPU can exist, and
// counting without initialising it (fork-safe) where the system allows: the
// KFD topology in sysfs, resolved through ROCR_VISIBLE_DEVICES /
// HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES (visible_devices.hpp); the
// runtime's hipGetDeviceCount only when the topology cannot be read.
//
// Sources, in order:
//  1. ACCEL_HIP_KFD_TOPOLOGY=/abs/dir (tests: a fabricated tree) or, unless
//     ACCEL_HIP_RUNTIME names another runtime (the system's sysfs would then
//     describe hardware that runtime does not drive), the system's
//     /sys/class/kfd/kfd/topology/nodes. GPUs found there also need the KFD
//     device node (/dev/kfd, or ACCEL_HIP_KFD_DEVICE for tests) to be usable.
//  2. No readable topology and no usable KFD node: 0, without loading the
//     runtime (visibly_no_gpu).
//  3. hipGetDeviceCount. The runtime is then initialised during discovery,
//     so the plugin does not declare ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE and
//     the core refuses the backend in a fork()ed child.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backend.hpp"
#include "kfd_topology.hpp"
#include "visible_devices.hpp"

namespace accel::hip {

namespace {

constexpr const char* kSystemTopology = "/sys/class/kfd/kfd/topology/nodes";
constexpr const char* kSystemKfd = "/dev/kfd";

std::string g_source;

// With ACCEL_SUCCESS from init or device_count: the reason for the count,
// which accelctl shows.
void explain(const std::string& message) { accel::plugin::set_error(ACCEL_SUCCESS, message); }

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
    return kfd +
           " is absent (the amdgpu kernel driver is not loaded, or the device was not "
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
  VisibleDevices vis = resolve_visible_devices(
      std::getenv("ROCR_VISIBLE_DEVICES"), std::getenv("HIP_VISIBLE_DEVICES"),
      std::getenv("CUDA_VISIBLE_DEVICES"), uuids, runtime_rules());
  *count = static_cast<int32_t>(vis.physical.size());
  if (*count == 0) {
    explain(format("all %s of the KFD topology are hidden: %s",
                   plural(t.gpus.size(), "GPU").c_str(), vis.note.c_str()));
    return ACCEL_SUCCESS;
  }
  std::string msg = format("%s from the KFD topology (%s)",
                           plural(static_cast<size_t>(*count), "GPU").c_str(), dir.c_str());
  if (!vis.note.empty()) msg += "; " + vis.note;
  msg += "; HIP runtime " + runtime_label();
  explain(msg);
  accel::plugin::log(ACCEL_LOG_DEBUG, msg);
  return ACCEL_SUCCESS;
}

accel_status_t count_from_runtime(const std::string& why, int32_t* count) {
  g_source = "hipGetDeviceCount";
  *count = 0;
  note_runtime_initialised();
  accel::plugin::log(ACCEL_LOG_DEBUG, "counting with hipGetDeviceCount: " + why +
                                          "; the HIP runtime is now initialised (not fork-safe)");
  int n = 0;
  hipError_t rc = runtime().hipGetDeviceCount(&n);
  if (rc == hipErrorNoDevice || (rc == hipSuccess && n <= 0)) {
    std::string kfd = kfd_problem(kSystemKfd);
    explain(format("no AMD GPU: %s [HIP runtime %s]; %s",
                   rc == hipSuccess ? "hipGetDeviceCount returned 0 devices"
                                    : vendor_failure_text("hipGetDeviceCount", rc).c_str(),
                   runtime_label().c_str(), kfd.empty() ? "/dev/kfd is present" : kfd.c_str()));
    return ACCEL_SUCCESS;
  }
  if (rc != hipSuccess) return vendor_fail("hipGetDeviceCount", rc);
  *count = n;
  explain(
      format("%s from hipGetDeviceCount (%s; the runtime is initialised, so fork() children "
             "cannot use it); HIP runtime %s",
             plural(static_cast<size_t>(n), "GPU").c_str(), why.c_str(), runtime_label().c_str()));
  return ACCEL_SUCCESS;
}

std::string find_no_gpu_reason() {
  const char* topo_env = accel::plugin::env("ACCEL_HIP_KFD_TOPOLOGY");
  const char* runtime_env = accel::plugin::env("ACCEL_HIP_RUNTIME");
  if ((topo_env != nullptr && *topo_env != '\0') ||
      (runtime_env != nullptr && *runtime_env != '\0'))
    return {};
  KfdTopology t = read_kfd_topology(kSystemTopology);
  if (t.readable) return {};
  const char* kfd_env = accel::plugin::env("ACCEL_HIP_KFD_DEVICE");
  std::string problem = kfd_problem(kfd_env != nullptr && *kfd_env != '\0' ? kfd_env : kSystemKfd);
  if (problem.empty()) return {};
  // ROCr finds GPUs only through /dev/kfd: without it hipGetDeviceCount can
  // only say hipErrorNoDevice, after loading (~15 ms: ROCr, comgr, LLVM) and
  // initialising the whole runtime, which also makes the process fork-unsafe.
  return format("the KFD topology %s is not readable (%s) and %s; the HIP runtime was not loaded",
                kSystemTopology, t.error.c_str(), problem.c_str());
}

// Non-empty (the reason) when the system's KFD topology cannot be read and
// its KFD device node is absent or unusable, with no ACCEL_HIP_RUNTIME or
// ACCEL_HIP_KFD_TOPOLOGY override: no HIP runtime could find a GPU. Asked by
// init and again by device_count: the sysfs walk runs once.
const std::string& visibly_no_gpu() {
  static const std::string why = find_no_gpu_reason();
  return why;
}

accel_status_t count_devices(int32_t* count) {
  const char* topo_env = accel::plugin::env("ACCEL_HIP_KFD_TOPOLOGY");
  const char* kfd_env = accel::plugin::env("ACCEL_HIP_KFD_DEVICE");
  std::string kfd = kfd_env != nullptr && *kfd_env != '\0' ? kfd_env : kSystemKfd;
  if (topo_env != nullptr && *topo_env != '\0') {
    KfdTopology t = read_kfd_topology(topo_env);
    if (t.readable) return count_from_topology(topo_env, t, kfd, count);
    return count_from_runtime(
        format("ACCEL_HIP_KFD_TOPOLOGY=%s is not readable: %s", topo_env, t.error.c_str()), count);
  }
  if (runtime().explicit_path) {
    return count_from_runtime(
        "ACCEL_HIP_RUNTIME names a runtime the system's KFD topology may not describe", count);
  }
  KfdTopology t = read_kfd_topology(kSystemTopology);
  if (t.readable) return count_from_topology(kSystemTopology, t, kfd, count);
  if (const std::string& why = visibly_no_gpu(); !why.empty()) {
    g_source = "KFD device node";
    *count = 0;
    explain("no AMD GPU: " + why);
    return ACCEL_SUCCESS;
  }
  return count_from_runtime(
      format("the KFD topology %s is not readable: %s", kSystemTopology, t.error.c_str()), count);
}

}  // namespace

accel_status_t op_init() {
  return guarded("init", [] {
    // A machine without an AMD GPU does not pay for loading HIP at every
    // program start (cold start); device_count says why.
    if (!visibly_no_gpu().empty()) return ACCEL_SUCCESS;
    return load_runtime();
  });
}

accel_status_t op_device_count(int32_t* count) {
  return guarded("device_count", [&] {
    const accel_status_t st = count_devices(count);
    if (st == ACCEL_SUCCESS) set_devices(*count);
    // Counting through the KFD topology ran no HIP code: a fork() child may
    // still initialise HIP itself. After hipGetDeviceCount it may not.
    if (!runtime_initialised()) declare_discovery_fork_safe();
    return st;
  });
}

const std::string& count_source() noexcept { return g_source; }

}  // namespace accel::hip
