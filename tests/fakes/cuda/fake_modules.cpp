// The fake driver's modules, functions and launches, modelled on the CUDA
// Driver API reference ("Module Management", "Execution Control"):
//
// cuModuleLoadDataEx tells images apart by their first bytes, as the driver
// does: an ELF file is a cubin, 0xBA55ED50 a fat binary, anything else
// NUL-terminated PTX text. PTX is read by fake_ptx.cpp: its .version must be
// one this driver version supports (else CUDA_ERROR_UNSUPPORTED_PTX_VERSION),
// its .target one the device (sm_90) runs, and it must be a PTX module whose
// instructions are all ones the ISA defines (else CUDA_ERROR_INVALID_PTX);
// the reason goes to the caller's CU_JIT_ERROR_LOG_BUFFER, in ptxas's words. A successful load with
// CU_JIT_LOG_VERBOSE writes each kernel's resources to CU_JIT_INFO_LOG_BUFFER, as ptxas -v does. A
// cubin with EM_CUDA and a fat binary are well-formed but hold machine code
// the fake cannot run: CUDA_ERROR_NO_BINARY_FOR_GPU (an ELF file for another
// machine is CUDA_ERROR_INVALID_IMAGE). Each log buffer's size option is
// overwritten with the bytes written, without the NUL.
//
// Functions: cuModuleGetFunction finds .entry kernels by name
// (CUDA_ERROR_NOT_FOUND otherwise); cuFuncGetAttribute answers from the
// PTX (max threads from .maxntid/.reqntid, else 1024; static shared and
// local bytes from the declarations; registers as a stand-in, see
// fake_ptx.hpp); cuFuncSetAttribute takes MAX_DYNAMIC_SHARED_SIZE_BYTES up to
// the opt-in limit (227 KiB) less the static shared memory, the default
// being 48 KiB less it; cuFuncGetParamInfo reports the PTX parameter layout.
//
// cuLaunchKernel checks what the driver checks before queueing (block and
// grid against the device's limits and the function's, .reqntid, dynamic
// shared memory against the function's maximum, kernelParams and extra not
// both), copies the parameters (kernelParams[i] points at parameter i's
// bytes), then queues the kernel's host implementation (fake_kernels.cpp)
// on the stream, in order with its copies and host functions. Deviations,
// documented: a kernel the fake has no implementation of is
// CUDA_ERROR_NOT_SUPPORTED at launch; `extra` (a packed parameter buffer)
// is CUDA_ERROR_NOT_SUPPORTED; and a launch that would touch memory the
// context cannot reach, or index past its dynamic shared memory, is refused
// at once with CUDA_ERROR_ILLEGAL_ADDRESS, where a GPU would fault
// asynchronously and poison the context (the fake must not scribble over the
// test process).
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fake_internal.hpp"
#include "fake_kernels.hpp"
#include "fake_ptx.hpp"

namespace {

// What a function is, shared with launches still queued when its module
// is unloaded.
struct FuncInfo {
  fake_cuda::PtxEntry entry;
  const fake_cuda::HostKernel* host = nullptr;
  int isa = 0;
  int binary_version = 0;
};

}  // namespace

struct CUfunc_st {
  CUmod_st* module = nullptr;
  std::shared_ptr<const FuncInfo> info;
  std::atomic<int> max_dynamic_shared{0};
  std::atomic<int> carveout{-1};
};

struct CUmod_st {
  CUcontext ctx = nullptr;
  std::vector<CUfunc_st*> functions;
};

namespace {

std::atomic<long long> g_modules{0};
std::atomic<long long> g_launches{0};
std::atomic<long long> g_opt_ins{0};

int device_attribute(int device, CUdevice_attribute a) {
  int v = 0;
  return cuDeviceGetAttribute(&v, a, device) == CUDA_SUCCESS ? v : 0;
}

// The JIT options this fake reads; any other valid option is accepted and
// ignored (it tunes code generation the fake does not do).
struct JitOptions {
  char* info = nullptr;
  unsigned info_size = 0;
  int info_size_slot = -1;
  char* error = nullptr;
  unsigned error_size = 0;
  int error_size_slot = -1;
  bool verbose = false;
  int wall_time_slot = -1;
};

CUresult read_options(unsigned n, CUjit_option* options, void** values, JitOptions& out) {
  if (n == 0) return CUDA_SUCCESS;
  if (options == nullptr || values == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; ++i) {
    const auto v = reinterpret_cast<uintptr_t>(values[i]);
    switch (options[i]) {
      case CU_JIT_INFO_LOG_BUFFER:
        out.info = static_cast<char*>(values[i]);
        break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        out.info_size = static_cast<unsigned>(v);
        out.info_size_slot = static_cast<int>(i);
        break;
      case CU_JIT_ERROR_LOG_BUFFER:
        out.error = static_cast<char*>(values[i]);
        break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
        out.error_size = static_cast<unsigned>(v);
        out.error_size_slot = static_cast<int>(i);
        break;
      case CU_JIT_LOG_VERBOSE:
        out.verbose = v != 0;
        break;
      case CU_JIT_WALL_TIME:
        out.wall_time_slot = static_cast<int>(i);
        break;
      default:
        if (static_cast<unsigned>(options[i]) >= static_cast<unsigned>(CU_JIT_NUM_OPTIONS))
          return CUDA_ERROR_INVALID_VALUE;
        break;
    }
  }
  return CUDA_SUCCESS;
}

// Writes `text` into a log buffer (cut to fit with its NUL) and the bytes
// written into the size option's slot.
void write_log(char* buffer, unsigned size, int slot, void** values, const std::string& text) {
  size_t n = 0;
  if (buffer != nullptr && size > 0) {
    n = std::min<size_t>(text.size(), size - 1);
    std::memcpy(buffer, text.data(), n);
    buffer[n] = '\0';
  }
  if (slot >= 0) values[slot] = reinterpret_cast<void*>(static_cast<uintptr_t>(n));
}

void finish_logs(const JitOptions& o, void** values, const std::string& info,
                 const std::string& error) {
  write_log(o.info, o.info_size, o.info_size_slot, values, info);
  write_log(o.error, o.error_size, o.error_size_slot, values, error);
  if (o.wall_time_slot >= 0) {  // milliseconds in the compiler: nothing worth counting
    float ms = 0.0f;
    std::memcpy(&values[o.wall_time_slot], &ms, sizeof ms);
  }
}

std::string info_log(const fake_cuda::PtxModule& m, int sm) {
  const std::string head = "ptxas (fake driver) info    : ";
  std::string log;
  for (const fake_cuda::PtxEntry& e : m.entries) {
    log += head + "Compiling entry function '" + e.name + "' for 'sm_" + std::to_string(sm) + "'\n";
    log += head + "Function properties for " + e.name + "\n";
    log += "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
    log += head + "Used " + std::to_string(e.registers) + " registers, " +
           std::to_string(e.static_shared) + " bytes smem, " + std::to_string(e.local_bytes) +
           " bytes lmem\n";
  }
  return log;
}

// A cubin or a fat binary: well-formed or not, never runnable here.
CUresult binary_image(const unsigned char* b, std::string& error) {
  if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') {
    const unsigned machine =
        b[5] == 2 ? unsigned(b[18]) << 8 | b[19] : b[18] | unsigned(b[19]) << 8;
    if (b[4] != 2 || machine != 190) {  // ELFCLASS64, EM_CUDA
      error = "(fake driver) the ELF image is not a 64-bit CUDA cubin (EM_CUDA)\n";
      return CUDA_ERROR_INVALID_IMAGE;
    }
    error =
        "(fake driver) a cubin holds machine code (SASS), which this fake driver cannot "
        "run; load PTX\n";
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  error =
      "(fake driver) a fat binary holds machine code or compressed PTX, which this fake "
      "driver does not unpack; load PTX\n";
  return CUDA_ERROR_NO_BINARY_FOR_GPU;
}

bool is_binary(const unsigned char* b) {
  uint32_t magic = 0;
  std::memcpy(&magic, b, sizeof magic);
  return (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') || magic == 0xBA55ED50u ||
         magic == 0x466243B1u;
}

CUfunc_st* live_function(CUfunction f) {
  return f != nullptr && fake_cuda::tracked(f) ? f : nullptr;
}

}  // namespace

namespace fake_cuda {

long long module_counter(const std::string& name) {
  if (name == "modules") return g_modules.load();
  if (name == "kernel_launches") return g_launches.load();
  if (name == "dynamic_shared_opt_ins") return g_opt_ins.load();
  return -1;
}

}  // namespace fake_cuda

extern "C" {

CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                            CUjit_option* options, void** optionValues) {
  CUcontext ctx = nullptr;
  if (CUresult rc = fake_cuda::current_context(&ctx); rc != CUDA_SUCCESS) return rc;
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  JitOptions jit;
  if (CUresult rc = read_options(numOptions, options, optionValues, jit); rc != CUDA_SUCCESS)
    return rc;
  const int dev = fake_cuda::context_device(ctx);
  const int sm = device_attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
                 device_attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  const auto* bytes = static_cast<const unsigned char*>(image);
  std::string error;
  if (is_binary(bytes)) {
    CUresult rc = binary_image(bytes, error);
    finish_logs(jit, optionValues, "", error);
    return rc;
  }
  fake_cuda::PtxModule ptx;
  const int max_isa = fake_cuda::max_ptx_isa(fake_cuda::driver_version());
  if (int rc = fake_cuda::parse_ptx(static_cast<const char*>(image), max_isa, sm, ptx, error);
      rc != CUDA_SUCCESS) {
    finish_logs(jit, optionValues, "", error);
    return static_cast<CUresult>(rc);
  }
  auto* m = new CUmod_st();
  m->ctx = ctx;
  const int shared_default = device_attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  for (const fake_cuda::PtxEntry& e : ptx.entries) {
    auto info = std::make_shared<FuncInfo>();
    info->entry = e;
    std::vector<size_t> sizes;
    for (const fake_cuda::PtxParam& p : e.params) sizes.push_back(p.size);
    info->host = fake_cuda::find_host_kernel(e.name, sizes);
    info->isa = ptx.isa;
    info->binary_version = sm;
    auto* f = new CUfunc_st();
    f->module = m;
    f->info = std::move(info);
    f->max_dynamic_shared.store(std::max(0, shared_default - static_cast<int>(e.static_shared)));
    m->functions.push_back(f);
    fake_cuda::track(f);
  }
  fake_cuda::track(m);
  g_modules.fetch_add(1);
  finish_logs(jit, optionValues, jit.verbose ? info_log(ptx, sm) : "", "");
  *module = m;
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule hmod) {
  CUcontext ctx = nullptr;
  if (CUresult rc = fake_cuda::current_context(&ctx); rc != CUDA_SUCCESS) return rc;
  if (hmod == nullptr || !fake_cuda::untrack(hmod)) return CUDA_ERROR_INVALID_VALUE;
  for (CUfunc_st* f : hmod->functions) {
    fake_cuda::untrack(f);
    delete f;  // queued launches keep their FuncInfo (shared_ptr)
  }
  delete hmod;
  g_modules.fetch_sub(1);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  CUcontext ctx = nullptr;
  if (CUresult rc = fake_cuda::current_context(&ctx); rc != CUDA_SUCCESS) return rc;
  if (hfunc == nullptr || name == nullptr || hmod == nullptr || !fake_cuda::tracked(hmod))
    return CUDA_ERROR_INVALID_VALUE;
  for (CUfunc_st* f : hmod->functions) {
    if (f->info->entry.name == name) {
      *hfunc = f;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  CUcontext ctx = nullptr;
  if (CUresult rc = fake_cuda::current_context(&ctx); rc != CUDA_SUCCESS) return rc;
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUfunc_st* f = live_function(hfunc);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const fake_cuda::PtxEntry& e = f->info->entry;
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *pi = e.max_threads;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *pi = static_cast<int>(e.static_shared);
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
      *pi = 0;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *pi = static_cast<int>(e.local_bytes);
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *pi = e.registers;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
      *pi = f->info->isa;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *pi = f->info->binary_version;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
      *pi = 0;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *pi = f->max_dynamic_shared.load();
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      *pi = f->carveout.load();
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;  // not modelled
  }
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  CUcontext ctx = nullptr;
  if (CUresult rc = fake_cuda::current_context(&ctx); rc != CUDA_SUCCESS) return rc;
  CUfunc_st* f = live_function(hfunc);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const int dev = fake_cuda::context_device(f->module->ctx);
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: {
      const long long optin =
          device_attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
      if (value < 0 || value + static_cast<long long>(f->info->entry.static_shared) > optin)
        return CUDA_ERROR_INVALID_VALUE;
      if (value > f->max_dynamic_shared.exchange(value)) g_opt_ins.fetch_add(1);
      return CUDA_SUCCESS;
    }
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
      f->carveout.store(value);
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t* paramOffset,
                            size_t* paramSize) {
  CUcontext ctx = nullptr;
  if (CUresult rc = fake_cuda::current_context(&ctx); rc != CUDA_SUCCESS) return rc;
  CUfunc_st* f = live_function(func);
  if (f == nullptr || paramOffset == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto& params = f->info->entry.params;
  if (paramIndex >= params.size()) return CUDA_ERROR_INVALID_VALUE;
  *paramOffset = params[paramIndex].offset;
  if (paramSize != nullptr) *paramSize = params[paramIndex].size;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void** kernelParams, void** extra) {
  CUcontext ctx = nullptr;
  if (CUresult rc = fake_cuda::current_context(&ctx); rc != CUDA_SUCCESS) return rc;
  CUfunc_st* fn = live_function(f);
  if (fn == nullptr || fn->module->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
  void* queue = nullptr;
  if (CUresult rc = fake_cuda::stream_for_launch(hStream, &queue); rc != CUDA_SUCCESS) return rc;
  const std::shared_ptr<const FuncInfo> info = fn->info;
  const fake_cuda::PtxEntry& e = info->entry;
  const int dev = fake_cuda::context_device(ctx);
  const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
  const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
  const CUdevice_attribute max_grid[3] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                                          CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                          CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
  const CUdevice_attribute max_block[3] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                                           CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                           CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
  unsigned long long threads = 1;
  for (int k = 0; k < 3; ++k) {
    if (grid[k] == 0 || block[k] == 0) return CUDA_ERROR_INVALID_VALUE;
    if (grid[k] > static_cast<unsigned>(device_attribute(dev, max_grid[k])) ||
        block[k] > static_cast<unsigned>(device_attribute(dev, max_block[k])))
      return CUDA_ERROR_INVALID_VALUE;
    if (e.reqntid[0] != 0 && block[k] != static_cast<unsigned>(e.reqntid[k]))
      return CUDA_ERROR_INVALID_VALUE;
    threads *= block[k];
  }
  if (threads > static_cast<unsigned long long>(e.max_threads)) return CUDA_ERROR_INVALID_VALUE;
  if (sharedMemBytes > static_cast<unsigned>(fn->max_dynamic_shared.load()))
    return CUDA_ERROR_INVALID_VALUE;
  if (kernelParams != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (extra != nullptr) return CUDA_ERROR_NOT_SUPPORTED;  // packed buffers: not modelled
  fake_cuda::KernelLaunch launch;
  size_t end = 0;
  for (const fake_cuda::PtxParam& p : e.params) end = std::max(end, p.offset + p.size);
  launch.params.assign(end, 0);
  for (size_t k = 0; k < e.params.size(); ++k) {
    if (kernelParams == nullptr || kernelParams[k] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(launch.params.data() + e.params[k].offset, kernelParams[k], e.params[k].size);
    launch.offsets.push_back(e.params[k].offset);
  }
  if (info->host == nullptr) return CUDA_ERROR_NOT_SUPPORTED;  // no host implementation
  for (int k = 0; k < 3; ++k) {
    launch.grid[k] = grid[k];
    launch.block[k] = block[k];
  }
  launch.dynamic_shared = sharedMemBytes;
  std::vector<fake_cuda::Touched> touched;
  if (!info->host->footprint(launch, touched)) return CUDA_ERROR_ILLEGAL_ADDRESS;
  for (const fake_cuda::Touched& t : touched)
    if (!fake_cuda::kernel_can_access(ctx, t.address, t.bytes)) return CUDA_ERROR_ILLEGAL_ADDRESS;
  // Recorded instead while the stream captures: the parameters were copied
  // above, so the node keeps this call's values.
  CUresult rc =
      fake_cuda::submit(queue, [info, launch = std::move(launch)] { info->host->run(launch); });
  if (rc == CUDA_SUCCESS) g_launches.fetch_add(1);
  return rc;
}

}  // extern "C"
