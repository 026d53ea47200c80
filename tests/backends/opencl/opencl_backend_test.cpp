// End-to-end tests of the OpenCL plugin through accel.h, the real ocl-icd
// loader and the real PoCL: its CPU devices (POCL_DEVICES), the
// ACCEL_OPENCL_DEVICE_TYPE filter, no platform at all, the runtime version,
// vendor failures and fork. Discovery runs once per process, so each scenario
// is its own `meson test` with its own environment, selected by its Catch2
// tag; see meson.build.
#include <catch2/catch.hpp>

#include "../common.hpp"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <accel/accel.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using backend_test::env;
using backend_test::in_child;
using backend_test::Info;

Info ocl_info() { return backend_test::backend_info("opencl"); }

bool has(const std::string& hay, const char* needle) {
  return hay.find(needle) != std::string::npos;
}

#define REQUIRE_OK(expr)                                                           \
  do {                                                                             \
    accel_status_t st_ = (expr);                                                   \
    INFO(#expr << " -> " << accel_status_name(st_) << ": " << accel_last_error()); \
    REQUIRE(st_ == ACCEL_SUCCESS);                                                 \
  } while (0)

// The device count the scenario's POCL_DEVICES gives (meson.build sets it).
int32_t expected_devices() { return std::atoi(env("ACCEL_EXPECT_DEVICES").c_str()); }

// What the plugin's runtime_version must say, asked of OpenCL directly:
// "<platform name>: <platform version>" per platform, joined by "; ".
std::string platforms_directly() {
  cl_uint n = 0;
  if (clGetPlatformIDs(0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::vector<cl_platform_id> ids(n);
  if (clGetPlatformIDs(n, ids.data(), nullptr) != CL_SUCCESS) return "";
  auto info = [](cl_platform_id p, cl_platform_info what) {
    char buf[1024] = {};
    clGetPlatformInfo(p, what, sizeof buf - 1, buf, nullptr);
    return std::string(buf);
  };
  std::string out;
  for (cl_platform_id p : ids) {
    if (!out.empty()) out += "; ";
    out += info(p, CL_PLATFORM_NAME) + ": " + info(p, CL_PLATFORM_VERSION);
  }
  return out;
}

// Copies through device memory with a host function and timed events on the
// way; the data must come back unchanged.
void round_trip(int32_t device) {
  INFO("device " << device);
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(device, 0, &s));
  std::vector<unsigned char> in(1 << 16), out(in.size(), 0);
  for (size_t k = 0; k < in.size(); ++k) in[k] = static_cast<unsigned char>(k * 7 + device);
  void* d = nullptr;
  REQUIRE_OK(accel_malloc(device, in.size(), &d));
  accel_event_t a = nullptr, b = nullptr;
  REQUIRE_OK(accel_event_create(device, ACCEL_EVENT_ENABLE_TIMING, &a));
  REQUIRE_OK(accel_event_create(device, ACCEL_EVENT_ENABLE_TIMING, &b));
  static std::atomic<int> ran{0};
  ran = 0;
  REQUIRE_OK(accel_event_record(a, s));
  REQUIRE_OK(accel_memcpy_async(d, in.data(), in.size(), ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  REQUIRE_OK(accel_launch_host_func(
      s, [](void*) { ran.fetch_add(1); }, nullptr));
  REQUIRE_OK(accel_memcpy_async(out.data(), d, out.size(), ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  REQUIRE_OK(accel_event_record(b, s));
  REQUIRE_OK(accel_stream_synchronize(s));
  CHECK(in == out);
  CHECK(ran.load() == 1);
  float ms = -1;
  REQUIRE_OK(accel_event_elapsed_time(a, b, &ms));
  CHECK(ms >= 0.0f);
  REQUIRE_OK(accel_free(d));
  REQUIRE_OK(accel_event_destroy(a));
  REQUIRE_OK(accel_event_destroy(b));
  REQUIRE_OK(accel_stream_destroy(s));
}

int32_t g_count = 0;  // the parent's count, for the fork child

int child_after_count() {
  if (accel_device_count() != g_count) return 10;
  void* p = nullptr;
  if (accel_malloc(0, 64, &p) != ACCEL_ERROR_FORKED) return 11;
  const std::string msg = accel_last_error();
  if (!has(msg, "fork") || !has(msg, "opencl")) return 12;
  if (!has(msg, "exec") && !has(msg, "spawn")) return 13;
  // Remembered: the next call gives the same answer.
  accel_stream_t s = nullptr;
  if (accel_stream_create(0, 0, &s) != ACCEL_ERROR_FORKED) return 14;
  // Nothing was initialised, so there is nothing to wait for.
  if (accel_synchronize(-1) != ACCEL_SUCCESS) return 15;
  return 0;
}

}  // namespace

TEST_CASE("PoCL's CPU devices with ACCEL_OPENCL_DEVICE_TYPE=all: devices and properties",
          "[available]") {
  Info i = ocl_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  REQUIRE(i.status == ACCEL_BACKEND_AVAILABLE);
  const int32_t n = expected_devices();
  REQUIRE(n > 0);
  CHECK(i.devices == n);
  CHECK(accel_device_count() == n);
  REQUIRE(std::string(accel_current_accelerator()) == "opencl");
  CHECK((i.caps & ACCEL_CAP_NATIVE_CURRENT_DEVICE) == 0);
  CHECK((i.caps & ACCEL_CAP_FORK_SAFE) == 0);
  CHECK((i.caps & ACCEL_CAP_DISCOVERY_FORK_SAFE) == 0);
  CHECK((i.caps & ACCEL_CAP_TIMING_EVENTS) != 0);
  CHECK((i.caps & ACCEL_CAP_HOST_FUNCTIONS) != 0);
  CHECK((i.caps & ACCEL_CAP_CROSS_DEVICE_WAIT) != 0);
  // PoCL's CPU devices have no cl_khr_priority_hints.
  CHECK((i.caps & ACCEL_CAP_STREAM_PRIORITIES) == 0);
  std::string names;
  for (int32_t d = 0; d < n; ++d) {
    INFO("device " << d);
    accel_device_properties_t p;
    std::memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    REQUIRE_OK(accel_get_device_properties(d, &p));
    CHECK(std::strlen(p.name) > 0);
    CHECK(std::strlen(p.vendor) > 0);
    CHECK(p.total_memory > 0);
    CHECK(p.compute_units > 0);
    CHECK(p.device_index == d);
    CHECK(std::string(p.architecture).rfind("OpenCL ", 0) == 0);  // CL_DEVICE_VERSION
    names += std::string(p.name) + ";";
    int32_t least = 7, greatest = 7;
    REQUIRE_OK(accel_stream_priority_range(d, &least, &greatest));
    CHECK(least == 0);
    CHECK(greatest == 0);
  }
  // Each POCL_DEVICES entry is one device, named after its driver.
  const std::string pocl = env("POCL_DEVICES");
  for (const char* driver : {"pthread", "basic"})
    if (has(pocl, driver)) CHECK(has(names, driver));
  for (int32_t d = 0; d < n; ++d) round_trip(d);
}

TEST_CASE("the default type hides PoCL's CPU devices and says how to show them", "[default-type]") {
  Info i = ocl_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  CHECK(i.status == ACCEL_BACKEND_NO_DEVICES);
  CHECK(i.devices == 0);
  CHECK(has(i.reason, "no OpenCL device of type gpu,accelerator"));
  CHECK(has(i.reason, "Portable Computing Language"));
  CHECK(has(i.reason, "2 CPU device(s) hidden"));
  CHECK(has(i.reason, "ACCEL_OPENCL_DEVICE_TYPE=all"));
  CHECK(accel_is_available() == 0);
}

TEST_CASE("ACCEL_OPENCL_DEVICE_TYPE=gpu over PoCL: no_devices naming the filter", "[type-gpu]") {
  Info i = ocl_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  CHECK(i.status == ACCEL_BACKEND_NO_DEVICES);
  CHECK(i.devices == 0);
  CHECK(has(i.reason, "no OpenCL device of type gpu "));
  CHECK(has(i.reason, "CPU device(s) hidden"));
  CHECK(accel_is_available() == 0);
  CHECK(has(accel_selection_reason(), "opencl"));  // ACCEL_BACKEND=opencl has no device
}

TEST_CASE("ACCEL_OPENCL_DEVICE_TYPE takes a list, in any case, with blanks", "[type-list]") {
  Info i = ocl_info();
  INFO("reason: " << i.reason);
  REQUIRE(i.status == ACCEL_BACKEND_AVAILABLE);
  CHECK(i.devices == expected_devices());
}

TEST_CASE("an invalid ACCEL_OPENCL_DEVICE_TYPE: no_devices with the valid values",
          "[type-invalid]") {
  Info i = ocl_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  CHECK(i.status == ACCEL_BACKEND_NO_DEVICES);
  CHECK(i.devices == 0);
  CHECK(has(i.reason, "ACCEL_OPENCL_DEVICE_TYPE='tpu' is not valid"));
  CHECK(has(i.reason, "gpu, accelerator, cpu or all"));
  CHECK(accel_is_available() == 0);
}

TEST_CASE("no OpenCL platform: no_devices naming the loader's answer", "[no-platform]") {
  Info i = ocl_info();
  REQUIRE(i.found);
  INFO("reason: " << i.reason);
  CHECK(i.status == ACCEL_BACKEND_NO_DEVICES);
  CHECK(i.devices == 0);
  CHECK(has(i.reason, "no OpenCL platform"));
  CHECK(has(i.reason, "CL_PLATFORM_NOT_FOUND_KHR (-1001)"));
  CHECK(has(i.reason, "OCL_ICD_VENDORS"));
  CHECK(i.runtime_version == "");  // no platform to name
}

TEST_CASE("runtime version: each platform's name and CL_PLATFORM_VERSION", "[version]") {
  Info i = ocl_info();
  INFO("reason: " << i.reason);
  REQUIRE(i.status == ACCEL_BACKEND_AVAILABLE);
  CHECK(has(i.runtime_version, "Portable Computing Language: OpenCL "));
  CHECK(has(i.runtime_version, "PoCL"));
  CHECK(i.runtime_version == platforms_directly());
}

TEST_CASE("vendor failures name the call and the CL status", "[errors]") {
  Info i = ocl_info();
  INFO("reason: " << i.reason);
  REQUIRE(i.status == ACCEL_BACKEND_AVAILABLE);
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(0, 0, &s));
  void* d = nullptr;
  REQUIRE_OK(accel_malloc(0, 4096, &d));
  // Overlapping ranges inside one allocation pass the core's checks and
  // reach clEnqueueSVMMemcpy, which refuses them.
  accel_status_t st =
      accel_memcpy_async(static_cast<char*>(d) + 16, d, 64, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s);
  std::string msg = accel_last_error();
  INFO(msg);
  CHECK(st == ACCEL_ERROR_BACKEND_FAILURE);
  CHECK(has(msg, "opencl: clEnqueueSVMMemcpy failed: CL_MEM_COPY_OVERLAP (-8): "));
  // Nothing was queued: the stream still works.
  REQUIRE_OK(accel_stream_synchronize(s));
  REQUIRE_OK(accel_memset_async(d, 0x5a, 4096, s));
  unsigned char back[4] = {};
  REQUIRE_OK(accel_memcpy_async(back, d, sizeof back, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  REQUIRE_OK(accel_stream_synchronize(s));
  CHECK(back[3] == 0x5a);

  // A request beyond CL_DEVICE_MAX_MEM_ALLOC_SIZE is refused before OpenCL
  // sees it, as exhaustion.
  void* huge = nullptr;
  st = accel_malloc(0, size_t{1} << 50, &huge);
  msg = accel_last_error();
  CHECK(st == ACCEL_ERROR_OUT_OF_MEMORY);
  CHECK(huge == nullptr);
  CHECK(has(msg, "CL_DEVICE_MAX_MEM_ALLOC_SIZE"));

  REQUIRE_OK(accel_free(d));
  REQUIRE_OK(accel_stream_destroy(s));
}

TEST_CASE("fork after counting only: the child counts but its work is refused",
          "[fork-after-count]") {
  // Counting loaded PoCL, which started its threads: the child has none.
  g_count = accel_device_count();
  REQUIRE(g_count == expected_devices());
  CHECK(in_child(child_after_count) == 0);
  // The parent is unaffected.
  void* p = nullptr;
  REQUIRE_OK(accel_malloc(0, 64, &p));
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(0, 0, &s));
  REQUIRE_OK(accel_memset_async(p, 1, 64, s));
  REQUIRE_OK(accel_stream_synchronize(s));
  REQUIRE_OK(accel_stream_destroy(s));
  REQUIRE_OK(accel_free(p));
}
