// sim.cpp - the simulated-device backend ("sim").
//
// This plugin is built only against accel_plugin.h, exactly as a third-party
// backend would be. It is not the template for a new backend (that is
// plugins/skeleton, a fraction of its size); most test suites run on it. It
// simulates ACCEL_SIM_DEVICES devices (default 0: dormant unless asked)
// whose "device memory" is ordinary host memory and whose streams are real
// asynchronous in-order queues, each served by its own worker thread. That
// makes it a faithful stand-in for a GPU when testing ordering, events,
// timing and pointer validation on machines without one.
//
// Configuration (read through host->get_env, i.e. secure_getenv):
//   ACCEL_SIM_DEVICES  number of simulated devices, 0..64 (default 0)
//   ACCEL_SIM_MEMORY   bytes of memory per device, >= 1 (default 1 GiB)
//
// Structure of a backend, as shown here:
//   - one global State, created on first need and deliberately never
//     destroyed: plugins are never unloaded, and destroying worker threads
//     from a static destructor during exit() is a classic source of hangs;
//   - every ABI entry is a noexcept function that runs its body inside
//     guarded(), so no C++ exception ever crosses the C ABI;
//   - failures return a status and describe themselves through
//     host->set_error (the core prefixes the backend name); nothing prints.
//
// Capabilities: timing events, host functions, stream priorities. Not
// fork-safe (worker threads do not survive fork(), so a child that inherited
// initialised state would hang on its first synchronize), and no native
// notion of a current device (the core keeps the per-thread index).

#include <accel/accel_plugin.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#endif

namespace {

// ---------------------------------------------------------------------------
// Tunables
// ---------------------------------------------------------------------------

constexpr const char* kBackendName = "sim";
constexpr int32_t kPriority = 10;  // third parties stay below 100
constexpr int32_t kMaxDevices = 64;
constexpr uint64_t kDefaultMemory = 1ull << 30;  // 1 GiB per device
// Mirrors CUDA's alignment guarantee for cuMemAlloc (>= 256 bytes), so code
// tested here does not silently depend on a weaker alignment.
constexpr size_t kAllocAlignment = 256;
// CUDA-style priority range: 0 is the default (least), -2 the greatest. The
// simulator records the priority but does not schedule by it: every stream
// has its own worker thread, so there is no shared queue to reorder.
constexpr int32_t kLeastPriority = 0;
constexpr int32_t kGreatestPriority = -2;
// Bound on queued (not yet started) tasks per stream. A producer that finds
// the queue full blocks until the worker makes room, as a GPU launch queue
// does, so a runaway loop cannot eat unbounded host memory. The worker thread
// itself never blocks on its own queue (that would deadlock).
constexpr size_t kMaxQueuedTasks = 4096;
constexpr int32_t kComputeUnits = 4;

// ---------------------------------------------------------------------------
// Host services
// ---------------------------------------------------------------------------

// The core's services table; valid until process exit. Atomic only because
// the entry may in principle be called again; reads are cheap.
std::atomic<const accel_host_services_t*> g_host{nullptr};

// A member of the host table may be used only if the core's table is large
// enough to contain it (the table may come from an older core) and non-NULL.
#define ACCEL_SIM_HOST_HAS(h, member)                                              \
  ((h) != nullptr &&                                                              \
   (h)->struct_size >= offsetof(accel_host_services_t, member) + sizeof((h)->member) && \
   (h)->member != nullptr)

__attribute__((format(printf, 1, 0))) std::string vformat(const char* fmt, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return std::string();
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), fmt, ap);
  out.resize(static_cast<size_t>(n));
  return out;
}

__attribute__((format(printf, 2, 3))) void log_msg(accel_log_level_t level, const char* fmt, ...) {
  const accel_host_services_t* h = g_host.load(std::memory_order_acquire);
  if (!ACCEL_SIM_HOST_HAS(h, log)) return;
  // Skip formatting for levels nobody will see.
  if (ACCEL_SIM_HOST_HAS(h, log_enabled) && !h->log_enabled(h, level)) return;
  try {
    va_list ap;
    va_start(ap, fmt);
    const std::string msg = vformat(fmt, ap);
    va_end(ap);
    h->log(h, level, msg.c_str());
  } catch (...) {
    // Logging must never turn into a failure of the operation.
  }
}

// Records the detail of a failure on the calling thread and returns `status`,
// so error paths read `return fail(STATUS, "...")`.
__attribute__((format(printf, 2, 3))) accel_status_t fail(accel_status_t status, const char* fmt,
                                                           ...) {
  const accel_host_services_t* h = g_host.load(std::memory_order_acquire);
  if (!ACCEL_SIM_HOST_HAS(h, set_error)) return status;
  try {
    va_list ap;
    va_start(ap, fmt);
    const std::string msg = vformat(fmt, ap);
    va_end(ap);
    h->set_error(h, status, msg.c_str());
  } catch (...) {
    h->set_error(h, status, "(out of memory formatting the error message)");
  }
  return status;
}

const char* get_env(const char* name) {
  const accel_host_services_t* h = g_host.load(std::memory_order_acquire);
  if (!ACCEL_SIM_HOST_HAS(h, get_env)) return nullptr;
  return h->get_env(h, name);
}

// Runs one ABI entry's body and converts any escaping exception into a
// status: nothing may unwind into the core's C frames.
template <class F>
accel_status_t guarded(const char* op, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", op);
  } catch (const std::system_error& e) {
    // std::thread reports "cannot create another thread" this way.
    if (e.code() == std::errc::resource_unavailable_try_again)
      return fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: cannot start a worker thread: %s", op, e.what());
    return fail(ACCEL_ERROR_INTERNAL, "%s: system error: %s", op, e.what());
  } catch (const std::exception& e) {
    return fail(ACCEL_ERROR_INTERNAL, "%s: unexpected exception: %s", op, e.what());
  } catch (...) {
    return fail(ACCEL_ERROR_INTERNAL, "%s: unexpected non-standard exception", op);
  }
}

// ---------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------

// An in-order queue of tasks executed by one dedicated worker thread.
class Stream {
 public:
  using Task = std::function<void()>;

  Stream(int32_t device, int32_t priority, bool is_default)
      : device_(device), priority_(priority), is_default_(is_default) {
    // Started last, once every member exists; may throw std::system_error,
    // which the entry's guarded() turns into a status.
    worker_ = std::thread([this] { run(); });
    worker_id_ = worker_.get_id();
  }

  ~Stream() { shutdown(); }

  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int32_t device() const { return device_; }
  int32_t priority() const { return priority_; }
  bool is_default() const { return is_default_; }
  // True on this stream's worker thread, i.e. inside one of its host
  // functions: blocking calls use it to fail instead of waiting on
  // themselves. (An id rather than a thread_local pointer: dynamic TLS in a
  // dlopen()ed module crashes LeakSanitizer on current glibc.)
  std::thread::id worker_id() const { return worker_id_; }
  bool is_current_worker() const { return worker_id_ == std::this_thread::get_id(); }

  // Queues `task`; blocks while the queue is full (see kMaxQueuedTasks).
  // Returns false if the stream is shutting down.
  // A `marker` task (an event record) does no work of its own: the stream
  // counts as idle while it runs, so whoever it wakes (event_synchronize)
  // then sees the stream idle, as CUDA guarantees.
  bool enqueue(Task task, bool marker = false) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!is_current_worker()) {
      space_cv_.wait(lock, [&] { return stopping_ || queue_.size() < kMaxQueuedTasks; });
    }
    if (stopping_) return false;
    queue_.push_back(Queued{std::move(task), marker});  // may throw; nothing changed yet
    ++pending_;
    work_cv_.notify_one();
    return true;
  }

  // True when nothing is queued or running.
  bool idle() {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_ == 0;
  }

  // Blocks until nothing is queued or running.
  void synchronize() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [&] { return pending_ == 0; });
  }

  // Lets the worker drain everything already queued, then stops and joins
  // it. Idempotent; called by stream_destroy and by the destructor.
  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    space_cv_.notify_all();
    if (!worker_.joinable()) return;
    if (worker_.get_id() == std::this_thread::get_id()) {
      worker_.detach();  // cannot join oneself; entries refuse this case anyway
    } else {
      worker_.join();
    }
  }

 private:
  void run_task(Task& task) {
    try {
      task();
    } catch (const std::exception& e) {
      log_msg(ACCEL_LOG_ERROR, "a task on a stream of device %d threw: %s",
              static_cast<int>(device_), e.what());
    } catch (...) {
      log_msg(ACCEL_LOG_ERROR, "a task on a stream of device %d threw a non-standard exception",
              static_cast<int>(device_));
    }
  }

  void run() {
#if defined(__linux__)
    char name[16];  // Linux limit, NUL included; shows in gdb/top
    std::snprintf(name, sizeof name, "accel-sim%d", static_cast<int>(device_));
    pthread_setname_np(pthread_self(), name);
#endif
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, and everything queued has run
      Task task = std::move(queue_.front().task);
      bool marker = queue_.front().marker;
      queue_.pop_front();
      space_cv_.notify_one();
      if (marker) {
        // Completing a record and leaving the stream idle happen under one
        // lock, so event_synchronize then stream_query sees an idle stream
        // and stream_synchronize then event_query sees a completed event
        // (CUDA's guarantee both ways). A record only takes its event's
        // lock, and nothing holds an event lock while taking a stream's.
        run_task(task);
        task = nullptr;
        if (--pending_ == 0) idle_cv_.notify_all();
        continue;
      }
      lock.unlock();
      run_task(task);
      // Release the task's captures (event states, ...) outside the lock.
      task = nullptr;
      lock.lock();
      if (--pending_ == 0) idle_cv_.notify_all();
    }
  }

  const int32_t device_;
  const int32_t priority_;
  const bool is_default_;

  std::mutex mu_;
  std::condition_variable work_cv_;   // worker: a task arrived or stop asked
  std::condition_variable idle_cv_;   // synchronize: pending_ reached 0
  std::condition_variable space_cv_;  // producers: room in the queue
  struct Queued {
    Task task;
    bool marker;
  };
  std::deque<Queued> queue_;
  size_t pending_ = 0;  // queued + running
  bool stopping_ = false;
  std::thread worker_;  // started after everything above exists
  // Copy of worker_.get_id(), written once in the constructor before the
  // handle is published and never again, so any thread may read it while
  // shutdown() joins worker_.
  std::thread::id worker_id_;
};

// ---------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------

// One record of an event. A new object per record (rather than one counter
// per event) keeps every record's completion exact even when records of the
// same event on different streams complete out of order: a wait enqueued
// against record k waits for record k, not for "some record >= k".
struct Record {
  bool done = false;                               // guarded by EventState::mu
  std::chrono::steady_clock::time_point when{};    // valid once done
  std::thread::id worker;                          // worker thread of the recording stream
};

struct EventState {
  EventState(int32_t dev, uint32_t fl) : device(dev), flags(fl) {}
  const int32_t device;
  const uint32_t flags;
  std::mutex mu;
  std::condition_variable cv;       // notified when any record completes
  std::shared_ptr<Record> latest;   // null: never recorded
};

// The handle given to the core. Tasks hold the shared state, so destroying
// an event while a record or a wait on it is queued is safe.
struct Event {
  std::shared_ptr<EventState> state;
};

// ---------------------------------------------------------------------------
// Devices and global state
// ---------------------------------------------------------------------------

struct Device {
  Device(int32_t i, uint64_t mem) : index(i), total_memory(mem) {}
  const int32_t index;
  const uint64_t total_memory;

  // Live allocations, base address -> size; ordered so a pointer can be
  // mapped to the allocation containing it.
  std::mutex mem_mu;
  std::map<uintptr_t, size_t> allocations;
  uint64_t allocated = 0;

  // Every live stream of the device, for device_synchronize. shared_ptr so
  // a synchronize that snapshotted a stream stays safe while another thread
  // destroys it.
  std::mutex streams_mu;
  std::unordered_map<const Stream*, std::shared_ptr<Stream>> streams;
  Stream* default_stream = nullptr;  // created lazily, owned by `streams`
};

struct State {
  int32_t device_count = 0;
  // Why there are no devices (dormant or bad configuration); "" otherwise.
  std::string no_device_reason;
  std::vector<std::unique_ptr<Device>> devices;
};

// Parses a non-negative decimal integer that fits in uint64_t: digits only,
// so "-1", "3x", "" and " 4" are all rejected.
bool parse_u64(const char* s, uint64_t* out) {
  if (s == nullptr || *s == '\0') return false;
  uint64_t v = 0;
  for (const char* p = s; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(*p - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *out = v;
  return true;
}

// Builds the state from the environment. Cheap on purpose (no threads, no
// memory): discovery calls it through device_count, possibly before fork().
State* make_state() {
  auto st = std::make_unique<State>();
  const char* devices_env = get_env("ACCEL_SIM_DEVICES");
  const char* memory_env = get_env("ACCEL_SIM_MEMORY");

  uint64_t n = 0;
  if (devices_env == nullptr || *devices_env == '\0') {
    st->no_device_reason =
        "ACCEL_SIM_DEVICES is unset or empty: the simulator is dormant; set "
        "ACCEL_SIM_DEVICES=N to simulate N devices";
    return st.release();
  }
  if (!parse_u64(devices_env, &n) || n > static_cast<uint64_t>(kMaxDevices)) {
    st->no_device_reason = "ACCEL_SIM_DEVICES='" + std::string(devices_env) +
                           "' is not a whole number in [0, " + std::to_string(kMaxDevices) +
                           "]: no simulated devices";
    return st.release();
  }
  if (n == 0) {
    st->no_device_reason =
        "ACCEL_SIM_DEVICES=0: the simulator is dormant; set ACCEL_SIM_DEVICES=N to simulate "
        "N devices";
    return st.release();
  }

  uint64_t memory = kDefaultMemory;
  if (memory_env != nullptr && *memory_env != '\0') {
    if (!parse_u64(memory_env, &memory) || memory == 0 || memory > SIZE_MAX) {
      st->no_device_reason = "ACCEL_SIM_MEMORY='" + std::string(memory_env) +
                             "' is not a positive number of bytes: no simulated devices";
      return st.release();
    }
  }

  st->devices.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i)
    st->devices.push_back(std::make_unique<Device>(static_cast<int32_t>(i), memory));
  st->device_count = static_cast<int32_t>(n);
  return st.release();
}

// The process-wide state, built once on first use by any thread. Leaked on
// purpose (see the top of the file); reachable from here, so leak checkers
// do not report it.
State* g_state = nullptr;
std::once_flag g_state_once;

State& state() {
  std::call_once(g_state_once, [] { g_state = make_state(); });
  return *g_state;
}

// The device for an index the core has already validated; checked again
// because a backend should not crash on a broken caller.
Device* device_at(int32_t index, const char* op, accel_status_t* status) {
  State& st = state();
  if (index < 0 || index >= st.device_count) {
    *status = fail(ACCEL_ERROR_INVALID_DEVICE, "%s: device %d is out of range [0, %d)", op,
                   static_cast<int>(index), static_cast<int>(st.device_count));
    return nullptr;
  }
  return st.devices[static_cast<size_t>(index)].get();
}

Stream* as_stream(accel_plugin_stream_t h) { return static_cast<Stream*>(h); }
Event* as_event(accel_plugin_event_t h) { return static_cast<Event*>(h); }

// Enqueues on a stream, mapping "being destroyed" to a status.
accel_status_t submit(Stream* s, const char* op, Stream::Task task, bool marker = false) {
  if (!s->enqueue(std::move(task), marker))
    return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: the stream is being destroyed", op);
  return ACCEL_SUCCESS;
}

// ---------------------------------------------------------------------------
// Pointer validation
// ---------------------------------------------------------------------------

// Where a pointer lives among the simulated allocations.
struct Owner {
  int32_t device = -1;  // -1: not inside any live allocation
  uintptr_t base = 0;
  size_t size = 0;
};

// Finds the live allocation of `dev` that contains `p`, if any.
bool find_in_device(Device& dev, uintptr_t p, Owner* out) {
  std::lock_guard<std::mutex> lock(dev.mem_mu);
  auto it = dev.allocations.upper_bound(p);
  if (it == dev.allocations.begin()) return false;
  --it;
  if (p - it->first >= it->second) return false;
  *out = Owner{dev.index, it->first, it->second};
  return true;
}

// Finds the allocation containing `p` on any device, checking `preferred`
// first (the common case). Locks one device at a time, so no lock order.
Owner find_owner(const void* ptr, int32_t preferred) {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  State& st = state();
  Owner o;
  if (preferred >= 0 && preferred < st.device_count &&
      find_in_device(*st.devices[static_cast<size_t>(preferred)], p, &o))
    return o;
  for (auto& dev : st.devices) {
    if (dev->index != preferred && find_in_device(*dev, p, &o)) return o;
  }
  return Owner{};
}

// Checks that [ptr, ptr+bytes) lies inside one live allocation of `device`.
// `what` names the argument ("dst", "src") in the message.
accel_status_t check_device_range(const char* op, const char* what, const void* ptr, size_t bytes,
                                  int32_t device) {
  if (ptr == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", op, what);
  const Owner o = find_owner(ptr, device);
  if (o.device < 0)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "%s: %s %p is not inside a live allocation of sim device %d (freed, or never "
                "allocated by this backend)",
                op, what, ptr, static_cast<int>(device));
  if (o.device != device)
    return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                "%s: %s %p is memory of sim device %d but the stream is on sim device %d", op,
                what, ptr, static_cast<int>(o.device), static_cast<int>(device));
  const size_t offset = reinterpret_cast<uintptr_t>(ptr) - o.base;
  if (bytes > o.size - offset)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "%s: %s range [%p, +%zu) runs %zu bytes past the end of its allocation "
                "(base %p, %zu bytes) on sim device %d",
                op, what, ptr, bytes, bytes - (o.size - offset), reinterpret_cast<void*>(o.base),
                o.size, static_cast<int>(device));
  return ACCEL_SUCCESS;
}

// Checks the host side of a copy: not NULL, and not simulated device memory
// (on a real discrete GPU that would read or write the wrong address space,
// so the simulator reports the wrong copy kind instead of "working").
accel_status_t check_host_ptr(const char* op, const char* what, const void* ptr,
                              const char* kind_name, int32_t device) {
  if (ptr == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", op, what);
  const Owner o = find_owner(ptr, device);
  if (o.device >= 0)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "%s: %s %p of a %s copy is device memory of sim device %d, not host memory "
                "(use ACCEL_MEMCPY_DEVICE_TO_DEVICE for device-to-device copies)",
                op, what, ptr, kind_name, static_cast<int>(o.device));
  return ACCEL_SUCCESS;
}

// ---------------------------------------------------------------------------
// ABI entries: lifecycle
// ---------------------------------------------------------------------------

accel_status_t sim_init() noexcept {
  return guarded("init", [] {
    state();  // parse the configuration now; cheap and fork-safe
    return ACCEL_SUCCESS;
  });
}

accel_status_t sim_device_count(int32_t* count) noexcept {
  return guarded("device_count", [&] {
    if (count == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "device_count: count is NULL");
    State& st = state();
    *count = st.device_count;
    // Zero devices is not a failure, but the core shows our reason.
    if (st.device_count == 0) fail(ACCEL_SUCCESS, "%s", st.no_device_reason.c_str());
    return ACCEL_SUCCESS;
  });
}

accel_status_t sim_lazy_init() noexcept {
  return guarded("lazy_init", [] {
    // A real backend initialises its vendor runtime here (cuInit, zeInit).
    // The simulator has nothing heavy to do: worker threads start with the
    // streams that need them, so unused devices cost nothing.
    State& st = state();
    log_msg(ACCEL_LOG_DEBUG, "simulating %d device(s), %llu bytes each",
            static_cast<int>(st.device_count),
            static_cast<unsigned long long>(st.devices.empty() ? 0
                                                               : st.devices[0]->total_memory));
    return ACCEL_SUCCESS;
  });
}

// ---------------------------------------------------------------------------
// ABI entries: devices
// ---------------------------------------------------------------------------

// Copies `src` into a fixed char array, always NUL-terminated.
template <size_t N>
void copy_str(char (&dst)[N], const std::string& src) {
  const size_t n = std::min(src.size(), N - 1);
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

// A deterministic RFC 9562 version-8 UUID: fixed bytes for "accel sim",
// the device index in the last four bytes, so it is stable across runs and
// unique per index.
void make_uuid(int32_t index, uint8_t (&uuid)[16]) {
  static constexpr uint8_t kPrefix[12] = {0x61, 0x63, 0x63, 0x65, 0x6c, 0x2d,
                                          0x80, 0x73, 0x80, 0x69, 0x6d, 0x00};
  std::memcpy(uuid, kPrefix, sizeof kPrefix);
  const auto u = static_cast<uint32_t>(index);
  uuid[12] = static_cast<uint8_t>(u >> 24);
  uuid[13] = static_cast<uint8_t>(u >> 16);
  uuid[14] = static_cast<uint8_t>(u >> 8);
  uuid[15] = static_cast<uint8_t>(u);
  uuid[6] = static_cast<uint8_t>((uuid[6] & 0x0f) | 0x80);  // version 8
  uuid[8] = static_cast<uint8_t>((uuid[8] & 0x3f) | 0x80);  // RFC variant
}

accel_status_t sim_get_device_properties(int32_t device, accel_device_properties_t* props) noexcept {
  return guarded("get_device_properties", [&] {
    if (props == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "get_device_properties: props is NULL");
    accel_status_t status = ACCEL_SUCCESS;
    Device* dev = device_at(device, "get_device_properties", &status);
    if (dev == nullptr) return status;

    // The PJRT rule from the plugin's side: write only fields that fit in
    // the caller's struct_size, so an older caller's smaller struct is safe.
#define ACCEL_SIM_FITS(field) \
  (props->struct_size >=     \
   offsetof(accel_device_properties_t, field) + sizeof(props->field))
    if (ACCEL_SIM_FITS(name))
      copy_str(props->name, "accel simulated device " + std::to_string(device));
    if (ACCEL_SIM_FITS(vendor)) copy_str(props->vendor, "accel");
    if (ACCEL_SIM_FITS(total_memory)) props->total_memory = dev->total_memory;
    if (ACCEL_SIM_FITS(uuid)) make_uuid(device, props->uuid);
    if (ACCEL_SIM_FITS(has_uuid)) props->has_uuid = 1;
    if (ACCEL_SIM_FITS(pci_bus_id)) props->pci_bus_id[0] = '\0';  // no bus: unknown
    if (ACCEL_SIM_FITS(architecture)) copy_str(props->architecture, "sim-1");
    if (ACCEL_SIM_FITS(compute_units)) props->compute_units = kComputeUnits;
    if (ACCEL_SIM_FITS(device_index)) props->device_index = device;
#undef ACCEL_SIM_FITS
    return ACCEL_SUCCESS;
  });
}

accel_status_t sim_device_synchronize(int32_t device) noexcept {
  return guarded("device_synchronize", [&] {
    accel_status_t status = ACCEL_SUCCESS;
    Device* dev = device_at(device, "device_synchronize", &status);
    if (dev == nullptr) return status;
    // Snapshot under the lock, wait outside it: a long synchronize must not
    // block other threads creating or destroying streams.
    std::vector<std::shared_ptr<Stream>> live;
    {
      std::lock_guard<std::mutex> lock(dev->streams_mu);
      live.reserve(dev->streams.size());
      for (auto& [key, s] : dev->streams) live.push_back(s);
    }
    for (auto& s : live) {
      if (s->is_current_worker())
        return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                    "device_synchronize: called from a host function running on a stream of sim "
                    "device %d; it would wait for itself",
                    static_cast<int>(device));
    }
    for (auto& s : live) s->synchronize();
    return ACCEL_SUCCESS;
  });
}

// ---------------------------------------------------------------------------
// ABI entries: streams
// ---------------------------------------------------------------------------

accel_status_t sim_stream_priority_range(int32_t device, int32_t* least,
                                         int32_t* greatest) noexcept {
  return guarded("stream_priority_range", [&] {
    accel_status_t status = ACCEL_SUCCESS;
    if (device_at(device, "stream_priority_range", &status) == nullptr) return status;
    if (least != nullptr) *least = kLeastPriority;
    if (greatest != nullptr) *greatest = kGreatestPriority;
    return ACCEL_SUCCESS;
  });
}

accel_status_t sim_stream_create(int32_t device, int32_t priority,
                                 accel_plugin_stream_t* stream) noexcept {
  return guarded("stream_create", [&] {
    if (stream == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_create: stream is NULL");
    accel_status_t status = ACCEL_SUCCESS;
    Device* dev = device_at(device, "stream_create", &status);
    if (dev == nullptr) return status;
    // The core clamps already; clamping again keeps the stored value sane.
    priority = std::clamp(priority, kGreatestPriority, kLeastPriority);
    auto s = std::make_shared<Stream>(device, priority, /*is_default=*/false);
    {
      std::lock_guard<std::mutex> lock(dev->streams_mu);
      dev->streams.emplace(s.get(), s);
    }
    *stream = s.get();
    log_msg(ACCEL_LOG_DEBUG, "created a stream on sim device %d, priority %d",
            static_cast<int>(device), static_cast<int>(s->priority()));
    return ACCEL_SUCCESS;
  });
}

// Drains the stream's queued work, then stops and joins its worker, so when
// this returns every task queued on the stream has run (the contract only
// asks that queued work completes; blocking here makes it deterministic).
// Consequently it blocks as long as that work does, e.g. on a wait for an
// event that is itself still pending.
accel_status_t sim_stream_destroy(accel_plugin_stream_t handle) noexcept {
  return guarded("stream_destroy", [&] {
    if (handle == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_destroy: stream is NULL");
    const auto* key = static_cast<const Stream*>(handle);
    // Look the handle up in the registries instead of dereferencing it, so
    // a stale handle is reported rather than followed.
    std::shared_ptr<Stream> owned;
    for (auto& dev : state().devices) {
      std::lock_guard<std::mutex> lock(dev->streams_mu);
      auto it = dev->streams.find(key);
      if (it == dev->streams.end()) continue;
      if (it->second->is_default())
        return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                    "stream_destroy: the default stream of sim device %d cannot be destroyed",
                    static_cast<int>(dev->index));
      if (it->second->is_current_worker())
        return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                    "stream_destroy: called from a host function running on that stream; it "
                    "would wait for itself");
      owned = std::move(it->second);
      dev->streams.erase(it);
      break;
    }
    if (!owned)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_destroy: %p is not a live sim stream",
                  handle);
    owned->shutdown();
    return ACCEL_SUCCESS;
  });
}

accel_status_t sim_default_stream(int32_t device, accel_plugin_stream_t* stream) noexcept {
  return guarded("default_stream", [&] {
    if (stream == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "default_stream: stream is NULL");
    accel_status_t status = ACCEL_SUCCESS;
    Device* dev = device_at(device, "default_stream", &status);
    if (dev == nullptr) return status;
    std::lock_guard<std::mutex> lock(dev->streams_mu);
    if (dev->default_stream == nullptr) {
      auto s = std::make_shared<Stream>(device, 0, /*is_default=*/true);
      dev->streams.emplace(s.get(), s);
      dev->default_stream = s.get();
    }
    *stream = dev->default_stream;
    return ACCEL_SUCCESS;
  });
}

accel_status_t sim_stream_query(accel_plugin_stream_t stream) noexcept {
  return guarded("stream_query", [&] {
    if (stream == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_query: stream is NULL");
    return as_stream(stream)->idle() ? ACCEL_SUCCESS : ACCEL_ERROR_NOT_READY;
  });
}

accel_status_t sim_stream_synchronize(accel_plugin_stream_t stream) noexcept {
  return guarded("stream_synchronize", [&] {
    if (stream == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_synchronize: stream is NULL");
    Stream* s = as_stream(stream);
    if (s->is_current_worker())
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "stream_synchronize: called from a host function running on that stream; it "
                  "would wait for itself");
    s->synchronize();
    return ACCEL_SUCCESS;
  });
}

accel_status_t sim_stream_wait_event(accel_plugin_stream_t stream,
                                     accel_plugin_event_t event) noexcept {
  return guarded("stream_wait_event", [&] {
    if (stream == nullptr || event == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_wait_event: NULL %s",
                  stream == nullptr ? "stream" : "event");
    Stream* s = as_stream(stream);
    std::shared_ptr<EventState> ev = as_event(event)->state;
    // Any device: the wait is a task on this stream's worker that blocks on
    // the record's completion, wherever it runs (ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT).
    // Capture the record current now: later re-records must not change what
    // this wait waits for.
    std::shared_ptr<Record> rec;
    {
      std::lock_guard<std::mutex> lock(ev->mu);
      if (ev->latest == nullptr || ev->latest->done) return ACCEL_SUCCESS;  // nothing to wait for
      rec = ev->latest;
    }
    // If the record is earlier on this same stream, in-order execution has
    // completed it before this task runs, so the wait cannot deadlock.
    return submit(s, "stream_wait_event", [ev = std::move(ev), rec = std::move(rec)] {
      std::unique_lock<std::mutex> lock(ev->mu);
      ev->cv.wait(lock, [&] { return rec->done; });
    });
  });
}

accel_status_t sim_launch_host_func(accel_plugin_stream_t stream, accel_host_fn fn,
                                    void* user_data) noexcept {
  return guarded("launch_host_func", [&] {
    if (stream == nullptr || fn == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "launch_host_func: NULL %s",
                  stream == nullptr ? "stream" : "function");
    return submit(as_stream(stream), "launch_host_func", [fn, user_data] { fn(user_data); });
  });
}

// ---------------------------------------------------------------------------
// ABI entries: events
// ---------------------------------------------------------------------------

accel_status_t sim_event_create(int32_t device, uint32_t flags,
                                accel_plugin_event_t* event) noexcept {
  return guarded("event_create", [&] {
    if (event == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_create: event is NULL");
    if ((flags & ~static_cast<uint32_t>(ACCEL_EVENT_ENABLE_TIMING)) != 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_create: unknown flag bits 0x%x",
                  static_cast<unsigned>(flags & ~static_cast<uint32_t>(ACCEL_EVENT_ENABLE_TIMING)));
    accel_status_t status = ACCEL_SUCCESS;
    if (device_at(device, "event_create", &status) == nullptr) return status;
    auto box = std::make_unique<Event>();
    box->state = std::make_shared<EventState>(device, flags);
    *event = box.release();
    return ACCEL_SUCCESS;
  });
}

accel_status_t sim_event_destroy(accel_plugin_event_t event) noexcept {
  return guarded("event_destroy", [&] {
    if (event == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_destroy: event is NULL");
    // Queued records and waits keep the shared state alive until they run.
    delete as_event(event);
    return ACCEL_SUCCESS;
  });
}

accel_status_t sim_event_record(accel_plugin_event_t event, accel_plugin_stream_t stream) noexcept {
  return guarded("event_record", [&] {
    if (stream == nullptr || event == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_record: NULL %s",
                  stream == nullptr ? "stream" : "event");
    Stream* s = as_stream(stream);
    std::shared_ptr<EventState> ev = as_event(event)->state;
    if (ev->device != s->device())
      return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                  "event_record: event of sim device %d, stream of sim device %d",
                  static_cast<int>(ev->device), static_cast<int>(s->device()));
    auto rec = std::make_shared<Record>();
    rec->worker = s->worker_id();
    // Enqueue first, publish second: if the enqueue fails the event keeps
    // its previous record instead of one that would never complete. The
    // event lock is not held across enqueue, which may block on a full queue
    // whose worker needs that lock to complete an earlier record.
    accel_status_t st = submit(s, "event_record", [ev, rec] {
      {
        std::lock_guard<std::mutex> lock(ev->mu);
        rec->when = std::chrono::steady_clock::now();
        rec->done = true;
      }
      ev->cv.notify_all();
    }, /*marker=*/true);
    if (st != ACCEL_SUCCESS) return st;
    std::lock_guard<std::mutex> lock(ev->mu);
    ev->latest = std::move(rec);
    return ACCEL_SUCCESS;
  });
}

accel_status_t sim_event_query(accel_plugin_event_t event) noexcept {
  return guarded("event_query", [&] {
    if (event == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_query: event is NULL");
    EventState& ev = *as_event(event)->state;
    std::lock_guard<std::mutex> lock(ev.mu);
    return (ev.latest == nullptr || ev.latest->done) ? ACCEL_SUCCESS : ACCEL_ERROR_NOT_READY;
  });
}

accel_status_t sim_event_synchronize(accel_plugin_event_t event) noexcept {
  return guarded("event_synchronize", [&] {
    if (event == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_synchronize: event is NULL");
    EventState& ev = *as_event(event)->state;
    std::unique_lock<std::mutex> lock(ev.mu);
    std::shared_ptr<Record> rec = ev.latest;
    if (rec == nullptr || rec->done) return ACCEL_SUCCESS;
    if (rec->worker == std::this_thread::get_id())
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "event_synchronize: called from a host function on the stream the event is "
                  "recorded on, before the record; it would wait for itself");
    ev.cv.wait(lock, [&] { return rec->done; });
    return ACCEL_SUCCESS;
  });
}

// Reads what elapsed_time needs from one event, checking each precondition
// (the core checks them too; a backend should not trust that blindly).
accel_status_t completed_timestamp(EventState& ev, const char* which,
                                   std::chrono::steady_clock::time_point* when) {
  if ((ev.flags & ACCEL_EVENT_ENABLE_TIMING) == 0)
    return fail(ACCEL_ERROR_EVENT_NO_TIMING,
                "event_elapsed_time: the %s event was created without ACCEL_EVENT_ENABLE_TIMING",
                which);
  std::lock_guard<std::mutex> lock(ev.mu);
  if (ev.latest == nullptr)
    return fail(ACCEL_ERROR_EVENT_NOT_RECORDED,
                "event_elapsed_time: the %s event was never recorded", which);
  if (!ev.latest->done)
    return fail(ACCEL_ERROR_NOT_READY,
                "event_elapsed_time: the %s event's record has not completed", which);
  *when = ev.latest->when;
  return ACCEL_SUCCESS;
}

accel_status_t sim_event_elapsed_time(accel_plugin_event_t start, accel_plugin_event_t end,
                                      float* ms) noexcept {
  return guarded("event_elapsed_time", [&] {
    if (start == nullptr || end == nullptr || ms == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "event_elapsed_time: NULL argument");
    // One event locked at a time (start may equal end), so no lock order.
    std::chrono::steady_clock::time_point t0, t1;
    accel_status_t st = completed_timestamp(*as_event(start)->state, "start", &t0);
    if (st != ACCEL_SUCCESS) return st;
    st = completed_timestamp(*as_event(end)->state, "end", &t1);
    if (st != ACCEL_SUCCESS) return st;
    *ms = static_cast<float>(std::chrono::duration<double, std::milli>(t1 - t0).count());
    return ACCEL_SUCCESS;
  });
}

// ---------------------------------------------------------------------------
// ABI entries: memory
// ---------------------------------------------------------------------------

accel_status_t sim_mem_alloc(int32_t device, size_t bytes, void** ptr) noexcept {
  return guarded("mem_alloc", [&] {
    if (ptr == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "mem_alloc: ptr is NULL");
    if (bytes == 0) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "mem_alloc: bytes is 0");
    accel_status_t status = ACCEL_SUCCESS;
    Device* dev = device_at(device, "mem_alloc", &status);
    if (dev == nullptr) return status;

    // Reserve the bytes first so concurrent allocations cannot together
    // exceed the device's capacity; give them back if the host says no.
    {
      std::lock_guard<std::mutex> lock(dev->mem_mu);
      if (bytes > dev->total_memory - dev->allocated)
        return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                    "mem_alloc: %zu bytes requested on sim device %d, %llu of %llu bytes free "
                    "(ACCEL_SIM_MEMORY sets the size)",
                    bytes, static_cast<int>(device),
                    static_cast<unsigned long long>(dev->total_memory - dev->allocated),
                    static_cast<unsigned long long>(dev->total_memory));
      dev->allocated += bytes;
    }
    void* p = ::operator new(bytes, std::align_val_t{kAllocAlignment}, std::nothrow);
    bool recorded = false;
    if (p != nullptr) {
      try {
        std::lock_guard<std::mutex> lock(dev->mem_mu);
        dev->allocations.emplace(reinterpret_cast<uintptr_t>(p), bytes);
        recorded = true;
      } catch (...) {  // map node allocation failed: fall through and undo
      }
    }
    if (!recorded) {
      if (p != nullptr) ::operator delete(p, std::align_val_t{kAllocAlignment});
      std::lock_guard<std::mutex> lock(dev->mem_mu);
      dev->allocated -= bytes;
      return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                  "mem_alloc: host allocation of %zu bytes backing sim device %d failed", bytes,
                  static_cast<int>(device));
    }
    *ptr = p;
    return ACCEL_SUCCESS;
  });
}

accel_status_t sim_mem_free(int32_t device, void* ptr) noexcept {
  return guarded("mem_free", [&] {
    if (ptr == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "mem_free: ptr is NULL");
    accel_status_t status = ACCEL_SUCCESS;
    Device* dev = device_at(device, "mem_free", &status);
    if (dev == nullptr) return status;
    bool found = false;
    {
      std::lock_guard<std::mutex> lock(dev->mem_mu);
      auto it = dev->allocations.find(reinterpret_cast<uintptr_t>(ptr));
      if (it != dev->allocations.end()) {
        dev->allocated -= it->second;
        dev->allocations.erase(it);
        found = true;
      }
    }
    if (found) {
      // Once out of the table no new copy can validate against it, so the
      // memory can go back to the host outside the lock.
      ::operator delete(ptr, std::align_val_t{kAllocAlignment});
      return ACCEL_SUCCESS;
    }
    // Not a base of this device: say precisely what it is instead.
    const Owner o = find_owner(ptr, device);
    if (o.device >= 0 && o.device != device)
      return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                  "mem_free: %p is memory of sim device %d, not of sim device %d", ptr,
                  static_cast<int>(o.device), static_cast<int>(device));
    if (o.device >= 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "mem_free: %p is %zu bytes into the allocation at %p on sim device %d, not its "
                  "start",
                  ptr, static_cast<size_t>(reinterpret_cast<uintptr_t>(ptr) - o.base),
                  reinterpret_cast<void*>(o.base), static_cast<int>(device));
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "mem_free: %p is not a live allocation of sim device %d (already freed, or never "
                "allocated by this backend)",
                ptr, static_cast<int>(device));
  });
}

accel_status_t sim_memcpy_async(void* dst, const void* src, size_t bytes, accel_memcpy_kind_t kind,
                                accel_plugin_stream_t stream) noexcept {
  return guarded("memcpy_async", [&] {
    if (stream == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memcpy_async: stream is NULL");
    Stream* s = as_stream(stream);
    const int32_t dev = s->device();
    // Read the enum's bits as an int: in C++ an enum object holding a value
    // outside its declared range (a caller's garbage, legal in C) is UB to
    // load as the enum type, and UBSan would flag the switch itself.
    int raw_kind = 0;
    static_assert(sizeof raw_kind == sizeof kind);
    std::memcpy(&raw_kind, &kind, sizeof raw_kind);
    accel_status_t st = ACCEL_SUCCESS;
    switch (raw_kind) {
      case ACCEL_MEMCPY_HOST_TO_DEVICE:
        st = check_device_range("memcpy_async", "dst", dst, bytes, dev);
        if (st == ACCEL_SUCCESS)
          st = check_host_ptr("memcpy_async", "src", src, "HOST_TO_DEVICE", dev);
        break;
      case ACCEL_MEMCPY_DEVICE_TO_HOST:
        st = check_device_range("memcpy_async", "src", src, bytes, dev);
        if (st == ACCEL_SUCCESS)
          st = check_host_ptr("memcpy_async", "dst", dst, "DEVICE_TO_HOST", dev);
        break;
      case ACCEL_MEMCPY_DEVICE_TO_DEVICE:
        st = check_device_range("memcpy_async", "dst", dst, bytes, dev);
        if (st == ACCEL_SUCCESS) st = check_device_range("memcpy_async", "src", src, bytes, dev);
        break;
      default:
        return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memcpy_async: unknown copy kind %d", raw_kind);
    }
    if (st != ACCEL_SUCCESS) return st;
    if (bytes == 0) return ACCEL_SUCCESS;
    // memmove: a device-to-device copy within one allocation may overlap.
    return submit(s, "memcpy_async", [dst, src, bytes] { std::memmove(dst, src, bytes); });
  });
}

accel_status_t sim_memset_async(void* dst, int value, size_t bytes,
                                accel_plugin_stream_t stream) noexcept {
  return guarded("memset_async", [&] {
    if (stream == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memset_async: stream is NULL");
    Stream* s = as_stream(stream);
    const accel_status_t st = check_device_range("memset_async", "dst", dst, bytes, s->device());
    if (st != ACCEL_SUCCESS) return st;
    if (bytes == 0) return ACCEL_SUCCESS;
    const auto byte = static_cast<unsigned char>(value);
    return submit(s, "memset_async", [dst, byte, bytes] { std::memset(dst, byte, bytes); });
  });
}

accel_status_t sim_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) noexcept {
  return guarded("mem_get_info", [&] {
    accel_status_t status = ACCEL_SUCCESS;
    Device* dev = device_at(device, "mem_get_info", &status);
    if (dev == nullptr) return status;
    std::lock_guard<std::mutex> lock(dev->mem_mu);
    if (free_bytes != nullptr) *free_bytes = static_cast<size_t>(dev->total_memory - dev->allocated);
    if (total_bytes != nullptr) *total_bytes = static_cast<size_t>(dev->total_memory);
    return ACCEL_SUCCESS;
  });
}

// A real backend reports its vendor driver or runtime here (without creating
// a context where the vendor allows); the simulator is its own runtime.
accel_status_t sim_runtime_version(char* buf, size_t size) noexcept {
  return guarded("runtime_version", [&] {
    if (buf == nullptr || size == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "runtime_version: buf is NULL or size is 0");
    // snprintf cuts at size - 1 bytes, as the ABI asks.
    std::snprintf(buf, size, "accel sim %d.%d.%d (simulated devices)", ACCEL_VERSION_MAJOR,
                  ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH);
    return ACCEL_SUCCESS;
  });
}

// ---------------------------------------------------------------------------
// The vtable
// ---------------------------------------------------------------------------

// Designated initialisers in declaration order; a member left out is NULL,
// which the core reads as "not supported".
constexpr accel_plugin_api_t kApi = {
    .struct_size = sizeof(accel_plugin_api_t),
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR,
    .name = kBackendName,
    .priority = kPriority,
    .capabilities = ACCEL_PLUGIN_CAP_TIMING_EVENTS | ACCEL_PLUGIN_CAP_HOST_FUNCTIONS |
                    ACCEL_PLUGIN_CAP_STREAM_PRIORITIES |
                    // Counting reads an environment variable; no thread starts
                    // before lazy_init.
                    ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE | ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT,
    .init = sim_init,
    .device_count = sim_device_count,
    .lazy_init = sim_lazy_init,
    .get_device_properties = sim_get_device_properties,
    .get_current_device = nullptr,  // no native current device
    .set_current_device = nullptr,
    .device_synchronize = sim_device_synchronize,
    .stream_priority_range = sim_stream_priority_range,
    .stream_create = sim_stream_create,
    .stream_destroy = sim_stream_destroy,
    .default_stream = sim_default_stream,
    .stream_query = sim_stream_query,
    .stream_synchronize = sim_stream_synchronize,
    .stream_wait_event = sim_stream_wait_event,
    .launch_host_func = sim_launch_host_func,
    .event_create = sim_event_create,
    .event_destroy = sim_event_destroy,
    .event_record = sim_event_record,
    .event_query = sim_event_query,
    .event_synchronize = sim_event_synchronize,
    .event_elapsed_time = sim_event_elapsed_time,
    .mem_alloc = sim_mem_alloc,
    .mem_free = sim_mem_free,
    .memcpy_async = sim_memcpy_async,
    .memset_async = sim_memset_async,
    .mem_get_info = sim_mem_get_info,
    .runtime_version = sim_runtime_version,
};

}  // namespace

// The one exported symbol.
extern "C" ACCEL_PLUGIN_EXPORT const accel_plugin_api_t* ACCEL_PLUGIN_ENTRY(
    uint32_t abi_major, uint32_t abi_minor, const accel_host_services_t* host) {
  if (host == nullptr) return nullptr;  // nobody to report to
  if (abi_major != ACCEL_PLUGIN_ABI_MAJOR) {
    if (ACCEL_SIM_HOST_HAS(host, log)) {
      char msg[160];
      std::snprintf(msg, sizeof msg,
                    "sim plugin speaks backend ABI %u.%u; the core speaks %u.%u: declining",
                    ACCEL_PLUGIN_ABI_MAJOR, ACCEL_PLUGIN_ABI_MINOR, static_cast<unsigned>(abi_major),
                    static_cast<unsigned>(abi_minor));
      host->log(host, ACCEL_LOG_WARN, msg);
    }
    return nullptr;
  }
  // An older minor is fine: the core reads no member past its own size of
  // our table, and we read no host member past its struct_size.
  g_host.store(host, std::memory_order_release);
  return &kApi;
}

// accel_plugin.h declares the entry's type but no prototype; this makes the
// compiler hold the definition above to it.
static_assert(std::is_same_v<decltype(&ACCEL_PLUGIN_ENTRY), accel_plugin_entry_fn>,
              "the entry point's signature must match accel_plugin_entry_fn");
