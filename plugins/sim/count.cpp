// count.cpp - the device count: ACCEL_SIM_DEVICES and ACCEL_SIM_MEMORY, read
// once into the process-wide State. Counting reads two variables and starts
// no thread, so it is fork-safe (ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE).
#include "backend.hpp"

#include <cstdint>
#include <mutex>
#include <string>

namespace accel::sim {

namespace {

constexpr int32_t kMaxDevices = 64;
constexpr uint64_t kDefaultMemory = 1ull << 30;  // 1 GiB per device

// Parses a non-negative decimal integer that fits in uint64_t: digits only,
// so "-1", "3x", "" and " 4" are all rejected.
bool parse_u64(const char* s, uint64_t* out) {
  if (s == nullptr || *s == '\0') return false;
  uint64_t v = 0;
  for (const char* p = s; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(*p - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *out = v;
  return true;
}

// Builds the state from the environment. Cheap on purpose (no threads, no
// memory): discovery calls it through device_count, possibly before fork().
State* make_state() {
  auto st = std::make_unique<State>();
  const char* devices_env = accel::plugin::env("ACCEL_SIM_DEVICES");
  const char* memory_env = accel::plugin::env("ACCEL_SIM_MEMORY");

  uint64_t n = 0;
  if (devices_env == nullptr || *devices_env == '\0') {
    st->no_device_reason =
        "ACCEL_SIM_DEVICES is unset or empty: the simulator is dormant; set "
        "ACCEL_SIM_DEVICES=N to simulate N devices";
    return st.release();
  }
  if (!parse_u64(devices_env, &n) || n > static_cast<uint64_t>(kMaxDevices)) {
    st->no_device_reason = "ACCEL_SIM_DEVICES='" + std::string(devices_env) +
                           "' is not a whole number in [0, " + std::to_string(kMaxDevices) +
                           "]: no simulated devices";
    return st.release();
  }
  if (n == 0) {
    st->no_device_reason =
        "ACCEL_SIM_DEVICES=0: the simulator is dormant; set ACCEL_SIM_DEVICES=N to simulate "
        "N devices";
    return st.release();
  }

  uint64_t memory = kDefaultMemory;
  if (memory_env != nullptr && *memory_env != '\0') {
    if (!parse_u64(memory_env, &memory) || memory == 0 || memory > SIZE_MAX) {
      st->no_device_reason = "ACCEL_SIM_MEMORY='" + std::string(memory_env) +
                             "' is not a positive number of bytes: no simulated devices";
      return st.release();
    }
  }

  st->devices.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i)
    st->devices.push_back(std::make_unique<Device>(static_cast<int32_t>(i), memory));
  st->device_count = static_cast<int32_t>(n);
  return st.release();
}

// Leaked on purpose: plugins are never unloaded, and destroying worker
// threads from a static destructor during exit() is a classic source of
// hangs. Reachable from here, so leak checkers do not report it.
State* g_state = nullptr;
std::once_flag g_state_once;

}  // namespace

State& state() {
  std::call_once(g_state_once, [] { g_state = make_state(); });
  return *g_state;
}

accel_status_t op_init() {
  return guarded("init", [] {
    state();  // parse the configuration now; cheap and fork-safe
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_device_count(int32_t* count) {
  return guarded("device_count", [&] {
    if (count == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "device_count: count is NULL");
    State& st = state();
    *count = st.device_count;
    // Zero devices is not a failure, but the core shows our reason.
    if (st.device_count == 0) accel::plugin::set_error(ACCEL_SUCCESS, st.no_device_reason);
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::sim
