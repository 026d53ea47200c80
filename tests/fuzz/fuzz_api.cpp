// accel-fuzz: libFuzzer harness for the public C API (accel.h) over the sim
// backend.
//
// The input is a program: a sequence of operations, each one opcode byte
// followed by the argument bytes it consumes (missing bytes read as 0). The
// arguments are chosen to be hostile: negative, huge and out-of-range device
// indices, NULL outputs, destroyed stream and event handles (kept in a
// graveyard and reused), pointers that are not live allocations (freed,
// interior, one past the end, heap, stack and wild values) wherever the API
// promises to validate them, zero and huge sizes, every flag and copy kind,
// struct_size values around every boundary.
//
// Foreign pointers are never passed as stream or event handles (the ABI
// documents those as undefined behaviour, see core/handles.hpp), and host
// memory given to a copy whose device side is valid is always a real buffer
// at least as large as the copy (the API cannot check host memory).
//
// The harness keeps a model of what accel must be doing (current device and
// stream, live allocations and their contents, streams, events) and checks
// after every call:
//  - the status is a defined accel_status_t and one the API allows for these
//    arguments (the model predicts it; where several faults are present any
//    of their statuses is accepted);
//  - a failing call leaves a non-empty accel_last_error() and changes no
//    output and no state (outputs are pre-filled with sentinels, structs are
//    surrounded by canaries, statistics and current device are compared with
//    the model);
//  - no byte past struct_size is written;
//  - device contents match the model when verified (a copy back after a full
//    synchronize);
//  - every host function launched has run once all work is synchronized.
// A violation prints what happened and calls abort().
//
// State is bounded (live allocations, streams, events, operations per
// input; the sim devices have 1 MiB each) and everything is torn down at the
// end of each input, so each input replays the same way in a fresh process.
//
// Built twice: as accel-fuzz with clang's libFuzzer (-Dfuzz=true), and into
// accel-fuzz-replay with any compiler (replay_main.cpp), which runs the seed
// corpus and every file in regressions/ as part of the normal test suite.
#include <accel/accel.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#ifndef ACCEL_FUZZ_SIM_DIR
#error "ACCEL_FUZZ_SIM_DIR (the folder of the built sim plugin) must be defined by the build"
#endif

namespace {

// --- bounds -------------------------------------------------------------------
constexpr size_t kSimMemory = size_t{1} << 20;  // ACCEL_SIM_MEMORY per device
constexpr size_t kHostBuf = 2 * kSimMemory;     // host buffers: any valid copy fits
constexpr size_t kMaxAllocs = 24;
constexpr size_t kMaxStreams = 12;
constexpr size_t kMaxEvents = 16;
constexpr size_t kMaxGrave = 32;
constexpr size_t kMaxOps = 400;

// --- input reader ---------------------------------------------------------------
struct Input {
  const uint8_t* p;
  size_t n;
  uint8_t u8() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() { return static_cast<uint32_t>(u16()) | (static_cast<uint32_t>(u16()) << 16); }
  uint64_t u64() { return static_cast<uint64_t>(u32()) | (static_cast<uint64_t>(u32()) << 32); }
  bool flag() { return (u8() & 1) != 0; }
};

// --- failure report ----------------------------------------------------------------
std::string g_op = "(init)";  // the operation being checked, for messages

[[noreturn]] void violation(const std::string& what) {
  std::fprintf(stderr, "\naccel-fuzz: INVARIANT VIOLATED in %s\n  %s\n  last error: \"%s\"\n",
               g_op.c_str(), what.c_str(), accel_last_error());
  std::fflush(stderr);
  std::abort();
}

#define FZ_CHECK(cond, ...)                                \
  do {                                                     \
    if (!(cond)) {                                         \
      char fz_buf_[512];                                   \
      std::snprintf(fz_buf_, sizeof fz_buf_, __VA_ARGS__); \
      violation(std::string(#cond ": ") + fz_buf_);        \
    }                                                      \
  } while (0)

// Allowed statuses for one call.
struct Allowed {
  uint32_t mask = 0;
  Allowed() = default;
  Allowed(std::initializer_list<accel_status_t> l) {
    for (auto s : l) add(s);
  }
  void add(accel_status_t s) { mask |= 1u << static_cast<unsigned>(s); }
  bool has(accel_status_t s) const {
    return static_cast<uint32_t>(s) < 32 && (mask & (1u << static_cast<unsigned>(s))) != 0;
  }
  std::string names() const {
    std::string out;
    for (unsigned i = 0; i < 32; ++i)
      if (mask & (1u << i))
        out +=
            std::string(out.empty() ? "" : "|") + accel_status_name(static_cast<accel_status_t>(i));
    return out;
  }
};

// Every call goes through here: a defined status, an allowed one, and a
// non-empty last error on failure.
bool g_trace = false;  // ACCEL_FUZZ_TRACE=1: print every checked call

accel_status_t expect(accel_status_t st, const Allowed& allowed) {
  if (g_trace) std::fprintf(stderr, "  %s -> %s\n", g_op.c_str(), accel_status_name(st));
  FZ_CHECK(static_cast<uint32_t>(st) < ACCEL_STATUS_COUNT, "status %d is not a defined value",
           static_cast<int>(st));
  FZ_CHECK(std::strcmp(accel_status_name(st), "ACCEL_STATUS_UNKNOWN") != 0, "status %d has no name",
           static_cast<int>(st));
  FZ_CHECK(allowed.has(st), "returned %s, expected %s", accel_status_name(st),
           allowed.names().c_str());
  if (st != ACCEL_SUCCESS && st != ACCEL_ERROR_NOT_READY) {
    const char* e = accel_last_error();
    FZ_CHECK(e != nullptr && e[0] != '\0', "failed with %s but accel_last_error() is empty",
             accel_status_name(st));
  }
  return st;
}

// --- the model ---------------------------------------------------------------------
struct Alloc {
  uintptr_t base = 0;
  size_t bytes = 0;
  int32_t device = 0;
  std::vector<uint8_t> shadow;  // expected contents when `known`
  bool known = true;
  std::set<uint64_t> pending;  // serials of streams that may still touch it
};

struct Stream {
  accel_stream_t h = nullptr;
  int32_t device = 0;
  int32_t priority = 0;
  uint64_t serial = 0;
  bool is_default = false;
};

struct Event {
  accel_event_t h = nullptr;
  int32_t device = 0;
  uint32_t flags = 0;
  bool recorded = false;
};

struct Global {
  bool ready = false;
  int32_t n = 0;  // device count
  int32_t prio_least = 0, prio_greatest = 0;
  size_t backend_count = 0;
  std::vector<Stream> defaults;             // per device
  std::vector<uint64_t> total_allocations;  // per device, since start
  uint64_t next_serial = 1;
  std::vector<uint8_t> pattern;  // read-only host source
  std::vector<uint8_t> sink;     // host destination (contents unpredictable)
  std::vector<uint8_t> heap;     // another host buffer (contents unpredictable)
} G;

// Per-input state (torn down at the end of each input).
struct Model {
  int32_t cur_device = 0;
  std::vector<uint64_t> cur_stream;  // serial of the current stream per device
  std::map<uintptr_t, Alloc> allocs;
  std::vector<Stream> streams;  // created, live
  std::vector<Event> events;    // created, live
  std::vector<accel_stream_t> dead_streams;
  std::vector<accel_event_t> dead_events;
  std::vector<uintptr_t> freed;  // bases given back
} M;

std::atomic<uint64_t> g_hostfn_ran{0};
std::atomic<uint64_t> g_hostfn_bad{0};
uint64_t g_hostfn_launched = 0;

size_t used_bytes(int32_t d) {
  size_t s = 0;
  for (auto& [b, a] : M.allocs)
    if (a.device == d) s += a.bytes;
  return s;
}
uint64_t live_count(int32_t d) {
  uint64_t c = 0;
  for (auto& [b, a] : M.allocs)
    if (a.device == d) ++c;
  return c;
}

// The live allocation containing p, or nullptr.
Alloc* find_alloc(const void* p) {
  auto v = reinterpret_cast<uintptr_t>(p);
  auto it = M.allocs.upper_bound(v);
  if (it == M.allocs.begin()) return nullptr;
  --it;
  if (v - it->second.base >= it->second.bytes) return nullptr;
  return &it->second;
}

const Stream* stream_by_handle(accel_stream_t h) {
  for (auto& s : G.defaults)
    if (s.h == h) return &s;
  for (auto& s : M.streams)
    if (s.h == h) return &s;
  return nullptr;
}
const Stream* stream_by_serial(uint64_t serial) {
  for (auto& s : G.defaults)
    if (s.serial == serial) return &s;
  for (auto& s : M.streams)
    if (s.serial == serial) return &s;
  return nullptr;
}
Event* event_by_handle(accel_event_t h) {
  for (auto& e : M.events)
    if (e.h == h) return &e;
  return nullptr;
}

// A handle the core hands out again is live again: out of the graveyard.
void revive(accel_stream_t h) {
  M.dead_streams.erase(std::remove(M.dead_streams.begin(), M.dead_streams.end(), h),
                       M.dead_streams.end());
}
void revive(accel_event_t h) {
  M.dead_events.erase(std::remove(M.dead_events.begin(), M.dead_events.end(), h),
                      M.dead_events.end());
}
template <typename T>
void bury(std::vector<T>& grave, T h) {
  if (grave.size() >= kMaxGrave) grave.erase(grave.begin());
  grave.push_back(h);
}

// --- argument choosers ---------------------------------------------------------------
int32_t pick_device(Input& in) {
  const int32_t n = G.n;
  switch (in.u8() % 16) {
    case 4:
      return -1;
    case 5:
      return -2;
    case 6:
      return INT32_MIN;
    case 7:
      return n;
    case 8:
      return n + 1;
    case 9:
      return INT32_MAX;
    case 10:
      return 64;
    case 11:
      return static_cast<int32_t>(in.u32());
    default:
      return static_cast<int32_t>(in.u8() % n);
  }
}
// -1: invalid; else the device the call acts on.
int32_t resolve(int32_t d) {
  if (d < 0) return M.cur_device;
  if (d >= G.n) return -1;
  return d;
}

size_t pick_size(Input& in) {
  switch (in.u8() % 16) {
    case 0:
      return 0;
    case 1:
      return 1;
    case 2:
    case 3:
    case 4:
    case 5:
      return static_cast<size_t>(in.u8()) + 1;
    case 6:
    case 7:
    case 8:
      return static_cast<size_t>(in.u16()) + 1;
    case 9:
      return static_cast<size_t>(in.u32() % kSimMemory) + 1;
    case 10:
      return kSimMemory;
    case 11:
      return kSimMemory + 1;
    case 12:
      return SIZE_MAX;
    case 13:
      return SIZE_MAX / 2 + 1;
    case 14:
      return size_t{1} << 40;
    default:
      return static_cast<size_t>(in.u64());
  }
}

// A copy size relative to an allocation, so that valid ranges are common.
size_t pick_copy_size(Input& in, size_t room) {
  switch (in.u8() % 8) {
    case 0:
      return room;
    case 1:
      return room + 1;
    case 2:
      return room > 0 ? room - 1 : 0;
    case 3:
      return room > 0 ? 1 + in.u32() % room : 0;
    case 4:
      return room > 0 ? 1 + in.u8() % room : 0;
    default:
      return pick_size(in);
  }
}

Alloc* pick_alloc(Input& in) {
  if (M.allocs.empty()) return nullptr;
  auto it = M.allocs.begin();
  std::advance(it, in.u8() % M.allocs.size());
  return &it->second;
}

int g_stack_anchor;  // a global: a pointer never allocated by accel

// A pointer for a device-side argument (accel_free, a copy's device side):
// the core only looks these up in its table, never dereferences them.
void* pick_device_ptr(Input& in, void* stack_buf) {
  Alloc* a = pick_alloc(in);
  switch (in.u8() % 16) {
    case 0:
    case 1:
    case 2:
    case 3:
      if (a) return reinterpret_cast<void*>(a->base);
      break;
    case 4:
      if (a)
        return reinterpret_cast<void*>(a->base +
                                       (a->bytes > 1 ? 1 + in.u32() % (a->bytes - 1) : 0));
      break;
    case 5:
      if (a) return reinterpret_cast<void*>(a->base + a->bytes - 1);
      break;
    case 6:
      if (a) return reinterpret_cast<void*>(a->base + a->bytes);
      break;
    case 7:
      if (!M.freed.empty()) return reinterpret_cast<void*>(M.freed[in.u8() % M.freed.size()]);
      break;
    case 8:
      return G.heap.data();
    case 9:
      return stack_buf;
    case 10:
      return &g_stack_anchor;
    case 11:
      return nullptr;
    case 12:
      return reinterpret_cast<void*>(uintptr_t{1});
    case 13:
      return reinterpret_cast<void*>(UINTPTR_MAX - 7);
    case 14:
      return reinterpret_cast<void*>(static_cast<uintptr_t>(in.u64()));
    default:
      if (a) return reinterpret_cast<void*>(a->base + in.u32() % (a->bytes + 64));
      break;
  }
  return a ? reinterpret_cast<void*>(a->base) : G.heap.data();
}

// A stream argument: a live created stream, a default stream, a destroyed
// handle or NULL. Never a foreign pointer.
accel_stream_t pick_stream(Input& in) {
  switch (in.u8() % 8) {
    case 0:
    case 1:
    case 2:
      if (!M.streams.empty()) return M.streams[in.u8() % M.streams.size()].h;
      break;
    case 3:
    case 4:
      return G.defaults[static_cast<size_t>(in.u8() % G.n)].h;
    case 5:
    case 6:
      if (!M.dead_streams.empty()) return M.dead_streams[in.u8() % M.dead_streams.size()];
      break;
    default:
      return nullptr;
  }
  return G.defaults[static_cast<size_t>(M.cur_device)].h;
}

accel_event_t pick_event(Input& in) {
  switch (in.u8() % 8) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
      if (!M.events.empty()) return M.events[in.u8() % M.events.size()].h;
      break;
    case 5:
    case 6:
      if (!M.dead_events.empty()) return M.dead_events[in.u8() % M.dead_events.size()];
      break;
    default:
      return nullptr;
  }
  return nullptr;
}

int32_t pick_int(Input& in) {
  switch (in.u8() % 10) {
    case 0:
      return 0;
    case 1:
      return -1;
    case 2:
      return -2;
    case 3:
      return -3;
    case 4:
      return 1;
    case 5:
      return INT32_MIN;
    case 6:
      return INT32_MAX;
    default:
      return static_cast<int32_t>(in.u32());
  }
}

// struct_size values around every boundary of a struct of `full` bytes.
size_t pick_struct_size(Input& in, size_t full) {
  switch (in.u8() % 12) {
    case 0:
      return 0;
    case 1:
      return 1;
    case 2:
      return sizeof(size_t) - 1;
    case 3:
      return sizeof(size_t);
    case 4:
      return sizeof(size_t) + 1;
    case 5:
      return full - 1;
    case 6:
      return full + 1;
    case 7:
      return full + 64;
    case 8:
      return in.u16() % (full + 65);
    default:
      return full;
  }
}

// A struct buffer with canaries: the caller's struct_size bytes, then guard
// bytes. Checks that no byte past struct_size (and none at all on failure)
// was written.
struct Canaried {
  static constexpr uint8_t kFill = 0xA5;
  static constexpr size_t kGuard = 64;
  std::vector<uint8_t> buf;
  size_t declared;
  Canaried(size_t struct_size, size_t full) : declared(struct_size) {
    buf.assign(std::max({struct_size, full, sizeof(size_t)}) + kGuard, kFill);
    std::memcpy(buf.data(), &struct_size, sizeof struct_size);
  }
  void* data() { return buf.data(); }
  void check(bool success) const {
    size_t first = std::max(declared, sizeof(size_t));
    size_t sz = 0;
    std::memcpy(&sz, buf.data(), sizeof sz);
    FZ_CHECK(sz == declared, "struct_size changed from %zu to %zu", declared, sz);
    for (size_t i = success ? first : sizeof(size_t); i < buf.size(); ++i)
      FZ_CHECK(buf[i] == kFill, "byte %zu written (struct_size %zu, %s)", i, declared,
               success ? "success" : "failure");
  }
  template <typename T>
  T get() const {
    T t;
    std::memcpy(&t, buf.data(), sizeof t);
    return t;
  }
};

// --- state checks ------------------------------------------------------------------------
void check_state() {
  FZ_CHECK(accel_device_count() == G.n, "device count changed to %d (was %d)", accel_device_count(),
           G.n);
  int32_t cur = accel_current_device_index();
  FZ_CHECK(cur == M.cur_device, "current device %d, model says %d", cur, M.cur_device);
  FZ_CHECK(cur >= 0 && cur < G.n, "current device %d outside [0, %d)", cur, G.n);
  accel_stream_t s = nullptr;
  accel_status_t st = accel_current_stream(-1, &s);
  FZ_CHECK(st == ACCEL_SUCCESS, "accel_current_stream(-1) failed: %s", accel_status_name(st));
  const Stream* want = stream_by_serial(M.cur_stream[static_cast<size_t>(M.cur_device)]);
  FZ_CHECK(want != nullptr && s == want->h, "current stream %p, model says %p", (void*)s,
           want ? (void*)want->h : nullptr);
  for (int32_t d = 0; d < G.n; ++d) {
    accel_memory_stats_t ms;
    std::memset(&ms, 0, sizeof ms);
    ms.struct_size = sizeof ms;
    st = accel_memory_stats(d, &ms);
    FZ_CHECK(st == ACCEL_SUCCESS, "accel_memory_stats(%d) failed", d);
    FZ_CHECK(ms.allocated_bytes == used_bytes(d),
             "device %d: allocated_bytes %" PRIu64 ", model %zu", d, ms.allocated_bytes,
             used_bytes(d));
    FZ_CHECK(ms.allocation_count == live_count(d),
             "device %d: allocation_count %" PRIu64 ", model %" PRIu64, d, ms.allocation_count,
             live_count(d));
    FZ_CHECK(ms.total_allocations == G.total_allocations[static_cast<size_t>(d)],
             "device %d: total_allocations %" PRIu64 ", model %" PRIu64, d, ms.total_allocations,
             G.total_allocations[static_cast<size_t>(d)]);
    FZ_CHECK(ms.peak_allocated_bytes >= ms.allocated_bytes,
             "device %d: peak %" PRIu64 " < allocated %" PRIu64, d, ms.peak_allocated_bytes,
             ms.allocated_bytes);
  }
  FZ_CHECK(g_hostfn_bad.load() == 0, "a host function saw a broken invariant");
}

// --- host functions ------------------------------------------------------------------------
void hostfn_count(void* user) { static_cast<std::atomic<uint64_t>*>(user)->fetch_add(1); }
void hostfn_query(void* user) {
  // Runs on a backend thread: non-waiting calls must work there.
  if (accel_device_count() != G.n || accel_is_available() != 1) g_hostfn_bad.fetch_add(1);
  int32_t cur = accel_current_device_index();
  if (cur < 0 || cur >= G.n) g_hostfn_bad.fetch_add(1);
  if (accel_last_error() == nullptr) g_hostfn_bad.fetch_add(1);
  static_cast<std::atomic<uint64_t>*>(user)->fetch_add(1);
}

// --- memory model helpers ------------------------------------------------------------------
// Serial of the stream a copy runs on (stream already known live or NULL).
uint64_t stream_serial_of(accel_stream_t s) {
  if (s == nullptr) return M.cur_stream[static_cast<size_t>(M.cur_device)];
  const Stream* m = stream_by_handle(s);
  return m ? m->serial : 0;
}
int32_t stream_device_of(accel_stream_t s) {
  if (s == nullptr) return M.cur_device;
  const Stream* m = stream_by_handle(s);
  return m ? m->device : -1;
}
bool conflict(const Alloc* a, uint64_t serial) {
  if (a == nullptr) return false;
  for (auto p : a->pending)
    if (p != serial) return true;
  return false;
}
void synced_device(int32_t d) {
  for (auto& [b, a] : M.allocs)
    if (a.device == d) a.pending.clear();
}
void synced_stream(uint64_t serial) {
  for (auto& [b, a] : M.allocs) a.pending.erase(serial);
}

// Expected status of a device-side range check; SUCCESS if fine.
accel_status_t device_range_status(const void* p, size_t bytes, int32_t stream_dev) {
  Alloc* a = find_alloc(p);
  if (a == nullptr) return ACCEL_ERROR_INVALID_ARGUMENT;
  if (a->device != stream_dev) return ACCEL_ERROR_DEVICE_MISMATCH;
  size_t off = reinterpret_cast<uintptr_t>(p) - a->base;
  if (bytes > a->bytes - off) return ACCEL_ERROR_INVALID_ARGUMENT;
  return ACCEL_SUCCESS;
}

// --- operations ----------------------------------------------------------------------------
enum Op : uint8_t {
  OP_SET_DEVICE,
  OP_EXCHANGE,
  OP_MAYBE_EXCHANGE,
  OP_CURRENT_STREAM,
  OP_SET_STREAM,
  OP_SYNCHRONIZE,
  OP_PRIORITY_RANGE,
  OP_STREAM_CREATE,
  OP_STREAM_DESTROY,
  OP_STREAM_QUERY,
  OP_STREAM_SYNC,
  OP_STREAM_WAIT_EVENT,
  OP_STREAM_DEVICE,
  OP_STREAM_PRIORITY,
  OP_HOST_FUNC,
  OP_EVENT_CREATE,
  OP_EVENT_DESTROY,
  OP_EVENT_RECORD,
  OP_EVENT_QUERY,
  OP_EVENT_SYNC,
  OP_EVENT_ELAPSED,
  OP_EVENT_DEVICE,
  OP_MALLOC,
  OP_FREE,
  OP_MEMCPY,
  OP_MEMSET,
  OP_MEM_INFO,
  OP_MEMORY_STATS,
  OP_RESET_PEAK,
  OP_PROPERTIES,
  OP_BACKEND_INFO,
  OP_NAMES,
  OP_VERIFY,
  OP_THREAD,
  OP_COUNT
};

const char* const kOpNames[OP_COUNT] = {
    "set_device",     "exchange",        "maybe_exchange", "current_stream",
    "set_stream",     "synchronize",     "priority_range", "stream_create",
    "stream_destroy", "stream_query",    "stream_sync",    "stream_wait_event",
    "stream_device",  "stream_priority", "host_func",      "event_create",
    "event_destroy",  "event_record",    "event_query",    "event_sync",
    "event_elapsed",  "event_device",    "malloc",         "free",
    "memcpy",         "memset",          "mem_info",       "memory_stats",
    "reset_peak",     "properties",      "backend_info",   "names",
    "verify",         "thread"};

void op_set_device(Input& in) {
  int32_t d = pick_device(in);
  Allowed ok = d >= G.n ? Allowed{ACCEL_ERROR_INVALID_DEVICE} : Allowed{ACCEL_SUCCESS};
  if (expect(accel_set_device_index(d), ok) == ACCEL_SUCCESS && d >= 0) M.cur_device = d;
}

void op_exchange(Input& in, bool maybe) {
  int32_t d = pick_device(in);
  bool null_out = (in.u8() % 8) == 0;
  const int32_t kSentinel = -777;
  int32_t prev = kSentinel;
  Allowed ok;
  if (null_out) ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  if (d >= G.n) ok.add(ACCEL_ERROR_INVALID_DEVICE);
  if (ok.mask == 0) ok.add(ACCEL_SUCCESS);
  accel_status_t st = maybe ? accel_maybe_exchange_device(d, null_out ? nullptr : &prev)
                            : accel_exchange_device(d, null_out ? nullptr : &prev);
  if (expect(st, ok) == ACCEL_SUCCESS) {
    FZ_CHECK(prev == M.cur_device, "previous %d, model %d", prev, M.cur_device);
    if (d >= 0) M.cur_device = d;
  } else {
    FZ_CHECK(prev == kSentinel, "previous written on failure (%d)", prev);
  }
}

void op_current_stream(Input& in) {
  int32_t d = pick_device(in);
  bool null_out = (in.u8() % 8) == 0;
  auto sentinel = reinterpret_cast<accel_stream_t>(uintptr_t{0x5e47});
  accel_stream_t s = sentinel;
  int32_t t = resolve(d);
  Allowed ok;
  if (null_out) ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  if (t < 0) ok.add(ACCEL_ERROR_INVALID_DEVICE);
  if (ok.mask == 0) ok.add(ACCEL_SUCCESS);
  if (expect(accel_current_stream(d, null_out ? nullptr : &s), ok) == ACCEL_SUCCESS) {
    const Stream* want = stream_by_serial(M.cur_stream[static_cast<size_t>(t)]);
    FZ_CHECK(want && s == want->h, "current stream of device %d is %p, model %p", t, (void*)s,
             want ? (void*)want->h : nullptr);
  } else {
    FZ_CHECK(s == sentinel, "stream written on failure");
  }
}

void op_set_stream(Input& in) {
  accel_stream_t s = pick_stream(in);
  const Stream* m = s ? stream_by_handle(s) : nullptr;
  Allowed ok = m ? Allowed{ACCEL_SUCCESS} : Allowed{ACCEL_ERROR_INVALID_ARGUMENT};
  if (expect(accel_set_stream(s), ok) == ACCEL_SUCCESS) {
    M.cur_device = m->device;
    M.cur_stream[static_cast<size_t>(m->device)] = m->serial;
  }
}

void op_synchronize(Input& in) {
  int32_t d = pick_device(in);
  int32_t t = resolve(d);
  Allowed ok = t < 0 ? Allowed{ACCEL_ERROR_INVALID_DEVICE} : Allowed{ACCEL_SUCCESS};
  if (expect(accel_synchronize(d), ok) == ACCEL_SUCCESS) synced_device(t);
}

void op_priority_range(Input& in) {
  int32_t d = pick_device(in);
  uint8_t nulls = in.u8();
  int32_t least = 1234, greatest = 5678;
  Allowed ok = resolve(d) < 0 ? Allowed{ACCEL_ERROR_INVALID_DEVICE} : Allowed{ACCEL_SUCCESS};
  accel_status_t st = accel_stream_priority_range(d, (nulls & 1) ? nullptr : &least,
                                                  (nulls & 2) ? nullptr : &greatest);
  if (expect(st, ok) == ACCEL_SUCCESS) {
    if (!(nulls & 1)) FZ_CHECK(least == G.prio_least, "least %d, was %d", least, G.prio_least);
    if (!(nulls & 2))
      FZ_CHECK(greatest == G.prio_greatest, "greatest %d, was %d", greatest, G.prio_greatest);
  } else {
    FZ_CHECK(least == 1234 && greatest == 5678, "outputs written on failure");
  }
}

void op_stream_create(Input& in) {
  int32_t d = pick_device(in);
  int32_t prio = pick_int(in);
  bool null_out = (in.u8() % 8) == 0;
  if (M.streams.size() >= kMaxStreams && !null_out && resolve(d) >= 0) return;
  auto sentinel = reinterpret_cast<accel_stream_t>(uintptr_t{0x5e47});
  accel_stream_t s = sentinel;
  int32_t t = resolve(d);
  Allowed ok;
  if (null_out) ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  if (t < 0) ok.add(ACCEL_ERROR_INVALID_DEVICE);
  if (ok.mask == 0) ok.add(ACCEL_SUCCESS);
  if (expect(accel_stream_create(d, prio, null_out ? nullptr : &s), ok) != ACCEL_SUCCESS) {
    FZ_CHECK(s == sentinel, "stream written on failure");
    return;
  }
  FZ_CHECK(s != nullptr && s != sentinel, "no stream returned");
  FZ_CHECK(stream_by_handle(s) == nullptr, "new stream %p is already live", (void*)s);
  revive(s);
  int32_t want = std::clamp(prio, G.prio_greatest, G.prio_least);
  int32_t got = 99, dev = -99;
  FZ_CHECK(accel_stream_priority(s, &got) == ACCEL_SUCCESS && got == want,
           "priority %d, expected clamp(%d) = %d", got, prio, want);
  FZ_CHECK(accel_stream_device(s, &dev) == ACCEL_SUCCESS && dev == t, "device %d, expected %d", dev,
           t);
  M.streams.push_back(Stream{s, t, want, G.next_serial++, false});
}

void op_stream_destroy(Input& in) {
  accel_stream_t s = pick_stream(in);
  const Stream* m = s ? stream_by_handle(s) : nullptr;
  if (m && !m->is_default) {
    // Precondition of the API: never destroy some thread's current stream.
    for (auto serial : M.cur_stream)
      if (serial == m->serial) return;
  }
  Allowed ok =
      (m && !m->is_default) ? Allowed{ACCEL_SUCCESS} : Allowed{ACCEL_ERROR_INVALID_ARGUMENT};
  if (expect(accel_stream_destroy(s), ok) == ACCEL_SUCCESS) {
    uint64_t serial = m->serial;
    synced_stream(serial);  // destroy drains the stream
    M.streams.erase(M.streams.begin() + (m - M.streams.data()));
    bury(M.dead_streams, s);
  }
}

void op_stream_query_sync(Input& in, bool sync) {
  accel_stream_t s = pick_stream(in);
  const Stream* m = s ? stream_by_handle(s) : nullptr;
  Allowed ok = m ? (sync ? Allowed{ACCEL_SUCCESS} : Allowed{ACCEL_SUCCESS, ACCEL_ERROR_NOT_READY})
                 : Allowed{ACCEL_ERROR_INVALID_ARGUMENT};
  accel_status_t st = sync ? accel_stream_synchronize(s) : accel_stream_query(s);
  if (expect(st, ok) == ACCEL_SUCCESS && m) synced_stream(m->serial);
}

void op_stream_wait_event(Input& in) {
  accel_stream_t s = pick_stream(in);
  accel_event_t e = pick_event(in);
  const Stream* ms = s ? stream_by_handle(s) : nullptr;
  const Event* me = e ? event_by_handle(e) : nullptr;
  Allowed ok;
  if (!ms || !me)
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  else
    ok.add(ACCEL_SUCCESS);  // any device: sim declares ACCEL_CAP_CROSS_DEVICE_WAIT
  expect(accel_stream_wait_event(s, e), ok);
}

void op_stream_device_priority(Input& in, bool device) {
  accel_stream_t s = pick_stream(in);
  bool null_out = (in.u8() % 8) == 0;
  const Stream* m = s ? stream_by_handle(s) : nullptr;
  int32_t v = -4242;
  Allowed ok = (m && !null_out) ? Allowed{ACCEL_SUCCESS} : Allowed{ACCEL_ERROR_INVALID_ARGUMENT};
  accel_status_t st = device ? accel_stream_device(s, null_out ? nullptr : &v)
                             : accel_stream_priority(s, null_out ? nullptr : &v);
  if (expect(st, ok) == ACCEL_SUCCESS) {
    int32_t want = device ? m->device : m->priority;
    FZ_CHECK(v == want, "%s %d, model %d", device ? "device" : "priority", v, want);
  } else {
    FZ_CHECK(v == -4242, "output written on failure");
  }
}

void op_host_func(Input& in) {
  accel_stream_t s = pick_stream(in);
  uint8_t which = in.u8() % 8;
  accel_host_fn fn = which == 0 ? nullptr : (which < 5 ? hostfn_count : hostfn_query);
  const Stream* m = s ? stream_by_handle(s) : nullptr;
  Allowed ok = (m && fn) ? Allowed{ACCEL_SUCCESS} : Allowed{ACCEL_ERROR_INVALID_ARGUMENT};
  if (expect(accel_launch_host_func(s, fn, &g_hostfn_ran), ok) == ACCEL_SUCCESS)
    ++g_hostfn_launched;
}

void op_event_create(Input& in) {
  int32_t d = pick_device(in);
  uint32_t flags = 0;
  switch (in.u8() % 8) {
    case 0:
      flags = ACCEL_EVENT_DEFAULT;
      break;
    case 1:
    case 2:
      flags = ACCEL_EVENT_ENABLE_TIMING;
      break;
    case 3:
      flags = 2;
      break;
    case 4:
      flags = 3;
      break;
    case 5:
      flags = 0x80000000u;
      break;
    case 6:
      flags = UINT32_MAX;
      break;
    default:
      flags = in.u32();
      break;
  }
  bool null_out = (in.u8() % 8) == 0;
  int32_t t = resolve(d);
  bool bad_flags = (flags & ~ACCEL_EVENT_ENABLE_TIMING) != 0;
  if (M.events.size() >= kMaxEvents && !null_out && !bad_flags && t >= 0) return;
  auto sentinel = reinterpret_cast<accel_event_t>(uintptr_t{0xe7e7});
  accel_event_t e = sentinel;
  Allowed ok;
  if (null_out || bad_flags) ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  if (t < 0) ok.add(ACCEL_ERROR_INVALID_DEVICE);
  if (ok.mask == 0) ok.add(ACCEL_SUCCESS);
  if (expect(accel_event_create(d, flags, null_out ? nullptr : &e), ok) != ACCEL_SUCCESS) {
    FZ_CHECK(e == sentinel, "event written on failure");
    return;
  }
  FZ_CHECK(e != nullptr && e != sentinel, "no event returned");
  FZ_CHECK(event_by_handle(e) == nullptr, "new event %p is already live", (void*)e);
  revive(e);
  int32_t dev = -99;
  FZ_CHECK(accel_event_device(e, &dev) == ACCEL_SUCCESS && dev == t, "device %d, expected %d", dev,
           t);
  M.events.push_back(Event{e, t, flags, false});
}

void op_event_destroy(Input& in) {
  accel_event_t e = pick_event(in);
  Event* m = e ? event_by_handle(e) : nullptr;
  Allowed ok = m ? Allowed{ACCEL_SUCCESS} : Allowed{ACCEL_ERROR_INVALID_ARGUMENT};
  if (expect(accel_event_destroy(e), ok) == ACCEL_SUCCESS) {
    M.events.erase(M.events.begin() + (m - M.events.data()));
    bury(M.dead_events, e);
  }
}

void op_event_record(Input& in) {
  accel_event_t e = pick_event(in);
  accel_stream_t s = pick_stream(in);
  Event* me = e ? event_by_handle(e) : nullptr;
  Allowed ok;
  if (!me) {
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  } else {
    int32_t sdev = -1;
    if (s == nullptr) {
      sdev = me->device;  // the current stream of the event's device
    } else if (const Stream* ms = stream_by_handle(s)) {
      sdev = ms->device;
    }
    if (s != nullptr && sdev < 0)
      ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
    else if (sdev != me->device)
      ok.add(ACCEL_ERROR_DEVICE_MISMATCH);
    else
      ok.add(ACCEL_SUCCESS);
  }
  if (expect(accel_event_record(e, s), ok) == ACCEL_SUCCESS) me->recorded = true;
}

void op_event_query_sync(Input& in, bool sync) {
  accel_event_t e = pick_event(in);
  Event* m = e ? event_by_handle(e) : nullptr;
  Allowed ok;
  if (!m)
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  else if (sync || !m->recorded)
    ok.add(ACCEL_SUCCESS);
  else
    ok = Allowed{ACCEL_SUCCESS, ACCEL_ERROR_NOT_READY};
  expect(sync ? accel_event_synchronize(e) : accel_event_query(e), ok);
}

void op_event_elapsed(Input& in) {
  accel_event_t a = pick_event(in);
  accel_event_t b = (in.u8() % 4) == 0 ? a : pick_event(in);
  bool null_out = (in.u8() % 8) == 0;
  if (in.flag() && a && b) {  // often: make both complete first
    if (event_by_handle(a)) expect(accel_event_synchronize(a), {ACCEL_SUCCESS});
    if (event_by_handle(b)) expect(accel_event_synchronize(b), {ACCEL_SUCCESS});
  }
  Event* ma = a ? event_by_handle(a) : nullptr;
  Event* mb = b ? event_by_handle(b) : nullptr;
  Allowed ok;
  if (null_out) ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  if (!ma || !mb) {
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  } else if (!null_out) {
    if (ma->device != mb->device) {
      ok.add(ACCEL_ERROR_DEVICE_MISMATCH);
    } else if (!(ma->flags & ACCEL_EVENT_ENABLE_TIMING) ||
               !(mb->flags & ACCEL_EVENT_ENABLE_TIMING)) {
      ok.add(ACCEL_ERROR_EVENT_NO_TIMING);
    } else if (!ma->recorded || !mb->recorded) {
      ok.add(ACCEL_ERROR_EVENT_NOT_RECORDED);
    } else {
      ok.add(ACCEL_SUCCESS);
      ok.add(ACCEL_ERROR_NOT_READY);
    }
  }
  const float kSentinel = -12345.0f;
  float ms = kSentinel;
  if (expect(accel_event_elapsed_time(a, b, null_out ? nullptr : &ms), ok) == ACCEL_SUCCESS) {
    FZ_CHECK(std::isfinite(ms), "elapsed time is not finite");
    if (a == b) FZ_CHECK(ms == 0.0f, "elapsed time of an event to itself is %g", ms);
  } else {
    FZ_CHECK(ms == kSentinel, "ms written on failure");
  }
}

void op_event_device(Input& in) {
  accel_event_t e = pick_event(in);
  bool null_out = (in.u8() % 8) == 0;
  Event* m = e ? event_by_handle(e) : nullptr;
  int32_t v = -4242;
  Allowed ok = (m && !null_out) ? Allowed{ACCEL_SUCCESS} : Allowed{ACCEL_ERROR_INVALID_ARGUMENT};
  if (expect(accel_event_device(e, null_out ? nullptr : &v), ok) == ACCEL_SUCCESS)
    FZ_CHECK(v == m->device, "device %d, model %d", v, m->device);
  else
    FZ_CHECK(v == -4242, "output written on failure");
}

void op_malloc(Input& in) {
  int32_t d = pick_device(in);
  size_t bytes = pick_size(in);
  bool null_out = (in.u8() % 16) == 0;
  int32_t t = resolve(d);
  if (M.allocs.size() >= kMaxAllocs && !null_out && bytes != 0 && t >= 0) return;
  void* const sentinel = reinterpret_cast<void*>(uintptr_t{0xa110c});
  void* p = sentinel;
  Allowed ok;
  if (null_out || bytes == 0) ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  if (t < 0) ok.add(ACCEL_ERROR_INVALID_DEVICE);
  if (ok.mask == 0) {
    ok.add(bytes > kSimMemory - used_bytes(t) ? ACCEL_ERROR_OUT_OF_MEMORY : ACCEL_SUCCESS);
  }
  if (expect(accel_malloc(d, bytes, null_out ? nullptr : &p), ok) != ACCEL_SUCCESS) {
    FZ_CHECK(p == sentinel, "ptr written on failure");
    return;
  }
  FZ_CHECK(p != nullptr && p != sentinel, "no pointer returned");
  auto base = reinterpret_cast<uintptr_t>(p);
  FZ_CHECK(find_alloc(p) == nullptr &&
               (M.allocs.empty() || M.allocs.lower_bound(base) == M.allocs.end() ||
                M.allocs.lower_bound(base)->first >= base + bytes),
           "allocation %p (+%zu) overlaps a live one", p, bytes);
  Alloc a;
  a.base = base;
  a.bytes = bytes;
  a.device = t;
  a.known = false;  // fresh device memory has no defined contents
  M.allocs.emplace(base, std::move(a));
  M.freed.erase(std::remove(M.freed.begin(), M.freed.end(), base), M.freed.end());
  ++G.total_allocations[static_cast<size_t>(t)];
}

void op_free(Input& in) {
  uint8_t stack_buf[64];
  void* p = pick_device_ptr(in, stack_buf);
  Alloc* a = p ? find_alloc(p) : nullptr;
  bool exact = a && a->base == reinterpret_cast<uintptr_t>(p);
  Allowed ok =
      (p == nullptr || exact) ? Allowed{ACCEL_SUCCESS} : Allowed{ACCEL_ERROR_INVALID_ARGUMENT};
  if (exact) {
    // The caller must make sure no queued work still uses it: a peer copy
    // may use it from a stream of another device, so wait for them all.
    for (int32_t d = 0; d < accel_device_count(); ++d) {
      expect(accel_synchronize(d), {ACCEL_SUCCESS});
      synced_device(d);
    }
  }
  if (expect(accel_free(p), ok) == ACCEL_SUCCESS && exact) {
    if (M.freed.size() >= kMaxGrave) M.freed.erase(M.freed.begin());
    M.freed.push_back(a->base);
    M.allocs.erase(a->base);
  }
}

accel_memcpy_kind_t pick_kind(Input& in) {
  switch (in.u8() % 12) {
    case 0:
    case 1:
    case 2:
      return ACCEL_MEMCPY_HOST_TO_DEVICE;
    case 3:
    case 4:
    case 5:
      return ACCEL_MEMCPY_DEVICE_TO_HOST;
    case 6:
    case 7:
    case 8:
      return ACCEL_MEMCPY_DEVICE_TO_DEVICE;
    case 9:
      return static_cast<accel_memcpy_kind_t>(3);
    case 10:
      return ACCEL_MEMCPY_FORCE_INT32;
    default:
      return static_cast<accel_memcpy_kind_t>(in.u32() & INT32_MAX);
  }
}

void op_memcpy(Input& in) {
  uint8_t stack_buf[64];
  accel_memcpy_kind_t kind = pick_kind(in);
  accel_stream_t s = pick_stream(in);
  const bool valid_kind = kind == ACCEL_MEMCPY_HOST_TO_DEVICE ||
                          kind == ACCEL_MEMCPY_DEVICE_TO_HOST ||
                          kind == ACCEL_MEMCPY_DEVICE_TO_DEVICE;
  const bool dst_dev = kind != ACCEL_MEMCPY_DEVICE_TO_HOST;
  const bool src_dev = kind != ACCEL_MEMCPY_HOST_TO_DEVICE;
  void* dst = pick_device_ptr(in, stack_buf);
  void* src = pick_device_ptr(in, stack_buf);
  // Host sides: real buffers (any valid copy fits in them), sometimes NULL or
  // a device pointer (a mixed-up kind); the offset keeps offset+bytes inside.
  size_t host_off = in.u32() % (kHostBuf - kSimMemory);
  bool h2d_from_pattern = true;
  auto host_choice = [&](bool is_dst) -> void* {
    switch (in.u8() % 8) {
      case 0:
        return nullptr;
      case 1:
        return pick_device_ptr(in, stack_buf);  // may be device memory
      case 2:
        return G.heap.data() + host_off;
      default:
        return is_dst ? G.sink.data() + host_off : G.pattern.data() + host_off;
    }
  };
  if (valid_kind && !dst_dev) dst = host_choice(true);
  if (valid_kind && !src_dev) {
    src = host_choice(false);
    h2d_from_pattern = src == G.pattern.data() + host_off;
  }
  // The size: relative to the device-side allocation when there is one.
  size_t room = 0;
  if (Alloc* a = find_alloc(dst_dev ? dst : src)) {
    room = a->bytes - (reinterpret_cast<uintptr_t>(dst_dev ? dst : src) - a->base);
  }
  size_t bytes = pick_copy_size(in, room);

  // Expected status, in the order the API lists the checks.
  Allowed ok;
  const Stream* ms = s ? stream_by_handle(s) : nullptr;
  const int32_t sdev = stream_device_of(s);
  bool host_unsafe = false;  // a host pointer that is not one of our big buffers
  auto host_ok = [&](void* p) {
    auto v = reinterpret_cast<uintptr_t>(p);
    auto in_buf = [&](const std::vector<uint8_t>& b) {
      return v >= reinterpret_cast<uintptr_t>(b.data()) &&
             v < reinterpret_cast<uintptr_t>(b.data()) + b.size();
    };
    return in_buf(G.sink) || in_buf(G.heap) || in_buf(G.pattern);
  };
  // A zero-byte copy succeeds whatever the pointers once kind and stream are
  // valid (accel.h, as CUDA and HIP).
  if (!valid_kind) {
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  } else if (s != nullptr && !ms) {
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  } else if (bytes == 0) {
    ok.add(ACCEL_SUCCESS);
  } else if (dst == nullptr || src == nullptr) {
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  } else if (Alloc* pd = find_alloc(dst), *ps = find_alloc(src);
             kind == ACCEL_MEMCPY_DEVICE_TO_DEVICE && pd && ps && pd->device != ps->device) {
    // Between two devices: a peer copy (sim has the group) on a stream of
    // either device, each pointer checked against its own device.
    if (sdev != pd->device && sdev != ps->device)
      ok.add(ACCEL_ERROR_DEVICE_MISMATCH);
    else if (device_range_status(dst, bytes, pd->device) != ACCEL_SUCCESS ||
             device_range_status(src, bytes, ps->device) != ACCEL_SUCCESS)
      ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
    else
      ok.add(ACCEL_SUCCESS);
  } else {
    accel_status_t st = dst_dev ? device_range_status(dst, bytes, sdev)
                                : (find_alloc(dst) ? ACCEL_ERROR_INVALID_ARGUMENT : ACCEL_SUCCESS);
    if (st == ACCEL_SUCCESS) {
      st = src_dev ? device_range_status(src, bytes, sdev)
                   : (find_alloc(src) ? ACCEL_ERROR_INVALID_ARGUMENT : ACCEL_SUCCESS);
    }
    ok.add(st);
    if (st == ACCEL_SUCCESS) {
      // Would really copy: host sides must be our buffers.
      if (!dst_dev && !host_ok(dst)) host_unsafe = true;
      if (!src_dev && !host_ok(src)) host_unsafe = true;
    }
  }
  if (host_unsafe) return;  // never hand the library an undersized host buffer
  if (expect(accel_memcpy_async(dst, src, bytes, kind, s), ok) != ACCEL_SUCCESS || bytes == 0)
    return;
  const uint64_t serial = stream_serial_of(s);
  Alloc* da = dst_dev ? find_alloc(dst) : nullptr;
  Alloc* sa = src_dev ? find_alloc(src) : nullptr;
  const bool racy = conflict(da, serial) || conflict(sa, serial);
  if (sa) sa->pending.insert(serial);
  if (!da) return;
  da->pending.insert(serial);
  size_t doff = reinterpret_cast<uintptr_t>(dst) - da->base;
  bool known = da->known && !racy;
  if (known) {
    if (sa) {
      size_t soff = reinterpret_cast<uintptr_t>(src) - sa->base;
      bool overlap = sa == da && soff < doff + bytes && doff < soff + bytes;
      if (!sa->known || overlap) {
        known = false;
      } else {
        std::vector<uint8_t> tmp(sa->shadow.begin() + static_cast<ptrdiff_t>(soff),
                                 sa->shadow.begin() + static_cast<ptrdiff_t>(soff + bytes));
        std::memcpy(da->shadow.data() + doff, tmp.data(), bytes);
      }
    } else if (h2d_from_pattern) {
      std::memcpy(da->shadow.data() + doff, src, bytes);
    } else {
      known = false;
    }
  }
  if (!known) {
    da->known = false;
    da->shadow.clear();
  }
}

void op_memset(Input& in) {
  uint8_t stack_buf[64];
  accel_stream_t s = pick_stream(in);
  void* dst = pick_device_ptr(in, stack_buf);
  int value = in.flag() ? static_cast<int>(in.u8()) : pick_int(in);
  size_t room = 0;
  if (Alloc* a = find_alloc(dst)) room = a->bytes - (reinterpret_cast<uintptr_t>(dst) - a->base);
  size_t bytes = pick_copy_size(in, room);
  const Stream* ms = s ? stream_by_handle(s) : nullptr;
  Allowed ok;
  if (s != nullptr && !ms)
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  else if (bytes == 0)
    ok.add(ACCEL_SUCCESS);  // whatever dst is
  else if (dst == nullptr)
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  else
    ok.add(device_range_status(dst, bytes, stream_device_of(s)));
  if (expect(accel_memset_async(dst, value, bytes, s), ok) != ACCEL_SUCCESS || bytes == 0) return;
  const uint64_t serial = stream_serial_of(s);
  Alloc* da = find_alloc(dst);
  const bool racy = conflict(da, serial);
  da->pending.insert(serial);
  size_t off = reinterpret_cast<uintptr_t>(dst) - da->base;
  if (!racy && off == 0 && bytes == da->bytes) {
    da->known = true;  // fully overwritten: known again
    da->shadow.assign(bytes, static_cast<uint8_t>(value));
  } else if (!racy && da->known) {
    std::memset(da->shadow.data() + off, static_cast<uint8_t>(value), bytes);
  } else {
    da->known = false;
    da->shadow.clear();
  }
}

void op_mem_info(Input& in) {
  int32_t d = pick_device(in);
  uint8_t nulls = in.u8();
  size_t f = 1111, t = 2222;
  int32_t dev = resolve(d);
  Allowed ok = dev < 0 ? Allowed{ACCEL_ERROR_INVALID_DEVICE} : Allowed{ACCEL_SUCCESS};
  if (expect(accel_mem_get_info(d, (nulls & 1) ? nullptr : &f, (nulls & 2) ? nullptr : &t), ok) ==
      ACCEL_SUCCESS) {
    if (!(nulls & 2)) FZ_CHECK(t == kSimMemory, "total %zu, expected %zu", t, kSimMemory);
    if (!(nulls & 1)) FZ_CHECK(f <= kSimMemory, "free %zu > total", f);
  } else {
    FZ_CHECK(f == 1111 && t == 2222, "outputs written on failure");
  }
}

void op_memory_stats(Input& in) {
  int32_t d = pick_device(in);
  bool null_arg = (in.u8() % 16) == 0;
  size_t ss = pick_struct_size(in, sizeof(accel_memory_stats_t));
  Canaried c(ss, sizeof(accel_memory_stats_t));
  int32_t t = resolve(d);
  Allowed ok;
  if (null_arg || ss < sizeof(size_t))
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  else if (t < 0)
    ok.add(ACCEL_ERROR_INVALID_DEVICE);
  else
    ok.add(ACCEL_SUCCESS);
  accel_status_t st = expect(
      accel_memory_stats(d, null_arg ? nullptr : static_cast<accel_memory_stats_t*>(c.data())), ok);
  c.check(st == ACCEL_SUCCESS);
  if (st == ACCEL_SUCCESS && ss >= sizeof(accel_memory_stats_t)) {
    auto m = c.get<accel_memory_stats_t>();
    FZ_CHECK(m.allocated_bytes == used_bytes(t) && m.allocation_count == live_count(t),
             "stats of device %d disagree with the model", t);
  }
}

void op_reset_peak(Input& in) {
  int32_t d = pick_device(in);
  int32_t t = resolve(d);
  Allowed ok = t < 0 ? Allowed{ACCEL_ERROR_INVALID_DEVICE} : Allowed{ACCEL_SUCCESS};
  if (expect(accel_reset_peak_memory_stats(d), ok) == ACCEL_SUCCESS) {
    accel_memory_stats_t m;
    std::memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    FZ_CHECK(accel_memory_stats(t, &m) == ACCEL_SUCCESS, "stats failed");
    FZ_CHECK(m.peak_allocated_bytes == m.allocated_bytes,
             "peak %" PRIu64 " != allocated %" PRIu64 " after reset", m.peak_allocated_bytes,
             m.allocated_bytes);
  }
}

void op_properties(Input& in) {
  int32_t d = pick_device(in);
  bool null_arg = (in.u8() % 16) == 0;
  size_t ss = pick_struct_size(in, sizeof(accel_device_properties_t));
  Canaried c(ss, sizeof(accel_device_properties_t));
  int32_t t = resolve(d);
  Allowed ok;
  if (null_arg || ss < sizeof(size_t))
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  else if (t < 0)
    ok.add(ACCEL_ERROR_INVALID_DEVICE);
  else
    ok.add(ACCEL_SUCCESS);
  accel_status_t st =
      expect(accel_get_device_properties(
                 d, null_arg ? nullptr : static_cast<accel_device_properties_t*>(c.data())),
             ok);
  c.check(st == ACCEL_SUCCESS);
  if (st == ACCEL_SUCCESS && ss >= sizeof(accel_device_properties_t)) {
    auto p = c.get<accel_device_properties_t>();
    FZ_CHECK(p.device_index == t, "device_index %d, expected %d", p.device_index, t);
    FZ_CHECK(memchr(p.name, 0, sizeof p.name) && memchr(p.vendor, 0, sizeof p.vendor) &&
                 memchr(p.pci_bus_id, 0, sizeof p.pci_bus_id) &&
                 memchr(p.architecture, 0, sizeof p.architecture),
             "a string field is not NUL-terminated");
    FZ_CHECK(p.total_memory == kSimMemory, "total_memory %" PRIu64, p.total_memory);
  }
}

void op_backend_info(Input& in) {
  size_t index = 0;
  switch (in.u8() % 6) {
    case 0:
      index = G.backend_count;
      break;
    case 1:
      index = SIZE_MAX;
      break;
    case 2:
      index = static_cast<size_t>(in.u64());
      break;
    default:
      index = G.backend_count ? in.u8() % G.backend_count : 0;
      break;
  }
  bool null_arg = (in.u8() % 16) == 0;
  size_t ss = pick_struct_size(in, sizeof(accel_backend_info_t));
  Canaried c(ss, sizeof(accel_backend_info_t));
  Allowed ok;
  if (null_arg || ss < sizeof(size_t))
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  else if (index >= G.backend_count)
    ok.add(ACCEL_ERROR_OUT_OF_RANGE);
  else
    ok.add(ACCEL_SUCCESS);
  accel_status_t st =
      expect(accel_get_backend_info(
                 index, null_arg ? nullptr : static_cast<accel_backend_info_t*>(c.data())),
             ok);
  c.check(st == ACCEL_SUCCESS);
  if (st == ACCEL_SUCCESS && ss >= sizeof(accel_backend_info_t)) {
    auto b = c.get<accel_backend_info_t>();
    FZ_CHECK(b.name && b.path && b.reason && b.runtime_version, "a string of entry %zu is NULL",
             index);
    FZ_CHECK(std::strcmp(accel_backend_status_name(b.status), "unknown") != 0,
             "entry %zu has an unknown status %d", index, static_cast<int>(b.status));
  }
  FZ_CHECK(accel_backend_count() == G.backend_count, "backend count changed");
}

void op_names(Input& in) {
  // Any value a C caller can store in the enum (its values are 0..INT32_MAX;
  // a negative one would be undefined behaviour in the caller already).
  int32_t v = pick_int(in) & INT32_MAX;
  if (in.flag()) v = static_cast<int32_t>(in.u8() % 20);
  auto st = static_cast<accel_status_t>(v);
  const char* name = accel_status_name(st);
  const char* msg = accel_status_message(st);
  FZ_CHECK(name && msg && *name && *msg, "status %d: NULL or empty name/message", v);
  bool defined = v >= 0 && v < ACCEL_STATUS_COUNT;
  FZ_CHECK(defined == (std::strcmp(name, "ACCEL_STATUS_UNKNOWN") != 0), "status %d named %s", v,
           name);
  const char* bs = accel_backend_status_name(static_cast<accel_backend_status_t>(v));
  FZ_CHECK(bs != nullptr && (v > 4) == (std::strcmp(bs, "unknown") == 0),
           "backend status %d named %s", v, bs ? bs : "(null)");
  FZ_CHECK(accel_version() && accel_selection_reason() && accel_last_error(), "NULL string");
  FZ_CHECK(accel_is_available() == 1, "accelerator vanished");
  const char* cur = accel_current_accelerator();
  FZ_CHECK(cur && std::strcmp(cur, "sim") == 0, "current accelerator is %s", cur ? cur : "NULL");
}

// Synchronize everything, then copy one allocation back and compare it with
// the model.
void sync_all() {
  for (int32_t d = 0; d < G.n; ++d) {
    expect(accel_synchronize(d), {ACCEL_SUCCESS});
    synced_device(d);
  }
}

void op_verify(Input& in) {
  sync_all();
  FZ_CHECK(g_hostfn_ran.load() == g_hostfn_launched,
           "%" PRIu64 " host functions launched, %" PRIu64 " ran, after synchronizing every device",
           g_hostfn_launched, g_hostfn_ran.load());
  Alloc* a = pick_alloc(in);
  if (a == nullptr || !a->known) return;
  const Stream& def = G.defaults[static_cast<size_t>(a->device)];
  std::memset(G.sink.data(), 0x5A, a->bytes);
  expect(accel_memcpy_async(G.sink.data(), reinterpret_cast<void*>(a->base), a->bytes,
                            ACCEL_MEMCPY_DEVICE_TO_HOST, def.h),
         {ACCEL_SUCCESS});
  expect(accel_stream_synchronize(def.h), {ACCEL_SUCCESS});
  for (size_t i = 0; i < a->bytes; ++i)
    FZ_CHECK(G.sink[i] == a->shadow[i],
             "allocation %p (%zu bytes, device %d): byte %zu is 0x%02x, "
             "expected 0x%02x",
             reinterpret_cast<void*>(a->base), a->bytes, a->device, i, G.sink[i], a->shadow[i]);
}

// Per-thread state: a fresh thread starts on device 0 with the default
// stream, and its failing call sets its own last error.
void op_thread(Input& in) {
  int32_t bad = G.n + static_cast<int32_t>(in.u8());
  std::string problem;
  std::thread t([&] {
    if (accel_last_error()[0] != '\0')
      problem = "a new thread's last error is not empty";
    else if (accel_current_device_index() != 0)
      problem = "a new thread's device is not 0";
    accel_stream_t s = nullptr;
    if (problem.empty() && (accel_current_stream(-1, &s) != ACCEL_SUCCESS || s != G.defaults[0].h))
      problem = "a new thread's current stream is not device 0's default stream";
    if (problem.empty() && accel_set_device_index(bad) != ACCEL_ERROR_INVALID_DEVICE)
      problem = "set_device_index(out of range) on a new thread did not fail";
    if (problem.empty() && accel_last_error()[0] == '\0')
      problem = "a failing call left an empty last error on a new thread";
    if (problem.empty() && accel_current_device_index() != 0)
      problem = "a failed set_device_index changed the device";
  });
  t.join();
  FZ_CHECK(problem.empty(), "%s", problem.c_str());
}

void run_op(uint8_t code, Input& in) {
  switch (static_cast<Op>(code % OP_COUNT)) {
    case OP_SET_DEVICE:
      return op_set_device(in);
    case OP_EXCHANGE:
      return op_exchange(in, false);
    case OP_MAYBE_EXCHANGE:
      return op_exchange(in, true);
    case OP_CURRENT_STREAM:
      return op_current_stream(in);
    case OP_SET_STREAM:
      return op_set_stream(in);
    case OP_SYNCHRONIZE:
      return op_synchronize(in);
    case OP_PRIORITY_RANGE:
      return op_priority_range(in);
    case OP_STREAM_CREATE:
      return op_stream_create(in);
    case OP_STREAM_DESTROY:
      return op_stream_destroy(in);
    case OP_STREAM_QUERY:
      return op_stream_query_sync(in, false);
    case OP_STREAM_SYNC:
      return op_stream_query_sync(in, true);
    case OP_STREAM_WAIT_EVENT:
      return op_stream_wait_event(in);
    case OP_STREAM_DEVICE:
      return op_stream_device_priority(in, true);
    case OP_STREAM_PRIORITY:
      return op_stream_device_priority(in, false);
    case OP_HOST_FUNC:
      return op_host_func(in);
    case OP_EVENT_CREATE:
      return op_event_create(in);
    case OP_EVENT_DESTROY:
      return op_event_destroy(in);
    case OP_EVENT_RECORD:
      return op_event_record(in);
    case OP_EVENT_QUERY:
      return op_event_query_sync(in, false);
    case OP_EVENT_SYNC:
      return op_event_query_sync(in, true);
    case OP_EVENT_ELAPSED:
      return op_event_elapsed(in);
    case OP_EVENT_DEVICE:
      return op_event_device(in);
    case OP_MALLOC:
      return op_malloc(in);
    case OP_FREE:
      return op_free(in);
    case OP_MEMCPY:
      return op_memcpy(in);
    case OP_MEMSET:
      return op_memset(in);
    case OP_MEM_INFO:
      return op_mem_info(in);
    case OP_MEMORY_STATS:
      return op_memory_stats(in);
    case OP_RESET_PEAK:
      return op_reset_peak(in);
    case OP_PROPERTIES:
      return op_properties(in);
    case OP_BACKEND_INFO:
      return op_backend_info(in);
    case OP_NAMES:
      return op_names(in);
    case OP_VERIFY:
      return op_verify(in);
    case OP_THREAD:
      return op_thread(in);
    case OP_COUNT:
      break;
  }
}

// --- setup and teardown ----------------------------------------------------------------
void global_init() {
  g_op = "global init";
  FZ_CHECK(accel_is_available() == 1, "sim is not available: %s", accel_selection_reason());
  const char* cur = accel_current_accelerator();
  FZ_CHECK(cur && std::strcmp(cur, "sim") == 0, "current accelerator is %s", cur ? cur : "NULL");
  G.n = accel_device_count();
  FZ_CHECK(G.n >= 1, "no sim devices");
  G.backend_count = accel_backend_count();
  FZ_CHECK(accel_stream_priority_range(0, &G.prio_least, &G.prio_greatest) == ACCEL_SUCCESS,
           "priority range");
  FZ_CHECK(G.prio_greatest <= 0 && 0 <= G.prio_least, "priority range [%d, %d]", G.prio_greatest,
           G.prio_least);
  // Every default stream exists before any stream is destroyed, so no
  // destroyed handle's slot is ever reused for a default stream.
  for (int32_t d = 0; d < G.n; ++d) {
    accel_stream_t s = nullptr;
    FZ_CHECK(accel_current_stream(d, &s) == ACCEL_SUCCESS && s != nullptr, "default stream %d", d);
    G.defaults.push_back(Stream{s, d, 0, G.next_serial++, true});
    accel_memory_stats_t m;
    std::memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    FZ_CHECK(accel_memory_stats(d, &m) == ACCEL_SUCCESS, "stats %d", d);
    G.total_allocations.push_back(m.total_allocations);
  }
  G.pattern.resize(kHostBuf);
  for (size_t i = 0; i < kHostBuf; ++i) G.pattern[i] = static_cast<uint8_t>((i * 131u) ^ (i >> 9));
  G.sink.assign(kHostBuf, 0);
  G.heap.assign(kHostBuf, 0);
  G.ready = true;
}

void begin_input() {
  M = Model{};
  M.cur_device = accel_current_device_index();
  M.cur_stream.clear();
  for (auto& s : G.defaults) M.cur_stream.push_back(s.serial);
}

void end_input() {
  g_op = "teardown";
  // Back to the default streams and device 0.
  for (int32_t d = 0; d < G.n; ++d) {
    if (M.cur_stream[static_cast<size_t>(d)] != G.defaults[static_cast<size_t>(d)].serial) {
      expect(accel_set_stream(G.defaults[static_cast<size_t>(d)].h), {ACCEL_SUCCESS});
      M.cur_stream[static_cast<size_t>(d)] = G.defaults[static_cast<size_t>(d)].serial;
    }
  }
  expect(accel_set_device_index(0), {ACCEL_SUCCESS});
  M.cur_device = 0;
  sync_all();
  // Work already queued on destroyed streams completes too.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (g_hostfn_ran.load() != g_hostfn_launched && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  FZ_CHECK(g_hostfn_ran.load() == g_hostfn_launched,
           "%" PRIu64 " host functions launched, %" PRIu64 " ran", g_hostfn_launched,
           g_hostfn_ran.load());
  while (!M.allocs.empty()) {
    void* p = reinterpret_cast<void*>(M.allocs.begin()->first);
    expect(accel_free(p), {ACCEL_SUCCESS});
    M.allocs.erase(M.allocs.begin());
  }
  for (auto& s : M.streams) expect(accel_stream_destroy(s.h), {ACCEL_SUCCESS});
  M.streams.clear();
  for (auto& e : M.events) expect(accel_event_destroy(e.h), {ACCEL_SUCCESS});
  M.events.clear();
  check_state();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // Only the sim plugin, a few small devices. ACCEL_FUZZ_SIM_DEVICES (2..4)
  // picks the device count; the default is 3.
  int n = 3;
  if (const char* e = std::getenv("ACCEL_FUZZ_SIM_DEVICES")) n = std::atoi(e);
  if (n < 2 || n > 4) n = 3;
  setenv("ACCEL_PLUGIN_PATH", ACCEL_FUZZ_SIM_DIR, 1);
  setenv("ACCEL_BACKEND", "sim", 1);
  setenv("ACCEL_SIM_DEVICES", std::to_string(n).c_str(), 1);
  setenv("ACCEL_SIM_MEMORY", std::to_string(kSimMemory).c_str(), 1);
  setenv("ACCEL_LOG_LEVEL", "off", 0);
  g_trace = std::getenv("ACCEL_FUZZ_TRACE") != nullptr;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!G.ready) global_init();
  begin_input();
  check_state();
  Input in{data, size};
  for (size_t i = 0; i < kMaxOps && in.n > 0; ++i) {
    uint8_t code = in.u8();
    g_op = std::string("op #") + std::to_string(i) + " " + kOpNames[code % OP_COUNT];
    run_op(code, in);
    check_state();
  }
  end_input();
  return 0;
}
