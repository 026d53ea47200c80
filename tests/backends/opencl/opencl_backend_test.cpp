// End-to-end tests of the OpenCL plugin through accel.h, the real ocl-icd
// loader and the real PoCL: its CPU devices (POCL_DEVICES), the
// ACCEL_OPENCL_DEVICE_TYPE filter, no platform at all, the runtime version,
// vendor failures, fork, and the ABI 1.1 interop groups (OpenCL called on
// accel's queues, accel streams on the test's own queues, pinned memory,
// attributes against clGetDeviceInfo, peer copies). Discovery runs once per
// process, so each scenario is its own `meson test` with its own
// environment, selected by its Catch2 tag; see meson.build.
#include <catch2/catch.hpp>

#include "../common.hpp"
#include "../interop.hpp"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <accel/accel.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using backend_test::device_native_of;
using backend_test::env;
using backend_test::in_child;
using backend_test::Info;
using backend_test::native_of;

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

// ---- interop helpers ---------------------------------------------------------

#define REQUIRE_CL(expr)         \
  do {                           \
    cl_int e_ = (expr);          \
    INFO(#expr << " -> " << e_); \
    REQUIRE(e_ == CL_SUCCESS);   \
  } while (0)

cl_command_queue queue_of(accel_stream_t s) {
  return static_cast<cl_command_queue>(native_of(s).handle);
}

// The accel index of the PoCL device of that driver ("pthread", "basic"),
// -1 when the scenario has none.
int32_t device_named(const char* driver) {
  for (int32_t d = 0; d < accel_device_count(); ++d) {
    accel_device_properties_t p;
    std::memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    if (accel_get_device_properties(d, &p) == ACCEL_SUCCESS &&
        std::string(p.name).rfind(driver, 0) == 0)
      return d;
  }
  return -1;
}

cl_uint queue_refs(cl_command_queue q) {
  cl_uint n = 0;
  REQUIRE_CL(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof n, &n, nullptr));
  return n;
}

// CL_QUEUE_REFERENCE_COUNT once it reaches `want`, or after 5 s: PoCL's
// events hold a reference of their queue until the driver frees them, which
// may lag behind the completion of the command a little.
cl_uint settle_refs(cl_command_queue q, cl_uint want) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  cl_uint n = queue_refs(q);
  while (n != want && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    n = queue_refs(q);
  }
  return n;
}

cl_int exec_status(cl_event e) {
  cl_int st = CL_QUEUED;
  clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, nullptr);
  return st;
}

// A host function that waits until the test opens it.
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> ran{0};
  static void wait(void* p) {
    auto* l = static_cast<Latch*>(p);
    std::unique_lock<std::mutex> lock(l->mu);
    l->cv.wait(lock, [&] { return l->open; });
    l->ran.fetch_add(1);
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

std::vector<unsigned char> bytes_from(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = static_cast<unsigned char>(k * 13 + seed);
  return v;
}

// A queue the test makes itself, in accel's context of device d.
cl_command_queue own_queue(int32_t d, cl_command_queue_properties props) {
  const accel_native_handle_t dh = device_native_of(d);
  const cl_queue_properties list[] = {CL_QUEUE_PROPERTIES, props, 0};
  cl_int err = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueueWithProperties(static_cast<cl_context>(dh.context),
                                                          static_cast<cl_device_id>(dh.handle),
                                                          props ? list : nullptr, &err);
  REQUIRE(err == CL_SUCCESS);
  REQUIRE(q != nullptr);
  return q;
}

accel_native_handle_t native_queue(cl_command_queue q) {
  accel_native_handle_t h;
  std::memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  h.type = ACCEL_NATIVE_OPENCL;
  h.handle = q;
  h.ordinal = -1;
  return h;
}

// What every accel stream must do, on one made from a native queue:
// copies, a fill, a host function, timed events, query and synchronize.
void stream_checks(accel_stream_t s, int32_t d, bool timing) {
  INFO("device " << d);
  const auto in = bytes_from(1 << 16, static_cast<unsigned>(d) + 1);
  std::vector<unsigned char> out(in.size(), 0);
  void* m = nullptr;
  REQUIRE_OK(accel_malloc(d, in.size(), &m));
  accel_event_t a = nullptr, b = nullptr;
  const uint32_t flags = timing ? ACCEL_EVENT_ENABLE_TIMING : 0;
  REQUIRE_OK(accel_event_create(d, flags, &a));
  REQUIRE_OK(accel_event_create(d, flags, &b));
  std::atomic<int> ran{0};
  REQUIRE_OK(accel_event_record(a, s));
  REQUIRE_OK(accel_memcpy_async(m, in.data(), in.size(), ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  REQUIRE_OK(accel_launch_host_func(
      s, [](void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }, &ran));
  REQUIRE_OK(accel_memset_async(m, 0x3C, 64, s));
  REQUIRE_OK(accel_memcpy_async(out.data(), m, out.size(), ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  REQUIRE_OK(accel_event_record(b, s));
  REQUIRE_OK(accel_stream_synchronize(s));
  CHECK(ran.load() == 1);
  CHECK(out[0] == 0x3C);
  CHECK(out[63] == 0x3C);
  CHECK(std::memcmp(out.data() + 64, in.data() + 64, in.size() - 64) == 0);
  CHECK(accel_stream_query(s) == ACCEL_SUCCESS);
  CHECK(accel_event_query(b) == ACCEL_SUCCESS);
  if (timing) {
    float ms = -1;
    REQUIRE_OK(accel_event_elapsed_time(a, b, &ms));
    CHECK(ms >= 0.0f);
  }
  // The event's cl_event is a command of the stream's queue.
  accel_native_handle_t eh;
  std::memset(&eh, 0, sizeof eh);
  eh.struct_size = sizeof eh;
  REQUIRE_OK(accel_event_native_handle(b, &eh));
  CHECK(eh.type == ACCEL_NATIVE_OPENCL);
  REQUIRE(eh.handle != nullptr);
  cl_command_queue eq = nullptr;
  REQUIRE_CL(clGetEventInfo(static_cast<cl_event>(eh.handle), CL_EVENT_COMMAND_QUEUE, sizeof eq,
                            &eq, nullptr));
  CHECK(eq == queue_of(s));
  CHECK(eh.context == device_native_of(d).context);
  REQUIRE_OK(accel_event_destroy(a));
  REQUIRE_OK(accel_event_destroy(b));
  REQUIRE_OK(accel_free(m));
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

TEST_CASE("ACCEL_OPENCL_DEVICE_TYPE takes a list; in any case; with blanks", "[type-list]") {
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

// ---- ABI 1.1 interop (the [interop] scenarios) ---------------------------------

TEST_CASE("interop: the backend declares the four ABI 1.1 groups", "[interop]") {
  Info i = ocl_info();
  INFO("reason: " << i.reason);
  REQUIRE(i.status == ACCEL_BACKEND_AVAILABLE);
  CHECK(i.devices == expected_devices());
  CHECK((i.caps & ACCEL_CAP_NATIVE_HANDLES) != 0);
  CHECK((i.caps & ACCEL_CAP_HOST_MEMORY) != 0);
  CHECK((i.caps & ACCEL_CAP_PEER_COPY) != 0);
  CHECK((i.caps & ACCEL_CAP_DEVICE_ATTRIBUTES) != 0);
}

TEST_CASE("interop: clEnqueueSVMMemFill on accel's queue runs between accel's copies",
          "[interop]") {
  for (int32_t d = 0; d < accel_device_count(); ++d) {
    INFO("device " << d);
    accel_stream_t s = nullptr;
    REQUIRE_OK(accel_stream_create(d, 0, &s));
    const accel_native_handle_t h = native_of(s);
    const accel_native_handle_t dh = device_native_of(d);
    CHECK(h.type == ACCEL_NATIVE_OPENCL);
    CHECK(std::string(h.backend) == "opencl");
    REQUIRE(h.handle != nullptr);
    CHECK(h.context == dh.context);
    CHECK(h.ordinal == -1);
    CHECK(dh.ordinal == -1);
    auto q = static_cast<cl_command_queue>(h.handle);
    cl_device_id qdev = nullptr;
    cl_context qctx = nullptr;
    cl_command_queue_properties props = 0;
    REQUIRE_CL(clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof qdev, &qdev, nullptr));
    REQUIRE_CL(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof qctx, &qctx, nullptr));
    REQUIRE_CL(clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof props, &props, nullptr));
    CHECK(qdev == dh.handle);
    CHECK(qctx == dh.context);
    CHECK((props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) == 0);  // in order

    const auto in = bytes_from(1 << 16, 5);
    std::vector<unsigned char> out(in.size(), 0);
    void* m = nullptr;
    REQUIRE_OK(accel_malloc(d, in.size(), &m));
    const cl_uchar pattern = 0xAB;
    for (int round = 0; round < 3; ++round) {
      std::fill(out.begin(), out.end(), 0);
      REQUIRE_OK(accel_memcpy_async(m, in.data(), in.size(), ACCEL_MEMCPY_HOST_TO_DEVICE, s));
      // Bytes [1024, 2048) through OpenCL itself, no flush, no event.
      REQUIRE_CL(clEnqueueSVMMemFill(q, static_cast<char*>(m) + 1024, &pattern, 1, 1024, 0, nullptr,
                                     nullptr));
      REQUIRE_OK(accel_memcpy_async(out.data(), m, out.size(), ACCEL_MEMCPY_DEVICE_TO_HOST, s));
      REQUIRE_OK(accel_stream_synchronize(s));
      size_t bad = 0;
      for (size_t k = 0; k < out.size(); ++k)
        if (out[k] != (k >= 1024 && k < 2048 ? pattern : in[k])) ++bad;
      CHECK(bad == 0);
    }
    // The default stream's queue is a queue like any other.
    accel_stream_t def = nullptr;
    REQUIRE_OK(accel_current_stream(d, &def));
    CHECK(queue_of(def) != q);
    REQUIRE_OK(accel_free(m));
    REQUIRE_OK(accel_stream_destroy(s));
  }
}

TEST_CASE("interop: a host function holds back what the program enqueues on the queue",
          "[interop]") {
  // Device gates: PoCL's pthread device (basic keeps the host-side gate,
  // README.md says what holds there).
  const int32_t d = device_named("pthread");
  REQUIRE(d >= 0);
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(d, 0, &s));
  cl_command_queue q = queue_of(s);
  const size_t n = 1 << 16;
  const auto in = bytes_from(n, 9);
  std::vector<unsigned char> out(n, 0);
  void* m = nullptr;
  REQUIRE_OK(accel_malloc(d, n, &m));
  Latch latch;
  REQUIRE_OK(accel_memcpy_async(m, in.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  REQUIRE_OK(accel_launch_host_func(s, Latch::wait, &latch));
  const cl_uchar pattern = 0x77;
  cl_event fill = nullptr;
  REQUIRE_CL(clEnqueueSVMMemFill(q, m, &pattern, 1, n / 2, 0, nullptr, &fill));
  REQUIRE_CL(clFlush(q));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(latch.ran.load() == 0);
  CHECK(exec_status(fill) != CL_COMPLETE);  // waits for the host function
  CHECK(accel_stream_query(s) == ACCEL_ERROR_NOT_READY);
  latch.release();
  REQUIRE_OK(accel_memcpy_async(out.data(), m, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  REQUIRE_OK(accel_stream_synchronize(s));
  CHECK(latch.ran.load() == 1);
  CHECK(exec_status(fill) == CL_COMPLETE);
  size_t bad = 0;
  for (size_t k = 0; k < n; ++k)
    if (out[k] != (k < n / 2 ? pattern : in[k])) ++bad;
  CHECK(bad == 0);
  clReleaseEvent(fill);
  REQUIRE_OK(accel_free(m));
  REQUIRE_OK(accel_stream_destroy(s));
}

TEST_CASE("interop: accel's query; events and synchronize cover the program's own commands",
          "[interop]") {
  // A barrier on a user event the test completes: program work that cannot
  // finish until the test says so (user events hang on PoCL's basic device).
  const int32_t d = device_named("pthread");
  REQUIRE(d >= 0);
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_stream_create(d, 0, &s));
  const accel_native_handle_t h = native_of(s);
  auto q = static_cast<cl_command_queue>(h.handle);
  void* m = nullptr;
  REQUIRE_OK(accel_malloc(d, 4096, &m));
  // accel's latest command completes, unobserved; the program's barrier
  // after it does not.
  REQUIRE_OK(accel_memset_async(m, 1, 4096, s));
  REQUIRE_OK(accel_stream_synchronize(s));
  cl_int err = CL_SUCCESS;
  cl_event user = clCreateUserEvent(static_cast<cl_context>(h.context), &err);
  REQUIRE(err == CL_SUCCESS);
  REQUIRE_CL(clEnqueueBarrierWithWaitList(q, 1, &user, nullptr));
  REQUIRE_CL(clFlush(q));
  CHECK(accel_stream_query(s) == ACCEL_ERROR_NOT_READY);
  CHECK(accel_stream_query(s) == ACCEL_ERROR_NOT_READY);
  accel_event_t e = nullptr;
  REQUIRE_OK(accel_event_create(d, 0, &e));
  REQUIRE_OK(accel_event_record(e, s));
  CHECK(accel_event_query(e) == ACCEL_ERROR_NOT_READY);
  REQUIRE_CL(clSetUserEventStatus(user, CL_COMPLETE));
  REQUIRE_OK(accel_event_synchronize(e));
  REQUIRE_OK(accel_stream_synchronize(s));
  CHECK(accel_stream_query(s) == ACCEL_SUCCESS);
  // Idle: the next answers are SUCCESS too (the probe marker completes).
  for (int k = 0; k < 50; ++k) CHECK(accel_stream_query(s) == ACCEL_SUCCESS);
  clReleaseEvent(user);
  REQUIRE_OK(accel_event_destroy(e));
  REQUIRE_OK(accel_free(m));
  REQUIRE_OK(accel_stream_destroy(s));
}

TEST_CASE("interop: an exported stream is idle once its last record completed", "[interop]") {
  // accel_plugin.h's rule at stream_query, on streams whose queue the
  // program has (their query probes with a marker).
  for (int32_t d = 0; d < accel_device_count(); ++d) {
    INFO("device " << d);
    accel_stream_t s = nullptr;
    REQUIRE_OK(accel_stream_create(d, 0, &s));
    (void)queue_of(s);
    void* m = nullptr;
    REQUIRE_OK(accel_malloc(d, 4096, &m));
    accel_event_t e = nullptr;
    REQUIRE_OK(accel_event_create(d, 0, &e));
    int not_ready = 0;
    for (int i = 0; i < 200; ++i) {
      REQUIRE_OK(accel_memset_async(m, i & 0xFF, 4096, s));
      REQUIRE_OK(accel_event_record(e, s));
      REQUIRE_OK(accel_event_synchronize(e));
      if (accel_stream_query(s) != ACCEL_SUCCESS) ++not_ready;
    }
    CHECK(not_ready == 0);
    REQUIRE_OK(accel_event_destroy(e));
    REQUIRE_OK(accel_free(m));
    REQUIRE_OK(accel_stream_destroy(s));
  }
}

TEST_CASE("interop: accel streams on the test's own cl_command_queue", "[interop]") {
  // Every block on every device (no SECTIONs: they would not repeat per device).
  for (int32_t d = 0; d < accel_device_count(); ++d) {
    INFO("device " << d);
    {
      INFO("without ownership: the queue stays the program's");
      cl_command_queue q = own_queue(d, CL_QUEUE_PROFILING_ENABLE);
      REQUIRE(queue_refs(q) == 1);
      const accel_native_handle_t nh = native_queue(q);
      accel_stream_t w = nullptr;
      REQUIRE_OK(accel_stream_from_native(d, &nh, 0, &w));
      REQUIRE(w != nullptr);
      CHECK(queue_of(w) == q);
      int32_t where = -1;
      REQUIRE_OK(accel_stream_device(w, &where));
      CHECK(where == d);
      stream_checks(w, d, true);
      REQUIRE_OK(accel_stream_destroy(w));
      CHECK(settle_refs(q, 1) == 1);
      // Still working, through OpenCL alone.
      void* m = nullptr;
      REQUIRE_OK(accel_malloc(d, 4096, &m));
      const cl_uchar pattern = 0x5A;
      std::vector<unsigned char> back(4096, 0);
      REQUIRE_CL(clEnqueueSVMMemFill(q, m, &pattern, 1, 4096, 0, nullptr, nullptr));
      REQUIRE_CL(clEnqueueSVMMemcpy(q, CL_TRUE, back.data(), m, back.size(), 0, nullptr, nullptr));
      CHECK(back[0] == 0x5A);
      CHECK(back[4095] == 0x5A);
      REQUIRE_OK(accel_free(m));
      REQUIRE_CL(clReleaseCommandQueue(q));
    }
    {
      INFO("the allocator's markers on a borrowed queue go when the wrapper does");
      // Each marker is a cl_event, which holds a reference of its queue: kept
      // as a spare after it completed, it kept the program's queue alive
      // until accel_empty_cache (after Unified Runtime PR #2193).
      cl_command_queue q = own_queue(d, 0);
      const accel_native_handle_t nh = native_queue(q);
      accel_stream_t w = nullptr;
      REQUIRE_OK(accel_stream_from_native(d, &nh, 0, &w));
      for (int i = 0; i < 4; ++i) {
        void* p = nullptr;
        REQUIRE_OK(accel_malloc(d, 4096, &p));
        REQUIRE_OK(accel_memset_async(p, i, 4096, w));
        REQUIRE_OK(accel_record_stream(p, w));  // its free records a marker on w
        REQUIRE_OK(accel_free(p));
        REQUIRE_OK(accel_stream_synchronize(w));
      }
      void* p = nullptr;
      REQUIRE_OK(accel_malloc(d, 4096, &p));  // polls the markers: they complete
      REQUIRE_OK(accel_free(p));
      REQUIRE_OK(accel_stream_destroy(w));
      CHECK(settle_refs(q, 1) == 1);
      REQUIRE_CL(clReleaseCommandQueue(q));
    }
    {
      INFO("with ACCEL_NATIVE_TAKE_OWNERSHIP: destroying the stream releases the queue");
      cl_command_queue q = own_queue(d, CL_QUEUE_PROFILING_ENABLE);
      REQUIRE_CL(clRetainCommandQueue(q));  // the test's own, to watch the count
      REQUIRE(queue_refs(q) == 2);
      const accel_native_handle_t nh = native_queue(q);
      accel_stream_t w = nullptr;
      REQUIRE_OK(accel_stream_from_native(d, &nh, ACCEL_NATIVE_TAKE_OWNERSHIP, &w));
      stream_checks(w, d, true);
      REQUIRE_OK(accel_stream_destroy(w));
      CHECK(settle_refs(q, 1) == 1);  // the reference given to accel is gone
      REQUIRE_CL(clReleaseCommandQueue(q));
    }
    {
      INFO("a queue without profiling: everything but elapsed time");
      cl_command_queue q = own_queue(d, 0);
      const accel_native_handle_t nh = native_queue(q);
      accel_stream_t w = nullptr;
      REQUIRE_OK(accel_stream_from_native(d, &nh, 0, &w));
      stream_checks(w, d, false);
      accel_event_t a = nullptr, b = nullptr;
      REQUIRE_OK(accel_event_create(d, ACCEL_EVENT_ENABLE_TIMING, &a));
      REQUIRE_OK(accel_event_create(d, ACCEL_EVENT_ENABLE_TIMING, &b));
      REQUIRE_OK(accel_event_record(a, w));
      REQUIRE_OK(accel_event_record(b, w));
      REQUIRE_OK(accel_stream_synchronize(w));
      float ms = 0;
      CHECK(accel_event_elapsed_time(a, b, &ms) == ACCEL_ERROR_EVENT_NO_TIMING);
      CHECK(has(accel_last_error(), "CL_QUEUE_PROFILING_ENABLE"));
      REQUIRE_OK(accel_event_destroy(a));
      REQUIRE_OK(accel_event_destroy(b));
      REQUIRE_OK(accel_stream_destroy(w));
      REQUIRE_CL(clReleaseCommandQueue(q));
    }
    {
      INFO("a wrapper of accel's own queue shares its order, host functions included");
      accel_stream_t owner = nullptr;
      REQUIRE_OK(accel_stream_create(d, 0, &owner));
      const accel_native_handle_t nh = native_of(owner);
      accel_stream_t w = nullptr;
      REQUIRE_OK(accel_stream_from_native(d, &nh, 0, &w));
      CHECK(queue_of(w) == nh.handle);
      Latch latch;
      REQUIRE_OK(accel_launch_host_func(w, Latch::wait, &latch));
      accel_event_t e = nullptr;
      REQUIRE_OK(accel_event_create(d, 0, &e));
      REQUIRE_OK(accel_event_record(e, owner));  // after the wrapper's host function
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      CHECK(accel_event_query(e) == ACCEL_ERROR_NOT_READY);
      CHECK(accel_stream_query(owner) == ACCEL_ERROR_NOT_READY);
      latch.release();
      REQUIRE_OK(accel_stream_synchronize(owner));
      CHECK(latch.ran.load() == 1);
      CHECK(accel_event_query(e) == ACCEL_SUCCESS);
      REQUIRE_OK(accel_event_destroy(e));
      REQUIRE_OK(accel_stream_destroy(w));
      stream_checks(owner, d, true);  // the owner is unaffected
      REQUIRE_OK(accel_stream_destroy(owner));
    }
  }
}

TEST_CASE("interop: queues accel refuses to wrap", "[interop]") {
  const int32_t d = 0;
  accel_stream_t out = nullptr;
  SECTION("an out-of-order queue") {
    cl_command_queue q = own_queue(d, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    const accel_native_handle_t nh = native_queue(q);
    CHECK(accel_stream_from_native(d, &nh, ACCEL_NATIVE_TAKE_OWNERSHIP, &out) ==
          ACCEL_ERROR_INVALID_ARGUMENT);
    const std::string msg = accel_last_error();
    INFO(msg);
    CHECK(has(msg, "out of order"));
    CHECK(has(msg, "CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE"));
    CHECK(out == nullptr);
    CHECK(queue_refs(q) == 1);  // a refusal takes nothing, not even with ownership
    REQUIRE_CL(clReleaseCommandQueue(q));
  }
  SECTION("a queue of another device") {
    if (accel_device_count() < 2) return;
    cl_command_queue q = own_queue(1, CL_QUEUE_PROFILING_ENABLE);
    const accel_native_handle_t nh = native_queue(q);
    CHECK(accel_stream_from_native(0, &nh, 0, &out) == ACCEL_ERROR_DEVICE_MISMATCH);
    const std::string msg = accel_last_error();
    INFO(msg);
    CHECK(has(msg, "CL_QUEUE_DEVICE"));
    CHECK(has(msg, "device 1"));
    CHECK(out == nullptr);
    CHECK(queue_refs(q) == 1);
    REQUIRE_CL(clReleaseCommandQueue(q));
  }
  SECTION("a queue of the right device in another context") {
    const accel_native_handle_t dh = device_native_of(d);
    auto id = static_cast<cl_device_id>(dh.handle);
    cl_int err = CL_SUCCESS;
    cl_context ctx = clCreateContext(nullptr, 1, &id, nullptr, nullptr, &err);
    REQUIRE(err == CL_SUCCESS);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, id, nullptr, &err);
    REQUIRE(err == CL_SUCCESS);
    const accel_native_handle_t nh = native_queue(q);
    CHECK(accel_stream_from_native(d, &nh, 0, &out) == ACCEL_ERROR_DEVICE_MISMATCH);
    const std::string msg = accel_last_error();
    INFO(msg);
    CHECK(has(msg, "CL_QUEUE_CONTEXT"));
    CHECK(has(msg, "accel_device_native_handle"));
    CHECK(out == nullptr);
    REQUIRE_CL(clReleaseCommandQueue(q));
    REQUIRE_CL(clReleaseContext(ctx));
  }
}

TEST_CASE("interop: pinned host memory round trip on every device", "[interop]") {
  const size_t n = 1 << 20;
  void* pinned = nullptr;
  REQUIRE_OK(accel_host_malloc(n, 0, &pinned));
  REQUIRE(pinned != nullptr);
  accel_pointer_attributes_t a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  REQUIRE_OK(accel_pointer_get_attributes(static_cast<char*>(pinned) + 7, &a));
  CHECK(a.type == ACCEL_MEMORY_HOST_PINNED);
  CHECK(a.base == pinned);
  auto* host = static_cast<unsigned char*>(pinned);
  for (int32_t d = 0; d < accel_device_count(); ++d) {
    INFO("device " << d);
    const auto data = bytes_from(n, static_cast<unsigned>(d) + 3);
    std::memcpy(host, data.data(), n);  // plain host access
    accel_stream_t s = nullptr;
    REQUIRE_OK(accel_stream_create(d, 0, &s));
    void* m = nullptr;
    REQUIRE_OK(accel_malloc(d, n, &m));
    REQUIRE_OK(accel_memcpy_async(m, host, n, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
    REQUIRE_OK(accel_memset_async(m, 0xC3, 100, s));
    REQUIRE_OK(accel_memcpy_async(host, m, n, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    REQUIRE_OK(accel_stream_synchronize(s));
    CHECK(host[0] == 0xC3);
    CHECK(host[99] == 0xC3);
    CHECK(std::memcmp(host + 100, data.data() + 100, n - 100) == 0);
    // The same memory through OpenCL on accel's queue.
    std::memset(host, 0, n);
    REQUIRE_CL(clEnqueueSVMMemcpy(queue_of(s), CL_TRUE, host, m, n, 0, nullptr, nullptr));
    CHECK(host[0] == 0xC3);
    CHECK(std::memcmp(host + 100, data.data() + 100, n - 100) == 0);
    REQUIRE_OK(accel_free(m));
    REQUIRE_OK(accel_stream_destroy(s));
  }
  // Registered memory: accepted, copied from as pageable memory.
  std::vector<unsigned char> buf = bytes_from(4096, 1), back(4096, 0);
  REQUIRE_OK(accel_host_register(buf.data(), buf.size(), 0));
  void* m = nullptr;
  REQUIRE_OK(accel_malloc(0, buf.size(), &m));
  accel_stream_t s = nullptr;
  REQUIRE_OK(accel_current_stream(0, &s));
  REQUIRE_OK(accel_memcpy_async(m, buf.data(), buf.size(), ACCEL_MEMCPY_HOST_TO_DEVICE, s));
  REQUIRE_OK(accel_memcpy_async(back.data(), m, back.size(), ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  REQUIRE_OK(accel_stream_synchronize(s));
  CHECK(back == buf);
  REQUIRE_OK(accel_host_unregister(buf.data()));
  REQUIRE_OK(accel_free(m));
  REQUIRE_OK(accel_host_free(pinned));
}

namespace {

std::string device_info_string(cl_device_id id, cl_device_info what) {
  char buf[1024] = {};
  clGetDeviceInfo(id, what, sizeof buf - 1, buf, nullptr);
  return buf;
}

template <class T>
T device_info(cl_device_id id, cl_device_info what) {
  T v{};
  REQUIRE_CL(clGetDeviceInfo(id, what, sizeof v, &v, nullptr));
  return v;
}

int64_t attribute(int32_t d, accel_device_attr_t attr) {
  INFO(accel_device_attr_name(attr));
  int64_t v = -1;
  REQUIRE_OK(accel_device_get_attribute(d, attr, &v));
  return v;
}

}  // namespace

TEST_CASE("interop: device attributes are what clGetDeviceInfo says", "[interop]") {
  for (int32_t d = 0; d < accel_device_count(); ++d) {
    INFO("device " << d);
    auto id = static_cast<cl_device_id>(device_native_of(d).handle);
    int major = 0, minor = 0;
    REQUIRE(std::sscanf(device_info_string(id, CL_DEVICE_VERSION).c_str(), "OpenCL %d.%d", &major,
                        &minor) == 2);
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR) == major);
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR) == minor);
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK) ==
          static_cast<int64_t>(device_info<size_t>(id, CL_DEVICE_MAX_WORK_GROUP_SIZE)));
    size_t sizes[3] = {};
    REQUIRE_CL(clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof sizes, sizes, nullptr));
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_X) == static_cast<int64_t>(sizes[0]));
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Y) == static_cast<int64_t>(sizes[1]));
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Z) == static_cast<int64_t>(sizes[2]));
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_SHARED_MEMORY_PER_BLOCK) ==
          static_cast<int64_t>(device_info<cl_ulong>(id, CL_DEVICE_LOCAL_MEM_SIZE)));
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_MULTIPROCESSOR_COUNT) ==
          device_info<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS));
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_CLOCK_RATE_KHZ) ==
          int64_t{device_info<cl_uint>(id, CL_DEVICE_MAX_CLOCK_FREQUENCY)} * 1000);
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_L2_CACHE_SIZE) ==
          static_cast<int64_t>(device_info<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE)));
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_MAX_ALLOCATION_SIZE) ==
          static_cast<int64_t>(device_info<cl_ulong>(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE)));
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_INTEGRATED) ==
          (device_info<cl_bool>(id, CL_DEVICE_HOST_UNIFIED_MEMORY) ? 1 : 0));
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_ECC_ENABLED) ==
          (device_info<cl_bool>(id, CL_DEVICE_ERROR_CORRECTION_SUPPORT) ? 1 : 0));
    const auto svm = device_info<cl_device_svm_capabilities>(id, CL_DEVICE_SVM_CAPABILITIES);
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_UNIFIED_ADDRESSING) ==
          ((svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) ? 1 : 0));
    CHECK(attribute(d, ACCEL_DEVICE_ATTR_MANAGED_MEMORY) ==
          ((svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) ? 1 : 0));
    // What OpenCL cannot tell (PoCL has none of the vendor warp-size
    // extensions either): refused with the reason, nothing written.
    for (auto attr : {ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_STEPPING, ACCEL_DEVICE_ATTR_WARP_SIZE,
                      ACCEL_DEVICE_ATTR_MAX_GRID_DIM_X, ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Y,
                      ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Z, ACCEL_DEVICE_ATTR_MEMORY_BUS_WIDTH,
                      ACCEL_DEVICE_ATTR_CONCURRENT_KERNELS, ACCEL_DEVICE_ATTR_ASYNC_ENGINE_COUNT}) {
      INFO(accel_device_attr_name(attr));
      int64_t v = -7;
      CHECK(accel_device_get_attribute(d, attr, &v) == ACCEL_ERROR_NOT_SUPPORTED);
      CHECK(has(accel_last_error(), accel_device_attr_name(attr)));
      CHECK(v == -7);
    }
    // PoCL's CPU devices: double precision, no half.
    const std::string ext = device_info_string(id, CL_DEVICE_EXTENSIONS);
    accel_device_capability_t c;
    std::memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    REQUIRE_OK(accel_get_device_capability(d, &c));
    const bool fp64 = has(ext, "cl_khr_fp64");
    const bool fp16 = has(ext, "cl_khr_fp16");
    CHECK(((c.supported_dtypes & ACCEL_DTYPE_BIT(ACCEL_DTYPE_FLOAT64)) != 0) == fp64);
    CHECK(((c.supported_dtypes & ACCEL_DTYPE_BIT(ACCEL_DTYPE_COMPLEX128)) != 0) == fp64);
    CHECK(((c.supported_dtypes & ACCEL_DTYPE_BIT(ACCEL_DTYPE_FLOAT16)) != 0) == fp16);
    CHECK(((c.supported_dtypes & ACCEL_DTYPE_BIT(ACCEL_DTYPE_COMPLEX32)) != 0) == fp16);
    CHECK((c.supported_dtypes & ACCEL_DTYPE_BIT(ACCEL_DTYPE_FLOAT32)) != 0);
    CHECK((c.supported_dtypes & ACCEL_DTYPE_BIT(ACCEL_DTYPE_BFLOAT16)) != 0);
  }
}

TEST_CASE("interop: copies between the two PoCL devices; staged and in stream order", "[interop]") {
  if (accel_device_count() < 2) return;
  const int32_t a = device_named("basic"), b = device_named("pthread");
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  int32_t can = -1;
  REQUIRE_OK(accel_device_can_access_peer(a, b, &can));
  CHECK(can == 0);
  REQUIRE_OK(accel_device_can_access_peer(b, a, &can));
  CHECK(can == 0);
  CHECK(accel_device_enable_peer_access(a, b) == ACCEL_ERROR_NOT_SUPPORTED);
  CHECK(has(accel_last_error(), "context"));

  const size_t n = (size_t{9} << 20) + 123;  // more than two staging chunks
  accel_stream_t sa = nullptr, sb = nullptr;
  REQUIRE_OK(accel_stream_create(a, 0, &sa));
  REQUIRE_OK(accel_stream_create(b, 0, &sb));
  void *ma = nullptr, *mb = nullptr;
  REQUIRE_OK(accel_malloc(a, n, &ma));
  REQUIRE_OK(accel_malloc(b, n, &mb));
  accel_event_t ea = nullptr;
  REQUIRE_OK(accel_event_create(a, 0, &ea));
  std::vector<unsigned char> back(n, 0);
  auto b_contents = [&] {
    std::fill(back.begin(), back.end(), 0);
    REQUIRE_OK(accel_memcpy_async(back.data(), mb, n, ACCEL_MEMCPY_DEVICE_TO_HOST, sb));
    REQUIRE_OK(accel_stream_synchronize(sb));
    return back;
  };

  SECTION("on the source's stream; right after the source was written") {
    const auto data = bytes_from(n, 21);
    REQUIRE_OK(accel_memcpy_async(ma, data.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, sa));
    REQUIRE_OK(accel_memcpy_peer_async(mb, b, ma, a, n, sa));
    REQUIRE_OK(accel_event_record(ea, sa));
    REQUIRE_OK(accel_stream_wait_event(sb, ea));
    CHECK(b_contents() == data);
  }
  SECTION("on the destination's stream; after a wait on the source's") {
    const auto data = bytes_from(n, 33);
    REQUIRE_OK(accel_memcpy_async(ma, data.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, sa));
    REQUIRE_OK(accel_event_record(ea, sa));
    REQUIRE_OK(accel_stream_wait_event(sb, ea));
    REQUIRE_OK(accel_memcpy_peer_async(mb, b, ma, a, n, sb));
    CHECK(b_contents() == data);
  }
  SECTION("DEVICE_TO_DEVICE between the devices; then OpenCL on the destination's queue") {
    const auto data = bytes_from(n, 45);
    REQUIRE_OK(accel_memcpy_async(ma, data.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, sa));
    REQUIRE_OK(accel_stream_synchronize(sa));
    REQUIRE_OK(accel_memcpy_async(mb, ma, n, ACCEL_MEMCPY_DEVICE_TO_DEVICE, sb));
    // Enqueued on b's queue while the staged copy may still be pending: it
    // runs after it (b is PoCL's pthread device: device gates).
    const cl_uchar pattern = 0xEE;
    REQUIRE_CL(clEnqueueSVMMemFill(queue_of(sb), mb, &pattern, 1, 16, 0, nullptr, nullptr));
    const auto got = b_contents();
    CHECK(got[0] == 0xEE);
    CHECK(got[15] == 0xEE);
    CHECK(std::memcmp(got.data() + 16, data.data() + 16, n - 16) == 0);
  }
  REQUIRE_OK(accel_event_destroy(ea));
  REQUIRE_OK(accel_free(ma));
  REQUIRE_OK(accel_free(mb));
  REQUIRE_OK(accel_stream_destroy(sa));
  REQUIRE_OK(accel_stream_destroy(sb));
}
