// Every accel.h call that can wait for a backend runs under a watchdog in
// the suites that include this header (tests/backends/*): a call that does
// not return within accel_test::kWaitLimit ends the test naming the call
// and the test case, instead of hanging until Meson's timeout says only
// "TIMEOUT". Include it after <accel/accel.h>: the macros below must not
// rename the declarations.
//
// Each macro expands to (Deadline temporary, the real call): the temporary
// lives until the end of the full expression, so it covers exactly the
// call, and the expression's value is the call's status. A function-like
// macro does not expand inside its own expansion, so the inner name is the
// real function; `&accel_stream_synchronize` (no parentheses) is untouched.
#pragma once

#include <accel/accel.h>

#include "support.hpp"

#define ACCEL_TEST_WATCHED(call, ...) \
  (::accel_test::Deadline(#call, ::accel_test::kWaitLimit, ::accel_test::watched::kWatchedRule_##call), \
   call(__VA_ARGS__))

namespace accel_test::watched {
inline constexpr const char* kWatchedRule_accel_stream_synchronize =
    "work queued on the stream must complete on its own";
inline constexpr const char* kWatchedRule_accel_event_synchronize =
    "an event's record completes once the work before it has";
inline constexpr const char* kWatchedRule_accel_synchronize =
    "the device's queued work must complete on its own";
inline constexpr const char* kWatchedRule_accel_stream_destroy =
    "destroying a stream returns at once, whatever is still queued on it";
inline constexpr const char* kWatchedRule_accel_event_destroy =
    "destroying an event returns at once";
inline constexpr const char* kWatchedRule_accel_module_unload =
    "an unload drains launches and waits for the device only";
inline constexpr const char* kWatchedRule_accel_launch_host_func =
    "a host function is queued, never run inline";
inline constexpr const char* kWatchedRule_accel_empty_cache =
    "empty_cache waits for the device's work only";
}  // namespace accel_test::watched

#define accel_stream_synchronize(...) ACCEL_TEST_WATCHED(accel_stream_synchronize, __VA_ARGS__)
#define accel_event_synchronize(...) ACCEL_TEST_WATCHED(accel_event_synchronize, __VA_ARGS__)
#define accel_synchronize(...) ACCEL_TEST_WATCHED(accel_synchronize, __VA_ARGS__)
#define accel_stream_destroy(...) ACCEL_TEST_WATCHED(accel_stream_destroy, __VA_ARGS__)
#define accel_event_destroy(...) ACCEL_TEST_WATCHED(accel_event_destroy, __VA_ARGS__)
#define accel_module_unload(...) ACCEL_TEST_WATCHED(accel_module_unload, __VA_ARGS__)
#define accel_launch_host_func(...) ACCEL_TEST_WATCHED(accel_launch_host_func, __VA_ARGS__)
#define accel_empty_cache(...) ACCEL_TEST_WATCHED(accel_empty_cache, __VA_ARGS__)
