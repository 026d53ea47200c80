#include "config.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace accel::alloc {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_unsigned(std::string_view v, uint64_t& out) {
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && end == v.data() + v.size() && !v.empty();
}

bool parse_fraction(std::string_view v, double& out) {
  // std::from_chars for double is in libstdc++ 11+; Debian 12 has 12.
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && end == v.data() + v.size() && !v.empty() && std::isfinite(out);
}

}  // namespace

bool parse_config(std::string_view text, Config& out, std::string& error) {
  Config c = out;
  c = Config{};  // unset keys take their defaults, whatever `out` held
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;  // "a:1,,b:2" and a trailing comma are harmless
    size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      error = fmt::format("'{}' is not key:value", item);
      return false;
    }
    std::string_view key = trim(item.substr(0, colon));
    std::string_view value = trim(item.substr(colon + 1));
    uint64_t n = 0;
    if (key == "backend") {
      if (value == "caching" || value == "native") {
        c.caching = value == "caching";
      } else {
        error = fmt::format("backend:{} is not caching or native", value);
        return false;
      }
    } else if (key == "max_split_size_mb") {
      // PyTorch's floor: a split limit at or below a large segment would
      // leave the large pool unable to split its own 20 MiB segments.
      if (value == "unlimited") {  // what describe() writes for the default
        c.max_split_size = SIZE_MAX;
        continue;
      }
      // The MiB -> bytes multiply is checked, and the bytes must fit the
      // int64 max_split_size statistic (where -1 means unlimited): no
      // larger split limit is meaningful for an allocation (PTRDIFF_MAX).
      uint64_t bytes = 0;
      if (!parse_unsigned(value, n) || n <= kMaxSplitFloorMb ||
          __builtin_mul_overflow(n, uint64_t{1} << 20, &bytes) ||
          bytes > static_cast<uint64_t>(PTRDIFF_MAX)) {
        error = fmt::format("max_split_size_mb:{} is not a whole number of MiB from {} to {}",
                            value, kMaxSplitFloorMb + 1, kMaxSplitSizeMb);
        return false;
      }
      c.max_split_size = static_cast<size_t>(bytes);
    } else if (key == "garbage_collection_threshold") {
      double f = 0;
      // 0 is "off", the default (what describe() writes when it is off).
      if (!parse_fraction(value, f) || f < 0.0 || f >= 1.0) {
        error = fmt::format(
            "garbage_collection_threshold:{} is not a fraction from 0 (off) to below 1", value);
        return false;
      }
      c.garbage_collection_threshold = f;
    } else if (key == "roundup_power2_divisions") {
      if (!parse_unsigned(value, n) || n == 0 || (n & (n - 1)) != 0 || n > 1024) {
        error =
            fmt::format("roundup_power2_divisions:{} is not a power of two from 1 to 1024", value);
        return false;
      }
      c.roundup_power2_divisions = static_cast<size_t>(n);
    } else {
      error = fmt::format(
          "unknown key '{}' (known: backend, max_split_size_mb, garbage_collection_threshold, "
          "roundup_power2_divisions)",
          key);
      return false;
    }
  }
  out = c;
  return true;
}

std::string describe(const Config& c) {
  return fmt::format(
      "backend:{},max_split_size_mb:{},garbage_collection_threshold:{},roundup_power2_divisions:{}",
      c.caching ? "caching" : "native",
      c.max_split_size == SIZE_MAX ? std::string("unlimited")
                                   : std::to_string(c.max_split_size >> 20),
      c.garbage_collection_threshold, c.roundup_power2_divisions);
}

}  // namespace accel::alloc
