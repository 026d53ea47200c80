// End-to-end tests of the hip plugin through accel.h, against the fake HIP
// runtime (tests/fakes/hip), Debian's real HIP 5.2 runtime (no GPU here) and
// a missing one. Discovery runs once per process, so each scenario is its own
// `meson test` with its own environment, selected by its Catch2 tag (see
// meson.build); scenarios that need a KFD topology fabricate one and point
// ACCEL_HIP_KFD_TOPOLOGY at it before the first accel call.
#include <catch2/catch.hpp>
#include "runner.hpp"

#include "../common.hpp"
#include "../interop.hpp"
#include "fake_hip_error_texts.hpp"

#include <accel/accel.h>
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using backend_test::device_native_of;
using backend_test::env;
using backend_test::Info;
using backend_test::native_of;

Info hip_info() { return backend_test::backend_info("hip"); }

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// The fake runtime as the plugin loaded it: RTLD_NOLOAD proves it is the same
// instance (same model, same per-thread current device).
void* fake_runtime() {
  std::string path = env("ACCEL_HIP_RUNTIME");
  REQUIRE(!path.empty());
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  INFO(path << ": " << (h == nullptr ? dlerror() : "loaded"));
  REQUIRE(h != nullptr);
  return h;
}

template <typename Fn>
Fn sym(void* h, const char* name) {
  void* p = dlsym(h, name);
  INFO(name);
  REQUIRE(p != nullptr);
  return reinterpret_cast<Fn>(p);
}
#define FAKE_FN(h, f) sym<decltype(&::f)>(h, #f)

// The fake's text for `code` (its data header,
// tests/fakes/hip/fake_hip_error_texts.hpp): AMD's documented description,
// which no plugin's built-in table holds.
std::string runtime_text(hipError_t code) { return fake_hip_errors::find(code).text; }

bool fake_initialised() { return sym<int (*)()>(fake_runtime(), "fake_hip_initialised")() != 0; }

// A fabricated KFD topology (one CPU node, `gpus` GPU nodes with unique ids
// 0xfa4e000000000000 + i, matching the fake's UUIDs) and a stand-in for
// /dev/kfd; the plugin is pointed at both. Must run before any accel call.
struct Topology {
  std::string dir;
  explicit Topology(int gpus, bool with_kfd = true) {
    char tmpl[] = "/tmp/accel-hip-topo-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    std::string nodes = dir + "/nodes";
    REQUIRE(mkdir(nodes.c_str(), 0755) == 0);
    write_node(nodes, 0, "cpu_cores_count 8\nsimd_count 0\ngfx_target_version 0\n");
    for (int i = 0; i < gpus; ++i) {
      write_node(nodes, i + 1,
                 "cpu_cores_count 0\nsimd_count 416\ngfx_target_version 90010\nunique_id " +
                     std::to_string(0xfa4e000000000000ull + static_cast<unsigned>(i)) + "\n");
    }
    std::string kfd = dir + "/kfd";
    if (with_kfd) std::ofstream(kfd) << "";
    setenv("ACCEL_HIP_KFD_TOPOLOGY", nodes.c_str(), 1);
    setenv("ACCEL_HIP_KFD_DEVICE", kfd.c_str(), 1);
  }
  ~Topology() { (void)std::system(("rm -rf '" + dir + "'").c_str()); }
  static void write_node(const std::string& nodes, int n, const std::string& props) {
    std::string d = nodes + "/" + std::to_string(n);
    REQUIRE(mkdir(d.c_str(), 0755) == 0);
    std::ofstream(d + "/properties") << props;
  }
};

using backend_test::in_child;

// --- interop helpers -----------------------------------------------------------

// A gate a stream waits at: a host function (accel's, or the vendor's
// hipStreamAddCallback) that blocks until open() or destruction, so a test
// can hold a queue and look at what waits behind it.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool is_open = false;
  std::atomic<bool> reached{false};
  ~Gate() { open(); }
  void open() {
    {
      std::lock_guard lock(m);
      is_open = true;
    }
    cv.notify_all();
  }
  void pass() {
    reached.store(true);
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return is_open; });
  }
  static void fn(void* self) { static_cast<Gate*>(self)->pass(); }
  static void callback(hipStream_t, hipError_t, void* self) { fn(self); }
  // Waits until a stream reached the gate (so work queued before it is done).
  void wait_reached() {
    for (int i = 0; i < 5000 && !reached.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    REQUIRE(reached.load());
  }
};

// The device's default stream, as a thread that never chose a stream sees it.
accel_stream_t default_stream_of(int32_t device) {
  accel_stream_t s = nullptr;
  accel_status_t st = ACCEL_ERROR_INTERNAL;
  std::thread([&] { st = accel_current_stream(device, &s); }).join();
  REQUIRE(st == ACCEL_SUCCESS);
  return s;
}

std::vector<unsigned char> iota_bytes(size_t n, unsigned char start) {
  std::vector<unsigned char> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// The fake's HIP device of the calling thread, restored on scope exit (the
// fake's hipSetDevice is accel's current device too).
struct HipDeviceScope {
  void* h;
  int saved = 0;
  explicit HipDeviceScope(int device) : h(fake_runtime()) {
    REQUIRE(FAKE_FN(h, hipGetDevice)(&saved) == hipSuccess);
    REQUIRE(FAKE_FN(h, hipSetDevice)(device) == hipSuccess);
  }
  ~HipDeviceScope() { (void)FAKE_FN(h, hipSetDevice)(saved); }
};

// Debian HIP 5.2's export list (the v5 fake): no hipStreamGetDevice, no
// hipLaunchHostFunc.
bool runtime_is_52() { return dlsym(fake_runtime(), "hipStreamGetDevice") == nullptr; }

int fake_count(const char* hook) { return sym<int (*)()>(fake_runtime(), hook)(); }

// --- children of the fork tests ------------------------------------------------

std::atomic<int> g_host_calls{0};

int child_works_body() {
  if (accel_device_count() != 2) return 10;
  accel_device_properties_t p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  if (accel_get_device_properties(1, &p) != ACCEL_SUCCESS) return 11;
  if (std::string(p.name) != "Fake AMD Instinct MI210 #1") return 12;
  size_t free_b = 0, total_b = 0;
  if (accel_mem_get_info(1, &free_b, &total_b) != ACCEL_SUCCESS || total_b == 0) return 13;
  accel_stream_t s = nullptr;
  if (accel_stream_create(1, 0, &s) != ACCEL_SUCCESS) return 14;
  accel_event_t e = nullptr;
  if (accel_event_create(1, ACCEL_EVENT_DEFAULT, &e) != ACCEL_SUCCESS) return 15;
  if (accel_launch_host_func(
          s, [](void*) { g_host_calls.fetch_add(1); }, nullptr) != ACCEL_SUCCESS)
    return 16;
  if (accel_event_record(e, s) != ACCEL_SUCCESS) return 17;
  if (accel_event_synchronize(e) != ACCEL_SUCCESS) return 18;
  if (g_host_calls.load() != 1) return 19;
  if (accel_stream_destroy(s) != ACCEL_SUCCESS || accel_event_destroy(e) != ACCEL_SUCCESS)
    return 20;
  return 0;
}

int child_works() {
  int rc = child_works_body();
  if (rc != 0) std::fprintf(stderr, "child: step %d failed: %s\n", rc, accel_last_error());
  return rc;
}

// Counting works; work is refused with FORKED and a message saying what to do.
int child_refused() {
  if (accel_device_count() != 2) return 30;
  accel_stream_t s = nullptr;
  accel_status_t st = accel_stream_create(0, 0, &s);
  std::string msg = accel_last_error();
  if (st != ACCEL_ERROR_FORKED) {
    std::fprintf(stderr, "child: accel_stream_create gave %s: %s\n", accel_status_name(st),
                 msg.c_str());
    return 31;
  }
  if (!contains(msg, "hip") || (!contains(msg, "exec") && !contains(msg, "spawn"))) {
    std::fprintf(stderr, "child: FORKED message lacks backend or remedy: %s\n", msg.c_str());
    return 32;
  }
  std::fprintf(stderr, "child (expected refusal): %s\n", msg.c_str());
  return 0;
}

// --- the probe run as a subprocess by [debian] --------------------------------

int probe() {
  Info hip = hip_info();
  std::printf("found=%d\nstatus=%s\ndevices=%d\nreason=%s\n", hip.found ? 1 : 0,
              accel_backend_status_name(hip.status), hip.devices, hip.reason.c_str());
  std::fflush(stdout);
  return 0;
}

struct Captured {
  int exit_code = -1;
  std::string out, err;
};

// Runs this test program with --probe, capturing stdout and stderr apart.
Captured run_probe() {
  int out_pipe[2], err_pipe[2];
  REQUIRE(pipe(out_pipe) == 0);
  REQUIRE(pipe(err_pipe) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawn_file_actions_addclose(&fa, out_pipe[0]);
  posix_spawn_file_actions_addclose(&fa, err_pipe[0]);
  char self[4096] = {};
  REQUIRE(readlink("/proc/self/exe", self, sizeof self - 1) > 0);
  char arg1[] = "--probe";
  char* argv[] = {self, arg1, nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, self, &fa, nullptr, argv, environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  Captured c;
  struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (open_fds > 0 && std::chrono::steady_clock::now() < deadline) {
    if (poll(fds, 2, 100) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
      char buf[4096];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? c.out : c.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  if (open_fds > 0) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  REQUIRE(open_fds == 0);
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return c;
}

}  // namespace

// ---------------------------------------------------------------------------

TEST_CASE("missing runtime: unavailable and the reason names the path", "[missing]") {
  Info hip = hip_info();
  REQUIRE(hip.found);
  CHECK(hip.status == ACCEL_BACKEND_UNAVAILABLE);
  INFO(hip.reason);
  CHECK(contains(hip.reason, env("ACCEL_HIP_RUNTIME")));
  CHECK(contains(hip.reason, "cannot load the HIP runtime"));  // VendorLibrary's wording
  CHECK(accel_is_available() == 0);
  CHECK(accel_device_count() == 0);
  CHECK(contains(accel_selection_reason(), "unavailable"));
}

TEST_CASE("relative ACCEL_HIP_RUNTIME is refused", "[relative]") {
  Info hip = hip_info();
  CHECK(hip.status == ACCEL_BACKEND_UNAVAILABLE);
  INFO(hip.reason);
  CHECK(contains(hip.reason, "not an absolute path"));
}

TEST_CASE("fake runtime without devices: no_devices with the runtime's reason", "[no-devices]") {
  Info hip = hip_info();
  CHECK(hip.status == ACCEL_BACKEND_NO_DEVICES);
  CHECK(hip.devices == 0);
  INFO(hip.reason);
  CHECK(contains(hip.reason, "hipErrorNoDevice"));
  CHECK(contains(hip.reason, runtime_text(hipErrorNoDevice)));  // hipGetErrorString's
  CHECK(contains(hip.reason, "hipGetDeviceCount"));
  CHECK(accel_is_available() == 0);
}

TEST_CASE("Debian's HIP runtime without a GPU: no_devices quietly and the runtime not loaded",
          "[debian]") {
  if (access("/dev/kfd", F_OK) == 0) {
    accel_test::skipf("/dev/kfd exists: this machine may have an AMD GPU");
    return;
  }
  unsetenv("ACCEL_LOG_LEVEL");  // the default level is what is checked
  unsetenv("ACCEL_HIP_RUNTIME");
  Captured c = run_probe();
  INFO("stdout:\n" << c.out << "stderr:\n" << c.err);
  REQUIRE(c.exit_code == 0);
  REQUIRE(contains(c.out, "found=1"));
  if (contains(c.out, "status=unavailable") && contains(c.out, "cannot load the HIP runtime")) {
    accel_test::skipf("no HIP runtime installed (apt-get install libamdhip64-5): %s",
                c.out.c_str());
    return;
  }
  CHECK(contains(c.out, "status=no_devices"));
  CHECK(contains(c.out, "devices=0"));
  // Without /dev/kfd ROCr cannot see a GPU: discovery says so without
  // loading the runtime (no vendor runtime that is not needed to count
  // devices: it costs start-up time).
  CHECK(contains(c.out, "/dev/kfd is absent"));
  CHECK(contains(c.out, "the HIP runtime was not loaded"));
  CHECK_FALSE(contains(c.out, "hipGetDeviceCount"));
  CHECK(c.err.empty());  // accel printed nothing

  // The same runtime named explicitly is loaded and asked: it must agree
  // (hipErrorNoDevice), quietly.
  const char* debian = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5";
  if (access(debian, R_OK) != 0) {
    accel_test::skipf("(explicit part): %s is not installed", debian);
    return;
  }
  setenv("ACCEL_HIP_RUNTIME", debian, 1);
  Captured r = run_probe();
  unsetenv("ACCEL_HIP_RUNTIME");
  INFO("stdout:\n" << r.out << "stderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "status=no_devices"));
  CHECK(contains(r.out, "hipGetDeviceCount"));
  CHECK(contains(r.out, "hipErrorNoDevice"));
  CHECK(contains(r.out, "libamdhip64.so"));
  CHECK(contains(r.out, "/dev/kfd is absent"));
  CHECK(r.err.empty());  // neither accel nor the HIP runtime printed anything
}

TEST_CASE("KFD topology: counted without initialising the runtime and visibility applied",
          "[topology]") {
  Topology topo(3);
  // Physical GPU 2, then physical GPU 0 named by UUID; "9" stops the list.
  setenv("ROCR_VISIBLE_DEVICES", "2,GPU-fa4e000000000000,9,1", 1);
  setenv("FAKE_HIP_DEVICES", "3", 1);
  REQUIRE(accel_device_count() == 2);
  Info hip = hip_info();
  INFO(hip.reason);
  CHECK(hip.status == ACCEL_BACKEND_AVAILABLE);
  CHECK(contains(hip.reason, "KFD topology"));
  CHECK(contains(hip.reason, "ROCR_VISIBLE_DEVICES"));
  CHECK_FALSE(fake_initialised());  // discovery ran no HIP code

  accel_device_properties_t p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  REQUIRE(accel_get_device_properties(0, &p) == ACCEL_SUCCESS);
  CHECK(fake_initialised());
  CHECK(std::string(p.name) == "Fake AMD Instinct MI210 #2");  // runtime and count agree
  REQUIRE(accel_get_device_properties(1, &p) == ACCEL_SUCCESS);
  CHECK(std::string(p.name) == "Fake AMD Instinct MI210 #0");
}

// The plugin counts through the KFD topology with its own reading of the
// visibility variables; the fake runtime applies them with its own, separate
// model of ROCr and HIP. Each [agree] scenario (meson.build) sets the
// variables and EXPECT_PHYSICAL (the modelled GPUs the vendor's rules leave,
// in order, or "none"); both sides must match it. ACCEL_TEST_UNSET names
// variables to remove first (meson can only set them).
TEST_CASE("visibility variables: the count and the runtime agree", "[agree]") {
  for (const char* name : {"ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"}) {
    if (env("ACCEL_TEST_UNSET").find(name) != std::string::npos) unsetenv(name);
  }
  std::vector<int> expect;
  const std::string want = env("EXPECT_PHYSICAL");
  REQUIRE(!want.empty());
  if (want != "none") {
    for (size_t at = 0; at <= want.size();) {
      size_t comma = std::min(want.find(',', at), want.size());
      expect.push_back(std::stoi(want.substr(at, comma - at)));
      at = comma + 1;
    }
  }
  Topology topo(std::stoi(env("FAKE_HIP_DEVICES")));
  const auto n = static_cast<int32_t>(expect.size());
  INFO("ROCR_VISIBLE_DEVICES=" << env("ROCR_VISIBLE_DEVICES")
                               << " HIP_VISIBLE_DEVICES=" << env("HIP_VISIBLE_DEVICES")
                               << " CUDA_VISIBLE_DEVICES=" << env("CUDA_VISIBLE_DEVICES"));

  // The count, without running HIP code.
  CHECK(accel_device_count() == n);
  Info hip = hip_info();
  INFO("reason: " << hip.reason);
  CHECK(contains(hip.reason, "KFD topology"));
  CHECK_FALSE(fake_initialised());

  // The runtime's own answer.
  int runtime_count = -1;
  hipError_t rc = FAKE_FN(fake_runtime(), hipGetDeviceCount)(&runtime_count);
  CHECK(runtime_count == n);
  CHECK(rc == (n == 0 ? hipErrorNoDevice : hipSuccess));

  // Which GPU each ordinal is, asked through accel (the runtime answers).
  for (int32_t i = 0; i < n; ++i) {
    accel_device_properties_t p;
    std::memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    REQUIRE(accel_get_device_properties(i, &p) == ACCEL_SUCCESS);
    CHECK(std::string(p.name) ==
          "Fake AMD Instinct MI210 #" + std::to_string(expect[static_cast<size_t>(i)]));
  }
}

TEST_CASE("KFD topology with GPUs but no /dev/kfd: no_devices saying so", "[kfd-missing]") {
  Topology topo(2, /*with_kfd=*/false);
  CHECK(accel_device_count() == 0);
  Info hip = hip_info();
  INFO(hip.reason);
  CHECK(hip.status == ACCEL_BACKEND_NO_DEVICES);
  CHECK(contains(hip.reason, "lists 2 GPUs"));
  CHECK(contains(hip.reason, "is absent"));
}

TEST_CASE("every GPU hidden: no_devices naming the variable", "[hidden]") {
  Topology topo(2);
  setenv("ROCR_VISIBLE_DEVICES", "", 1);
  CHECK(accel_device_count() == 0);
  Info hip = hip_info();
  INFO(hip.reason);
  CHECK(hip.status == ACCEL_BACKEND_NO_DEVICES);
  CHECK(contains(hip.reason, "ROCR_VISIBLE_DEVICES is empty"));
}

TEST_CASE("fork: counting (KFD) leaves the child free; after init the child is refused",
          "[fork-topology]") {
  Topology topo(2);
  REQUIRE(accel_device_count() == 2);
  CHECK_FALSE(fake_initialised());
  CHECK(in_child(child_works) == 0);

  accel_device_properties_t p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  REQUIRE(accel_get_device_properties(0, &p) == ACCEL_SUCCESS);  // initialises HIP here
  CHECK(in_child(child_refused) == 0);
  // The parent is unaffected.
  accel_stream_t s = nullptr;
  REQUIRE(accel_stream_create(0, 0, &s) == ACCEL_SUCCESS);
  CHECK(accel_stream_synchronize(s) == ACCEL_SUCCESS);
  CHECK(accel_stream_destroy(s) == ACCEL_SUCCESS);
}

TEST_CASE("fork: counting through hipGetDeviceCount already initialised the runtime",
          "[fork-fallback]") {
  REQUIRE(accel_device_count() == 2);
  CHECK(fake_initialised());
  Info hip = hip_info();
  INFO(hip.reason);
  CHECK(contains(hip.reason, "hipGetDeviceCount"));
  CHECK((hip.caps & ACCEL_CAP_FORK_SAFE) == 0);
  CHECK(in_child(child_refused) == 0);
}

TEST_CASE("interop: hipSetDevice and accel agree on the current device", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  void* h = fake_runtime();
  auto hip_set = FAKE_FN(h, hipSetDevice);
  auto hip_get = FAKE_FN(h, hipGetDevice);

  CHECK(accel_current_device_index() == 0);
  REQUIRE(hip_set(1) == hipSuccess);
  CHECK(accel_current_device_index() == 1);
  REQUIRE(accel_set_device_index(0) == ACCEL_SUCCESS);
  int d = -1;
  REQUIRE(hip_get(&d) == hipSuccess);
  CHECK(d == 0);

  // Work on device 1's streams and memory leaves the caller's device alone.
  accel_stream_t s = nullptr;
  REQUIRE(accel_stream_create(1, 0, &s) == ACCEL_SUCCESS);
  void* mem = nullptr;
  REQUIRE(accel_malloc(1, 256, &mem) == ACCEL_SUCCESS);
  REQUIRE(accel_memset_async(mem, 7, 256, s) == ACCEL_SUCCESS);
  REQUIRE(accel_stream_synchronize(s) == ACCEL_SUCCESS);
  REQUIRE(accel_free(mem) == ACCEL_SUCCESS);
  REQUIRE(accel_stream_destroy(s) == ACCEL_SUCCESS);
  accel_stream_t def1 = nullptr;
  REQUIRE(accel_current_stream(1, &def1) == ACCEL_SUCCESS);
  REQUIRE(accel_stream_synchronize(def1) == ACCEL_SUCCESS);
  REQUIRE(hip_get(&d) == hipSuccess);
  CHECK(d == 0);
  CHECK(accel_current_device_index() == 0);

  // accel_set_stream moves the current device, in HIP too.
  REQUIRE(accel_set_stream(def1) == ACCEL_SUCCESS);
  REQUIRE(hip_get(&d) == hipSuccess);
  CHECK(d == 1);

  // A new thread starts on device 0 in both.
  int thread_hip = -1, thread_accel = -1;
  std::thread([&] {
    thread_accel = accel_current_device_index();
    (void)hip_get(&thread_hip);
  }).join();
  CHECK(thread_accel == 0);
  CHECK(thread_hip == 0);
}

// The native queue of an accel stream is the one the backend submits to:
// work put there through HIP is ordered with accel's work, both ways.
TEST_CASE("interop: native stream handles ordered with accel both ways", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  const uint32_t groups = ACCEL_CAP_NATIVE_HANDLES | ACCEL_CAP_HOST_MEMORY | ACCEL_CAP_PEER_COPY |
                          ACCEL_CAP_DEVICE_ATTRIBUTES;
  CHECK((hip_info().caps & groups) == groups);
  void* h = fake_runtime();
  auto hip_memset = FAKE_FN(h, hipMemsetAsync);
  auto hip_query = FAKE_FN(h, hipStreamQuery);
  auto hip_add_callback = FAKE_FN(h, hipStreamAddCallback);

  accel_stream_t s = nullptr;
  REQUIRE(accel_stream_create(1, 0, &s) == ACCEL_SUCCESS);
  const accel_native_handle_t nh = native_of(s);
  CHECK(nh.type == ACCEL_NATIVE_HIP);
  CHECK(std::string(nh.backend) == "hip");
  REQUIRE(nh.handle != nullptr);
  CHECK(nh.context == nullptr);
  CHECK(nh.ordinal == 1);
  auto q = static_cast<hipStream_t>(nh.handle);
  CHECK(hip_query(q) == hipSuccess);  // a live stream of the runtime

  const size_t n = 4096;
  const auto data = iota_bytes(n, 3);
  void* mem = nullptr;
  REQUIRE(accel_malloc(1, n, &mem) == ACCEL_SUCCESS);
  std::vector<unsigned char> back(n, 0);

  SECTION("accel copy; HIP fill on the exported queue; accel copy") {
    REQUIRE(accel_memcpy_async(mem, data.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, s) ==
            ACCEL_SUCCESS);
    REQUIRE(hip_memset(mem, 0x5A, 16, q) == hipSuccess);
    REQUIRE(accel_memcpy_async(back.data(), mem, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s) ==
            ACCEL_SUCCESS);
    REQUIRE(accel_stream_synchronize(s) == ACCEL_SUCCESS);
    CHECK(std::all_of(back.begin(), back.begin() + 16, [](unsigned char c) { return c == 0x5A; }));
    CHECK(std::equal(back.begin() + 16, back.end(), data.begin() + 16));
  }
  SECTION("HIP sees accel's pending work; accel sees HIP's") {
    Gate accel_gate;
    REQUIRE(accel_launch_host_func(s, Gate::fn, &accel_gate) == ACCEL_SUCCESS);
    accel_gate.wait_reached();
    CHECK(hip_query(q) == hipErrorNotReady);  // accel's host function holds the queue
    REQUIRE(hip_memset(mem, 0x21, n, q) == hipSuccess);
    accel_gate.open();
    REQUIRE(accel_stream_synchronize(s) == ACCEL_SUCCESS);  // includes HIP's fill
    CHECK(hip_query(q) == hipSuccess);

    Gate hip_gate;
    REQUIRE(hip_add_callback(q, Gate::callback, &hip_gate, 0) == hipSuccess);
    hip_gate.wait_reached();
    CHECK(accel_stream_query(s) == ACCEL_ERROR_NOT_READY);
    REQUIRE(accel_memcpy_async(back.data(), mem, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s) ==
            ACCEL_SUCCESS);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(back[0] == 0);  // the copy waits behind HIP's callback
    hip_gate.open();
    REQUIRE(accel_stream_synchronize(s) == ACCEL_SUCCESS);
    CHECK(std::all_of(back.begin(), back.end(), [](unsigned char c) { return c == 0x21; }));
  }
  SECTION("events and devices have native handles too") {
    accel_event_t e = nullptr;
    REQUIRE(accel_event_create(1, ACCEL_EVENT_DEFAULT, &e) == ACCEL_SUCCESS);
    REQUIRE(accel_event_record(e, s) == ACCEL_SUCCESS);
    accel_native_handle_t eh;
    std::memset(&eh, 0, sizeof eh);
    eh.struct_size = sizeof eh;
    REQUIRE(accel_event_native_handle(e, &eh) == ACCEL_SUCCESS);
    CHECK(eh.type == ACCEL_NATIVE_HIP);
    REQUIRE(eh.handle != nullptr);
    CHECK(eh.ordinal == 1);
    auto he = static_cast<hipEvent_t>(eh.handle);
    CHECK(FAKE_FN(h, hipEventSynchronize)(he) == hipSuccess);
    CHECK(FAKE_FN(h, hipEventQuery)(he) == hipSuccess);
    // HIP work waits for the accel event through its native handle.
    REQUIRE(FAKE_FN(h, hipStreamWaitEvent)(q, he, 0) == hipSuccess);
    REQUIRE(accel_event_destroy(e) == ACCEL_SUCCESS);

    accel_native_handle_t dh;
    std::memset(&dh, 0, sizeof dh);
    dh.struct_size = sizeof dh;
    REQUIRE(accel_device_native_handle(1, &dh) == ACCEL_SUCCESS);
    CHECK(dh.type == ACCEL_NATIVE_HIP);
    CHECK(dh.handle == nullptr);
    CHECK(dh.context == nullptr);
    CHECK(dh.ordinal == 1);
  }
  REQUIRE(accel_stream_synchronize(s) == ACCEL_SUCCESS);
  REQUIRE(accel_free(mem) == ACCEL_SUCCESS);
  REQUIRE(accel_stream_destroy(s) == ACCEL_SUCCESS);
}

// The default stream is a blocking HIP stream of its own (HIP's null stream
// has no handle to export): HIP code that passes no stream is still ordered
// with it both ways, by HIP's implicit synchronisation, which the fake models.
TEST_CASE("interop: the default stream and HIP's null stream wait for each other", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  void* h = fake_runtime();
  auto hip_memset = FAKE_FN(h, hipMemsetAsync);
  auto hip_query = FAKE_FN(h, hipStreamQuery);
  accel_stream_t def0 = default_stream_of(0);
  const accel_native_handle_t nh = native_of(def0);
  REQUIRE(nh.handle != nullptr);
  CHECK(native_of(def0).handle == nh.handle);
  CHECK(native_of(default_stream_of(1)).handle != nh.handle);
  HipDeviceScope on0(0);  // HIP's null stream is the current device's

  const size_t n = 4096;
  const auto data = iota_bytes(n, 5);
  void* mem = nullptr;
  REQUIRE(accel_malloc(0, n, &mem) == ACCEL_SUCCESS);
  std::vector<unsigned char> back(n, 0);

  SECTION("null-stream work waits for the default stream") {
    Gate gate;
    REQUIRE(accel_launch_host_func(def0, Gate::fn, &gate) == ACCEL_SUCCESS);
    REQUIRE(accel_memcpy_async(mem, data.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, def0) ==
            ACCEL_SUCCESS);
    gate.wait_reached();
    REQUIRE(hip_memset(mem, 0x11, 16, nullptr) == hipSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(hip_query(nullptr) == hipErrorNotReady);
    gate.open();
    REQUIRE(FAKE_FN(h, hipStreamSynchronize)(nullptr) == hipSuccess);
    REQUIRE(accel_memcpy_async(back.data(), mem, n, ACCEL_MEMCPY_DEVICE_TO_HOST, def0) ==
            ACCEL_SUCCESS);
    REQUIRE(accel_stream_synchronize(def0) == ACCEL_SUCCESS);
    CHECK(std::all_of(back.begin(), back.begin() + 16, [](unsigned char c) { return c == 0x11; }));
    CHECK(std::equal(back.begin() + 16, back.end(), data.begin() + 16));
  }
  SECTION("the default stream waits for null-stream work") {
    Gate gate;
    REQUIRE(FAKE_FN(h, hipStreamAddCallback)(nullptr, Gate::callback, &gate, 0) == hipSuccess);
    REQUIRE(hip_memset(mem, 0x22, n, nullptr) == hipSuccess);
    gate.wait_reached();
    REQUIRE(accel_memset_async(mem, 0x33, 16, def0) == ACCEL_SUCCESS);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(accel_stream_query(def0) == ACCEL_ERROR_NOT_READY);
    gate.open();
    REQUIRE(accel_memcpy_async(back.data(), mem, n, ACCEL_MEMCPY_DEVICE_TO_HOST, def0) ==
            ACCEL_SUCCESS);
    REQUIRE(accel_stream_synchronize(def0) == ACCEL_SUCCESS);
    CHECK(std::all_of(back.begin(), back.begin() + 16, [](unsigned char c) { return c == 0x33; }));
    CHECK(std::all_of(back.begin() + 16, back.end(), [](unsigned char c) { return c == 0x22; }));
  }
  REQUIRE(accel_free(mem) == ACCEL_SUCCESS);
}

TEST_CASE("interop: wrapping the program's HIP streams", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  void* h = fake_runtime();
  auto hip_create = FAKE_FN(h, hipStreamCreateWithPriority);
  auto hip_query = FAKE_FN(h, hipStreamQuery);
  auto hip_destroy = FAKE_FN(h, hipStreamDestroy);
  hipStream_t q = nullptr;
  {
    HipDeviceScope on1(1);
    REQUIRE(hip_create(&q, hipStreamNonBlocking, 0) == hipSuccess);
  }
  const int live = fake_count("fake_hip_live_streams");
  accel_native_handle_t nh;
  std::memset(&nh, 0, sizeof nh);
  nh.struct_size = sizeof nh;
  nh.type = ACCEL_NATIVE_HIP;
  nh.handle = q;
  nh.ordinal = -1;

  SECTION("borrowed: the wrapper works like any stream and leaves the queue alive") {
    accel_stream_t w = nullptr;
    REQUIRE(accel_stream_from_native(1, &nh, 0, &w) == ACCEL_SUCCESS);
    CHECK(native_of(w).handle == q);
    int32_t where = -1;
    REQUIRE(accel_stream_device(w, &where) == ACCEL_SUCCESS);
    CHECK(where == 1);
    const auto data = iota_bytes(8192, 9);
    void* mem = nullptr;
    REQUIRE(accel_malloc(1, data.size(), &mem) == ACCEL_SUCCESS);
    std::vector<unsigned char> back(data.size(), 0);
    std::atomic<int> ran{0};
    accel_event_t e = nullptr;
    REQUIRE(accel_event_create(1, ACCEL_EVENT_DEFAULT, &e) == ACCEL_SUCCESS);
    REQUIRE(accel_memcpy_async(mem, data.data(), data.size(), ACCEL_MEMCPY_HOST_TO_DEVICE, w) ==
            ACCEL_SUCCESS);
    REQUIRE(accel_launch_host_func(
                w, [](void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }, &ran) ==
            ACCEL_SUCCESS);
    REQUIRE(accel_memcpy_async(back.data(), mem, back.size(), ACCEL_MEMCPY_DEVICE_TO_HOST, w) ==
            ACCEL_SUCCESS);
    REQUIRE(accel_event_record(e, w) == ACCEL_SUCCESS);
    REQUIRE(accel_event_synchronize(e) == ACCEL_SUCCESS);
    CHECK(ran.load() == 1);
    CHECK(back == data);
    CHECK(accel_stream_query(w) == ACCEL_SUCCESS);
    REQUIRE(accel_event_destroy(e) == ACCEL_SUCCESS);
    REQUIRE(accel_free(mem) == ACCEL_SUCCESS);
    REQUIRE(accel_stream_destroy(w) == ACCEL_SUCCESS);
    CHECK(fake_count("fake_hip_live_streams") == live);  // the queue is still the program's
    CHECK(hip_query(q) == hipSuccess);
    CHECK(hip_destroy(q) == hipSuccess);
    CHECK(fake_count("fake_hip_live_streams") == live - 1);
  }
  SECTION("ACCEL_NATIVE_TAKE_OWNERSHIP: destroying the wrapper destroys the queue") {
    accel_stream_t w = nullptr;
    REQUIRE(accel_stream_from_native(1, &nh, ACCEL_NATIVE_TAKE_OWNERSHIP, &w) == ACCEL_SUCCESS);
    REQUIRE(accel_stream_synchronize(w) == ACCEL_SUCCESS);
    REQUIRE(accel_stream_destroy(w) == ACCEL_SUCCESS);
    CHECK(fake_count("fake_hip_live_streams") == live - 1);
    CHECK(hip_query(q) == hipErrorInvalidHandle);  // gone
  }
  SECTION("refusals") {
    accel_stream_t w = nullptr;
    // Another device's queue: hipStreamGetDevice names it; HIP 5.2 has no
    // such call and the plugin learns it from hipEventRecord's refusal.
    CHECK(accel_stream_from_native(0, &nh, 0, &w) == ACCEL_ERROR_DEVICE_MISMATCH);
    std::string msg = accel_last_error();
    INFO(msg);
    CHECK(contains(msg, "device 0"));
    if (runtime_is_52()) {
      CHECK(contains(msg, "hipEventRecord"));
      CHECK(contains(msg, "no hipStreamGetDevice"));
    } else {
      CHECK(contains(msg, "belongs to HIP device 1 (hipStreamGetDevice)"));
    }
    CHECK(w == nullptr);
    // HIP's special handles name no single queue.
    accel_native_handle_t special = nh;
    special.handle = hipStreamPerThread;
    CHECK(accel_stream_from_native(1, &special, 0, &w) == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(contains(accel_last_error(), "hipStreamPerThread"));
    // The default stream's queue may be borrowed, never taken.
    special.handle = native_of(default_stream_of(1)).handle;
    CHECK(accel_stream_from_native(1, &special, ACCEL_NATIVE_TAKE_OWNERSHIP, &w) ==
          ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(contains(accel_last_error(), "default stream of device 1"));
    REQUIRE(accel_stream_from_native(1, &special, 0, &w) == ACCEL_SUCCESS);
    REQUIRE(accel_stream_destroy(w) == ACCEL_SUCCESS);
    CHECK(accel_stream_synchronize(default_stream_of(1)) == ACCEL_SUCCESS);  // unharmed
    // A destroyed queue.
    REQUIRE(hip_destroy(q) == hipSuccess);
    w = nullptr;
    CHECK(accel_stream_from_native(1, &nh, 0, &w) == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(contains(accel_last_error(), "not a live HIP stream"));
    CHECK(w == nullptr);
  }
}

TEST_CASE("interop: pinned and registered host memory", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  void* h = fake_runtime();
  const int allocs = fake_count("fake_hip_host_allocations");
  const size_t n = 1 << 16;
  void* pinned = nullptr;
  REQUIRE(accel_host_malloc(n, 0, &pinned) == ACCEL_SUCCESS);
  CHECK(fake_count("fake_hip_host_allocations") == allocs + 1);  // hipHostMalloc'd
  auto* host = static_cast<unsigned char*>(pinned);
  for (int32_t d = 0; d < 2; ++d) {
    INFO("device " << d);
    const auto data = iota_bytes(n, static_cast<unsigned char>(17 + d));
    std::memcpy(host, data.data(), n);
    void* mem = nullptr;
    REQUIRE(accel_malloc(d, n, &mem) == ACCEL_SUCCESS);
    accel_stream_t s = default_stream_of(d);
    REQUIRE(accel_memcpy_async(mem, host, n, ACCEL_MEMCPY_HOST_TO_DEVICE, s) == ACCEL_SUCCESS);
    REQUIRE(accel_memset_async(mem, 0, 8, s) == ACCEL_SUCCESS);
    REQUIRE(accel_memcpy_async(host, mem, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s) == ACCEL_SUCCESS);
    REQUIRE(accel_stream_synchronize(s) == ACCEL_SUCCESS);
    CHECK(std::all_of(host, host + 8, [](unsigned char c) { return c == 0; }));
    CHECK(std::equal(host + 8, host + n, data.begin() + 8));
    REQUIRE(accel_free(mem) == ACCEL_SUCCESS);
  }
  REQUIRE(accel_host_free(pinned) == ACCEL_SUCCESS);
  REQUIRE(accel_empty_host_cache() == ACCEL_SUCCESS);  // the pinned cache keeps it until now
  CHECK(fake_count("fake_hip_host_allocations") == allocs);

  // Registered: page-locked in the runtime itself (it refuses to pin the
  // range again), unpinned by accel_host_unregister.
  std::vector<unsigned char> buf(n);
  const int ranges = fake_count("fake_hip_registered_ranges");
  REQUIRE(accel_host_register(buf.data(), buf.size(), 0) == ACCEL_SUCCESS);
  CHECK(fake_count("fake_hip_registered_ranges") == ranges + 1);
  CHECK(FAKE_FN(h, hipHostRegister)(buf.data() + 64, 64, 0) == hipErrorHostMemoryAlreadyRegistered);
  const auto data = iota_bytes(n, 41);
  std::memcpy(buf.data(), data.data(), n);
  void* mem = nullptr;
  REQUIRE(accel_malloc(1, n, &mem) == ACCEL_SUCCESS);
  std::vector<unsigned char> back(n, 0);
  accel_stream_t s1 = default_stream_of(1);
  REQUIRE(accel_memcpy_async(mem, buf.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, s1) == ACCEL_SUCCESS);
  REQUIRE(accel_memcpy_async(back.data(), mem, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s1) ==
          ACCEL_SUCCESS);
  REQUIRE(accel_stream_synchronize(s1) == ACCEL_SUCCESS);
  CHECK(back == data);
  REQUIRE(accel_free(mem) == ACCEL_SUCCESS);
  REQUIRE(accel_host_unregister(buf.data()) == ACCEL_SUCCESS);
  CHECK(fake_count("fake_hip_registered_ranges") == ranges);
  CHECK(FAKE_FN(h, hipHostUnregister)(buf.data()) == hipErrorHostMemoryNotRegistered);

  // Exhaustion is OUT_OF_MEMORY, saying how much (FAKE_HIP_HOST_MEMORY: 1 GiB).
  void* big = nullptr;
  CHECK(accel_host_malloc(size_t{2} << 30, 0, &big) == ACCEL_ERROR_OUT_OF_MEMORY);
  std::string msg = accel_last_error();
  INFO(msg);
  CHECK(contains(msg, "hipHostMalloc"));
  CHECK(contains(msg, "hipErrorOutOfMemory"));
  CHECK(contains(msg, "2147483648 bytes"));
  CHECK(big == nullptr);
}

TEST_CASE("interop: peer access and copies between devices", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  void* h = fake_runtime();
  int32_t can = -1;
  REQUIRE(accel_device_can_access_peer(0, 1, &can) == ACCEL_SUCCESS);
  CHECK(can == 1);  // xGMI between the modelled GCDs
  CHECK(accel_device_enable_peer_access(0, 1) == ACCEL_SUCCESS);
  CHECK(accel_device_enable_peer_access(0, 1) ==
        ACCEL_SUCCESS);  // hipErrorPeerAccessAlreadyEnabled
  {
    HipDeviceScope on0(0);  // it reached the runtime: enabled for device 0
    CHECK(FAKE_FN(h, hipDeviceEnablePeerAccess)(1, 0) == hipErrorPeerAccessAlreadyEnabled);
  }
  {
    HipDeviceScope on1(1);  // one direction only
    CHECK(FAKE_FN(h, hipDeviceEnablePeerAccess)(0, 0) == hipSuccess);
  }
  CHECK(accel_device_enable_peer_access(1, 0) == ACCEL_SUCCESS);  // already, from the program

  // hipMemcpyPeerAsync, in the order of the stream it was queued on.
  const size_t n = 1 << 16;
  const auto data = iota_bytes(n, 77);
  void *a = nullptr, *b = nullptr;
  REQUIRE(accel_malloc(0, n, &a) == ACCEL_SUCCESS);
  REQUIRE(accel_malloc(1, n, &b) == ACCEL_SUCCESS);
  accel_stream_t s0 = nullptr;
  REQUIRE(accel_stream_create(0, 0, &s0) == ACCEL_SUCCESS);
  Gate gate;
  REQUIRE(accel_launch_host_func(s0, Gate::fn, &gate) == ACCEL_SUCCESS);
  REQUIRE(accel_memcpy_async(a, data.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, s0) == ACCEL_SUCCESS);
  REQUIRE(accel_memcpy_peer_async(b, 1, a, 0, n, s0) == ACCEL_SUCCESS);
  gate.wait_reached();
  CHECK(accel_stream_query(s0) == ACCEL_ERROR_NOT_READY);
  gate.open();
  REQUIRE(accel_stream_synchronize(s0) == ACCEL_SUCCESS);
  std::vector<unsigned char> back(n, 0);
  accel_stream_t s1 = default_stream_of(1);
  REQUIRE(accel_memcpy_async(back.data(), b, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s1) == ACCEL_SUCCESS);
  REQUIRE(accel_stream_synchronize(s1) == ACCEL_SUCCESS);
  CHECK(back == data);
  REQUIRE(accel_stream_destroy(s0) == ACCEL_SUCCESS);
  REQUIRE(accel_free(a) == ACCEL_SUCCESS);
  REQUIRE(accel_free(b) == ACCEL_SUCCESS);
}

// One GCD of an MI250, as the fake models it (gfx90a:sramecc+:xnack-).
TEST_CASE("interop: device attributes and capability", "[interop]") {
  REQUIRE(accel_device_count() == 2);
  const bool v52 = runtime_is_52();
  struct Expect {
    accel_device_attr_t attr;
    int64_t value;
  };
  const Expect expected[] = {
      {ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR, 9},
      {ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR, 0},
      {ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_STEPPING, 10},  // the 'a' of gfx90a
      {ACCEL_DEVICE_ATTR_WARP_SIZE, 64},
      {ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK, 1024},
      {ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_X, 1024},
      {ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Y, 1024},
      {ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Z, 1024},
      {ACCEL_DEVICE_ATTR_MAX_GRID_DIM_X, 2147483647},
      {ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Y, 65536},
      {ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Z, 65536},
      {ACCEL_DEVICE_ATTR_SHARED_MEMORY_PER_BLOCK, 65536},
      {ACCEL_DEVICE_ATTR_MULTIPROCESSOR_COUNT, 104},
      {ACCEL_DEVICE_ATTR_CLOCK_RATE_KHZ, 1700000},
      {ACCEL_DEVICE_ATTR_MEMORY_BUS_WIDTH, 4096},
      {ACCEL_DEVICE_ATTR_L2_CACHE_SIZE, 8 * 1024 * 1024},
      {ACCEL_DEVICE_ATTR_INTEGRATED, 0},
      {ACCEL_DEVICE_ATTR_UNIFIED_ADDRESSING, 1},
      {ACCEL_DEVICE_ATTR_MANAGED_MEMORY, 1},
      {ACCEL_DEVICE_ATTR_CONCURRENT_KERNELS, 1},
      {ACCEL_DEVICE_ATTR_ECC_ENABLED, 1},
  };
  for (int32_t d = 0; d < 2; ++d) {
    for (const Expect& e : expected) {
      INFO("device " << d << ", " << accel_device_attr_name(e.attr) << ": " << accel_last_error());
      int64_t v = -1;
      CHECK(accel_device_get_attribute(d, e.attr, &v) == ACCEL_SUCCESS);
      CHECK(v == e.value);
    }
    int64_t v = -1;
    // HIP 6 answers the copy engines; HIP 5.2's hipDeviceGetAttribute has no case for it.
    accel_status_t st = accel_device_get_attribute(d, ACCEL_DEVICE_ATTR_ASYNC_ENGINE_COUNT, &v);
    if (v52) {
      CHECK(st == ACCEL_ERROR_NOT_SUPPORTED);
      CHECK(contains(accel_last_error(), "hipDeviceAttributeAsyncEngineCount"));
      CHECK(v == -1);
    } else {
      CHECK(st == ACCEL_SUCCESS);
      CHECK(v == 8);
    }
    v = -1;
    CHECK(accel_device_get_attribute(d, ACCEL_DEVICE_ATTR_MAX_ALLOCATION_SIZE, &v) ==
          ACCEL_ERROR_NOT_SUPPORTED);
    CHECK(contains(accel_last_error(), "largest single allocation"));
    CHECK(v == -1);

    accel_device_capability_t c;
    std::memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    REQUIRE(accel_get_device_capability(d, &c) == ACCEL_SUCCESS);
    for (accel_dtype_t t : {ACCEL_DTYPE_FLOAT16, ACCEL_DTYPE_FLOAT64, ACCEL_DTYPE_COMPLEX32,
                            ACCEL_DTYPE_COMPLEX128, ACCEL_DTYPE_BFLOAT16})
      CHECK((c.supported_dtypes & ACCEL_DTYPE_BIT(t)) != 0);
  }
}

// FAKE_HIP_PEER=0: a topology without peer links.
TEST_CASE("interop: devices without a peer link", "[interop-nopeer]") {
  REQUIRE(accel_device_count() == 2);
  int32_t can = -1;
  REQUIRE(accel_device_can_access_peer(0, 1, &can) == ACCEL_SUCCESS);
  CHECK(can == 0);
  CHECK(accel_device_enable_peer_access(0, 1) == ACCEL_ERROR_NOT_SUPPORTED);
  std::string msg = accel_last_error();
  INFO(msg);
  CHECK(contains(msg, "hipDeviceCanAccessPeer"));
  CHECK(contains(msg, "device 0 cannot access the memory of device 1"));
  // Copies still work (HIP stages them).
  const size_t n = 4096;
  const auto data = iota_bytes(n, 1);
  void *a = nullptr, *b = nullptr;
  REQUIRE(accel_malloc(0, n, &a) == ACCEL_SUCCESS);
  REQUIRE(accel_malloc(1, n, &b) == ACCEL_SUCCESS);
  accel_stream_t s1 = default_stream_of(1);
  std::vector<unsigned char> back(n, 0);
  accel_stream_t s0 = default_stream_of(0);
  REQUIRE(accel_memcpy_async(a, data.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, s0) == ACCEL_SUCCESS);
  REQUIRE(accel_stream_synchronize(s0) == ACCEL_SUCCESS);
  REQUIRE(accel_memcpy_peer_async(b, 1, a, 0, n, s1) == ACCEL_SUCCESS);
  REQUIRE(accel_memcpy_async(back.data(), b, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s1) == ACCEL_SUCCESS);
  REQUIRE(accel_stream_synchronize(s1) == ACCEL_SUCCESS);
  CHECK(back == data);
  REQUIRE(accel_free(a) == ACCEL_SUCCESS);
  REQUIRE(accel_free(b) == ACCEL_SUCCESS);
}

TEST_CASE("runtime version: asked only once the runtime is initialised", "[version]") {
  Topology topo(2);
  REQUIRE(accel_device_count() == 2);
  // Counted through the KFD topology: hipRuntimeGetVersion would initialise
  // the runtime, so the version is not known yet, and asking for it through
  // accel_get_backend_info must not initialise HIP either.
  Info before = hip_info();
  CHECK(before.runtime_version.empty());
  CHECK_FALSE(fake_initialised());

  accel_device_properties_t p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  REQUIRE(accel_get_device_properties(0, &p) == ACCEL_SUCCESS);             // lazy_init: hipInit
  CHECK(hip_info().runtime_version == "HIP runtime 6.0.32830 (60032830)");  // the fake's
}

TEST_CASE("runtime version: known at discovery when counting initialised HIP",
          "[version-counted]") {
  REQUIRE(accel_device_count() == 2);
  CHECK(fake_initialised());  // hipGetDeviceCount ran at discovery
  CHECK(hip_info().runtime_version == "HIP runtime 6.0.32830 (60032830)");
}

// What hipMalloc's failure reads: "hipMalloc failed: <name> (2): <text>
// (<bytes> bytes) on device 0".
std::string out_of_memory_message() {
  REQUIRE(accel_device_count() == 2);
  void* big = nullptr;
  CHECK(accel_malloc(0, size_t{2} << 30, &big) == ACCEL_ERROR_OUT_OF_MEMORY);
  std::string msg = accel_last_error();
  INFO(msg);
  CHECK(contains(msg, "hip"));
  CHECK(contains(msg, "hipMalloc failed: hipErrorOutOfMemory (2): "));
  CHECK(contains(msg, "device 0"));
  return msg;
}

TEST_CASE("properties and error text", "[errors]") {
  REQUIRE(accel_device_count() == 2);
  Info hip = hip_info();
  CHECK((hip.caps & ACCEL_CAP_NATIVE_CURRENT_DEVICE) != 0);
  CHECK((hip.caps & ACCEL_CAP_TIMING_EVENTS) != 0);
  CHECK((hip.caps & ACCEL_CAP_HOST_FUNCTIONS) != 0);
  CHECK((hip.caps & ACCEL_CAP_STREAM_PRIORITIES) != 0);
  CHECK((hip.caps & ACCEL_CAP_FORK_SAFE) == 0);

  accel_device_properties_t p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  REQUIRE(accel_get_device_properties(1, &p) == ACCEL_SUCCESS);
  CHECK(std::string(p.name) == "Fake AMD Instinct MI210 #1");
  CHECK(std::string(p.vendor) == "AMD");
  CHECK(std::string(p.architecture) == "gfx90a");  // ":sramecc+:xnack-" stripped
  CHECK(std::string(p.pci_bus_id) == "0000:11:00.0");
  CHECK(p.compute_units == 104);
  CHECK(p.total_memory == (uint64_t{1} << 30));
  CHECK(p.has_uuid == 1);
  CHECK(std::string(reinterpret_cast<const char*>(p.uuid), 16) == "fa4e000000000001");
  CHECK(p.device_index == 1);

  int32_t least = 0, greatest = 0;
  REQUIRE(accel_stream_priority_range(0, &least, &greatest) == ACCEL_SUCCESS);
  CHECK(least == 1);
  CHECK(greatest == -1);

  const std::string msg = out_of_memory_message();
  INFO(msg);
  // The text is hipGetErrorString's answer (the fake's data header).
  CHECK(contains(msg, "hipErrorOutOfMemory (2): " + runtime_text(hipErrorOutOfMemory)));
}

// FAKE_HIP_NO_ERROR_STRINGS=1: hipGetErrorName/hipGetErrorString answer
// NULL, so the name is the plugin's own and the text says there is none.
TEST_CASE("a runtime that cannot name a code: the plugin's own name and no text",
          "[errors-fallback]") {
  const std::string msg = out_of_memory_message();
  INFO(msg);
  CHECK(FAKE_FN(fake_runtime(), hipGetErrorString)(hipErrorOutOfMemory) == nullptr);
  CHECK(contains(msg, "hipErrorOutOfMemory (2): no description"));
  CHECK_FALSE(contains(msg, runtime_text(hipErrorOutOfMemory)));
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--probe") == 0) return probe();
  return accel_test::run(argc, argv, {}, nullptr);
}
