#include "callbacks.hpp"

#include <memory>

#include <fmt/format.h>

#include "error.hpp"
#include "handles.hpp"
#include "runtime.hpp"

namespace accel::core {

namespace {

// Trivially destructible, so plain thread_locals are safe here (see
// runtime.hpp on why ThreadState is not one).
constinit thread_local LockedCallback t_locked{};
constinit thread_local const HostCall* t_host_call = nullptr;

const char* plugin_label(const Backend& b) {
  return b.name.empty() ? b.path.c_str() : b.name.c_str();
}

}  // namespace

LockedCallback& locked_callback() { return t_locked; }

LockedCallbackScope::LockedCallbackScope(const Backend& b, const char* op, const char* lock,
                                         std::mutex& held)
    : saved_(t_locked) {
  t_locked = LockedCallback{&b, op, lock, &held};
  t_hot.in_locked_callback = true;
}

LockedCallbackScope::~LockedCallbackScope() {
  t_locked = saved_;
  t_hot.in_locked_callback = saved_.backend != nullptr;
}

std::string reentry_message(const char* fn) {
  if (t_locked.backend == nullptr) return {};
  return fmt::format(
      "{}: called from plugin '{}' inside its {} callback, while accel holds its {} lock: "
      "plugins must not call the public accel API from their callbacks (plugin-abi rule 30)",
      fn, plugin_label(*t_locked.backend), t_locked.op, t_locked.lock);
}

accel_status_t reentry_failure(const char* fn) {
  if (t_locked.backend == nullptr) return ACCEL_SUCCESS;
  return fail(ACCEL_ERROR_REENTRANT, reentry_message(fn));
}

void host_call_trampoline(void* p) {
  // Owned from here: the plugin calls this exactly once per launch.
  std::unique_ptr<HostCall> call(static_cast<HostCall*>(p));
  const HostCall* saved = t_host_call;
  t_host_call = call.get();
  call->fn(call->user_data);
  t_host_call = saved;
}

const HostCall* running_host_call() { return t_host_call; }

bool running_on_stream(const accel_stream_s* s) {
  const HostCall* c = t_host_call;
  return c != nullptr && c->stream == s &&
         s->generation.load(std::memory_order_acquire) == c->stream_generation;
}

}  // namespace accel::core
