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

#include "accel_kernels.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#ifndef ACCEL_FUZZ_SIM_DIR
#error "ACCEL_FUZZ_SIM_DIR (the folder of the built sim plugin) must be defined by the build"
#endif

namespace {

// --- bounds -------------------------------------------------------------------
// ACCEL_SIM_MEMORY per device. The caching allocator takes 2 MiB segments
// for requests of 1 MiB or less and 20 MiB ones up to 10 MiB, so a device
// holds a few of each: enough that allocations succeed, few enough that the
// out-of-memory retry (cache freed, markers waited for) runs often.
constexpr size_t kSimMemory = size_t{32} << 20;
constexpr size_t kBigAlloc = size_t{12} << 20;        // most "large" requests stay below this
constexpr size_t kHostSlack = size_t{1} << 20;        // room for the offsets of host pointers
constexpr size_t kHostBuf = kSimMemory + kHostSlack;  // host buffers: any valid copy fits
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
  // Caching allocator: the stream the block belongs to (its allocation's,
  // the device's default once that stream is destroyed) and the streams
  // named with accel_record_stream. A free waits for their work only.
  uint64_t owner = 0;
  std::set<uint64_t> recorded;
  // A graph's own buffer (op_capture): only its graph writes it, so no
  // operation picks it (pick_alloc) and teardown checks it.
  bool graph = false;
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
  bool caching = true;           // accel_get_allocator_backend() is "caching"
  // accel_memory_stats_list: the names, in the order of the first call.
  std::vector<std::string> stat_names;
  std::map<std::string, size_t> stat_index;
  std::vector<bool> touched;  // per device: an allocation reached the allocator
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
  size_t history = 0;            // accel_record_memory_history's last value
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
      return static_cast<size_t>(in.u32() % kBigAlloc) + 1;
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
  size_t n = 0;
  for (auto& [b, a] : M.allocs) n += a.graph ? 0 : 1;
  if (n == 0) return nullptr;
  size_t i = in.u8() % n;
  for (auto& [b, a] : M.allocs) {
    if (a.graph) continue;
    if (i-- == 0) return &a;
  }
  return nullptr;
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

// --- allocator statistics and snapshots ----------------------------------------------------
// The sizes of the caching allocator's design (docs/memory.md), to predict
// what an allocation needs from the device.
constexpr size_t kMinBlock = 512;
constexpr size_t kSmallRequest = size_t{1} << 20;
constexpr size_t kSmallSegment = size_t{2} << 20;
constexpr size_t kLargeSegment = size_t{20} << 20;
constexpr size_t kMinLargeAlloc = size_t{10} << 20;
size_t round_block(size_t bytes) {  // bytes <= kSimMemory
  return bytes < kMinBlock ? kMinBlock : (bytes + kMinBlock - 1) / kMinBlock * kMinBlock;
}
size_t segment_for(size_t rounded) {
  if (rounded <= kSmallRequest) return kSmallSegment;
  if (rounded < kMinLargeAlloc) return kLargeSegment;
  return (rounded + kSmallSegment - 1) / kSmallSegment * kSmallSegment;
}

// accel_memory_stats_list of one device, checked for the same names in the
// same order as the first call of the process.
struct StatView {
  int32_t device = 0;
  std::vector<int64_t> v;
  int64_t operator[](const std::string& name) const {
    auto it = G.stat_index.find(name);
    FZ_CHECK(it != G.stat_index.end(), "accel_memory_stats_list has no statistic named %s",
             name.c_str());
    return v[it->second];
  }
};

StatView read_stats(int32_t d) {
  size_t n = 0;
  accel_status_t st = accel_memory_stats_list(d, nullptr, 0, &n);
  FZ_CHECK(st == ACCEL_SUCCESS, "accel_memory_stats_list(%d) count query: %s", d,
           accel_status_name(st));
  FZ_CHECK(n > 0 && (G.stat_names.empty() || n == G.stat_names.size()),
           "accel_memory_stats_list(%d) counts %zu statistics, first call %zu", d, n,
           G.stat_names.size());
  std::vector<accel_memory_stat_t> buf(n + 1, accel_memory_stat_t{nullptr, -777});
  size_t m = 0;
  st = accel_memory_stats_list(d, buf.data(), n, &m);
  FZ_CHECK(st == ACCEL_SUCCESS && m == n, "accel_memory_stats_list(%d): %s, count %zu of %zu", d,
           accel_status_name(st), m, n);
  FZ_CHECK(buf[n].name == nullptr && buf[n].value == -777, "entry past capacity written");
  if (G.stat_names.empty()) {
    for (size_t i = 0; i < n; ++i) {
      FZ_CHECK(buf[i].name != nullptr && buf[i].name[0] != '\0', "statistic %zu has no name", i);
      FZ_CHECK(G.stat_index.emplace(buf[i].name, i).second, "statistic %s listed twice",
               buf[i].name);
      G.stat_names.emplace_back(buf[i].name);
    }
  }
  StatView out;
  out.device = d;
  out.v.resize(n);
  for (size_t i = 0; i < n; ++i) {
    FZ_CHECK(buf[i].name != nullptr && G.stat_names[i] == buf[i].name,
             "statistic %zu is %s, was %s", i, buf[i].name ? buf[i].name : "NULL",
             G.stat_names[i].c_str());
    out.v[i] = buf[i].value;
  }
  return out;
}

const char* const kStatKinds[] = {
    "allocation",      "segment",        "active",       "inactive_split",
    "allocated_bytes", "reserved_bytes", "active_bytes", "inactive_split_bytes",
    "requested_bytes"};

// The statistics against the model and against each other.
void check_stats(const StatView& s) {
  const int32_t d = s.device;
  const auto live = static_cast<int64_t>(live_count(d));
  const auto used = static_cast<int64_t>(used_bytes(d));
  const int64_t allocated = s["allocated_bytes.all.current"];
  const int64_t reserved = s["reserved_bytes.all.current"];
  FZ_CHECK(s["allocation.all.current"] == live,
           "device %d: allocation.all.current %" PRId64 ", model %" PRId64 " live", d,
           s["allocation.all.current"], live);
  FZ_CHECK(s["requested_bytes.all.current"] == used,
           "device %d: requested_bytes.all.current %" PRId64 ", model %" PRId64, d,
           s["requested_bytes.all.current"], used);
  FZ_CHECK(allocated >= used && allocated <= reserved,
           "device %d: allocated_bytes %" PRId64 " not in [requested %" PRId64 ", reserved %" PRId64
           "]",
           d, allocated, used, reserved);
  FZ_CHECK(reserved <= static_cast<int64_t>(kSimMemory),
           "device %d: reserved_bytes %" PRId64 " above the device's memory", d, reserved);
  FZ_CHECK(s["active.all.current"] >= live && s["active_bytes.all.current"] >= allocated &&
               s["active_bytes.all.current"] <= reserved,
           "device %d: active %" PRId64 " / %" PRId64
           " bytes below the allocated blocks or "
           "above reserved",
           d, s["active.all.current"], s["active_bytes.all.current"]);
  FZ_CHECK((s["segment.all.current"] > 0) == (reserved > 0) && (live == 0 || reserved > 0),
           "device %d: %" PRId64 " segments, %" PRId64 " bytes reserved, %" PRId64 " live", d,
           s["segment.all.current"], reserved, live);
  for (const char* kind : kStatKinds) {
    const std::string k = kind;
    for (const char* pool : {".all", ".small_pool", ".large_pool"}) {
      int64_t cur = s[k + pool + ".current"], peak = s[k + pool + ".peak"];
      FZ_CHECK(cur >= 0 && peak >= cur, "device %d: %s%s current %" PRId64 ", peak %" PRId64, d,
               kind, pool, cur, peak);
    }
    FZ_CHECK(s[k + ".all.current"] == s[k + ".small_pool.current"] + s[k + ".large_pool.current"],
             "device %d: %s.all.current is not small_pool + large_pool", d, kind);
  }
  if (G.caching) {
    FZ_CHECK(reserved % static_cast<int64_t>(kMinBlock) == 0 &&
                 allocated % static_cast<int64_t>(kMinBlock) == 0,
             "device %d: reserved_bytes %" PRId64 " or allocated_bytes %" PRId64
             " is not whole blocks",
             d, reserved, allocated);
  } else {
    // One vendor allocation per live accel_malloc, of exactly its size.
    FZ_CHECK(allocated == used && reserved == used && s["segment.all.current"] == live &&
                 s["active.all.current"] == live && s["inactive_split.all.current"] == 0,
             "device %d: backend:native statistics are not one segment per allocation", d);
  }
}

// accel_memory_snapshot of device `d` (two calls: length, then the text),
// parsed as JSON.
nlohmann::json fetch_snapshot(int32_t d) {
  size_t len = 0;
  accel_status_t st = accel_memory_snapshot(d, nullptr, 0, &len);
  FZ_CHECK(st == ACCEL_SUCCESS && len > 0, "accel_memory_snapshot(%d) length query: %s, %zu", d,
           accel_status_name(st), len);
  std::string buf(len + 16, '\x7f');
  size_t len2 = 0;
  st = accel_memory_snapshot(d, buf.data(), len + 1, &len2);
  // One thread, nothing queued that allocates: the snapshot cannot grow.
  FZ_CHECK(st == ACCEL_SUCCESS && len2 == len,
           "accel_memory_snapshot(%d) with %zu bytes: %s, length %zu", d, len + 1,
           accel_status_name(st), len2);
  FZ_CHECK(buf[len] == '\0' && std::strlen(buf.c_str()) == len && buf[len + 1] == '\x7f',
           "snapshot of %zu bytes not NUL-terminated where it says, or written past", len);
  nlohmann::json j = nlohmann::json::parse(buf.data(), buf.data() + len, nullptr, false);
  FZ_CHECK(!j.is_discarded() && j.is_object(), "snapshot of device %d is not a JSON object", d);
  return j;
}

std::string stream_text(accel_stream_t h) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%" PRIxPTR, reinterpret_cast<uintptr_t>(h));
  return b;
}

// The snapshot against its schema (docs/memory.md), the statistics and the
// model; returns the bytes of the segments that hold a live allocation
// (what stays reserved once the cache is emptied).
size_t check_snapshot(int32_t d, const nlohmann::json& j) {
  auto u64 = [&](const nlohmann::json& o, const char* key) -> uint64_t {
    FZ_CHECK(o.is_object() && o.contains(key) && o[key].is_number_unsigned(),
             "snapshot of device %d: \"%s\" missing or not an unsigned number", d, key);
    return o[key].get<uint64_t>();
  };
  auto str = [&](const nlohmann::json& o, const char* key) -> std::string {
    FZ_CHECK(o.is_object() && o.contains(key) && o[key].is_string(),
             "snapshot of device %d: \"%s\" missing or not a string", d, key);
    return o[key].get<std::string>();
  };
  FZ_CHECK(u64(j, "schema_version") == 1, "schema_version is not 1");
  FZ_CHECK(str(j, "backend") == "sim", "backend is not sim");
  FZ_CHECK(j.contains("device") && j["device"] == d, "device is not %d", d);
  FZ_CHECK(str(j, "allocator") == accel_get_allocator_backend(), "allocator is not %s",
           accel_get_allocator_backend());
  str(j, "config");
  FZ_CHECK(u64(j, "capacity") == kSimMemory, "capacity %" PRIu64, u64(j, "capacity"));
  const StatView s = read_stats(d);
  FZ_CHECK(
      j.contains("stats") && j["stats"].is_object() && j["stats"].size() == G.stat_names.size(),
      "snapshot stats: not an object of %zu statistics", G.stat_names.size());
  for (size_t i = 0; i < G.stat_names.size(); ++i) {
    const auto& v = j["stats"][G.stat_names[i]];
    FZ_CHECK(v.is_number_integer() && v.get<int64_t>() == s.v[i],
             "snapshot stats.%s differs from accel_memory_stats_list (%" PRId64 ")",
             G.stat_names[i].c_str(), s.v[i]);
  }
  FZ_CHECK(j.contains("segments") && j["segments"].is_array(), "segments is not an array");
  struct Live {
    uint64_t requested;
    std::string stream;
  };
  std::map<uint64_t, Live> live;
  uint64_t reserved = 0, allocated = 0, active = 0, requested = 0, blocks_live = 0;
  uint64_t live_reserved = 0, prev_end = 0;
  for (const auto& seg : j["segments"]) {
    const uint64_t base = u64(seg, "address"), total = u64(seg, "total_size");
    const std::string sstream = str(seg, "stream"), type = str(seg, "segment_type");
    FZ_CHECK(base >= prev_end, "segment %#" PRIx64 " overlaps the one before", base);
    prev_end = base + total;
    // Small: 2 MiB, or the exact block on a nearly full device; large: more
    // than 1 MiB. backend:native: the size of the one allocation decides.
    FZ_CHECK(G.caching ? ((type == "small" && total <= kSmallSegment) ||
                          (type == "large" && total > kSmallRequest))
                       : type == (total <= kSmallRequest ? "small" : "large"),
             "segment %#" PRIx64 " of %" PRIu64 " bytes is \"%s\"", base, total, type.c_str());
    FZ_CHECK(G.caching ? !sstream.empty() : sstream.empty(), "segment %#" PRIx64 ": stream \"%s\"",
             base, sstream.c_str());
    FZ_CHECK(seg.contains("blocks") && seg["blocks"].is_array() && !seg["blocks"].empty(),
             "segment %#" PRIx64 " has no blocks", base);
    uint64_t at = base, s_alloc = 0, s_active = 0, s_req = 0;
    for (const auto& b : seg["blocks"]) {
      const uint64_t addr = u64(b, "address"), size = u64(b, "size"),
                     req = u64(b, "requested_size");
      const std::string state = str(b, "state");
      FZ_CHECK(addr == at && size > 0,
               "segment %#" PRIx64 ": block at %#" PRIx64 " of %" PRIu64
               " bytes, expected one at %#" PRIx64,
               base, addr, size, at);
      at += size;
      if (state == "active_allocated") {
        FZ_CHECK(req > 0 && req <= size, "block %#" PRIx64 ": requested %" PRIu64 " of %" PRIu64,
                 addr, req, size);
        s_alloc += size;
        s_req += req;
        s_active += size;
        ++blocks_live;
        live[addr] = Live{req, sstream};
      } else if (state == "active_pending_free") {
        FZ_CHECK(G.caching && req == 0, "block %#" PRIx64 ": pending free", addr);
        s_active += size;
      } else {
        FZ_CHECK(G.caching && state == "inactive" && req == 0, "block %#" PRIx64 ": state %s", addr,
                 state.c_str());
      }
    }
    FZ_CHECK(at == base + total,
             "segment %#" PRIx64 ": blocks cover %" PRIu64 " of %" PRIu64 " bytes", base, at - base,
             total);
    FZ_CHECK(u64(seg, "allocated_size") == s_alloc && u64(seg, "active_size") == s_active &&
                 u64(seg, "requested_size") == s_req,
             "segment %#" PRIx64 ": sizes disagree with its blocks", base);
    reserved += total;
    allocated += s_alloc;
    active += s_active;
    requested += s_req;
    if (s_alloc > 0) live_reserved += total;
  }
  FZ_CHECK(static_cast<int64_t>(reserved) == s["reserved_bytes.all.current"] &&
               static_cast<int64_t>(allocated) == s["allocated_bytes.all.current"] &&
               static_cast<int64_t>(active) == s["active_bytes.all.current"] &&
               static_cast<int64_t>(requested) == s["requested_bytes.all.current"] &&
               static_cast<int64_t>(blocks_live) == s["allocation.all.current"] &&
               static_cast<int64_t>(j["segments"].size()) == s["segment.all.current"],
           "device %d: segments and blocks disagree with the statistics", d);
  // Every live allocation of the model, and nothing else, is a block.
  FZ_CHECK(blocks_live == live_count(d), "device %d: %" PRIu64 " allocated blocks, model %" PRIu64,
           d, blocks_live, live_count(d));
  for (const auto& [base, a] : M.allocs) {
    if (a.device != d) continue;
    auto it = live.find(base);
    FZ_CHECK(it != live.end() && it->second.requested == a.bytes,
             "allocation %#" PRIxPTR " (%zu bytes) is not an allocated block of the snapshot", base,
             a.bytes);
    if (G.caching) {
      const Stream* owner = stream_by_serial(a.owner);
      FZ_CHECK(owner != nullptr && it->second.stream == stream_text(owner->h),
               "allocation %#" PRIxPTR ": its segment belongs to stream %s, model %s", base,
               it->second.stream.c_str(), owner ? stream_text(owner->h).c_str() : "none");
    }
  }
  FZ_CHECK(j.contains("history") && j["history"].is_object(), "history is not an object");
  const auto& h = j["history"];
  const uint64_t max_entries = u64(h, "max_entries");
  u64(h, "dropped");
  FZ_CHECK(h.contains("events") && h["events"].is_array() && h["events"].size() <= max_entries,
           "history: %zu events, max_entries %" PRIu64, h["events"].size(), max_entries);
  if (!G.caching)
    FZ_CHECK(max_entries == 0, "backend:native keeps a history of %" PRIu64, max_entries);
  else if (G.touched[static_cast<size_t>(d)])
    FZ_CHECK(max_entries == M.history, "history max_entries %" PRIu64 ", set to %zu", max_entries,
             M.history);
  static const std::set<std::string> kActions = {
      "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "empty_cache",
      "oom"};
  for (const auto& e : h["events"]) {
    FZ_CHECK(kActions.count(str(e, "action")) == 1, "history action %s", str(e, "action").c_str());
    u64(e, "address");
    u64(e, "size");
    str(e, "stream");
    str(e, "caller");
    FZ_CHECK(e.contains("time_us") && e["time_us"].is_number_integer(), "time_us");
  }
  return live_reserved;
}

// --- gates ------------------------------------------------------------------------------------
// A gate is a host function that blocks its stream until release_gates():
// work queued behind it stays queued, so a block the allocator handed out
// again too early is overwritten later by that work, and op_verify sees it.
// Every operation that may wait for a stream opens the gates first (a
// bounded wait flags the harness bug instead of hanging).
std::mutex g_gate_mu;
std::condition_variable g_gate_cv;
uint64_t g_gate_epoch = 0;  // under g_gate_mu; a gate waits for it to pass its launch epoch
std::atomic<uint64_t> g_gate_timeouts{0};
uint64_t g_gates_closed = 0;  // launched since the last release (harness thread only)

void hostfn_gate(void* user) {
  const auto epoch = reinterpret_cast<uintptr_t>(user);
  {
    std::unique_lock lock(g_gate_mu);
    if (!g_gate_cv.wait_for(lock, std::chrono::seconds(3), [&] { return g_gate_epoch > epoch; }))
      g_gate_timeouts.fetch_add(1);
  }
  g_hostfn_ran.fetch_add(1);
}

void release_gates() {
  if (g_gates_closed == 0) return;
  {
    std::lock_guard lock(g_gate_mu);
    ++g_gate_epoch;
  }
  g_gate_cv.notify_all();
  g_gates_closed = 0;
}

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
  for (int32_t d = 0; d < G.n; ++d) check_stats(read_stats(d));
  FZ_CHECK(g_hostfn_bad.load() == 0, "a host function saw a broken invariant");
  FZ_CHECK(g_gate_timeouts.load() == 0,
           "a gate was closed for 3 s: an operation waited for a stream the harness blocked");
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
  // The stream-ordered caching allocator (appended: older inputs keep
  // their meaning).
  OP_MALLOC_ASYNC,
  OP_FREE_ASYNC,
  OP_FREE_ORDERED,
  OP_RECORD_STREAM,
  OP_EMPTY_CACHE,
  OP_STATS_LIST,
  OP_SNAPSHOT,
  OP_HISTORY,
  OP_GATE,
  OP_RELEASE_GATES,
  // Modules and kernels (appended).
  OP_MODULE_LOAD,
  OP_MODULE_UNLOAD,
  OP_LAUNCH,
  // Graphs (appended).
  OP_CAPTURE,
  OP_GRAPH_REPLAY,
  OP_GRAPH_DESTROY,
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
    "verify",         "thread",          "malloc_async",   "free_async",
    "free_ordered",   "record_stream",   "empty_cache",    "stats_list",
    "snapshot",       "history",         "gate",           "release_gates",
    "module_load",    "module_unload",   "launch",         "capture",
    "graph_replay",   "graph_destroy"};

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
  release_gates();
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
  release_gates();  // destroy drains the stream
  if (expect(accel_stream_destroy(s), ok) == ACCEL_SUCCESS) {
    uint64_t serial = m->serial;
    const int32_t dev = m->device;
    // Destroy returns at once (accel.h, as cudaStreamDestroy): the stream's
    // queued work still runs, so memory it touches stays pending on its
    // serial until the device is synchronized (synced_device). Modelling
    // destroy as a drain made seed-alloc-destroy fail about 1 run in 30: a
    // memset on the destroyed stream landed after the default stream's.
    // Its blocks, live or cached, now belong to the device's default stream
    // and stay valid.
    bool owned = false;
    for (auto& [b, a] : M.allocs) {
      a.recorded.erase(serial);
      if (a.owner == serial) {
        a.owner = G.defaults[static_cast<size_t>(dev)].serial;
        owned = true;
      }
    }
    M.streams.erase(M.streams.begin() + (m - M.streams.data()));
    bury(M.dead_streams, s);
    if (owned && G.caching) (void)check_snapshot(dev, fetch_snapshot(dev));
  }
}

void op_stream_query_sync(Input& in, bool sync) {
  accel_stream_t s = pick_stream(in);
  const Stream* m = s ? stream_by_handle(s) : nullptr;
  Allowed ok = m ? (sync ? Allowed{ACCEL_SUCCESS} : Allowed{ACCEL_SUCCESS, ACCEL_ERROR_NOT_READY})
                 : Allowed{ACCEL_ERROR_INVALID_ARGUMENT};
  if (sync) release_gates();
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
  if (sync) release_gates();
  expect(sync ? accel_event_synchronize(e) : accel_event_query(e), ok);
}

void op_event_elapsed(Input& in) {
  accel_event_t a = pick_event(in);
  accel_event_t b = (in.u8() % 4) == 0 ? a : pick_event(in);
  bool null_out = (in.u8() % 8) == 0;
  if (in.flag() && a && b) {  // often: make both complete first
    release_gates();
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

// What an allocation of `bytes` (> 0) on device `t` may answer. Under
// backend:native it is exact (one vendor allocation of exactly `bytes`).
// The caching allocator rounds and allocates whole segments, so it must
// fail only when no block of the rounded size can fit beside the live ones,
// and must succeed when a new segment fits beside everything reserved, or
// when the block alone fits once its out-of-memory retry has returned every
// segment without a live block (the retry ends with a segment of exactly
// the rounded request). In between either answer is right.
Allowed alloc_outcome(int32_t t, size_t bytes) {
  const size_t used = used_bytes(t);
  if (!G.caching) {
    return bytes > kSimMemory - used ? Allowed{ACCEL_ERROR_OUT_OF_MEMORY} : Allowed{ACCEL_SUCCESS};
  }
  const auto reserved = static_cast<size_t>(read_stats(t)["reserved_bytes.all.current"]);
  // Unless a new segment fits beside everything reserved (or a cached block
  // serves the request), the allocator's out-of-memory retry waits for
  // pending frees and the device, also for a request that cannot succeed:
  // no gate may block it.
  if (bytes > kSimMemory || segment_for(round_block(bytes)) > kSimMemory - reserved)
    release_gates();
  if (bytes > kSimMemory - used) return {ACCEL_ERROR_OUT_OF_MEMORY};
  size_t live_blocks = 0;
  for (auto& [b, a] : M.allocs)
    if (a.device == t) live_blocks += round_block(a.bytes);
  const size_t rounded = round_block(bytes);
  if (rounded > kSimMemory - live_blocks) return {ACCEL_ERROR_OUT_OF_MEMORY};
  const size_t segment = segment_for(rounded);
  if (segment <= kSimMemory - reserved) return {ACCEL_SUCCESS};
  const size_t kept = check_snapshot(t, fetch_snapshot(t));
  if (rounded <= kSimMemory - kept) return {ACCEL_SUCCESS};
  return {ACCEL_SUCCESS, ACCEL_ERROR_OUT_OF_MEMORY};
}

// A new allocation `p` of `bytes` on `t`, belonging to stream `owner`.
void add_alloc(void* p, size_t bytes, int32_t t, uint64_t owner) {
  FZ_CHECK(p != nullptr, "no pointer returned");
  auto base = reinterpret_cast<uintptr_t>(p);
  FZ_CHECK(base % 256 == 0, "allocation %p is not aligned to 256 bytes", p);
  FZ_CHECK(find_alloc(p) == nullptr &&
               (M.allocs.empty() || M.allocs.lower_bound(base) == M.allocs.end() ||
                M.allocs.lower_bound(base)->first >= base + bytes),
           "allocation %p (+%zu) overlaps a live one", p, bytes);
  Alloc a;
  a.base = base;
  a.bytes = bytes;
  a.device = t;
  a.known = false;  // fresh device memory has no defined contents
  a.owner = owner;
  // A cached block is reused at once by its stream: work queued there
  // before (for the block's previous owner) may still be writing it, so
  // other streams race with the owner until they are ordered after it.
  if (G.caching) a.pending.insert(owner);
  M.allocs.emplace(base, std::move(a));
  M.freed.erase(std::remove(M.freed.begin(), M.freed.end(), base), M.freed.end());
  ++G.total_allocations[static_cast<size_t>(t)];
}

void forget_alloc(Alloc* a) {
  if (M.freed.size() >= kMaxGrave) M.freed.erase(M.freed.begin());
  M.freed.push_back(a->base);
  M.allocs.erase(a->base);
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
  if (ok.mask == 0) ok = alloc_outcome(t, bytes);
  accel_status_t st = expect(accel_malloc(d, bytes, null_out ? nullptr : &p), ok);
  if (st == ACCEL_SUCCESS || st == ACCEL_ERROR_OUT_OF_MEMORY)
    G.touched[static_cast<size_t>(t)] = true;
  if (st != ACCEL_SUCCESS) {
    FZ_CHECK(p == sentinel, "ptr written on failure");
    return;
  }
  // accel_malloc: the calling thread's current stream of the device.
  add_alloc(p, bytes, t, M.cur_stream[static_cast<size_t>(t)]);
}

void op_malloc_async(Input& in) {
  accel_stream_t s = pick_stream(in);
  size_t bytes = pick_size(in);
  bool null_out = (in.u8() % 16) == 0;
  const Stream* ms = s ? stream_by_handle(s) : nullptr;
  const bool dead = s != nullptr && ms == nullptr;
  // NULL: the current stream of the current device.
  const int32_t t = ms ? ms->device : M.cur_device;
  const uint64_t owner = ms ? ms->serial : M.cur_stream[static_cast<size_t>(M.cur_device)];
  if (M.allocs.size() >= kMaxAllocs && !null_out && bytes != 0 && !dead) return;
  void* const sentinel = reinterpret_cast<void*>(uintptr_t{0xa5a5c});
  void* p = sentinel;
  Allowed ok;
  if (null_out || bytes == 0 || dead) ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  if (ok.mask == 0) ok = alloc_outcome(t, bytes);
  accel_status_t st = expect(accel_malloc_async(bytes, s, null_out ? nullptr : &p), ok);
  if (st == ACCEL_SUCCESS || st == ACCEL_ERROR_OUT_OF_MEMORY)
    G.touched[static_cast<size_t>(t)] = true;
  if (st != ACCEL_SUCCESS) {
    FZ_CHECK(p == sentinel, "ptr written on failure");
    return;
  }
  add_alloc(p, bytes, t, owner);
}

// Before `a` is freed: every stream that may still use it must be one the
// free waits for. With the caching allocator those are the block's own
// stream, `also` (accel_free_async's) and the streams named with
// accel_record_stream; any other is named now (same device, `how` bit 0
// clear) or waited for (a stream of another device cannot be named: a peer
// copy). backend:native frees at once: wait for all of them except `also`,
// which accel_free_async waits for itself.
void sync_all();
void cover_pending(Alloc& a, uint64_t also, uint8_t how) {
  const std::set<uint64_t> pending = a.pending;  // synced_stream edits it
  for (uint64_t serial : pending) {
    if (serial == also) continue;
    if (G.caching && (serial == a.owner || a.recorded.count(serial) != 0)) continue;
    const Stream* s = stream_by_serial(serial);
    if (s == nullptr) {
      // A destroyed stream's work (on this device or, for a peer copy,
      // another): only synchronizing its device waits for it.
      sync_all();
      continue;
    }
    if (G.caching && s->device == a.device && (how & 1) == 0) {
      expect(accel_record_stream(reinterpret_cast<void*>(a.base), s->h), {ACCEL_SUCCESS});
      a.recorded.insert(serial);
    } else {
      release_gates();
      expect(accel_stream_synchronize(s->h), {ACCEL_SUCCESS});
      synced_stream(serial);
    }
    how = static_cast<uint8_t>(how >> 1);
  }
}

// accel_free. `ordered` (op free_ordered): with the caching allocator, free
// in stream order after naming the other streams that used the memory, as
// a program that relies on it does; else (op free, and backend:native)
// wait for every device first.
void op_free(Input& in, bool ordered) {
  uint8_t stack_buf[64];
  void* p = pick_device_ptr(in, stack_buf);
  const uint8_t how = ordered ? in.u8() : 0;
  Alloc* a = p ? find_alloc(p) : nullptr;
  bool exact = a && a->base == reinterpret_cast<uintptr_t>(p);
  Allowed ok =
      (p == nullptr || exact) ? Allowed{ACCEL_SUCCESS} : Allowed{ACCEL_ERROR_INVALID_ARGUMENT};
  if (exact) {
    if (!G.caching || !ordered) {
      // The caller must make sure no queued work still uses it: a peer copy
      // may use it from a stream of another device, so wait for them all.
      release_gates();
      for (int32_t d = 0; d < accel_device_count(); ++d) {
        expect(accel_synchronize(d), {ACCEL_SUCCESS});
        synced_device(d);
      }
    } else {
      // Stream-ordered: only the streams other than its own matter.
      cover_pending(*a, 0, how);
    }
  }
  if (expect(accel_free(p), ok) == ACCEL_SUCCESS && exact) forget_alloc(a);
}

void op_free_async(Input& in) {
  uint8_t stack_buf[64];
  void* p = pick_device_ptr(in, stack_buf);
  accel_stream_t s = pick_stream(in);
  uint8_t how = in.u8();
  const Stream* ms = s ? stream_by_handle(s) : nullptr;
  const bool dead = s != nullptr && ms == nullptr;
  Alloc* a = p ? find_alloc(p) : nullptr;
  const bool exact = a && a->base == reinterpret_cast<uintptr_t>(p);
  Allowed ok;
  if (dead) {
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  } else if (p != nullptr) {
    if (!exact) ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
    // Of another device than the memory: NULL means the memory's device.
    if (a && ms && ms->device != a->device) ok.add(ACCEL_ERROR_DEVICE_MISMATCH);
  }
  if (ok.mask == 0) ok.add(ACCEL_SUCCESS);
  if (ok.has(ACCEL_SUCCESS) && exact) {
    const uint64_t serial = ms ? ms->serial : M.cur_stream[static_cast<size_t>(a->device)];
    cover_pending(*a, serial, how);
    // backend:native waits for the stream before it frees.
    if (!G.caching) release_gates();
  }
  if (expect(accel_free_async(p, s), ok) == ACCEL_SUCCESS && exact) {
    if (!G.caching) {
      const uint64_t serial = ms ? ms->serial : M.cur_stream[static_cast<size_t>(a->device)];
      synced_stream(serial);
    }
    forget_alloc(a);
  }
}

void op_record_stream(Input& in) {
  uint8_t stack_buf[64];
  void* p = pick_device_ptr(in, stack_buf);
  accel_stream_t s = pick_stream(in);
  const Stream* ms = s ? stream_by_handle(s) : nullptr;
  Alloc* a = p ? find_alloc(p) : nullptr;  // any pointer inside a live allocation
  Allowed ok;
  if (a == nullptr || (s != nullptr && ms == nullptr)) ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  if (a && ms && ms->device != a->device) ok.add(ACCEL_ERROR_DEVICE_MISMATCH);
  if (ok.mask == 0) ok.add(ACCEL_SUCCESS);
  if (expect(accel_record_stream(p, s), ok) == ACCEL_SUCCESS) {
    const uint64_t serial = ms ? ms->serial : M.cur_stream[static_cast<size_t>(a->device)];
    if (serial != a->owner) a->recorded.insert(serial);
  }
}

void op_empty_cache(Input& in) {
  int32_t d = pick_device(in);
  int32_t t = resolve(d);
  Allowed ok = t < 0 ? Allowed{ACCEL_ERROR_INVALID_DEVICE} : Allowed{ACCEL_SUCCESS};
  release_gates();  // it waits for pending frees and the device
  const StatView before = t >= 0 ? read_stats(t) : StatView{};
  if (expect(accel_empty_cache(d), ok) != ACCEL_SUCCESS) return;
  const StatView after = read_stats(t);
  const nlohmann::json j = fetch_snapshot(t);
  const size_t kept = check_snapshot(t, j);
  if (G.caching) {
    // What is left is exactly the segments that hold a live allocation.
    FZ_CHECK(static_cast<int64_t>(kept) == after["reserved_bytes.all.current"],
             "device %d: %" PRId64
             " bytes reserved after accel_empty_cache, %zu hold live "
             "allocations",
             t, after["reserved_bytes.all.current"], kept);
    FZ_CHECK(after["active.all.current"] == after["allocation.all.current"],
             "device %d: frees still pending after accel_empty_cache", t);
    const int64_t released = before["segment.all.current"] - after["segment.all.current"];
    FZ_CHECK(after["num_device_free"] - before["num_device_free"] == released,
             "device %d: %" PRId64 " segments fewer but num_device_free grew by %" PRId64, t,
             released, after["num_device_free"] - before["num_device_free"]);
  } else {
    FZ_CHECK(after.v == before.v, "device %d: accel_empty_cache changed backend:native's stats", t);
  }
  if (live_count(t) == 0)
    FZ_CHECK(after["reserved_bytes.all.current"] == 0 && after["segment.all.current"] == 0,
             "device %d: nothing live, yet %" PRId64 " bytes stay reserved after accel_empty_cache",
             t, after["reserved_bytes.all.current"]);
}

void op_stats_list(Input& in) {
  int32_t d = pick_device(in);
  const uint8_t mode = in.u8() % 8;
  const int32_t t = resolve(d);
  const size_t n = G.stat_names.size();
  if (mode == 7) {  // reset the accumulated counters, then check them
    Allowed ok = t < 0 ? Allowed{ACCEL_ERROR_INVALID_DEVICE} : Allowed{ACCEL_SUCCESS};
    if (expect(accel_reset_accumulated_memory_stats(d), ok) != ACCEL_SUCCESS) return;
    const StatView s = read_stats(t);
    for (size_t i = 0; i < n; ++i) {
      const std::string& name = G.stat_names[i];
      const bool accumulated =
          name.ends_with(".allocated") || name.ends_with(".freed") || (name.starts_with("num_"));
      if (accumulated)
        FZ_CHECK(s.v[i] == 0, "%s is %" PRId64 " after accel_reset_accumulated_memory_stats",
                 name.c_str(), s.v[i]);
    }
    return;
  }
  size_t capacity = 0;
  bool null_stats = false, null_count = false;
  switch (mode) {
    case 0:
      null_count = true;
      capacity = n;
      break;
    case 1:
      null_stats = true;
      capacity = 1 + in.u8();
      break;
    case 2:
      null_stats = true;
      capacity = 0;
      break;  // the count query
    case 3:
      capacity = in.u8() % (n + 1);
      break;  // fewer than there are
    case 4:
      capacity = n + 1 + in.u8() % 8;
      break;  // more than there are
    default:
      capacity = n;
      break;
  }
  constexpr int64_t kUnset = -4242;
  std::vector<accel_memory_stat_t> buf(std::max(capacity, size_t{1}) + 4,
                                       accel_memory_stat_t{nullptr, kUnset});
  size_t count = 777777;
  Allowed ok;
  if (null_count || (null_stats && capacity > 0)) ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  if (t < 0) ok.add(ACCEL_ERROR_INVALID_DEVICE);
  if (ok.mask == 0) ok.add(ACCEL_SUCCESS);
  accel_status_t st = expect(accel_memory_stats_list(d, null_stats ? nullptr : buf.data(), capacity,
                                                     null_count ? nullptr : &count),
                             ok);
  const size_t written = st == ACCEL_SUCCESS && !null_stats ? std::min(capacity, n) : 0;
  if (st == ACCEL_SUCCESS) {
    FZ_CHECK(count == n, "count %zu, expected %zu", count, n);
  } else {
    FZ_CHECK(count == 777777, "count written on failure");
  }
  for (size_t i = 0; i < buf.size(); ++i) {
    if (i < written) {
      FZ_CHECK(buf[i].name != nullptr && G.stat_names[i] == buf[i].name,
               "statistic %zu is %s, expected %s", i, buf[i].name ? buf[i].name : "NULL",
               G.stat_names[i].c_str());
    } else {
      FZ_CHECK(buf[i].name == nullptr && buf[i].value == kUnset,
               "entry %zu written (capacity %zu, %zu statistics, %s)", i, capacity, n,
               accel_status_name(st));
    }
  }
}

void op_snapshot(Input& in) {
  int32_t d = pick_device(in);
  const uint8_t mode = in.u8() % 8;
  const int32_t t = resolve(d);
  if (mode >= 3) {
    if (t < 0) {
      size_t len = 5555;
      expect(accel_memory_snapshot(d, nullptr, 0, &len), {ACCEL_ERROR_INVALID_DEVICE});
      FZ_CHECK(len == 5555, "length written on failure");
      return;
    }
    (void)check_snapshot(t, fetch_snapshot(t));
    return;
  }
  std::vector<char> buf(64, '\x7f');
  size_t len = 5555;
  switch (mode) {
    case 0:
      expect(accel_memory_snapshot(d, buf.data(), buf.size(), nullptr),
             {ACCEL_ERROR_INVALID_ARGUMENT});
      break;
    case 1:
      expect(accel_memory_snapshot(d, nullptr, 1 + in.u8(), &len), {ACCEL_ERROR_INVALID_ARGUMENT});
      FZ_CHECK(len == 5555, "length written on failure");
      break;
    default: {  // too small: nothing written, the length needed said
      if (t < 0) return;
      size_t need = 0;
      expect(accel_memory_snapshot(d, nullptr, 0, &need), {ACCEL_SUCCESS});
      size_t cap = std::min<size_t>(need, 1 + in.u8() % 32);  // <= need: no room for the NUL
      buf.assign(need + 8, '\x7f');
      expect(accel_memory_snapshot(d, buf.data(), cap, &len), {ACCEL_ERROR_OUT_OF_RANGE});
      FZ_CHECK(len == need, "length %zu after OUT_OF_RANGE, expected %zu", len, need);
      break;
    }
  }
  for (size_t i = 0; i < buf.size(); ++i)
    FZ_CHECK(buf[i] == '\x7f', "snapshot byte %zu written on failure", i);
}

void op_history(Input& in) {
  size_t n = 0;
  switch (in.u8() % 8) {
    case 0:
      n = 0;
      break;
    case 1:
      n = 1;
      break;
    case 2:
      n = in.u8();
      break;
    case 3:
      n = size_t{1} << 24;
      break;
    case 4:
      n = (size_t{1} << 24) + 1;
      break;
    case 5:
      n = SIZE_MAX;
      break;
    default:
      n = in.u16();
      break;
  }
  Allowed ok =
      n > (size_t{1} << 24) ? Allowed{ACCEL_ERROR_INVALID_ARGUMENT} : Allowed{ACCEL_SUCCESS};
  if (expect(accel_record_memory_history(n), ok) == ACCEL_SUCCESS) M.history = n;
}

void op_gate(Input& in) {
  accel_stream_t s = pick_stream(in);
  // Host functions take no NULL stream (op_host_func covers that and dead
  // streams): NULL picks the current stream of the current device.
  if (s == nullptr) s = stream_by_serial(M.cur_stream[static_cast<size_t>(M.cur_device)])->h;
  if (stream_by_handle(s) == nullptr) return;
  if (g_gates_closed >= 4) return;
  uint64_t epoch = 0;
  {
    std::lock_guard lock(g_gate_mu);
    epoch = g_gate_epoch;
  }
  if (expect(accel_launch_host_func(s, hostfn_gate, reinterpret_cast<void*>(epoch)),
             {ACCEL_SUCCESS}) == ACCEL_SUCCESS) {
    ++g_hostfn_launched;
    ++g_gates_closed;
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
  size_t host_off = in.u32() % kHostSlack;
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
  auto in_heap = [&](const void* p) {
    auto v = reinterpret_cast<uintptr_t>(p);
    auto b = reinterpret_cast<uintptr_t>(G.heap.data());
    return v >= b && v < b + G.heap.size();
  };
  // A pageable copy may wait for its stream (staged H2D waits when the ring
  // is full; D2H and large H2D always do).
  if ((!dst_dev && in_heap(dst)) || (!src_dev && in_heap(src))) release_gates();
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
    // And every peak of accel_memory_stats_list.
    const StatView s = read_stats(t);
    for (size_t i = 0; i < G.stat_names.size(); ++i) {
      const std::string& name = G.stat_names[i];
      if (!name.ends_with(".peak")) continue;
      const std::string cur = name.substr(0, name.size() - 5) + ".current";
      FZ_CHECK(s.v[i] == s[cur], "%s is %" PRId64 " after the reset, current %" PRId64,
               name.c_str(), s.v[i], s[cur]);
    }
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
  release_gates();
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

// --- modules and kernels ---------------------------------------------------------------------
// Images are hostile (garbage, sim's real host object cut short, wrong
// formats, NULL and empty images, compiler options sim refuses) and so are
// launches (dead kernels, bad configs, streams of other devices, argument
// arrays of the wrong count, kind and size). A launch that passes every
// check runs `empty`, whose small grids the harness keeps small: a sim
// module is host code, so the harness never runs a kernel with arguments
// it could not vouch for.
struct LoadedModule {
  accel_module_t h;
  int32_t device;
  std::vector<accel_kernel_t> kernels;  // "empty" first, then "vector_add"
};
std::vector<LoadedModule> g_modules;
std::vector<accel_module_t> g_dead_modules;
std::vector<accel_kernel_t> g_dead_kernels;
constexpr size_t kMaxModules = 2;

const accel_module_image_t& sim_image() {
  static const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_SIM_HOST);
  FZ_CHECK(im != nullptr, "the build embeds no sim kernel image");
  return *im;
}

void forget_dead(std::vector<accel_module_t>& dead, accel_module_t h) {
  dead.erase(std::remove(dead.begin(), dead.end(), h), dead.end());
}
void forget_dead_kernel(accel_kernel_t h) {
  g_dead_kernels.erase(std::remove(g_dead_kernels.begin(), g_dead_kernels.end(), h),
                       g_dead_kernels.end());
}

void op_module_load(Input& in) {
  static const char kGarbage[] = "\x7f" "ELF but not really an ELF file at all";
  static const char kSource[] = "__kernel void empty(void) {}";
  const accel_module_image_t& real = sim_image();
  accel_module_image_t images[3];
  size_t count = in.u8() % 4;
  bool valid = count > 0;  // every image well-formed for the core's checks
  bool any_sim = false;
  bool intact = false;  // an intact sim image comes before any success
  for (size_t i = 0; i < count; ++i) {
    accel_module_image_t& im = images[i];
    switch (in.u8() % 8) {
      case 0:
      case 1:
        im = real;
        break;
      case 2:
      case 3: {
        im = real;  // cut short: never past the end
        im.size = std::min<size_t>(real.size - 1, in.u32() % real.size);
        if (im.size == 0) valid = false;
        break;
      }
      case 4:
        im = {ACCEL_MODULE_FORMAT_SIM_HOST, kGarbage, 1 + in.u8() % (sizeof kGarbage - 1)};
        break;
      case 5:
        im = {ACCEL_MODULE_FORMAT_OPENCL_C, kSource, sizeof kSource - 1};
        break;
      case 6:
        im = {static_cast<accel_module_format_t>(in.u8() % 12), real.data, real.size};
        if (static_cast<unsigned>(im.format) >= ACCEL_MODULE_FORMAT_COUNT) valid = false;
        break;
      default:
        im = {ACCEL_MODULE_FORMAT_SIM_HOST, in.flag() ? nullptr : real.data, 0};
        valid = false;
        break;
    }
    if (im.format == ACCEL_MODULE_FORMAT_SIM_HOST && im.data != nullptr && im.size > 0) {
      any_sim = true;
      if (im.data == real.data && im.size == real.size) intact = true;
    }
  }
  const bool with_options = in.u8() % 8 == 0;
  const bool null_out = in.u8() % 16 == 0;
  int32_t d = in.u8() % 8 == 0 ? pick_device(in) : -1;
  int32_t t = resolve(d);
  Allowed ok;
  if (null_out || !valid)
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  else if (t < 0)
    ok.add(ACCEL_ERROR_INVALID_DEVICE);
  else if (!any_sim)
    ok.add(ACCEL_ERROR_NOT_SUPPORTED);
  else if (intact && !with_options)
    ok.add(ACCEL_SUCCESS);
  else {
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
    ok.add(ACCEL_ERROR_BUILD_FAILED);
  }
  if (ok.has(ACCEL_SUCCESS) && g_modules.size() >= kMaxModules) return;  // bounded
  accel_module_t m = nullptr;
  accel_status_t st = accel_module_load(d, count ? images : nullptr, count,
                                        with_options ? "-O2" : nullptr, null_out ? nullptr : &m);
  if (expect(st, ok) != ACCEL_SUCCESS) {
    FZ_CHECK(m == nullptr, "a failed accel_module_load wrote the module");
    return;
  }
  forget_dead(g_dead_modules, m);
  LoadedModule lm{m, t, {}};
  for (const char* name : {"empty", "vector_add"}) {
    accel_kernel_t k = nullptr;
    expect(accel_module_get_kernel(m, name, &k), {ACCEL_SUCCESS});
    forget_dead_kernel(k);
    lm.kernels.push_back(k);
  }
  accel_kernel_t k = nullptr;
  expect(accel_module_get_kernel(m, "no_such_kernel", &k), {ACCEL_ERROR_INVALID_ARGUMENT});
  FZ_CHECK(k == nullptr, "a failed accel_module_get_kernel wrote the kernel");
  g_modules.push_back(std::move(lm));
}

size_t graphs_holding(accel_module_t m);  // the graphs section below

void unload_module(size_t i) {
  release_gates();  // unloading waits for the device
  LoadedModule lm = g_modules[i];
  if (graphs_holding(lm.h) > 0) {  // refused while a graph holds one of its kernels
    expect(accel_module_unload(lm.h), {ACCEL_ERROR_INVALID_ARGUMENT});
    return;
  }
  g_modules.erase(g_modules.begin() + static_cast<std::ptrdiff_t>(i));
  expect(accel_module_unload(lm.h), {ACCEL_SUCCESS});
  g_dead_modules.push_back(lm.h);
  for (accel_kernel_t k : lm.kernels) g_dead_kernels.push_back(k);
}

void op_module_unload(Input& in) {
  if (!g_modules.empty() && in.u8() % 4 != 0) return unload_module(in.u8() % g_modules.size());
  accel_module_t dead = nullptr;
  if (!g_dead_modules.empty() && in.flag()) dead = g_dead_modules[in.u8() % g_dead_modules.size()];
  expect(accel_module_unload(dead), {ACCEL_ERROR_INVALID_ARGUMENT});
}

void op_launch(Input& in) {
  // The kernel: live (empty or vector_add), dead, or NULL.
  accel_kernel_t k = nullptr;
  const LoadedModule* lm = nullptr;
  bool is_empty = false;
  uint8_t pick = in.u8() % 8;
  if (pick < 6 && !g_modules.empty()) {
    lm = &g_modules[in.u8() % g_modules.size()];
    is_empty = pick < 4;
    k = lm->kernels[is_empty ? 0 : 1];
  } else if (pick == 6 && !g_dead_kernels.empty()) {
    k = g_dead_kernels[in.u8() % g_dead_kernels.size()];
  }
  accel_launch_config_t config;
  std::memset(&config, 0, sizeof config);
  config.struct_size = sizeof config;
  const uint8_t cfg = in.u8() % 16;
  bool config_ok = true;
  if (cfg == 0) {
    config.struct_size = in.u8() % sizeof config;
    config_ok = false;
  }
  const uint32_t big = UINT32_MAX;
  bool huge = false;
  switch (in.u8() % 8) {
    case 0:
      config.grid = {0, 1 + in.u8() % 4u, 1};  // nothing to run
      break;
    case 1:
      config.grid = {big, big, big};  // no device runs 2^96 blocks
      huge = true;
      break;
    default:
      config.grid = {1 + in.u8() % 8u, 1 + in.u8() % 4u, 1 + in.u8() % 2u};
      break;
  }
  bool block_ok = true;
  switch (in.u8() % 8) {
    case 0:
      config.block = {0, 1, 1};
      block_ok = false;
      break;
    case 1:
      config.block = {big, big, 2};  // over every thread limit
      block_ok = false;
      break;
    default:
      config.block = {1 + in.u8() % 8u, 1 + in.u8() % 4u, 1 + in.u8() % 2u};
      break;
  }
  config.stream = pick_stream(in);
  const Stream* ms = config.stream ? stream_by_handle(config.stream) : nullptr;
  // Arguments: none, or up to 5 with hostile kinds, sizes and values.
  uint8_t stack_buf[64] = {};
  accel_kernel_arg_t args[5] = {};
  size_t nargs = in.u8() % 6;
  const bool null_args = nargs > 0 && in.u8() % 16 == 0;
  bool other_device_ptr = false;
  for (size_t i = 0; i < nargs; ++i) {
    auto kind = static_cast<accel_kernel_arg_kind_t>(in.u8() % 4 == 3 ? 7 : in.u8() % 3);
    size_t size = in.u8() % 4 == 0 ? pick_size(in) : (1u << (in.u8() % 4));
    const void* value = in.flag() ? stack_buf : nullptr;
    if (kind == ACCEL_KERNEL_ARG_DEVICE_POINTER) {
      value = pick_device_ptr(in, stack_buf);
      if (Alloc* a = find_alloc(value); a && lm && a->device != lm->device) other_device_ptr = true;
    }
    args[i] = {kind, size, value};
  }
  Allowed ok;
  if (lm == nullptr || !config_ok) {
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  } else if (config.stream != nullptr && ms == nullptr) {
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  } else if (ms != nullptr && ms->device != lm->device) {
    ok.add(ACCEL_ERROR_DEVICE_MISMATCH);
  } else if (!block_ok) {
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  } else if (nargs > 0 && (is_empty || nargs != 4 || null_args)) {
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);  // wrong count (or NULL array)
    if (other_device_ptr && !null_args) ok.add(ACCEL_ERROR_DEVICE_MISMATCH);
  } else if (!is_empty) {
    // vector_add with 4 hostile arguments: refused unless they happen to
    // be right, which the harness cannot vouch for: never let it run.
    // nargs is 0 or 4 here; with 0 the array was never filled.
    bool exact = nargs == 4;
    const accel_kernel_arg_kind_t want[] = {ACCEL_KERNEL_ARG_DEVICE_POINTER,
                                            ACCEL_KERNEL_ARG_DEVICE_POINTER,
                                            ACCEL_KERNEL_ARG_DEVICE_POINTER, ACCEL_KERNEL_ARG_VALUE};
    for (size_t i = 0; i < 4; ++i) exact = exact && args[i].kind == want[i];
    if (exact) return;
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
    if (other_device_ptr) ok.add(ACCEL_ERROR_DEVICE_MISMATCH);
  } else if (config.grid.x == 0) {
    ok.add(ACCEL_SUCCESS);
  } else if (huge) {
    ok.add(ACCEL_ERROR_INVALID_ARGUMENT);
  } else {
    ok.add(ACCEL_SUCCESS);
  }
  expect(accel_launch_kernel(k, cfg == 1 ? nullptr : &config, null_args ? nullptr : args, nargs),
         cfg == 1 ? Allowed{ACCEL_ERROR_INVALID_ARGUMENT} : ok);
}

void unload_all_modules() {
  while (!g_modules.empty()) unload_module(g_modules.size() - 1);
}

// --- graphs ----------------------------------------------------------------------------------
// A capture is one operation: begin on a picked stream (default, dead and
// NULL ones included) in a picked mode (an unknown one included), record
// memsets of the graph's own buffer, maybe a launch of `empty` and a host
// function, maybe a call the capture refuses (which invalidates it), end.
// No capture is ever left open. Graphs then live across operations:
// replays on picked streams (other devices', dead ones) and destroys
// (graveyard handles included) interleave with every other operation, and
// modules may be unloaded under a graph that holds one of their kernels.
// A graph writes only its own buffer and every replay writes the same
// bytes, so the buffer's contents are known once a replay ran; teardown
// checks them after synchronizing everything.
struct FuzzGraph {
  accel_graph_t h = nullptr;
  int32_t device = 0;
  uint64_t hostfns = 0;         // host functions per replay
  accel_module_t module = nullptr;  // whose `empty` it launches
  uintptr_t buf = 0;            // its buffer (an Alloc with graph = true)
  std::vector<uint8_t> expect;  // the buffer after a replay
  bool replayed = false;
};
std::vector<FuzzGraph> g_graphs;  // live
std::vector<FuzzGraph> g_graphs_done;  // destroyed; their buffers are checked at teardown
std::vector<accel_graph_t> g_dead_graphs;
constexpr size_t kMaxGraphBuffers = 6;  // per input
constexpr size_t kGraphBuf = 4096;

accel_capture_mode_t pick_mode(Input& in, bool* valid) {
  const uint8_t m = in.u8() % 8;
  *valid = m < 6;
  // 3 and up are no mode (in the enum's range, so loading one is defined).
  return static_cast<accel_capture_mode_t>(*valid ? m % 3 : 3 + m % 4);
}

// A buffer for a new graph on device t, zero-filled by the graph's first
// memset; false when it cannot be had (the allocation failed).
bool graph_buffer(int32_t t, FuzzGraph& g) {
  void* p = nullptr;
  const accel_status_t st = expect(accel_malloc(t, kGraphBuf, &p), alloc_outcome(t, kGraphBuf));
  G.touched[static_cast<size_t>(t)] = true;
  if (st != ACCEL_SUCCESS) return false;
  add_alloc(p, kGraphBuf, t, M.cur_stream[static_cast<size_t>(t)]);
  find_alloc(p)->graph = true;
  g.buf = reinterpret_cast<uintptr_t>(p);
  g.device = t;
  g.expect.assign(kGraphBuf, 0);
  return true;
}

// The work of a capture on `s`: memsets of g's buffer (the first covers it
// all), maybe `empty`, maybe a host function. Every call must be recorded.
void capture_work(Input& in, accel_stream_t s, FuzzGraph& g) {
  auto* buf = reinterpret_cast<uint8_t*>(g.buf);
  const int memsets = 1 + in.u8() % 3;
  for (int i = 0; i < memsets; ++i) {
    const size_t off = i == 0 ? 0 : in.u16() % kGraphBuf;
    const size_t bytes = i == 0 ? kGraphBuf : 1 + in.u16() % (kGraphBuf - off);
    const uint8_t v = in.u8();
    expect(accel_memset_async(buf + off, v, bytes, s), {ACCEL_SUCCESS});
    std::memset(g.expect.data() + off, v, bytes);
  }
  const uint8_t extra = in.u8();
  const LoadedModule* lm = nullptr;
  for (const LoadedModule& m : g_modules)
    if (m.device == g.device) lm = &m;
  if ((extra & 1) && lm != nullptr) {
    accel_launch_config_t c;
    std::memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.grid = accel_dim3_t{1, 1, 1};
    c.block = accel_dim3_t{1, 1, 1};
    c.stream = s;
    expect(accel_launch_kernel(lm->kernels[0], &c, nullptr, 0), {ACCEL_SUCCESS});
    g.module = lm->h;
  }
  if (extra & 2) {
    expect(accel_launch_host_func(s, hostfn_count, &g_hostfn_ran), {ACCEL_SUCCESS});
    ++g.hostfns;
  }
}

void op_capture(Input& in) {
  accel_stream_t s = pick_stream(in);
  bool mode_ok = false;
  const accel_capture_mode_t mode = pick_mode(in, &mode_ok);
  const Stream* ms = s ? stream_by_handle(s) : nullptr;
  const bool refuse = (in.u8() % 4) == 0;
  accel_status_t want = ACCEL_SUCCESS;
  if (ms == nullptr || !mode_ok)
    want = ACCEL_ERROR_INVALID_ARGUMENT;
  else if (ms->is_default)
    want = ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  FuzzGraph g;
  if (want == ACCEL_SUCCESS) {
    size_t buffers = g_graphs.size() + g_graphs_done.size();
    if (buffers >= kMaxGraphBuffers || M.allocs.size() >= kMaxAllocs) return;
    if (!graph_buffer(ms->device, g)) return;
  }
  if (expect(accel_stream_begin_capture(s, mode, 0), {want}) != ACCEL_SUCCESS) {
    accel_graph_t out = reinterpret_cast<accel_graph_t>(uintptr_t{0x9a});
    if (s != nullptr && ms != nullptr)  // not capturing: ending is refused and changes nothing
      expect(accel_stream_end_capture(s, &out), {ACCEL_ERROR_INVALID_ARGUMENT});
    FZ_CHECK(out == reinterpret_cast<accel_graph_t>(uintptr_t{0x9a}), "graph written on failure");
    return;
  }
  accel_capture_status_t cs = ACCEL_CAPTURE_STATUS_NONE;
  expect(accel_stream_capture_status(s, &cs), {ACCEL_SUCCESS});
  FZ_CHECK(cs == ACCEL_CAPTURE_STATUS_ACTIVE, "a capturing stream's status is %d", cs);
  capture_work(in, s, g);
  if (refuse) {
    expect(accel_stream_query(s), {ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED});
    expect(accel_stream_capture_status(s, &cs), {ACCEL_SUCCESS});
    FZ_CHECK(cs == ACCEL_CAPTURE_STATUS_INVALIDATED, "an invalidated capture's status is %d", cs);
  }
  accel_graph_t h = nullptr;
  expect(accel_stream_end_capture(s, &h),
         {refuse ? ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED : ACCEL_SUCCESS});
  expect(accel_stream_capture_status(s, &cs), {ACCEL_SUCCESS});
  FZ_CHECK(cs == ACCEL_CAPTURE_STATUS_NONE, "an ended capture's status is %d", cs);
  if (refuse) {
    FZ_CHECK(h == nullptr, "an invalidated capture gave a graph");
    g_graphs_done.push_back(std::move(g));  // never replayed: its buffer is not checked
    return;
  }
  FZ_CHECK(h != nullptr, "a capture gave no graph");
  g.h = h;
  g_dead_graphs.erase(std::remove(g_dead_graphs.begin(), g_dead_graphs.end(), h),
                      g_dead_graphs.end());
  if (in.flag()) expect(accel_graph_instantiate(h), {ACCEL_SUCCESS});
  g_graphs.push_back(std::move(g));
}

size_t graphs_holding(accel_module_t m) {
  return static_cast<size_t>(std::count_if(g_graphs.begin(), g_graphs.end(),
                                           [&](const FuzzGraph& g) { return g.module == m; }));
}

// A live graph (its index in g_graphs), a destroyed one or NULL.
accel_graph_t pick_graph(Input& in, size_t* live) {
  *live = SIZE_MAX;
  const uint8_t k = in.u8() % 8;
  if (k < 6 && !g_graphs.empty()) {
    *live = in.u8() % g_graphs.size();
    return g_graphs[*live].h;
  }
  if (k < 7 && !g_dead_graphs.empty()) return g_dead_graphs[in.u8() % g_dead_graphs.size()];
  return nullptr;
}

void op_graph_replay(Input& in) {
  size_t live = 0;
  accel_graph_t h = pick_graph(in, &live);
  accel_stream_t s = pick_stream(in);
  const Stream* ms = s ? stream_by_handle(s) : nullptr;
  accel_status_t want = ACCEL_SUCCESS;
  if (live == SIZE_MAX || (s != nullptr && ms == nullptr))
    want = ACCEL_ERROR_INVALID_ARGUMENT;
  else if (stream_device_of(s) != g_graphs[live].device && s != nullptr)
    want = ACCEL_ERROR_DEVICE_MISMATCH;
  if (expect(accel_graph_replay(h, s), {want}) != ACCEL_SUCCESS) return;
  FuzzGraph& g = g_graphs[live];
  g.replayed = true;
  g_hostfn_launched += g.hostfns;
}

void op_graph_destroy(Input& in) {
  size_t live = 0;
  accel_graph_t h = pick_graph(in, &live);
  if (expect(accel_graph_destroy(h), {live == SIZE_MAX ? ACCEL_ERROR_INVALID_ARGUMENT
                                                       : ACCEL_SUCCESS}) != ACCEL_SUCCESS)
    return;
  bury(g_dead_graphs, h);
  g_graphs_done.push_back(std::move(g_graphs[live]));
  g_graphs.erase(g_graphs.begin() + static_cast<std::ptrdiff_t>(live));
}

// Teardown (everything synchronized): destroys the live graphs and checks
// every replayed graph's buffer.
void finish_graphs() {
  for (FuzzGraph& g : g_graphs) {
    expect(accel_graph_destroy(g.h), {ACCEL_SUCCESS});
    g_graphs_done.push_back(std::move(g));
  }
  g_graphs.clear();
  for (const FuzzGraph& g : g_graphs_done) {
    if (!g.replayed) continue;
    const Stream& def = G.defaults[static_cast<size_t>(g.device)];
    std::memset(G.sink.data(), 0x5A, kGraphBuf);
    expect(accel_memcpy_async(G.sink.data(), reinterpret_cast<void*>(g.buf), kGraphBuf,
                              ACCEL_MEMCPY_DEVICE_TO_HOST, def.h),
           {ACCEL_SUCCESS});
    expect(accel_stream_synchronize(def.h), {ACCEL_SUCCESS});
    for (size_t i = 0; i < kGraphBuf; ++i)
      FZ_CHECK(G.sink[i] == g.expect[i], "graph %p's buffer: byte %zu is 0x%02x, expected 0x%02x",
               static_cast<void*>(g.h), i, G.sink[i], g.expect[i]);
  }
  g_graphs_done.clear();
  g_dead_graphs.clear();
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
      return op_free(in, false);
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
    case OP_MALLOC_ASYNC:
      return op_malloc_async(in);
    case OP_FREE_ASYNC:
      return op_free_async(in);
    case OP_FREE_ORDERED:
      return op_free(in, true);
    case OP_RECORD_STREAM:
      return op_record_stream(in);
    case OP_EMPTY_CACHE:
      return op_empty_cache(in);
    case OP_STATS_LIST:
      return op_stats_list(in);
    case OP_SNAPSHOT:
      return op_snapshot(in);
    case OP_HISTORY:
      return op_history(in);
    case OP_GATE:
      return op_gate(in);
    case OP_RELEASE_GATES:
      return release_gates();
    case OP_MODULE_LOAD:
      return op_module_load(in);
    case OP_MODULE_UNLOAD:
      return op_module_unload(in);
    case OP_LAUNCH:
      return op_launch(in);
    case OP_CAPTURE:
      return op_capture(in);
    case OP_GRAPH_REPLAY:
      return op_graph_replay(in);
    case OP_GRAPH_DESTROY:
      return op_graph_destroy(in);
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
  G.caching = std::strcmp(accel_get_allocator_backend(), "caching") == 0;
  FZ_CHECK(G.caching || std::strcmp(accel_get_allocator_backend(), "native") == 0,
           "allocator backend is \"%s\"", accel_get_allocator_backend());
  G.touched.assign(static_cast<size_t>(G.n), false);
  for (int32_t d = 0; d < G.n; ++d) check_stats(read_stats(d));
  G.pattern.resize(kHostBuf);
  for (size_t i = 0; i < kHostBuf; ++i) G.pattern[i] = static_cast<uint8_t>((i * 131u) ^ (i >> 9));
  G.sink.assign(kHostBuf, 0);
  G.heap.assign(kHostBuf, 0);
  // sink and pattern are registered, so copies with them stay asynchronous
  // on a gated stream; heap stays pageable, and a copy with it waits for its
  // stream (accel.h's pageable rule), so op_memcpy opens the gates first.
  FZ_CHECK(accel_host_register(G.sink.data(), G.sink.size(), 0) == ACCEL_SUCCESS,
           "register the sink buffer");
  FZ_CHECK(accel_host_register(G.pattern.data(), G.pattern.size(), 0) == ACCEL_SUCCESS,
           "register the pattern buffer");
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
  finish_graphs();  // first: a graph keeps its kernels' module from unloading
  unload_all_modules();
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
  // Nothing is live: emptying the cache gives every segment back, so the
  // next input starts from an empty allocator, as in a fresh process.
  for (int32_t d = 0; d < G.n; ++d) {
    expect(accel_empty_cache(d), {ACCEL_SUCCESS});
    const StatView s = read_stats(d);
    FZ_CHECK(s["reserved_bytes.all.current"] == 0 && s["segment.all.current"] == 0 &&
                 s["active.all.current"] == 0,
             "device %d: %" PRId64 " bytes in %" PRId64 " segments, %" PRId64
             " active blocks after every allocation was freed and the cache emptied",
             d, s["reserved_bytes.all.current"], s["segment.all.current"], s["active.all.current"]);
  }
  if (M.history != 0) {
    expect(accel_record_memory_history(0), {ACCEL_SUCCESS});
    M.history = 0;
  }
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
    const size_t at = size - in.n;  // where the opcode is, for editing an input by hand
    uint8_t code = in.u8();
    g_op = std::string("op #") + std::to_string(i) + " " + kOpNames[code % OP_COUNT] + " (byte " +
           std::to_string(at) + ")";
    run_op(code, in);
    check_state();
  }
  end_input();
  return 0;
}
