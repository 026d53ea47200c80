// accel_plugin_helpers.hpp as a plugin uses it, built as C++17 with -Wall
// -Wextra -Werror -pedantic (the header promises C++17 to third parties):
// the entry macro, the host wrapper over a full, a short and an empty host
// table, the exception guard, the vendor-failure message and the vendor
// library opener. A fake host table records what the "plugin" reports.
#include <accel/accel_plugin_helpers.hpp>

#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

int g_failed = 0;
int g_passed = 0;

void check(bool ok, const std::string& what) {
  if (ok) {
    ++g_passed;
  } else {
    ++g_failed;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

// --- a fake core ------------------------------------------------------------------

struct Recorded {
  std::vector<std::string> logs;
  int log_enabled_calls = 0;
  bool debug_enabled = true;
  accel_status_t error_status = ACCEL_SUCCESS;
  std::string error;
  int errors = 0;
  std::map<std::string, std::string> env;
};
Recorded g_rec;

void fake_log(const accel_host_services_t*, accel_log_level_t level, const char* message) {
  g_rec.logs.push_back(std::to_string(static_cast<int>(level)) + " " + message);
}
int fake_log_enabled(const accel_host_services_t*, accel_log_level_t level) {
  ++g_rec.log_enabled_calls;
  return level >= ACCEL_LOG_INFO || g_rec.debug_enabled;
}
void fake_set_error(const accel_host_services_t*, accel_status_t status, const char* message) {
  ++g_rec.errors;
  g_rec.error_status = status;
  g_rec.error = message;
}
const char* fake_get_env(const accel_host_services_t*, const char* name) {
  auto it = g_rec.env.find(name);
  return it == g_rec.env.end() ? nullptr : it->second.c_str();
}

accel_host_services_t full_table() {
  accel_host_services_t t;
  std::memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.abi_major = ACCEL_PLUGIN_ABI_MAJOR;
  t.abi_minor = ACCEL_PLUGIN_ABI_MINOR;
  t.log = fake_log;
  t.log_enabled = fake_log_enabled;
  t.set_error = fake_set_error;
  t.get_env = fake_get_env;
  return t;
}

// --- the "plugin" ---------------------------------------------------------------------

accel_plugin_api_t make_api() {
  accel_plugin_api_t api;
  std::memset(&api, 0, sizeof api);
  api.struct_size = sizeof api;
  api.abi_major = ACCEL_PLUGIN_ABI_MAJOR;
  api.abi_minor = ACCEL_PLUGIN_ABI_MINOR;
  api.name = "helpertest";
  return api;
}
const accel_plugin_api_t g_api = make_api();

}  // namespace

ACCEL_PLUGIN_DEFINE_ENTRY(g_api);

namespace {

namespace ap = accel::plugin;

void test_entry(const accel_host_services_t* table) {
  check(ACCEL_PLUGIN_ENTRY(ACCEL_PLUGIN_ABI_MAJOR, 0, nullptr) == nullptr,
        "the entry declines a NULL host table");
  g_rec.logs.clear();
  check(ACCEL_PLUGIN_ENTRY(ACCEL_PLUGIN_ABI_MAJOR + 1, 0, table) == nullptr,
        "the entry declines another ABI major");
  check(g_rec.logs.size() == 1 &&
            g_rec.logs[0].find("helpertest plugin speaks backend ABI") != std::string::npos &&
            g_rec.logs[0].find("declining") != std::string::npos &&
            g_rec.logs[0].rfind("3 ", 0) == 0,
        "declining logs a warning naming the plugin and both versions");
  check(ACCEL_PLUGIN_ENTRY(ACCEL_PLUGIN_ABI_MAJOR, ACCEL_PLUGIN_ABI_MINOR + 5, table) == &g_api,
        "the entry returns the table for the same major, whatever the minor");
  check(ap::host().table() == table, "the entry stored the host table for host()");
  static_assert(std::is_same<decltype(&ACCEL_PLUGIN_ENTRY), accel_plugin_entry_fn>::value,
                "the macro's entry has the ABI's signature");
}

void test_host_full() {
  g_rec = Recorded();
  check(
      ap::fail(ACCEL_ERROR_INVALID_DEVICE, "device %d of %s", 7, "x") == ACCEL_ERROR_INVALID_DEVICE,
      "fail() returns its status");
  check(g_rec.error_status == ACCEL_ERROR_INVALID_DEVICE && g_rec.error == "device 7 of x",
        "fail() formats printf-style into set_error");
  check(ap::set_error(ACCEL_ERROR_NOT_READY, std::string("plain")) == ACCEL_ERROR_NOT_READY &&
            g_rec.error == "plain",
        "set_error(std::string) reports and returns the status");
  check(ap::fail(ACCEL_SUCCESS, std::string(1000, 'y')) == ACCEL_SUCCESS &&
            g_rec.error == std::string(1000, 'y'),
        "fail(std::string) passes long messages whole");
  ap::fail(ACCEL_ERROR_INTERNAL, "%s", std::string(5000, 'z').c_str());
  check(g_rec.error == std::string(5000, 'z'), "printf-style messages longer than 256 bytes");

  g_rec.env["HELPER_VAR"] = "3";
  check(ap::env("HELPER_VAR") != nullptr && std::strcmp(ap::env("HELPER_VAR"), "3") == 0,
        "env() reads through host->get_env");
  check(ap::env("HELPER_UNSET") == nullptr, "env() is NULL for an unset variable");
  check(ap::env(nullptr) == nullptr, "env(NULL) is NULL");

  g_rec.debug_enabled = false;
  g_rec.logs.clear();
  ap::log(ACCEL_LOG_DEBUG, "hidden %d", 1);
  ap::log(ACCEL_LOG_INFO, "shown %d", 2);
  ap::log(ACCEL_LOG_WARN, std::string("as a string"));
  check(g_rec.logs.size() == 2 && g_rec.logs[0] == "2 shown 2" && g_rec.logs[1] == "3 as a string",
        "log() formats and logs only enabled levels");
  check(!ap::log_enabled(ACCEL_LOG_DEBUG) && ap::log_enabled(ACCEL_LOG_ERROR),
        "log_enabled() asks the core");
}

void test_host_short_tables() {
  // A core older than this header: its table ends before set_error.
  accel_host_services_t t = full_table();
  t.struct_size = offsetof(accel_host_services_t, set_error);
  ap::Host h;
  h.attach(&t);
  g_rec = Recorded();
  g_rec.env["HELPER_VAR"] = "1";
  check(h.fail(ACCEL_ERROR_INTERNAL, "lost %d", 1) == ACCEL_ERROR_INTERNAL && g_rec.errors == 0,
        "a service past the core's struct_size is not called; the status still returns");
  check(h.env("HELPER_VAR") == nullptr, "no get_env in a short table: env() is NULL");
  h.log(ACCEL_LOG_ERROR, "still logged");
  check(g_rec.logs.size() == 1, "services inside struct_size still work");

  // Present but NULL: log_enabled missing means "log everything".
  t = full_table();
  t.log_enabled = nullptr;
  t.set_error = nullptr;
  h.attach(&t);
  g_rec = Recorded();
  check(h.log_enabled(ACCEL_LOG_TRACE), "without log_enabled every level counts as enabled");
  check(h.set_error(ACCEL_ERROR_NOT_READY, "x") == ACCEL_ERROR_NOT_READY,
        "a NULL set_error is skipped");

  // Before attach: everything is a no-op.
  ap::Host empty;
  check(empty.table() == nullptr && !empty.log_enabled(ACCEL_LOG_CRITICAL) &&
            empty.env("HELPER_VAR") == nullptr &&
            empty.fail(ACCEL_ERROR_INTERNAL, "x") == ACCEL_ERROR_INTERNAL,
        "a Host before attach() reports nothing and does not crash");
  empty.log(ACCEL_LOG_CRITICAL, "nobody listens");
}

struct NotAnException {};

void test_guarded() {
  g_rec = Recorded();
  auto succeeds = [] { return ACCEL_SUCCESS; };
  static_assert(noexcept(ap::guarded("op", succeeds)), "guarded is noexcept");
  check(ap::guarded("op", [] { return ACCEL_ERROR_NOT_READY; }) == ACCEL_ERROR_NOT_READY &&
            g_rec.errors == 0,
        "guarded() passes the body's status through");
  check(ap::guarded("stream_create", []() -> accel_status_t { throw std::bad_alloc(); }) ==
                ACCEL_ERROR_OUT_OF_MEMORY &&
            g_rec.error == "stream_create: out of host memory",
        "std::bad_alloc becomes ACCEL_ERROR_OUT_OF_MEMORY");
  check(ap::guarded("event_record", []() -> accel_status_t { throw std::runtime_error("boom"); }) ==
                ACCEL_ERROR_INTERNAL &&
            g_rec.error == "event_record: unexpected exception: boom",
        "another std::exception becomes ACCEL_ERROR_INTERNAL with what()");
  check(ap::guarded("mem_free", []() -> accel_status_t { throw NotAnException(); }) ==
                ACCEL_ERROR_INTERNAL &&
            g_rec.error.find("mem_free: unexpected exception") == 0,
        "a non-standard exception becomes ACCEL_ERROR_INTERNAL");
}

enum FakeVendorCode { FAKE_OUT_OF_MEMORY = 2 };

void test_vendor_fail() {
  g_rec = Recorded();
  check(ap::vendor_fail(ACCEL_ERROR_OUT_OF_MEMORY, "cuMemAlloc", "CUDA_ERROR_OUT_OF_MEMORY",
                        FAKE_OUT_OF_MEMORY, "out of memory") == ACCEL_ERROR_OUT_OF_MEMORY,
        "vendor_fail() returns its status");
  check(g_rec.error == "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory",
        "vendor_fail(): '<call> failed: <code name> (<code>): <text>' (got '" + g_rec.error + "')");
  ap::vendor_fail(ACCEL_ERROR_BACKEND_FAILURE, "clFinish", nullptr, -36, nullptr);
  check(g_rec.error == "clFinish failed: unknown code (-36): no description",
        "vendor_fail() with no code name or text (got '" + g_rec.error + "')");
}

using CosFn = double (*)(double);
using VoidFn = void (*)();

void test_vendor_library() {
  g_rec = Recorded();
  {
    ap::VendorLibrary lib;
    g_rec.env["HELPER_LIB"] = "libm.so.6";
    check(lib.open("the test library", {"libm.so.6"}, "HELPER_LIB") ==
                  ACCEL_ERROR_BACKEND_UNAVAILABLE &&
              g_rec.error.find("HELPER_LIB='libm.so.6' is not an absolute path; refused") == 0 &&
              lib.handle() == nullptr,
          "a relative override is refused, saying why (got '" + g_rec.error + "')");
    g_rec.env["HELPER_LIB"] = "/nonexistent/libnothing.so";
    check(lib.open("the test library", {"libm.so.6"}, "HELPER_LIB") ==
                  ACCEL_ERROR_BACKEND_UNAVAILABLE &&
              g_rec.error.find("cannot load the test library '/nonexistent/libnothing.so' "
                               "named by HELPER_LIB: ") == 0,
          "an absolute override that does not load is UNAVAILABLE with dlerror");
    g_rec.env.clear();
    check(lib.open("the test library", {"libaccel-none-1.so", "libaccel-none-2.so"},
                   "HELPER_LIB") == ACCEL_ERROR_BACKEND_UNAVAILABLE &&
              g_rec.error.find("cannot load the test library: tried libaccel-none-1.so, "
                               "libaccel-none-2.so (last dlopen error: ") == 0 &&
              g_rec.error.find("set HELPER_LIB") != std::string::npos,
          "no candidate loads: every name tried is listed (got '" + g_rec.error + "')");
    ap::Symbol nothing[] = {ap::symbol("cos", static_cast<CosFn*>(nullptr))};
    check(lib.resolve(nothing) == ACCEL_ERROR_INVALID_ARGUMENT, "resolve() before open()");
  }
  {
    ap::VendorLibrary lib;
    check(
        lib.open("the math library", {"libaccel-none.so", "libm.so.6"}, nullptr) == ACCEL_SUCCESS &&
            lib.handle() != nullptr && std::strcmp(lib.path(), "libm.so.6") == 0,
        "the first name that loads is used");
    CosFn cos_fn = nullptr;
    VoidFn optional_fn = reinterpret_cast<VoidFn>(&test_vendor_library);
    const ap::Symbol symbols[] = {ap::symbol("cos", &cos_fn),
                                  ap::symbol("accel_no_such_symbol", &optional_fn, false)};
    check(lib.resolve(symbols) == ACCEL_SUCCESS && cos_fn != nullptr && cos_fn(0.0) == 1.0 &&
              optional_fn == nullptr,
          "resolve() fills typed slots; an absent optional symbol is NULL");
    VoidFn missing = nullptr;
    const ap::Symbol required[] = {ap::symbol("cos", &cos_fn),
                                   ap::symbol("accel_no_such_symbol", &missing)};
    check(lib.resolve(required) == ACCEL_ERROR_BACKEND_UNAVAILABLE &&
              g_rec.error == "missing symbol accel_no_such_symbol in libm.so.6",
          "a missing required symbol is UNAVAILABLE: 'missing symbol X in <path>' (got '" +
              g_rec.error + "')");
    const ap::Symbol two[] = {ap::symbol("accel_none_a", &missing),
                              ap::symbol("accel_none_b", &missing)};
    check(lib.resolve(two) == ACCEL_ERROR_BACKEND_UNAVAILABLE &&
              g_rec.error == "missing symbols accel_none_a, accel_none_b in libm.so.6",
          "several missing symbols are listed together (got '" + g_rec.error + "')");
  }
}

void test_holds() {
  accel_device_properties_t props;
  std::memset(&props, 0, sizeof props);
  props.struct_size = offsetof(accel_device_properties_t, vendor);
  check(ACCEL_PLUGIN_HOLDS(&props, name) && !ACCEL_PLUGIN_HOLDS(&props, vendor),
        "ACCEL_PLUGIN_HOLDS follows the caller's struct_size");
  props.struct_size = sizeof props;
  accel_device_properties_t* p = &props;
  check(ACCEL_PLUGIN_HOLDS(p, device_index), "ACCEL_PLUGIN_HOLDS on a full struct");
}

}  // namespace

// The overflow-checked size arithmetic (docs/security.md, "Sizes"): exact
// results are stored, results that do not fit are refused with *out unchanged.
void test_checked_sizes() {
  using accel::plugin::checked_add;
  using accel::plugin::checked_mul;
  using accel::plugin::checked_round_up;
  size_t out = 7;
  check(checked_add<size_t>(1024, 16, &out) && out == 1040, "checked_add 1024 + 16");
  out = 7;
  check(!checked_add<size_t>(1024, SIZE_MAX - 8, &out) && out == 7,
        "checked_add 1024 + SIZE_MAX - 8 is refused, out unchanged");
  check(!checked_add<size_t>(SIZE_MAX, 1, &out) && out == 7, "checked_add SIZE_MAX + 1");
  check(checked_add<size_t>(SIZE_MAX - 1, 1, &out) && out == SIZE_MAX, "checked_add to SIZE_MAX");
  uint64_t bytes = 7;
  const uint64_t two_63 = uint64_t{1} << 63;
  check(checked_mul<uint64_t>(uint64_t{1} << 43, uint64_t{1} << 20, &bytes) && bytes == two_63,
        "checked_mul 2^43 MiB");
  bytes = 7;
  check(!checked_mul<uint64_t>(uint64_t{1} << 44, uint64_t{1} << 20, &bytes) && bytes == 7,
        "checked_mul 2^44 MiB is refused");
  check(checked_round_up<size_t>(1, 256, &out) && out == 256, "checked_round_up 1 to 256");
  check(checked_round_up<size_t>(512, 256, &out) && out == 512, "checked_round_up 512 to 256");
  check(checked_round_up<size_t>(SIZE_MAX - 255, 256, &out) && out == SIZE_MAX - 255,
        "checked_round_up of the largest multiple of 256");
  out = 7;
  check(!checked_round_up<size_t>(SIZE_MAX, 256, &out) && out == 7,
        "checked_round_up SIZE_MAX to 256 is refused");
  check(!checked_round_up<size_t>(SIZE_MAX - 254, 256, &out) && out == 7,
        "checked_round_up SIZE_MAX - 254 to 256 is refused");
}

int main() {
  accel_host_services_t table = full_table();
  test_entry(&table);
  test_host_full();
  test_host_short_tables();
  test_guarded();
  test_vendor_fail();
  test_vendor_library();
  test_holds();
  test_checked_sizes();
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
