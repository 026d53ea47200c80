// Conformance: device memory: allocation, copies, memset, info, statistics.
#include "conformance.hpp"

#include <algorithm>
#include <memory>
#include <random>
#include <thread>

using namespace conf;

namespace {

std::vector<unsigned char> pattern(size_t n, uint32_t seed) {
  std::vector<unsigned char> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<unsigned char>(rng() & 0xFF);
  return v;
}

accel_memory_stats_t stats_of(int32_t device) {
  accel_memory_stats_t s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  accel_status_t st = accel_memory_stats(device, &s);
  INFO("accel_memory_stats(" << device << ") -> " << describe(st));
  REQUIRE(st == ACCEL_SUCCESS);
  return s;
}

size_t first_mismatch(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (a[i] != b[i]) return i;
  return a.size() == b.size() ? SIZE_MAX : std::min(a.size(), b.size());
}

}  // namespace

TEST_CASE("malloc and free", "[memory]") {
  ThreadStateGuard guard;
  if (!need_group(globals().memory)) return;
  const int32_t n = device_count();
  for (int32_t d = 0; d < n; ++d) {
    INFO("device " << d);
    void* p = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc(d, 4096, &p));
    REQUIRE(p != nullptr);
    void* q = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc(d, 1, &q));
    REQUIRE(q != nullptr);
    CHECK(p != q);
    ACCEL_CHECK_OK(accel_free(q));
    ACCEL_CHECK_OK(accel_free(p));
  }
  SECTION("free(NULL) is a no-op") { ACCEL_CHECK_OK(accel_free(nullptr)); }
  SECTION("freeing twice is INVALID_ARGUMENT") {
    void* p = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc(0, 256, &p));
    ACCEL_REQUIRE_OK(accel_free(p));
    ACCEL_CHECK_ERROR(accel_free(p), ACCEL_ERROR_INVALID_ARGUMENT);
  }
  SECTION("freeing a pointer accel never returned is INVALID_ARGUMENT") {
    int on_stack = 0;
    ACCEL_CHECK_ERROR(accel_free(&on_stack), ACCEL_ERROR_INVALID_ARGUMENT);
    DeviceMem m(0, 1024);
    ACCEL_CHECK_ERROR(accel_free(m.bytes() + 16), ACCEL_ERROR_INVALID_ARGUMENT);
  }
  SECTION("negative device allocates on the current device") {
    ACCEL_REQUIRE_OK(accel_set_device_index(n - 1));
    const auto before = stats_of(n - 1);
    DeviceMem m(-1, 333);
    const auto after = stats_of(n - 1);
    CHECK(after.allocated_bytes == before.allocated_bytes + 333);
  }
  SECTION("free from another thread") {
    void* p = nullptr;
    ACCEL_REQUIRE_OK(accel_malloc(0, 64, &p));
    accel_status_t st = ACCEL_ERROR_INTERNAL;
    std::thread t([&] { st = accel_free(p); });
    t.join();
    CHECK(st == ACCEL_SUCCESS);
  }
  SECTION("errors") {
    void* p = reinterpret_cast<void*>(uintptr_t{0x1234});
    ACCEL_CHECK_ERROR(accel_malloc(0, 0, &p), ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(p == reinterpret_cast<void*>(uintptr_t{0x1234}));
    ACCEL_CHECK_ERROR(accel_malloc(0, 16, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_malloc(n, 16, &p), ACCEL_ERROR_INVALID_DEVICE);
    CHECK(p == reinterpret_cast<void*>(uintptr_t{0x1234}));
    // An absurd size must fail cleanly as out of memory, not crash.
    FreshResult r = run_in_fresh_thread([&] { return accel_malloc(0, SIZE_MAX / 2, &p); });
    INFO("malloc(SIZE_MAX/2) -> " << accel_status_name(r.status) << ": " << r.after);
    CHECK(r.status == ACCEL_ERROR_OUT_OF_MEMORY);
    CHECK_FALSE(r.after.empty());
  }
}

TEST_CASE("copies round-trip a few MiB byte-exact", "[memory]") {
  if (!need_group(globals().memory)) return;
  const size_t kBytes = (3u << 20) + 12345;  // a few MiB, not a round number
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d);
    Stream s(d);
    DeviceMem a(d, kBytes), b(d, kBytes);
    const auto src = pattern(kBytes, 1234u + static_cast<uint32_t>(d));
    std::vector<unsigned char> dst(kBytes, 0);
    ACCEL_REQUIRE_OK(
        accel_memcpy_async(a.get(), src.data(), kBytes, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
    ACCEL_REQUIRE_OK(
        accel_memcpy_async(b.get(), a.get(), kBytes, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s));
    ACCEL_REQUIRE_OK(
        accel_memcpy_async(dst.data(), b.get(), kBytes, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    ACCEL_REQUIRE_OK(stream_synchronize(s));
    CHECK(first_mismatch(src, dst) == SIZE_MAX);

    // Sub-ranges at odd offsets.
    const size_t off = 4099, len = 70001;
    std::vector<unsigned char> part(len, 0);
    ACCEL_REQUIRE_OK(
        accel_memcpy_async(part.data(), a.bytes() + off, len, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    ACCEL_REQUIRE_OK(stream_synchronize(s));
    CHECK(std::memcmp(part.data(), src.data() + off, len) == 0);
    // The last byte of an allocation is in range.
    unsigned char last = 0;
    ACCEL_REQUIRE_OK(
        accel_memcpy_async(&last, a.bytes() + kBytes - 1, 1, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    ACCEL_REQUIRE_OK(stream_synchronize(s));
    CHECK(last == src[kBytes - 1]);
  }
}

TEST_CASE("memset", "[memory]") {
  if (!need_group(globals().memory)) return;
  const size_t kBytes = 1u << 20;
  Stream s(0);
  DeviceMem m(0, kBytes);
  ACCEL_REQUIRE_OK(accel_memset_async(m.get(), 0x5A, kBytes, s));
  ACCEL_REQUIRE_OK(accel_memset_async(m.bytes() + 100, 0x1FF, 50, s));  // (unsigned char)0x1FF
  std::vector<unsigned char> host(kBytes, 0);
  ACCEL_REQUIRE_OK(
      accel_memcpy_async(host.data(), m.get(), kBytes, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  ACCEL_REQUIRE_OK(stream_synchronize(s));
  size_t bad = 0;
  for (size_t i = 0; i < kBytes; ++i) {
    unsigned char want = (i >= 100 && i < 150) ? 0xFF : 0x5A;
    if (host[i] != want) ++bad;
  }
  CHECK(bad == 0);

  SECTION("zero bytes is a no-op") {
    ACCEL_CHECK_OK(accel_memset_async(m.get(), 0, 0, s));
    ACCEL_CHECK_OK(accel_memcpy_async(host.data(), m.get(), 0, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    ACCEL_CHECK_OK(stream_synchronize(s));
  }
}

TEST_CASE("NULL stream means the current stream of the current device", "[memory]") {
  ThreadStateGuard guard;
  if (!need_group(globals().memory)) return;
  const int32_t d = device_count() - 1;
  ACCEL_REQUIRE_OK(accel_set_device_index(d));
  DeviceMem m(d, 4096);
  const auto src = pattern(4096, 99);
  std::vector<unsigned char> dst(4096, 0);
  ACCEL_REQUIRE_OK(
      accel_memcpy_async(m.get(), src.data(), 4096, ACCEL_MEMCPY_HOST_TO_DEVICE, nullptr));
  ACCEL_REQUIRE_OK(accel_memset_async(m.get(), 7, 16, nullptr));
  ACCEL_REQUIRE_OK(
      accel_memcpy_async(dst.data(), m.get(), 4096, ACCEL_MEMCPY_DEVICE_TO_HOST, nullptr));
  accel_stream_t cur = nullptr;
  ACCEL_REQUIRE_OK(accel_current_stream(-1, &cur));
  ACCEL_REQUIRE_OK(stream_synchronize(cur));
  for (size_t i = 0; i < 16; ++i) CHECK(dst[i] == 7);
  CHECK(std::memcmp(dst.data() + 16, src.data() + 16, 4096 - 16) == 0);

  if (has_cap(ACCEL_CAP_HOST_FUNCTIONS)) {
    // With a non-default current stream the copy is queued behind its work.
    Stream s(d);
    ACCEL_REQUIRE_OK(accel_set_stream(s));
    Gate gate;
    ACCEL_REQUIRE_OK(gate.launch(s));
    ACCEL_REQUIRE_OK(accel_memset_async(m.get(), 1, 4096, nullptr));
    ACCEL_CHECK_STATUS(accel_stream_query(s), ACCEL_ERROR_NOT_READY);
    gate.release();
    ACCEL_REQUIRE_OK(stream_synchronize(s));
    ACCEL_REQUIRE_OK(accel_memcpy_async(dst.data(), m.get(), 4096, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    ACCEL_REQUIRE_OK(stream_synchronize(s));
    CHECK(dst[0] == 1);
    CHECK(dst[4095] == 1);
    ACCEL_REQUIRE_OK(accel_set_stream(globals().default_streams[d]));
  }
}

TEST_CASE("copy and memset argument errors", "[memory]") {
  if (!need_group(globals().memory)) return;
  Stream s(0);
  const size_t kBytes = 1024;
  DeviceMem m(0, kBytes);
  std::vector<unsigned char> host(2 * kBytes, 0);
  ACCEL_CHECK_ERROR(accel_memcpy_async(nullptr, host.data(), 16, ACCEL_MEMCPY_HOST_TO_DEVICE, s),
                    ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(accel_memcpy_async(m.get(), nullptr, 16, ACCEL_MEMCPY_HOST_TO_DEVICE, s),
                    ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(
      accel_memcpy_async(m.get(), host.data(), 16, static_cast<accel_memcpy_kind_t>(7), s),
      ACCEL_ERROR_INVALID_ARGUMENT);
  // Ranges that leave the allocation.
  ACCEL_CHECK_ERROR(
      accel_memcpy_async(m.bytes() + 512, host.data(), kBytes, ACCEL_MEMCPY_HOST_TO_DEVICE, s),
      ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(
      accel_memcpy_async(host.data(), m.get(), kBytes + 1, ACCEL_MEMCPY_DEVICE_TO_HOST, s),
      ACCEL_ERROR_INVALID_ARGUMENT);
  // A host pointer where a device pointer is required.
  ACCEL_CHECK_ERROR(
      accel_memcpy_async(host.data(), host.data() + kBytes, 16, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s),
      ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(accel_memset_async(nullptr, 0, 16, s), ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(accel_memset_async(m.bytes() + 1000, 0, 100, s), ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(accel_memset_async(host.data(), 0, 16, s), ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_OK(stream_synchronize(s));
  // None of that touched the memory or the host buffer.
  for (unsigned char c : host) {
    if (c != 0) {
      FAIL("a refused copy wrote to host memory");
      break;
    }
  }
}

TEST_CASE("mem_get_info", "[memory]") {
  ThreadStateGuard guard;
  if (!need_group(globals().mem_info)) return;
  for (int32_t d = 0; d < device_count(); ++d) {
    INFO("device " << d);
    size_t free_b = 0, total_b = 0;
    ACCEL_REQUIRE_OK(accel_mem_get_info(d, &free_b, &total_b));
    CHECK(total_b > 0);
    CHECK(free_b <= total_b);
    size_t only = 0;
    ACCEL_CHECK_OK(accel_mem_get_info(d, &only, nullptr));
    CHECK(only <= total_b);
    only = 0;
    ACCEL_CHECK_OK(accel_mem_get_info(d, nullptr, &only));
    CHECK(only == total_b);
    ACCEL_CHECK_OK(accel_mem_get_info(d, nullptr, nullptr));
  }
  size_t a = 0, b = 0;
  ACCEL_CHECK_OK(accel_mem_get_info(-1, &a, &b));
  CHECK(b > 0);
  size_t f = 5, t = 5;
  ACCEL_CHECK_ERROR(accel_mem_get_info(device_count(), &f, &t), ACCEL_ERROR_INVALID_DEVICE);
  CHECK(f == 5);
  CHECK(t == 5);
}

TEST_CASE("memory statistics move with malloc and free", "[memory][stats]") {
  ThreadStateGuard guard;
  if (!need_group(globals().memory)) return;
  const size_t kBytes = 1u << 20;
  const auto s0 = stats_of(0);
  CHECK(s0.struct_size == sizeof(accel_memory_stats_t));
  CHECK(s0.peak_allocated_bytes >= s0.allocated_bytes);
  CHECK(s0.total_allocations >= s0.allocation_count);

  void* p = nullptr;
  ACCEL_REQUIRE_OK(accel_malloc(0, kBytes, &p));
  const auto s1 = stats_of(0);
  CHECK(s1.allocated_bytes == s0.allocated_bytes + kBytes);
  CHECK(s1.allocation_count == s0.allocation_count + 1);
  CHECK(s1.total_allocations == s0.total_allocations + 1);
  CHECK(s1.peak_allocated_bytes >= s1.allocated_bytes);

  void* q = nullptr;
  ACCEL_REQUIRE_OK(accel_malloc(0, 3 * kBytes, &q));
  ACCEL_REQUIRE_OK(accel_free(q));
  const auto s2 = stats_of(0);
  CHECK(s2.allocated_bytes == s0.allocated_bytes + kBytes);
  CHECK(s2.allocation_count == s0.allocation_count + 1);
  CHECK(s2.total_allocations == s0.total_allocations + 2);
  CHECK(s2.peak_allocated_bytes >= s0.allocated_bytes + 4 * kBytes);

  ACCEL_REQUIRE_OK(accel_free(p));
  const auto s3 = stats_of(0);
  CHECK(s3.allocated_bytes == s0.allocated_bytes);
  CHECK(s3.allocation_count == s0.allocation_count);
  CHECK(s3.peak_allocated_bytes == s2.peak_allocated_bytes);  // the peak stays

  ACCEL_REQUIRE_OK(accel_reset_peak_memory_stats(0));
  const auto s4 = stats_of(0);
  CHECK(s4.peak_allocated_bytes == s4.allocated_bytes);
  CHECK(s4.allocated_bytes == s0.allocated_bytes);
  CHECK(s4.total_allocations == s2.total_allocations);

  SECTION("a failed allocation changes nothing") {
    void* r = nullptr;
    accel_malloc(0, 0, &r);
    const auto s5 = stats_of(0);
    CHECK(s5.allocated_bytes == s4.allocated_bytes);
    CHECK(s5.total_allocations == s4.total_allocations);
  }
  SECTION("negative device is the current device") {
    ACCEL_REQUIRE_OK(accel_set_device_index(device_count() - 1));
    const auto a = stats_of(-1);
    const auto b = stats_of(device_count() - 1);
    CHECK(a.allocated_bytes == b.allocated_bytes);
    CHECK(a.total_allocations == b.total_allocations);
    ACCEL_CHECK_OK(accel_reset_peak_memory_stats(-1));
  }
  SECTION("each device has its own statistics") {
    if (need_devices(2)) {
      const int32_t other = device_count() - 1;
      const auto o0 = stats_of(other);
      const auto z0 = stats_of(0);
      DeviceMem m(other, 4096);
      const auto o1 = stats_of(other);
      const auto z1 = stats_of(0);
      CHECK(o1.allocated_bytes == o0.allocated_bytes + 4096);
      CHECK(z1.allocated_bytes == z0.allocated_bytes);
      CHECK(z1.total_allocations == z0.total_allocations);
    }
  }
  SECTION("no byte past struct_size is written") {
    accel_memory_stats_t st;
    std::memset(&st, 0xAB, sizeof st);
    st.struct_size = offsetof(accel_memory_stats_t, peak_allocated_bytes);
    ACCEL_REQUIRE_OK(accel_memory_stats(0, &st));
    CHECK(st.allocated_bytes == s4.allocated_bytes);
    const auto* raw = reinterpret_cast<const unsigned char*>(&st);
    size_t written_past = 0;
    for (size_t i = offsetof(accel_memory_stats_t, peak_allocated_bytes); i < sizeof st; ++i)
      if (raw[i] != 0xAB) ++written_past;
    CHECK(written_past == 0);
  }
  SECTION("errors") {
    ACCEL_CHECK_ERROR(accel_memory_stats(0, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    accel_memory_stats_t st;
    std::memset(&st, 0, sizeof st);
    st.struct_size = sizeof(size_t) - 1;
    ACCEL_CHECK_ERROR(accel_memory_stats(0, &st), ACCEL_ERROR_INVALID_ARGUMENT);
    st.struct_size = sizeof st;
    ACCEL_CHECK_ERROR(accel_memory_stats(device_count(), &st), ACCEL_ERROR_INVALID_DEVICE);
    ACCEL_CHECK_ERROR(accel_reset_peak_memory_stats(device_count()), ACCEL_ERROR_INVALID_DEVICE);
  }
}

// CUDA's rule for cudaMemcpyAsync and pageable host memory, kept by the core
// on every backend: a copy from pageable memory has read it when the call
// returns, a copy into pageable memory has written it.
TEST_CASE("a pageable copy source may be overwritten and freed once the call returns", "[memory]") {
  if (!need_group(globals().memory)) return;
  if (!has_cap(ACCEL_CAP_HOST_FUNCTIONS)) {
    note_not_run("pageable copies behind a gate (no host functions)");
    return;
  }
  Stream s(0);
  // Staged sizes (one, several per ring block, a whole block) and one that is
  // copied and waited for.
  for (size_t n : {size_t{4096}, size_t{256} << 10, size_t{1} << 20, size_t{3} << 20}) {
    INFO("bytes " << n);
    DeviceMem m(0, n);
    const auto want = pattern(n, static_cast<uint32_t>(n));
    Gate gate;
    ACCEL_REQUIRE_OK(gate.launch(s));
    auto src = std::make_unique<std::vector<unsigned char>>(want);
    if (n <= (size_t{1} << 20)) {
      // Staged: returns while the stream is still closed.
      Deadline d("accel_memcpy_async (staged pageable source)", kLaunchLimit);
      ACCEL_REQUIRE_OK(accel_memcpy_async(m.get(), src->data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
    } else {
      // Waited for: the gate opens from another thread meanwhile.
      std::thread opener([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        gate.release();
      });
      Deadline d("accel_memcpy_async (waited-for pageable source)");
      const accel_status_t st =
          accel_memcpy_async(m.get(), src->data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, s);
      opener.join();
      ACCEL_REQUIRE_OK(st);
    }
    std::fill(src->begin(), src->end(), static_cast<unsigned char>(0xEE));
    src.reset();
    gate.release();
    std::vector<unsigned char> got(n, 0);
    ACCEL_REQUIRE_OK(accel_memcpy_async(got.data(), m.get(), n, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
    ACCEL_REQUIRE_OK(stream_synchronize(s));
    CHECK(got == want);
  }
}

TEST_CASE("a copy into pageable memory has completed when the call returns", "[memory]") {
  if (!need_group(globals().memory)) return;
  if (!has_cap(ACCEL_CAP_HOST_FUNCTIONS)) {
    note_not_run("pageable copies behind a host function (no host functions)");
    return;
  }
  Stream s(0);
  const size_t n = 64 << 10;
  DeviceMem m(0, n);
  ACCEL_REQUIRE_OK(accel_memset_async(m.get(), 0x5A, n, s));
  // A host function ahead of the copy keeps the stream busy for a while.
  Sleeper slow(30);
  ACCEL_REQUIRE_OK(slow.launch(s));
  std::vector<unsigned char> got(n, 0);
  {
    Deadline d("accel_memcpy_async (into pageable memory)");
    ACCEL_REQUIRE_OK(accel_memcpy_async(got.data(), m.get(), n, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  }
  CHECK(slow.done());
  CHECK(got == std::vector<unsigned char>(n, 0x5A));
  ACCEL_REQUIRE_OK(stream_synchronize(s));
}

namespace {

// From a host function on the copy's own stream: a small pageable source is
// staged, a copy that would wait for the stream is refused.
struct OwnStreamCopies {
  accel_stream_t stream = nullptr;
  void* dev = nullptr;
  accel_status_t h2d = ACCEL_ERROR_INTERNAL, d2h = ACCEL_ERROR_INTERNAL,
                 large_h2d = ACCEL_ERROR_INTERNAL;
  std::vector<unsigned char> large = std::vector<unsigned char>(size_t{2} << 20, 1);
  static void fn(void* self) {
    auto* c = static_cast<OwnStreamCopies*>(self);
    std::vector<unsigned char> small(4096, 0x42);
    c->h2d = accel_memcpy_async(c->dev, small.data(), small.size(), ACCEL_MEMCPY_HOST_TO_DEVICE,
                                c->stream);
    std::fill(small.begin(), small.end(), static_cast<unsigned char>(0));
    std::vector<unsigned char> into(4096, 0);
    c->d2h = accel_memcpy_async(into.data(), c->dev, into.size(), ACCEL_MEMCPY_DEVICE_TO_HOST,
                                c->stream);
    c->large_h2d = accel_memcpy_async(c->dev, c->large.data(), c->large.size(),
                                      ACCEL_MEMCPY_HOST_TO_DEVICE, c->stream);
  }
};

}  // namespace

TEST_CASE("pageable copies from a host function on their own stream", "[memory]") {
  if (!need_group(globals().memory)) return;
  if (!has_cap(ACCEL_CAP_HOST_FUNCTIONS)) {
    note_not_run("pageable copies from a host function (no host functions)");
    return;
  }
  Stream s(0);
  DeviceMem m(0, size_t{2} << 20);
  OwnStreamCopies c;
  c.stream = s;
  c.dev = m.get();
  ACCEL_REQUIRE_OK(launch_host_func(s, &OwnStreamCopies::fn, &c));
  ACCEL_REQUIRE_OK(stream_synchronize(s));
  ACCEL_CHECK_OK(c.h2d);
  CHECK(c.d2h == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(c.large_h2d == ACCEL_ERROR_INVALID_ARGUMENT);
  std::vector<unsigned char> got(4096, 0);
  ACCEL_REQUIRE_OK(accel_memcpy_async(got.data(), m.get(), 4096, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
  CHECK(got == std::vector<unsigned char>(4096, 0x42));
}
