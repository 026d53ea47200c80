// ACCEL_ALLOC_CONF: parse_config accepts PYTORCH_CUDA_ALLOC_CONF's syntax for
// the four keys accel.h documents, refuses anything else whole (naming the
// key) without touching the Config, and describe() writes what parses back.
#include <cmath>
#include <string>
#include <vector>

#include "test_util.hpp"

using namespace accel_alloc_test;
using accel::alloc::describe;
using accel::alloc::parse_config;

namespace {

bool same(const Config& a, const Config& b) {
  return a.caching == b.caching && a.max_split_size == b.max_split_size &&
         a.garbage_collection_threshold == b.garbage_collection_threshold &&
         a.roundup_power2_divisions == b.roundup_power2_divisions;
}

std::string show(const Config& c) {
  return "{caching " + std::to_string(c.caching) + ", max_split_size " +
         std::to_string(c.max_split_size) + ", threshold " +
         std::to_string(c.garbage_collection_threshold) + ", divisions " +
         std::to_string(c.roundup_power2_divisions) + "}";
}

Config parsed(const std::string& text) {
  Config c;
  std::string error;
  INFO("parse_config(\"" << text << "\"): " << error);
  bool ok = parse_config(text, c, error);
  INFO("error: " << error);
  REQUIRE(ok);
  return c;
}

}  // namespace

TEST_CASE("parse_config accepts every key", "[alloc][config]") {
  CHECK(same(parsed(""), Config{}));
  CHECK(parsed("backend:caching").caching);
  CHECK_FALSE(parsed("backend:native").caching);
  CHECK(parsed("max_split_size_mb:21").max_split_size == 21 * kMiB);
  CHECK(parsed("max_split_size_mb:1024").max_split_size == kGiB);
  // The largest: its bytes are at most PTRDIFF_MAX.
  CHECK(parsed("max_split_size_mb:8796093022207").max_split_size ==
        (static_cast<size_t>(PTRDIFF_MAX) >> 20) << 20);
  CHECK(parsed("garbage_collection_threshold:0.6").garbage_collection_threshold == 0.6);
  CHECK(parsed("garbage_collection_threshold:0.01").garbage_collection_threshold == 0.01);
  // 0 is off, the default, and what describe() writes for it.
  CHECK(parsed("garbage_collection_threshold:0").garbage_collection_threshold == 0.0);
  for (size_t d : {1, 2, 4, 8, 16}) {
    INFO(d);
    CHECK(parsed("roundup_power2_divisions:" + std::to_string(d)).roundup_power2_divisions == d);
  }
  Config all = parsed(
      "backend:caching,max_split_size_mb:100,garbage_collection_threshold:0.5,"
      "roundup_power2_divisions:8");
  CHECK(all.caching);
  CHECK(all.max_split_size == 100 * kMiB);
  CHECK(all.garbage_collection_threshold == 0.5);
  CHECK(all.roundup_power2_divisions == 8);
  // Keys in any order; a key not given keeps its default.
  Config some = parsed("roundup_power2_divisions:4,backend:native");
  CHECK_FALSE(some.caching);
  CHECK(some.roundup_power2_divisions == 4);
  CHECK(some.max_split_size == SIZE_MAX);
  CHECK(some.garbage_collection_threshold == 0.0);
}

TEST_CASE("parse_config refuses invalid settings whole", "[alloc][config]") {
  struct Bad {
    const char* text;
    const char* key;    // the message names it ("" when there is none)
    const char* value;  // and this ("" when not checked)
  };
  const Bad bad[] = {
      {"foo:1", "foo", ""},
      {"expandable_segments:True", "expandable_segments", ""},
      {"max_split_size_mb:abc", "max_split_size_mb", "abc"},
      {"max_split_size_mb:", "max_split_size_mb", ""},
      {"max_split_size_mb:20", "max_split_size_mb", "20"},
      {"max_split_size_mb:0", "max_split_size_mb", ""},
      {"max_split_size_mb:-30", "max_split_size_mb", "-30"},
      {"max_split_size_mb:21x", "max_split_size_mb", "21x"},
      {"max_split_size_mb:18446744073709551616", "max_split_size_mb", ""},
      // MiB whose bytes do not fit: the multiply wraps (2^44 MiB) or the
      // bytes exceed PTRDIFF_MAX and the int64 statistic (2^44 - 1 read as
      // -1048576 bytes before the check).
      {"max_split_size_mb:17592186044416", "max_split_size_mb", "17592186044416"},
      {"max_split_size_mb:17592186044415", "max_split_size_mb", "17592186044415"},
      {"max_split_size_mb:8796093022208", "max_split_size_mb", "8796093022208"},
      {"garbage_collection_threshold:1", "garbage_collection_threshold", ""},
      {"garbage_collection_threshold:1.5", "garbage_collection_threshold", "1.5"},
      {"garbage_collection_threshold:-0.5", "garbage_collection_threshold", "-0.5"},
      {"garbage_collection_threshold:abc", "garbage_collection_threshold", "abc"},
      {"garbage_collection_threshold:nan", "garbage_collection_threshold", ""},
      {"roundup_power2_divisions:0", "roundup_power2_divisions", ""},
      {"roundup_power2_divisions:3", "roundup_power2_divisions", "3"},
      {"roundup_power2_divisions:6", "roundup_power2_divisions", "6"},
      {"roundup_power2_divisions:x", "roundup_power2_divisions", "x"},
      {"roundup_power2_divisions:-2", "roundup_power2_divisions", ""},
      {"backend:other", "backend", "other"},
      {"backend", "backend", ""},
      {"backend:", "backend", ""},
      {":caching", "", ""},
      {"backend:caching:native", "backend", ""},
      {"max_split_size_mb 100", "max_split_size_mb", ""},
      {"backend:caching,foo", "foo", ""},
      // One good pair does not let the bad one through.
      {"max_split_size_mb:100,foo:1", "foo", ""},
      {"backend:native,roundup_power2_divisions:5", "roundup_power2_divisions", "5"},
  };
  // A Config that differs from the defaults everywhere, to see that nothing
  // of it changes.
  Config start;
  start.caching = false;
  start.max_split_size = 50 * kMiB;
  start.garbage_collection_threshold = 0.3;
  start.roundup_power2_divisions = 2;
  for (const Bad& b : bad) {
    Config c = start;
    std::string error;
    bool ok = parse_config(b.text, c, error);
    INFO("parse_config(\"" << b.text << "\") -> " << ok << ", error \"" << error << "\", config "
                           << show(c));
    CHECK_FALSE(ok);
    CHECK_FALSE(error.empty());
    if (*b.key) CHECK(error.find(b.key) != std::string::npos);
    if (*b.value) CHECK(error.find(b.value) != std::string::npos);
    CHECK(same(c, start));
  }
}

TEST_CASE("describe writes what parse_config reads back", "[alloc][config]") {
  // Every key away from its default.
  std::vector<Config> configs;
  Config c;
  c.max_split_size = 21 * kMiB;
  c.garbage_collection_threshold = 0.8;
  c.roundup_power2_divisions = 4;
  configs.push_back(c);
  c.caching = false;
  configs.push_back(c);
  c.caching = true;
  c.max_split_size = kGiB;
  c.garbage_collection_threshold = 1.0 / 3.0;
  c.roundup_power2_divisions = 16;
  configs.push_back(c);
  c.garbage_collection_threshold = 0.123456789;
  configs.push_back(c);
  for (const Config& config : configs) {
    std::string text = describe(config);
    INFO(show(config) << " -> \"" << text << "\"");
    Config back;
    back.caching = !config.caching;  // a different start: everything must be set
    std::string error;
    bool ok = parse_config(text, back, error);
    INFO("error: " << error);
    REQUIRE(ok);
    CHECK(same(back, config));
    CHECK(text.rfind(config.caching ? "backend:caching" : "backend:native", 0) == 0);
  }
}

TEST_CASE("describe of default values reads back", "[alloc][config]") {
  // describe writes the defaults as "max_split_size_mb:unlimited" and
  // "garbage_collection_threshold:0" (docs/memory.md's snapshot); a snapshot's
  // "config" should be a valid ACCEL_ALLOC_CONF that reproduces the setting.
  std::vector<Config> configs;
  configs.push_back(Config{});
  Config c;
  c.garbage_collection_threshold = 0.5;  // max_split_size unlimited
  configs.push_back(c);
  c = Config{};
  c.max_split_size = 64 * kMiB;  // garbage collection off
  configs.push_back(c);
  for (const Config& config : configs) {
    std::string text = describe(config);
    INFO(show(config) << " -> \"" << text << "\"");
    Config back;
    back.caching = false;
    back.max_split_size = 30 * kMiB;
    back.garbage_collection_threshold = 0.25;
    back.roundup_power2_divisions = 8;
    std::string error;
    bool ok = parse_config(text, back, error);
    INFO("error: " << error);
    CHECK(ok);
    if (ok) CHECK(same(back, config));
  }
}

TEST_CASE("describe of the defaults", "[alloc][config]") {
  std::string text = describe(Config{});
  INFO(text);
  CHECK(text.rfind("backend:caching", 0) == 0);
  CHECK(text.find("max_split_size_mb:unlimited") != std::string::npos);
  CHECK(text.find("roundup_power2_divisions:1") != std::string::npos);
}
