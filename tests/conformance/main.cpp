// accel-conformance: the conformance suite's entry point and shared helpers.
//
//   accel-conformance --backend NAME [Catch2 options]
//
// --backend sets ACCEL_BACKEND=NAME before the first accel call. With no
// accelerator available afterwards the run fails loudly with
// accel_selection_reason(): a conformance run never passes vacuously.
//
// Before the tests it asks which optional groups the backend has (see
// conf::Group), says which are absent, and fails when one that
// ACCEL_EXPECT_GROUPS names is absent; after them it lists every check that
// was not run and why.

#include "conformance.hpp"
#include "runner.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <utility>

namespace conf {

Globals& globals() {
  static Globals g;
  return g;
}

std::string describe(accel_status_t st) {
  std::string s = accel_status_name(st);
  if (st != ACCEL_SUCCESS) {
    s += ": ";
    s += accel_last_error();
  }
  return s;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains_ci(const std::string& hay, const std::string& needle) {
  return lower(hay).find(lower(needle)) != std::string::npos;
}

bool contains_number(const std::string& text, long long n) {
  const std::string num = std::to_string(n);
  size_t pos = 0;
  while ((pos = text.find(num, pos)) != std::string::npos) {
    bool left_ok = pos == 0 || !std::isdigit(static_cast<unsigned char>(text[pos - 1]));
    // A '-' before a positive number would make it a different number.
    if (left_ok && n >= 0 && pos > 0 && text[pos - 1] == '-') left_ok = false;
    size_t end = pos + num.size();
    bool right_ok = end >= text.size() || !std::isdigit(static_cast<unsigned char>(text[end]));
    if (left_ok && right_ok) return true;
    pos += 1;
  }
  return false;
}

FreshResult run_in_fresh_thread(const std::function<accel_status_t()>& fn) {
  FreshResult r;
  std::thread t([&] {
    r.before = accel_last_error();
    r.status = fn();
    r.after = accel_last_error();
  });
  t.join();
  return r;
}

// --- the run's shared state: checks not run --------------------------------
// (The watchdog, Deadline and the current test case are shared with every
// Catch2 test program of accel: tests/catch2/support.hpp.)

namespace {

// Used by the test thread and the threads tests start. Never destroyed:
// worker threads may still record while the process exits.
struct RunState {
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> not_run;  // test case, what
  std::set<std::pair<std::string, std::string>> not_run_seen;
};

RunState& run_state() {
  static auto* state = new RunState();
  return *state;
}

std::string format_limit(std::chrono::milliseconds limit) {
  if (limit.count() % 1000 == 0) return std::to_string(limit.count() / 1000) + " s";
  return std::to_string(limit.count()) + " ms";
}

}  // namespace

void note_not_run(const std::string& what) {
  const std::string test = accel_test::current_test_name();
  RunState& rs = run_state();
  std::lock_guard<std::mutex> lock(rs.mu);
  auto key = std::make_pair(test, what);
  if (rs.not_run_seen.insert(key).second) rs.not_run.push_back(std::move(key));
}

void print_not_run() {
  RunState& rs = run_state();
  std::lock_guard<std::mutex> lock(rs.mu);
  if (rs.not_run.empty()) return;
  std::printf("accel-conformance: %zu check(s) not run on backend '%s':\n", rs.not_run.size(),
              globals().backend.c_str());
  for (const auto& [test, what] : rs.not_run)
    std::printf("  not run in \"%s\": %s\n", test.c_str(), what.c_str());
  std::fflush(stdout);
}

namespace {

// The rules a backend breaks when a watched call does not return.
constexpr const char* kLaunchRule =
    "host functions must be queued, not run inline: launch_host_func returns at once and the "
    "function runs later, in stream order, on a backend thread (accel_plugin.h)";
constexpr const char* kDrainRule =
    "queued work must complete on its own, and nothing this suite queues runs longer than a few "
    "ms once its gate is open";

}  // namespace

accel_status_t launch_host_func(accel_stream_t stream, accel_host_fn fn, void* user_data) {
  Deadline d("accel_launch_host_func", kLaunchLimit, kLaunchRule);
  return accel_launch_host_func(stream, fn, user_data);
}

accel_status_t stream_synchronize(accel_stream_t stream) {
  Deadline d("accel_stream_synchronize", kWaitLimit, kDrainRule);
  return accel_stream_synchronize(stream);
}

accel_status_t event_synchronize(accel_event_t event) {
  Deadline d("accel_event_synchronize", kWaitLimit,
             "an event's record must complete once the work queued before it has; nothing this "
             "suite queues runs longer than a few ms once its gate is open");
  return accel_event_synchronize(event);
}

accel_status_t synchronize(int32_t device) {
  Deadline d("accel_synchronize", kWaitLimit, kDrainRule);
  return accel_synchronize(device);
}

// --- checks that cannot run -------------------------------------------------

bool need_devices(int32_t n) {
  if (device_count() >= n) return true;
  const std::string what = "needs at least " + std::to_string(n) + " devices; backend '" +
                           globals().backend + "' has " + std::to_string(device_count()) +
                           ": multi-device checks not run";
  WARN("this test " << what);
  note_not_run(what);
  SUCCEED("single-device part done");
  return false;
}

bool need_cap(uint32_t cap, const char* what) {
  if (has_cap(cap)) return true;
  const std::string text = "backend '" + globals().backend + "' does not declare " + what +
                           ": checks that need it not run";
  WARN(text);
  note_not_run(text);
  SUCCEED("capability absent");
  return false;
}

bool need_group(const Group& g) {
  if (g.present) return true;
  const std::string text = "backend '" + globals().backend + "' has no " + g.name + " (" + g.why +
                           "): checks that need it not run";
  WARN(text);
  note_not_run(text);
  SUCCEED("optional group absent");
  return false;
}

// --- host functions ------------------------------------------------------

namespace {
std::atomic<int64_t> g_order{0};

// True when `flag` was set within `limit`.
bool wait_flag(const std::atomic<bool>& flag, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!flag.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return flag.load();
}

// Every live Gate, so that a test ending early (a failed REQUIRE unwinds
// before gate.release()) opens them all before anything waits for queued
// work: a closed gate would block a stream that a destructor waits for.
std::mutex g_gates_mu;
std::set<Gate*> g_gates;

constexpr const char* kHostFnRunRule =
    "a queued host function must run once the work queued before it has completed "
    "(accel_plugin.h, launch_host_func)";
}  // namespace

void release_gates() {
  std::lock_guard<std::mutex> lock(g_gates_mu);
  for (Gate* g : g_gates) g->release();
}

int64_t next_order() { return g_order.fetch_add(1); }

void Gate::fn(void* self) {
  auto* g = static_cast<Gate*>(self);
  g->entered_.store(true);
  // Bounded so a broken test can never hang the backend's thread forever.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!g->open_.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  g->order_.store(next_order());
  g->done_.store(true);
}

Gate::Gate() {
  std::lock_guard<std::mutex> lock(g_gates_mu);
  g_gates.insert(this);
}

accel_status_t Gate::launch(accel_stream_t stream) {
  accel_status_t st = launch_host_func(stream, &Gate::fn, this);
  if (st == ACCEL_SUCCESS) launched_.fetch_add(1);
  return st;
}

Gate::~Gate() {
  release_gates();
  // The host function must not touch *this after we are gone.
  if (launched_.load() > 0 && !wait_flag(done_, kWaitLimit))
    abort_run("a host function queued with accel_launch_host_func had not run " +
              format_limit(kWaitLimit) + " after its gate opened: " + kHostFnRunRule);
  std::lock_guard<std::mutex> lock(g_gates_mu);
  g_gates.erase(this);
}

void Sleeper::fn(void* self) {
  auto* s = static_cast<Sleeper*>(self);
  std::this_thread::sleep_for(std::chrono::milliseconds(s->ms_));
  s->order_.store(next_order());
  s->done_.store(true);
}

accel_status_t Sleeper::launch(accel_stream_t stream) {
  accel_status_t st = launch_host_func(stream, &Sleeper::fn, this);
  if (st == ACCEL_SUCCESS) launched_.fetch_add(1);
  return st;
}

Sleeper::~Sleeper() {
  if (launched_.load() == 0 || done_.load()) return;
  release_gates();
  if (!wait_flag(done_, kWaitLimit))
    abort_run("a host function queued with accel_launch_host_func had not run " +
              format_limit(kWaitLimit) + " after every gate opened: " + kHostFnRunRule);
}

// --- RAII ------------------------------------------------------------------

Stream::Stream(int32_t device, int32_t priority) {
  accel_status_t st = accel_stream_create(device, priority, &s_);
  INFO("accel_stream_create(" << device << ", " << priority << ") -> " << describe(st));
  REQUIRE(st == ACCEL_SUCCESS);
  REQUIRE(s_ != nullptr);
}

Stream::~Stream() {
  if (s_ != nullptr) {
    release_gates();
    stream_synchronize(s_);
    accel_stream_destroy(s_);
  }
}

accel_status_t Stream::destroy() {
  accel_status_t st = accel_stream_destroy(s_);
  if (st == ACCEL_SUCCESS) s_ = nullptr;
  return st;
}

Event::Event(int32_t device, uint32_t flags) {
  accel_status_t st = accel_event_create(device, flags, &e_);
  INFO("accel_event_create(" << device << ", " << flags << ") -> " << describe(st));
  REQUIRE(st == ACCEL_SUCCESS);
  REQUIRE(e_ != nullptr);
}

Event::~Event() {
  if (e_ != nullptr) {
    release_gates();
    event_synchronize(e_);
    accel_event_destroy(e_);
  }
}

accel_status_t Event::destroy() {
  accel_status_t st = accel_event_destroy(e_);
  if (st == ACCEL_SUCCESS) e_ = nullptr;
  return st;
}

DeviceMem::DeviceMem(int32_t device, size_t bytes) : n_(bytes) {
  accel_status_t st = accel_malloc(device, bytes, &p_);
  INFO("accel_malloc(" << device << ", " << bytes << ") -> " << describe(st));
  REQUIRE(st == ACCEL_SUCCESS);
  REQUIRE(p_ != nullptr);
}

DeviceMem::~DeviceMem() {
  if (p_ != nullptr) {
    // Work using it may still be queued if a test failed half-way.
    release_gates();
    for (int32_t d = 0; d < device_count(); ++d) synchronize(d);
    accel_free(p_);
  }
}

accel_status_t DeviceMem::free_now() {
  accel_status_t st = accel_free(p_);
  if (st == ACCEL_SUCCESS) p_ = nullptr;
  return st;
}

ThreadStateGuard::~ThreadStateGuard() {
  const auto& defaults = globals().default_streams;
  for (size_t d = 0; d < defaults.size(); ++d) accel_set_stream(defaults[d]);
  accel_set_device_index(0);
}

}  // namespace conf


namespace {

// Several threads make the very first accel call at once: discovery must be
// thread-safe and every thread must see the same answer.
bool concurrent_first_call(std::string& detail) {
  constexpr int kThreads = 8;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<int> avail(kThreads, -1);
  std::vector<int32_t> counts(kThreads, -1);
  std::vector<std::string> names(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      avail[i] = accel_is_available();
      counts[i] = accel_device_count();
      const char* n = accel_current_accelerator();
      names[i] = n ? n : "(null)";
    });
  }
  accel_test::wait_until([&] { return ready.load() == kThreads; },
                         "8 threads to start their first accel call");
  go.store(true);
  for (auto& t : threads) t.join();
  for (int i = 1; i < kThreads; ++i) {
    if (avail[i] != avail[0] || counts[i] != counts[0] || names[i] != names[0]) {
      detail = "thread " + std::to_string(i) + " saw available=" + std::to_string(avail[i]) +
               " count=" + std::to_string(counts[i]) + " backend=" + names[i] +
               " but thread 0 saw available=" + std::to_string(avail[0]) +
               " count=" + std::to_string(counts[0]) + " backend=" + names[0];
      return false;
    }
  }
  return true;
}

std::string g_backend;

// Finds the optional groups the backend lacks (see conf::Group): a group is
// absent when its first call answers ACCEL_ERROR_NOT_SUPPORTED. Any other
// failure counts as present, so the tests of the group show it.
void probe_groups(conf::Globals& g) {
  auto answer = [](conf::Group& group, const char* call, accel_status_t st) {
    if (st != ACCEL_ERROR_NOT_SUPPORTED) return;
    group.present = false;
    group.why = std::string(call) + " answered ACCEL_ERROR_NOT_SUPPORTED: " + accel_last_error();
  };
  accel_event_t e = nullptr;
  answer(g.events, "accel_event_create", accel_event_create(0, ACCEL_EVENT_DEFAULT, &e));
  if (e != nullptr) {
    // A never-recorded event: a no-op where stream_wait_event exists.
    answer(g.wait_event, "accel_stream_wait_event",
           accel_stream_wait_event(g.default_streams[0], e));
    accel_event_destroy(e);
  } else if (!g.events.present) {
    g.wait_event.present = false;
    g.wait_event.why = "it waits on events, which the backend lacks";
  }
  void* p = nullptr;
  answer(g.memory, "accel_malloc", accel_malloc(0, 1, &p));
  if (p != nullptr) accel_free(p);
  answer(g.mem_info, "accel_mem_get_info", accel_mem_get_info(0, nullptr, nullptr));
  const char* alloc = accel_get_allocator_backend();
  if (alloc == nullptr || std::strcmp(alloc, "caching") != 0) {
    g.allocator.present = false;
    g.allocator.why = std::string("the allocator backend is '") + (alloc ? alloc : "(null)") +
                      "' (ACCEL_ALLOC_CONF)";
  }
}

// ACCEL_EXPECT_GROUPS: the optional groups and capabilities the backend
// under test must have. A probe or a capability bit that says "absent"
// would otherwise only turn that group's checks into warnings, so a
// backend whose memory started answering NOT_SUPPORTED would still pass.
// Every in-tree run names its list (tests/meson.build refuses a run
// without one); a plugin author's run without the variable tests what the
// backend says it has, and the banner says that nothing was required.
struct Expectable {
  const char* name;
  const conf::Group* group;  // an optional group of operations, or
  uint32_t cap;              // a capability bit (group == nullptr)
};

std::vector<Expectable> expectables(const conf::Globals& g) {
  return {
      {"events", &g.events, 0},
      {"wait_event", &g.wait_event, 0},
      {"memory", &g.memory, 0},
      {"mem_info", &g.mem_info, 0},
      {"allocator", &g.allocator, 0},
      {"native_current_device", nullptr, ACCEL_CAP_NATIVE_CURRENT_DEVICE},
      {"fork_safe", nullptr, ACCEL_CAP_FORK_SAFE},
      {"timing_events", nullptr, ACCEL_CAP_TIMING_EVENTS},
      {"host_functions", nullptr, ACCEL_CAP_HOST_FUNCTIONS},
      {"priorities", nullptr, ACCEL_CAP_STREAM_PRIORITIES},
      {"discovery_fork_safe", nullptr, ACCEL_CAP_DISCOVERY_FORK_SAFE},
      {"cross_device_wait", nullptr, ACCEL_CAP_CROSS_DEVICE_WAIT},
      {"interop", nullptr, ACCEL_CAP_NATIVE_HANDLES},
      {"host_memory", nullptr, ACCEL_CAP_HOST_MEMORY},
      {"peer", nullptr, ACCEL_CAP_PEER_COPY},
      {"attributes", nullptr, ACCEL_CAP_DEVICE_ATTRIBUTES},
      {"modules", nullptr, ACCEL_CAP_MODULES},
      // ABI 1.4's graph group: expected, every device must replay natively
      // (graphs_test.cpp) unless ACCEL_GRAPHS=recorder says otherwise.
      {"native_graphs", nullptr, ACCEL_CAP_GRAPHS},
      // Not probed: the modules tests refuse a mistyped argument only when
      // this is expected (the backend tells its kernels' parameter types).
      {"param_types", nullptr, 0},
  };
}

// Returns false (after saying why on stderr) when a name is unknown or an
// expected group is absent.
bool check_expected_groups(conf::Globals& g) {
  const char* env = std::getenv("ACCEL_EXPECT_GROUPS");
  const auto table = expectables(g);
  if (env == nullptr) {
    std::printf(
        "accel-conformance: ACCEL_EXPECT_GROUPS is not set: no group is required, absent ones "
        "are only warned about\n");
    return true;
  }
  bool ok = true;
  std::string list = env, present;
  for (const Expectable& e : table) {
    const bool has = e.group != nullptr ? e.group->present : (g.capabilities & e.cap) != 0;
    if (has) present += std::string(present.empty() ? "" : ",") + e.name;
  }
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    const std::string name = list.substr(pos, comma - pos);
    pos = comma + 1;
    if (name.empty()) continue;
    auto it = std::find_if(table.begin(), table.end(),
                           [&](const Expectable& e) { return name == e.name; });
    if (it == table.end()) {
      std::fprintf(stderr, "accel-conformance: FAILED: ACCEL_EXPECT_GROUPS names '%s', which is "
                           "no group this suite knows\n", name.c_str());
      ok = false;
      continue;
    }
    g.expected.insert(name);
    if (it->group != nullptr && !it->group->present) {
      std::fprintf(stderr,
                   "accel-conformance: FAILED: backend '%s' must have the group '%s' "
                   "(ACCEL_EXPECT_GROUPS) but it is absent: %s\n",
                   g.backend.c_str(), name.c_str(), it->group->why.c_str());
      ok = false;
    } else if (it->group == nullptr && it->cap != 0 && (g.capabilities & it->cap) == 0) {
      std::fprintf(stderr,
                   "accel-conformance: FAILED: backend '%s' must declare the capability '%s' "
                   "(ACCEL_EXPECT_GROUPS) but its capabilities are 0x%x\n",
                   g.backend.c_str(), name.c_str(), g.capabilities);
      ok = false;
    }
  }
  std::printf("accel-conformance: expected groups: %s; present: %s\n", list.c_str(),
              present.c_str());
  return ok;
}

// Before any test case: the first accel calls (from many threads at once),
// then the backend's devices, capabilities and default streams into
// conf::globals(). Fails the run when there is nothing to test.
int setup(accel_test::Parsed& parsed) {
  const std::string& backend = g_backend;
  if (!backend.empty()) setenv("ACCEL_BACKEND", backend.c_str(), 1);
  if (parsed.listing) return -1;

  std::string detail;
  if (!concurrent_first_call(detail)) {
    std::fprintf(stderr, "accel-conformance: FAILED: concurrent first calls disagree: %s\n",
                 detail.c_str());
    return 1;
  }
  if (!accel_is_available()) {
    std::fprintf(stderr,
                 "accel-conformance: FAILED: no accelerator available%s%s%s\n"
                 "  selection reason: %s\n",
                 backend.empty() ? "" : " (--backend ", backend.c_str(), backend.empty() ? "" : ")",
                 accel_selection_reason());
    // List what discovery saw: the reason a backend is missing is there.
    size_t n = accel_backend_count();
    for (size_t i = 0; i < n; ++i) {
      accel_backend_info_t info;
      std::memset(&info, 0, sizeof info);
      info.struct_size = sizeof info;
      if (accel_get_backend_info(i, &info) == ACCEL_SUCCESS)
        std::fprintf(stderr, "  [%zu] %s %s: %s (%s)\n", i, info.name ? info.name : "?",
                     accel_backend_status_name(info.status), info.reason ? info.reason : "",
                     info.path ? info.path : "");
    }
    if (n == 0) std::fprintf(stderr, "  discovery found no plugin candidates at all\n");
    return 1;
  }

  auto& g = conf::globals();
  const char* name = accel_current_accelerator();
  g.backend = name ? name : "";
  g.device_count = accel_device_count();
  if (!backend.empty() && g.backend != backend) {
    std::fprintf(stderr, "accel-conformance: FAILED: asked for backend '%s' but got '%s'\n",
                 backend.c_str(), g.backend.c_str());
    return 1;
  }
  if (g.device_count <= 0) {
    std::fprintf(stderr, "accel-conformance: FAILED: available but device_count=%d\n",
                 g.device_count);
    return 1;
  }
  size_t n = accel_backend_count();
  for (size_t i = 0; i < n; ++i) {
    accel_backend_info_t info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (accel_get_backend_info(i, &info) == ACCEL_SUCCESS && info.is_current)
      g.capabilities = info.capabilities;
  }
  for (int32_t d = 0; d < g.device_count; ++d) {
    accel_stream_t s = nullptr;
    accel_status_t st = accel_current_stream(d, &s);
    if (st != ACCEL_SUCCESS || s == nullptr) {
      std::fprintf(stderr, "accel-conformance: FAILED: accel_current_stream(%d): %s: %s\n", d,
                   accel_status_name(st), accel_last_error());
      return 1;
    }
    g.default_streams.push_back(s);
  }
  std::printf("accel-conformance: backend '%s' (%s), %d device(s), capabilities 0x%x\n",
              g.backend.c_str(), accel_selection_reason(), g.device_count, g.capabilities);
  probe_groups(g);
  if (!check_expected_groups(g)) return 1;
  for (const conf::Group* group : {&g.events, &g.wait_event, &g.memory, &g.mem_info}) {
    if (!group->present)
      std::printf(
          "accel-conformance: backend '%s' has no %s (%s): the checks that need it are "
          "not run, each with a warning\n",
          g.backend.c_str(), group->name, group->why.c_str());
  }
  std::fflush(stdout);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  const int rc =
      accel_test::run(argc, argv,
                      {{&g_backend, "--backend", "name",
                        "backend to test: sets ACCEL_BACKEND=name before the first accel call"}},
                      setup);
  conf::print_not_run();
  return rc;
}
