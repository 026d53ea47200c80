// The value a C caller passed for an enum parameter, read without an enum
// load. C lets a program pass any int where accel.h takes an enum (an
// unknown status, a newer header's attribute); C++ gives an enum without a
// fixed underlying type only the values of its enumerators' bit range, so
// reading such an argument as the enum is undefined (UBSan's -fsanitize=enum
// reports it). Its bytes, copied into the underlying type, are defined.
#pragma once

#include <cstring>
#include <type_traits>

namespace accel::core {

template <typename E>
auto enum_value(const E& e) noexcept {
  static_assert(std::is_enum_v<E>);
  std::underlying_type_t<E> v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

}  // namespace accel::core
