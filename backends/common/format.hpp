// printf-style formatting into std::string for the vendor backends, whose
// messages quote vendor codes and C strings (one copy instead of one per
// backend).
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <string>

namespace accel_backend {

inline std::string vformat(const char* fmt, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  char small[512];
  int n = std::vsnprintf(small, sizeof small, fmt, copy);
  va_end(copy);
  if (n < 0) return fmt;
  if (static_cast<size_t>(n) < sizeof small) return std::string(small, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), fmt, ap);
  out.resize(static_cast<size_t>(n));
  return out;
}

__attribute__((format(printf, 1, 2))) inline std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  return s;
}

}  // namespace accel_backend
