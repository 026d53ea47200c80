// A fake HIP runtime (libamdhip64.so) for the tests of the hip plugin:
// exactly the entry points the plugin resolves, over FAKE_HIP_DEVICES
// modelled devices (default 2; 0 -> hipErrorNoDevice). Never installed.
//
// Model:
//  - the device list is filtered by ROCR_VISIBLE_DEVICES, then
//    HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES, read when the runtime
//    initialises, by the fake's own small model of ROCr's and HIP's rules
//    (see "visibility" below; it shares no code with the plugin, so a test
//    comparing the plugin's count with the fake's is a real check);
//  - per-thread current device (hipSetDevice / hipGetDevice), starting at 0;
//  - every stream (and each device's null stream) is a worker thread running
//    its queue in order, so ordering, hipErrorNotReady and timing are real;
//    the null stream and the device's blocking streams (created without
//    hipStreamNonBlocking) wait for each other as HIP documents: work queued
//    on the null stream waits for what the blocking streams queued before
//    it, and work queued on a blocking stream for what the null stream
//    queued before it; non-blocking streams are independent;
//  - device memory is host memory; copies and fills check that device-side
//    ranges lie inside live allocations (hipErrorInvalidValue otherwise);
//    FAKE_HIP_MEMORY bytes per device (default 1 GiB) -> hipErrorOutOfMemory;
//  - events record a steady_clock timestamp when their stream reaches them;
//    hipEventRecord refuses a stream of another device (hipErrorInvalidHandle,
//    as HIP does);
//  - page-locked host memory: hipHostMalloc/hipHostFree (FAKE_HIP_HOST_MEMORY
//    bytes in all, default 1 GiB) and hipHostRegister/hipHostUnregister
//    ranges are tracked, with HIP's flag checks and errors
//    (hipErrorHostMemoryAlreadyRegistered, hipErrorHostMemoryNotRegistered);
//  - peer access: the devices are MI250-like GCDs linked by xGMI, so every
//    pair can access each other (hipDeviceCanAccessPeer) unless
//    FAKE_HIP_PEER=0 says the topology links none; hipDeviceEnablePeerAccess
//    then fails with hipErrorInvalidDevice, as HIP does; a repeat gives
//    hipErrorPeerAccessAlreadyEnabled. hipMemcpyPeerAsync copies in stream
//    order whether or not access is enabled (HIP stages such copies);
//  - device attributes (hipDeviceGetAttribute, hipGetDeviceProperties) of one
//    GCD of an MI250 (gfx90a:sramecc+:xnack-, 104 CUs, 1700 MHz, 4096-bit
//    HBM2e, 8 MiB L2, 64 KiB LDS, wavefront 64); attributes HIP answers with
//    hipErrorInvalidValue on AMD are answered so here too.
//  - modules and kernels (fake_hip_modules.cpp): AMD code objects read from
//    their ELF, kernels found by their descriptors, launches of the shared
//    kernels run on the host (fake_hip_kernels.cpp) in stream order;
//  - stream capture and graphs (fake_hip_graphs.cpp): work queued on a
//    capturing stream is recorded (submit asks the capture first), and
//    hipGraphLaunch replays it as one operation of the launch stream;
//  - hipGetErrorName / hipGetErrorString answer the enumerator's name and,
//    as text, AMD's documented description of the code
//    (fake_hip_error_texts.hpp: worded apart from any plugin's built-in
//    names, so a test can tell whose text a message shows);
//    FAKE_HIP_NO_ERROR_STRINGS=1 makes both answer NULL for every code, a
//    runtime that cannot describe its codes (both stay exported: the plugin
//    needs them to load).
// Built twice: libamdhip64.so (a ROCm 6 runtime with 6.2's visibility rules;
// it reports version 6.0.32830, which tests check) and, with
// FAKE_HIP_5_2_EXPORTS, libamdhip64.so.5 (Debian 5.2's: no hipLaunchHostFunc
// and no hipStreamGetDevice (HIP 5.6), no hipDeviceAttributeAsyncEngineCount
// answer (HIP 6.0), and 5.2's visibility rules: empty variables count as
// unset, no UUIDs in HIP_VISIBLE_DEVICES).
// Test hooks (not HIP API): fake_hip_initialised() says whether any call
// initialised the fake in this process; fake_hip_live_streams() counts the
// streams created and not destroyed; fake_hip_host_allocations() and
// fake_hip_registered_ranges() count live hipHostMalloc allocations and
// hipHostRegister ranges; fake_hip_live_modules(), fake_hip_kernels_run(),
// fake_hip_kernel_faults() and fake_hip_last_arg_bytes() (fake_hip_modules.cpp);
// fake_hip_graph_launches(), fake_hip_live_graph_execs() and
// fake_hip_live_graphs() (fake_hip_graphs.cpp).
#include <hip/hip_runtime_api.h>

#include "fake_hip_error_texts.hpp"
#include "fake_hip_internal.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

using Clock = std::chrono::steady_clock;

namespace {

struct Record {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  Clock::time_point when;
  void wait() {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return done; });
  }
  bool is_done() {
    std::lock_guard lock(m);
    return done;
  }
  void complete() {
    {
      std::lock_guard lock(m);
      when = Clock::now();
      done = true;
    }
    cv.notify_all();
  }
};

}  // namespace

// The handle types of the HIP headers, defined here.
struct ihipStream_t {
  int device = 0;
  unsigned flags = 0;
  int priority = 0;
  bool is_null = false;

  std::mutex m;
  std::condition_variable cv;
  struct Op {
    std::function<void()> work;      // run without the lock
    std::shared_ptr<Record> record;  // completed after work, with the lock held
  };
  std::deque<Op> queue;
  bool busy = false;
  bool closing = false;
  std::thread worker;

  // The worker holds a reference to its stream until it exits.
  static void start(const std::shared_ptr<ihipStream_t>& self) {
    self->worker = std::thread([self] { self->run(); });
  }
  void run() {
    std::unique_lock lock(m);
    while (true) {
      cv.wait(lock, [&] { return !queue.empty() || closing; });
      if (queue.empty()) break;  // closing and drained
      Op op = std::move(queue.front());
      queue.pop_front();
      busy = true;
      lock.unlock();
      if (op.work) op.work();
      lock.lock();
      busy = false;
      // An event record completes while the stream lock is held and the
      // stream is no longer busy: whoever wakes from the event sees the
      // stream idle unless later work was queued.
      if (op.record) op.record->complete();
      cv.notify_all();
    }
    // hipStreamDestroy detached the thread before it set closing; the
    // lambda's reference is released when this returns.
  }
  void push(std::function<void()> work, std::shared_ptr<Record> record = nullptr) {
    {
      std::lock_guard lock(m);
      queue.push_back(Op{std::move(work), std::move(record)});
    }
    cv.notify_all();
  }
  bool idle() {
    std::lock_guard lock(m);
    return queue.empty() && !busy;
  }
  void wait_idle() {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return queue.empty() && !busy; });
  }
};

struct ihipEvent_t {
  int device = 0;
  unsigned flags = 0;
  std::mutex m;
  std::shared_ptr<Record> rec;  // latest record
};

namespace {

struct Alloc {
  size_t size = 0;
  int device = 0;
};

struct Device {
  int physical = 0;
  size_t total = 0;
  size_t used = 0;
  std::shared_ptr<ihipStream_t> null_stream;  // created on first use
};

struct State {
  std::mutex mu;
  bool initialised = false;
  std::vector<Device> devices;
  std::map<uintptr_t, Alloc> allocs;
  std::map<ihipStream_t*, std::shared_ptr<ihipStream_t>> streams;
  // Destroyed streams whose workers may still be draining their queues
  // (each worker holds its stream until it exits): hipDeviceSynchronize
  // waits for them too, as HIP's does ("blocks until all preceding work on
  // the device completes"). Expired entries are dropped as they are seen.
  std::vector<std::weak_ptr<ihipStream_t>> draining;
  std::set<ihipEvent_t*> events;
  std::map<uintptr_t, size_t> host_allocs;  // hipHostMalloc: base -> bytes
  size_t host_total = 0;                    // FAKE_HIP_HOST_MEMORY
  size_t host_used = 0;
  std::map<uintptr_t, size_t> registered;      // hipHostRegister: base -> bytes
  bool peer_links = true;                      // FAKE_HIP_PEER (0: none)
  std::set<std::pair<int, int>> peer_enabled;  // (device, peer)
};

State& state() {
  static State* s = new State();  // never destroyed: workers may outlive main
  return *s;
}

thread_local int t_device = 0;

// --- visibility -------------------------------------------------------------
// Which modelled GPUs the application sees, written for the fake from the
// vendor's sources: ROCr (ROCR-Runtime amd_filter_device.cpp, RvdFilter)
// filters the GPUs, then HIP (clr rocclr/device/rocm/rocdevice.cpp
// Device::init, values from rocclr/utils/flags.cpp) picks from what is left.

#ifdef FAKE_HIP_5_2_EXPORTS
constexpr bool kEmptyVariableHides = false;  // flags.cpp before ROCm 5.5 skipped "X="
constexpr bool kUuidEntries = false;         // rocdevice.cpp before ROCm 6.2
#else
constexpr bool kEmptyVariableHides = true;
constexpr bool kUuidEntries = true;
#endif

// The UUID ROCr gives modelled GPU i (its KFD unique_id is 0xfa4e00..00 + i).
std::string fake_uuid(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "GPU-fa4e%012x", static_cast<unsigned>(i));
  return buf;
}

std::string to_upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

// ROCR_VISIBLE_DEVICES. An empty entry among the ones ROCr reads makes its
// initialisation throw: then there is no GPU at all.
std::vector<int> rocr_visible(int physical) {
  std::vector<int> out;
  const char* env = std::getenv("ROCR_VISIBLE_DEVICES");
  if (env == nullptr) {
    for (int i = 0; i < physical; ++i) out.push_back(i);
    return out;
  }
  std::vector<std::string> entries;
  std::istringstream in(env);
  for (std::string e; std::getline(in, e, ',');) entries.push_back(e);
  const char* blanks = " \t\n\v\f\r";
  for (size_t k = 0; k < entries.size() && k < static_cast<size_t>(physical); ++k) {
    std::string e = to_upper(entries[k]);
    size_t b = e.find_first_not_of(blanks);
    if (b == std::string::npos) return {};  // empty entry: ROCr fails to start
    e = e.substr(b, e.find_last_not_of(blanks) - b + 1);
    long gpu = -1;
    if (e[0] == 'G') {  // a UUID, or a prefix of exactly one
      int matches = 0;
      for (int i = 0; e.size() >= 5 && e.size() <= 20 && i < physical; ++i) {
        if (to_upper(fake_uuid(i)).compare(0, e.size(), e) == 0) {
          ++matches;
          gpu = i;
        }
      }
      if (matches != 1) gpu = -1;
    } else {
      char* end = nullptr;
      long v = std::strtol(e.c_str(), &end, 0);
      if (*end == '\0') gpu = static_cast<int32_t>(v);  // ROCr keeps it in an int32_t
    }
    if (gpu < 0 || gpu >= physical || std::count(out.begin(), out.end(), gpu) != 0) break;
    out.push_back(static_cast<int>(gpu));
  }
  return out;
}

// A HIP flag's value as Flag::init stores it: unset is "", an empty value
// " " (HIP 5.5 and later) or unset (before), and a value wholly inside
// double quotes, blanks around them allowed, loses the quotes.
std::string hip_flag(const char* name) {
  const char* env = std::getenv(name);
  if (env == nullptr) return "";
  std::string v = env;
  if (v.empty()) return kEmptyVariableHides ? " " : "";
  size_t open = v.find_first_not_of(' ');
  size_t close = v.find_last_not_of(' ');
  if (open == std::string::npos || v[open] != '"' || close == open || v[close] != '"') return v;
  return v.substr(open + 1, close - open - 1);
}

// HIP_VISIBLE_DEVICES (CUDA_VISIBLE_DEVICES when HIP sees it empty) over
// the agents ROCr surfaced: exact decimal indices, "GPU-" entries (HIP 6.2
// and later) name the first agent whose UUID contains them; an invalid entry
// ends the list, a repeated one is skipped.
std::vector<int> hip_visible(const std::vector<int>& agents) {
  std::string list = hip_flag("HIP_VISIBLE_DEVICES");
  if (list.empty()) list = hip_flag("CUDA_VISIBLE_DEVICES");
  if (list.empty()) return agents;
  std::vector<std::string> entries;
  for (size_t at = 0; at < list.size();) {
    size_t comma = std::min(list.find(',', at), list.size());
    entries.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  std::vector<int> out;
  for (std::string e : entries) {
    if (kUuidEntries && e.find("GPU-") != std::string::npos) {
      for (size_t i = 0; i < agents.size(); ++i) {
        if (fake_uuid(agents[i]).find(e) != std::string::npos) {
          e = std::to_string(i);
          break;
        }
      }
    }
    bool digits = !e.empty() && e.size() < 10 &&
                  std::all_of(e.begin(), e.end(), [](char c) { return c >= '0' && c <= '9'; });
    size_t i = digits ? std::stoul(e) : agents.size();
    if (i >= agents.size() || std::to_string(i) != e) break;
    if (std::count(out.begin(), out.end(), agents[i]) == 0) out.push_back(agents[i]);
  }
  return out;
}

// Initialises on first use; caller holds state().mu.
void ensure_init_locked() {
  State& s = state();
  if (s.initialised) return;
  s.initialised = true;
  const char* n_env = std::getenv("FAKE_HIP_DEVICES");
  int physical = n_env != nullptr ? std::atoi(n_env) : 2;
  if (physical < 0) physical = 0;
  const char* mem_env = std::getenv("FAKE_HIP_MEMORY");
  size_t total = mem_env != nullptr ? std::strtoull(mem_env, nullptr, 10) : (size_t{1} << 30);
  const char* host_env = std::getenv("FAKE_HIP_HOST_MEMORY");
  s.host_total = host_env != nullptr ? std::strtoull(host_env, nullptr, 10) : (size_t{1} << 30);
  const char* peer_env = std::getenv("FAKE_HIP_PEER");
  s.peer_links = peer_env == nullptr || std::strcmp(peer_env, "0") != 0;
  for (int p : hip_visible(rocr_visible(physical))) {
    Device d;
    d.physical = p;
    d.total = total;
    s.devices.push_back(d);
  }
}

// Initialises; hipErrorNoDevice when there is none.
hipError_t begin() {
  std::lock_guard lock(state().mu);
  ensure_init_locked();
  return state().devices.empty() ? hipErrorNoDevice : hipSuccess;
}

#define FAKE_BEGIN()                             \
  do {                                           \
    hipError_t fake_rc_ = begin();               \
    if (fake_rc_ != hipSuccess) return fake_rc_; \
  } while (0)

int device_count() {
  std::lock_guard lock(state().mu);
  return static_cast<int>(state().devices.size());
}

std::shared_ptr<ihipStream_t> new_stream(int device, unsigned flags, int priority, bool is_null) {
  auto s = std::make_shared<ihipStream_t>();
  s->device = device;
  s->flags = flags;
  s->priority = priority;
  s->is_null = is_null;
  ihipStream_t::start(s);
  return s;
}

// Resolves a stream handle (null stream and hipStreamPerThread through the
// current device); nullptr when invalid.
ihipStream_t* resolve(hipStream_t h) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (h == nullptr || h == hipStreamPerThread) {
    if (t_device < 0 || static_cast<size_t>(t_device) >= s.devices.size()) return nullptr;
    Device& d = s.devices[static_cast<size_t>(t_device)];
    if (d.null_stream == nullptr) d.null_stream = new_stream(t_device, 0, 0, true);
    return d.null_stream.get();
  }
  auto it = s.streams.find(h);
  return it != s.streams.end() ? it->second.get() : nullptr;
}

// Queues work (and/or a record) on `s`, with HIP's implicit synchronisation
// between the null stream and the blocking streams of its device: the
// work first waits for markers queued, at this moment, behind what the
// other side has pending. Each wait is for a marker queued before the
// waiting op, so no cycle can form.
// While `s` captures, the work is recorded instead (fake_hip_graphs.cpp).
hipError_t submit(ihipStream_t* s, std::function<void()> work,
                  std::shared_ptr<Record> record = nullptr) {
  if (hipError_t rc = hipSuccess; fake_hip::capture_take(s, work, record != nullptr, rc)) return rc;
  State& st = state();
  std::lock_guard lock(st.mu);
  std::vector<std::shared_ptr<Record>> deps;
  auto mark = [&](ihipStream_t* other) {
    if (other == s || other->idle()) return;
    auto m = std::make_shared<Record>();
    other->push(nullptr, m);
    deps.push_back(std::move(m));
  };
  if (s->is_null) {
    for (auto& [raw, other] : st.streams)
      if (other->device == s->device && (other->flags & hipStreamNonBlocking) == 0)
        mark(other.get());
  } else if ((s->flags & hipStreamNonBlocking) == 0 &&
             static_cast<size_t>(s->device) < st.devices.size()) {
    if (auto& ns = st.devices[static_cast<size_t>(s->device)].null_stream) mark(ns.get());
  }
  if (deps.empty()) {
    s->push(std::move(work), std::move(record));
    return hipSuccess;
  }
  s->push(
      [deps = std::move(deps), work = std::move(work)] {
        for (auto& d : deps) d->wait();
        if (work) work();
      },
      std::move(record));
  return hipSuccess;
}

bool live_event(hipEvent_t e) {
  std::lock_guard lock(state().mu);
  return state().events.count(e) != 0;
}

// The allocation holding [p, p + n), or nullptr.
const Alloc* find_range(const void* p, size_t n, uintptr_t* base_out = nullptr) {
  State& s = state();
  auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = s.allocs.upper_bound(addr);
  if (it == s.allocs.begin()) return nullptr;
  --it;
  if (addr < it->first || addr - it->first > it->second.size ||
      n > it->second.size - (addr - it->first))
    return nullptr;
  if (base_out) *base_out = it->first;
  return &it->second;
}

bool is_device_range(const void* p, size_t n) {
  std::lock_guard lock(state().mu);
  return find_range(p, n) != nullptr;
}

bool is_device_pointer(const void* p) { return is_device_range(p, 1); }

}  // namespace

// --- what the other files of the fake use (fake_hip_internal.hpp) -----------

namespace fake_hip {

hipError_t initialise() { return begin(); }

int current_device() { return t_device; }

ihipStream_t* stream_of(hipStream_t handle) { return resolve(handle); }

int device_of(const ihipStream_t* stream) { return stream->device; }

hipError_t enqueue(ihipStream_t* stream, std::function<void()> work) {
  return submit(stream, std::move(work));
}

bool kernel_accessible(const void* p, size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (find_range(p, bytes) != nullptr) return true;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = s.host_allocs.upper_bound(addr);
  if (it == s.host_allocs.begin()) return false;
  --it;
  return addr - it->first <= it->second && bytes <= it->second - (addr - it->first);
}

}  // namespace fake_hip

// --- errors ---------------------------------------------------------------

namespace {

// FAKE_HIP_NO_ERROR_STRINGS=1: read once, without initialising the runtime
// (HIP names its codes before hipInit).
bool error_strings() {
  static const bool on = [] {
    const char* v = std::getenv("FAKE_HIP_NO_ERROR_STRINGS");
    return v == nullptr || std::strcmp(v, "1") != 0;
  }();
  return on;
}

}  // namespace

FAKE_EXPORT const char* hipGetErrorName(hipError_t e) {
  return error_strings() ? fake_hip_errors::find(e).name : nullptr;
}

FAKE_EXPORT const char* hipGetErrorString(hipError_t e) {
  return error_strings() ? fake_hip_errors::find(e).text : nullptr;
}

// --- init, devices --------------------------------------------------------

FAKE_EXPORT int fake_hip_initialised(void) {
  std::lock_guard lock(state().mu);
  return state().initialised ? 1 : 0;
}

FAKE_EXPORT hipError_t hipInit(unsigned int flags) {
  if (flags != 0) return hipErrorInvalidValue;
  FAKE_BEGIN();
  return hipSuccess;
}

// "Most HIP APIs implicitly initialize the HIP runtime" (hip_runtime_api.h,
// hipInit): this one too, so a plugin that asks for the version before the
// runtime is meant to be initialised is caught by fake_hip_initialised().
// Answers without devices as well, as it only reports the runtime's own
// version (HIP_VERSION's encoding: major * 10^7 + minor * 10^5 + patch).
FAKE_EXPORT hipError_t hipRuntimeGetVersion(int* v) {
  if (v == nullptr) return hipErrorInvalidValue;
  (void)begin();
#ifdef FAKE_HIP_5_2_EXPORTS
  *v = 50221153;
#else
  *v = 60032830;
#endif
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipGetDeviceCount(int* count) {
  if (count == nullptr) return hipErrorInvalidValue;
  hipError_t rc = begin();
  *count = rc == hipSuccess ? device_count() : 0;
  return rc;
}

FAKE_EXPORT hipError_t hipGetDevice(int* device) {
  if (device == nullptr) return hipErrorInvalidValue;
  FAKE_BEGIN();
  *device = t_device;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipSetDevice(int device) {
  FAKE_BEGIN();
  if (device < 0 || device >= device_count()) return hipErrorInvalidDevice;
  t_device = device;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipDeviceGet(hipDevice_t* device, int ordinal) {
  if (device == nullptr) return hipErrorInvalidValue;
  FAKE_BEGIN();
  if (ordinal < 0 || ordinal >= device_count()) return hipErrorInvalidDevice;
  *device = ordinal;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipDeviceGetUuid(hipUUID* uuid, hipDevice_t device) {
  if (uuid == nullptr) return hipErrorInvalidValue;
  FAKE_BEGIN();
  if (device < 0 || device >= device_count()) return hipErrorInvalidDevice;
  int physical = 0;
  {
    std::lock_guard lock(state().mu);
    physical = state().devices[static_cast<size_t>(device)].physical;
  }
  // ROCm gives 16 ASCII hex characters (the KFD unique_id).
  char buf[17];
  std::snprintf(buf, sizeof buf, "fa4e%012x", physical);
  std::memcpy(uuid->bytes, buf, 16);
  return hipSuccess;
}

namespace {

// The modelled GPU: one GCD of an AMD Instinct MI250 (the MI210 has the same
// die), as ROCclr fills hipDeviceProp_t for it. Caller checked `device`.
void fill_properties(hipDeviceProp_t* prop, int device) {
  Device d;
  {
    std::lock_guard lock(state().mu);
    d = state().devices[static_cast<size_t>(device)];
  }
  std::memset(prop, 0, sizeof *prop);
  std::snprintf(prop->name, sizeof prop->name, "Fake AMD Instinct MI210 #%d", d.physical);
  prop->totalGlobalMem = d.total;
  prop->sharedMemPerBlock = 64 * 1024;  // LDS per CU
  prop->regsPerBlock = 65536;
  prop->warpSize = 64;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = prop->maxThreadsDim[2] = 1024;
  prop->maxGridSize[0] = 2147483647;  // INT32_MAX, then UINT16_MAX + 1 (ROCclr)
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65536;
  prop->clockRate = 1700000;  // kHz
  prop->memoryClockRate = 1600000;
  prop->memoryBusWidth = 4096;
  prop->totalConstMem = 2147483647;
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = 104;
  prop->l2CacheSize = 8 * 1024 * 1024;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->clockInstructionRate = 100000;
  prop->concurrentKernels = 1;
  prop->pciDomainID = 0;
  prop->pciBusID = 0x10 + d.physical;
  prop->pciDeviceID = 0;
  prop->maxSharedMemoryPerMultiProcessor = 64 * 1024;
  prop->isMultiGpuBoard = 1;
  prop->canMapHostMemory = 1;
  prop->gcnArch = 910;  // major * 100 + minor * 10 + stepping
  std::snprintf(prop->gcnArchName, sizeof prop->gcnArchName, "gfx90a:sramecc+:xnack-");
  prop->integrated = 0;
  prop->cooperativeLaunch = 1;
  prop->cooperativeMultiDeviceLaunch = 1;
  prop->memPitch = 2147483647;
  prop->ECCEnabled = 1;
  prop->isLargeBar = 1;
  prop->asicRevision = 1;
  prop->managedMemory = 1;
  prop->directManagedMemAccessFromHost = 0;
  prop->concurrentManagedAccess = 1;
  prop->pageableMemoryAccess = 0;
}

// ROCclr's numAsyncQueues_ (kMaxAsyncQueues: one per pipe), which HIP 6
// reports as asyncEngineCount.
constexpr int kAsyncEngines = 8;

}  // namespace

FAKE_EXPORT hipError_t hipGetDeviceProperties(hipDeviceProp_t* prop, int device) {
  if (prop == nullptr) return hipErrorInvalidValue;
  FAKE_BEGIN();
  if (device < 0 || device >= device_count()) return hipErrorInvalidDevice;
  fill_properties(prop, device);
  return hipSuccess;
}

// The attributes ROCclr's hipDeviceGetAttribute answers for these (from the
// properties, as it does); any other is hipErrorInvalidValue, as there.
FAKE_EXPORT hipError_t hipDeviceGetAttribute(int* pi, hipDeviceAttribute_t attr, int device) {
  if (pi == nullptr) return hipErrorInvalidValue;
  FAKE_BEGIN();
  if (device < 0 || device >= device_count()) return hipErrorInvalidDevice;
  hipDeviceProp_t p;
  fill_properties(&p, device);
  switch (attr) {
    case hipDeviceAttributeMaxThreadsPerBlock:
      *pi = p.maxThreadsPerBlock;
      break;
    case hipDeviceAttributeMaxBlockDimX:
      *pi = p.maxThreadsDim[0];
      break;
    case hipDeviceAttributeMaxBlockDimY:
      *pi = p.maxThreadsDim[1];
      break;
    case hipDeviceAttributeMaxBlockDimZ:
      *pi = p.maxThreadsDim[2];
      break;
    case hipDeviceAttributeMaxGridDimX:
      *pi = p.maxGridSize[0];
      break;
    case hipDeviceAttributeMaxGridDimY:
      *pi = p.maxGridSize[1];
      break;
    case hipDeviceAttributeMaxGridDimZ:
      *pi = p.maxGridSize[2];
      break;
    case hipDeviceAttributeMaxSharedMemoryPerBlock:
      *pi = static_cast<int>(p.sharedMemPerBlock);
      break;
    case hipDeviceAttributeWarpSize:
      *pi = p.warpSize;
      break;
    case hipDeviceAttributeClockRate:
      *pi = p.clockRate;
      break;
    case hipDeviceAttributeMemoryClockRate:
      *pi = p.memoryClockRate;
      break;
    case hipDeviceAttributeMemoryBusWidth:
      *pi = p.memoryBusWidth;
      break;
    case hipDeviceAttributeMultiprocessorCount:
      *pi = p.multiProcessorCount;
      break;
    case hipDeviceAttributeL2CacheSize:
      *pi = p.l2CacheSize;
      break;
    case hipDeviceAttributeMaxThreadsPerMultiProcessor:
      *pi = p.maxThreadsPerMultiProcessor;
      break;
    case hipDeviceAttributeComputeCapabilityMajor:
      *pi = p.major;
      break;
    case hipDeviceAttributeComputeCapabilityMinor:
      *pi = p.minor;
      break;
    case hipDeviceAttributeConcurrentKernels:
      *pi = p.concurrentKernels;
      break;
    case hipDeviceAttributeIntegrated:
      *pi = p.integrated;
      break;
    case hipDeviceAttributeEccEnabled:
      *pi = p.ECCEnabled;
      break;
    case hipDeviceAttributeManagedMemory:
      *pi = p.managedMemory;
      break;
    case hipDeviceAttributeUnifiedAddressing:
      *pi = 1;  // "HIP runtime always uses SVM for host memory allocations"
      break;
    case hipDeviceAttributeCanMapHostMemory:
      *pi = p.canMapHostMemory;
      break;
    case hipDeviceAttributePciBusId:
      *pi = p.pciBusID;
      break;
    case hipDeviceAttributePciDeviceId:
      *pi = p.pciDeviceID;
      break;
#ifndef FAKE_HIP_5_2_EXPORTS
    case hipDeviceAttributeAsyncEngineCount:  // HIP 6.0 (hipDeviceProp_tR0600)
      *pi = kAsyncEngines;
      break;
#endif
    default:
      return hipErrorInvalidValue;
  }
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipDeviceSynchronize(void) {
  FAKE_BEGIN();
  std::vector<std::shared_ptr<ihipStream_t>> todo;
  {
    State& s = state();
    std::lock_guard lock(s.mu);
    for (auto& [raw, st] : s.streams)
      if (st->device == t_device) todo.push_back(st);
    if (auto& ns = s.devices[static_cast<size_t>(t_device)].null_stream) todo.push_back(ns);
    auto& d = s.draining;
    d.erase(std::remove_if(d.begin(), d.end(), [](const auto& w) { return w.expired(); }), d.end());
    for (auto& w : d)
      if (auto st = w.lock(); st && st->device == t_device) todo.push_back(std::move(st));
  }
  for (auto& st : todo) st->wait_idle();
  return hipSuccess;
}

// --- streams ---------------------------------------------------------------

FAKE_EXPORT hipError_t hipDeviceGetStreamPriorityRange(int* least, int* greatest) {
  FAKE_BEGIN();
  if (least) *least = 1;
  if (greatest) *greatest = -1;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamCreateWithPriority(hipStream_t* stream, unsigned int flags,
                                                   int priority) {
  if (stream == nullptr || (flags & ~1u) != 0) return hipErrorInvalidValue;
  FAKE_BEGIN();
  if (priority > 1) priority = 1;
  if (priority < -1) priority = -1;
  auto s = new_stream(t_device, flags, priority, false);
  {
    std::lock_guard lock(state().mu);
    state().streams[s.get()] = s;
  }
  *stream = s.get();
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamDestroy(hipStream_t stream) {
  FAKE_BEGIN();
  if (stream == nullptr) return hipErrorInvalidHandle;
  std::shared_ptr<ihipStream_t> s;
  {
    std::lock_guard lock(state().mu);
    auto it = state().streams.find(stream);
    if (it == state().streams.end()) return hipErrorInvalidHandle;
    s = it->second;
    state().draining.push_back(s);  // before the erase: a throw changes nothing
    state().streams.erase(it);
  }
  fake_hip::capture_forget(s.get());
  // Returns at once; queued work still completes and hipDeviceSynchronize
  // still waits for it (state().draining).
  {
    std::lock_guard lock(s->m);
    s->worker.detach();
    s->closing = true;  // the worker drains the queue, then exits
  }
  s->cv.notify_all();
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamQuery(hipStream_t stream) {
  FAKE_BEGIN();
  ihipStream_t* s = resolve(stream);
  if (s == nullptr) return hipErrorInvalidHandle;
  if (hipError_t rc = fake_hip::capture_refuse(s); rc != hipSuccess) return rc;
  return s->idle() ? hipSuccess : hipErrorNotReady;
}

FAKE_EXPORT hipError_t hipStreamSynchronize(hipStream_t stream) {
  FAKE_BEGIN();
  ihipStream_t* s = resolve(stream);
  if (s == nullptr) return hipErrorInvalidHandle;
  if (hipError_t rc = fake_hip::capture_refuse(s); rc != hipSuccess) return rc;
  s->wait_idle();
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event,
                                          unsigned int flags) {
  FAKE_BEGIN();
  if (flags != 0) return hipErrorInvalidValue;
  ihipStream_t* s = resolve(stream);
  if (s == nullptr || !live_event(event)) return hipErrorInvalidHandle;
  if (hipError_t rc = fake_hip::capture_refuse(s); rc != hipSuccess) return rc;
  std::shared_ptr<Record> rec;
  {
    std::lock_guard lock(event->m);
    rec = event->rec;
  }
  if (rec) return submit(s, [rec] { rec->wait(); });
  return hipSuccess;
}

#ifndef FAKE_HIP_5_2_EXPORTS
// Debian's HIP 5.2 runtime does not export hipLaunchHostFunc; the variant
// built with FAKE_HIP_5_2_EXPORTS (libamdhip64.so.5) leaves it out too.
FAKE_EXPORT hipError_t hipLaunchHostFunc(hipStream_t stream, hipHostFn_t fn, void* user_data) {
  FAKE_BEGIN();
  if (fn == nullptr) return hipErrorInvalidValue;
  ihipStream_t* s = resolve(stream);
  if (s == nullptr) return hipErrorInvalidHandle;
  return submit(s, [fn, user_data] { fn(user_data); });
}
#endif

FAKE_EXPORT hipError_t hipStreamAddCallback(hipStream_t stream, hipStreamCallback_t callback,
                                            void* user_data, unsigned int flags) {
  FAKE_BEGIN();
  if (callback == nullptr || flags != 0) return hipErrorInvalidValue;
  ihipStream_t* s = resolve(stream);
  if (s == nullptr) return hipErrorInvalidHandle;
  return submit(s, [stream, callback, user_data] { callback(stream, hipSuccess, user_data); });
}

// --- events ----------------------------------------------------------------

FAKE_EXPORT hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned flags) {
  if (event == nullptr ||
      (flags & ~(hipEventBlockingSync | hipEventDisableTiming | hipEventInterprocess)) != 0)
    return hipErrorInvalidValue;
  FAKE_BEGIN();
  auto* e = new ihipEvent_t();
  e->device = t_device;
  e->flags = flags;
  {
    std::lock_guard lock(state().mu);
    state().events.insert(e);
  }
  *event = e;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipEventDestroy(hipEvent_t event) {
  FAKE_BEGIN();
  {
    std::lock_guard lock(state().mu);
    if (state().events.erase(event) == 0) return hipErrorInvalidHandle;
  }
  delete event;  // records still queued are shared_ptr-owned
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
  FAKE_BEGIN();
  if (!live_event(event)) return hipErrorInvalidHandle;
  ihipStream_t* s = resolve(stream);
  if (s == nullptr) return hipErrorInvalidHandle;
  if (s->device != event->device) return hipErrorInvalidHandle;
  // Event nodes of captures are not modelled: refused before the event changes.
  if (hipError_t rc = fake_hip::capture_refuse(s); rc != hipSuccess) return rc;
  auto rec = std::make_shared<Record>();
  {
    std::lock_guard lock(event->m);
    event->rec = rec;
  }
  return submit(s, nullptr, rec);
}

FAKE_EXPORT hipError_t hipEventQuery(hipEvent_t event) {
  FAKE_BEGIN();
  if (!live_event(event)) return hipErrorInvalidHandle;
  std::shared_ptr<Record> rec;
  {
    std::lock_guard lock(event->m);
    rec = event->rec;
  }
  return !rec || rec->is_done() ? hipSuccess : hipErrorNotReady;
}

FAKE_EXPORT hipError_t hipEventSynchronize(hipEvent_t event) {
  FAKE_BEGIN();
  if (!live_event(event)) return hipErrorInvalidHandle;
  std::shared_ptr<Record> rec;
  {
    std::lock_guard lock(event->m);
    rec = event->rec;
  }
  if (rec) rec->wait();
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop) {
  if (ms == nullptr) return hipErrorInvalidValue;
  FAKE_BEGIN();
  if (!live_event(start) || !live_event(stop)) return hipErrorInvalidHandle;
  if ((start->flags | stop->flags) & hipEventDisableTiming) return hipErrorInvalidHandle;
  std::shared_ptr<Record> a, b;
  {
    std::lock_guard la(start->m);
    a = start->rec;
  }
  {
    std::lock_guard lb(stop->m);
    b = stop->rec;
  }
  if (!a || !b) return hipErrorInvalidHandle;
  if (!a->is_done() || !b->is_done()) return hipErrorNotReady;
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return hipSuccess;
}

// --- memory -----------------------------------------------------------------

FAKE_EXPORT hipError_t hipMalloc(void** ptr, size_t size) {
  if (ptr == nullptr) return hipErrorInvalidValue;
  FAKE_BEGIN();
  if (size == 0) {
    *ptr = nullptr;
    return hipSuccess;
  }
  State& s = state();
  std::lock_guard lock(s.mu);
  Device& d = s.devices[static_cast<size_t>(t_device)];
  if (size > d.total - d.used) return hipErrorOutOfMemory;
  void* p = std::aligned_alloc(256, (size + 255) / 256 * 256);
  if (p == nullptr) return hipErrorOutOfMemory;
  d.used += size;
  s.allocs[reinterpret_cast<uintptr_t>(p)] = Alloc{size, t_device};
  *ptr = p;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipFree(void* ptr) {
  FAKE_BEGIN();
  if (ptr == nullptr) return hipSuccess;
  State& s = state();
  std::lock_guard lock(s.mu);
  auto it = s.allocs.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == s.allocs.end()) return hipErrorInvalidValue;
  s.devices[static_cast<size_t>(it->second.device)].used -= it->second.size;
  s.allocs.erase(it);
  std::free(ptr);
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind kind,
                                      hipStream_t stream) {
  FAKE_BEGIN();
  ihipStream_t* s = resolve(stream);
  if (s == nullptr) return hipErrorInvalidHandle;
  if (bytes == 0) return hipSuccess;
  if (dst == nullptr || src == nullptr) return hipErrorInvalidValue;
  if (kind == hipMemcpyDefault) {
    bool d = is_device_pointer(dst), sr = is_device_pointer(src);
    kind = d ? (sr ? hipMemcpyDeviceToDevice : hipMemcpyHostToDevice)
             : (sr ? hipMemcpyDeviceToHost : hipMemcpyHostToHost);
  }
  bool dst_dev = kind == hipMemcpyHostToDevice || kind == hipMemcpyDeviceToDevice;
  bool src_dev = kind == hipMemcpyDeviceToHost || kind == hipMemcpyDeviceToDevice;
  if (kind != hipMemcpyHostToHost && !dst_dev && !src_dev) return hipErrorInvalidMemcpyDirection;
  if (dst_dev && !is_device_range(dst, bytes)) return hipErrorInvalidValue;
  if (src_dev && !is_device_range(src, bytes)) return hipErrorInvalidValue;
  if (!dst_dev && is_device_pointer(dst)) return hipErrorInvalidValue;
  if (!src_dev && is_device_pointer(src)) return hipErrorInvalidValue;
  return submit(s, [dst, src, bytes] { std::memmove(dst, src, bytes); });
}

FAKE_EXPORT hipError_t hipMemsetAsync(void* dst, int value, size_t bytes, hipStream_t stream) {
  FAKE_BEGIN();
  ihipStream_t* s = resolve(stream);
  if (s == nullptr) return hipErrorInvalidHandle;
  if (bytes == 0) return hipSuccess;
  if (!is_device_range(dst, bytes)) return hipErrorInvalidValue;
  return submit(s, [dst, value, bytes] { std::memset(dst, value, bytes); });
}

FAKE_EXPORT hipError_t hipMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return hipErrorInvalidValue;
  FAKE_BEGIN();
  std::lock_guard lock(state().mu);
  const Device& d = state().devices[static_cast<size_t>(t_device)];
  *free_bytes = d.total - d.used;
  *total_bytes = d.total;
  return hipSuccess;
}

// --- page-locked host memory ----------------------------------------------------

namespace {

// Whether [p, p + n) overlaps a range of `ranges` (base -> bytes).
bool overlaps(const std::map<uintptr_t, size_t>& ranges, uintptr_t p, size_t n) {
  auto it = ranges.upper_bound(p);
  if (it != ranges.begin()) {
    auto prev = std::prev(it);
    if (p - prev->first < prev->second) return true;
  }
  return it != ranges.end() && it->first - p < n;
}

}  // namespace

// hipPointerGetAttributes (HIP Runtime API, "Memory Management"): device
// memory from hipMalloc (devicePointer, device), page-locked host memory
// from hipHostMalloc or hipHostRegister (hostPointer and devicePointer both
// the address: the fake maps host memory at the same address). An address
// the runtime does not know: HIP 5.2 answers hipErrorInvalidValue; HIP 6
// answers hipSuccess with type hipMemoryTypeUnregistered (0) and no pointers.
// The memory-type values follow each release (HIP 6 renumbered the enum:
// Host 1, Device 2). The fake makes no managed memory.
FAKE_EXPORT hipError_t hipPointerGetAttributes(hipPointerAttribute_t* attributes, const void* ptr) {
  if (attributes == nullptr || ptr == nullptr) return hipErrorInvalidValue;
  FAKE_BEGIN();
#ifdef FAKE_HIP_5_2_EXPORTS
  constexpr int kHost = 0, kDevice = 1;
#else
  constexpr int kHost = 1, kDevice = 2;
#endif
  State& s = state();
  std::lock_guard lock(s.mu);
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  auto inside = [p](const auto& ranges, auto bytes_of) {
    auto it = ranges.upper_bound(p);
    if (it == ranges.begin()) return ranges.end();
    --it;
    return p - it->first < bytes_of(it->second) ? it : ranges.end();
  };
  *attributes = hipPointerAttribute_t{};
  if (auto a = inside(s.allocs, [](const Alloc& x) { return x.size; }); a != s.allocs.end()) {
    attributes->memoryType = static_cast<hipMemoryType>(kDevice);
    attributes->device = a->second.device;
    attributes->devicePointer = const_cast<void*>(ptr);
    return hipSuccess;
  }
  auto bytes = [](size_t b) { return b; };
  if (inside(s.host_allocs, bytes) != s.host_allocs.end() ||
      inside(s.registered, bytes) != s.registered.end()) {
    attributes->memoryType = static_cast<hipMemoryType>(kHost);
    attributes->device = t_device;
    attributes->devicePointer = const_cast<void*>(ptr);
    attributes->hostPointer = const_cast<void*>(ptr);
    return hipSuccess;
  }
#ifdef FAKE_HIP_5_2_EXPORTS
  return hipErrorInvalidValue;
#else
  attributes->device = t_device;
  return hipSuccess;
#endif
}

// hipHostMalloc's flags (HIP 5.2 and 6 alike); Coherent and NonCoherent
// together are refused. Size 0 gives NULL and success.
FAKE_EXPORT hipError_t hipHostMalloc(void** ptr, size_t size, unsigned int flags) {
  if (ptr == nullptr) return hipErrorInvalidValue;
  constexpr unsigned kKnown = hipHostMallocPortable | hipHostMallocMapped |
                              hipHostMallocWriteCombined | hipHostMallocNumaUser |
                              hipHostMallocCoherent | hipHostMallocNonCoherent;
  if ((flags & ~kKnown) != 0 ||
      ((flags & hipHostMallocCoherent) && (flags & hipHostMallocNonCoherent)))
    return hipErrorInvalidValue;
  FAKE_BEGIN();
  *ptr = nullptr;
  if (size == 0) return hipSuccess;
  State& s = state();
  std::lock_guard lock(s.mu);
  if (size > s.host_total - s.host_used) return hipErrorOutOfMemory;
  void* p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  if (p == nullptr) return hipErrorOutOfMemory;
  s.host_used += size;
  s.host_allocs[reinterpret_cast<uintptr_t>(p)] = size;
  *ptr = p;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipHostFree(void* ptr) {
  FAKE_BEGIN();
  if (ptr == nullptr) return hipSuccess;
  State& s = state();
  std::lock_guard lock(s.mu);
  auto it = s.host_allocs.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == s.host_allocs.end()) return hipErrorInvalidValue;
  s.host_used -= it->second;
  s.host_allocs.erase(it);
  std::free(ptr);
  return hipSuccess;
}

// Flags hipHostRegisterDefault/Portable/Mapped/IoMemory (and ReadOnly,
// 0x8, in later headers). Memory already page-locked (registered or from
// hipHostMalloc) is hipErrorHostMemoryAlreadyRegistered; device memory is
// no host memory.
FAKE_EXPORT hipError_t hipHostRegister(void* host_ptr, size_t bytes, unsigned int flags) {
  if (host_ptr == nullptr || bytes == 0 || (flags & ~0xFu) != 0) return hipErrorInvalidValue;
  FAKE_BEGIN();
  State& s = state();
  std::lock_guard lock(s.mu);
  const auto p = reinterpret_cast<uintptr_t>(host_ptr);
  if (find_range(host_ptr, 1) != nullptr) return hipErrorInvalidValue;
  if (overlaps(s.registered, p, bytes) || overlaps(s.host_allocs, p, bytes))
    return hipErrorHostMemoryAlreadyRegistered;
  s.registered[p] = bytes;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipHostUnregister(void* host_ptr) {
  if (host_ptr == nullptr) return hipErrorInvalidValue;
  FAKE_BEGIN();
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.registered.erase(reinterpret_cast<uintptr_t>(host_ptr)) == 0)
    return hipErrorHostMemoryNotRegistered;
  return hipSuccess;
}

// --- peer access and copies --------------------------------------------------------

namespace {

// hipDeviceCanAccessPeer's answer; caller holds state().mu.
hipError_t can_access_locked(int* can, int device, int peer) {
  State& s = state();
  const int n = static_cast<int>(s.devices.size());
  if (device < 0 || peer < 0 || device >= n || peer >= n) return hipErrorInvalidDevice;
  *can = device != peer && s.peer_links ? 1 : 0;
  return hipSuccess;
}

}  // namespace

FAKE_EXPORT hipError_t hipDeviceCanAccessPeer(int* can_access, int device, int peer) {
  if (can_access == nullptr) return hipErrorInvalidValue;
  FAKE_BEGIN();
  std::lock_guard lock(state().mu);
  return can_access_locked(can_access, device, peer);
}

// For the current device, as HIP does: flags must be 0; a pair without a
// link is hipErrorInvalidDevice; a repeat hipErrorPeerAccessAlreadyEnabled.
FAKE_EXPORT hipError_t hipDeviceEnablePeerAccess(int peer, unsigned int flags) {
  FAKE_BEGIN();
  if (flags != 0) return hipErrorInvalidValue;
  State& s = state();
  std::lock_guard lock(s.mu);
  int can = 0;
  if (can_access_locked(&can, t_device, peer) != hipSuccess || can == 0)
    return hipErrorInvalidDevice;
  if (!s.peer_enabled.insert({t_device, peer}).second) return hipErrorPeerAccessAlreadyEnabled;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipDeviceDisablePeerAccess(int peer) {
  FAKE_BEGIN();
  State& s = state();
  std::lock_guard lock(s.mu);
  int can = 0;
  if (can_access_locked(&can, t_device, peer) != hipSuccess || can == 0)
    return hipErrorInvalidDevice;
  if (s.peer_enabled.erase({t_device, peer}) == 0) return hipErrorPeerAccessNotEnabled;
  return hipSuccess;
}

// In stream order, enabled or not (HIP stages copies between devices
// without access). Each side must lie in memory of the device named for it.
FAKE_EXPORT hipError_t hipMemcpyPeerAsync(void* dst, int dst_device, const void* src,
                                          int src_device, size_t bytes, hipStream_t stream) {
  FAKE_BEGIN();
  const int n = device_count();
  if (dst_device < 0 || src_device < 0 || dst_device >= n || src_device >= n)
    return hipErrorInvalidDevice;
  ihipStream_t* s = resolve(stream);
  if (s == nullptr) return hipErrorInvalidHandle;
  if (bytes == 0) return hipSuccess;
  {
    std::lock_guard lock(state().mu);
    const Alloc* d = find_range(dst, bytes);
    const Alloc* r = find_range(src, bytes);
    if (d == nullptr || r == nullptr || d->device != dst_device || r->device != src_device)
      return hipErrorInvalidValue;
  }
  return submit(s, [dst, src, bytes] { std::memmove(dst, src, bytes); });
}

#ifndef FAKE_HIP_5_2_EXPORTS
// HIP 5.6 and later (not declared by 5.2's header, so declared by its
// definition here): the device of a stream; the null stream's is the
// current device.
FAKE_EXPORT hipError_t hipStreamGetDevice(hipStream_t stream, hipDevice_t* device) {
  if (device == nullptr) return hipErrorInvalidValue;
  FAKE_BEGIN();
  if (stream == nullptr || stream == hipStreamPerThread) {
    *device = t_device;
    return hipSuccess;
  }
  std::lock_guard lock(state().mu);
  auto it = state().streams.find(stream);
  if (it == state().streams.end()) return hipErrorContextIsDestroyed;
  *device = it->second->device;
  return hipSuccess;
}
#endif

// --- test hooks -----------------------------------------------------------------

FAKE_EXPORT int fake_hip_live_streams(void) {
  std::lock_guard lock(state().mu);
  return static_cast<int>(state().streams.size());
}

FAKE_EXPORT int fake_hip_host_allocations(void) {
  std::lock_guard lock(state().mu);
  return static_cast<int>(state().host_allocs.size());
}

FAKE_EXPORT int fake_hip_registered_ranges(void) {
  std::lock_guard lock(state().mu);
  return static_cast<int>(state().registered.size());
}
