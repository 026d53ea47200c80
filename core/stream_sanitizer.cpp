#include "stream_sanitizer.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "backend.hpp"
#include "handles.hpp"
#include "host_services.hpp"
#include "log.hpp"
#include "memory_table.hpp"

namespace accel::core::sanitizer {

std::atomic<int> g_mode{static_cast<int>(Mode::unknown)};

Mode read_mode() {
  static const Mode mode = [] {
    Mode m = Mode::off;
    const char* text = secure_getenv("ACCEL_STREAM_SANITIZER");
    if (text != nullptr && *text != '\0') {
      const std::string v = text;
      if (v == "1") {
        m = Mode::report;
      } else if (v == "abort") {
        m = Mode::abort;
      } else if (v != "0") {
        log().warn(
            "ACCEL_STREAM_SANITIZER='{}' ignored: accepted values are 1 (report and "
            "continue), abort (abort after the report) and 0 (off)",
            v);
      }
    }
    g_mode.store(static_cast<int>(m), std::memory_order_relaxed);
    return m;
  }();
  return mode;
}

namespace {

using Clock = std::vector<uint64_t>;  // indexed by stream number

void join(Clock& into, const Clock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] = std::max(into[i], from[i]);
}

uint64_t at(const Clock& c, size_t i) { return i < c.size() ? c[i] : 0; }

struct Access {
  uint32_t stream = 0;  // stream number
  uint64_t tick = 0;    // that stream's clock when the access was queued
  bool write = false;
  Call call{};
};

struct Record {
  // The stream number the block was allocated on, or -1 (backend:native);
  // a number, not the handle, which may be destroyed before the free.
  int64_t alloc_stream = -1;
  bool has_write = false;
  Access last_write;
  std::vector<Access> reads;       // since last_write, at most one per stream
  std::vector<uint32_t> recorded;  // streams record_stream named
};

struct StreamInfo {
  const accel_stream_s* handle = nullptr;
  std::string backend;
  int32_t device = 0;
  Clock clock;
};

struct State {
  std::mutex mutex;
  // By vendor queue: a stream made from a native handle and the stream it
  // wraps are one queue, ordered with each other.
  std::unordered_map<const void*, uint32_t> numbers;
  std::vector<StreamInfo> streams;
  std::unordered_map<const accel_event_s*, Clock> events;
  std::unordered_map<uintptr_t, Record> records;  // by allocation base
  Clock host;                                     // what the host knows has completed
};

// Never destroyed: streams may be used from exit handlers.
State& state() {
  static State& s = *new State();
  return s;
}

// The vendor queue behind `stream`, where the core knows it (a handle
// handed out, or a stream made from a native queue, whose plugin is asked:
// a quick call that never waits), else the plugin's stream. Streams accel
// made are not asked: the query can change a backend's mode (level_zero
// marks the list exported). A wrapped queue was handed out first, so its
// owner's handle is cached and both map to one queue.
const void* queue_of(const accel_stream_s& stream) {
  if (stream.native_cached.load(std::memory_order_acquire)) return stream.native_handle.handle;
  const Backend& b = *stream.backend;
  if (stream.from_native && b.api.stream_native_handle != nullptr) {
    accel_native_handle_t h{};
    h.struct_size = sizeof h;
    h.ordinal = -1;
    begin_plugin_call();
    if (b.api.stream_native_handle(stream.native, &h) == ACCEL_SUCCESS && h.handle != nullptr)
      return h.handle;
  }
  return stream.native;
}

uint32_t number(State& s, const accel_stream_s* stream) {
  const void* queue = queue_of(*stream);
  auto [it, added] = s.numbers.try_emplace(queue, static_cast<uint32_t>(s.streams.size()));
  if (added) {
    StreamInfo info;
    info.handle = stream;
    info.backend = stream->backend != nullptr ? stream->backend->name : "?";
    info.device = stream->device;
    s.streams.push_back(std::move(info));
  }
  return it->second;
}

// The stream's clock after it learns what the host knows, ticked for a new
// operation.
uint64_t tick(State& s, uint32_t n) {
  Clock& c = s.streams[n].clock;
  join(c, s.host);
  if (c.size() <= n) c.resize(n + 1, 0);
  return ++c[n];
}

std::string where(const void* caller) {
  Dl_info info{};
  if (caller != nullptr && dladdr(caller, &info) != 0) {
    const auto pc = reinterpret_cast<uintptr_t>(caller);
    if (info.dli_sname != nullptr) {
      return fmt::format("{}+0x{:x}", info.dli_sname,
                         pc - reinterpret_cast<uintptr_t>(info.dli_saddr));
    }
    if (info.dli_fname != nullptr) {
      return fmt::format("{}+0x{:x}", info.dli_fname,
                         pc - reinterpret_cast<uintptr_t>(info.dli_fbase));
    }
  }
  return fmt::format("{}", caller);
}

std::string describe(const State& s, uint32_t n, const Call& c, const char* what) {
  const StreamInfo& info = s.streams[n];
  std::string call = c.fn;
  if (c.kernel != nullptr) call += fmt::format(" '{}' argument {}", c.kernel, c.arg);
  return fmt::format("{} on stream {} ({} device {}) by {} from {}", what,
                     static_cast<const void*>(info.handle), info.backend, info.device, call,
                     where(c.caller));
}

void report(const std::string& line) {
  std::fprintf(stderr, "accel: stream sanitizer: %s\n", line.c_str());
  std::fflush(stderr);
  if (g_mode.load(std::memory_order_relaxed) == static_cast<int>(Mode::abort)) std::abort();
}

bool ordered(const State& s, uint32_t n, const Access& prior) {
  return prior.stream == n || at(s.streams[n].clock, prior.stream) >= prior.tick;
}

void conflict(const State& s, uintptr_t base, const Access& now, const Access& prior) {
  report(fmt::format(
      "{}-{} race on the allocation at {:#x}: {}, and {}, with no event wait or "
      "synchronize between them",
      prior.write ? "write" : "read", now.write ? "write" : "read", base,
      describe(s, now.stream, now.call, now.write ? "write" : "read"),
      describe(s, prior.stream, prior.call, prior.write ? "earlier write" : "earlier read")));
}

// Device allocations only: their frees are hooked, so a record never
// outlives its block (a pinned host block's free is not).
bool base_of(const void* ptr, uintptr_t& base) {
  Allocation a;
  if (!find_allocation(ptr, a) || a.type != ACCEL_MEMORY_DEVICE) return false;
  base = a.base;
  return true;
}

void access(const void* ptr, const accel_stream_s* stream, const Call& call, bool write) {
  uintptr_t base = 0;
  if (stream == nullptr || !base_of(ptr, base)) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  const uint32_t n = number(s, stream);
  const Access now{n, tick(s, n), write, call};
  Record& r = s.records[base];
  if (r.has_write && !ordered(s, n, r.last_write)) conflict(s, base, now, r.last_write);
  if (write) {
    for (const Access& prior : r.reads)
      if (!ordered(s, n, prior)) conflict(s, base, now, prior);
    r.reads.clear();
    r.has_write = true;
    r.last_write = now;
    return;
  }
  for (Access& prior : r.reads) {
    if (prior.stream == n) {
      prior = now;
      return;
    }
  }
  r.reads.push_back(now);
}

void check_free(const State& s, uintptr_t base, const Record& r, uint32_t n, const Call& call,
                const Access& prior) {
  if (ordered(s, n, prior)) return;
  for (uint32_t covered : r.recorded)
    if (covered == prior.stream) return;
  report(
      fmt::format("free of the allocation at {:#x} on stream {} by {} from {} while {} may "
                  "still use it, with no record_stream, event wait or synchronize between them",
                  base, static_cast<const void*>(s.streams[n].handle), call.fn, where(call.caller),
                  describe(s, prior.stream, prior.call, prior.write ? "a write" : "a read")));
}

}  // namespace

void on_alloc(const void* ptr, const accel_stream_s* stream) {
  uintptr_t base = 0;
  if (!base_of(ptr, base)) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  Record fresh;
  if (stream != nullptr) fresh.alloc_stream = number(s, stream);
  s.records[base] = std::move(fresh);
}

void on_read(const void* ptr, const accel_stream_s* stream, const Call& call) {
  access(ptr, stream, call, false);
}

void on_write(const void* ptr, const accel_stream_s* stream, const Call& call) {
  access(ptr, stream, call, true);
}

void on_free(const void* ptr, const accel_stream_s* stream, const Call& call) {
  uintptr_t base = 0;
  if (!base_of(ptr, base)) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = s.records.find(base);
  if (it == s.records.end()) return;
  const Record r = std::move(it->second);
  s.records.erase(it);
  // backend:native: the vendor's free waits for the device.
  if (stream == nullptr && r.alloc_stream < 0) return;
  const uint32_t n = stream != nullptr ? number(s, stream) : static_cast<uint32_t>(r.alloc_stream);
  tick(s, n);
  if (r.has_write) check_free(s, base, r, n, call, r.last_write);
  for (const Access& prior : r.reads) check_free(s, base, r, n, call, prior);
}

void on_record_stream(const void* ptr, const accel_stream_s* stream) {
  uintptr_t base = 0;
  if (stream == nullptr || !base_of(ptr, base)) return;
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.records[base].recorded.push_back(number(s, stream));
}

void on_event_record(const accel_event_s* event, const accel_stream_s* stream) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const uint32_t n = number(s, stream);
  tick(s, n);
  s.events[event] = s.streams[n].clock;
}

void on_stream_wait(const accel_stream_s* stream, const accel_event_s* event) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  const uint32_t n = number(s, stream);
  auto it = s.events.find(event);
  if (it != s.events.end()) join(s.streams[n].clock, it->second);
}

void on_event_synchronize(const accel_event_s* event) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto it = s.events.find(event);
  if (it != s.events.end()) join(s.host, it->second);
}

void on_stream_synchronize(const accel_stream_s* stream) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  join(s.host, s.streams[number(s, stream)].clock);
}

void on_device_synchronize() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  for (const StreamInfo& info : s.streams) join(s.host, info.clock);
}

namespace {
bool g_fork_locked = false;  // what lock_for_fork did, for unlock_after_fork
}  // namespace

void lock_for_fork() {
  g_fork_locked = g_mode.load(std::memory_order_relaxed) > 0;
  if (g_fork_locked) state().mutex.lock();
}

void unlock_after_fork() {
  if (g_fork_locked) state().mutex.unlock();
  g_fork_locked = false;
}

}  // namespace accel::core::sanitizer
