// A fake CUDA driver (libcuda.so.1) for the CUDA plugin's tests: exactly the
// Driver API subset the plugin uses, over an in-process model of devices.
// Never installed.
//
// Environment:
//   FAKE_CUDA_DEVICES=N          physical devices (default 2; 0: cuInit says
//                                CUDA_ERROR_NO_DEVICE)
//   CUDA_VISIBLE_DEVICES         read by the first cuInit, as the real driver
//                                reads it, and applied by the fake's own small
//                                model of NVIDIA's rules (see "visibility"; it
//                                shares no code with the plugin, so comparing
//                                the plugin's count with the fake's is a check)
//   FAKE_CUDA_DRIVER_VERSION=N   what cuDriverGetVersion answers (default: the
//                                CUDA_VERSION of the cuda.h the fake was built
//                                with, so the driver loads the PTX that
//                                toolkit's nvcc writes); it also decides the
//                                newest PTX ISA cuModuleLoadDataEx takes
//   FAKE_CUDA_PROC_ADDRESS=0     cuGetProcAddress finds nothing (dlsym path)
//   FAKE_CUDA_PARAM_INFO=0       cuGetProcAddress does not know
//                                cuFuncGetParamInfo (a driver older than 12.4)
//   FAKE_CUDA_NO_ERROR_STRINGS=1 cuGetErrorName and cuGetErrorString recognise
//                                no code: CUDA_ERROR_INVALID_VALUE with *pStr
//                                NULL, what the reference says they answer
//                                for an unrecognised code (a driver older
//                                than the code). Both stay exported: the
//                                plugin needs them to load at all
//   FAKE_CUDA_MEMORY_MB=N        memory per device (default 1024)
//   FAKE_CUDA_GRAPHS=0           cuGetProcAddress does not know the stream
//                                capture and graph entry points (a driver
//                                without graphs; dlsym still finds them)
//   FAKE_CUDA_PEER=0             the topology has no P2P path between any two
//                                devices (default 1: every pair, NVLink-like):
//                                cuDeviceCanAccessPeer answers 0 and
//                                cuCtxEnablePeerAccess
//                                CUDA_ERROR_PEER_ACCESS_UNSUPPORTED
//
// Error names and texts (cuGetErrorName, cuGetErrorString) come from
// fake_error_texts.hpp: the enumerators' names, and as texts the Driver API
// reference's descriptions of the codes, which no plugin's built-in table
// holds, so a test can tell the driver's text from a plugin's fallback.
//
// Model: primary contexts (retain count, active), a per-thread current
// context, streams that are real worker threads (so ordering, NOT_READY and
// timing are observable), events with a record generation (a wait or a query
// is on the record current at the time of the call), device memory as host
// memory with range validation. Streams that are not NON_BLOCKING do not
// synchronise implicitly with the legacy stream (the plugin creates only
// NON_BLOCKING ones). A fork() child of a process that ran cuInit gets
// CUDA_ERROR_NOT_INITIALIZED from every call, as with the real driver.
//
// Page-locked host memory (Driver API reference, "Memory Management"):
// cuMemHostAlloc / cuMemFreeHost and cuMemHostRegister / cuMemHostUnregister
// track their ranges with their flags and the context they were made in;
// overlapping registrations are CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
// unregistering anything but a registered base
// CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED; both need a current context. A
// host<->device copy counts as pinned when its host range lies in such a
// range that is PORTABLE or of the current context, else as pageable (the
// data moves the same either way: only the count differs). Peer access
// ("Peer Context Memory Access"): one-way per context pair, a repeat is
// CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED; cuMemcpyPeerAsync works with or
// without it, queued on the stream like every copy. cuDeviceGetAttribute
// answers an H100 SXM-like device (sm_90, 1980 MHz, 5120-bit bus, 50 MiB
// L2; the SM count is 8 + the physical index, so devices differ).
//
// Modules and launches (cuModuleLoadDataEx, cuModuleGetFunction,
// cuFuncGetAttribute/SetAttribute/GetParamInfo, cuLaunchKernel) live in
// fake_modules.cpp: PTX is parsed for its entries and their parameters, and
// a launch of a kernel the fake knows by name runs a host implementation on
// the stream's worker (fake_kernels.cpp); see there.
//
// Test hook (not CUDA): fake_cuda_count(name) reads the model's counters
// ("streams" live created streams, "host_allocations", "registered_ranges",
// "peer_links", "pinned_copies", "pageable_copies", "peer_copies",
// "proc_address_misses": names cuGetProcAddress did not know, and
// fake_modules.cpp's "modules", "kernel_launches", "dynamic_shared_opt_ins",
// fake_graphs.cpp's "graphs", "graph_execs", "graph_launches", "captures");
// -1 for an unknown name.
//
// Stream capture and graphs (cuStreamBeginCapture .. cuGraphExecDestroy)
// live in fake_graphs.cpp: every call that queues work goes through
// submit(), which records it instead while the stream captures; see there.
#include <cuda.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fake_error_texts.hpp"
#include "fake_internal.hpp"
#include "fake_model.hpp"

using Clock = std::chrono::steady_clock;

struct CUstream_st;

struct CUctx_st {
  int device = 0;  // visible ordinal
  std::mutex m;
  std::vector<CUstream_st*> streams;  // every stream ever made here (never freed)
  CUstream_st* legacy = nullptr;
};

struct CUstream_st {
  CUctx_st* ctx = nullptr;
  int priority = 0;
  std::mutex m;
  std::condition_variable cv;
  // run() on the worker; then, with the stream lock held, the completion
  // count and done() advance together (an event record completes exactly
  // when the stream has finished the work before it: no window in which
  // one says done and the other busy).
  struct Item {
    std::function<void()> run;
    std::function<void()> done;
  };
  std::deque<Item> queue;
  uint64_t submitted = 0;
  uint64_t completed = 0;
  bool closing = false;
  bool destroyed = false;
  bool exited = false;  // the worker has left its loop (set under m)
  std::thread thread;   // the worker; joined once it exited (see Graveyard)
};

struct CUevent_st {
  CUctx_st* ctx = nullptr;
  unsigned flags = 0;
  std::mutex m;
  std::condition_variable cv;
  uint64_t generation = 0;  // records made; the latest is `generation`
  uint64_t completed = 0;   // highest record that has completed
  // Records made and not yet run. Records of one event on different streams
  // complete in any order, and a wait (or synchronize) is for the record
  // that was the latest when it was made, as in CUDA: "completed >= target"
  // would let a later record on a fast stream release a wait for an earlier
  // one on a slow stream.
  std::set<uint64_t> outstanding;
  Clock::time_point when{};  // when record `completed` ran
  bool done(uint64_t record) const { return outstanding.count(record) == 0; }
  std::atomic<int> refs{1};  // the handle + pending records/waits
};

namespace {

struct Device {
  int physical = 0;
  CUctx_st ctx;
  std::mutex m;
  unsigned retains = 0;
  size_t used = 0;
};

struct Allocation {
  size_t bytes;
  int device;
};

// A cuMemHostAlloc allocation or a cuMemHostRegister range.
struct HostRange {
  size_t bytes;
  unsigned flags;
  CUctx_st* ctx;  // current when it was made
};

struct Model {
  int physical = 0;
  std::once_flag visible_once;   // the first cuInit applies CUDA_VISIBLE_DEVICES
  std::vector<Device*> devices;  // visible ordinals, set by the first cuInit
  int version = CUDA_VERSION;
  bool proc_address = true;
  bool param_info = true;     // FAKE_CUDA_PARAM_INFO
  bool error_strings = true;  // FAKE_CUDA_NO_ERROR_STRINGS unset
  bool graphs = true;         // FAKE_CUDA_GRAPHS
  size_t memory = size_t{1024} << 20;
  std::mutex m;  // allocations, live handles
  std::map<uintptr_t, Allocation> allocations;
  std::set<const void*> live;                            // streams and events
  bool peer = true;                                      // FAKE_CUDA_PEER
  std::map<uintptr_t, HostRange> host_allocations;       // cuMemHostAlloc
  std::map<uintptr_t, HostRange> registered;             // cuMemHostRegister
  std::set<std::pair<CUctx_st*, CUctx_st*>> peer_links;  // (from, to) enabled
  std::atomic<long long> live_streams{0};
  std::atomic<long long> pinned_copies{0};
  std::atomic<long long> pageable_copies{0};
  std::atomic<long long> peer_copies{0};
  std::atomic<long long> proc_address_misses{0};
  std::atomic<bool> initialised{false};
  std::atomic<bool> poisoned{false};  // fork() child after cuInit in the parent
};

Model* g_model = nullptr;
std::once_flag g_model_once;
thread_local CUctx_st* t_current = nullptr;

void after_fork_child() {
  if (g_model != nullptr && g_model->initialised.load()) g_model->poisoned.store(true);
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

Model& model() {
  std::call_once(g_model_once, [] {
    auto* m = new Model();  // lives until exit, like a driver
    m->physical = fake_cuda::physical_devices();
    m->version = env_int("FAKE_CUDA_DRIVER_VERSION", CUDA_VERSION);
    m->proc_address = env_int("FAKE_CUDA_PROC_ADDRESS", 1) != 0;
    m->param_info = env_int("FAKE_CUDA_PARAM_INFO", 1) != 0;
    m->error_strings = env_int("FAKE_CUDA_NO_ERROR_STRINGS", 0) == 0;
    m->graphs = env_int("FAKE_CUDA_GRAPHS", 1) != 0;
    m->memory = static_cast<size_t>(std::max(1, env_int("FAKE_CUDA_MEMORY_MB", 1024))) << 20;
    m->peer = env_int("FAKE_CUDA_PEER", 1) != 0;
    pthread_atfork(nullptr, nullptr, after_fork_child);
    g_model = m;
  });
  return *g_model;
}

// --- visibility -------------------------------------------------------------
// CUDA_VISIBLE_DEVICES as NVIDIA documents it (CUDA C++ Programming Guide,
// "CUDA Environment Variables"): a comma-separated sequence of indices or
// GPU UUIDs, abbreviated to any prefix that names one GPU; the devices are
// enumerated in the sequence's order and the sequence ends at the first
// invalid identifier. What the guide leaves out is modelled on the driver's
// observed behaviour: blanks around an entry are ignored, an index is its
// leading digits (as strtoul reads them: "1gpu" is 1), UUIDs compare
// case-insensitively, a device named twice hides every device, and the
// empty string hides every device. MIG entries name no modelled device.

bool has_prefix_nocase(const std::string& s, const std::string& prefix) {
  if (prefix.size() > s.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

// The physical device an entry names, or -1 when it is invalid.
int named_device(std::string entry, int physical) {
  size_t b = entry.find_first_not_of(" \t\n\r");
  entry = b == std::string::npos ? "" : entry.substr(b, entry.find_last_not_of(" \t\n\r") - b + 1);
  if (!entry.empty() && std::isdigit(static_cast<unsigned char>(entry[0]))) {
    long long index = 0;
    for (size_t i = 0; i < entry.size() && std::isdigit(static_cast<unsigned char>(entry[i])); ++i)
      index = std::min<long long>(index * 10 + (entry[i] - '0'), 1LL << 40);
    return index < physical ? static_cast<int>(index) : -1;
  }
  if (!has_prefix_nocase(entry, "GPU-")) return -1;
  int found = -1;
  for (int i = 0; i < physical; ++i) {
    if (!has_prefix_nocase(fake_cuda::uuid_string(i), entry)) continue;
    if (found != -1) return -1;  // the prefix names several GPUs
    found = i;
  }
  return found;
}

// Visible ordinal i -> physical device, for the variable's current value.
std::vector<int> visible_devices(int physical) {
  std::vector<int> out;
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  if (env == nullptr) {
    for (int i = 0; i < physical; ++i) out.push_back(i);
    return out;
  }
  std::string list = env;
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    size_t length = comma == std::string::npos ? std::string::npos : comma - start;
    int dev = named_device(list.substr(start, length), physical);
    if (dev < 0) break;
    if (std::find(out.begin(), out.end(), dev) != out.end()) return {};
    out.push_back(dev);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

CUresult ready() {
  Model& m = model();
  if (m.poisoned.load()) return CUDA_ERROR_NOT_INITIALIZED;
  return m.initialised.load() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

#define FAKE_READY()                     \
  do {                                   \
    CUresult rc_ = ready();              \
    if (rc_ != CUDA_SUCCESS) return rc_; \
  } while (0)

#define FAKE_CONTEXT() \
  FAKE_READY();        \
  if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT

Device* device_of(CUdevice dev) {
  Model& m = model();
  if (dev < 0 || dev >= static_cast<int>(m.devices.size())) return nullptr;
  return m.devices[static_cast<size_t>(dev)];
}

bool is_live(const void* h) {
  Model& m = model();
  std::lock_guard lock(m.m);
  return m.live.count(h) != 0;
}

// --- streams --------------------------------------------------------------

void worker(CUstream_st* s) {
  std::unique_lock lock(s->m);
  while (true) {
    s->cv.wait(lock, [&] { return !s->queue.empty() || s->closing; });
    if (s->queue.empty()) {  // closing and drained
      s->exited = true;
      break;
    }
    auto item = std::move(s->queue.front());
    s->queue.pop_front();
    lock.unlock();
    if (item.run) item.run();
    lock.lock();
    ++s->completed;
    if (item.done) item.done();  // lock order: stream, then event
    s->cv.notify_all();
  }
}

// Workers of destroyed streams, joined once they exited: at the next stream
// creation, and at exit (a static destroyed among the exit handlers, before
// LeakSanitizer's check, which faults when a thread ends while it stops the
// world). At exit a worker still draining gets kExitWaitMs to finish.
struct Graveyard {
  static constexpr int kExitWaitMs = 500;
  std::mutex m;
  std::vector<CUstream_st*> streams;
  // Joins the exited ones; with `wait`, first lets the others finish.
  void reap(bool wait) {
    std::lock_guard lock(m);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kExitWaitMs);
    std::vector<CUstream_st*> kept;
    for (CUstream_st* s : streams) {
      bool exited = false;
      for (;;) {
        {
          std::lock_guard sl(s->m);
          exited = s->exited;
        }
        if (exited || !wait || std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (exited && s->thread.joinable()) {
        s->thread.join();
      } else if (!exited) {
        kept.push_back(s);
      }
    }
    streams.swap(kept);
  }
  ~Graveyard() { reap(true); }
};
Graveyard g_graveyard;

CUstream_st* new_stream(CUctx_st* ctx, int priority) {
  g_graveyard.reap(false);
  auto* s = new CUstream_st();
  s->ctx = ctx;
  s->priority = priority;
  s->thread = std::thread(worker, s);
  {
    std::lock_guard lock(ctx->m);
    ctx->streams.push_back(s);
  }
  return s;
}

void enqueue(CUstream_st* s, std::function<void()> task, std::function<void()> done = {}) {
  std::lock_guard lock(s->m);
  s->queue.push_back(CUstream_st::Item{std::move(task), std::move(done)});
  ++s->submitted;
  s->cv.notify_all();
}

void wait_idle(CUstream_st* s) {
  std::unique_lock lock(s->m);
  uint64_t target = s->submitted;
  s->cv.wait(lock, [&] { return s->completed >= target; });
}

// NULL / CU_STREAM_LEGACY / CU_STREAM_PER_THREAD: the current context's
// legacy stream. Others must be live and, when `same_ctx`, of the current
// context (what every enqueueing call needs).
CUresult resolve(CUstream h, bool same_ctx, CUstream_st** out) {
  if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
    if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    CUctx_st* ctx = t_current;
    {
      std::lock_guard lock(ctx->m);
      if (ctx->legacy != nullptr) {
        *out = ctx->legacy;
        return CUDA_SUCCESS;
      }
    }
    CUstream_st* s = new_stream(ctx, 0);
    std::lock_guard lock(ctx->m);
    if (ctx->legacy == nullptr) ctx->legacy = s;
    *out = ctx->legacy;
    return CUDA_SUCCESS;
  }
  if (!is_live(h) || h->destroyed) return CUDA_ERROR_INVALID_HANDLE;
  if (same_ctx && h->ctx != t_current) return CUDA_ERROR_INVALID_CONTEXT;
  *out = h;
  return CUDA_SUCCESS;
}

void release(CUevent_st* e) {
  if (e->refs.fetch_sub(1) == 1) delete e;
}

// --- memory ---------------------------------------------------------------

// [p, p+bytes) inside one live allocation.
bool in_allocation(CUdeviceptr p, size_t bytes) {
  Model& m = model();
  std::lock_guard lock(m.m);
  auto it = m.allocations.upper_bound(static_cast<uintptr_t>(p));
  if (it == m.allocations.begin()) return false;
  --it;
  uintptr_t start = it->first;
  return p >= start && bytes <= it->second.bytes && p - start <= it->second.bytes - bytes;
}

// [p, p+bytes) inside one live allocation of visible device `device`.
bool in_allocation_of(CUdeviceptr p, size_t bytes, int device) {
  Model& m = model();
  std::lock_guard lock(m.m);
  auto it = m.allocations.upper_bound(static_cast<uintptr_t>(p));
  if (it == m.allocations.begin()) return false;
  --it;
  uintptr_t start = it->first;
  return it->second.device == device && p >= start && bytes <= it->second.bytes &&
         p - start <= it->second.bytes - bytes;
}

// The range of `ranges` that [p, p+bytes) overlaps, or end(). Caller holds m.m.
std::map<uintptr_t, HostRange>::const_iterator overlapping(
    const std::map<uintptr_t, HostRange>& ranges, uintptr_t p, size_t bytes) {
  auto it = ranges.upper_bound(p + bytes - 1);  // first range starting past the end
  if (it == ranges.begin()) return ranges.end();
  --it;
  return p < it->first + it->second.bytes ? it : ranges.end();
}

// [p, p+bytes) lies in page-locked host memory that `ctx` treats as pinned
// (PORTABLE memory, or memory made while `ctx` was current).
bool host_pinned(const void* ptr, size_t bytes, CUctx_st* ctx) {
  Model& m = model();
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard lock(m.m);
  for (const auto* ranges : {&m.host_allocations, &m.registered}) {
    auto it = overlapping(*ranges, p, bytes);
    if (it == ranges->end()) continue;
    const HostRange& r = it->second;
    const unsigned portable = CU_MEMHOSTALLOC_PORTABLE;  // == CU_MEMHOSTREGISTER_PORTABLE
    return p >= it->first && p + bytes <= it->first + r.bytes &&
           ((r.flags & portable) != 0 || r.ctx == ctx);
  }
  return false;
}

void count_host_copy(const void* host, size_t bytes) {
  Model& m = model();
  (host_pinned(host, bytes, t_current) ? m.pinned_copies : m.pageable_copies).fetch_add(1);
}

// A primary context the program may use: one of the model's, retained.
// Compares addresses only: `c` may be any value the caller passed.
bool live_context(CUcontext c) {
  if (c == nullptr) return false;
  for (Device* d : model().devices) {
    if (&d->ctx != c) continue;
    std::lock_guard lock(d->m);
    return d->retains > 0;
  }
  return false;
}

// The modelled topology: every pair of distinct devices, or none.
bool peer_capable(int dev, int peer) { return dev != peer && model().peer; }

}  // namespace

// --- services for fake_modules.cpp (fake_internal.hpp) ---------------------

namespace fake_cuda {

CUresult current_context(CUcontext* ctx) {
  FAKE_CONTEXT();
  *ctx = t_current;
  return CUDA_SUCCESS;
}

int context_device(CUcontext ctx) { return ctx->device; }

CUresult stream_for_launch(CUstream stream, void** queue) {
  CUstream_st* s = nullptr;
  if (CUresult rc = resolve(stream, true, &s); rc != CUDA_SUCCESS) return rc;
  *queue = s;
  return CUDA_SUCCESS;
}

void enqueue(void* queue, std::function<void()> work) {
  ::enqueue(static_cast<CUstream_st*>(queue), std::move(work));
}

CUresult submit(void* queue, std::function<void()> work) {
  switch (capture_work(queue, work)) {
    case Captured::recorded:
      return CUDA_SUCCESS;
    case Captured::invalidated:
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    case Captured::no:
      break;
  }
  ::enqueue(static_cast<CUstream_st*>(queue), std::move(work));
  return CUDA_SUCCESS;
}

bool kernel_can_access(CUcontext ctx, uintptr_t p, size_t bytes) {
  if (bytes == 0) return true;
  if (in_allocation_of(p, bytes, ctx->device)) return true;
  if (host_pinned(reinterpret_cast<const void*>(p), bytes, ctx)) return true;
  Model& m = model();
  for (Device* d : m.devices) {
    if (&d->ctx == ctx || !in_allocation_of(p, bytes, d->ctx.device)) continue;
    std::lock_guard lock(m.m);
    return m.peer_links.count({ctx, &d->ctx}) != 0;
  }
  return false;
}

int driver_version() { return model().version; }

void track(const void* h) {
  Model& m = model();
  std::lock_guard lock(m.m);
  m.live.insert(h);
}

bool untrack(const void* h) {
  Model& m = model();
  std::lock_guard lock(m.m);
  return m.live.erase(h) != 0;
}

bool tracked(const void* h) { return is_live(h); }

}  // namespace fake_cuda

extern "C" {

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = model().version;
  return CUDA_SUCCESS;
}

CUresult cuInit(unsigned int flags) {
  Model& m = model();
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (m.poisoned.load()) return CUDA_ERROR_NOT_INITIALIZED;
  // The driver reads CUDA_VISIBLE_DEVICES in its first cuInit, not when it
  // is loaded or first called (cuDriverGetVersion needs no cuInit).
  std::call_once(m.visible_once, [&m] {
    std::vector<int> visible = visible_devices(m.physical);
    for (size_t i = 0; i < visible.size(); ++i) {
      auto* d = new Device();
      d->physical = visible[i];
      d->ctx.device = static_cast<int>(i);
      m.devices.push_back(d);
    }
  });
  if (m.devices.empty()) return CUDA_ERROR_NO_DEVICE;
  m.initialised.store(true);
  return CUDA_SUCCESS;
}

// Both answer CUDA_ERROR_INVALID_VALUE with *pStr NULL for a code they do
// not recognise (Driver API reference, "Error Handling").
CUresult cuGetErrorName(CUresult error, const char** str) {
  if (str == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const fake_cuda_errors::Text* t = model().error_strings ? fake_cuda_errors::find(error) : nullptr;
  *str = t != nullptr ? t->name : nullptr;
  return t != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** str) {
  if (str == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const fake_cuda_errors::Text* t = model().error_strings ? fake_cuda_errors::find(error) : nullptr;
  *str = t != nullptr ? t->text : nullptr;
  return t != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceGetCount(int* count) {
  FAKE_READY();
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(model().devices.size());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  FAKE_READY();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (device_of(ordinal) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  FAKE_READY();
  Device* d = device_of(dev);
  if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<size_t>(len), "Fake CUDA Device %d", d->physical);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  FAKE_READY();
  Device* d = device_of(dev);
  if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned char b[16];
  fake_cuda::uuid_bytes(d->physical, b);
  std::memcpy(uuid->bytes, b, 16);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev) {
  FAKE_READY();
  if (device_of(dev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = model().memory;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attrib, CUdevice dev) {
  FAKE_READY();
  Device* d = device_of(dev);
  if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // An H100 SXM5 as cuDeviceGetAttribute describes it, except the SM count
  // (8 + the physical index, so tests can tell devices apart) and the PCI
  // bus (0x10 + the physical index). Anything else is not modelled.
  struct Row {
    CUdevice_attribute attr;
    int value;
  };
  const Row h100[] = {
      {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0},
      {CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0x10 + d->physical},
      {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 8 + d->physical},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 48 * 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 227 * 1024},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000},         // kHz
      {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},  // kHz
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 50 * 1024 * 1024},
      {CU_DEVICE_ATTRIBUTE_INTEGRATED, 0},
      {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
      {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
      {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
      {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 3},
      {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 1},
      {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
      {CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1},
  };
  for (const Row& r : h100) {
    if (r.attr == attrib) {
      *value = r.value;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  FAKE_READY();
  Device* d = device_of(dev);
  if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(d->m);
  ++d->retains;
  *pctx = &d->ctx;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  FAKE_READY();
  Device* d = device_of(dev);
  if (d == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(d->m);
  *flags = 0;
  *active = d->retains > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  FAKE_READY();
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = t_current;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  FAKE_READY();
  if (ctx != nullptr) {
    Device* d = device_of(ctx->device);
    if (d == nullptr || &d->ctx != ctx) return CUDA_ERROR_INVALID_CONTEXT;
    std::lock_guard lock(d->m);
    if (d->retains == 0) return CUDA_ERROR_INVALID_CONTEXT;  // primary context not retained
  }
  t_current = ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  FAKE_CONTEXT();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = t_current->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  FAKE_CONTEXT();
  // Refused while a stream of the context captures (and the capture invalidated).
  if (fake_cuda::capture_refuses_context_sync(t_current))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::vector<CUstream_st*> streams;
  {
    std::lock_guard lock(t_current->m);
    streams = t_current->streams;
  }
  for (auto* s : streams) wait_idle(s);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  FAKE_CONTEXT();
  if (least != nullptr) *least = 0;
  if (greatest != nullptr) *greatest = -5;
  return CUDA_SUCCESS;
}

CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  FAKE_CONTEXT();
  if (phStream == nullptr || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  priority = std::clamp(priority, -5, 0);
  CUstream_st* s = new_stream(t_current, priority);
  {
    Model& m = model();
    std::lock_guard lock(m.m);
    m.live.insert(s);
  }
  model().live_streams.fetch_add(1);
  *phStream = s;
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream hStream) {
  FAKE_CONTEXT();
  if (hStream == nullptr || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD ||
      !is_live(hStream))
    return CUDA_ERROR_INVALID_HANDLE;
  {
    Model& m = model();
    std::lock_guard lock(m.m);
    m.live.erase(hStream);
  }
  model().live_streams.fetch_sub(1);
  fake_cuda::capture_stream_destroyed(hStream);
  // Queued work still completes; the worker then exits. The object stays
  // (in its context's list) so cuCtxSynchronize can still wait on it.
  {
    std::lock_guard lock(hStream->m);
    hStream->destroyed = true;
    hStream->closing = true;
    hStream->cv.notify_all();
  }
  // Lock order: the graveyard, then a stream (Graveyard::reap).
  std::lock_guard gl(g_graveyard.m);
  g_graveyard.streams.push_back(hStream);
  return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream hStream) {
  FAKE_CONTEXT();
  CUstream_st* s = nullptr;
  if (CUresult rc = resolve(hStream, false, &s); rc != CUDA_SUCCESS) return rc;
  if (fake_cuda::capture_refuses_sync(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::lock_guard lock(s->m);
  return s->completed >= s->submitted ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuStreamSynchronize(CUstream hStream) {
  FAKE_CONTEXT();
  CUstream_st* s = nullptr;
  if (CUresult rc = resolve(hStream, false, &s); rc != CUDA_SUCCESS) return rc;
  if (fake_cuda::capture_refuses_sync(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  wait_idle(s);
  return CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  FAKE_CONTEXT();
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult rc = resolve(hStream, true, &s); rc != CUDA_SUCCESS) return rc;
  return fake_cuda::submit(s, [fn, userData] { fn(userData); });
}

CUresult cuEventCreate(CUevent* phEvent, unsigned int flags) {
  FAKE_CONTEXT();
  const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING;
  if (phEvent == nullptr || (flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* e = new CUevent_st();
  e->ctx = t_current;
  e->flags = flags;
  {
    Model& m = model();
    std::lock_guard lock(m.m);
    m.live.insert(e);
  }
  *phEvent = e;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent) {
  FAKE_CONTEXT();
  {
    Model& m = model();
    std::lock_guard lock(m.m);
    if (hEvent == nullptr || m.live.erase(hEvent) == 0) return CUDA_ERROR_INVALID_HANDLE;
  }
  release(hEvent);  // pending records keep it alive until they ran
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) {
  FAKE_CONTEXT();
  if (hEvent == nullptr || !is_live(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* s = nullptr;
  if (CUresult rc = resolve(hStream, true, &s); rc != CUDA_SUCCESS) return rc;
  if (s->ctx != hEvent->ctx) return CUDA_ERROR_INVALID_HANDLE;
  if (fake_cuda::capturing(s)) return CUDA_ERROR_NOT_SUPPORTED;  // fork/join: not modelled
  uint64_t gen = 0;
  {
    std::lock_guard lock(hEvent->m);
    gen = ++hEvent->generation;
    hEvent->outstanding.insert(gen);
  }
  hEvent->refs.fetch_add(1);
  enqueue(s, {}, [hEvent, gen] {
    {
      std::lock_guard lock(hEvent->m);
      hEvent->outstanding.erase(gen);
      if (gen > hEvent->completed) {
        hEvent->completed = gen;
        hEvent->when = Clock::now();
      }
      hEvent->cv.notify_all();
    }
    release(hEvent);
  });
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent hEvent) {
  FAKE_CONTEXT();
  if (hEvent == nullptr || !is_live(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard lock(hEvent->m);
  return hEvent->done(hEvent->generation) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent hEvent) {
  FAKE_CONTEXT();
  if (hEvent == nullptr || !is_live(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  std::unique_lock lock(hEvent->m);
  uint64_t target = hEvent->generation;
  hEvent->cv.wait(lock, [&] { return hEvent->done(target); });
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float* ms, CUevent hStart, CUevent hEnd) {
  FAKE_CONTEXT();
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (hStart == nullptr || hEnd == nullptr || !is_live(hStart) || !is_live(hEnd))
    return CUDA_ERROR_INVALID_HANDLE;
  if (((hStart->flags | hEnd->flags) & CU_EVENT_DISABLE_TIMING) != 0)
    return CUDA_ERROR_INVALID_HANDLE;
  std::unique_lock l1(hStart->m, std::defer_lock), l2(hEnd->m, std::defer_lock);
  if (hStart == hEnd)
    l1.lock();
  else
    std::lock(l1, l2);
  if (hStart->generation == 0 || hEnd->generation == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (!hStart->done(hStart->generation) || !hEnd->done(hEnd->generation))
    return CUDA_ERROR_NOT_READY;
  *ms = std::chrono::duration<float, std::milli>(hEnd->when - hStart->when).count();
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags) {
  FAKE_CONTEXT();
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (hEvent == nullptr || !is_live(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* s = nullptr;
  if (CUresult rc = resolve(hStream, false, &s); rc != CUDA_SUCCESS) return rc;
  if (fake_cuda::capturing(s)) return CUDA_ERROR_NOT_SUPPORTED;  // fork/join: not modelled
  uint64_t target = 0;
  {
    std::lock_guard lock(hEvent->m);
    target = hEvent->generation;
    if (hEvent->done(target)) return CUDA_SUCCESS;  // nothing pending
  }
  hEvent->refs.fetch_add(1);
  enqueue(s, [hEvent, target] {
    {
      std::unique_lock lock(hEvent->m);
      hEvent->cv.wait(lock, [&] { return hEvent->done(target); });
    }
    release(hEvent);
  });
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr* dptr, size_t bytesize) {
  FAKE_CONTEXT();
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (fake_cuda::capture_refuses_unsafe_call()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  Model& m = model();
  Device* d = device_of(t_current->device);
  {
    std::lock_guard lock(d->m);
    if (bytesize > m.memory - d->used) return CUDA_ERROR_OUT_OF_MEMORY;
    d->used += bytesize;
  }
  void* p = std::aligned_alloc(256, (bytesize + 255) / 256 * 256);
  if (p == nullptr) {
    std::lock_guard lock(d->m);
    d->used -= bytesize;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::lock_guard lock(m.m);
  m.allocations[reinterpret_cast<uintptr_t>(p)] = Allocation{bytesize, t_current->device};
  *dptr = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
  return CUDA_SUCCESS;
}

CUresult cuMemFree(CUdeviceptr dptr) {
  FAKE_CONTEXT();
  if (fake_cuda::capture_refuses_unsafe_call()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  Model& m = model();
  Allocation a{};
  {
    std::lock_guard lock(m.m);
    auto it = m.allocations.find(static_cast<uintptr_t>(dptr));
    if (it == m.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
    a = it->second;
    m.allocations.erase(it);
  }
  Device* d = device_of(a.device);
  {
    std::lock_guard lock(d->m);
    d->used -= a.bytes;
  }
  std::free(reinterpret_cast<void*>(static_cast<uintptr_t>(dptr)));
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  FAKE_CONTEXT();
  Device* d = device_of(t_current->device);
  std::lock_guard lock(d->m);
  if (free_bytes != nullptr) *free_bytes = model().memory - d->used;
  if (total_bytes != nullptr) *total_bytes = model().memory;
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t bytes, CUstream hStream) {
  FAKE_CONTEXT();
  if (src == nullptr || !in_allocation(dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult rc = resolve(hStream, true, &s); rc != CUDA_SUCCESS) return rc;
  count_host_copy(src, bytes);
  return fake_cuda::submit(s, [dst, src, bytes] {
    std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(dst)), src, bytes);
  });
}

CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t bytes, CUstream hStream) {
  FAKE_CONTEXT();
  if (dst == nullptr || !in_allocation(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult rc = resolve(hStream, true, &s); rc != CUDA_SUCCESS) return rc;
  count_host_copy(dst, bytes);
  return fake_cuda::submit(s, [dst, src, bytes] {
    std::memcpy(dst, reinterpret_cast<const void*>(static_cast<uintptr_t>(src)), bytes);
  });
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream hStream) {
  FAKE_CONTEXT();
  if (!in_allocation(dst, bytes) || !in_allocation(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult rc = resolve(hStream, true, &s); rc != CUDA_SUCCESS) return rc;
  return fake_cuda::submit(s, [dst, src, bytes] {
    std::memmove(reinterpret_cast<void*>(static_cast<uintptr_t>(dst)),
                 reinterpret_cast<const void*>(static_cast<uintptr_t>(src)), bytes);
  });
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream hStream) {
  FAKE_CONTEXT();
  if (!in_allocation(dst, n)) return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult rc = resolve(hStream, true, &s); rc != CUDA_SUCCESS) return rc;
  return fake_cuda::submit(s, [dst, value, n] {
    std::memset(reinterpret_cast<void*>(static_cast<uintptr_t>(dst)), value, n);
  });
}

// --- streams' contexts, page-locked host memory, peers (see the top) ------------

CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx) {
  FAKE_READY();
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (hStream == nullptr || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD) {
    // The special handles: the calling thread's current context.
    if (t_current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    *pctx = t_current;
    return CUDA_SUCCESS;
  }
  // The real driver's behaviour on a dead handle is undefined; the fake says so.
  if (!is_live(hStream) || hStream->destroyed) return CUDA_ERROR_INVALID_HANDLE;
  *pctx = hStream->ctx;
  return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  FAKE_CONTEXT();
  const unsigned known =
      CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
  if (pp == nullptr || bytesize == 0 || (Flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
  // Whole pages; a size that does not round up to one is more than any
  // machine has (the driver's answer: out of memory).
  if (bytesize > SIZE_MAX - 4095) return CUDA_ERROR_OUT_OF_MEMORY;
  void* p = std::aligned_alloc(4096, (bytesize + 4095) / 4096 * 4096);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  Model& m = model();
  std::lock_guard lock(m.m);
  m.host_allocations[reinterpret_cast<uintptr_t>(p)] = HostRange{bytesize, Flags, t_current};
  *pp = p;
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void* p) {
  FAKE_CONTEXT();
  Model& m = model();
  {
    std::lock_guard lock(m.m);
    if (m.host_allocations.erase(reinterpret_cast<uintptr_t>(p)) == 0)
      return CUDA_ERROR_INVALID_VALUE;  // not returned by cuMemHostAlloc
  }
  std::free(p);
  return CUDA_SUCCESS;
}

CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p) {
  FAKE_CONTEXT();
  if (pFlags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Model& m = model();
  std::lock_guard lock(m.m);
  auto it = overlapping(m.host_allocations, reinterpret_cast<uintptr_t>(p), 1);
  if (it == m.host_allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  *pFlags = it->second.flags;
  return CUDA_SUCCESS;
}

CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  FAKE_CONTEXT();
  const unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                         CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
  if (p == nullptr || bytesize == 0 || (Flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((Flags & CU_MEMHOSTREGISTER_IOMEMORY) != 0) return CUDA_ERROR_NOT_SUPPORTED;  // no I/O memory
  const auto start = reinterpret_cast<uintptr_t>(p);
  if (start + bytesize < start) return CUDA_ERROR_INVALID_VALUE;
  Model& m = model();
  std::lock_guard lock(m.m);
  if (overlapping(m.registered, start, bytesize) != m.registered.end() ||
      overlapping(m.host_allocations, start, bytesize) != m.host_allocations.end())
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  m.registered[start] = HostRange{bytesize, Flags, t_current};
  return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void* p) {
  FAKE_CONTEXT();
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Model& m = model();
  std::lock_guard lock(m.m);
  // Only the base address given to cuMemHostRegister.
  if (m.registered.erase(reinterpret_cast<uintptr_t>(p)) == 0)
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  return CUDA_SUCCESS;
}

// Driver API reference, cuPointerGetAttribute ("Unified Addressing"):
// memory type, ordinal and managed-ness of memory the driver allocated or
// registered; any other address (pageable host memory) is
// CUDA_ERROR_INVALID_VALUE. The fake makes no managed memory. Attributes the
// plugin does not ask for are CUDA_ERROR_INVALID_VALUE here.
CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  FAKE_READY();
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Model& m = model();
  std::lock_guard lock(m.m);
  const auto p = static_cast<uintptr_t>(ptr);
  unsigned type = 0;
  int ordinal = -1;
  auto dev = m.allocations.upper_bound(p);
  if (dev != m.allocations.begin() && p - std::prev(dev)->first < std::prev(dev)->second.bytes) {
    type = CU_MEMORYTYPE_DEVICE;
    ordinal = std::prev(dev)->second.device;
  } else if (auto h = overlapping(m.host_allocations, p, 1); h != m.host_allocations.end()) {
    type = CU_MEMORYTYPE_HOST;
    ordinal = h->second.ctx->device;
  } else if (auto r = overlapping(m.registered, p, 1); r != m.registered.end()) {
    type = CU_MEMORYTYPE_HOST;
    ordinal = r->second.ctx->device;
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = type;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = ordinal;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<unsigned*>(data) = 0;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  FAKE_READY();
  if (device_of(dev) == nullptr || device_of(peerDev) == nullptr) return CUDA_ERROR_INVALID_DEVICE;
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *canAccessPeer = peer_capable(dev, peerDev) ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  FAKE_CONTEXT();
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!live_context(peerContext) || peerContext == t_current) return CUDA_ERROR_INVALID_CONTEXT;
  if (!peer_capable(t_current->device, peerContext->device))
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  Model& m = model();
  std::lock_guard lock(m.m);
  if (!m.peer_links.emplace(t_current, peerContext).second)
    return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  FAKE_CONTEXT();
  if (!live_context(dstContext) || !live_context(srcContext)) return CUDA_ERROR_INVALID_CONTEXT;
  if (!in_allocation_of(dstDevice, ByteCount, dstContext->device) ||
      !in_allocation_of(srcDevice, ByteCount, srcContext->device))
    return CUDA_ERROR_INVALID_VALUE;
  CUstream_st* s = nullptr;
  if (CUresult rc = resolve(hStream, true, &s); rc != CUDA_SUCCESS) return rc;
  model().peer_copies.fetch_add(1);
  // Peer access enabled or not, the data arrives (the driver stages it
  // through the host when there is no P2P path).
  return fake_cuda::submit(s, [dstDevice, srcDevice, ByteCount] {
    std::memmove(reinterpret_cast<void*>(static_cast<uintptr_t>(dstDevice)),
                 reinterpret_cast<const void*>(static_cast<uintptr_t>(srcDevice)), ByteCount);
  });
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult* symbolStatus) {
  (void)cudaVersion;
  (void)flags;
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  struct Entry {
    const char* name;
    void* fn;
  };
  // Base names, as the real driver takes them; cuda.h maps the functions
  // defined above to their current versions (cuMemAlloc -> cuMemAlloc_v2).
#define FAKE_ENTRY(f) \
  { #f, reinterpret_cast < void*>(&f) }
  static const Entry table[] = {
      FAKE_ENTRY(cuInit),
      FAKE_ENTRY(cuDriverGetVersion),
      FAKE_ENTRY(cuGetErrorName),
      FAKE_ENTRY(cuGetErrorString),
      FAKE_ENTRY(cuDeviceGetCount),
      FAKE_ENTRY(cuDeviceGet),
      FAKE_ENTRY(cuDeviceGetName),
      FAKE_ENTRY(cuDeviceGetUuid),
      FAKE_ENTRY(cuDeviceTotalMem),
      FAKE_ENTRY(cuDeviceGetAttribute),
      FAKE_ENTRY(cuDevicePrimaryCtxRetain),
      FAKE_ENTRY(cuDevicePrimaryCtxGetState),
      FAKE_ENTRY(cuCtxGetCurrent),
      FAKE_ENTRY(cuCtxSetCurrent),
      FAKE_ENTRY(cuCtxGetDevice),
      FAKE_ENTRY(cuCtxSynchronize),
      FAKE_ENTRY(cuCtxGetStreamPriorityRange),
      FAKE_ENTRY(cuStreamCreateWithPriority),
      FAKE_ENTRY(cuStreamDestroy),
      FAKE_ENTRY(cuStreamQuery),
      FAKE_ENTRY(cuStreamSynchronize),
      FAKE_ENTRY(cuStreamWaitEvent),
      FAKE_ENTRY(cuLaunchHostFunc),
      FAKE_ENTRY(cuEventCreate),
      FAKE_ENTRY(cuEventDestroy),
      FAKE_ENTRY(cuEventRecord),
      FAKE_ENTRY(cuEventQuery),
      FAKE_ENTRY(cuEventSynchronize),
      FAKE_ENTRY(cuEventElapsedTime),
      FAKE_ENTRY(cuMemAlloc),
      FAKE_ENTRY(cuMemFree),
      FAKE_ENTRY(cuMemcpyHtoDAsync),
      FAKE_ENTRY(cuMemcpyDtoHAsync),
      FAKE_ENTRY(cuMemcpyDtoDAsync),
      FAKE_ENTRY(cuMemsetD8Async),
      FAKE_ENTRY(cuMemGetInfo),
      FAKE_ENTRY(cuStreamGetCtx),
      FAKE_ENTRY(cuMemHostAlloc),
      FAKE_ENTRY(cuMemFreeHost),
      FAKE_ENTRY(cuMemHostGetFlags),
      FAKE_ENTRY(cuMemHostRegister),
      FAKE_ENTRY(cuMemHostUnregister),
      FAKE_ENTRY(cuDeviceCanAccessPeer),
      FAKE_ENTRY(cuCtxEnablePeerAccess),
      FAKE_ENTRY(cuMemcpyPeerAsync),
      FAKE_ENTRY(cuPointerGetAttribute),
      FAKE_ENTRY(cuModuleLoadDataEx),
      FAKE_ENTRY(cuModuleUnload),
      FAKE_ENTRY(cuModuleGetFunction),
      FAKE_ENTRY(cuFuncGetAttribute),
      FAKE_ENTRY(cuFuncSetAttribute),
      FAKE_ENTRY(cuFuncGetParamInfo),
      FAKE_ENTRY(cuLaunchKernel),
      FAKE_ENTRY(cuStreamBeginCapture),
      FAKE_ENTRY(cuStreamEndCapture),
      FAKE_ENTRY(cuStreamIsCapturing),
      FAKE_ENTRY(cuStreamGetCaptureInfo),
      FAKE_ENTRY(cuThreadExchangeStreamCaptureMode),
      FAKE_ENTRY(cuGraphInstantiateWithFlags),
      FAKE_ENTRY(cuGraphLaunch),
      FAKE_ENTRY(cuGraphExecDestroy),
      FAKE_ENTRY(cuGraphDestroy),
      FAKE_ENTRY(cuGetProcAddress),
  };
#undef FAKE_ENTRY
  *pfn = nullptr;
  // A driver older than 12.4 has no cuFuncGetParamInfo (FAKE_CUDA_PARAM_INFO=0).
  // A driver without graphs (FAKE_CUDA_GRAPHS=0).
  const bool hidden = (!model().param_info && std::strcmp(symbol, "cuFuncGetParamInfo") == 0) ||
                      (!model().graphs && fake_cuda::is_graph_entry(symbol));
  if (model().proc_address && !hidden) {
    for (const auto& e : table) {
      if (std::strcmp(e.name, symbol) == 0) {
        *pfn = e.fn;
        if (symbolStatus != nullptr) *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
      }
    }
  }
  if (model().proc_address) model().proc_address_misses.fetch_add(1);
  if (symbolStatus != nullptr) *symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}

// Test hook, not CUDA: the model's counters (see the top of the file).
long long fake_cuda_count(const char* name) {
  if (name == nullptr) return -1;
  Model& m = model();
  const std::string n = name;
  if (n == "streams") return m.live_streams.load();
  if (n == "pinned_copies") return m.pinned_copies.load();
  if (n == "pageable_copies") return m.pageable_copies.load();
  if (n == "peer_copies") return m.peer_copies.load();
  if (n == "proc_address_misses") return m.proc_address_misses.load();
  if (long long v = fake_cuda::module_counter(n); v >= 0) return v;
  if (long long v = fake_cuda::graph_counter(n); v >= 0) return v;
  std::lock_guard lock(m.m);
  if (n == "host_allocations") return static_cast<long long>(m.host_allocations.size());
  if (n == "registered_ranges") return static_cast<long long>(m.registered.size());
  if (n == "peer_links") return static_cast<long long>(m.peer_links.size());
  return -1;
}

}  // extern "C"
