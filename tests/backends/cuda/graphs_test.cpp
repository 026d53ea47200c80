// The CUDA plugin's native graphs (ABI 1.4's graph group) end to end through
// accel.h over the fake driver, which models stream capture and graphs
// (tests/fakes/cuda/fake_graphs.cpp) and counts cuGraphLaunch calls and
// cuLaunchKernel calls: a replay that goes through the vendor's graph is one
// cuGraphLaunch and no cuLaunchKernel. Scenarios (meson.build): [graphs] (a
// driver with graphs), [graphs-no-driver-graphs] (FAKE_CUDA_GRAPHS=0: the
// driver has no capture entry points, the core records) and
// [graphs-recorder] (ACCEL_GRAPHS=recorder), and [graphs-direct]: the
// plugin's graph group called through its own table, no core (a recording
// against a device synchronize on another thread; keep 0). Without nvcc's
// PTX the kernel tests exit 77 (SKIP), saying why.
#include <catch2/catch.hpp>

#include <accel/accel.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "direct_plugin.hpp"
#include "kernel_helpers.hpp"

namespace {

using namespace cuda_kernel_test;

std::string graphs_text(int32_t device) {
  accel_device_properties_t props;
  std::memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  REQUIRE_OK(accel_get_device_properties(device, &props));
  return props.graphs;
}

// A saxpy module of device 0 and a created stream, released at the end.
struct Fixture {
  accel_module_t m = nullptr;
  accel_kernel_t saxpy = nullptr;
  accel_stream_t s = nullptr;
  bool ok = false;
  Fixture() {
    const accel_module_image_t* im = ptx_image();
    if (im == nullptr) return;
    m = load(*im, 0);
    saxpy = kernel(m, "saxpy");
    REQUIRE_OK(accel_stream_create(0, 0, &s));
    ok = true;
  }
  ~Fixture() {
    if (s != nullptr) accel_stream_destroy(s);
    if (m != nullptr) accel_module_unload(m);
  }
  // y = alpha * x + y over n elements on the stream.
  void launch(float alpha, const Buffer& x, const Buffer& y, uint32_t n) const {
    accel_launch_config_t c = config({(n + 63) / 64, 1, 1}, {64, 1, 1}, s);
    const accel_kernel_arg_t args[] = {val(alpha), ptr(x.p), ptr(y.p), val(n)};
    REQUIRE_OK(accel_launch_kernel(saxpy, &c, args, 4));
  }
};

// Captures two saxpy launches whose alpha comes from one host variable,
// changed between them and after the capture: the graph adds 3 * x per
// replay only if each launch kept its own value.
accel_graph_t capture_two_saxpy(const Fixture& f, const Buffer& x, const Buffer& y, uint32_t n) {
  accel_graph_t g = nullptr;
  float alpha = 1.0f;
  REQUIRE_OK(accel_stream_begin_capture(f.s, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  f.launch(alpha, x, y, n);
  alpha = 2.0f;
  f.launch(alpha, x, y, n);
  alpha = 100.0f;  // changes no replay
  REQUIRE_OK(accel_stream_end_capture(f.s, &g));
  REQUIRE(g != nullptr);
  return g;
}

// Replays `g` 1000 times, checking y == 3 * x * replays every 100.
void replay_1000(const Fixture& f, accel_graph_t g, const std::vector<float>& x, const Buffer& y) {
  for (int i = 1; i <= 1000; ++i) {
    REQUIRE_OK(accel_graph_replay(g, f.s));
    if (i % 100 != 0) continue;
    INFO("after replay " << i);
    const std::vector<float> got = y.read<float>(f.s);
    size_t wrong = 0;
    for (size_t k = 0; k < x.size(); ++k) wrong += got[k] != 3.0f * x[k] * static_cast<float>(i);
    REQUIRE(wrong == 0);
  }
}

void release_gate(void* gate) { static_cast<std::atomic<bool>*>(gate)->store(true); }

// Blocks the stream's worker until *gate is true.
void wait_gate(void* gate) {
  auto* g = static_cast<std::atomic<bool>*>(gate);
  while (!g->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace

TEST_CASE("native graphs: 1000 replays are cuGraphLaunch calls with arguments by value",
          "[graphs]") {
  Fixture f;
  if (!f.ok) return;
  CHECK((backend_test::backend_info("cuda").caps & ACCEL_CAP_GRAPHS) != 0);
  CHECK(graphs_text(0) == "native (CUDA graphs)");
  CHECK(graphs_text(1) == "native (CUDA graphs)");
  constexpr uint32_t n = 200;
  // Small integers: every product and sum below is exact in float.
  std::vector<float> x(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 7);
  const std::vector<float> zeros(n, 0.0f);
  Buffer dx(0, x, f.s), dy(0, zeros, f.s);
  accel_graph_t g = capture_two_saxpy(f, dx, dy, n);
  REQUIRE_OK(accel_stream_synchronize(f.s));
  const long long kernels = fake_count("kernel_launches");
  const long long launches = fake_count("graph_launches");
  REQUIRE_OK(accel_graph_instantiate(g));
  // Instantiation recorded the two kernels into the driver's graph once.
  CHECK(fake_count("kernel_launches") == kernels + 2);
  CHECK(fake_count("graph_execs") >= 1);
  replay_1000(f, g, x, dy);
  CHECK(fake_count("graph_launches") == launches + 1000);
  CHECK(fake_count("kernel_launches") == kernels + 2);  // none at replay
  CHECK(fake_count("captures") == 0);                   // the recording's capture ended
  REQUIRE_OK(accel_graph_destroy(g));
}

TEST_CASE("native graphs: a host function splits the graph into two vendor graphs", "[graphs]") {
  Fixture f;
  if (!f.ok) return;
  constexpr uint32_t n = 64;
  const std::vector<float> x(n, 1.0f);
  const std::vector<float> zeros(n, 0.0f);
  Buffer dx(0, x, f.s), dy(0, zeros, f.s);
  std::atomic<int> calls{0};
  accel_graph_t g = nullptr;
  REQUIRE_OK(accel_stream_begin_capture(f.s, ACCEL_CAPTURE_MODE_GLOBAL, 0));
  f.launch(1.0f, dx, dy, n);
  REQUIRE_OK(accel_launch_host_func(
      f.s, [](void* c) { static_cast<std::atomic<int>*>(c)->fetch_add(1); }, &calls));
  f.launch(2.0f, dx, dy, n);
  REQUIRE_OK(accel_stream_end_capture(f.s, &g));
  const long long launches = fake_count("graph_launches");
  for (int i = 0; i < 10; ++i) REQUIRE_OK(accel_graph_replay(g, f.s));
  CHECK(dy.read<float>(f.s) == std::vector<float>(n, 30.0f));
  CHECK(calls.load() == 10);
  CHECK(fake_count("graph_launches") == launches + 20);  // kernel, host function, kernel
  REQUIRE_OK(accel_graph_destroy(g));
}

TEST_CASE("native graphs: destroyed while a replay is queued the exec outlives it", "[graphs]") {
  Fixture f;
  if (!f.ok) return;
  constexpr uint32_t n = 32;
  const std::vector<float> x(n, 2.0f);
  const std::vector<float> zeros(n, 0.0f);
  Buffer dx(0, x, f.s), dy(0, zeros, f.s);
  accel_graph_t g = capture_two_saxpy(f, dx, dy, n);
  REQUIRE_OK(accel_graph_instantiate(g));
  REQUIRE_OK(accel_stream_synchronize(f.s));
  const long long execs = fake_count("graph_execs");
  std::atomic<bool> gate{false};
  REQUIRE_OK(accel_launch_host_func(f.s, wait_gate, &gate));
  REQUIRE_OK(accel_graph_replay(g, f.s));
  REQUIRE_OK(accel_graph_replay(g, f.s));
  REQUIRE_OK(accel_graph_destroy(g));         // never waits
  CHECK(fake_count("graph_execs") == execs);  // its launches still queued
  release_gate(&gate);
  REQUIRE_OK(accel_stream_synchronize(f.s));
  CHECK(dy.read<float>(f.s) == std::vector<float>(n, 12.0f));
  CHECK(fake_count("graph_execs") == execs - 1);
}

TEST_CASE("a driver without graphs: the core records and no cuGraphLaunch",
          "[graphs-no-driver-graphs]") {
  Fixture f;
  if (!f.ok) return;
  CHECK((backend_test::backend_info("cuda").caps & ACCEL_CAP_GRAPHS) != 0);  // the group is there
  CHECK(graphs_text(0) == "recorded by accel");
  constexpr uint32_t n = 100;
  std::vector<float> x(n);
  for (uint32_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 5);
  const std::vector<float> zeros(n, 0.0f);
  Buffer dx(0, x, f.s), dy(0, zeros, f.s);
  accel_graph_t g = capture_two_saxpy(f, dx, dy, n);
  const long long kernels = fake_count("kernel_launches");
  replay_1000(f, g, x, dy);
  CHECK(fake_count("graph_launches") == 0);
  CHECK(fake_count("kernel_launches") == kernels + 2000);  // re-issued at every replay
  REQUIRE_OK(accel_graph_destroy(g));
}

TEST_CASE("ACCEL_GRAPHS=recorder: the core re-issues and no cuGraphLaunch", "[graphs-recorder]") {
  Fixture f;
  if (!f.ok) return;
  CHECK(graphs_text(0) == "recorded by accel (ACCEL_GRAPHS=recorder)");
  constexpr uint32_t n = 50;
  const std::vector<float> x(n, 1.0f);
  const std::vector<float> zeros(n, 0.0f);
  Buffer dx(0, x, f.s), dy(0, zeros, f.s);
  accel_graph_t g = capture_two_saxpy(f, dx, dy, n);
  for (int i = 0; i < 5; ++i) REQUIRE_OK(accel_graph_replay(g, f.s));
  CHECK(dy.read<float>(f.s) == std::vector<float>(n, 15.0f));
  CHECK(fake_count("graph_launches") == 0);
  REQUIRE_OK(accel_graph_destroy(g));
}

// ---- the plugin's graph group called directly (no core) ---------------------

namespace {

// Device 0's byte buffer through the plugin's own table.
struct PluginBytes {
  const accel_plugin_api_t* a;
  void* p = nullptr;
  size_t n;
  PluginBytes(const accel_plugin_api_t* api, size_t bytes) : a(api), n(bytes) {
    REQUIRE(a->mem_alloc(0, n, &p) == ACCEL_SUCCESS);
  }
  ~PluginBytes() { a->mem_free(0, p); }
  std::vector<unsigned char> read(accel_plugin_stream_t s) const {
    std::vector<unsigned char> out(n);
    REQUIRE(a->memcpy_async(out.data(), p, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s) == ACCEL_SUCCESS);
    REQUIRE(a->stream_synchronize(s) == ACCEL_SUCCESS);
    return out;
  }
};

const accel_plugin_api_t* private_plugin() {
  static accel_host_services_t host = accel_test::quiet_host();
  int32_t count = 0;
  const accel_plugin_api_t* a =
      accel_test::open_private_copy(std::getenv("ACCEL_TEST_CUDA_PLUGIN"), &host, &count);
  REQUIRE(a != nullptr);
  REQUIRE(count == 2);
  REQUIRE(a->lazy_init() == ACCEL_SUCCESS);
  return a;
}

}  // namespace

TEST_CASE("graph group: a recording survives a device synchronize from another thread",
          "[graphs-direct]") {
  const accel_plugin_api_t* a = private_plugin();
  REQUIRE(a->graph_support != nullptr);
  CHECK(std::string(a->graph_support(0)) == "CUDA graphs");
  CHECK(a->graph_support(7) == nullptr);  // no such device
  accel_plugin_stream_t s = nullptr;
  REQUIRE(a->default_stream(0, &s) == ACCEL_SUCCESS);
  PluginBytes src(a, 256), dst(a, 256);
  REQUIRE(a->memset_async(dst.p, 0, dst.n, s) == ACCEL_SUCCESS);
  REQUIRE(a->stream_synchronize(s) == ACCEL_SUCCESS);
  const long long streams = fake_count("streams");
  accel_plugin_stream_t rec = nullptr;
  REQUIRE(a->graph_record_begin(0, &rec) == ACCEL_SUCCESS);
  CHECK(fake_count("captures") == 1);
  CHECK(a->memset_async(src.p, 5, src.n, rec) == ACCEL_SUCCESS);
  CHECK(a->memcpy_async(dst.p, src.p, dst.n, ACCEL_MEMCPY_DEVICE_TO_DEVICE, rec) == ACCEL_SUCCESS);
  // cuCtxSynchronize would be refused now and invalidate the recording: the
  // plugin's device_synchronize waits for the recording to end instead.
  std::atomic<bool> synced{false};
  std::atomic<accel_status_t> sync_status{ACCEL_ERROR_BACKEND_FAILURE};
  std::thread syncer([&] {
    sync_status = a->device_synchronize(0);
    synced = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(synced.load());
  accel_plugin_graph_t exec = nullptr;
  CHECK(a->graph_record_end(rec, 1, &exec) == ACCEL_SUCCESS);
  syncer.join();
  CHECK(sync_status.load() == ACCEL_SUCCESS);
  REQUIRE(exec != nullptr);
  CHECK(fake_count("captures") == 0);
  CHECK(fake_count("streams") == streams);                     // the private stream is gone
  CHECK(dst.read(s) == std::vector<unsigned char>(dst.n, 0));  // recorded, not run
  for (int i = 0; i < 3; ++i) REQUIRE(a->graph_launch(exec, s) == ACCEL_SUCCESS);
  CHECK(dst.read(s) == std::vector<unsigned char>(dst.n, 5));
  const long long execs = fake_count("graph_execs");
  a->graph_exec_destroy(exec);
  CHECK(fake_count("graph_execs") == execs - 1);
}

TEST_CASE("graph group: keep 0 discards the recording and its stream", "[graphs-direct]") {
  const accel_plugin_api_t* a = private_plugin();
  PluginBytes b(a, 64);
  const long long streams = fake_count("streams"), graphs = fake_count("graphs");
  const long long execs = fake_count("graph_execs");
  accel_plugin_stream_t rec = nullptr;
  REQUIRE(a->graph_record_begin(1, &rec) == ACCEL_SUCCESS);  // the other device
  CHECK(fake_count("streams") == streams + 1);
  CHECK(a->graph_record_end(rec, 0, nullptr) == ACCEL_SUCCESS);
  CHECK(fake_count("captures") == 0);
  CHECK(fake_count("streams") == streams);
  CHECK(fake_count("graphs") == graphs);
  CHECK(fake_count("graph_execs") == execs);
}

TEST_CASE("graph group: no recording begins while the device is being synchronized",
          "[graphs-direct]") {
  const accel_plugin_api_t* a = private_plugin();
  accel_plugin_stream_t s = nullptr;
  REQUIRE(a->default_stream(0, &s) == ACCEL_SUCCESS);
  std::atomic<bool> gate{false};
  REQUIRE(a->launch_host_func(s, wait_gate, &gate) == ACCEL_SUCCESS);
  std::atomic<bool> synced{false};
  std::thread syncer([&] {
    a->device_synchronize(0);  // held by the gate
    synced = true;
  });
  // Until the synchronize is in flight a recording may still begin (and is
  // discarded here); then the plugin declines, waiting for nothing (the
  // synchronize may be waiting for the host function asking).
  accel_status_t st = ACCEL_SUCCESS;
  for (int i = 0; i < 200 && st == ACCEL_SUCCESS; ++i) {
    accel_plugin_stream_t rec = nullptr;
    st = a->graph_record_begin(0, &rec);
    if (st == ACCEL_SUCCESS) {
      REQUIRE(a->graph_record_end(rec, 0, nullptr) == ACCEL_SUCCESS);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  CHECK(st == ACCEL_ERROR_NOT_SUPPORTED);
  CHECK_FALSE(synced.load());
  release_gate(&gate);
  syncer.join();
  accel_plugin_stream_t rec = nullptr;
  REQUIRE(a->graph_record_begin(0, &rec) == ACCEL_SUCCESS);  // over: recordings again
  CHECK(a->graph_record_end(rec, 0, nullptr) == ACCEL_SUCCESS);
}
