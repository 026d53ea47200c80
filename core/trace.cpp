// The trace's ring, its file and the host-side records (docs/tracing.md).
//
// The file is Chrome's trace-event JSON object form, which Perfetto and
// chrome://tracing open. It is valid after every flush: the records go
// before a trailer (lane names, the drop count) that the next flush
// overwrites, so a long run keeps its file current without holding it all.
#include <fcntl.h>
#include <sys/stat.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "error.hpp"
#include "trace.hpp"
#include "trace_buffer.hpp"

namespace accel::core {

bool g_trace_on = false;

namespace {

constexpr size_t kDefaultCapacity = 1u << 16;  // records (~13 MiB)
constexpr size_t kMinCapacity = 16;
constexpr size_t kMaxCapacity = 1u << 22;  // records (~850 MiB)

struct Tracer {
  std::mutex mutex;
  std::string path;
  int fd = -1;
  pid_t owner = 0;
  uint64_t t0 = 0;
  std::vector<TraceRec> ring;
  size_t head = 0;  // oldest record
  size_t count = 0;
  uint64_t dropped = 0;
  uint64_t unresolved = 0;
  uint64_t written = 0;
  off_t trailer_at = 0;  // where the next records go
  std::map<uint32_t, std::string> host_threads;
  std::map<uint32_t, std::string> device_procs;  // pid -> name
  std::map<std::pair<uint32_t, uint32_t>, std::string> stream_lanes;
  std::map<std::string, uint32_t> device_pid_of;
  std::atomic<uint64_t> next_flow{1};
};

Tracer& tracer() {
  static Tracer* t = new Tracer;  // never destroyed: exit() may still record
  return *t;
}

thread_local TraceCall* t_call = nullptr;
thread_local uint32_t t_tid = 0;

void warn(const std::string& what) { std::fprintf(stderr, "accel: warning: %s\n", what.c_str()); }

bool write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

double us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

// Names come from programs and threads and need not be UTF-8: invalid bytes
// become U+FFFD rather than an exception.
std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

const char* copy_name(int kind) {
  switch (kind) {
    case ACCEL_MEMCPY_HOST_TO_DEVICE: return "memcpy HtoD";
    case ACCEL_MEMCPY_DEVICE_TO_HOST: return "memcpy DtoH";
    case ACCEL_MEMCPY_DEVICE_TO_DEVICE: return "memcpy DtoD";
    default: return "memcpy";
  }
}

const char* span_category(SpanKind k) {
  switch (k) {
    case SpanKind::copy:
    case SpanKind::peer_copy: return "copy";
    case SpanKind::memset: return "memset";
    case SpanKind::kernel: return "kernel";
    case SpanKind::host_func: return "host_function";
    case SpanKind::event_record:
    case SpanKind::event_wait: return "event";
    case SpanKind::graph: return "graph";
  }
  return "stream";
}

std::string hex(const void* p) { return fmt::format("{}", p); }

nlohmann::json to_json(const TraceRec& r) {
  nlohmann::json j;
  j["pid"] = r.pid;
  j["tid"] = r.tid;
  j["ts"] = us(r.ts);
  nlohmann::json args = nlohmann::json::object();
  switch (r.ph) {
    case Ph::complete:
      j["ph"] = "X";
      j["dur"] = us(r.dur);
      if (!r.stream_lane && r.kind == SpanKind::graph) {
        j["name"] = r.name;
        j["cat"] = "api";  // a host-lane slice, as the calls it spans
        args["status"] = accel_status_name(static_cast<accel_status_t>(r.status));
        args["device"] = r.device;
        args["operations"] = r.bytes;
        args["streams"] = r.counter_a;
      } else if (!r.stream_lane) {
        j["name"] = r.name;
        j["cat"] = "api";
        args["status"] = accel_status_name(static_cast<accel_status_t>(r.status));
        if (r.device >= 0) args["device"] = r.device;
        if (r.bytes != 0) args["bytes"] = r.bytes;
        if (r.stream != 0) args["stream"] = r.stream;
        if (r.ptr != nullptr) args["ptr"] = hex(r.ptr);
        if (r.text[0] != '\0') args["kernel"] = r.text;
      } else {
        j["cat"] = span_category(r.kind);
        if (r.kind == SpanKind::kernel) {
          j["name"] = r.text[0] != '\0' ? r.text : "kernel";
          args["grid"] = {r.grid.x, r.grid.y, r.grid.z};
          args["block"] = {r.block.x, r.block.y, r.block.z};
          args["shared_bytes"] = r.shared;
        } else if (r.kind == SpanKind::copy) {
          j["name"] = copy_name(r.copy_kind);
        } else {
          j["name"] = r.name;
        }
        if (r.kind == SpanKind::graph) args["operations"] = r.bytes;
        if (r.kind == SpanKind::copy || r.kind == SpanKind::peer_copy ||
            r.kind == SpanKind::memset) {
          args["bytes"] = r.bytes;
          // GB/s = bytes / ns; a span too short to time has no rate.
          if (r.dur > 0) args["GB/s"] = static_cast<double>(r.bytes) / static_cast<double>(r.dur);
        }
        args["device"] = r.device;
        args["seq"] = r.seq;
        args["clock"] = r.clock == Clock::events ? "device timing events" : "host timestamps";
      }
      break;
    case Ph::instant:
      j["ph"] = "i";
      j["s"] = "t";
      j["name"] = r.name;
      j["cat"] = "memory";
      if (r.device >= 0) args["device"] = r.device;
      if (r.bytes != 0) args["bytes"] = r.bytes;
      if (r.ptr != nullptr) args["ptr"] = hex(r.ptr);
      break;
    case Ph::counter:
      j["ph"] = "C";
      j["name"] = "memory";
      args["allocated_bytes"] = r.counter_a;
      args["reserved_bytes"] = r.counter_b;
      break;
    case Ph::begin:
      j["ph"] = "B";
      j["name"] = r.text;
      j["cat"] = "range";
      break;
    case Ph::end:
      j["ph"] = "E";
      j["cat"] = "range";
      break;
    case Ph::flow_start:
    case Ph::flow_end:
      j["ph"] = r.ph == Ph::flow_start ? "s" : "f";
      if (r.ph == Ph::flow_end) j["bp"] = "e";
      j["name"] = "enqueue";
      j["cat"] = "flow";
      j["id"] = r.flow;
      break;
  }
  if (!args.empty()) j["args"] = std::move(args);
  return j;
}

nlohmann::json meta(const char* what, uint32_t pid, uint32_t tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

// The part after the records: lane names and what was lost.
std::string trailer(Tracer& t) {
  std::string s;
  auto add = [&](const nlohmann::json& j) { s += ",\n" + dump(j); };
  for (auto& [tid, name] : t.host_threads) add(meta("thread_name", t.owner, tid, name));
  for (auto& [pid, name] : t.device_procs) {
    add(meta("process_name", pid, 0, name));
    add({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"tid", 0},
         {"args", {{"sort_index", pid}}}});
  }
  for (auto& [lane, name] : t.stream_lanes) add(meta("thread_name", lane.first, lane.second, name));
  nlohmann::json other = {
      {"accel_version", accel_version()},
      {"clock", "CLOCK_MONOTONIC, microseconds since the trace started"},
      {"ring_capacity", t.ring.size()},
      {"events_written", t.written},
      {"events_dropped", t.dropped},
      {"spans_unresolved", t.unresolved},
  };
  s += "\n],\n\"displayTimeUnit\": \"ns\",\n\"otherData\": " + dump(other) + "\n}\n";
  return s;
}

accel_status_t flush_locked(Tracer& t) {
  if (t.fd < 0 || t.owner != getpid()) return ACCEL_SUCCESS;
  std::string body;
  for (size_t i = 0; i < t.count; ++i) {
    body += ",\n";
    body += dump(to_json(t.ring[(t.head + i) % t.ring.size()]));
  }
  const uint64_t n = t.count;
  t.head = 0;
  t.count = 0;
  int err = 0;
  if (::lseek(t.fd, t.trailer_at, SEEK_SET) < 0 || !write_all(t.fd, body)) {
    // Lost: counted as dropped, and the file is put back as it was (the
    // trailer at its old place) so it stays valid.
    err = errno;
    t.dropped += n;
  } else {
    t.written += n;
    t.trailer_at += static_cast<off_t>(body.size());
  }
  std::string tail = trailer(t);
  if (::lseek(t.fd, t.trailer_at, SEEK_SET) < 0 || !write_all(t.fd, tail) ||
      ::ftruncate(t.fd, t.trailer_at + static_cast<off_t>(tail.size())) != 0) {
    if (err == 0) err = errno;
  }
  if (err != 0) {
    return failf(ACCEL_ERROR_INTERNAL, "accel_trace_flush: writing {}: {} ({} records lost)",
                 t.path, std::strerror(err), n);
  }
  return ACCEL_SUCCESS;
}

void flush_at_exit() {
  Tracer& t = tracer();
  if (!g_trace_on || t.owner != getpid()) return;
  // Spans still pending are counted, not waited for: at exit the vendor
  // runtimes may already be gone.
  try {
    const uint64_t pending = trace_pending_spans();
    std::lock_guard lock(t.mutex);
    t.unresolved += pending;
    (void)flush_locked(t);
  } catch (...) {
    // Nothing may escape an exit handler (std::terminate).
  }
}

size_t capacity_from_env() {
  const char* env = secure_getenv("ACCEL_TRACE_BUFFER");
  if (env == nullptr || *env == '\0') return kDefaultCapacity;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(env, &end, 10);
  if (errno != 0 || !std::isdigit(static_cast<unsigned char>(env[0])) || *end != '\0' ||
      v < kMinCapacity || v > kMaxCapacity) {
    warn(fmt::format("ACCEL_TRACE_BUFFER={}: not a record count from {} to {}; using {}", env,
                     kMinCapacity, kMaxCapacity, kDefaultCapacity));
    return kDefaultCapacity;
  }
  return static_cast<size_t>(v);
}

// Runs when libaccelcore is loaded, before any thread can call accel.
void trace_init_or_throw();

__attribute__((constructor)) void trace_init() {
  try {
    trace_init_or_throw();
  } catch (const std::exception& e) {
    // Loading the library must not fail because of tracing (an allocation
    // for the ring, say): untraced, with a warning.
    Tracer& t = tracer();
    if (t.fd >= 0) ::close(t.fd);
    t.fd = -1;
    g_trace_on = false;
    warn(fmt::format("ACCEL_TRACE: {}; tracing is off", e.what()));
  }
}

void trace_init_or_throw() {
  const char* path = secure_getenv("ACCEL_TRACE");
  if (path == nullptr || *path == '\0') return;
  if (path[0] != '/') {
    warn(fmt::format("ACCEL_TRACE={}: not an absolute path; tracing is off", path));
    return;
  }
  // O_NONBLOCK: a FIFO without a reader must not hang the program's start
  // (it fails with ENXIO instead); the file must be a regular one, which
  // the flushes rewrite in place.
  int fd = ::open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) {
    warn(fmt::format("ACCEL_TRACE={}: cannot be written ({}); tracing is off", path,
                     std::strerror(errno)));
    return;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    warn(fmt::format("ACCEL_TRACE={}: cannot be written (not a regular file); tracing is off",
                     path));
    return;
  }
  if (::ftruncate(fd, 0) != 0 || ::fcntl(fd, F_SETFL, 0) != 0) {
    warn(fmt::format("ACCEL_TRACE={}: cannot be written ({}); tracing is off", path,
                     std::strerror(errno)));
    ::close(fd);
    return;
  }
  Tracer& t = tracer();
  t.path = path;
  t.fd = fd;
  t.owner = getpid();
  t.t0 = trace_now_ns();
  t.ring.resize(capacity_from_env());
  nlohmann::json head = meta("process_name", static_cast<uint32_t>(t.owner), 0,
                             fmt::format("{} (host)", program_invocation_short_name));
  std::string s = "{\"traceEvents\": [\n" + dump(head);
  if (!write_all(fd, s)) {
    warn(fmt::format("ACCEL_TRACE={}: cannot be written ({}); tracing is off", path,
                     std::strerror(errno)));
    ::close(fd);
    t.fd = -1;
    return;
  }
  t.trailer_at = static_cast<off_t>(s.size());
  write_all(fd, trailer(t));
  std::atexit(flush_at_exit);
  g_trace_on = true;
}

}  // namespace

uint64_t trace_now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

std::mutex& trace_mutex() { return tracer().mutex; }
uint64_t trace_t0() { return tracer().t0; }
uint32_t trace_pid() { return static_cast<uint32_t>(tracer().owner); }

void trace_push_locked(const TraceRec& r) {
  Tracer& t = tracer();
  const size_t cap = t.ring.size();
  if (t.count == cap) {
    t.head = (t.head + 1) % cap;  // the oldest goes
    --t.count;
    ++t.dropped;
  }
  t.ring[(t.head + t.count) % cap] = r;
  ++t.count;
}

uint32_t trace_host_tid() {
  if (t_tid == 0) {
    t_tid = static_cast<uint32_t>(::syscall(SYS_gettid));
    char name[32] = {};
    pthread_getname_np(pthread_self(), name, sizeof name);
    std::lock_guard lock(trace_mutex());
    tracer().host_threads[t_tid] = fmt::format("{} (thread {})", name, t_tid);
  }
  return t_tid;
}

uint32_t trace_device_pid_locked(const char* backend, int32_t device) {
  Tracer& t = tracer();
  std::string name = fmt::format("{} device {}", backend, device);
  auto it = t.device_pid_of.find(name);
  if (it != t.device_pid_of.end()) return it->second;
  // Above any real pid (pid_max is at most 2^22), stable within the file.
  uint32_t pid = (1u << 23) + static_cast<uint32_t>(t.device_pid_of.size());
  t.device_pid_of.emplace(name, pid);
  t.device_procs[pid] = name;
  return pid;
}

void trace_name_stream_locked(uint32_t pid, uint32_t tid, const char* name) {
  tracer().stream_lanes[{pid, tid}] = name;
}

void trace_count_unresolved_locked(uint64_t n) { tracer().unresolved += n; }

uint64_t trace_next_flow_id() { return tracer().next_flow.fetch_add(1, std::memory_order_relaxed); }

void copy_text(char (&dst)[64], const char* src) {
  if (src == nullptr) {
    dst[0] = '\0';
    return;
  }
  size_t n = strnlen(src, sizeof dst - 1);
  // Not in the middle of a UTF-8 character: back off its continuation bytes.
  if (src[n] != '\0') {
    while (n > 0 && (static_cast<unsigned char>(src[n]) & 0xC0) == 0x80) --n;
  }
  std::memcpy(dst, src, n);
  dst[n] = '\0';
}

// --- public calls -------------------------------------------------------------

void trace_call_begin(TraceCall& c, const char* fn) {
  c.fn = fn;
  c.outer = t_call;
  t_call = &c;
  c.start_ns = trace_now_ns();
}

void trace_call_end(TraceCall& c, accel_status_t st) {
  const uint64_t end = trace_now_ns();
  t_call = c.outer;
  // A fork() inside the call (a vendor library's helper) leaves the child
  // here with tracing off and the lock perhaps held by a thread it lacks.
  if (!g_trace_on) return;
  TraceRec r;
  r.ph = Ph::complete;
  r.pid = trace_pid();
  r.tid = trace_host_tid();
  const uint64_t t0 = trace_t0();
  r.ts = c.start_ns > t0 ? c.start_ns - t0 : 0;
  r.dur = end > c.start_ns ? end - c.start_ns : 0;
  r.name = c.fn;
  r.status = st;
  r.device = c.device;
  r.bytes = c.bytes;
  r.stream = c.stream;
  r.ptr = c.ptr;
  copy_text(r.text, c.text);
  // After a wait or a completed query, time what has finished.
  if (c.outer == nullptr && (st == ACCEL_SUCCESS || st == ACCEL_ERROR_NOT_READY) &&
      (std::strstr(c.fn, "synchronize") != nullptr || std::strstr(c.fn, "_query") != nullptr))
    trace_resolve();
  std::lock_guard lock(trace_mutex());
  trace_push_locked(r);
  if (c.flow != 0) {
    // The arrow leaves from the middle of the call (inside its slice).
    TraceRec f;
    f.ph = Ph::flow_start;
    f.pid = r.pid;
    f.tid = r.tid;
    f.ts = r.ts + r.dur / 2;
    f.flow = c.flow;
    trace_push_locked(f);
  }
}

TraceCall* trace_current_call() { return t_call; }

void trace_capture(const TraceCapture& c, accel_status_t st) {
  if (!g_trace_on) return;
  const uint64_t end = trace_now_ns();
  TraceRec r;
  r.ph = Ph::complete;
  r.kind = SpanKind::graph;  // on a host lane: the capture's slice
  r.pid = trace_pid();
  r.tid = trace_host_tid();
  const uint64_t t0 = trace_t0();
  r.ts = c.start_ns > t0 ? c.start_ns - t0 : 0;
  r.dur = end > c.start_ns ? end - c.start_ns : 0;
  r.name = "stream capture";
  r.status = st;
  r.device = c.device;
  r.bytes = c.operations;
  r.counter_a = static_cast<int64_t>(c.streams);
  std::lock_guard lock(trace_mutex());
  trace_push_locked(r);
}

void trace_note_device(int32_t device, uint64_t bytes, const void* ptr) {
  if (TraceCall* c = t_call; c != nullptr) {
    c->device = device;
    c->bytes = bytes;
    c->ptr = ptr;
  }
}

accel_status_t trace_flush() {
  if (!g_trace_on) return ACCEL_SUCCESS;
  trace_resolve();
  Tracer& t = tracer();
  std::lock_guard lock(t.mutex);
  return flush_locked(t);
}

void trace_after_fork_child() {
  // The parent's file is the parent's: the child neither writes it nor
  // traces (its own ACCEL_TRACE would need its own file).
  g_trace_on = false;
}

}  // namespace accel::core
