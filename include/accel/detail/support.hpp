/*
 * accel/detail/support.hpp - the helpers and type traits behind accel.hpp.
 *
 * Not a public interface: accel.hpp includes it before its wrappers, which
 * call these helpers; nothing here is meant to be named by a program, and
 * names may change in any release. One namespace, accel::detail:
 *  - errors: the process-wide error handler, report() and report_status()
 *    for failures a destructor or a backend thread cannot throw, check()
 *    (defined in detail/definitions.hpp, once accel::Error is complete);
 *  - C spellings: c_device() (an optional device as the C int32_t),
 *    native_allocator(), stats_by_name();
 *  - host_trampoline<Fn>: the C host function that runs a C++ callable;
 *  - the traits that decide which ranges HostSpan<T> views;
 *  - kernel_arg(): the accel_kernel_arg_t of one Kernel::launch argument,
 *    kernel_arg_type<T>: its accel_kernel_arg_type_t, typed_arg<P>(): one
 *    TypedKernel::launch argument converted to its parameter's type.
 */
#ifndef ACCEL_DETAIL_SUPPORT_HPP
#define ACCEL_DETAIL_SUPPORT_HPP

#include <accel/accel.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#endif

namespace accel {

class Error;
struct LocalMemory;
template <class T>
class HostSpan;
template <class T>
class DeviceBuffer;

namespace detail {

/* ------------------------------------------------------------------------ */
/* Errors                                                                     */
/* ------------------------------------------------------------------------ */

/* accel::ErrorHandler's type: receives what cannot be thrown. */
using error_handler_fn = void (*)(const char* context, const char* message) noexcept;

inline void default_error_handler(const char* context, const char* message) noexcept {
  std::fprintf(stderr, "accel: %s: %s\n", context, message);
}

inline std::atomic<error_handler_fn>& error_handler_slot() noexcept {
  static std::atomic<error_handler_fn> slot{&default_error_handler};
  return slot;
}

inline void report(const char* context, const char* message) noexcept {
  error_handler_slot().load(std::memory_order_acquire)(context, message);
}

/* Reports a failed C call from a destructor. */
inline void report_status(const char* context, accel_status_t st) noexcept {
  if (st == ACCEL_SUCCESS) return;
  try {
    std::string msg = accel_status_name(st);
    msg += ": ";
    msg += accel_last_error();
    report(context, msg.c_str());
  } catch (...) {
    report(context, accel_status_name(st));
  }
}

/* Throws accel::Error for any status but ACCEL_SUCCESS, with the calling
 * thread's accel_last_error() detail. Defined in detail/definitions.hpp. */
inline void check(accel_status_t st, const char* operation);

/* ------------------------------------------------------------------------ */
/* C spellings                                                                */
/* ------------------------------------------------------------------------ */

/* The C spelling of an optional device: empty is -1, "the current device". */
constexpr int32_t c_device(std::optional<int> device) noexcept {
  return device.has_value() ? static_cast<int32_t>(*device) : -1;
}

/* True under ACCEL_ALLOC_CONF=backend:native, where accel_record_stream is a
 * no-op and frees are vendor frees (accel_get_allocator_backend). */
inline bool native_allocator() noexcept {
  const char* name = accel_get_allocator_backend();
  return name != nullptr && std::string_view(name) == "native";
}

/* The first `written` entries of a statistics list (accel_memory_stats_list,
 * accel_host_memory_stats_list) by name; unnamed entries are skipped. */
inline std::map<std::string, std::int64_t> stats_by_name(
    const std::vector<accel_memory_stat_t>& list, std::size_t written) {
  std::map<std::string, std::int64_t> out;
  for (std::size_t i = 0; i < written && i < list.size(); ++i)
    if (list[i].name != nullptr) out.emplace(list[i].name, list[i].value);
  return out;
}

/* ------------------------------------------------------------------------ */
/* Host functions                                                             */
/* ------------------------------------------------------------------------ */

/* Runs the heap-allocated callable once, deletes it, and keeps exceptions
 * from reaching the backend's thread (they go to the error handler). */
template <class Fn>
void host_trampoline(void* user_data) noexcept {
  std::unique_ptr<Fn> fn(static_cast<Fn*>(user_data));
  try {
    (*fn)();
  } catch (const std::exception& e) {
    report("host function threw", e.what());
  } catch (...) {
    report("host function threw", "an exception not derived from std::exception");
  }
}

/* ------------------------------------------------------------------------ */
/* HostSpan's ranges                                                          */
/* ------------------------------------------------------------------------ */

template <class T>
using remove_cvref_t = std::remove_cv_t<std::remove_reference_t<T>>;

/* Types whose data() is device memory: never a host range. */
template <class C>
struct is_device_buffer : std::false_type {};
template <class T>
struct is_device_buffer<DeviceBuffer<T>> : std::true_type {};

/* Views: a temporary of one still refers to memory that outlives it, so it
 * may be written through (std::span's borrowed ranges). */
template <class C>
struct is_host_view : std::false_type {};
template <class T>
struct is_host_view<HostSpan<T>> : std::true_type {};
#ifdef __cpp_lib_span
template <class T, std::size_t Extent>
struct is_host_view<std::span<T, Extent>> : std::true_type {};
#endif

/* Whether P, the type of std::data() of a range, points to elements a
 * HostSpan<T> may view: T itself up to added const (no derived-to-base, no
 * conversions of values). */
template <class P, class T>
struct is_element_pointer_for : std::false_type {};
template <class U, class T>
struct is_element_pointer_for<U*, T> : std::is_convertible<U (*)[], T (*)[]> {};

/* Whether HostSpan<T> can view a C (a forwarding reference's type: an
 * lvalue reference for an lvalue): a contiguous range (std::data and
 * std::size work on it) of suitable elements, not device memory, not
 * HostSpan<T> itself (its copy constructor does that), and, for writable T,
 * not a temporary container. */
template <class T, class C, class = void>
struct is_host_range_for : std::false_type {};
template <class T, class C>
struct is_host_range_for<
    T, C,
    std::void_t<decltype(std::data(std::declval<std::remove_reference_t<C>&>())),
                decltype(std::size(std::declval<std::remove_reference_t<C>&>()))>>
    : std::bool_constant<
          is_element_pointer_for<decltype(std::data(std::declval<std::remove_reference_t<C>&>())),
                                 T>::value &&
          !is_device_buffer<remove_cvref_t<C>>::value &&
          !std::is_same_v<remove_cvref_t<C>, HostSpan<T>> &&
          (std::is_lvalue_reference_v<C> || std::is_const_v<T> ||
           is_host_view<remove_cvref_t<C>>::value)> {};

/* The element type of a range or a pointer C (void when it is neither). */
template <class C, class = void>
struct host_element {
  using type = void;
};
template <class C>
struct host_element<C, std::enable_if_t<std::is_pointer_v<remove_cvref_t<C>>>> {
  using type = std::remove_pointer_t<remove_cvref_t<C>>;
};
template <class C>
struct host_element<C,
                    std::void_t<decltype(std::data(std::declval<std::remove_reference_t<C>&>()))>> {
  using type =
      std::remove_pointer_t<decltype(std::data(std::declval<std::remove_reference_t<C>&>()))>;
};

/* Whether the first of Rest (a copy's arguments after the host side) is an
 * element count. */
template <class... Rest>
struct first_is_count : std::false_type {};
template <class R0, class... Rest>
struct first_is_count<R0, Rest...> : std::is_integral<remove_cvref_t<R0>> {};

/* Whether a DeviceBuffer copy's host argument C (a forwarding reference's
 * type), followed by arguments Rest, is one no overload takes: not a
 * HostSpan<T>, not device memory, and not a pointer to T followed by its
 * count. DeviceBuffer's catch-all overloads turn it into the static_assert
 * of refuse_host_arg instead of "no known conversion". */
template <class T, class C, class... Rest>
struct is_refused_host_arg
    : std::bool_constant<!std::is_convertible_v<C, HostSpan<T>> &&
                         !is_device_buffer<remove_cvref_t<C>>::value &&
                         !(std::is_convertible_v<C, T*> && first_is_count<Rest...>::value)> {};

/* The compile-time error for a refused host argument C of a copy whose host
 * side is HostSpan<T>, saying what to pass instead. */
template <class T, class C>
void refuse_host_arg() {
  using E = typename host_element<C>::type;
  constexpr bool is_pointer = std::is_pointer_v<remove_cvref_t<C>>;
  constexpr bool same_element = std::is_same_v<std::remove_cv_t<E>, std::remove_cv_t<T>>;
  constexpr bool source = std::is_const_v<T>;
  constexpr bool element_ok = std::is_void_v<E> || same_element;
  constexpr bool writable = source || !std::is_const_v<E>;
  constexpr bool lives = source || !element_ok || is_pointer || std::is_lvalue_reference_v<C>;
  constexpr bool counted = !is_pointer || !same_element || !writable;
  constexpr bool host = !std::is_void_v<E>;
  static_assert(!source || element_ok,
                "copy_from: element type differs: accel copies bytes and converts nothing: "
                "copy into a std::vector<T> of the buffer's element type first");
  static_assert(source || element_ok,
                "copy_to: element type differs: accel copies bytes and converts nothing: "
                "copy into a std::vector<T> of the buffer's element type, then convert");
  static_assert(!element_ok || writable,
                "copy_to: the destination is const: pass writable host memory");
  static_assert(lives,
                "copy_to: a temporary would die before the asynchronous copy writes it: "
                "keep the destination in a variable");
  static_assert(counted, "a bare pointer needs its element count: pass (pointer, count)");
  static_assert(host,
                "the host side must be host memory: a std::vector, std::array, C array, "
                "HostSpan, HostBuffer or (pointer, count)");
  static_assert(!(element_ok && writable && lives && counted && host),
                "this host argument cannot be copied");
}

/* ------------------------------------------------------------------------ */
/* Kernel arguments                                                           */
/* ------------------------------------------------------------------------ */

template <class T>
struct is_local_memory : std::is_same<std::remove_cv_t<std::remove_reference_t<T>>, LocalMemory> {};

/* The accel_kernel_arg_t of one C++ argument, by its type: a pointer or a
 * DeviceBuffer is a device pointer, LocalMemory is local memory, any other
 * trivially copyable value is passed by value; anything else (std::string,
 * std::vector, a reference-holding class) does not compile. The argument
 * must outlive the launch call (it does: it is the call's own parameter). */
template <class A>
accel_kernel_arg_t kernel_arg(const A& a) {
  using T = std::remove_cv_t<A>;
  if constexpr (std::is_pointer_v<T> || std::is_null_pointer_v<T>) {
    return {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*),
            const_cast<const void*>(static_cast<const volatile void*>(a))};
  } else if constexpr (is_device_buffer<T>::value) {
    return {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), a.data()};
  } else if constexpr (is_local_memory<T>::value) {
    return {ACCEL_KERNEL_ARG_LOCAL_MEMORY, a.bytes, nullptr};
  } else {
    static_assert(std::is_trivially_copyable_v<T> && !std::is_array_v<T>,
                  "accel::Kernel::launch: an argument must be a pointer, a DeviceBuffer<T>, "
                  "accel::LocalMemory or a trivially copyable value");
    return {ACCEL_KERNEL_ARG_VALUE, sizeof(T), &a};
  }
}

/* The accel_kernel_arg_type_t of a Kernel::launch argument of type A (what
 * accel_launch_config_t.arg_types says about it): integers, bool and enums
 * are INT, floating-point types FLOAT, pointers and DeviceBuffers POINTER,
 * other values STRUCT; LocalMemory says nothing (UNKNOWN). */
template <class A>
inline constexpr std::int32_t kernel_arg_type = [] {
  using T = remove_cvref_t<A>;
  if constexpr (std::is_pointer_v<T> || std::is_null_pointer_v<T> || is_device_buffer<T>::value)
    return std::int32_t{ACCEL_KERNEL_ARG_TYPE_POINTER};
  else if constexpr (is_local_memory<T>::value)
    return std::int32_t{ACCEL_KERNEL_ARG_TYPE_UNKNOWN};
  else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>)
    return std::int32_t{ACCEL_KERNEL_ARG_TYPE_INT};
  else if constexpr (std::is_floating_point_v<T>)
    return std::int32_t{ACCEL_KERNEL_ARG_TYPE_FLOAT};
  else
    return std::int32_t{ACCEL_KERNEL_ARG_TYPE_STRUCT};
}();

/* Whether a TypedKernel::launch argument of type A converts to parameter
 * type P, implicitly, as a C++ function call (and CUDA's <<<>>>) would
 * convert it; a DeviceBuffer<T> converts as its T*. */
template <class P, class A>
inline constexpr bool typed_arg_converts = [] {
  using T = remove_cvref_t<A>;
  if constexpr (is_device_buffer<T>::value)
    return std::is_convertible_v<
        decltype(const_cast<typename T::value_type*>(std::declval<const T&>().data())), P>;
  else
    return std::is_convertible_v<const A&, P>;
}();

/* Argument `index` (of type A) of a TypedKernel::launch as its parameter
 * type P. The static_assert names the first argument that does not
 * convert: the instantiation shows `index`, P and A. */
template <std::size_t index, class P, class A>
P typed_arg(const A& a) {
  static_assert(typed_arg_converts<P, A>,
                "accel::TypedKernel::launch: this argument does not convert to the kernel's "
                "parameter type (the instantiation of typed_arg<index, P, A> names the argument's "
                "index, the parameter type P and the argument type A)");
  if constexpr (!typed_arg_converts<P, A>) {
    // Only instantiated where the static_assert above failed: no second
    // error about a conversion.
    throw std::logic_error("accel::TypedKernel::launch: unconvertible argument");
  } else if constexpr (is_device_buffer<remove_cvref_t<A>>::value) {
    return const_cast<typename remove_cvref_t<A>::value_type*>(a.data());
  } else {
    return static_cast<P>(a);
  }
}

}  // namespace detail
}  // namespace accel

#endif /* ACCEL_DETAIL_SUPPORT_HPP */
