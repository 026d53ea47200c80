// accel-conformance: the conformance suite's entry point and shared helpers.
//
//   accel-conformance --backend NAME [Catch2 options]
//
// --backend sets ACCEL_BACKEND=NAME before the first accel call. With no
// accelerator available afterwards the run fails loudly with
// accel_selection_reason(): a conformance run never passes vacuously.
#include "conformance.hpp"
#include "runner.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>

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

bool need_devices(int32_t n) {
  if (device_count() >= n) return true;
  WARN("this test needs at least " << n << " devices; backend '" << globals().backend
                                   << "' has " << device_count()
                                   << ": multi-device checks not run");
  SUCCEED("single-device part done");
  return false;
}

bool need_cap(uint32_t cap, const char* what) {
  if (has_cap(cap)) return true;
  WARN("backend '" << globals().backend << "' does not declare " << what
                   << ": checks that need it not run");
  SUCCEED("capability absent");
  return false;
}

// --- host functions ------------------------------------------------------

namespace {
std::atomic<int64_t> g_order{0};

void wait_flag(const std::atomic<bool>& flag, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!flag.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}
}  // namespace

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

accel_status_t Gate::launch(accel_stream_t stream) {
  accel_status_t st = accel_launch_host_func(stream, &Gate::fn, this);
  if (st == ACCEL_SUCCESS) launched_.fetch_add(1);
  return st;
}

Gate::~Gate() {
  open_.store(true);
  // The host function must not touch *this after we are gone.
  if (launched_.load() > 0) wait_flag(done_, std::chrono::seconds(30));
}

void Sleeper::fn(void* self) {
  auto* s = static_cast<Sleeper*>(self);
  std::this_thread::sleep_for(std::chrono::milliseconds(s->ms_));
  s->order_.store(next_order());
  s->done_.store(true);
}

accel_status_t Sleeper::launch(accel_stream_t stream) {
  accel_status_t st = accel_launch_host_func(stream, &Sleeper::fn, this);
  if (st == ACCEL_SUCCESS) launched_.fetch_add(1);
  return st;
}

Sleeper::~Sleeper() {
  if (launched_.load() > 0) wait_flag(done_, std::chrono::seconds(30));
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
    accel_stream_synchronize(s_);
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
    accel_event_synchronize(e_);
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
    for (int32_t d = 0; d < device_count(); ++d) accel_synchronize(d);
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
  while (ready.load() < kThreads) std::this_thread::yield();
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
                 backend.empty() ? "" : " (--backend ", backend.c_str(),
                 backend.empty() ? "" : ")", accel_selection_reason());
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
  std::fflush(stdout);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  return accel_test::run(
      argc, argv,
      {{&g_backend, "--backend", "name",
        "backend to test: sets ACCEL_BACKEND=name before the first accel call"}},
      setup);
}
