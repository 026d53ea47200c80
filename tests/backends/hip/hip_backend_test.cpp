// End-to-end tests of the hip plugin through accel.h, against the fake HIP
// runtime (tests/fakes/hip), Debian's real HIP 5.2 runtime (no GPU here) and
// a missing one. Discovery runs once per process, so each scenario is its own
// `meson test` with its own environment, selected by its Catch2 tag (see
// meson.build); scenarios that need a KFD topology fabricate one and point
// ACCEL_HIP_KFD_TOPOLOGY at it before the first accel call.
#include <catch2/catch.hpp>
#include "runner.hpp"

#include "../common.hpp"

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
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using backend_test::env;
using backend_test::Info;

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
  CHECK(contains(hip.reason, "no ROCm-capable device is detected (fake)"));  // the runtime's text
  CHECK(contains(hip.reason, "hipGetDeviceCount"));
  CHECK(accel_is_available() == 0);
}

TEST_CASE("Debian's HIP runtime without a GPU: no_devices quietly and the runtime not loaded",
          "[debian]") {
  if (access("/dev/kfd", F_OK) == 0) {
    std::printf("SKIPPED: /dev/kfd exists: this machine may have an AMD GPU\n");
    WARN("SKIPPED: /dev/kfd exists");
    return;
  }
  unsetenv("ACCEL_LOG_LEVEL");  // the default level is what is checked
  unsetenv("ACCEL_HIP_RUNTIME");
  Captured c = run_probe();
  INFO("stdout:\n" << c.out << "stderr:\n" << c.err);
  REQUIRE(c.exit_code == 0);
  REQUIRE(contains(c.out, "found=1"));
  if (contains(c.out, "status=unavailable") && contains(c.out, "cannot load the HIP runtime")) {
    std::printf("SKIPPED: no HIP runtime installed (apt-get install libamdhip64-5): %s\n",
                c.out.c_str());
    WARN("SKIPPED: no HIP runtime installed");
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
    std::printf("SKIPPED (explicit part): %s is not installed\n", debian);
    WARN("SKIPPED: " << debian << " is not installed");
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

  void* big = nullptr;
  CHECK(accel_malloc(0, size_t{2} << 30, &big) == ACCEL_ERROR_OUT_OF_MEMORY);
  std::string msg = accel_last_error();
  INFO(msg);
  CHECK(contains(msg, "hip"));
  CHECK(contains(msg, "hipMalloc"));
  CHECK(contains(msg, "hipErrorOutOfMemory"));
  CHECK(contains(msg, "out of memory"));  // hipGetErrorString's text
  CHECK(contains(msg, "device 0"));
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--probe") == 0) return probe();
  return accel_test::run(argc, argv, {}, nullptr);
}
