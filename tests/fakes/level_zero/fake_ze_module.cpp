// Modules, build logs and kernels of the fake driver, from the Level Zero
// specification's "Modules" and "Kernels" chapters (zeModuleCreate,
// zeModuleBuildLog*, zeKernel*, zeCommandListAppendLaunchKernel):
//  - zeModuleCreate reads SPIR-V (fake_ze_spirv.cpp) for its kernels and
//    their parameters; the build fails (ZE_RESULT_ERROR_MODULE_BUILD_FAILURE,
//    the reason in the build log) for a malformed module, a SPIR-V version
//    newer than the device's spirvVersionSupported, or a build flag that is
//    neither one of the specification's (-ze-opt-disable,
//    -ze-opt-level=N, -ze-opt-greater-than-4GB-buffer-required,
//    -ze-opt-large-register-file, -ze-opt-has-buffer-offset-arg, -g) nor an
//    OpenCL -cl-* option (the fake's choice: the specification says nothing
//    of others). It has no native binary format: ZE_MODULE_FORMAT_NATIVE is
//    ZE_RESULT_ERROR_INVALID_NATIVE_BINARY. A build log is made whenever the
//    caller asks for one, on failure too, and says what was built.
//  - Kernels keep a group size (1x1x1 until set: the specification gives no
//    default) and their arguments, checked against the SPIR-V parameter
//    (index: ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX; size:
//    ..._ARGUMENT_SIZE; a local-memory parameter takes a size and no value).
//    A value parameter whose type the SPIR-V reader cannot size (not a
//    scalar, vector or pointer: a sampler, an image) takes no size at all
//    (..._ARGUMENT_SIZE), where a driver would know its size: the fake
//    cannot check it, so it does not accept it.
//    Setting them from two threads at once, which the specification
//    forbids, is counted (fake_ze_kernel_races()).
//  - A launch captures the group size and arguments at append and runs on
//    the list's worker in order with its other commands (fake_ze_kernels.cpp),
//    writing kernel timestamps. Refused at append: an argument never set,
//    local memory over maxSharedLocalMemory, group counts over
//    maxGroupCount (ZE_RESULT_ERROR_INVALID_ARGUMENT: the fake's choice), a
//    kernel of another context or device, and a kernel the fake cannot run
//    (ZE_RESULT_ERROR_UNSUPPORTED_FEATURE).
//  - Destroying a kernel with launches queued, or a module with live
//    kernels, is ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE (the specification
//    requires the application to prevent both).
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <sstream>

#include "fake_ze.hpp"
#include "fake_ze_kernels.hpp"
#include "fake_ze_spirv.hpp"

namespace fake_ze {

struct FakeModule {
  uint32_t magic = kModuleMagic;
  FakeDevice* dev = nullptr;
  FakeContext* ctx = nullptr;
  SpirvModule spirv;     // never changed after the build: kernels point into it
  int live_kernels = 0;  // guarded by g_mu
};

struct FakeBuildLog {
  uint32_t magic = kBuildLogMagic;
  std::string text;
};

struct FakeKernel {
  uint32_t magic = kKernelMagic;
  FakeModule* module = nullptr;
  const SpirvKernel* sig = nullptr;
  const HostKernel* impl = nullptr;  // null: the fake cannot run it
  std::string why_not;               // ... and why
  uint32_t group[3] = {1, 1, 1};
  std::vector<LaunchArg> args;
  std::vector<bool> set;
  std::atomic<int> in_call{0};  // threads inside SetGroupSize / SetArgumentValue
  int pending = 0;              // launches queued or running; guarded by g_mu
};

namespace {

std::atomic<int> g_kernel_faults{0};
std::atomic<int> g_kernel_races{0};

// Counts (and reports) two threads setting one kernel's state at once.
class KernelCall {
 public:
  explicit KernelCall(FakeKernel* k, const char* fn) : k_(k) {
    if (k_->in_call.fetch_add(1) != 0) {
      g_kernel_races.fetch_add(1);
      std::fprintf(stderr,
                   "fake_ze: %s on kernel '%s' while another thread sets its state (the "
                   "specification forbids simultaneous calls with one kernel handle)\n",
                   fn, k_->sig->name.c_str());
    }
  }
  ~KernelCall() { k_->in_call.fetch_sub(1); }
  KernelCall(const KernelCall&) = delete;
  KernelCall& operator=(const KernelCall&) = delete;

 private:
  FakeKernel* k_;
};

// Checks the build flags; "" when all are known, else the log's error.
std::string check_flags(const char* flags) {
  if (flags == nullptr) return {};
  std::istringstream in(flags);
  std::string f;
  while (in >> f) {
    if (f == "-ze-opt-disable" || f == "-ze-opt-greater-than-4GB-buffer-required" ||
        f == "-ze-opt-large-register-file" || f == "-ze-opt-has-buffer-offset-arg" || f == "-g" ||
        f.rfind("-cl-", 0) == 0)
      continue;
    if (f.rfind("-ze-opt-level=", 0) == 0 && f.size() == 15 && f[14] >= '0' && f[14] <= '2')
      continue;
    if (f == "-ze-opt-level") {  // the level as the next word
      std::string level;
      if (in >> level && level.size() == 1 && level[0] >= '0' && level[0] <= '2') continue;
      return "error: -ze-opt-level needs a level 0, 1 or 2";
    }
    return "error: unknown build option '" + f + "'";
  }
  return {};
}

FakeBuildLog* make_log(const std::string& text) {
  auto* l = new FakeBuildLog();
  l->text = text;
  born(l);
  return l;
}

ze_result_t fModuleCreate(ze_context_handle_t hctx, ze_device_handle_t hdev,
                          const ze_module_desc_t* desc, ze_module_handle_t* out,
                          ze_module_build_log_handle_t* out_log) {
  auto* ctx = checked<FakeContext>(hctx, kContextMagic);
  auto* dev = checked<FakeDevice>(hdev, kDeviceMagic);
  if (ctx == nullptr || dev == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || desc->pInputModule == nullptr || out == nullptr)
    return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->format > ZE_MODULE_FORMAT_NATIVE) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (desc->inputSize == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  std::string log;
  ze_result_t r = ZE_RESULT_SUCCESS;
  auto* m = new FakeModule();
  m->dev = dev;
  m->ctx = ctx;
  char head[96];
  std::snprintf(head, sizeof head, "fake_ze: building for Fake Level Zero GPU %u\n", dev->index);
  log = head;
  if (desc->format == ZE_MODULE_FORMAT_NATIVE) {
    log += "error: the fake driver has no native binary format; build from SPIR-V\n";
    r = ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
  } else if (g_spirv_version == 0) {
    log += "error: this device takes no SPIR-V\n";
    r = ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  } else if (std::string e = check_flags(desc->pBuildFlags); !e.empty()) {
    log += e + "\n";
    r = ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  } else if (std::string e = read_spirv(desc->pInputModule, desc->inputSize, &m->spirv);
             !e.empty()) {
    log += e + "\n";
    r = ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  } else if (ZE_MAKE_VERSION(m->spirv.major, m->spirv.minor) > g_spirv_version) {
    log += "error: SPIR-V " + std::to_string(m->spirv.major) + "." +
           std::to_string(m->spirv.minor) + " is newer than the device's " +
           std::to_string(ZE_MAJOR_VERSION(g_spirv_version)) + "." +
           std::to_string(ZE_MINOR_VERSION(g_spirv_version)) + "\n";
    r = ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  } else {
    log += "SPIR-V " + std::to_string(m->spirv.major) + "." + std::to_string(m->spirv.minor) +
           ", " + std::to_string(m->spirv.words) + " words, " +
           std::to_string(m->spirv.kernels.size()) + " kernels:";
    for (const SpirvKernel& k : m->spirv.kernels)
      log += " " + k.name + "(" + std::to_string(k.params.size()) + ")";
    log += "\n";
    for (const SpirvKernel& k : m->spirv.kernels) {
      std::string why;
      if (find_host_kernel(k, &why) == nullptr)
        log += "warning: kernel '" + k.name + "' cannot be launched on the fake: " + why + "\n";
    }
    if (desc->pBuildFlags != nullptr && *desc->pBuildFlags != '\0')
      log += std::string("build flags: ") + desc->pBuildFlags + "\n";
  }
  if (out_log != nullptr) *out_log = reinterpret_cast<ze_module_build_log_handle_t>(make_log(log));
  if (r != ZE_RESULT_SUCCESS) {
    delete m;
    return r;
  }
  born(m);
  *out = reinterpret_cast<ze_module_handle_t>(m);
  return ZE_RESULT_SUCCESS;
}

ze_result_t fModuleDestroy(ze_module_handle_t h) {
  auto* m = checked<FakeModule>(h, kModuleMagic);
  if (m == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  {
    std::lock_guard lock(g_mu);
    if (m->live_kernels != 0) return ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
    m->magic = 0;
  }
  died(m);
  delete m;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fModuleGetKernelNames(ze_module_handle_t h, uint32_t* count, const char** names) {
  auto* m = checked<FakeModule>(h, kModuleMagic);
  if (m == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (count == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const auto n = static_cast<uint32_t>(m->spirv.kernels.size());
  if (*count == 0 || names == nullptr) {
    *count = n;
    return ZE_RESULT_SUCCESS;
  }
  if (*count > n) *count = n;
  for (uint32_t i = 0; i < *count; ++i) names[i] = m->spirv.kernels[i].name.c_str();
  return ZE_RESULT_SUCCESS;
}

ze_result_t fBuildLogDestroy(ze_module_build_log_handle_t h) {
  auto* l = checked<FakeBuildLog>(h, kBuildLogMagic);
  if (l == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  l->magic = 0;
  died(l);
  delete l;
  return ZE_RESULT_SUCCESS;
}

// The size asked for counts the terminating NUL; a smaller buffer gets the
// start of the log, NUL-terminated.
ze_result_t fBuildLogGetString(ze_module_build_log_handle_t h, size_t* size, char* text) {
  auto* l = checked<FakeBuildLog>(h, kBuildLogMagic);
  if (l == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (size == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (text == nullptr || *size == 0) {
    *size = l->text.size() + 1;
    return ZE_RESULT_SUCCESS;
  }
  size_t n = std::min(*size - 1, l->text.size());
  std::memcpy(text, l->text.data(), n);
  text[n] = '\0';
  return ZE_RESULT_SUCCESS;
}

ze_result_t fKernelCreate(ze_module_handle_t h, const ze_kernel_desc_t* desc,
                          ze_kernel_handle_t* out) {
  auto* m = checked<FakeModule>(h, kModuleMagic);
  if (m == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || desc->pKernelName == nullptr || out == nullptr)
    return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->flags > 0x3) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  const SpirvKernel* sig = nullptr;
  for (const SpirvKernel& k : m->spirv.kernels)
    if (k.name == desc->pKernelName) sig = &k;
  if (sig == nullptr) return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  auto* k = new FakeKernel();
  k->module = m;
  k->sig = sig;
  k->impl = find_host_kernel(*sig, &k->why_not);
  k->args.resize(sig->params.size());
  k->set.assign(sig->params.size(), false);
  for (size_t i = 0; i < sig->params.size(); ++i) k->args[i].kind = sig->params[i].kind;
  {
    std::lock_guard lock(g_mu);
    ++m->live_kernels;
  }
  born(k);
  *out = reinterpret_cast<ze_kernel_handle_t>(k);
  return ZE_RESULT_SUCCESS;
}

ze_result_t fKernelDestroy(ze_kernel_handle_t h) {
  auto* k = checked<FakeKernel>(h, kKernelMagic);
  if (k == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  {
    std::lock_guard lock(g_mu);
    if (k->pending != 0) return ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
    k->magic = 0;
    --k->module->live_kernels;
  }
  died(k);
  delete k;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fKernelGetProperties(ze_kernel_handle_t h, ze_kernel_properties_t* p) {
  auto* k = checked<FakeKernel>(h, kKernelMagic);
  if (k == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->numKernelArgs = static_cast<uint32_t>(k->sig->params.size());
  p->requiredGroupSizeX = p->requiredGroupSizeY = p->requiredGroupSizeZ = 0;
  p->requiredNumSubGroups = 0;
  p->requiredSubgroupSize = 0;
  p->maxSubgroupSize = kKernelSubgroupSize;
  p->maxNumSubgroups = kMaxTotalGroupSize / kKernelSubgroupSize;
  p->localMemSize = 0;  // the reference kernels declare no __local variables
  p->privateMemSize = 0;
  p->spillMemSize = 0;
  std::memset(&p->uuid, 0, sizeof p->uuid);
  return ZE_RESULT_SUCCESS;
}

ze_result_t fKernelGetName(ze_kernel_handle_t h, size_t* size, char* name) {
  auto* k = checked<FakeKernel>(h, kKernelMagic);
  if (k == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (size == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const std::string& n = k->sig->name;
  if (name == nullptr || *size == 0) {
    *size = n.size() + 1;
    return ZE_RESULT_SUCCESS;
  }
  size_t c = std::min(*size - 1, n.size());
  std::memcpy(name, n.data(), c);
  name[c] = '\0';
  return ZE_RESULT_SUCCESS;
}

ze_result_t fKernelSetGroupSize(ze_kernel_handle_t h, uint32_t x, uint32_t y, uint32_t z) {
  auto* k = checked<FakeKernel>(h, kKernelMagic);
  if (k == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  KernelCall call(k, "zeKernelSetGroupSize");
  if (x == 0 || y == 0 || z == 0 || x > kMaxGroupSizeXY || y > kMaxGroupSizeXY ||
      z > g_max_group_size_z || uint64_t{x} * y * z > kMaxTotalGroupSize)
    return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  k->group[0] = x;
  k->group[1] = y;
  k->group[2] = z;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fKernelSetArgumentValue(ze_kernel_handle_t h, uint32_t index, size_t size,
                                    const void* value) {
  auto* k = checked<FakeKernel>(h, kKernelMagic);
  if (k == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  KernelCall call(k, "zeKernelSetArgumentValue");
  if (index >= k->sig->params.size()) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
  const SpirvParam& p = k->sig->params[index];
  LaunchArg a;
  a.kind = p.kind;
  switch (p.kind) {
    case ParamKind::Global:
      if (size != sizeof(void*)) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
      if (value != nullptr) std::memcpy(&a.ptr, value, sizeof(void*));
      break;
    case ParamKind::Local:
      if (size == 0) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
      if (value != nullptr) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
      a.local_bytes = size;
      break;
    case ParamKind::Value:
      // p.size 0: a type the SPIR-V reader does not size (a sampler, an
      // image, a struct): no size can be checked, so none is taken, rather
      // than whatever the caller says.
      if (p.size == 0 || size != p.size) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
      a.value.assign(size, 0);  // a null value is a zero value
      if (value != nullptr) std::memcpy(a.value.data(), value, size);
      break;
  }
  k->args[index] = std::move(a);
  k->set[index] = true;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

ze_result_t fAppendLaunchKernel(ze_command_list_handle_t hlist, ze_kernel_handle_t hkernel,
                                const ze_group_count_t* groups, ze_event_handle_t signal,
                                uint32_t nwait, ze_event_handle_t* waits) {
  auto* l = checked<FakeList>(hlist, kListMagic);
  auto* k = checked<FakeKernel>(hkernel, kKernelMagic);
  if (l == nullptr || k == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (groups == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (k->module->ctx != l->ctx || k->module->dev != l->dev) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (k->impl == nullptr) {
    std::fprintf(stderr, "fake_ze: kernel '%s' cannot be launched: %s\n", k->sig->name.c_str(),
                 k->why_not.c_str());
    return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  }
  if (groups->groupCountX > kMaxGroupCount || groups->groupCountY > kMaxGroupCount ||
      groups->groupCountZ > kMaxGroupCount)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  auto launch = std::make_shared<Launch>();
  launch->kernel = k;
  launch->name = k->sig->name;
  launch->count[0] = groups->groupCountX;
  launch->count[1] = groups->groupCountY;
  launch->count[2] = groups->groupCountZ;
  size_t local = 0;
  for (size_t i = 0; i < k->args.size(); ++i) {
    if (!k->set[i]) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // never set
    local += k->args[i].local_bytes;
  }
  if (local > kMaxSharedLocalMemory) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  std::copy(std::begin(k->group), std::end(k->group), launch->size);
  launch->args = k->args;
  launch->dev = l->dev;
  launch->ctx = l->ctx;
  {
    std::lock_guard lock(g_mu);
    ++k->pending;
  }
  Cmd c;
  c.kind = Cmd::Kernel;
  c.launch = std::move(launch);
  ze_result_t r = enqueue(hlist, std::move(c), signal, nwait, waits);
  if (r != ZE_RESULT_SUCCESS) {
    std::lock_guard lock(g_mu);
    --k->pending;
  }
  return r;
}

void run_launch(FakeList* list, Launch& launch) {
  std::vector<size_t> limits(launch.args.size(), 0);
  {
    std::lock_guard lock(g_mu);
    for (size_t i = 0; i < launch.args.size(); ++i) {
      const LaunchArg& a = launch.args[i];
      if (a.kind != ParamKind::Global || a.ptr == nullptr) continue;
      // The allocation the pointer falls in, as the list's device reaches it.
      const auto p = reinterpret_cast<uintptr_t>(a.ptr);
      auto it = g_allocs.upper_bound(p);
      if (it == g_allocs.begin()) continue;
      --it;
      if (p >= it->first + it->second.bytes ||
          check_access(list->dev, list->ctx, a.ptr, 1) != ZE_RESULT_SUCCESS)
        continue;  // nothing reachable
      limits[i] = it->first + it->second.bytes - p;
    }
  }
  Exec exec(launch, std::move(limits));
  bool empty_grid = launch.count[0] == 0 || launch.count[1] == 0 || launch.count[2] == 0;
  if (!empty_grid) launch.kernel->impl->run(exec);
  if (!exec.ok()) {
    g_kernel_faults.fetch_add(1);
    std::fprintf(stderr, "fake_ze: kernel '%s' faulted (a device would report a page fault): %s\n",
                 launch.name.c_str(), exec.fault_text().c_str());
  }
  std::lock_guard lock(g_mu);
  --launch.kernel->pending;
}

}  // namespace fake_ze

using namespace fake_ze;

// --- test hooks (not Level Zero entry points: tests dlopen this driver) -----

// Launches that touched memory outside what their pointer arguments reach.
FAKE_EXPORT int fake_ze_kernel_faults() { return g_kernel_faults.load(); }
// Calls that set one kernel's group size or arguments from two threads at once.
FAKE_EXPORT int fake_ze_kernel_races() { return g_kernel_races.load(); }

// --- the tables the loader asks for -------------------------------------------

FAKE_EXPORT ze_result_t zeGetModuleProcAddrTable(ze_api_version_t, ze_module_dditable_t* t) {
  if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *t = {};
  t->pfnCreate = fModuleCreate;
  t->pfnDestroy = fModuleDestroy;
  t->pfnGetKernelNames = fModuleGetKernelNames;
  return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeGetModuleBuildLogProcAddrTable(ze_api_version_t,
                                                         ze_module_build_log_dditable_t* t) {
  if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *t = {};
  t->pfnDestroy = fBuildLogDestroy;
  t->pfnGetString = fBuildLogGetString;
  return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeGetKernelProcAddrTable(ze_api_version_t, ze_kernel_dditable_t* t) {
  if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *t = {};
  t->pfnCreate = fKernelCreate;
  t->pfnDestroy = fKernelDestroy;
  t->pfnSetGroupSize = fKernelSetGroupSize;
  t->pfnSetArgumentValue = fKernelSetArgumentValue;
  t->pfnGetProperties = fKernelGetProperties;
  t->pfnGetName = fKernelGetName;
  return ZE_RESULT_SUCCESS;
}
