// accel.hpp as a C++17 program uses it (most CUDA, HIP and SYCL code bases
// are C++17): built with -std=c++17 -pedantic and, outside sanitizer builds,
// -Werror, so any C++20 construct left in the header (std::span, designated
// initialisers, a derived operator!=, ...) fails the build. Runs over sim
// with 2 devices (tests/cxx/meson.build); the full behaviour of the layer is
// tested in C++20 by cxx_api_test.cpp, this covers what C++17 spells
// differently.
#include <accel/accel.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

static_assert(__cplusplus == 201703L, "this program must be compiled as C++17");

// HostSpan, the host side of copies: containers, arrays and {pointer, count};
// writable views only of lvalues; never device memory.
static_assert(std::is_convertible_v<std::vector<int>&, accel::HostSpan<int>>);
static_assert(std::is_convertible_v<std::vector<int>&, accel::HostSpan<const int>>);
static_assert(std::is_convertible_v<const std::vector<int>&, accel::HostSpan<const int>>);
static_assert(std::is_convertible_v<std::vector<int>&&, accel::HostSpan<const int>>);
static_assert(std::is_convertible_v<std::array<int, 3>&, accel::HostSpan<int>>);
static_assert(std::is_convertible_v<int (&)[8], accel::HostSpan<int>>);
static_assert(std::is_convertible_v<accel::HostSpan<int>, accel::HostSpan<const int>>);
static_assert(!std::is_convertible_v<accel::HostSpan<const int>, accel::HostSpan<int>>);
static_assert(!std::is_convertible_v<std::vector<int>&&, accel::HostSpan<int>>);
static_assert(!std::is_convertible_v<const std::vector<int>&, accel::HostSpan<int>>);
static_assert(!std::is_convertible_v<std::vector<long>&, accel::HostSpan<const int>>);
static_assert(!std::is_convertible_v<accel::DeviceBuffer<int>&, accel::HostSpan<int>>);
static_assert(!std::is_convertible_v<accel::DeviceBuffer<int>&, accel::HostSpan<const int>>);
static_assert(std::is_nothrow_copy_constructible_v<accel::HostSpan<float>>);

namespace {

void reset_thread_state() {
  accel::set_device_index(0);
  for (int d = 0; d < accel::device_count(); ++d) accel::Stream::current(d).synchronize();
}

}  // namespace

TEST_CASE("C++17: free functions and the device guard", "[cxx17]") {
  REQUIRE(accel::is_available());
  REQUIRE(accel::current_accelerator() == std::optional<std::string>("sim"));
  REQUIRE(accel::device_count() == 2);
  reset_thread_state();
  {
    accel::DeviceIndexGuard guard(1);
    CHECK(accel::current_device_index() == 1);
    CHECK(guard.original_device() == 0);
  }
  CHECK(accel::current_device_index() == 0);
  const accel::DeviceProperties p = accel::device_properties(1);
  CHECK(p.device_index == 1);
}

TEST_CASE("C++17: DeviceBuffer copies from containers / arrays / pointers", "[cxx17][memory]") {
  reset_thread_state();
  accel::Stream s = accel::Stream::create(1);
  accel::DeviceBuffer<std::int32_t> buf(16, 1);

  std::vector<std::int32_t> in(16);
  std::iota(in.begin(), in.end(), 100);
  buf.copy_from(in, s);
  std::vector<std::int32_t> out(16, 0);
  buf.copy_to(out, s);
  s.synchronize();
  CHECK(out == in);

  // A C array and a std::array with an offset, {pointer, count}, HostSpan.
  const std::int32_t head[4] = {1, 2, 3, 4};
  buf.copy_from(head, s);
  std::array<std::int32_t, 2> mid = {{50, 51}};
  buf.copy_from(mid, s, 8);
  std::int32_t raw[16] = {};
  buf.copy_to({raw, 16}, s);
  s.synchronize();
  CHECK(raw[0] == 1);
  CHECK(raw[3] == 4);
  CHECK(raw[4] == 104);
  CHECK(raw[8] == 50);
  CHECK(raw[9] == 51);
  CHECK(raw[15] == 115);

  std::vector<std::int32_t> tail(4, 0);
  buf.copy_to(accel::HostSpan<std::int32_t>(tail), s, 12);
  s.synchronize();
  CHECK(tail == std::vector<std::int32_t>{112, 113, 114, 115});

  // The overloads without a stream use the buffer's device's current stream.
  std::vector<std::int32_t> back(16, 0);
  buf.copy_from(in);
  buf.copy_to(back);
  accel::Stream::current(1).synchronize();
  CHECK(back == in);

  // (pointer, count), with and without a stream and an offset.
  const std::int32_t* src = in.data();
  std::int32_t* dst = back.data();
  buf.copy_from(src + 4, 2, s, 0);
  buf.copy_to(dst, 16, s);
  s.synchronize();
  CHECK(back[0] == 104);
  CHECK(back[1] == 105);
  CHECK(back[2] == 102);
  buf.copy_from(src, 16);
  buf.copy_to(dst + 2, 2, 5);
  accel::Stream::current(1).synchronize();
  CHECK(back[2] == 105);
  CHECK(back[3] == 106);
  CHECK_THROWS_AS(buf.copy_from(src, 17, s), accel::Error);

  // A range that does not fit is refused before any copy.
  std::vector<std::int32_t> big(17, 0);
  CHECK_THROWS_AS(buf.copy_from(big, s), accel::Error);
}

TEST_CASE("C++17: streams / events / host functions", "[cxx17][stream][event]") {
  reset_thread_state();
  accel::Stream a = accel::Stream::create(0);
  accel::Stream b = accel::Stream::create(0);
  CHECK(a != b);
  CHECK_FALSE(a == b);
  const accel::Stream view = a.view();
  CHECK(view == a);

  // EventOptions spelled without designated initialisers.
  accel::Event start(accel::EventOptions{true});
  accel::Event end(accel::EventOptions{true, 0});
  CHECK(start.timing_enabled());
  a.record(start);
  a.launch_host_func([] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); });
  a.record(end);
  b.wait(a);  // records an internal event: built by the header in C++17
  accel::Event done = b.record_event();
  done.synchronize();
  CHECK(end.query());
  CHECK(start.elapsed_time(end).count() >= 4.0);

  {
    accel::StreamGuard guard(b);
    CHECK(accel::current_stream(0) == b);
  }
  CHECK(accel::current_stream(0) != b);
}

TEST_CASE("C++17: Error names the operation once", "[cxx17][error]") {
  reset_thread_state();
  try {
    accel::set_device_index(5);
    FAIL("set_device_index(5) did not throw with 2 devices");
  } catch (const accel::Error& e) {
    CHECK(e.status() == ACCEL_ERROR_INVALID_DEVICE);
    const std::string what = e.what();
    CHECK(what.rfind("accel_set_device_index: ACCEL_ERROR_INVALID_DEVICE: ", 0) == 0);
    CHECK(what.find("accel_set_device_index", 1) == std::string::npos);
  }
}
