// The fake CUDA driver's stream capture and graphs (tests/fakes/cuda/
// fake_graphs.cpp), called directly through the Driver API, no accel code:
// the rules the CUDA plugin's native graphs rely on, checked against the
// fake's model of NVIDIA's documentation (cuStreamBeginCapture_v2 ..
// cuGraphExecDestroy, the Programming Guide's "Stream Capture").
#include <catch2/catch.hpp>
#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

#define FAKE_STR2(x) #x
#define FAKE_STR(x) FAKE_STR2(x)

void* fake_library() {
  static void* h = [] {
    const char* path = std::getenv("FAKE_CUDA_LIB");
    REQUIRE(path != nullptr);
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    INFO(dlerror());
    REQUIRE(lib != nullptr);
    return lib;
  }();
  return h;
}

template <typename Fn>
Fn sym(const char* name) {
  void* p = dlsym(fake_library(), name);
  INFO(name);
  REQUIRE(p != nullptr);
  Fn fn = nullptr;
  std::memcpy(&fn, &p, sizeof fn);
  return fn;
}

// The fake's `name` as cuda.h maps it (cuStreamBeginCapture ->
// cuStreamBeginCapture_v2), typed from cuda.h's prototype.
#define CU(name) sym<decltype(&::name)>(FAKE_STR(name))

#define CU_OK(expr)               \
  do {                            \
    const CUresult rc_ = (expr);  \
    INFO(#expr << " -> " << rc_); \
    REQUIRE(rc_ == CUDA_SUCCESS); \
  } while (0)

long long count(const char* what) {
  return sym<long long (*)(const char*)>("fake_cuda_count")(what);
}

// Device 0's primary context, made current on the calling thread.
CUcontext make_current() {
  static CUcontext ctx = [] {
    CU_OK(CU(cuInit)(0));
    CUdevice dev = 0;
    CU_OK(CU(cuDeviceGet)(&dev, 0));
    CUcontext c = nullptr;
    CU_OK(CU(cuDevicePrimaryCtxRetain)(&c, dev));
    return c;
  }();
  CU_OK(CU(cuCtxSetCurrent)(ctx));
  return ctx;
}

CUstream new_stream() {
  CUstream s = nullptr;
  CU_OK(CU(cuStreamCreateWithPriority)(&s, CU_STREAM_NON_BLOCKING, 0));
  return s;
}

// A device byte buffer read back synchronously.
struct Bytes {
  CUdeviceptr p = 0;
  size_t n = 0;
  explicit Bytes(size_t bytes) : n(bytes) { CU_OK(CU(cuMemAlloc)(&p, bytes)); }
  ~Bytes() { CU(cuMemFree)(p); }
  std::vector<unsigned char> read(CUstream s) const {
    std::vector<unsigned char> out(n);
    CU_OK(CU(cuMemcpyDtoHAsync)(out.data(), p, n, s));
    CU_OK(CU(cuStreamSynchronize)(s));
    return out;
  }
};

bool all(const std::vector<unsigned char>& v, unsigned char value) {
  for (unsigned char c : v)
    if (c != value) return false;
  return true;
}

CUstreamCaptureStatus status(CUstream s) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CU_OK(CU(cuStreamIsCapturing)(s, &st));
  return st;
}

// Ends an invalidated capture: INVALIDATED and no graph; the stream is
// usable again.
void expect_invalidated_end(CUstream s) {
  CHECK(status(s) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CUgraph g = reinterpret_cast<CUgraph>(&g);  // must be overwritten
  CHECK(CU(cuStreamEndCapture)(s, &g) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CHECK(g == nullptr);
  CHECK(status(s) == CU_STREAM_CAPTURE_STATUS_NONE);
  CHECK(count("captures") == 0);
}

void add_one(void* counter) { static_cast<std::atomic<int>*>(counter)->fetch_add(1); }

void wait_gate(void* gate) {
  auto* g = static_cast<std::atomic<bool>*>(gate);
  while (!g->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace

TEST_CASE("fake capture: work is recorded and not run; launches replay it in order",
          "[fake-graphs]") {
  make_current();
  CUstream s = new_stream(), other = new_stream();
  Bytes a(256), b(256);
  CU_OK(CU(cuMemsetD8Async)(a.p, 0, a.n, s));
  CU_OK(CU(cuMemsetD8Async)(b.p, 0, b.n, s));
  std::atomic<int> calls{0};
  CU_OK(CU(cuStreamBeginCapture)(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CU_OK(CU(cuMemsetD8Async)(a.p, 7, a.n, s));
  CU_OK(CU(cuMemcpyDtoDAsync)(b.p, a.p, b.n, s));
  CU_OK(CU(cuLaunchHostFunc)(s, add_one, &calls));
  CUgraph g = nullptr;
  CU_OK(CU(cuStreamEndCapture)(s, &g));
  REQUIRE(g != nullptr);
  CHECK(calls.load() == 0);
  CHECK(all(b.read(s), 0));  // nothing ran
  CUgraphExec exec = nullptr;
  CU_OK(CU(cuGraphInstantiateWithFlags)(&exec, g, 0));
  CU_OK(CU(cuGraphDestroy)(g));  // the exec does not need its graph
  // Ordered after the stream's earlier work: the memset of b runs first.
  std::atomic<bool> gate{false};
  CU_OK(CU(cuLaunchHostFunc)(other, wait_gate, &gate));
  CU_OK(CU(cuMemsetD8Async)(b.p, 1, b.n, other));
  const long long launches = count("graph_launches");
  CU_OK(CU(cuGraphLaunch)(exec, other));
  CU_OK(CU(cuGraphLaunch)(exec, other));             // before the first completed
  CU_OK(CU(cuGraphLaunch)(exec, CU_STREAM_LEGACY));  // after both (same exec)
  CHECK(count("graph_launches") == launches + 3);
  // The legacy stream is free, but its launch waits for the exec's earlier
  // ones, which wait behind the gate.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(calls.load() == 0);
  gate.store(true);
  CU_OK(CU(cuStreamSynchronize)(CU_STREAM_LEGACY));
  CHECK(calls.load() == 3);
  CHECK(all(b.read(other), 7));
  CU_OK(CU(cuGraphExecDestroy)(exec));
  CHECK(CU(cuGraphExecDestroy)(exec) == CUDA_ERROR_INVALID_VALUE);
  CU_OK(CU(cuStreamDestroy)(s));
  CU_OK(CU(cuStreamDestroy)(other));
}

TEST_CASE("fake capture: syncs and queries are refused and invalidate", "[fake-graphs]") {
  make_current();
  CUstream s = new_stream();
  Bytes a(64);
  SECTION("cuStreamSynchronize") {
    CU_OK(CU(cuStreamBeginCapture)(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(CU(cuStreamSynchronize)(s) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  }
  SECTION("cuStreamQuery") {
    CU_OK(CU(cuStreamBeginCapture)(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(CU(cuStreamQuery)(s) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  }
  SECTION("cuCtxSynchronize in every mode") {
    CU_OK(CU(cuStreamBeginCapture)(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(CU(cuCtxSynchronize)() == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  }
  // Work queued on the invalidated capture is refused.
  CHECK(CU(cuMemsetD8Async)(a.p, 1, a.n, s) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  expect_invalidated_end(s);
  CU_OK(CU(cuMemsetD8Async)(a.p, 5, a.n, s));  // runs again
  CHECK(all(a.read(s), 5));
  CU_OK(CU(cuStreamDestroy)(s));
}

TEST_CASE("fake capture: what begin and end refuse", "[fake-graphs]") {
  make_current();
  CUstream s = new_stream();
  CHECK(CU(cuStreamBeginCapture)(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL) ==
        CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK(CU(cuStreamBeginCapture)(s, static_cast<CUstreamCaptureMode>(3)) ==
        CUDA_ERROR_INVALID_VALUE);
  CUgraph g = nullptr;
  CHECK(CU(cuStreamEndCapture)(s, &g) == CUDA_ERROR_ILLEGAL_STATE);  // not capturing
  CU_OK(CU(cuStreamBeginCapture)(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK(CU(cuStreamBeginCapture)(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_ERROR_ILLEGAL_STATE);
  // GLOBAL: ended on another thread is WRONG_THREAD, and the capture goes on.
  // (No Catch2 macro runs on the other thread: they are not thread-safe.)
  const CUcontext ctx = make_current();
  const auto set_current = CU(cuCtxSetCurrent);
  const auto end_capture = CU(cuStreamEndCapture);
  CUresult other = CUDA_SUCCESS;
  std::thread([&] {
    CUgraph none = nullptr;
    other = set_current(ctx);
    if (other == CUDA_SUCCESS) other = end_capture(s, &none);
  }).join();
  CHECK(other == CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  CHECK(status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CU_OK(CU(cuStreamEndCapture)(s, &g));
  REQUIRE(g != nullptr);
  CU_OK(CU(cuGraphDestroy)(g));
  CU_OK(CU(cuStreamDestroy)(s));
}

TEST_CASE("fake capture: unsafe calls by the thread's mode", "[fake-graphs]") {
  const CUcontext ctx = make_current();
  CUstream s = new_stream();
  CUdeviceptr p = 0;
  // A call from another thread, in that thread's default (GLOBAL) mode (no
  // Catch2 macro there: they are not thread-safe).
  const auto set_current = CU(cuCtxSetCurrent);
  const auto mem_alloc = CU(cuMemAlloc);
  const auto mem_free = CU(cuMemFree);
  auto alloc_elsewhere = [&] {
    CUresult rc = CUDA_SUCCESS;
    std::thread([&] {
      CUdeviceptr q = 0;
      rc = set_current(ctx);
      if (rc == CUDA_SUCCESS) rc = mem_alloc(&q, 16);
      if (rc == CUDA_SUCCESS) mem_free(q);
    }).join();
    return rc;
  };
  SECTION("GLOBAL: refused on the capturing thread and on others") {
    CU_OK(CU(cuStreamBeginCapture)(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(alloc_elsewhere() == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    expect_invalidated_end(s);
    CU_OK(CU(cuStreamBeginCapture)(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(CU(cuMemAlloc)(&p, 16) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    expect_invalidated_end(s);
  }
  SECTION("THREAD_LOCAL: refused on the capturing thread only") {
    CU_OK(CU(cuStreamBeginCapture)(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK(alloc_elsewhere() == CUDA_SUCCESS);
    CHECK(status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    // The thread may relax itself (push-pop, as the reference suggests).
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CU_OK(CU(cuThreadExchangeStreamCaptureMode)(&mode));
    CHECK(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    CU_OK(CU(cuMemAlloc)(&p, 16));
    CU_OK(CU(cuMemFree)(p));
    CU_OK(CU(cuThreadExchangeStreamCaptureMode)(&mode));
    CHECK(CU(cuMemAlloc)(&p, 16) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    expect_invalidated_end(s);
  }
  SECTION("RELAXED: never refused") {
    CU_OK(CU(cuStreamBeginCapture)(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(alloc_elsewhere() == CUDA_SUCCESS);
    CU_OK(CU(cuMemAlloc)(&p, 16));
    CU_OK(CU(cuMemFree)(p));
    CHECK(status(s) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUgraph g = nullptr;
    CU_OK(CU(cuStreamEndCapture)(s, &g));
    CU_OK(CU(cuGraphDestroy)(g));
  }
  CU_OK(CU(cuStreamDestroy)(s));
}

TEST_CASE("fake capture: cuStreamGetCaptureInfo follows the capture", "[fake-graphs]") {
  make_current();
  CUstream s = new_stream();
  Bytes a(32);
  auto info = [&](cuuint64_t* id, CUgraph* graph, size_t* deps) {
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    const CUgraphNode* nodes = nullptr;
#if CUDA_VERSION >= 12030
    const CUgraphEdgeData* edges = nullptr;
    CU_OK(CU(cuStreamGetCaptureInfo)(s, &st, id, graph, &nodes, &edges, deps));
#else
    CU_OK(CU(cuStreamGetCaptureInfo)(s, &st, id, graph, &nodes, deps));
#endif
    return st;
  };
  cuuint64_t id1 = 0, id2 = 0;
  CUgraph during = nullptr, ended = nullptr;
  size_t deps = 99;
  CHECK(info(&id1, &during, &deps) == CU_STREAM_CAPTURE_STATUS_NONE);
  CU_OK(CU(cuStreamBeginCapture)(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  CHECK(info(&id1, &during, &deps) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK(deps == 0);  // nothing captured yet
  CU_OK(CU(cuMemsetD8Async)(a.p, 1, a.n, s));
  CHECK(info(&id1, &during, &deps) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK(deps == 1);  // the next node follows the memset
  CU_OK(CU(cuStreamEndCapture)(s, &ended));
  CHECK(ended == during);  // the graph the capture was building
  CU_OK(CU(cuGraphDestroy)(ended));
  CU_OK(CU(cuStreamBeginCapture)(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  CHECK(info(&id2, nullptr, nullptr) == CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK(id2 != id1);  // a unique id per capture sequence
  CHECK(CU(cuStreamSynchronize)(s) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK(info(nullptr, nullptr, nullptr) == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  expect_invalidated_end(s);
  CU_OK(CU(cuStreamDestroy)(s));
}

TEST_CASE("fake graphs: an exec destroyed with launches queued is freed after them",
          "[fake-graphs]") {
  make_current();
  CUstream s = new_stream();
  std::atomic<int> calls{0};
  CU_OK(CU(cuStreamBeginCapture)(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CU_OK(CU(cuLaunchHostFunc)(s, add_one, &calls));
  CUgraph g = nullptr;
  CU_OK(CU(cuStreamEndCapture)(s, &g));
  const long long execs = count("graph_execs");
  CUgraphExec exec = nullptr;
  CU_OK(CU(cuGraphInstantiateWithFlags)(&exec, g, 0));
  CU_OK(CU(cuGraphDestroy)(g));
  CHECK(count("graph_execs") == execs + 1);
  std::atomic<bool> gate{false};
  CU_OK(CU(cuLaunchHostFunc)(s, wait_gate, &gate));
  for (int i = 0; i < 5; ++i) CU_OK(CU(cuGraphLaunch)(exec, s));
  CU_OK(CU(cuGraphExecDestroy)(exec));       // returns at once
  CHECK(count("graph_execs") == execs + 1);  // its launches still hold it
  CHECK(calls.load() == 0);
  gate.store(true);
  CU_OK(CU(cuStreamSynchronize)(s));
  CHECK(calls.load() == 5);
  CHECK(count("graph_execs") == execs);
  CU_OK(CU(cuStreamDestroy)(s));
}
