// What the allocator's unit tests share: an allocator over a CountingOps,
// shorthands that fail the test on an unexpected status, and the checks run
// after each step.
#pragma once

#include <catch2/catch.hpp>

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "counting_ops.hpp"
#include "device_allocator.hpp"
#include "stats.hpp"

namespace accel_alloc_test {

using accel::alloc::BlockInfo;
using accel::alloc::Config;
using accel::alloc::DeviceAllocator;
using accel::alloc::Lookup;
using accel::alloc::Stats;

inline constexpr size_t kGiB = size_t{1} << 30;

inline const char* lookup_name(Lookup l) {
  switch (l) {
    case Lookup::kFound:
      return "kFound";
    case Lookup::kInside:
      return "kInside";
    case Lookup::kMissing:
      return "kMissing";
    case Lookup::kStreamDead:
      return "kStreamDead";
  }
  return "?";
}

// The fake first: the allocator may still call it from its destructor.
struct Fixture {
  CountingOps ops;
  std::unique_ptr<DeviceAllocator> owner;
  DeviceAllocator& alloc;

  explicit Fixture(size_t capacity = 4 * kGiB, const Config& config = Config{})
      : ops(capacity), owner(std::make_unique<DeviceAllocator>(ops, config)), alloc(*owner) {}

  // Destroys the allocator (alloc is gone afterwards). It may keep spare
  // markers while it lives, but none may outlive it.
  void close() {
    owner.reset();
    CHECK(ops.live_events() == 0);
    CHECK(ops.events_created() == ops.events_destroyed());
    CHECK(ops.problems() == "");
  }

  // A block of `bytes` on `stream`; the test fails unless it succeeds.
  void* get(size_t bytes, StreamKey stream) {
    void* p = nullptr;
    std::string error;
    accel_status_t s = alloc.allocate(bytes, stream, nullptr, &p, error);
    INFO("allocate(" << bytes << ") on stream " << stream << ": " << error);
    REQUIRE(s == ACCEL_SUCCESS);
    REQUIRE(p != nullptr);
    // The vendor's alignment survives: every block size is a multiple of 512.
    CHECK(reinterpret_cast<uintptr_t>(p) % 512 == 0);
    CHECK(ops.segment_of(p, bytes) != 0);
    return p;
  }

  // Frees a live block; the test fails unless it was one.
  void put(void* p, StreamKey stream = nullptr) {
    Lookup l = alloc.free(p, stream, nullptr);
    INFO("free(" << p << ")");
    REQUIRE(std::string(lookup_name(l)) == "kFound");
  }

  BlockInfo info(const void* p) {
    BlockInfo b;
    INFO("find(" << p << ")");
    REQUIRE(alloc.find(p, b));
    return b;
  }

  // The allocator's own invariants and the fake's list of misuses.
  void check() {
    CHECK(alloc.check_invariants() == "");
    CHECK(ops.problems() == "");
  }
};

inline std::string fmt_bytes_pytorch(size_t bytes) {
  // PyTorch's format_size: "N bytes", else two decimals of KiB, MiB or GiB.
  char buf[64];
  if (bytes <= 1024) {
    std::snprintf(buf, sizeof buf, "%zu bytes", bytes);
  } else if (bytes <= 1048576) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", bytes / 1024.0);
  } else if (bytes <= 1073741824) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / 1048576.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / 1073741824.0);
  }
  return buf;
}

// Whether `text` states the byte count `bytes` in one of the usual ways: the
// decimal count, PyTorch's format_size, or a whole number of KiB/MiB/GiB (with
// or without decimals). The tests choose sizes whose renderings cannot be
// confused with one another.
inline bool mentions_size(const std::string& text, size_t bytes) {
  std::vector<std::string> forms{std::to_string(bytes) + " ", std::to_string(bytes) + ")",
                                 std::to_string(bytes) + ",", std::to_string(bytes) + ";",
                                 fmt_bytes_pytorch(bytes)};
  std::string digits = std::to_string(bytes);
  if (text.size() > digits.size() &&
      text.compare(text.size() - digits.size(), std::string::npos, digits) == 0 &&
      !std::isdigit(static_cast<unsigned char>(text[text.size() - digits.size() - 1]))) {
    return true;
  }
  const std::pair<size_t, const char*> units[] = {{kGiB, "GiB"}, {kMiB, "MiB"}, {kKiB, "KiB"}};
  for (auto [unit, name] : units) {
    if (bytes % unit == 0) {
      std::string n = std::to_string(bytes / unit);
      forms.push_back(n + " " + name);
      forms.push_back(n + name);
      forms.push_back(n + ".0 " + name);
      forms.push_back(n + ".00 " + name);
    }
  }
  // A match must not continue a longer number ("22 MiB" inside "122 MiB").
  for (const auto& f : forms) {
    for (size_t at = text.find(f); at != std::string::npos; at = text.find(f, at + 1)) {
      char before = at == 0 ? ' ' : text[at - 1];
      if (!std::isdigit(static_cast<unsigned char>(before)) && before != '.') return true;
    }
  }
  return false;
}

// Every Stat of a Stats with its name, for checks over all of them.
inline std::vector<std::pair<std::string, const accel::alloc::Stat*>> all_stats(const Stats& s) {
  std::vector<std::pair<std::string, const accel::alloc::Stat*>> out;
  const std::pair<const char*, const accel::alloc::StatArray*> arrays[] = {
      {"allocation", &s.allocation},
      {"segment", &s.segment},
      {"active", &s.active},
      {"inactive_split", &s.inactive_split},
      {"allocated_bytes", &s.allocated_bytes},
      {"reserved_bytes", &s.reserved_bytes},
      {"active_bytes", &s.active_bytes},
      {"inactive_split_bytes", &s.inactive_split_bytes},
      {"requested_bytes", &s.requested_bytes}};
  const char* pools[] = {"all", "small_pool", "large_pool"};
  for (auto [name, array] : arrays) {
    for (size_t p = 0; p < accel::alloc::kPoolKinds; ++p) {
      out.emplace_back(std::string(name) + "." + pools[p], &(*array)[p]);
    }
  }
  out.emplace_back("oversize_allocations", &s.oversize_allocations);
  out.emplace_back("oversize_segments", &s.oversize_segments);
  return out;
}

}  // namespace accel_alloc_test
