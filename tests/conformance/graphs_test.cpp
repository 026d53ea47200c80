// Conformance: graphs (stream capture and replay, docs/graphs.md). What
// accel.h promises on every backend: work queued on a capturing stream is
// recorded, not run; kernel arguments are taken by value at capture; every
// call a capture refuses is refused with ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED
// and invalidates it, so end_capture gives no graph; fork and join over two
// streams; replays on any stream of the graph's device and only there;
// allocations of a capture keep their address; destroying a graph behind a
// blocked replay frees nothing early.
#include "accel_kernels.h"
#include "conformance.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

using namespace conf;

namespace {

constexpr size_t kBytes = 4096;

bool has_graph_groups(const char* test) {
  if (!need_group(globals().memory)) {
    note_not_run(std::string("graphs: ") + test + " (no device memory)");
    return false;
  }
  return true;
}

bool has_fork_join(const char* test) {
  if (!need_group(globals().events) || !need_group(globals().wait_event)) {
    note_not_run(std::string("graphs: ") + test + " (no events or stream waits)");
    return false;
  }
  return true;
}

// The current device's memory snapshot (the two-call pattern).
std::string snapshot_text() {
  size_t length = 0;
  if (accel_memory_snapshot(-1, nullptr, 0, &length) != ACCEL_SUCCESS) return {};
  std::string text(length + 4096, '\0');
  if (accel_memory_snapshot(-1, text.data(), text.size(), &length) != ACCEL_SUCCESS) return {};
  text.resize(length);
  return text;
}

// Owns a graph and destroys it at scope exit.
struct Graph {
  accel_graph_t g = nullptr;
  ~Graph() {
    if (g != nullptr) {
      release_gates();
      (void)accel_graph_destroy(g);
    }
  }
};

// The kernels of kernels/ (as modules_test.cpp loads them), or nullptr with
// a WARN when the backend or this build has none for the device.
accel_module_t load_kernels(const char* test) {
  if (!has_cap(ACCEL_CAP_MODULES)) {
    WARN(std::string("graphs: ") + test + ": the backend has no modules");
    note_not_run(std::string("graphs: ") + test + " (no modules)");
    return nullptr;
  }
  accel_module_image_t im[8];
  const size_t n = accel_kernels_images(im, 8);
  accel_module_t m = nullptr;
  const accel_status_t st = accel_module_load(-1, im, n, nullptr, &m);
  if (st == ACCEL_ERROR_NOT_SUPPORTED && !expected("modules")) {
    WARN(std::string("graphs: ") + test + ": no kernel image for this device: " + describe(st));
    note_not_run(std::string("graphs: ") + test + " (no kernel image for this device)");
    return nullptr;
  }
  INFO("accel_module_load -> " << describe(st));
  REQUIRE(st == ACCEL_SUCCESS);
  return m;
}

struct Module {
  accel_module_t m = nullptr;
  explicit Module(const char* test) : m(load_kernels(test)) {}
  ~Module() {
    if (m != nullptr) {
      release_gates();
      Deadline d("accel_module_unload", kWaitLimit, "unloading waits for the device only");
      (void)accel_module_unload(m);
    }
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
};

accel_launch_config_t config_of(uint32_t n, accel_stream_t stream) {
  accel_launch_config_t c;
  std::memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.grid = {(n + 63) / 64, 1, 1};
  c.block = {64, 1, 1};
  c.stream = stream;
  return c;
}

// saxpy(alpha, x, y, n) on `s`: y = alpha * x + y.
accel_status_t saxpy(accel_kernel_t k, const float& alpha, void* x, void* y, const uint32_t& n,
                     accel_stream_t s) {
  const accel_kernel_arg_t args[] = {{ACCEL_KERNEL_ARG_VALUE, sizeof alpha, &alpha},
                                     {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), x},
                                     {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), y},
                                     {ACCEL_KERNEL_ARG_VALUE, sizeof n, &n}};
  const accel_launch_config_t c = config_of(n, s);
  return accel_launch_kernel(k, &c, args, 4);
}

template <class T>
std::vector<T> download(const void* src, size_t n, accel_stream_t s) {
  std::vector<T> out(n);
  ACCEL_REQUIRE_OK(
      accel_memcpy_async(out.data(), src, n * sizeof(T), ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  ACCEL_REQUIRE_OK(stream_synchronize(s));
  return out;
}

template <class T>
void upload(void* dst, const std::vector<T>& v, accel_stream_t s) {
  ACCEL_REQUIRE_OK(
      accel_memcpy_async(dst, v.data(), v.size() * sizeof(T), ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  ACCEL_REQUIRE_OK(stream_synchronize(s));
}

accel_capture_status_t status_of(accel_stream_t s) {
  accel_capture_status_t st = ACCEL_CAPTURE_STATUS_FORCE_INT32;
  ACCEL_REQUIRE_OK(accel_stream_capture_status(s, &st));
  return st;
}

bool all_bytes(const std::vector<unsigned char>& v, unsigned char b) {
  for (unsigned char c : v)
    if (c != b) return false;
  return true;
}

// Ends the capture of `s` expecting it invalidated: no graph, not capturing.
void expect_invalidated_end(accel_stream_t s) {
  CHECK(status_of(s) == ACCEL_CAPTURE_STATUS_INVALIDATED);
  accel_graph_t g = reinterpret_cast<accel_graph_t>(&g);  // must become NULL
  ACCEL_CHECK_STATUS(accel_stream_end_capture(s, &g), ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED);
  CHECK(g == nullptr);
  CHECK(status_of(s) == ACCEL_CAPTURE_STATUS_NONE);
}

// `call` while `s` captures is refused with UNSUPPORTED naming `name` and
// the capture invalidated.
void expect_refused(accel_stream_t s, const char* name,
                    const std::function<accel_status_t()>& call) {
  INFO("refused call: " << name);
  const accel_status_t st = call();
  const std::string msg = accel_last_error();
  INFO("status " << accel_status_name(st) << ", last error: " << msg);
  CHECK(st == ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK(contains_ci(msg, name));
  char addr[32];
  std::snprintf(addr, sizeof addr, "%p", static_cast<void*>(s));
  CHECK(contains_ci(msg, addr));  // names the capturing stream
  expect_invalidated_end(s);
}

}  // namespace

TEST_CASE("graphs: captured work runs only at replay and kernel arguments are taken by value",
          "[graphs]") {
  ThreadStateGuard guard;
  if (!has_graph_groups("arguments by value")) return;
  Module mod("arguments by value");
  if (mod.m == nullptr) return;
  accel_kernel_t k = nullptr;
  ACCEL_REQUIRE_OK(accel_module_get_kernel(mod.m, "saxpy", &k));
  constexpr uint32_t n = 256;
  Stream s;
  DeviceMem x(-1, n * sizeof(float)), y(-1, n * sizeof(float));
  upload(x.get(), std::vector<float>(n, 1.0f), s);
  upload(y.get(), std::vector<float>(n, 10.0f), s);

  CHECK(status_of(s) == ACCEL_CAPTURE_STATUS_NONE);
  float alpha = 2.0f;
  Graph graph;
  ACCEL_REQUIRE_OK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  CHECK(status_of(s) == ACCEL_CAPTURE_STATUS_ACTIVE);
  ACCEL_REQUIRE_OK(saxpy(k, alpha, x.get(), y.get(), n, s));
  ACCEL_REQUIRE_OK(accel_stream_end_capture(s, &graph.g));
  REQUIRE(graph.g != nullptr);
  CHECK(status_of(s) == ACCEL_CAPTURE_STATUS_NONE);
  alpha = 100.0f;                                                         // changes no replay
  CHECK(download<float>(y.get(), n, s) == std::vector<float>(n, 10.0f));  // not run yet

  ACCEL_REQUIRE_OK(accel_graph_instantiate(graph.g));
  ACCEL_REQUIRE_OK(accel_graph_replay(graph.g, s));
  CHECK(download<float>(y.get(), n, s) == std::vector<float>(n, 12.0f));
  ACCEL_REQUIRE_OK(accel_graph_replay(graph.g, s));
  CHECK(download<float>(y.get(), n, s) == std::vector<float>(n, 14.0f));

  // The graph holds saxpy's module: unloading it is refused, naming the count.
  FreshResult r = run_in_fresh_thread([&] { return accel_module_unload(mod.m); });
  CHECK(r.status == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(contains_ci(r.after, "1 graph"));

  const std::string path = "accel-graphs-conformance-" + std::to_string(::getpid()) + ".dot";
  ACCEL_REQUIRE_OK(accel_graph_debug_dump(graph.g, path.c_str()));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  CHECK(contains_ci(text.str(), "digraph"));
  CHECK(contains_ci(text.str(), "saxpy"));

  ACCEL_REQUIRE_OK(accel_graph_destroy(graph.g));
  ACCEL_CHECK_ERROR(accel_graph_replay(graph.g, s), ACCEL_ERROR_INVALID_ARGUMENT);
  graph.g = nullptr;
}

TEST_CASE("graphs: each device says how it replays graphs", "[graphs]") {
  const char* forced = std::getenv("ACCEL_GRAPHS");
  const bool recorder = forced != nullptr && std::string(forced) == "recorder";
  const bool native = (globals().capabilities & ACCEL_CAP_GRAPHS) != 0;
  if (expected("native_graphs")) CHECK(native);
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d);
    accel_device_properties_t props{};
    props.struct_size = sizeof props;
    ACCEL_REQUIRE_OK(accel_get_device_properties(d, &props));
    const std::string text = props.graphs;
    INFO("graphs: " << text);
    if (!native) {
      CHECK(text == "recorded by accel");
    } else if (recorder) {
      CHECK((text == "recorded by accel (ACCEL_GRAPHS=recorder)" || text == "recorded by accel"));
    } else if (expected("native_graphs")) {
      // The plugin's own words follow, in parentheses.
      CHECK(text.rfind("native (", 0) == 0);
      CHECK(text.size() > 9);
      CHECK(text.back() == ')');
    } else {
      CHECK((text.rfind("native (", 0) == 0 || text == "recorded by accel"));
    }
  }
}

TEST_CASE("graphs: 1000 replays with results checked every 100", "[graphs]") {
  ThreadStateGuard guard;
  if (!has_graph_groups("1000 replays")) return;
  Module mod("1000 replays");
  if (mod.m == nullptr) return;
  accel_kernel_t k = nullptr;
  ACCEL_REQUIRE_OK(accel_module_get_kernel(mod.m, "saxpy", &k));
  constexpr uint32_t n = 128;
  Stream s;
  DeviceMem x(-1, n * sizeof(float)), y(-1, n * sizeof(float));
  upload(x.get(), std::vector<float>(n, 1.0f), s);
  upload(y.get(), std::vector<float>(n, 0.0f), s);
  Graph graph;
  const float one = 1.0f;
  ACCEL_REQUIRE_OK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  ACCEL_REQUIRE_OK(saxpy(k, one, x.get(), y.get(), n, s));
  ACCEL_REQUIRE_OK(accel_stream_end_capture(s, &graph.g));
  for (int i = 1; i <= 1000; ++i) {
    ACCEL_REQUIRE_OK(accel_graph_replay(graph.g, s));
    if (i % 100 == 0) {
      INFO("after replay " << i);
      REQUIRE(download<float>(y.get(), n, s) == std::vector<float>(n, static_cast<float>(i)));
    }
  }
}

TEST_CASE("graphs: copies and memsets replay on another stream of the device", "[graphs]") {
  ThreadStateGuard guard;
  if (!has_graph_groups("replay on another stream")) return;
  Stream s1, s2;
  DeviceMem a(-1, kBytes), b(-1, kBytes);
  std::vector<unsigned char> host(kBytes, 0);
  Registered host_registered(host.data(), kBytes);
  Graph graph;
  ACCEL_REQUIRE_OK(accel_stream_begin_capture(s1, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  ACCEL_REQUIRE_OK(accel_memset_async(a.get(), 3, kBytes, s1));
  ACCEL_REQUIRE_OK(accel_memcpy_async(b.get(), a.get(), kBytes, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s1));
  if (host_registered.ok()) {
    ACCEL_REQUIRE_OK(
        accel_memcpy_async(host.data(), b.get(), kBytes, ACCEL_MEMCPY_DEVICE_TO_HOST, s1));
  }
  ACCEL_REQUIRE_OK(accel_stream_end_capture(s1, &graph.g));
  CHECK(all_bytes(host, 0));
  for (accel_stream_t on : {s2.get(), s1.get(), static_cast<accel_stream_t>(nullptr)}) {
    INFO("replay on " << (on == nullptr ? "the current stream" : "a created stream"));
    std::fill(host.begin(), host.end(), 0);
    ACCEL_REQUIRE_OK(accel_memset_async(b.get(), 0, kBytes, s2));
    ACCEL_REQUIRE_OK(stream_synchronize(s2));
    ACCEL_REQUIRE_OK(accel_graph_replay(graph.g, on));
    accel_stream_t waited = on;
    if (waited == nullptr) ACCEL_REQUIRE_OK(accel_current_stream(-1, &waited));
    ACCEL_REQUIRE_OK(stream_synchronize(waited));
    CHECK(all_bytes(download<unsigned char>(b.get(), kBytes, s2), 3));
    if (host_registered.ok()) CHECK(all_bytes(host, 3));  // written at each replay
  }
}

TEST_CASE("graphs: replay of another device's graph is refused", "[graphs]") {
  ThreadStateGuard guard;
  if (!has_graph_groups("another device") || !need_devices(2)) return;
  Stream s0(0), s1(1);
  DeviceMem a(0, kBytes);
  std::atomic<int> ran{0};
  const bool host_fn = has_cap(ACCEL_CAP_HOST_FUNCTIONS);
  Graph graph;
  ACCEL_REQUIRE_OK(accel_stream_begin_capture(s0, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  if (host_fn) {  // first, so a replay that started queueing shows
    ACCEL_REQUIRE_OK(accel_launch_host_func(
        s0, [](void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }, &ran));
  }
  ACCEL_REQUIRE_OK(accel_memset_async(a.get(), 1, kBytes, s0));
  ACCEL_REQUIRE_OK(accel_stream_end_capture(s0, &graph.g));
  FreshResult r = run_in_fresh_thread([&] { return accel_graph_replay(graph.g, s1); });
  CHECK(r.status == ACCEL_ERROR_DEVICE_MISMATCH);
  CHECK(contains_ci(r.after, "graph"));
  ACCEL_REQUIRE_OK(stream_synchronize(s1));
  CHECK(ran.load() == 0);  // nothing of it was queued
  ACCEL_REQUIRE_OK(accel_graph_replay(graph.g, s0));
  ACCEL_REQUIRE_OK(stream_synchronize(s0));
  if (host_fn) CHECK(ran.load() == 1);
}

TEST_CASE("graphs: capture on a default stream is refused", "[graphs]") {
  ThreadStateGuard guard;
  accel_stream_t def = nullptr;
  ACCEL_REQUIRE_OK(accel_current_stream(-1, &def));
  ACCEL_CHECK_ERROR(accel_stream_begin_capture(def, ACCEL_CAPTURE_MODE_GLOBAL, 0),
                    ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK(status_of(def) == ACCEL_CAPTURE_STATUS_NONE);
  Stream s;
  ACCEL_CHECK_ERROR(accel_stream_begin_capture(s, static_cast<accel_capture_mode_t>(7), 0),
                    ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, 123456789),
                    ACCEL_ERROR_INVALID_ARGUMENT);
  accel_graph_t g = nullptr;
  ACCEL_CHECK_ERROR(accel_stream_end_capture(s, &g), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(status_of(s) == ACCEL_CAPTURE_STATUS_NONE);
}

TEST_CASE("graphs: nested capture is refused and invalidates the capture", "[graphs]") {
  ThreadStateGuard guard;
  if (!has_graph_groups("nested capture")) return;
  Stream s, other;
  ACCEL_REQUIRE_OK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  // Another stream may capture at the same time: not nested.
  ACCEL_REQUIRE_OK(accel_stream_begin_capture(other, ACCEL_CAPTURE_MODE_RELAXED, 0));
  Graph og;
  ACCEL_REQUIRE_OK(accel_stream_end_capture(other, &og.g));
  CHECK(og.g != nullptr);
  expect_refused(s, "accel_stream_begin_capture",
                 [&] { return accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, 0); });
  // Work on an invalidated capture's stream is refused until it ends.
  DeviceMem a(-1, kBytes);
  ACCEL_REQUIRE_OK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  ACCEL_CHECK_STATUS(accel_stream_query(s), ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  ACCEL_CHECK_STATUS(accel_memset_async(a.get(), 0, kBytes, s),
                     ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED);
  expect_invalidated_end(s);
}

TEST_CASE("graphs: every refused call invalidates the capture", "[graphs]") {
  ThreadStateGuard guard;
  if (!has_graph_groups("refused calls")) return;
  Stream s;
  DeviceMem before(-1, kBytes);
  std::vector<unsigned char> pageable(kBytes, 0);
  int32_t device = -1;
  ACCEL_REQUIRE_OK(accel_stream_device(s, &device));
  auto begin = [&] {
    ACCEL_REQUIRE_OK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  };

  SECTION("stream synchronize") {
    begin();
    expect_refused(s, "accel_stream_synchronize", [&] { return accel_stream_synchronize(s); });
  }
  SECTION("stream query") {
    begin();
    expect_refused(s, "accel_stream_query", [&] { return accel_stream_query(s); });
  }
  SECTION("device synchronize") {
    begin();
    expect_refused(s, "accel_synchronize", [&] { return accel_synchronize(device); });
  }
  SECTION("malloc in global mode") {
    begin();
    void* p = nullptr;
    expect_refused(s, "accel_malloc", [&] { return accel_malloc(device, 64, &p); });
    CHECK(p == nullptr);
  }
  SECTION("free in global mode") {
    begin();
    expect_refused(s, "accel_free", [&] { return accel_free(before.get()); });
  }
  SECTION("empty cache in global mode") {
    begin();
    expect_refused(s, "accel_empty_cache", [&] { return accel_empty_cache(device); });
  }
  SECTION("pageable copies") {
    begin();
    expect_refused(s, "accel_memcpy_async", [&] {
      return accel_memcpy_async(before.get(), pageable.data(), kBytes, ACCEL_MEMCPY_HOST_TO_DEVICE,
                                s);
    });
    begin();
    expect_refused(s, "accel_memcpy_async", [&] {
      return accel_memcpy_async(pageable.data(), before.get(), kBytes, ACCEL_MEMCPY_DEVICE_TO_HOST,
                                s);
    });
  }
  SECTION("replay into a capturing stream") {
    Stream t;
    Graph graph;
    ACCEL_REQUIRE_OK(accel_stream_begin_capture(t, ACCEL_CAPTURE_MODE_GLOBAL, 0));
    ACCEL_REQUIRE_OK(accel_memset_async(before.get(), 1, kBytes, t));
    ACCEL_REQUIRE_OK(accel_stream_end_capture(t, &graph.g));
    begin();
    expect_refused(s, "accel_graph_replay", [&] { return accel_graph_replay(graph.g, s); });
  }
  SECTION("module load and unload in global mode") {
    if (!has_cap(ACCEL_CAP_MODULES)) return;
    Module mod("module unload in capture");
    if (mod.m == nullptr) return;
    accel_module_image_t im[8];
    const size_t n = accel_kernels_images(im, 8);
    accel_module_t m = nullptr;
    begin();
    expect_refused(s, "accel_module_load",
                   [&] { return accel_module_load(device, im, n, nullptr, &m); });
    CHECK(m == nullptr);
    begin();
    expect_refused(s, "accel_module_unload", [&] { return accel_module_unload(mod.m); });
  }
  SECTION("events recorded in the capture") {
    if (!need_group(globals().events)) return;
    Event e(device);
    begin();
    ACCEL_REQUIRE_OK(accel_event_record(e, s));
    expect_refused(s, "accel_event_query", [&] { return accel_event_query(e); });
    begin();
    ACCEL_REQUIRE_OK(accel_event_record(e, s));
    expect_refused(s, "accel_event_synchronize", [&] { return accel_event_synchronize(e); });
    if (!need_cap(ACCEL_CAP_TIMING_EVENTS, "timing events")) return;
    Event t0(device, ACCEL_EVENT_ENABLE_TIMING), t1(device, ACCEL_EVENT_ENABLE_TIMING);
    begin();
    ACCEL_REQUIRE_OK(accel_event_record(t0, s));
    ACCEL_REQUIRE_OK(accel_event_record(t1, s));
    float ms = 0;
    expect_refused(s, "accel_event_elapsed_time",
                   [&] { return accel_event_elapsed_time(t0, t1, &ms); });
  }
  // Nothing refused leaves the stream or device unusable.
  ACCEL_CHECK_OK(accel_memset_async(before.get(), 0, kBytes, s));
  ACCEL_CHECK_OK(stream_synchronize(s));
}

TEST_CASE("graphs: the three modes across two threads", "[graphs]") {
  ThreadStateGuard guard;
  if (!has_graph_groups("capture modes")) return;
  Stream s;
  int32_t device = -1;
  ACCEL_REQUIRE_OK(accel_stream_device(s, &device));
  std::vector<void*> made;  // freed once no capture is left
  // accel_malloc on the capturing thread or on another one.
  auto try_malloc = [&](bool on_capturing_thread) {
    accel_status_t st = ACCEL_ERROR_INTERNAL;
    void* p = nullptr;
    if (on_capturing_thread) {
      st = accel_malloc(device, 64, &p);
    } else {
      std::thread t([&] { st = accel_malloc(device, 64, &p); });
      t.join();
    }
    if (p != nullptr) made.push_back(p);
    return st;
  };
  SECTION("global refuses other threads") {
    ACCEL_REQUIRE_OK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, 0));
    CHECK(try_malloc(false) == ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    expect_invalidated_end(s);
  }
  SECTION("thread local refuses only the capturing thread") {
    ACCEL_REQUIRE_OK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_THREAD_LOCAL, 0));
    CHECK(try_malloc(false) == ACCEL_SUCCESS);
    CHECK(status_of(s) == ACCEL_CAPTURE_STATUS_ACTIVE);
    CHECK(try_malloc(true) == ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    expect_invalidated_end(s);
  }
  SECTION("relaxed refuses neither") {
    ACCEL_REQUIRE_OK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_RELAXED, 0));
    CHECK(try_malloc(true) == ACCEL_SUCCESS);
    CHECK(try_malloc(false) == ACCEL_SUCCESS);
    CHECK(status_of(s) == ACCEL_CAPTURE_STATUS_ACTIVE);
    // What conflicts with every capture is still refused.
    expect_refused(s, "accel_stream_synchronize", [&] { return accel_stream_synchronize(s); });
  }
  for (void* p : made) ACCEL_CHECK_OK(accel_free(p));
}

TEST_CASE("graphs: fork and join over two streams", "[graphs]") {
  ThreadStateGuard guard;
  if (!has_graph_groups("fork and join") || !has_fork_join("fork and join")) return;
  Stream s1, s2;
  Event fork_ev, join_ev;
  DeviceMem a(-1, kBytes), b(-1, kBytes), c(-1, kBytes);
  Graph graph;
  ACCEL_REQUIRE_OK(accel_stream_begin_capture(s1, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  ACCEL_REQUIRE_OK(accel_memset_async(a.get(), 5, kBytes, s1));
  ACCEL_REQUIRE_OK(accel_event_record(fork_ev, s1));
  CHECK(status_of(s2) == ACCEL_CAPTURE_STATUS_NONE);
  ACCEL_REQUIRE_OK(accel_stream_wait_event(s2, fork_ev));  // s2 joins
  CHECK(status_of(s2) == ACCEL_CAPTURE_STATUS_ACTIVE);
  ACCEL_REQUIRE_OK(accel_memcpy_async(b.get(), a.get(), kBytes, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s2));
  ACCEL_REQUIRE_OK(accel_event_record(join_ev, s2));
  ACCEL_REQUIRE_OK(accel_stream_wait_event(s1, join_ev));  // s2 rejoins
  ACCEL_REQUIRE_OK(accel_memcpy_async(c.get(), b.get(), kBytes, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s1));
  ACCEL_REQUIRE_OK(accel_stream_end_capture(s1, &graph.g));
  REQUIRE(graph.g != nullptr);
  CHECK(status_of(s2) == ACCEL_CAPTURE_STATUS_NONE);
  for (int round = 0; round < 3; ++round) {
    for (DeviceMem* m : {&a, &b, &c}) ACCEL_REQUIRE_OK(accel_memset_async(m->get(), 0, kBytes, s1));
    ACCEL_REQUIRE_OK(accel_graph_replay(graph.g, s1));
    CHECK(all_bytes(download<unsigned char>(c.get(), kBytes, s1), 5));
  }
}

TEST_CASE("graphs: a stream that never rejoins fails end capture", "[graphs]") {
  ThreadStateGuard guard;
  if (!has_graph_groups("no rejoin") || !has_fork_join("no rejoin")) return;
  Stream s1, s2;
  ACCEL_REQUIRE_OK(accel_stream_set_name(s2, "side-stream"));
  Event fork_ev;
  DeviceMem a(-1, kBytes);
  ACCEL_REQUIRE_OK(accel_stream_begin_capture(s1, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  ACCEL_REQUIRE_OK(accel_event_record(fork_ev, s1));
  ACCEL_REQUIRE_OK(accel_stream_wait_event(s2, fork_ev));
  ACCEL_REQUIRE_OK(accel_memset_async(a.get(), 1, kBytes, s2));
  accel_graph_t g = reinterpret_cast<accel_graph_t>(&g);
  FreshResult r = run_in_fresh_thread([&] { return accel_stream_end_capture(s1, &g); });
  CHECK(r.status == ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED);
  CHECK(contains_ci(r.after, "side-stream"));
  CHECK(g == nullptr);
  CHECK(status_of(s1) == ACCEL_CAPTURE_STATUS_NONE);
  CHECK(status_of(s2) == ACCEL_CAPTURE_STATUS_NONE);
  // Both streams work again, and the memset was never run.
  ACCEL_REQUIRE_OK(accel_memset_async(a.get(), 0, kBytes, s2));
  CHECK(all_bytes(download<unsigned char>(a.get(), kBytes, s2), 0));
}

TEST_CASE("graphs: a stream destroyed while capturing ends the capture", "[graphs]") {
  ThreadStateGuard guard;
  if (!has_graph_groups("destroyed stream")) return;
  DeviceMem a(-1, kBytes);
  {
    Stream s;
    ACCEL_REQUIRE_OK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, 0));
    ACCEL_REQUIRE_OK(accel_memset_async(a.get(), 1, kBytes, s));
    ACCEL_REQUIRE_OK(s.destroy());
    Stream again;  // may take the same slot: not capturing
    CHECK(status_of(again) == ACCEL_CAPTURE_STATUS_NONE);
  }
  if (!has_fork_join("destroyed joined stream")) return;
  Stream s1;
  Stream s2;
  Event fork_ev;
  ACCEL_REQUIRE_OK(accel_stream_begin_capture(s1, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  ACCEL_REQUIRE_OK(accel_event_record(fork_ev, s1));
  ACCEL_REQUIRE_OK(accel_stream_wait_event(s2, fork_ev));
  ACCEL_REQUIRE_OK(s2.destroy());
  expect_invalidated_end(s1);
}

TEST_CASE("graphs: allocations in capture keep their address at every replay", "[graphs]") {
  ThreadStateGuard guard;
  if (!has_graph_groups("allocations in capture")) return;
  Stream s;
  DeviceMem out(-1, kBytes);
  Graph graph;
  void* p = nullptr;
  ACCEL_REQUIRE_OK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, s, &p));
  REQUIRE(p != nullptr);
  ACCEL_REQUIRE_OK(accel_memset_async(p, 7, kBytes, s));
  ACCEL_REQUIRE_OK(accel_memcpy_async(out.get(), p, kBytes, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s));
  ACCEL_REQUIRE_OK(accel_free_async(p, s));
  ACCEL_REQUIRE_OK(accel_stream_end_capture(s, &graph.g));
  // Reserved by the graph: memory allocated now is elsewhere.
  void* q = nullptr;
  ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, s, &q));
  CHECK(q != p);
  ACCEL_REQUIRE_OK(accel_memset_async(q, 9, kBytes, s));
  for (int i = 0; i < 3; ++i) {
    ACCEL_REQUIRE_OK(accel_memset_async(out.get(), 0, kBytes, s));
    ACCEL_REQUIRE_OK(accel_graph_replay(graph.g, s));
    CHECK(all_bytes(download<unsigned char>(out.get(), kBytes, s), 7));
    CHECK(all_bytes(download<unsigned char>(q, kBytes, s), 9));
  }
  ACCEL_REQUIRE_OK(accel_free_async(q, s));

  // A shared pool: a second graph's allocation reuses the block the first
  // freed in its capture.
  uint64_t pool = 0;
  ACCEL_REQUIRE_OK(accel_graph_pool(graph.g, &pool));
  CHECK(pool != 0);
  Graph second;
  void* p2 = nullptr;
  ACCEL_REQUIRE_OK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, pool));
  ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, s, &p2));
  ACCEL_REQUIRE_OK(accel_memset_async(p2, 4, kBytes, s));
  ACCEL_REQUIRE_OK(accel_memcpy_async(out.get(), p2, kBytes, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s));
  ACCEL_REQUIRE_OK(accel_stream_end_capture(s, &second.g));
  CHECK(p2 == p);
  uint64_t pool2 = 0;
  ACCEL_REQUIRE_OK(accel_graph_pool(second.g, &pool2));
  CHECK(pool2 == pool);
  ACCEL_REQUIRE_OK(accel_graph_replay(second.g, s));
  CHECK(all_bytes(download<unsigned char>(out.get(), kBytes, s), 4));
  // The snapshot lists the pool with its block, and tags the allocator's
  // block with the pool's id (nlohmann's dump: keys in sorted order).
  const std::string snap = snapshot_text();
  INFO("snapshot: " << snap);
  const auto at = snap.find("\"graph_pools\":[");
  REQUIRE(at != std::string::npos);
  const std::string pools = snap.substr(at);
  CHECK(pools.find("{\"address\":" + std::to_string(reinterpret_cast<uintptr_t>(p)) +
                   ",\"in_use\":true,\"size\":" + std::to_string(kBytes) + "}") !=
        std::string::npos);
  CHECK(pools.find("\"id\":" + std::to_string(pool) + ",") != std::string::npos);
  if (expected("allocator"))
    CHECK(snap.find("\"graph_pool\":" + std::to_string(pool)) != std::string::npos);
  uint64_t handle = 0;
  ACCEL_REQUIRE_OK(accel_graph_pool_handle(-1, &handle));
  CHECK(handle != 0);
  CHECK(handle != pool);
}

TEST_CASE("graphs: destroy while a replay is queued behind a blocked stream", "[graphs]") {
  ThreadStateGuard guard;
  if (!has_graph_groups("destroy behind a gate")) return;
  if (!has_cap(ACCEL_CAP_HOST_FUNCTIONS)) {
    WARN("graphs: the backend has no host functions: no gate to block a stream with");
    note_not_run("graphs: destroy behind a gate (no host functions)");
    return;
  }
  Stream s1, s2;
  DeviceMem out(-1, kBytes);
  Graph graph;
  void* p = nullptr;
  ACCEL_REQUIRE_OK(accel_stream_begin_capture(s1, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, s1, &p));
  ACCEL_REQUIRE_OK(accel_memset_async(p, 6, kBytes, s1));
  ACCEL_REQUIRE_OK(accel_memcpy_async(out.get(), p, kBytes, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s1));
  ACCEL_REQUIRE_OK(accel_stream_end_capture(s1, &graph.g));
  ACCEL_REQUIRE_OK(accel_memset_async(out.get(), 0, kBytes, s2));
  Gate gate;
  ACCEL_REQUIRE_OK(gate.launch(s2));
  ACCEL_REQUIRE_OK(accel_graph_replay(graph.g, s2));
  {
    Deadline d("accel_graph_destroy", kLaunchLimit,
               "destroying a graph waits in stream order, never on the host");
    ACCEL_REQUIRE_OK(accel_graph_destroy(graph.g));
  }
  graph.g = nullptr;
  // The replay has not run: its pool memory is not handed out again yet.
  void* q = nullptr;
  ACCEL_REQUIRE_OK(accel_malloc_async(kBytes, s1, &q));
  CHECK(gate.done() == false);
  if (globals().allocator.present) CHECK(q != p);
  ACCEL_REQUIRE_OK(accel_memset_async(q, 0xee, kBytes, s1));
  ACCEL_REQUIRE_OK(stream_synchronize(s1));
  gate.release();
  ACCEL_REQUIRE_OK(stream_synchronize(s2));
  CHECK(all_bytes(download<unsigned char>(out.get(), kBytes, s2), 6));
  ACCEL_REQUIRE_OK(accel_free_async(q, s1));
  ACCEL_REQUIRE_OK(stream_synchronize(s1));
}
