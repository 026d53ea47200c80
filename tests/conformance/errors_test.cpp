// Conformance: status names and messages, the last-error string, invalid
// devices, destroyed handles and cross-device mismatches.
#include "conformance.hpp"

#include <regex>
#include <set>

using namespace conf;

TEST_CASE("every status has a distinct name and message", "[errors]") {
  struct Named {
    accel_status_t value;
    const char* name;
  };
#define ACCEL_NAMED(x) \
  Named { x, #x }
  const Named all[] = {
      ACCEL_NAMED(ACCEL_SUCCESS),
      ACCEL_NAMED(ACCEL_ERROR_INVALID_ARGUMENT),
      ACCEL_NAMED(ACCEL_ERROR_INVALID_DEVICE),
      ACCEL_NAMED(ACCEL_ERROR_NO_ACCELERATOR),
      ACCEL_NAMED(ACCEL_ERROR_NOT_SUPPORTED),
      ACCEL_NAMED(ACCEL_ERROR_NOT_READY),
      ACCEL_NAMED(ACCEL_ERROR_OUT_OF_MEMORY),
      ACCEL_NAMED(ACCEL_ERROR_EVENT_NOT_RECORDED),
      ACCEL_NAMED(ACCEL_ERROR_EVENT_NO_TIMING),
      ACCEL_NAMED(ACCEL_ERROR_DEVICE_MISMATCH),
      ACCEL_NAMED(ACCEL_ERROR_FORKED),
      ACCEL_NAMED(ACCEL_ERROR_BACKEND_UNAVAILABLE),
      ACCEL_NAMED(ACCEL_ERROR_BACKEND_FAILURE),
      ACCEL_NAMED(ACCEL_ERROR_OUT_OF_RANGE),
      ACCEL_NAMED(ACCEL_ERROR_INTERNAL),
      ACCEL_NAMED(ACCEL_ERROR_REENTRANT),
      ACCEL_NAMED(ACCEL_ERROR_BUILD_FAILED),
      ACCEL_NAMED(ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED),
      ACCEL_NAMED(ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED),
  };
#undef ACCEL_NAMED
  STATIC_REQUIRE(sizeof all / sizeof all[0] == ACCEL_STATUS_COUNT);

  std::set<std::string> names, messages;
  for (int v = 0; v < ACCEL_STATUS_COUNT; ++v) {
    const auto st = static_cast<accel_status_t>(v);
    INFO("status " << v);
    const char* name = accel_status_name(st);
    const char* msg = accel_status_message(st);
    REQUIRE(name != nullptr);
    REQUIRE(msg != nullptr);
    CHECK(std::strlen(name) > 0);
    CHECK(std::strlen(msg) > 0);
    CHECK(std::string(name) == all[v].name);
    CHECK(all[v].value == st);
    CHECK(std::string(name) != "ACCEL_STATUS_UNKNOWN");
    CHECK(std::string(msg) != "unknown status");
    CHECK(names.insert(name).second);
    CHECK(messages.insert(msg).second);
    CHECK(accel_status_name(st) == name);  // static storage
  }
  // Values within the enum's range only: forming -1 as accel_status_t is
  // undefined in C++ (tests/c_api/c_api_test.c passes it from C).
  for (int v : {ACCEL_STATUS_COUNT, ACCEL_STATUS_COUNT + 1, 1000}) {
    INFO("unknown status " << v);
    CHECK(std::string(accel_status_name(static_cast<accel_status_t>(v))) == "ACCEL_STATUS_UNKNOWN");
    CHECK(std::string(accel_status_message(static_cast<accel_status_t>(v))) == "unknown status");
  }
}

TEST_CASE("backend status names", "[errors][backends]") {
  CHECK(std::string(accel_backend_status_name(ACCEL_BACKEND_AVAILABLE)) == "available");
  CHECK(std::string(accel_backend_status_name(ACCEL_BACKEND_NO_DEVICES)) == "no_devices");
  CHECK(std::string(accel_backend_status_name(ACCEL_BACKEND_UNAVAILABLE)) == "unavailable");
  CHECK(std::string(accel_backend_status_name(ACCEL_BACKEND_REJECTED)) == "rejected");
  CHECK(std::string(accel_backend_status_name(ACCEL_BACKEND_DUPLICATE)) == "duplicate");
  CHECK(std::string(accel_backend_status_name(static_cast<accel_backend_status_t>(99))) ==
        "unknown");
  CHECK(std::string(accel_backend_status_name(static_cast<accel_backend_status_t>(-1))) ==
        "unknown");
}

TEST_CASE("the last error is per thread: starts empty and survives success", "[errors][threads]") {
  // A new thread starts with "".
  std::string fresh = "x";
  std::thread t([&] { fresh = accel_last_error(); });
  t.join();
  CHECK(fresh.empty());

  // A failure sets it; a later success does not clear it; other threads
  // do not see it.
  ACCEL_CHECK_STATUS(accel_set_device_index(device_count()), ACCEL_ERROR_INVALID_DEVICE);
  std::string mine = accel_last_error();
  CHECK_FALSE(mine.empty());
  CHECK(accel_device_count() > 0);
  ACCEL_CHECK_OK(accel_set_device_index(0));
  CHECK(std::string(accel_last_error()) == mine);
  std::string other = "x";
  std::thread t2([&] { other = accel_last_error(); });
  t2.join();
  CHECK(other.empty());
  // A different failure replaces it.
  ACCEL_CHECK_STATUS(accel_free(&other), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(accel_last_error()) != mine);
}

TEST_CASE("every function taking a device refuses an out-of-range index", "[errors][devices]") {
  ThreadStateGuard guard;
  const int32_t n = device_count();
  for (int32_t bad : {n, n + 1, INT32_MAX}) {
    INFO("device " << bad << " of " << n);
    accel_stream_t s = nullptr;
    accel_event_t e = nullptr;
    void* p = nullptr;
    int32_t i32 = 0, j32 = 0;
    size_t a = 0, b = 0;
    accel_memory_stats_t ms;
    std::memset(&ms, 0, sizeof ms);
    ms.struct_size = sizeof ms;
    accel_device_properties_t props;
    std::memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;

    const std::vector<std::pair<const char*, std::function<accel_status_t()>>> calls = {
        {"set_device_index", [&] { return accel_set_device_index(bad); }},
        {"exchange_device", [&] { return accel_exchange_device(bad, &i32); }},
        {"maybe_exchange_device", [&] { return accel_maybe_exchange_device(bad, &i32); }},
        {"current_stream", [&] { return accel_current_stream(bad, &s); }},
        {"synchronize", [&] { return synchronize(bad); }},
        {"stream_priority_range", [&] { return accel_stream_priority_range(bad, &i32, &j32); }},
        {"stream_create", [&] { return accel_stream_create(bad, 0, &s); }},
        {"event_create", [&] { return accel_event_create(bad, ACCEL_EVENT_DEFAULT, &e); }},
        {"malloc", [&] { return accel_malloc(bad, 16, &p); }},
        {"mem_get_info", [&] { return accel_mem_get_info(bad, &a, &b); }},
        {"memory_stats", [&] { return accel_memory_stats(bad, &ms); }},
        {"reset_peak_memory_stats", [&] { return accel_reset_peak_memory_stats(bad); }},
        {"get_device_properties", [&] { return accel_get_device_properties(bad, &props); }},
    };
    for (const auto& c : calls) {
      FreshResult r = run_in_fresh_thread(c.second);
      INFO("accel_" << c.first << "(" << bad << ") -> " << accel_status_name(r.status) << ": \""
                    << r.after << "\"");
      CHECK(r.status == ACCEL_ERROR_INVALID_DEVICE);
      CHECK(r.before.empty());
      CHECK_FALSE(r.after.empty());
      // The message names the valid range: [0, n) or 0..n-1.
      CHECK((contains_number(r.after, n) || contains_number(r.after, n - 1)));
    }
    CHECK(s == nullptr);
    CHECK(e == nullptr);
    CHECK(p == nullptr);
  }
  CHECK(accel_current_device_index() == 0);
}

TEST_CASE("destroyed handles are refused with INVALID_ARGUMENT", "[errors]") {
  ThreadStateGuard guard;
  SECTION("stream") {
    accel_stream_t s = nullptr;
    ACCEL_REQUIRE_OK(accel_stream_create(0, 0, &s));
    ACCEL_REQUIRE_OK(accel_stream_destroy(s));
    int32_t v = 0;
    ACCEL_CHECK_ERROR(accel_stream_destroy(s), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_stream_query(s), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(stream_synchronize(s), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_stream_device(s, &v), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_stream_priority(s, &v), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_set_stream(s), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(launch_host_func(
                          s, [](void*) {}, nullptr),
                      ACCEL_ERROR_INVALID_ARGUMENT);
    if (need_group(globals().events)) {
      Event e(0);
      ACCEL_CHECK_ERROR(accel_stream_wait_event(s, e), ACCEL_ERROR_INVALID_ARGUMENT);
      ACCEL_CHECK_ERROR(accel_event_record(e, s), ACCEL_ERROR_INVALID_ARGUMENT);
    }
    if (need_group(globals().memory)) {
      unsigned char host[16] = {0};
      DeviceMem m(0, 16);
      ACCEL_CHECK_ERROR(accel_memcpy_async(m.get(), host, 16, ACCEL_MEMCPY_HOST_TO_DEVICE, s),
                        ACCEL_ERROR_INVALID_ARGUMENT);
      ACCEL_CHECK_ERROR(accel_memset_async(m.get(), 0, 16, s), ACCEL_ERROR_INVALID_ARGUMENT);
    }
    // The current stream was not changed by the refused set_stream.
    accel_stream_t cur = nullptr;
    ACCEL_REQUIRE_OK(accel_current_stream(0, &cur));
    CHECK(cur == globals().default_streams[0]);
  }
  SECTION("event") {
    if (!need_group(globals().events)) return;
    accel_event_t e = nullptr;
    ACCEL_REQUIRE_OK(accel_event_create(0, ACCEL_EVENT_DEFAULT, &e));
    ACCEL_REQUIRE_OK(accel_event_destroy(e));
    Stream s(0);
    int32_t v = 0;
    float ms = 0.0f;
    ACCEL_CHECK_ERROR(accel_event_destroy(e), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_event_query(e), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(event_synchronize(e), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_event_record(e, s), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_event_device(e, &v), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_stream_wait_event(s, e), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_event_elapsed_time(e, e, &ms), ACCEL_ERROR_INVALID_ARGUMENT);
  }
  SECTION("a handle that was never one") {
    // Garbage that is not a live handle: detected, not dereferenced blindly.
    alignas(64) static unsigned char junk[256] = {0};
    auto bogus_s = reinterpret_cast<accel_stream_t>(junk);
    auto bogus_e = reinterpret_cast<accel_event_t>(junk + 64);
    ACCEL_CHECK_ERROR(accel_stream_query(bogus_s), ACCEL_ERROR_INVALID_ARGUMENT);
    ACCEL_CHECK_ERROR(accel_event_query(bogus_e), ACCEL_ERROR_INVALID_ARGUMENT);
  }
}

namespace {

// The message of a mismatch names both devices.
void check_names_both(const std::string& msg, int32_t a, int32_t b) {
  INFO("message: \"" << msg << "\"");
  CHECK(contains_number(msg, a));
  CHECK(contains_number(msg, b));
}

}  // namespace

TEST_CASE("cross-device use is DEVICE_MISMATCH naming both devices", "[errors][multi]") {
  if (!need_devices(2)) return;
  ThreadStateGuard guard;
  const int32_t other = device_count() - 1;
  Stream s0(0), s1(other);

  SECTION("record an event of device 0 on a stream of another device") {
    if (!need_group(globals().events)) return;
    Event e0(0);
    FreshResult r = run_in_fresh_thread([&] { return accel_event_record(e0, s1); });
    CHECK(r.status == ACCEL_ERROR_DEVICE_MISMATCH);
    CHECK_FALSE(r.after.empty());
    check_names_both(r.after, 0, other);
    // The event is still never-recorded: complete at once.
    ACCEL_CHECK_OK(accel_event_query(e0));
  }
  SECTION("wait on an event of another device: allowed only with ACCEL_CAP_CROSS_DEVICE_WAIT") {
    if (!need_group(globals().events)) return;
    Event e1(other);
    FreshResult r = run_in_fresh_thread([&] { return accel_stream_wait_event(s0, e1); });
    if (has_cap(ACCEL_CAP_CROSS_DEVICE_WAIT)) {
      INFO(r.after);
      CHECK(r.status == ACCEL_SUCCESS);  // ordering itself: edge_cases_test.cpp
    } else {
      CHECK(r.status == ACCEL_ERROR_DEVICE_MISMATCH);
      check_names_both(r.after, 0, other);
    }
  }
  SECTION("elapsed time between devices") {
    if (need_group(globals().events) && need_cap(ACCEL_CAP_TIMING_EVENTS, "timing events")) {
      Event t0(0, ACCEL_EVENT_ENABLE_TIMING), t1(other, ACCEL_EVENT_ENABLE_TIMING);
      ACCEL_REQUIRE_OK(accel_event_record(t0, s0));
      ACCEL_REQUIRE_OK(accel_event_record(t1, s1));
      ACCEL_REQUIRE_OK(event_synchronize(t0));
      ACCEL_REQUIRE_OK(event_synchronize(t1));
      float ms = 5.0f;
      FreshResult r = run_in_fresh_thread([&] { return accel_event_elapsed_time(t0, t1, &ms); });
      CHECK(r.status == ACCEL_ERROR_DEVICE_MISMATCH);
      check_names_both(r.after, 0, other);
      CHECK(ms == 5.0f);
    }
  }
  SECTION("device memory of another device on a stream") {
    if (!need_group(globals().memory)) return;
    DeviceMem m1(other, 256);
    unsigned char host[256] = {0};
    FreshResult r = run_in_fresh_thread(
        [&] { return accel_memcpy_async(m1.get(), host, 256, ACCEL_MEMCPY_HOST_TO_DEVICE, s0); });
    CHECK(r.status == ACCEL_ERROR_DEVICE_MISMATCH);
    check_names_both(r.after, 0, other);
    r = run_in_fresh_thread([&] { return accel_memset_async(m1.get(), 0, 256, s0); });
    CHECK(r.status == ACCEL_ERROR_DEVICE_MISMATCH);
    r = run_in_fresh_thread(
        [&] { return accel_memcpy_async(host, m1.get(), 256, ACCEL_MEMCPY_DEVICE_TO_HOST, s0); });
    CHECK(r.status == ACCEL_ERROR_DEVICE_MISMATCH);
  }
}
