// Conformance: the ABI 1.1 groups. Native handles (export, and streams made
// from them), pinned host memory and pointer attributes, peer copies, device
// attributes and capability. Each group is announced by a capability bit; a
// backend without it must answer ACCEL_ERROR_NOT_SUPPORTED with a reason,
// which is checked instead.
#include "conformance.hpp"

#include <numeric>
#include <sstream>

using namespace conf;

namespace {

accel_native_handle_t native_of(accel_stream_t s) {
  accel_native_handle_t h;
  std::memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  ACCEL_REQUIRE_OK(accel_stream_native_handle(s, &h));
  return h;
}

accel_pointer_attributes_t attributes_of(const void* p) {
  accel_pointer_attributes_t a;
  std::memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  ACCEL_REQUIRE_OK(accel_pointer_get_attributes(p, &a));
  return a;
}

accel_host_memory_stats_t host_stats() {
  accel_host_memory_stats_t s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  ACCEL_REQUIRE_OK(accel_host_memory_stats(&s));
  return s;
}

std::vector<unsigned char> iota_bytes(size_t n, unsigned char start) {
  std::vector<unsigned char> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

// A group the backend does not declare: the call must say so, with a reason.
void check_absent(uint32_t cap, const char* what, const std::function<accel_status_t()>& call) {
  if (has_cap(cap)) return;
  INFO("the backend does not declare " << what);
  FreshResult r = run_in_fresh_thread(call);
  CHECK(r.status == ACCEL_ERROR_NOT_SUPPORTED);
  CHECK(contains_ci(r.after, globals().backend));
  WARN("the backend has no " << what << "; the call answered: " << r.after);
  need_cap(cap, what);
}

// Copies `data` host -> device -> host on `stream` and returns what came back.
std::vector<unsigned char> round_trip(accel_stream_t stream, int32_t device,
                                      const std::vector<unsigned char>& data) {
  DeviceMem m(device, data.size());
  std::vector<unsigned char> back(data.size(), 0);
  ACCEL_REQUIRE_OK(
      accel_memcpy_async(m.get(), data.data(), data.size(), ACCEL_MEMCPY_HOST_TO_DEVICE, stream));
  ACCEL_REQUIRE_OK(
      accel_memcpy_async(back.data(), m.get(), back.size(), ACCEL_MEMCPY_DEVICE_TO_HOST, stream));
  ACCEL_REQUIRE_OK(stream_synchronize(stream));
  return back;
}

}  // namespace

TEST_CASE("native handles of streams events and devices", "[interop]") {
  ThreadStateGuard guard;
  check_absent(ACCEL_CAP_NATIVE_HANDLES, "native handles", [] {
    accel_native_handle_t h;
    std::memset(&h, 0, sizeof h);
    h.struct_size = sizeof h;
    return accel_stream_native_handle(nullptr, &h);
  });
  if (!has_cap(ACCEL_CAP_NATIVE_HANDLES)) return;
  const int32_t n = device_count();
  for (int32_t d = 0; d < n; ++d) {
    INFO("device " << d);
    accel_native_handle_t dev;
    std::memset(&dev, 0, sizeof dev);
    dev.struct_size = sizeof dev;
    ACCEL_REQUIRE_OK(accel_device_native_handle(d, &dev));
    CHECK(dev.type != ACCEL_NATIVE_NONE);
    REQUIRE(dev.backend != nullptr);
    CHECK(std::string(dev.backend) == globals().backend);

    // The default stream's queue, the same on every call; a new stream has
    // a queue of its own; both of the device's type.
    const accel_native_handle_t def = native_of(globals().default_streams[d]);
    CHECK(def.type == dev.type);
    CHECK(def.handle != nullptr);
    CHECK(native_of(globals().default_streams[d]).handle == def.handle);
    Stream s(d);
    const accel_native_handle_t mine = native_of(s);
    CHECK(mine.type == dev.type);
    CHECK(mine.handle != nullptr);
    CHECK(mine.handle != def.handle);
    CHECK(mine.context == dev.context);
  }
  SECTION("NULL stream means the current stream") {
    accel_stream_t cur = nullptr;
    ACCEL_REQUIRE_OK(accel_current_stream(0, &cur));
    accel_native_handle_t h;
    std::memset(&h, 0, sizeof h);
    h.struct_size = sizeof h;
    ACCEL_REQUIRE_OK(accel_stream_native_handle(nullptr, &h));
    CHECK(h.handle == native_of(cur).handle);
  }
  SECTION("an event has a handle once recorded") {
    if (!need_group(globals().events)) return;
    Event e(0);
    ACCEL_REQUIRE_OK(accel_event_record(e, globals().default_streams[0]));
    ACCEL_REQUIRE_OK(event_synchronize(e));
    accel_native_handle_t h;
    std::memset(&h, 0, sizeof h);
    h.struct_size = sizeof h;
    ACCEL_REQUIRE_OK(accel_event_native_handle(e, &h));
    CHECK(h.type == native_of(globals().default_streams[0]).type);
    CHECK(h.handle != nullptr);
  }
  SECTION("a short struct gets only what it holds") {
    // A caller built when the struct ended at `backend`.
    accel_native_handle_t h;
    std::memset(&h, 0xAB, sizeof h);
    h.struct_size = offsetof(accel_native_handle_t, handle);
    ACCEL_REQUIRE_OK(accel_stream_native_handle(globals().default_streams[0], &h));
    CHECK(h.struct_size == offsetof(accel_native_handle_t, handle));
    unsigned char untouched[sizeof(void*)];
    std::memset(untouched, 0xAB, sizeof untouched);
    CHECK(std::memcmp(&h.handle, untouched, sizeof untouched) == 0);
  }
  SECTION("errors") {
    accel_native_handle_t h;
    std::memset(&h, 0, sizeof h);
    ACCEL_CHECK_ERROR(accel_stream_native_handle(globals().default_streams[0], &h),
                      ACCEL_ERROR_INVALID_ARGUMENT);  // struct_size 0
    h.struct_size = sizeof h;
    ACCEL_CHECK_ERROR(accel_stream_native_handle(globals().default_streams[0], nullptr),
                      ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_device_native_handle(n, &h), ACCEL_ERROR_INVALID_DEVICE);
    Stream dead(0);
    accel_stream_t stale = dead.get();
    ACCEL_REQUIRE_OK(dead.destroy());
    ACCEL_CHECK_ERROR(accel_stream_native_handle(stale, &h), ACCEL_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("streams made from native handles", "[interop]") {
  ThreadStateGuard guard;
  if (!need_cap(ACCEL_CAP_NATIVE_HANDLES, "native handles")) return;
  if (!need_group(globals().memory)) return;
  const int32_t last = device_count() - 1;
  Stream owner(last);
  const accel_native_handle_t h = native_of(owner);

  SECTION("a wrapper runs work in one order with the stream it wraps") {
    accel_stream_t wrapped = nullptr;
    ACCEL_REQUIRE_OK(accel_stream_from_native(last, &h, 0, &wrapped));
    REQUIRE(wrapped != nullptr);
    CHECK(native_of(wrapped).handle == h.handle);
    int32_t where = -1;
    ACCEL_REQUIRE_OK(accel_stream_device(wrapped, &where));
    CHECK(where == last);
    // H2D on the owner, D2H on the wrapper: one queue, so in order.
    const auto data = iota_bytes(1 << 16, 7);
    DeviceMem m(last, data.size());
    std::vector<unsigned char> back(data.size(), 0);
    ACCEL_REQUIRE_OK(
        accel_memcpy_async(m.get(), data.data(), data.size(), ACCEL_MEMCPY_HOST_TO_DEVICE, owner));
    ACCEL_REQUIRE_OK(accel_memcpy_async(back.data(), m.get(), back.size(),
                                        ACCEL_MEMCPY_DEVICE_TO_HOST, wrapped));
    ACCEL_REQUIRE_OK(stream_synchronize(wrapped));
    CHECK(back == data);
    // The wrapper is an accel stream like any other.
    CHECK(round_trip(wrapped, last, iota_bytes(4096, 1)) == iota_bytes(4096, 1));
    ACCEL_REQUIRE_OK(accel_set_stream(wrapped));
    accel_stream_t cur = nullptr;
    ACCEL_REQUIRE_OK(accel_current_stream(last, &cur));
    CHECK(cur == wrapped);
    ACCEL_REQUIRE_OK(accel_set_stream(globals().default_streams[last]));
    // Destroying the wrapper leaves the wrapped queue working.
    ACCEL_REQUIRE_OK(accel_stream_destroy(wrapped));
    CHECK(round_trip(owner, last, iota_bytes(4096, 3)) == iota_bytes(4096, 3));
  }
  SECTION("host functions and events on a wrapper") {
    accel_stream_t wrapped = nullptr;
    ACCEL_REQUIRE_OK(accel_stream_from_native(last, &h, 0, &wrapped));
    if (has_cap(ACCEL_CAP_HOST_FUNCTIONS)) {
      std::atomic<int> ran{0};
      ACCEL_REQUIRE_OK(launch_host_func(
          wrapped, [](void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); }, &ran));
      ACCEL_REQUIRE_OK(stream_synchronize(owner));  // the owner's queue ran it
      CHECK(ran.load() == 1);
    }
    if (globals().events.present) {
      Event e(last);
      ACCEL_REQUIRE_OK(accel_event_record(e, wrapped));
      ACCEL_REQUIRE_OK(event_synchronize(e));
      ACCEL_CHECK_OK(accel_event_query(e));
    }
    ACCEL_REQUIRE_OK(accel_stream_destroy(wrapped));
  }
  SECTION("refusals change nothing") {
    accel_stream_t out = reinterpret_cast<accel_stream_t>(uintptr_t{0x1});
    accel_native_handle_t bad = h;
    bad.type = static_cast<accel_native_type_t>(ACCEL_NATIVE_VENDOR_BASE + 77);
    ACCEL_CHECK_ERROR(accel_stream_from_native(last, &bad, 0, &out), ACCEL_ERROR_DEVICE_MISMATCH);
    bad = h;
    bad.handle = nullptr;
    ACCEL_CHECK_ERROR(accel_stream_from_native(last, &bad, 0, &out), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_stream_from_native(last, &h, 0x80, &out), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_stream_from_native(last, nullptr, 0, &out),
                      ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_stream_from_native(device_count(), &h, 0, &out),
                      ACCEL_ERROR_INVALID_DEVICE);
    CHECK(out == reinterpret_cast<accel_stream_t>(uintptr_t{0x1}));
  }
  SECTION("ownership of a queue an accel stream owns is refused") {
    // Taking it would release the queue twice: once by the new wrapper's
    // destroy, once by its owner's. A borrowed wrapper owns nothing, so the
    // refusal names the owner, not the wrapper.
    accel_stream_t borrowed = nullptr;
    ACCEL_REQUIRE_OK(accel_stream_from_native(last, &h, 0, &borrowed));
    std::ostringstream owner_name;
    owner_name << static_cast<const void*>(owner.get());
    accel_stream_t out = nullptr;
    FreshResult r = run_in_fresh_thread(
        [&] { return accel_stream_from_native(last, &h, ACCEL_NATIVE_TAKE_OWNERSHIP, &out); });
    CHECK(r.status == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(contains_ci(r.after, owner_name.str()));
    CHECK(contains_ci(r.after, "ACCEL_NATIVE_TAKE_OWNERSHIP"));
    // Never destroyed if wrongly made: that would release the owner's queue.
    CHECK(out == nullptr);
    ACCEL_REQUIRE_OK(accel_stream_destroy(borrowed));
    // The default stream's queue is accel's too.
    const accel_native_handle_t d = native_of(globals().default_streams[last]);
    if (d.handle != nullptr) {
      r = run_in_fresh_thread(
          [&] { return accel_stream_from_native(last, &d, ACCEL_NATIVE_TAKE_OWNERSHIP, &out); });
      CHECK(r.status == ACCEL_ERROR_INVALID_ARGUMENT);
      CHECK(out == nullptr);
    }
    CHECK(round_trip(owner, last, iota_bytes(4096, 5)) == iota_bytes(4096, 5));
  }
  SECTION("a queue of another device is refused") {
    if (!need_devices(2)) return;
    accel_stream_t out = nullptr;
    ACCEL_CHECK_ERROR(accel_stream_from_native(0, &h, 0, &out), ACCEL_ERROR_DEVICE_MISMATCH);
    CHECK(out == nullptr);
  }
}

TEST_CASE("pinned host memory and pointer attributes", "[interop]") {
  ThreadStateGuard guard;
  check_absent(ACCEL_CAP_HOST_MEMORY, "pinned host memory", [] {
    void* p = nullptr;
    return accel_host_malloc(64, 0, &p);
  });
  if (!has_cap(ACCEL_CAP_HOST_MEMORY)) return;
  if (!need_group(globals().memory)) return;
  const size_t n = 1 << 16;
  const auto before = host_stats();
  void* pinned = nullptr;
  ACCEL_REQUIRE_OK(accel_host_malloc(n, 0, &pinned));
  REQUIRE(pinned != nullptr);
  const auto during = host_stats();
  CHECK(during.allocated_bytes == before.allocated_bytes + n);
  CHECK(during.allocation_count == before.allocation_count + 1);
  CHECK(during.total_allocations == before.total_allocations + 1);
  CHECK(during.peak_allocated_bytes >= during.allocated_bytes);

  SECTION("round trip through pinned memory on every device") {
    for (int32_t d = 0; d < device_count(); ++d) {
      INFO("device " << d);
      auto* host = static_cast<unsigned char*>(pinned);
      const auto data = iota_bytes(n, static_cast<unsigned char>(d));
      std::memcpy(host, data.data(), n);
      DeviceMem m(d, n);
      accel_stream_t s = globals().default_streams[d];
      ACCEL_REQUIRE_OK(accel_memcpy_async(m.get(), host, n, ACCEL_MEMCPY_HOST_TO_DEVICE, s));
      ACCEL_REQUIRE_OK(accel_memset_async(m.get(), 0x5A, 16, s));
      ACCEL_REQUIRE_OK(accel_memcpy_async(host, m.get(), n, ACCEL_MEMCPY_DEVICE_TO_HOST, s));
      ACCEL_REQUIRE_OK(stream_synchronize(s));
      CHECK(host[0] == 0x5A);
      CHECK(host[15] == 0x5A);
      CHECK(std::memcmp(host + 16, data.data() + 16, n - 16) == 0);
    }
  }
  SECTION("attributes of every kind of pointer") {
    auto a = attributes_of(static_cast<char*>(pinned) + 100);
    CHECK(a.type == ACCEL_MEMORY_HOST_PINNED);
    CHECK(a.base == pinned);
    CHECK(a.size == n);
    CHECK(a.device == -1);
    CHECK(std::string(a.backend) == globals().backend);
    DeviceMem m(device_count() - 1, 4096);
    a = attributes_of(m.bytes() + 4095);
    CHECK(a.type == ACCEL_MEMORY_DEVICE);
    CHECK(a.base == m.get());
    CHECK(a.size == 4096);
    CHECK(a.device == device_count() - 1);
    int on_stack = 0;
    a = attributes_of(&on_stack);
    CHECK(a.type == ACCEL_MEMORY_UNKNOWN);
    CHECK(a.base == nullptr);
    CHECK(std::string(a.backend).empty());
    a = attributes_of(m.bytes() + 4096 + 4096 * 1024);  // past the end: not it
    CHECK((a.type != ACCEL_MEMORY_DEVICE || a.base != m.get()));
    ACCEL_CHECK_ERROR(accel_pointer_get_attributes(pinned, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
  }
  SECTION("registered host memory") {
    std::vector<unsigned char> buf(n);
    const auto reg_before = host_stats();
    ACCEL_REQUIRE_OK(accel_host_register(buf.data(), buf.size(), 0));
    CHECK(host_stats().registered_bytes == reg_before.registered_bytes + n);
    auto a = attributes_of(buf.data() + 1);
    CHECK(a.type == ACCEL_MEMORY_HOST_REGISTERED);
    CHECK(a.base == buf.data());
    // Overlaps are refused and change nothing.
    ACCEL_CHECK_ERROR(accel_host_register(buf.data() + 8, 16, 0), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_host_register(pinned, 16, 0), ACCEL_ERROR_INVALID_ARGUMENT);
    // A copy from it works.
    const auto data = iota_bytes(n, 9);
    std::memcpy(buf.data(), data.data(), n);
    DeviceMem m(0, n);
    ACCEL_REQUIRE_OK(accel_memcpy_async(m.get(), buf.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE,
                                        globals().default_streams[0]));
    std::vector<unsigned char> back(n);
    ACCEL_REQUIRE_OK(accel_memcpy_async(back.data(), m.get(), n, ACCEL_MEMCPY_DEVICE_TO_HOST,
                                        globals().default_streams[0]));
    ACCEL_REQUIRE_OK(stream_synchronize(globals().default_streams[0]));
    CHECK(back == data);
    ACCEL_CHECK_ERROR(accel_host_unregister(buf.data() + 1), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_REQUIRE_OK(accel_host_unregister(buf.data()));
    CHECK(host_stats().registered_bytes == reg_before.registered_bytes);
    CHECK(attributes_of(buf.data()).type == ACCEL_MEMORY_UNKNOWN);
    ACCEL_CHECK_ERROR(accel_host_unregister(buf.data()), ACCEL_ERROR_INVALID_ARGUMENT);
  }
  SECTION("errors change nothing") {
    void* p = reinterpret_cast<void*>(uintptr_t{0x1});
    ACCEL_CHECK_ERROR(accel_host_malloc(0, 0, &p), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_host_malloc(16, 1, &p), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_host_malloc(16, 0, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(p == reinterpret_cast<void*>(uintptr_t{0x1}));
    ACCEL_CHECK_ERROR(accel_host_free(static_cast<char*>(pinned) + 1),
                      ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_free(pinned), ACCEL_ERROR_INVALID_ARGUMENT);
    DeviceMem m(0, 64);
    ACCEL_CHECK_ERROR(accel_host_free(m.get()), ACCEL_ERROR_INVALID_ARGUMENT);
    // Host memory is not device memory: the copy kind must say host.
    ACCEL_CHECK_ERROR(accel_memcpy_async(pinned, m.get(), 64, ACCEL_MEMCPY_DEVICE_TO_DEVICE,
                                         globals().default_streams[0]),
                      ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(attributes_of(pinned).type == ACCEL_MEMORY_HOST_PINNED);
  }
  ACCEL_REQUIRE_OK(accel_host_free(pinned));
  ACCEL_CHECK_ERROR(accel_host_free(pinned), ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_OK(accel_host_free(nullptr));
  const auto after = host_stats();
  CHECK(after.allocated_bytes == before.allocated_bytes);
  CHECK(after.allocation_count == before.allocation_count);
}

// Issue #31: a size near SIZE_MAX wrapped in the vendor's (or the fake's,
// or sim's) rounding to its alignment under backend:native: a tiny block
// came back, recorded as SIZE_MAX bytes.
TEST_CASE("pinned host memory sizes near SIZE_MAX are refused and change nothing", "[interop]") {
  ThreadStateGuard guard;
  if (!has_cap(ACCEL_CAP_HOST_MEMORY)) return;
  const auto before = host_stats();
  const size_t huge[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4095, SIZE_MAX / 2 + 1};
  for (size_t bytes : huge) {
    INFO(bytes << " bytes");
    void* p = reinterpret_cast<void*>(uintptr_t{0x1});
    const accel_status_t st = accel_host_malloc(bytes, 0, &p);
    const std::string error = accel_last_error();
    INFO(accel_status_name(st) << ": " << error);
    if (st == ACCEL_SUCCESS) {
      CHECK(attributes_of(p).size == bytes);  // what the wrapped block claimed
      ACCEL_CHECK_OK(accel_host_free(p));
      FAIL("accel_host_malloc(" << bytes << ") succeeded");
    }
    CHECK(st == ACCEL_ERROR_OUT_OF_MEMORY);
    CHECK(error.find(std::to_string(bytes)) != std::string::npos);
    CHECK(p == reinterpret_cast<void*>(uintptr_t{0x1}));
  }
  const auto after = host_stats();
  CHECK(after.allocated_bytes == before.allocated_bytes);
  CHECK(after.allocation_count == before.allocation_count);
  CHECK(after.total_allocations == before.total_allocations);
}

TEST_CASE("copies between devices", "[interop]") {
  ThreadStateGuard guard;
  check_absent(ACCEL_CAP_PEER_COPY, "peer copies", [] {
    int32_t yes = 0;
    return accel_device_can_access_peer(0, 0, &yes);
  });
  if (!has_cap(ACCEL_CAP_PEER_COPY)) return;
  if (!need_group(globals().memory)) return;
  int32_t self = 7;
  ACCEL_REQUIRE_OK(accel_device_can_access_peer(0, 0, &self));
  CHECK(self == 0);  // a device is not its own peer (cuDeviceCanAccessPeer)
  ACCEL_CHECK_ERROR(accel_device_enable_peer_access(0, 0), ACCEL_ERROR_INVALID_ARGUMENT);
  if (!need_devices(2)) return;
  const int32_t a = 0, b = device_count() - 1;
  int32_t can = -1;
  ACCEL_REQUIRE_OK(accel_device_can_access_peer(a, b, &can));
  CHECK((can == 0 || can == 1));
  if (can == 1) {
    ACCEL_CHECK_OK(accel_device_enable_peer_access(a, b));
    ACCEL_CHECK_OK(accel_device_enable_peer_access(a, b));  // again: not an error
  } else {
    ACCEL_CHECK_ERROR(accel_device_enable_peer_access(a, b), ACCEL_ERROR_NOT_SUPPORTED);
  }
  const size_t n = 1 << 18;
  const auto data = iota_bytes(n, 11);
  DeviceMem ma(a, n), mb(b, n);
  accel_stream_t sa = globals().default_streams[a];
  ACCEL_REQUIRE_OK(accel_memcpy_async(ma.get(), data.data(), n, ACCEL_MEMCPY_HOST_TO_DEVICE, sa));
  // b's contents, copied back to the host on b's stream.
  auto b_contents = [&] {
    accel_stream_t sb = globals().default_streams[b];
    std::vector<unsigned char> back(n, 0);
    ACCEL_REQUIRE_OK(accel_memcpy_async(back.data(), mb.get(), n, ACCEL_MEMCPY_DEVICE_TO_HOST, sb));
    ACCEL_REQUIRE_OK(stream_synchronize(sb));
    return back;
  };
  SECTION("accel_memcpy_peer_async on the source's stream") {
    ACCEL_REQUIRE_OK(accel_memcpy_peer_async(mb.get(), b, ma.get(), a, n, sa));
    ACCEL_REQUIRE_OK(stream_synchronize(sa));
    CHECK(b_contents() == data);
  }
  SECTION("DEVICE_TO_DEVICE between devices; on the destination's stream") {
    accel_stream_t sb = globals().default_streams[b];
    ACCEL_REQUIRE_OK(stream_synchronize(sa));
    ACCEL_REQUIRE_OK(accel_memcpy_async(mb.get(), ma.get(), n, ACCEL_MEMCPY_DEVICE_TO_DEVICE, sb));
    ACCEL_REQUIRE_OK(stream_synchronize(sb));
    CHECK(b_contents() == data);
  }
  SECTION("pointers must be of the devices named") {
    ACCEL_CHECK_ERROR(accel_memcpy_peer_async(mb.get(), a, ma.get(), b, n, sa),
                      ACCEL_ERROR_DEVICE_MISMATCH);
    ACCEL_CHECK_ERROR(accel_memcpy_peer_async(mb.get(), b, ma.get(), a, n + 1, sa),
                      ACCEL_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("device attributes and capability", "[interop]") {
  ThreadStateGuard guard;
  CHECK(accel_device_attr_name(static_cast<accel_device_attr_t>(ACCEL_DEVICE_ATTR_COUNT)) ==
        nullptr);
  for (int a = 0; a < ACCEL_DEVICE_ATTR_COUNT; ++a)
    CHECK(accel_device_attr_name(static_cast<accel_device_attr_t>(a)) != nullptr);
  // torch: every device holds float32 tensors; the capability needs no group.
  for (int32_t d = 0; d < device_count(); ++d) {
    accel_device_capability_t c;
    std::memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    ACCEL_REQUIRE_OK(accel_get_device_capability(d, &c));
    CHECK((c.supported_dtypes & ACCEL_DTYPE_BIT(ACCEL_DTYPE_FLOAT32)) != 0);
    CHECK((c.supported_dtypes & ACCEL_DTYPE_BIT(ACCEL_DTYPE_UINT8)) != 0);
  }
  check_absent(ACCEL_CAP_DEVICE_ATTRIBUTES, "device attributes", [] {
    int64_t v = 0;
    return accel_device_get_attribute(0, ACCEL_DEVICE_ATTR_WARP_SIZE, &v);
  });
  if (!has_cap(ACCEL_CAP_DEVICE_ATTRIBUTES)) return;
  for (int32_t d = 0; d < device_count(); ++d) {
    int answered = 0;
    for (int a = 0; a < ACCEL_DEVICE_ATTR_COUNT; ++a) {
      const auto attr = static_cast<accel_device_attr_t>(a);
      INFO("device " << d << ", " << accel_device_attr_name(attr));
      int64_t v = -12345;
      FreshResult r = run_in_fresh_thread([&] { return accel_device_get_attribute(d, attr, &v); });
      if (r.status == ACCEL_ERROR_NOT_SUPPORTED) {
        CHECK(!r.after.empty());  // says why
        CHECK(v == -12345);       // and writes nothing
        continue;
      }
      REQUIRE(r.status == ACCEL_SUCCESS);
      CHECK(v >= 0);
      ++answered;
    }
    CHECK(answered > 0);
    // What every device has, where the backend answers it.
    for (auto attr : {ACCEL_DEVICE_ATTR_WARP_SIZE, ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK,
                      ACCEL_DEVICE_ATTR_MULTIPROCESSOR_COUNT}) {
      int64_t v = 0;
      if (accel_device_get_attribute(d, attr, &v) == ACCEL_SUCCESS) CHECK(v > 0);
    }
  }
  int64_t v = 0;
  ACCEL_CHECK_ERROR(accel_device_get_attribute(0, ACCEL_DEVICE_ATTR_WARP_SIZE, nullptr),
                    ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(
      accel_device_get_attribute(0, static_cast<accel_device_attr_t>(ACCEL_DEVICE_ATTR_COUNT), &v),
      ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_CHECK_ERROR(accel_device_get_attribute(device_count(), ACCEL_DEVICE_ATTR_WARP_SIZE, &v),
                    ACCEL_ERROR_INVALID_DEVICE);
}
