#include "runtime_version.hpp"

#include <cstring>

#include "error.hpp"
#include "host_services.hpp"
#include "log.hpp"

namespace accel::core {

namespace {

// What the core offers the plugin: room for a driver version and a few
// platform names; longer text is cut by the plugin (accel_plugin.h).
constexpr size_t kBufferBytes = 512;

}  // namespace

void query_runtime_version(Backend& b, bool initialised) {
  if (b.api.runtime_version == nullptr) return;
  char buf[kBufferBytes];
  std::memset(buf, 0, sizeof buf);
  // The plugin is not called under our mutex: it may take its time (a
  // vendor query) and concurrent calls are allowed by the ABI.
  begin_plugin_call();
  const accel_status_t st = b.api.runtime_version(buf, sizeof buf);
  buf[sizeof buf - 1] = '\0';  // whatever the plugin did
  std::lock_guard lock(b.runtime_version_mutex);
  if (b.runtime_version_state.load(std::memory_order_relaxed) == kRuntimeVersionKnown) return;
  if (st == ACCEL_SUCCESS) {
    b.runtime_version = buf;
    b.runtime_version_state.store(kRuntimeVersionKnown, std::memory_order_release);
    log().debug("{}: runtime version: {}", b.name, b.runtime_version);
    return;
  }
  const bool later = st == ACCEL_ERROR_NOT_READY && !initialised;
  b.runtime_version_state.store(later ? kRuntimeVersionAfterInit : kRuntimeVersionUnknown,
                                std::memory_order_release);
  const std::string said = plugin_error_set() ? plugin_error().message : std::string();
  log().debug("{}: runtime_version: {}{}{}", b.name, accel_status_name(st),
              said.empty() ? "" : ": ", said);
}

const char* runtime_version_of(const Backend& b) {
  if (b.runtime_version_state.load(std::memory_order_acquire) == kRuntimeVersionKnown)
    return b.runtime_version.c_str();
  return "";
}

}  // namespace accel::core
