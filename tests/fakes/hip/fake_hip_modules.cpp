// The module API of the fake HIP runtime, modelled on HIP's documentation
// (hip_runtime_api.h's Module Management and hipModuleLaunchKernel) and
// ROCclr's behaviour where the documentation is silent:
//
//  - hipModuleLoadData reads the code object (fake_hip_code_object.cpp:
//    ELF header, EM_AMDGPU, ISA, the `<name>.kd` kernel descriptors) for the
//    current device; hipErrorInvalidImage / hipErrorNoBinaryForGpu when it
//    cannot run there. The image is copied: the caller may free it.
//  - hipModuleGetFunction: hipErrorNotFound for a name without descriptor.
//    Like ROCclr (which asserts), a module serves only the device it was
//    loaded on: another current device is hipErrorInvalidDevice here.
//  - hipFuncGetAttribute: from the kernel descriptor (static LDS, scratch,
//    VGPRs from compute_pgm_rsrc1's granules: (count + 1) * 8 on gfx90a);
//    max threads per block 1024, hipcc's default launch bound and the
//    device's limit (the fake does not read the metadata note).
//  - hipModuleUnload: the module and its functions stop being valid.
//  - hipModuleLaunchKernel: both kernelParams and extra -> InvalidValue; a 0
//    extent -> InvalidValue; more than 1024 threads a block ->
//    InvalidConfiguration; a block extent over 1024, grid over (INT32_MAX,
//    65536, 65536) or gridDim * blockDim >= 2^32 in a dimension ->
//    InvalidValue; static + dynamic LDS over 64 KiB -> InvalidValue; a
//    stream of another device -> InvalidHandle. Arguments come from
//    kernelParams (one pointer per parameter) or from extra
//    ({HIP_LAUNCH_PARAM_BUFFER_POINTER, buf, HIP_LAUNCH_PARAM_BUFFER_SIZE,
//    &size, HIP_LAUNCH_PARAM_END}, else InvalidValue) with each parameter
//    at its natural alignment; the buffer's size must be that layout's end,
//    or the end rounded up to the largest alignment (sizeof of the matching
//    struct): anything else is hipErrorInvalidValue, as is a kernel that
//    takes parameters launched with neither. The arguments are copied at
//    launch; the kernel runs later on the stream's worker, in order with the
//    stream's other work (fake_hip_kernels.cpp).
//  - The fake stands in for the GPU's memory protection: global memory a
//    launch would reach must lie in live hipMalloc or hipHostMalloc memory,
//    else the launch is refused with hipErrorInvalidValue (a real GPU would
//    fault and abort the process); if the memory went away before the
//    kernel ran, the kernel is skipped and fake_hip_kernel_faults() counts
//    it.
#include <hip/hip_runtime_api.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "fake_hip_code_object.hpp"
#include "fake_hip_internal.hpp"
#include "fake_hip_kernels.hpp"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

struct ihipModuleSymbol_t {
  ihipModule_t* module = nullptr;
  std::string name;
  fake_hip::KernelDescriptor kd;
  const fake_hip::KnownKernel* known = nullptr;  // nullptr: the fake cannot run it
};

struct ihipModule_t {
  int device = 0;
  fake_hip::CodeObject code;
  std::map<std::string, std::unique_ptr<ihipModuleSymbol_t>> functions;  // made on first lookup
};

namespace {

constexpr uint32_t kMaxThreadsPerBlock = 1024;
constexpr uint32_t kMaxBlockDim = 1024;
constexpr uint64_t kMaxGrid[3] = {2147483647, 65536, 65536};
constexpr size_t kLdsBytes = 64 * 1024;
constexpr uint32_t kVgprGranule = 8;  // gfx90a

struct Registry {
  std::mutex mu;
  std::set<ihipModule_t*> modules;
  std::set<ihipModuleSymbol_t*> functions;
  std::atomic<int> runs{0};
  std::atomic<int> faults{0};
  std::atomic<long long> last_arg_bytes{-1};
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: stream workers may outlive main
  return *r;
}

#define FAKE_INIT()                                                                            \
  do {                                                                                         \
    if (hipError_t fake_rc_ = fake_hip::initialise(); fake_rc_ != hipSuccess) return fake_rc_; \
  } while (0)

// A copy of what a launch needs of a live function.
bool function_info(hipFunction_t f, ihipModuleSymbol_t& out, int& device) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (r.functions.count(f) == 0) return false;
  out.name = f->name;
  out.kd = f->kd;
  out.known = f->known;
  device = f->module->device;
  return true;
}

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// The natural-alignment layout of a known kernel's parameters.
struct Layout {
  std::vector<size_t> offsets;
  size_t end = 0;         // the last parameter's end
  size_t struct_end = 0;  // end rounded up to the largest alignment
};

Layout layout_of(const fake_hip::KnownKernel& k) {
  Layout l;
  size_t max_align = 1;
  for (uint32_t size : k.params) {
    const size_t at = align_up(l.end, size);
    l.offsets.push_back(at);
    l.end = at + size;
    if (size > max_align) max_align = size;
  }
  l.struct_end = align_up(l.end, max_align);
  return l;
}

// The launch's arguments from kernelParams or extra.
hipError_t read_arguments(const fake_hip::KnownKernel& k, void** kernel_params, void** extra,
                          fake_hip::Launch& launch) {
  const Layout layout = layout_of(k);
  const size_t n = k.params.size();
  launch.args.assign(n, 0);
  if (extra != nullptr) {
    if (extra[0] != HIP_LAUNCH_PARAM_BUFFER_POINTER || extra[2] != HIP_LAUNCH_PARAM_BUFFER_SIZE ||
        extra[4] != HIP_LAUNCH_PARAM_END || extra[3] == nullptr)
      return hipErrorInvalidValue;
    const auto* buf = static_cast<const unsigned char*>(extra[1]);
    const size_t size = *static_cast<const size_t*>(extra[3]);
    registry().last_arg_bytes.store(static_cast<long long>(size));
    if (n == 0) return size == 0 ? hipSuccess : hipErrorInvalidValue;
    if (buf == nullptr || (size != layout.end && size != layout.struct_end))
      return hipErrorInvalidValue;
    for (size_t i = 0; i < n; ++i)
      std::memcpy(&launch.args[i], buf + layout.offsets[i], k.params[i]);
    return hipSuccess;
  }
  if (kernel_params != nullptr) {
    registry().last_arg_bytes.store(-1);
    for (size_t i = 0; i < n; ++i) {
      if (kernel_params[i] == nullptr) return hipErrorInvalidValue;
      std::memcpy(&launch.args[i], kernel_params[i], k.params[i]);
    }
    return hipSuccess;
  }
  registry().last_arg_bytes.store(0);
  return n == 0 ? hipSuccess : hipErrorInvalidValue;
}

bool reachable(const fake_hip::KnownKernel& k, const fake_hip::Launch& l) {
  std::vector<std::pair<const void*, size_t>> ranges;
  if (!k.reach(l, ranges)) return false;
  for (const auto& [p, n] : ranges)
    if (!fake_hip::kernel_accessible(p, n)) return false;
  return true;
}

}  // namespace

FAKE_EXPORT hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  if (module == nullptr || image == nullptr) return hipErrorInvalidValue;
  FAKE_INIT();
  auto m = std::make_unique<ihipModule_t>();
  m->device = fake_hip::current_device();
  if (hipError_t rc = fake_hip::read_code_object(image, m->code); rc != hipSuccess) return rc;
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.modules.insert(m.get());
  *module = m.release();
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipModuleUnload(hipModule_t module) {
  FAKE_INIT();
  Registry& r = registry();
  std::unique_ptr<ihipModule_t> m;
  {
    std::lock_guard lock(r.mu);
    if (r.modules.erase(module) == 0) return hipErrorInvalidHandle;
    m.reset(module);
    for (auto& [name, f] : m->functions) r.functions.erase(f.get());
  }
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module,
                                            const char* kname) {
  if (function == nullptr || kname == nullptr) return hipErrorInvalidValue;
  FAKE_INIT();
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (r.modules.count(module) == 0) return hipErrorInvalidHandle;
  if (module->device != fake_hip::current_device()) return hipErrorInvalidDevice;
  auto kd = module->code.kernels.find(kname);
  if (kd == module->code.kernels.end()) return hipErrorNotFound;
  auto& slot = module->functions[kname];
  if (!slot) {
    slot = std::make_unique<ihipModuleSymbol_t>();
    slot->module = module;
    slot->name = kname;
    slot->kd = kd->second;
    slot->known = fake_hip::find_known_kernel(kname);
    r.functions.insert(slot.get());
  }
  *function = slot.get();
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipFuncGetAttribute(int* value, hipFunction_attribute attrib,
                                           hipFunction_t hfunc) {
  if (value == nullptr || hfunc == nullptr) return hipErrorInvalidValue;
  FAKE_INIT();
  ihipModuleSymbol_t f;
  int device = 0;
  if (!function_info(hfunc, f, device)) return hipErrorInvalidHandle;
  switch (attrib) {
    case HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = static_cast<int>(kMaxThreadsPerBlock);
      return hipSuccess;
    case HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *value = static_cast<int>(f.kd.group_segment_fixed_size);
      return hipSuccess;
    case HIP_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
      *value = 0;
      return hipSuccess;
    case HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *value = static_cast<int>(f.kd.private_segment_fixed_size);
      return hipSuccess;
    case HIP_FUNC_ATTRIBUTE_NUM_REGS:
      *value = static_cast<int>(((f.kd.compute_pgm_rsrc1 & 0x3f) + 1) * kVgprGranule);
      return hipSuccess;
    case HIP_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = static_cast<int>(kLdsBytes - f.kd.group_segment_fixed_size);
      return hipSuccess;
    default:
      return hipErrorInvalidValue;
  }
}

FAKE_EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX,
                                             unsigned int gridDimY, unsigned int gridDimZ,
                                             unsigned int blockDimX, unsigned int blockDimY,
                                             unsigned int blockDimZ, unsigned int sharedMemBytes,
                                             hipStream_t stream, void** kernelParams,
                                             void** extra) {
  FAKE_INIT();
  ihipModuleSymbol_t fn;
  int device = 0;
  if (f == nullptr || !function_info(f, fn, device)) return hipErrorInvalidHandle;
  if (kernelParams != nullptr && extra != nullptr) return hipErrorInvalidValue;
  const uint64_t grid[3] = {gridDimX, gridDimY, gridDimZ};
  const uint64_t block[3] = {blockDimX, blockDimY, blockDimZ};
  for (int i = 0; i < 3; ++i)
    if (grid[i] == 0 || block[i] == 0) return hipErrorInvalidValue;
  if (device != fake_hip::current_device()) return hipErrorInvalidDevice;
  ihipStream_t* s = fake_hip::stream_of(stream);
  if (s == nullptr || fake_hip::device_of(s) != device) return hipErrorInvalidHandle;
  if (block[0] * block[1] * block[2] > kMaxThreadsPerBlock) return hipErrorInvalidConfiguration;
  for (int i = 0; i < 3; ++i) {
    if (block[i] > kMaxBlockDim || grid[i] > kMaxGrid[i]) return hipErrorInvalidValue;
    if (grid[i] * block[i] >= (uint64_t{1} << 32)) return hipErrorInvalidValue;
  }
  if (size_t{sharedMemBytes} + fn.kd.group_segment_fixed_size > kLdsBytes)
    return hipErrorInvalidValue;
  // A kernel the fake has no host code for, or one of a known name whose
  // descriptor takes fewer argument bytes than the known signature.
  if (fn.known == nullptr || layout_of(*fn.known).end > fn.kd.kernarg_size)
    return hipErrorNotSupported;
  fake_hip::Launch launch;
  launch.grid = {gridDimX, gridDimY, gridDimZ};
  launch.block = {blockDimX, blockDimY, blockDimZ};
  launch.shared_bytes = sharedMemBytes;
  if (hipError_t rc = read_arguments(*fn.known, kernelParams, extra, launch); rc != hipSuccess)
    return rc;
  if (!reachable(*fn.known, launch)) return hipErrorInvalidValue;
  const fake_hip::KnownKernel* known = fn.known;
  // The arguments were copied into `launch` above: a capture records them
  // as they are now, and every replay runs with those values.
  return fake_hip::enqueue(s, [known, launch = std::move(launch)] {
    Registry& r = registry();
    if (!reachable(*known, launch)) {
      r.faults.fetch_add(1);
      return;
    }
    known->run(launch);
    r.runs.fetch_add(1);
  });
}

// --- test hooks ----------------------------------------------------------------

// Modules loaded and not unloaded.
FAKE_EXPORT int fake_hip_live_modules(void) {
  std::lock_guard lock(registry().mu);
  return static_cast<int>(registry().modules.size());
}

// Kernels that ran to completion on a stream.
FAKE_EXPORT int fake_hip_kernels_run(void) { return registry().runs.load(); }

// Kernels skipped because their memory was freed between launch and run.
FAKE_EXPORT int fake_hip_kernel_faults(void) { return registry().faults.load(); }

// HIP_LAUNCH_PARAM_BUFFER_SIZE of the latest hipModuleLaunchKernel that got
// as far as its arguments (0: no extra, -1: kernelParams).
FAKE_EXPORT long long fake_hip_last_arg_bytes(void) { return registry().last_arg_bytes.load(); }
