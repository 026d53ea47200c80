// What the files of the fake Level Zero driver share (fake_ze.cpp: devices,
// lists, events, memory; fake_ze_module.cpp: modules, build logs, kernels;
// fake_ze_spirv.cpp: the SPIR-V reader; fake_ze_kernels.cpp: the host
// implementations of the kernels the fake runs). Internal to the fake, which
// includes nothing of accel: everything here is modelled from the Level Zero
// specification (and the SPIR-V specification for the module reader).
#pragma once

#include <level_zero/ze_api.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace fake_ze {

constexpr uint32_t kDriverMagic = 0x5a45d001, kDeviceMagic = 0x5a45de01, kContextMagic = 0x5a45c001,
                   kListMagic = 0x5a451101, kPoolMagic = 0x5a45b001, kEventMagic = 0x5a45e001,
                   kMemMagic = 0x5a45a001, kModuleMagic = 0x5a45f001, kBuildLogMagic = 0x5a451001,
                   kKernelMagic = 0x5a45c401;

// The modelled part's compute limits (zeDeviceGetComputeProperties), which
// zeKernelSetGroupSize and zeCommandListAppendLaunchKernel also check.
constexpr uint32_t kMaxTotalGroupSize = 1024;
constexpr uint32_t kMaxGroupSizeXY = 1024;  // Z: FAKE_ZE_MAX_GROUP_SIZE_Z, default 1024
constexpr uint32_t kMaxGroupCount = 1u << 30;
constexpr uint32_t kMaxSharedLocalMemory = 64u << 10;
// The sub-group size the fake "compiles" every kernel for (one of the
// device's sizes 8, 16, 32): zeKernelGetProperties' maxSubgroupSize.
constexpr uint32_t kKernelSubgroupSize = 16;

struct FakeDevice {
  uint32_t magic = kDeviceMagic;
  uint32_t index = 0;
  uint64_t memory = 0;
  uint64_t used = 0;  // guarded by g_mu
};

struct FakeDriver {
  uint32_t magic = kDriverMagic;
  std::vector<FakeDevice*> devices;
};

struct FakeContext {
  uint32_t magic = kContextMagic;
  FakeDriver* driver = nullptr;
};

struct FakePool;
struct FakeEvent {
  uint32_t magic = kEventMagic;
  FakePool* pool = nullptr;
  uint32_t index = 0;
  bool signalled = false;  // guarded by g_mu
  ze_kernel_timestamp_result_t ts{};
};

struct FakePool {
  uint32_t magic = kPoolMagic;
  uint32_t count = 0;
  bool timestamps = false;
  uint32_t live_events = 0;  // guarded by g_mu
};

struct Launch;  // fake_ze_module.cpp

struct Cmd {
  enum Kind { Copy, Fill, Signal, Barrier, Kernel } kind = Copy;
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  std::vector<unsigned char> pattern;
  std::shared_ptr<Launch> launch;  // Kernel: what zeCommandListAppendLaunchKernel captured
  FakeEvent* signal = nullptr;
  std::vector<FakeEvent*> waits;
};

struct FakeList {
  uint32_t magic = kListMagic;
  FakeDevice* dev = nullptr;
  FakeContext* ctx = nullptr;
  std::deque<Cmd> queue;  // guarded by g_mu
  bool running = false;   // a command is being executed
  bool stop = false;
  std::thread worker;
};

struct Allocation {
  size_t bytes;
  FakeDevice* dev;  // null: host memory (zeMemAllocHost)
  FakeContext* ctx;
  uint64_t id;
};

// One lock and one condition variable for all state: events, queues, memory,
// kernels' pending launches. Never destroyed (threads may run during exit).
extern std::mutex& g_mu;
extern std::condition_variable& g_cv;
extern std::map<uintptr_t, Allocation>& g_allocs;
extern bool g_peer;                  // FAKE_ZE_PEER: devices reach each other's memory
extern uint32_t g_max_group_size_z;  // FAKE_ZE_MAX_GROUP_SIZE_Z
extern uint32_t g_spirv_version;     // FAKE_ZE_SPIRV=0: 0 (no SPIR-V), else SPIR-V 1.2

// Keeps objects reachable for LeakSanitizer while only the loader's
// wrappers point at them (fake_ze.cpp).
void born(const void* p);
void died(const void* p);

template <class T>
T* checked(void* h, uint32_t magic) {
  auto* p = static_cast<T*>(h);
  return p != nullptr && p->magic == magic ? p : nullptr;
}

// The allocation containing p, or null; *overflow when p..p+bytes leaves
// it. Caller holds g_mu.
const Allocation* find_alloc(const void* p, size_t bytes, bool* overflow);
// Whether a command of a list of `dev` in `ctx` may touch [p, p + bytes)
// (fake_ze.cpp says how). Caller holds g_mu.
ze_result_t check_access(FakeDevice* dev, FakeContext* ctx, const void* p, size_t bytes);
// Queues `c` on the list behind its earlier commands (signal and waits as
// the append call's arguments).
ze_result_t enqueue(ze_command_list_handle_t h, Cmd&& c, ze_event_handle_t signal, uint32_t nwait,
                    ze_event_handle_t* waits);

// ---- modules and kernels (fake_ze_module.cpp) ----------------------------------

// Appends a launch of the kernel as its group size and arguments are now.
ze_result_t fAppendLaunchKernel(ze_command_list_handle_t list, ze_kernel_handle_t kernel,
                                const ze_group_count_t* groups, ze_event_handle_t signal,
                                uint32_t nwait, ze_event_handle_t* waits);
// Runs a launch on the list's worker thread, without g_mu held, then
// marks it done (the kernel may be destroyed afterwards).
void run_launch(FakeList* list, Launch& launch);

}  // namespace fake_ze
