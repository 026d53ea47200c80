// Conformance: availability, current accelerator, device indices (torch
// semantics), device properties, backend introspection.
#include "conformance.hpp"

#include <cstdio>
#include <cstdlib>
#include <set>

using namespace conf;

TEST_CASE("device count is what the backend reports", "[devices]") {
  const int32_t n = accel_device_count();
  REQUIRE(n > 0);
  CHECK(n == device_count());
  CHECK(accel_device_count() == n);  // stable
  const char* expect = std::getenv("ACCEL_EXPECT_DEVICES");
  if (expect != nullptr && *expect != '\0') {
    INFO("ACCEL_EXPECT_DEVICES=" << expect);
    CHECK(n == std::atoi(expect));
  } else {
    WARN("ACCEL_EXPECT_DEVICES not set: device count " << n << " not compared");
  }
}

TEST_CASE("availability / current accelerator / selection reason / version", "[devices]") {
  CHECK(accel_is_available() == 1);
  const char* name = accel_current_accelerator();
  REQUIRE(name != nullptr);
  CHECK(std::string(name) == globals().backend);
  CHECK(accel_current_accelerator() == name);  // static storage, stable
  const char* reason = accel_selection_reason();
  REQUIRE(reason != nullptr);
  CHECK(std::string(reason).size() > 0);
  CHECK(std::string(reason).find(name) != std::string::npos);

  const char* v = accel_version();
  REQUIRE(v != nullptr);
  char expect[64];
  std::snprintf(expect, sizeof expect, "%d.%d.%d", ACCEL_VERSION_MAJOR, ACCEL_VERSION_MINOR,
                ACCEL_VERSION_PATCH);
  CHECK(std::string(v) == expect);
}

TEST_CASE("current device index starts at 0 on every thread", "[devices][threads]") {
  int32_t seen = -2;
  std::thread t([&] { seen = accel_current_device_index(); });
  t.join();
  CHECK(seen == 0);
}

TEST_CASE("set_device_index: valid / negative no-op / out of range", "[devices]") {
  ThreadStateGuard guard;
  const int32_t n = device_count();
  for (int32_t d = 0; d < n; ++d) {
    ACCEL_REQUIRE_OK(accel_set_device_index(d));
    CHECK(accel_current_device_index() == d);
  }
  const int32_t last = n - 1;
  ACCEL_REQUIRE_OK(accel_set_device_index(last));

  SECTION("negative index is a no-op (torch's None)") {
    ACCEL_CHECK_OK(accel_set_device_index(-1));
    CHECK(accel_current_device_index() == last);
    ACCEL_CHECK_OK(accel_set_device_index(INT32_MIN));
    CHECK(accel_current_device_index() == last);
  }
  SECTION("index == count is INVALID_DEVICE; names the range; changes nothing") {
    ACCEL_CHECK_STATUS(accel_set_device_index(n), ACCEL_ERROR_INVALID_DEVICE);
    CHECK(accel_current_device_index() == last);
    std::string msg = accel_last_error();
    INFO("message: " << msg);
    CHECK(contains_number(msg, n));
    CHECK((contains_number(msg, 0)));
  }
  SECTION("huge index is INVALID_DEVICE") {
    ACCEL_CHECK_STATUS(accel_set_device_index(INT32_MAX), ACCEL_ERROR_INVALID_DEVICE);
    CHECK(accel_current_device_index() == last);
    std::string msg = accel_last_error();
    INFO("message: " << msg);
    CHECK(contains_number(msg, n));
  }
}

TEST_CASE("exchange_device returns the previous index and restores", "[devices]") {
  ThreadStateGuard guard;
  const int32_t n = device_count();
  int32_t prev = -7;

  SECTION("exchange(-1) returns the current index and changes nothing") {
    ACCEL_REQUIRE_OK(accel_set_device_index(n - 1));
    ACCEL_CHECK_OK(accel_exchange_device(-1, &prev));
    CHECK(prev == n - 1);
    CHECK(accel_current_device_index() == n - 1);
  }
  SECTION("exchange to the current device") {
    ACCEL_CHECK_OK(accel_exchange_device(0, &prev));
    CHECK(prev == 0);
    CHECK(accel_current_device_index() == 0);
  }
  SECTION("out of range: INVALID_DEVICE; *previous and current untouched") {
    prev = -7;
    ACCEL_CHECK_STATUS(accel_exchange_device(n, &prev), ACCEL_ERROR_INVALID_DEVICE);
    CHECK(prev == -7);
    CHECK(accel_current_device_index() == 0);
    std::string msg = accel_last_error();
    INFO("message: " << msg);
    CHECK(contains_number(msg, n));
  }
  SECTION("NULL previous is INVALID_ARGUMENT") {
    ACCEL_CHECK_STATUS(accel_exchange_device(0, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(accel_current_device_index() == 0);
  }
  SECTION("guard pattern over two devices") {
    if (need_devices(2)) {
      ACCEL_REQUIRE_OK(accel_exchange_device(1, &prev));
      CHECK(prev == 0);
      CHECK(accel_current_device_index() == 1);
      int32_t prev2 = -7;
      ACCEL_REQUIRE_OK(accel_exchange_device(n - 1, &prev2));
      CHECK(prev2 == 1);
      ACCEL_REQUIRE_OK(accel_exchange_device(prev2, &prev2));
      CHECK(prev2 == n - 1);
      CHECK(accel_current_device_index() == 1);
      // Restore as a guard's destructor would.
      int32_t back = -7;
      ACCEL_REQUIRE_OK(accel_exchange_device(prev, &back));
      CHECK(back == 1);
      CHECK(accel_current_device_index() == 0);
    }
  }
}

TEST_CASE("maybe_exchange_device returns the index current before the call", "[devices]") {
  ThreadStateGuard guard;
  const int32_t n = device_count();
  int32_t prev = -7;

  SECTION("maybe_exchange(-1)") {
    ACCEL_CHECK_OK(accel_maybe_exchange_device(-1, &prev));
    CHECK(prev == 0);
    CHECK(accel_current_device_index() == 0);
  }
  SECTION("maybe_exchange to the current device does nothing") {
    ACCEL_REQUIRE_OK(accel_set_device_index(n - 1));
    ACCEL_CHECK_OK(accel_maybe_exchange_device(n - 1, &prev));
    CHECK(prev == n - 1);
    CHECK(accel_current_device_index() == n - 1);
  }
  SECTION("out of range") {
    ACCEL_CHECK_STATUS(accel_maybe_exchange_device(n + 3, &prev), ACCEL_ERROR_INVALID_DEVICE);
    CHECK(prev == -7);
    CHECK(accel_current_device_index() == 0);
  }
  SECTION("NULL previous") {
    ACCEL_CHECK_STATUS(accel_maybe_exchange_device(0, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
  }
  SECTION("switch and restore over two devices (previous; not new; index)") {
    if (need_devices(2)) {
      ACCEL_REQUIRE_OK(accel_maybe_exchange_device(1, &prev));
      CHECK(prev == 0);  // PyTorch's CUDA implementation returns 1 here: a bug
      CHECK(accel_current_device_index() == 1);
      int32_t back = -7;
      ACCEL_REQUIRE_OK(accel_maybe_exchange_device(prev, &back));
      CHECK(back == 1);
      CHECK(accel_current_device_index() == 0);
    }
  }
}

TEST_CASE("device properties are sane", "[devices]") {
  ThreadStateGuard guard;
  const int32_t n = device_count();
  for (int32_t d = 0; d < n; ++d) {
    INFO("device " << d);
    accel_device_properties_t p;
    std::memset(&p, 0xAB, sizeof p);
    p.struct_size = sizeof p;
    ACCEL_REQUIRE_OK(accel_get_device_properties(d, &p));
    CHECK(p.struct_size == sizeof p);
    CHECK(p.device_index == d);
    REQUIRE(std::memchr(p.name, '\0', sizeof p.name) != nullptr);
    REQUIRE(std::memchr(p.vendor, '\0', sizeof p.vendor) != nullptr);
    REQUIRE(std::memchr(p.pci_bus_id, '\0', sizeof p.pci_bus_id) != nullptr);
    REQUIRE(std::memchr(p.architecture, '\0', sizeof p.architecture) != nullptr);
    CHECK(std::strlen(p.name) > 0);
    CHECK(p.total_memory > 0);
    CHECK((p.has_uuid == 0 || p.has_uuid == 1));
    if (p.has_uuid == 0) {
      for (unsigned char b : p.uuid) CHECK(b == 0);
    }
    CHECK(p.compute_units >= 0);

    if (globals().mem_info.present) {
      size_t total = 0;
      ACCEL_REQUIRE_OK(accel_mem_get_info(d, nullptr, &total));
      // The two views of device memory agree (a backend reporting a smaller
      // usable total is fine, a larger one is not).
      CHECK(total <= p.total_memory);
    }
  }
  need_group(globals().mem_info);  // says that total_memory was not compared

  SECTION("negative index means the current device") {
    const int32_t target = n - 1;
    ACCEL_REQUIRE_OK(accel_set_device_index(target));
    accel_device_properties_t p;
    std::memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    ACCEL_REQUIRE_OK(accel_get_device_properties(-1, &p));
    CHECK(p.device_index == target);
  }
  SECTION("no byte past struct_size is written") {
    accel_device_properties_t p;
    std::memset(&p, 0xAB, sizeof p);
    p.struct_size = offsetof(accel_device_properties_t, vendor);
    ACCEL_REQUIRE_OK(accel_get_device_properties(0, &p));
    CHECK(p.struct_size == offsetof(accel_device_properties_t, vendor));
    CHECK(std::memchr(p.name, '\0', sizeof p.name) != nullptr);
    const auto* raw = reinterpret_cast<const unsigned char*>(&p);
    size_t written_past = 0;
    for (size_t i = offsetof(accel_device_properties_t, vendor); i < sizeof p; ++i)
      if (raw[i] != 0xAB) ++written_past;
    CHECK(written_past == 0);
  }
  SECTION("errors") {
    ACCEL_CHECK_ERROR(accel_get_device_properties(0, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    accel_device_properties_t p;
    std::memset(&p, 0, sizeof p);
    p.struct_size = sizeof(size_t) - 1;
    ACCEL_CHECK_ERROR(accel_get_device_properties(0, &p), ACCEL_ERROR_INVALID_ARGUMENT);
    p.struct_size = sizeof p;
    ACCEL_CHECK_ERROR(accel_get_device_properties(n, &p), ACCEL_ERROR_INVALID_DEVICE);
  }
}

TEST_CASE("backend introspection shows the current backend", "[devices][backends]") {
  const size_t count = accel_backend_count();
  REQUIRE(count >= 1);
  CHECK(accel_backend_count() == count);
  int current_entries = 0;
  std::set<std::string> loaded_names;
  for (size_t i = 0; i < count; ++i) {
    INFO("entry " << i);
    accel_backend_info_t info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ACCEL_REQUIRE_OK(accel_get_backend_info(i, &info));
    REQUIRE(info.name != nullptr);
    REQUIRE(info.path != nullptr);
    REQUIRE(info.reason != nullptr);
    INFO("name=" << info.name << " path=" << info.path << " status="
                 << accel_backend_status_name(info.status) << " reason=" << info.reason);
    CHECK(std::strlen(info.path) > 0);
    CHECK(static_cast<int>(info.status) >= 0);
    CHECK(static_cast<int>(info.status) <= 4);
    CHECK(std::string(accel_backend_status_name(info.status)) != "unknown");
    CHECK((info.is_current == 0 || info.is_current == 1));
    if (info.status == ACCEL_BACKEND_REJECTED || info.status == ACCEL_BACKEND_DUPLICATE) {
      CHECK(std::strlen(info.reason) > 0);  // never silent about a refusal
      CHECK(info.is_current == 0);
    }
    if (info.status == ACCEL_BACKEND_AVAILABLE) {
      CHECK(info.device_count > 0);
      CHECK(std::strlen(info.name) > 0);
      CHECK(loaded_names.insert(info.name).second);  // names unique among loaded
    }
    if (info.is_current) {
      ++current_entries;
      CHECK(std::string(info.name) == globals().backend);
      CHECK(info.status == ACCEL_BACKEND_AVAILABLE);
      CHECK(info.device_count == accel_device_count());
      CHECK(info.abi_major >= 1);
      CHECK(info.capabilities == globals().capabilities);
    }
  }
  CHECK(current_entries == 1);

  SECTION("errors") {
    accel_backend_info_t info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ACCEL_CHECK_ERROR(accel_get_backend_info(count, &info), ACCEL_ERROR_OUT_OF_RANGE);
    ACCEL_CHECK_ERROR(accel_get_backend_info(static_cast<size_t>(-1), &info),
                      ACCEL_ERROR_OUT_OF_RANGE);
    ACCEL_CHECK_ERROR(accel_get_backend_info(0, nullptr), ACCEL_ERROR_INVALID_ARGUMENT);
    info.struct_size = 0;
    ACCEL_CHECK_ERROR(accel_get_backend_info(0, &info), ACCEL_ERROR_INVALID_ARGUMENT);
  }
}

TEST_CASE("declared capabilities have their operations", "[devices][backends]") {
  // Checks of a capability are skipped when it is not declared, and checks
  // of an optional group when the group is absent: a declaration without
  // its operations must fail here rather than be skipped there.
  if (has_cap(ACCEL_CAP_TIMING_EVENTS)) {
    INFO("the backend declares timing events, but " << globals().events.why);
    CHECK(globals().events.present);
  }
  if (has_cap(ACCEL_CAP_HOST_FUNCTIONS)) {
    Stream s(0);
    ACCEL_CHECK_OK(launch_host_func(
        s, [](void*) {}, nullptr));
    ACCEL_CHECK_OK(stream_synchronize(s));
  }
  if (has_cap(ACCEL_CAP_MODULES)) {
    // Every device takes at least one format ("modules: ..." then load the
    // build's images in those formats for real).
    for (int32_t d = 0; d < device_count(); ++d) {
      uint64_t formats = 0;
      ACCEL_CHECK_OK(accel_device_module_formats(d, &formats));
      INFO("device " << d << " declares modules but reports no format it takes");
      CHECK(formats != 0);
    }
  }
  SUCCEED("capabilities 0x" << std::hex << globals().capabilities);
}

TEST_CASE("synchronize every device and the current one", "[devices]") {
  ThreadStateGuard guard;
  for (int32_t d = 0; d < device_count(); ++d) ACCEL_CHECK_OK(synchronize(d));
  ACCEL_CHECK_OK(synchronize(-1));
  ACCEL_CHECK_ERROR(synchronize(device_count()), ACCEL_ERROR_INVALID_DEVICE);
}
