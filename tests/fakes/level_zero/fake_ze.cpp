// A fake Level Zero GPU driver, loaded by the real Level Zero loader through
// ZE_ENABLE_ALT_DRIVERS=/abs/path/libfake_ze.so. Test double of this project,
// never installed.
//
// The loader (1.8) asks a driver for every ze/zet/zes Get*ProcAddrTable and
// refuses it when one is missing, so all are exported; the tables this fake
// does not implement stay empty (NULL entries: the loader answers
// ZE_RESULT_ERROR_UNSUPPORTED_FEATURE or UNINITIALIZED for them).
//
// Model:
//  - FAKE_ZE_DEVICES=N GPU devices (default 2; 0 gives a driver with no
//    device), FAKE_ZE_MEMORY bytes each (default 256 MiB).
//  - Immediate command lists run their commands on a worker thread each, in
//    order: appends return at once, so not-ready states, ordering and timing
//    are observable. Waits block the worker until the event is signalled.
//  - Events are host-visible. Kernel timestamps (pools created with
//    ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) are a 40-bit nanosecond counter
//    (timerResolution 1 GHz), written by barriers, copies and fills; a
//    zeCommandListAppendSignalEvent or zeEventHostSignal leaves them
//    undefined, as the specification says (the fake writes garbage).
//  - Device memory is host memory; every pointer that falls inside a device
//    allocation is checked against its bounds, and frees of unknown pointers
//    are refused. Destroying a list with queued work is refused
//    (ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE), as is destroying a busy pool.
//  - Sysman: zesDeviceEnumMemoryModules / zesMemoryGetState on the core
//    device handles (one module; free = size - allocated).
//  - Host memory (zeMemAllocHost) is reachable by every device of its
//    context; device memory by its own device and, when FAKE_ZE_PEER=1 (the
//    default), by every other device (zeDeviceCanAccessPeer answers the same
//    model: 0 with FAKE_ZE_PEER=0). Level Zero needs no enabling: a copy on
//    a list of one device may name memory of another it can access. A copy
//    or fill naming memory the list's device cannot reach, or memory of
//    another context, is refused at append (ZE_RESULT_ERROR_INVALID_ARGUMENT,
//    what the validation layer reports; a real device would fault).
//    zeMemGetAllocProperties tells host, device and unknown memory apart.
//  - Devices report compute, memory-access, cache and module properties of
//    a modelled part (sub-groups 8/16/32, 1024 work-items per group, 2^30
//    groups per dimension, 64 KiB of local memory, one 16 MiB last-level
//    cache, SPIR-V 1.2, FP16 and FP64; FAKE_ZE_FP64=0 / FAKE_ZE_FP16=0 drop
//    those module flags, FAKE_ZE_SPIRV=0 reports no SPIR-V version,
//    FAKE_ZE_MAX_GROUP_SIZE_Z=N lowers maxGroupSizeZ).
//  - Modules from SPIR-V, build logs, kernels and launches
//    (fake_ze_module.cpp has the model): the kernels of
//    kernels/accel_kernels.cl run on the host (fake_ze_kernels.cpp), in order
//    with the list's other commands.
//  - fake_ze_live_command_lists() (exported, for tests that dlopen this
//    driver) counts the command lists created and not yet destroyed;
//    fake_ze_kernel_faults() and fake_ze_kernel_races() count launches that
//    touched unreachable memory and kernels set from two threads at once.
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_api.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_api.h>
#include <level_zero/zet_ddi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "fake_ze.hpp"

namespace fake_ze {

std::mutex& g_mu = *new std::mutex();
std::condition_variable& g_cv = *new std::condition_variable();
std::map<uintptr_t, Allocation>& g_allocs = *new std::map<uintptr_t, Allocation>();
bool g_peer = true;
uint32_t g_max_group_size_z = kMaxGroupSizeXY;
uint32_t g_spirv_version = ZE_MAKE_VERSION(1, 2);

}  // namespace fake_ze

using namespace fake_ze;

namespace {

constexpr uint32_t kTimestampBits = 40;
constexpr uint64_t kTimestampMask = (1ull << kTimestampBits) - 1;

FakeDriver* g_driver = nullptr;
bool g_fp64 = true, g_fp16 = true;  // FAKE_ZE_FP64, FAKE_ZE_FP16
uint64_t g_next_alloc_id = 1;       // guarded by g_mu
int g_live_lists = 0;               // guarded by g_mu

// Every live object the fake made. Keeps objects reachable while only the
// loader's handle wrappers (intercept mode, freed by the loader at exit)
// point at them, so LeakSanitizer reports only what a client really leaked.
std::mutex& g_live_mu = *new std::mutex();
std::unordered_set<const void*>& g_live = *new std::unordered_set<const void*>();
std::once_flag g_once;

uint64_t now_ticks() {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::steady_clock::now().time_since_epoch())
                .count();
  return static_cast<uint64_t>(ns) & kTimestampMask;
}

uint64_t env_u64(const char* name, uint64_t dflt) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return dflt;
  char* end = nullptr;
  unsigned long long x = std::strtoull(v, &end, 0);
  return end != nullptr && *end == '\0' ? x : dflt;
}

void make_driver() {
  auto* d = new FakeDriver();
  uint64_t n = env_u64("FAKE_ZE_DEVICES", 2);
  uint64_t mem = env_u64("FAKE_ZE_MEMORY", 256ull << 20);
  g_peer = env_u64("FAKE_ZE_PEER", 1) != 0;
  g_fp64 = env_u64("FAKE_ZE_FP64", 1) != 0;
  g_fp16 = env_u64("FAKE_ZE_FP16", 1) != 0;
  g_max_group_size_z = static_cast<uint32_t>(std::clamp<uint64_t>(
      env_u64("FAKE_ZE_MAX_GROUP_SIZE_Z", kMaxGroupSizeXY), 1, kMaxGroupSizeXY));
  g_spirv_version = env_u64("FAKE_ZE_SPIRV", 1) != 0 ? ZE_MAKE_VERSION(1, 2) : 0;
  for (uint64_t i = 0; i < n && i < 64; ++i) {
    auto* dev = new FakeDevice();
    dev->index = static_cast<uint32_t>(i);
    dev->memory = mem;
    d->devices.push_back(dev);
  }
  g_driver = d;
}

}  // namespace

void fake_ze::born(const void* p) {
  std::lock_guard lock(g_live_mu);
  g_live.insert(p);
}

void fake_ze::died(const void* p) {
  std::lock_guard lock(g_live_mu);
  g_live.erase(p);
}

const Allocation* fake_ze::find_alloc(const void* p, size_t bytes, bool* overflow) {
  *overflow = false;
  auto a = reinterpret_cast<uintptr_t>(p);
  auto it = g_allocs.upper_bound(a);
  if (it == g_allocs.begin()) return nullptr;
  --it;
  if (a >= it->first + it->second.bytes) return nullptr;
  if (bytes > it->first + it->second.bytes - a) *overflow = true;
  return &it->second;
}

// Whether a command of a list of `dev` in `ctx` may touch [p, p + bytes):
// memory the fake does not know is pageable host memory (reachable, as the
// driver stages it), its own allocations must be of the list's context and
// device memory of a device `dev` can access. Caller holds g_mu.
ze_result_t fake_ze::check_access(FakeDevice* dev, FakeContext* ctx, const void* p, size_t bytes) {
  bool over = false;
  const Allocation* a = find_alloc(p, bytes, &over);
  if (over) return ZE_RESULT_ERROR_INVALID_SIZE;
  if (a == nullptr) return ZE_RESULT_SUCCESS;
  if (a->ctx != ctx) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (a->dev != nullptr && a->dev != dev && !g_peer) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

namespace {

// --- command lists --------------------------------------------------------

void signal_event(FakeEvent* e, bool timestamps_defined, uint64_t start, uint64_t end) {
  if (e == nullptr) return;
  if (timestamps_defined) {
    e->ts.global.kernelStart = e->ts.context.kernelStart = start;
    e->ts.global.kernelEnd = e->ts.context.kernelEnd = end;
  } else {
    // Undefined by the spec: make a plugin that relies on it visibly wrong.
    e->ts.global.kernelStart = e->ts.global.kernelEnd = 0xbad0bad0ull & kTimestampMask;
    e->ts.context = e->ts.global;
  }
  e->signalled = true;
}

void worker_loop(FakeList* l) {
  std::unique_lock lock(g_mu);
  for (;;) {
    g_cv.wait(lock, [&] { return l->stop || !l->queue.empty(); });
    if (l->queue.empty()) return;
    Cmd c = std::move(l->queue.front());
    l->queue.pop_front();
    l->running = true;
    g_cv.wait(lock, [&] {
      for (FakeEvent* w : c.waits)
        if (!w->signalled) return false;
      return true;
    });
    uint64_t start = now_ticks();
    lock.unlock();
    if (c.kind == Cmd::Copy) {
      std::memmove(c.dst, c.src, c.bytes);
    } else if (c.kind == Cmd::Fill) {
      auto* d = static_cast<unsigned char*>(c.dst);
      for (size_t i = 0; i < c.bytes; i += c.pattern.size())
        std::memcpy(d + i, c.pattern.data(), c.pattern.size());
    } else if (c.kind == Cmd::Kernel) {
      run_launch(l, *c.launch);
    }
    lock.lock();
    signal_event(c.signal, c.kind != Cmd::Signal, start, now_ticks());
    l->running = false;
    g_cv.notify_all();
  }
}

}  // namespace

ze_result_t fake_ze::enqueue(ze_command_list_handle_t h, Cmd&& c, ze_event_handle_t signal,
                             uint32_t nwait, ze_event_handle_t* waits) {
  auto* l = checked<FakeList>(h, kListMagic);
  if (l == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (signal != nullptr) {
    c.signal = checked<FakeEvent>(signal, kEventMagic);
    if (c.signal == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  }
  if (nwait > 0 && waits == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  for (uint32_t i = 0; i < nwait; ++i) {
    auto* w = checked<FakeEvent>(waits[i], kEventMagic);
    if (w == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    c.waits.push_back(w);
  }
  std::lock_guard lock(g_mu);
  l->queue.push_back(std::move(c));
  g_cv.notify_all();
  return ZE_RESULT_SUCCESS;
}

namespace {

// --- ze entry points ---------------------------------------------------------

ze_result_t fInit(ze_init_flags_t flags) {
  if (flags != 0 && (flags & ZE_INIT_FLAG_GPU_ONLY) == 0) return ZE_RESULT_ERROR_UNINITIALIZED;
  std::call_once(g_once, make_driver);
  return ZE_RESULT_SUCCESS;
}

ze_result_t fDriverGet(uint32_t* count, ze_driver_handle_t* drivers) {
  if (g_driver == nullptr) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (count == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*count == 0 || drivers == nullptr) {
    *count = 1;
    return ZE_RESULT_SUCCESS;
  }
  drivers[0] = reinterpret_cast<ze_driver_handle_t>(g_driver);
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fDriverGetApiVersion(ze_driver_handle_t h, ze_api_version_t* v) {
  if (checked<FakeDriver>(h, kDriverMagic) == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  *v = ZE_API_VERSION_1_4;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fDriverGetProperties(ze_driver_handle_t h, ze_driver_properties_t* p) {
  if (checked<FakeDriver>(h, kDriverMagic) == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::memset(p->uuid.id, 0x5a, sizeof p->uuid.id);
  p->driverVersion = 0x01000000;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fDeviceGet(ze_driver_handle_t h, uint32_t* count, ze_device_handle_t* devs) {
  auto* d = checked<FakeDriver>(h, kDriverMagic);
  if (d == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (count == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  auto n = static_cast<uint32_t>(d->devices.size());
  if (*count == 0 || devs == nullptr) {
    *count = n;
    return ZE_RESULT_SUCCESS;
  }
  if (*count > n) *count = n;
  for (uint32_t i = 0; i < *count; ++i)
    devs[i] = reinterpret_cast<ze_device_handle_t>(d->devices[i]);
  return ZE_RESULT_SUCCESS;
}

ze_result_t fDeviceGetSubDevices(ze_device_handle_t h, uint32_t* count, ze_device_handle_t*) {
  if (checked<FakeDevice>(h, kDeviceMagic) == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  *count = 0;
  return ZE_RESULT_SUCCESS;
}

struct ExtHeader {
  ze_structure_type_t stype;
  void* pNext;
};

ze_result_t fDeviceGetProperties(ze_device_handle_t h, ze_device_properties_t* p) {
  auto* d = checked<FakeDevice>(h, kDeviceMagic);
  if (d == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (p->stype != ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES &&
      p->stype != ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2)
    return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0x8086;
  p->deviceId = 0x0bd5;
  p->flags = 0;
  p->subdeviceId = 0;
  p->coreClockRate = 1600;
  p->maxMemAllocSize = d->memory;
  p->maxHardwareContexts = 64;
  p->maxCommandQueuePriority = 2;
  p->numThreadsPerEU = 8;
  p->physicalEUSimdWidth = 8;
  p->numEUsPerSubslice = 8;
  p->numSubslicesPerSlice = 4;
  p->numSlices = 2;
  // DEVICE_PROPERTIES: ns per cycle; DEVICE_PROPERTIES_1_2: cycles per second.
  p->timerResolution = p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 ? 1000000000ull : 1ull;
  p->timestampValidBits = kTimestampBits;
  p->kernelTimestampValidBits = kTimestampBits;
  std::memset(p->uuid.id, 0, sizeof p->uuid.id);
  p->uuid.id[0] = 0xfa;
  p->uuid.id[1] = 0x4e;
  p->uuid.id[15] = static_cast<uint8_t>(d->index + 1);
  std::snprintf(p->name, sizeof p->name, "Fake Level Zero GPU %u", d->index);
  // ZE_extension_device_ip_version (stype 0x1000f) in the pNext chain.
  for (auto* ext = static_cast<ExtHeader*>(p->pNext); ext != nullptr;
       ext = static_cast<ExtHeader*>(ext->pNext)) {
    if (static_cast<uint32_t>(ext->stype) == 0x1000f) {
      auto* ip = reinterpret_cast<uint32_t*>(reinterpret_cast<char*>(ext) + sizeof(ExtHeader));
      *ip = (12u << 22) | (60u << 14) | 7u;  // 12.60.7
    }
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t fDeviceGetComputeProperties(ze_device_handle_t h, ze_device_compute_properties_t* p) {
  if (checked<FakeDevice>(h, kDeviceMagic) == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  p->maxTotalGroupSize = kMaxTotalGroupSize;
  p->maxGroupSizeX = p->maxGroupSizeY = kMaxGroupSizeXY;
  p->maxGroupSizeZ = g_max_group_size_z;
  p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = kMaxGroupCount;
  p->maxSharedLocalMemory = kMaxSharedLocalMemory;
  p->numSubGroupSizes = 3;
  p->subGroupSizes[0] = 8;
  p->subGroupSizes[1] = 16;
  p->subGroupSizes[2] = 32;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fDeviceGetModuleProperties(ze_device_handle_t h, ze_device_module_properties_t* p) {
  if (checked<FakeDevice>(h, kDeviceMagic) == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  constexpr ze_device_fp_flags_t kFp =
      ZE_DEVICE_FP_FLAG_DENORM | ZE_DEVICE_FP_FLAG_INF_NAN | ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST |
      ZE_DEVICE_FP_FLAG_ROUND_TO_ZERO | ZE_DEVICE_FP_FLAG_ROUND_TO_INF | ZE_DEVICE_FP_FLAG_FMA;
  p->spirvVersionSupported = g_spirv_version;
  p->flags = ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS | ZE_DEVICE_MODULE_FLAG_DP4A |
             (g_fp16 ? ZE_DEVICE_MODULE_FLAG_FP16 : 0) | (g_fp64 ? ZE_DEVICE_MODULE_FLAG_FP64 : 0);
  // 0 unless the matching module flag is set, as the specification says.
  p->fp16flags = g_fp16 ? kFp : 0;
  p->fp32flags = kFp;
  p->fp64flags = g_fp64 ? kFp | ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT : 0;
  p->maxArgumentsSize = 2048;
  p->printfBufferSize = 4 << 20;
  std::memset(p->nativeKernelSupported.id, 0, sizeof p->nativeKernelSupported.id);
  return ZE_RESULT_SUCCESS;
}

ze_result_t fDeviceGetMemoryAccessProperties(ze_device_handle_t h,
                                             ze_device_memory_access_properties_t* p) {
  if (checked<FakeDevice>(h, kDeviceMagic) == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  constexpr ze_memory_access_cap_flags_t kRw =
      ZE_MEMORY_ACCESS_CAP_FLAG_RW | ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC;
  p->hostAllocCapabilities = kRw;
  p->deviceAllocCapabilities = kRw;
  p->sharedSingleDeviceAllocCapabilities = kRw;
  p->sharedCrossDeviceAllocCapabilities = 0;
  p->sharedSystemAllocCapabilities = 0;
  return ZE_RESULT_SUCCESS;
}

// One cache: the 16 MiB last-level cache.
ze_result_t fDeviceGetCacheProperties(ze_device_handle_t h, uint32_t* count,
                                      ze_device_cache_properties_t* p) {
  if (checked<FakeDevice>(h, kDeviceMagic) == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (count == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*count == 0 || p == nullptr) {
    *count = 1;
    return ZE_RESULT_SUCCESS;
  }
  *count = 1;
  p[0].flags = 0;
  p[0].cacheSize = 16u << 20;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fDeviceCanAccessPeer(ze_device_handle_t h, ze_device_handle_t peer, ze_bool_t* value) {
  auto* d = checked<FakeDevice>(h, kDeviceMagic);
  auto* p = checked<FakeDevice>(peer, kDeviceMagic);
  if (d == nullptr || p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (value == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  // The specification: a device can always access itself.
  *value = d == p || g_peer ? 1 : 0;
  return ZE_RESULT_SUCCESS;
}

// Group 0 copies only (a blitter), group 1 is the compute group.
ze_result_t fDeviceGetCommandQueueGroupProperties(ze_device_handle_t h, uint32_t* count,
                                                  ze_command_queue_group_properties_t* p) {
  if (checked<FakeDevice>(h, kDeviceMagic) == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (count == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*count == 0 || p == nullptr) {
    *count = 2;
    return ZE_RESULT_SUCCESS;
  }
  if (*count > 2) *count = 2;
  for (uint32_t i = 0; i < *count; ++i) {
    p[i].flags = i == 0 ? ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY
                        : (ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE |
                           ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY);
    p[i].maxMemoryFillPatternSize = 128;
    p[i].numQueues = i == 0 ? 2 : 4;
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t fDeviceGetMemoryProperties(ze_device_handle_t h, uint32_t* count,
                                       ze_device_memory_properties_t* p) {
  auto* d = checked<FakeDevice>(h, kDeviceMagic);
  if (d == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (*count == 0 || p == nullptr) {
    *count = 1;
    return ZE_RESULT_SUCCESS;
  }
  *count = 1;
  p[0].flags = 0;
  p[0].maxClockRate = 1000;
  p[0].maxBusWidth = 256;
  p[0].totalSize = d->memory;
  std::snprintf(p[0].name, sizeof p[0].name, "HBM");
  return ZE_RESULT_SUCCESS;
}

ze_result_t fDevicePciGetPropertiesExt(ze_device_handle_t h, ze_pci_ext_properties_t* p) {
  auto* d = checked<FakeDevice>(h, kDeviceMagic);
  if (d == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (p == nullptr || p->stype != ZE_STRUCTURE_TYPE_PCI_EXT_PROPERTIES)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  p->address.domain = 0;
  p->address.bus = 0x3a + d->index;
  p->address.device = 0;
  p->address.function = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fContextCreate(ze_driver_handle_t h, const ze_context_desc_t* desc,
                           ze_context_handle_t* out) {
  if (checked<FakeDriver>(h, kDriverMagic) == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  auto* c = new FakeContext();
  c->driver = checked<FakeDriver>(h, kDriverMagic);
  born(c);
  *out = reinterpret_cast<ze_context_handle_t>(c);
  return ZE_RESULT_SUCCESS;
}

ze_result_t fContextDestroy(ze_context_handle_t h) {
  auto* c = checked<FakeContext>(h, kContextMagic);
  if (c == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  c->magic = 0;
  died(c);
  delete c;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fCommandListCreateImmediate(ze_context_handle_t ctx, ze_device_handle_t dev,
                                        const ze_command_queue_desc_t* desc,
                                        ze_command_list_handle_t* out) {
  if (checked<FakeContext>(ctx, kContextMagic) == nullptr)
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  auto* d = checked<FakeDevice>(dev, kDeviceMagic);
  if (d == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->ordinal >= 2) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (desc->priority > ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_HIGH ||
      desc->mode > ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS)
    return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  auto* l = new FakeList();
  l->dev = d;
  l->ctx = checked<FakeContext>(ctx, kContextMagic);
  l->worker = std::thread([l] { worker_loop(l); });  // a local closure: no exported instance
  born(l);
  {
    std::lock_guard lock(g_mu);
    ++g_live_lists;
  }
  *out = reinterpret_cast<ze_command_list_handle_t>(l);
  return ZE_RESULT_SUCCESS;
}

ze_result_t fCommandListDestroy(ze_command_list_handle_t h) {
  auto* l = checked<FakeList>(h, kListMagic);
  if (l == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  {
    std::lock_guard lock(g_mu);
    if (!l->queue.empty() || l->running) return ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
    l->stop = true;
    l->magic = 0;
    --g_live_lists;
  }
  g_cv.notify_all();
  l->worker.join();
  died(l);
  delete l;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fAppendMemoryCopy(ze_command_list_handle_t h, void* dst, const void* src, size_t size,
                              ze_event_handle_t signal, uint32_t nwait, ze_event_handle_t* waits) {
  if (dst == nullptr || src == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  auto* l = checked<FakeList>(h, kListMagic);
  if (l == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  {
    std::lock_guard lock(g_mu);
    if (ze_result_t r = check_access(l->dev, l->ctx, dst, size); r != ZE_RESULT_SUCCESS) return r;
    if (ze_result_t r = check_access(l->dev, l->ctx, src, size); r != ZE_RESULT_SUCCESS) return r;
  }
  Cmd c;
  c.kind = Cmd::Copy;
  c.dst = dst;
  c.src = src;
  c.bytes = size;
  return enqueue(h, std::move(c), signal, nwait, waits);
}

ze_result_t fAppendMemoryFill(ze_command_list_handle_t h, void* ptr, const void* pattern,
                              size_t psize, size_t size, ze_event_handle_t signal, uint32_t nwait,
                              ze_event_handle_t* waits) {
  if (ptr == nullptr || pattern == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (psize == 0 || psize > 128 || (psize & (psize - 1)) != 0 || size % psize != 0)
    return ZE_RESULT_ERROR_INVALID_SIZE;
  auto* l = checked<FakeList>(h, kListMagic);
  if (l == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  {
    std::lock_guard lock(g_mu);
    bool over = false;
    if (find_alloc(ptr, size, &over) == nullptr || over) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (ze_result_t r = check_access(l->dev, l->ctx, ptr, size); r != ZE_RESULT_SUCCESS) return r;
  }
  Cmd c;
  c.kind = Cmd::Fill;
  c.dst = ptr;
  c.bytes = size;
  c.pattern.assign(static_cast<const unsigned char*>(pattern),
                   static_cast<const unsigned char*>(pattern) + psize);
  return enqueue(h, std::move(c), signal, nwait, waits);
}

ze_result_t fAppendSignalEvent(ze_command_list_handle_t h, ze_event_handle_t ev) {
  if (ev == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  Cmd c;
  c.kind = Cmd::Signal;
  return enqueue(h, std::move(c), ev, 0, nullptr);
}

ze_result_t fAppendWaitOnEvents(ze_command_list_handle_t h, uint32_t n, ze_event_handle_t* evs) {
  Cmd c;
  c.kind = Cmd::Barrier;
  return enqueue(h, std::move(c), nullptr, n, evs);
}

ze_result_t fAppendBarrier(ze_command_list_handle_t h, ze_event_handle_t signal, uint32_t n,
                           ze_event_handle_t* waits) {
  Cmd c;
  c.kind = Cmd::Barrier;
  return enqueue(h, std::move(c), signal, n, waits);
}

ze_result_t fEventPoolCreate(ze_context_handle_t ctx, const ze_event_pool_desc_t* desc, uint32_t,
                             ze_device_handle_t*, ze_event_pool_handle_t* out) {
  if (checked<FakeContext>(ctx, kContextMagic) == nullptr)
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->count == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  auto* p = new FakePool();
  p->count = desc->count;
  p->timestamps = (desc->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) != 0;
  born(p);
  *out = reinterpret_cast<ze_event_pool_handle_t>(p);
  return ZE_RESULT_SUCCESS;
}

ze_result_t fEventPoolDestroy(ze_event_pool_handle_t h) {
  auto* p = checked<FakePool>(h, kPoolMagic);
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard lock(g_mu);
  if (p->live_events != 0) return ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
  p->magic = 0;
  died(p);
  delete p;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fEventCreate(ze_event_pool_handle_t h, const ze_event_desc_t* desc,
                         ze_event_handle_t* out) {
  auto* p = checked<FakePool>(h, kPoolMagic);
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->index >= p->count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  auto* e = new FakeEvent();
  e->pool = p;
  e->index = desc->index;
  born(e);
  std::lock_guard lock(g_mu);
  ++p->live_events;
  *out = reinterpret_cast<ze_event_handle_t>(e);
  return ZE_RESULT_SUCCESS;
}

ze_result_t fEventDestroy(ze_event_handle_t h) {
  auto* e = checked<FakeEvent>(h, kEventMagic);
  if (e == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard lock(g_mu);
  --e->pool->live_events;
  e->magic = 0;
  died(e);
  delete e;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fEventHostSignal(ze_event_handle_t h) {
  auto* e = checked<FakeEvent>(h, kEventMagic);
  if (e == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard lock(g_mu);
  uint64_t t = now_ticks();
  signal_event(e, false, t, t);
  g_cv.notify_all();
  return ZE_RESULT_SUCCESS;
}

ze_result_t fEventHostSynchronize(ze_event_handle_t h, uint64_t timeout_ns) {
  auto* e = checked<FakeEvent>(h, kEventMagic);
  if (e == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::unique_lock lock(g_mu);
  if (timeout_ns == UINT64_MAX) {
    g_cv.wait(lock, [&] { return e->signalled; });
    return ZE_RESULT_SUCCESS;
  }
  bool ok = g_cv.wait_for(
      lock,
      std::chrono::nanoseconds(static_cast<int64_t>(std::min<uint64_t>(timeout_ns, INT64_MAX / 2))),
      [&] { return e->signalled; });
  return ok ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t fEventQueryStatus(ze_event_handle_t h) {
  auto* e = checked<FakeEvent>(h, kEventMagic);
  if (e == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard lock(g_mu);
  return e->signalled ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

ze_result_t fEventHostReset(ze_event_handle_t h) {
  auto* e = checked<FakeEvent>(h, kEventMagic);
  if (e == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard lock(g_mu);
  e->signalled = false;
  e->ts = {};
  return ZE_RESULT_SUCCESS;
}

ze_result_t fEventQueryKernelTimestamp(ze_event_handle_t h, ze_kernel_timestamp_result_t* out) {
  auto* e = checked<FakeEvent>(h, kEventMagic);
  if (e == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::lock_guard lock(g_mu);
  if (!e->pool->timestamps) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!e->signalled) return ZE_RESULT_NOT_READY;
  *out = e->ts;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fMemAllocDevice(ze_context_handle_t ctx, const ze_device_mem_alloc_desc_t* desc,
                            size_t size, size_t alignment, ze_device_handle_t dev, void** out) {
  if (checked<FakeContext>(ctx, kContextMagic) == nullptr)
    return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  auto* d = checked<FakeDevice>(dev, kDeviceMagic);
  if (d == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (alignment != 0 && (alignment & (alignment - 1)) != 0)
    return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  std::lock_guard lock(g_mu);
  if (size > d->memory - d->used) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  size_t align = alignment > 64 ? alignment : 64;
  size_t rounded = (size + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  g_allocs[reinterpret_cast<uintptr_t>(p)] =
      Allocation{size, d, checked<FakeContext>(ctx, kContextMagic), g_next_alloc_id++};
  d->used += size;
  *out = p;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fMemAllocHost(ze_context_handle_t ctx, const ze_host_mem_alloc_desc_t* desc,
                          size_t size, size_t alignment, void** out) {
  auto* c = checked<FakeContext>(ctx, kContextMagic);
  if (c == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->flags > 0xf) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (alignment != 0 && (alignment & (alignment - 1)) != 0)
    return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  size_t align = alignment > 64 ? alignment : 64;
  // A size that does not round up to the alignment is more than any host has.
  if (size > SIZE_MAX - (align - 1)) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  size_t rounded = (size + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  std::lock_guard lock(g_mu);
  g_allocs[reinterpret_cast<uintptr_t>(p)] = Allocation{size, nullptr, c, g_next_alloc_id++};
  *out = p;
  return ZE_RESULT_SUCCESS;
}

// Any pointer into an allocation of the context; others are
// ZE_MEMORY_TYPE_UNKNOWN (with success, as the specification says).
ze_result_t fMemGetAllocProperties(ze_context_handle_t ctx, const void* ptr,
                                   ze_memory_allocation_properties_t* props,
                                   ze_device_handle_t* dev) {
  auto* c = checked<FakeContext>(ctx, kContextMagic);
  if (c == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (ptr == nullptr || props == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::lock_guard lock(g_mu);
  bool over = false;
  const Allocation* a = find_alloc(ptr, 1, &over);
  if (a != nullptr && a->ctx != c) a = nullptr;
  props->type = a == nullptr        ? ZE_MEMORY_TYPE_UNKNOWN
                : a->dev == nullptr ? ZE_MEMORY_TYPE_HOST
                                    : ZE_MEMORY_TYPE_DEVICE;
  props->id = a != nullptr ? a->id : 0;
  props->pageSize = a != nullptr ? 4096 : 0;
  if (dev != nullptr) *dev = a != nullptr ? reinterpret_cast<ze_device_handle_t>(a->dev) : nullptr;
  return ZE_RESULT_SUCCESS;
}

ze_result_t fMemFree(ze_context_handle_t ctx, void* ptr) {
  auto* c = checked<FakeContext>(ctx, kContextMagic);
  if (c == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard lock(g_mu);
  auto it = g_allocs.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == g_allocs.end() || it->second.ctx != c) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (it->second.dev != nullptr) it->second.dev->used -= it->second.bytes;
  g_allocs.erase(it);
  std::free(ptr);
  return ZE_RESULT_SUCCESS;
}

// --- Sysman memory ----------------------------------------------------------

struct FakeMemModule {
  uint32_t magic = kMemMagic;
  FakeDevice* dev = nullptr;
};

ze_result_t fsDeviceEnumMemoryModules(zes_device_handle_t h, uint32_t* count,
                                      zes_mem_handle_t* mods) {
  auto* d = checked<FakeDevice>(h, kDeviceMagic);
  if (d == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (*count == 0 || mods == nullptr) {
    *count = 1;
    return ZE_RESULT_SUCCESS;
  }
  *count = 1;
  static std::mutex& mu = *new std::mutex();
  static auto& modules = *new std::map<FakeDevice*, FakeMemModule*>();
  std::lock_guard lock(mu);
  auto& m = modules[d];
  if (m == nullptr) {
    m = new FakeMemModule();
    m->dev = d;
  }
  mods[0] = reinterpret_cast<zes_mem_handle_t>(m);
  return ZE_RESULT_SUCCESS;
}

ze_result_t fsMemoryGetState(zes_mem_handle_t h, zes_mem_state_t* state) {
  auto* m = checked<FakeMemModule>(h, kMemMagic);
  if (m == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (state == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::lock_guard lock(g_mu);
  state->health = ZES_MEM_HEALTH_OK;
  state->size = m->dev->memory;
  // A little less than size - used: tests can tell Sysman's answer from the
  // plugin's own estimate.
  uint64_t reserved = 1 << 20;
  uint64_t avail = m->dev->memory - m->dev->used;
  state->free = avail > reserved ? avail - reserved : 0;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

// --- test hook -------------------------------------------------------------------

// Command lists created and not yet destroyed (not a Level Zero entry point:
// tests dlopen this driver with RTLD_NOLOAD and call it).
FAKE_EXPORT int fake_ze_live_command_lists() {
  std::lock_guard lock(g_mu);
  return g_live_lists;
}

// --- the tables the loader asks for -------------------------------------------

FAKE_EXPORT ze_result_t zeGetGlobalProcAddrTable(ze_api_version_t, ze_global_dditable_t* t) {
  if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  t->pfnInit = fInit;
  return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeGetDriverProcAddrTable(ze_api_version_t, ze_driver_dditable_t* t) {
  if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *t = {};
  t->pfnGet = fDriverGet;
  t->pfnGetApiVersion = fDriverGetApiVersion;
  t->pfnGetProperties = fDriverGetProperties;
  return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeGetDeviceProcAddrTable(ze_api_version_t, ze_device_dditable_t* t) {
  if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *t = {};
  t->pfnGet = fDeviceGet;
  t->pfnGetSubDevices = fDeviceGetSubDevices;
  t->pfnGetProperties = fDeviceGetProperties;
  t->pfnGetComputeProperties = fDeviceGetComputeProperties;
  t->pfnGetCommandQueueGroupProperties = fDeviceGetCommandQueueGroupProperties;
  t->pfnGetMemoryProperties = fDeviceGetMemoryProperties;
  t->pfnPciGetPropertiesExt = fDevicePciGetPropertiesExt;
  t->pfnGetModuleProperties = fDeviceGetModuleProperties;
  t->pfnGetMemoryAccessProperties = fDeviceGetMemoryAccessProperties;
  t->pfnGetCacheProperties = fDeviceGetCacheProperties;
  t->pfnCanAccessPeer = fDeviceCanAccessPeer;
  return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeGetContextProcAddrTable(ze_api_version_t, ze_context_dditable_t* t) {
  if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *t = {};
  t->pfnCreate = fContextCreate;
  t->pfnDestroy = fContextDestroy;
  return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeGetCommandListProcAddrTable(ze_api_version_t,
                                                      ze_command_list_dditable_t* t) {
  if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *t = {};
  t->pfnCreateImmediate = fCommandListCreateImmediate;
  t->pfnDestroy = fCommandListDestroy;
  t->pfnAppendMemoryCopy = fAppendMemoryCopy;
  t->pfnAppendMemoryFill = fAppendMemoryFill;
  t->pfnAppendSignalEvent = fAppendSignalEvent;
  t->pfnAppendWaitOnEvents = fAppendWaitOnEvents;
  t->pfnAppendBarrier = fAppendBarrier;
  t->pfnAppendLaunchKernel = fAppendLaunchKernel;
  return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeGetEventPoolProcAddrTable(ze_api_version_t, ze_event_pool_dditable_t* t) {
  if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *t = {};
  t->pfnCreate = fEventPoolCreate;
  t->pfnDestroy = fEventPoolDestroy;
  return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeGetEventProcAddrTable(ze_api_version_t, ze_event_dditable_t* t) {
  if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *t = {};
  t->pfnCreate = fEventCreate;
  t->pfnDestroy = fEventDestroy;
  t->pfnHostSignal = fEventHostSignal;
  t->pfnHostSynchronize = fEventHostSynchronize;
  t->pfnQueryStatus = fEventQueryStatus;
  t->pfnHostReset = fEventHostReset;
  t->pfnQueryKernelTimestamp = fEventQueryKernelTimestamp;
  return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zeGetMemProcAddrTable(ze_api_version_t, ze_mem_dditable_t* t) {
  if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *t = {};
  t->pfnAllocDevice = fMemAllocDevice;
  t->pfnAllocHost = fMemAllocHost;
  t->pfnFree = fMemFree;
  t->pfnGetAllocProperties = fMemGetAllocProperties;
  return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zesGetDeviceProcAddrTable(ze_api_version_t, zes_device_dditable_t* t) {
  if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *t = {};
  t->pfnEnumMemoryModules = fsDeviceEnumMemoryModules;
  return ZE_RESULT_SUCCESS;
}

FAKE_EXPORT ze_result_t zesGetMemoryProcAddrTable(ze_api_version_t, zes_memory_dditable_t* t) {
  if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *t = {};
  t->pfnGetState = fsMemoryGetState;
  return ZE_RESULT_SUCCESS;
}

// Tables the fake leaves empty.
#define FAKE_EMPTY_TABLE(fn, type)                                 \
  FAKE_EXPORT ze_result_t fn(ze_api_version_t, type* t) {          \
    if (t == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER; \
    *t = {};                                                       \
    return ZE_RESULT_SUCCESS;                                      \
  }
FAKE_EMPTY_TABLE(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
FAKE_EMPTY_TABLE(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t)
FAKE_EMPTY_TABLE(zeGetImageProcAddrTable, ze_image_dditable_t)
FAKE_EMPTY_TABLE(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
FAKE_EMPTY_TABLE(zeGetFenceProcAddrTable, ze_fence_dditable_t)
FAKE_EMPTY_TABLE(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
FAKE_EMPTY_TABLE(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
FAKE_EMPTY_TABLE(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
FAKE_EMPTY_TABLE(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)
FAKE_EMPTY_TABLE(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)
FAKE_EMPTY_TABLE(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
FAKE_EMPTY_TABLE(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)
FAKE_EMPTY_TABLE(zetGetDeviceProcAddrTable, zet_device_dditable_t)
FAKE_EMPTY_TABLE(zetGetContextProcAddrTable, zet_context_dditable_t)
FAKE_EMPTY_TABLE(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
FAKE_EMPTY_TABLE(zetGetModuleProcAddrTable, zet_module_dditable_t)
FAKE_EMPTY_TABLE(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
FAKE_EMPTY_TABLE(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
FAKE_EMPTY_TABLE(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
FAKE_EMPTY_TABLE(zetGetMetricProcAddrTable, zet_metric_dditable_t)
FAKE_EMPTY_TABLE(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
FAKE_EMPTY_TABLE(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
FAKE_EMPTY_TABLE(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
FAKE_EMPTY_TABLE(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
FAKE_EMPTY_TABLE(zetGetDebugProcAddrTable, zet_debug_dditable_t)
FAKE_EMPTY_TABLE(zesGetDriverProcAddrTable, zes_driver_dditable_t)
FAKE_EMPTY_TABLE(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
FAKE_EMPTY_TABLE(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
FAKE_EMPTY_TABLE(zesGetPowerProcAddrTable, zes_power_dditable_t)
FAKE_EMPTY_TABLE(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
FAKE_EMPTY_TABLE(zesGetEngineProcAddrTable, zes_engine_dditable_t)
FAKE_EMPTY_TABLE(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
FAKE_EMPTY_TABLE(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
FAKE_EMPTY_TABLE(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
FAKE_EMPTY_TABLE(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
FAKE_EMPTY_TABLE(zesGetPsuProcAddrTable, zes_psu_dditable_t)
FAKE_EMPTY_TABLE(zesGetFanProcAddrTable, zes_fan_dditable_t)
FAKE_EMPTY_TABLE(zesGetLedProcAddrTable, zes_led_dditable_t)
FAKE_EMPTY_TABLE(zesGetRasProcAddrTable, zes_ras_dditable_t)
FAKE_EMPTY_TABLE(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)
