// Status names and messages: every accel_status_t value has a
// distinct, non-empty name equal to its enumerator in accel.h and a
// non-empty message; unknown values get ACCEL_STATUS_UNKNOWN. The list of
// values is read from the header itself (ACCEL_HEADER), so a status added
// there without a name here fails.
#include <catch2/catch.hpp>

#include <accel/accel.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace {

// name -> value of every entry XX(NAME, VALUE, "message") of the header's
// ACCEL_STATUS_MAP, the list the enum is generated from.
std::map<std::string, long> header_statuses(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  std::map<std::string, long> out;
  auto begin = text.find("#define ACCEL_STATUS_MAP(XX)");
  if (begin == std::string::npos) return out;
  auto end = text.find("\n\n", begin);
  if (end == std::string::npos) return out;
  std::string body = text.substr(begin, end - begin);
  size_t pos = body.find("XX(", body.find(')'));
  for (; pos != std::string::npos; pos = body.find("XX(", pos)) {
    pos += 3;
    size_t comma = body.find(',', pos);
    if (comma == std::string::npos) break;
    const char* num = body.c_str() + comma + 1;
    char* num_end = nullptr;
    long value = std::strtol(num, &num_end, 10);
    if (num_end == num) continue;
    out["ACCEL_" + body.substr(pos, comma - pos)] = value;
  }
  return out;
}

}  // namespace

TEST_CASE("every status has a distinct name and a message", "[status]") {
  std::set<std::string> names, messages;
  for (int i = 0; i < ACCEL_STATUS_COUNT; ++i) {
    auto st = static_cast<accel_status_t>(i);
    const char* name = accel_status_name(st);
    const char* message = accel_status_message(st);
    INFO("status " << i);
    REQUIRE(name != nullptr);
    REQUIRE(message != nullptr);
    CHECK(std::string(name).rfind("ACCEL_", 0) == 0);
    CHECK(std::string(name) != "ACCEL_STATUS_UNKNOWN");
    CHECK(std::string(message) != "");
    CHECK(std::string(message) != "unknown status");
    CHECK(names.insert(name).second);
    CHECK(messages.insert(message).second);
  }
}

TEST_CASE("unknown statuses have a sensible name", "[status]") {
  // Values within the enum's range only: forming -1 as accel_status_t is
  // undefined in C++ (tests/c_api/c_api_test.c passes it from C).
  for (long v : {static_cast<long>(ACCEL_STATUS_COUNT), 100L,
                 static_cast<long>(ACCEL_STATUS_FORCE_INT32)}) {
    auto st = static_cast<accel_status_t>(v);
    INFO("value " << v);
    REQUIRE(accel_status_name(st) != nullptr);
    CHECK(std::string(accel_status_name(st)) == "ACCEL_STATUS_UNKNOWN");
    CHECK(std::string(accel_status_message(st)) == "unknown status");
  }
}

TEST_CASE("names match ACCEL_STATUS_MAP of accel.h", "[status]") {
  const char* path = std::getenv("ACCEL_HEADER");
  REQUIRE(path != nullptr);
  auto statuses = header_statuses(path);
  INFO("header " << path);
  REQUIRE(!statuses.empty());
  // Values are dense from 0 and ACCEL_STATUS_COUNT counts them.
  CHECK(statuses.size() == static_cast<size_t>(ACCEL_STATUS_COUNT));
  for (const auto& [name, value] : statuses) {
    INFO(name << " = " << value);
    CHECK(value >= 0);
    CHECK(value < ACCEL_STATUS_COUNT);
    CHECK(accel_status_name(static_cast<accel_status_t>(value)) == name);
  }
  // A few by enumerator, so the header parse itself is checked.
#define ACCEL_TEST_NAME(x) CHECK(accel_status_name(x) == std::string(#x))
  ACCEL_TEST_NAME(ACCEL_SUCCESS);
  ACCEL_TEST_NAME(ACCEL_ERROR_INVALID_ARGUMENT);
  ACCEL_TEST_NAME(ACCEL_ERROR_FORKED);
  ACCEL_TEST_NAME(ACCEL_ERROR_INTERNAL);
  ACCEL_TEST_NAME(ACCEL_ERROR_REENTRANT);
#undef ACCEL_TEST_NAME
  CHECK(statuses.count("ACCEL_SUCCESS") == 1);
  CHECK(statuses.count("ACCEL_ERROR_INTERNAL") == 1);
  // The map as the compiler expands it: each enumerator has its value, its
  // name and its message.
#define ACCEL_TEST_ENTRY(name, value, message)                           \
  CHECK(static_cast<long>(ACCEL_##name) == (value));                     \
  CHECK(std::string(accel_status_name(ACCEL_##name)) == "ACCEL_" #name); \
  CHECK(std::string(accel_status_message(ACCEL_##name)) == (message));
  ACCEL_STATUS_MAP(ACCEL_TEST_ENTRY)
#undef ACCEL_TEST_ENTRY
}
