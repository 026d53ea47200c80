// Native handles (ABI 1.1): a stream's immediate command list, and streams
// wrapping a list of the program (or the exported list of an accel stream,
// whose Queue the wrapper then shares). Once the program holds a list's
// handle it may append to it directly (Queue::exported; README.md, "Native
// handles").
#include "backend.hpp"

#include <map>

namespace accel::level_zero {

// The list itself: everything accel queues on the stream goes to it, in
// order. From now on the program may append to it (see queue_fence).
accel_status_t op_stream_native_handle(accel_plugin_stream_t stream, accel_native_handle_t* out) {
  return guarded("stream_native_handle", [&]() -> accel_status_t {
    Stream* s = static_cast<Stream*>(stream);
    if (s == nullptr || out == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_native_handle: NULL argument");
    s->q->exported.store(true, std::memory_order_release);
    // Level Zero names devices by handle (ordinal -1).
    return accel::backend::set_native_handle(out, ACCEL_NATIVE_LEVEL_ZERO, s->q->list,
                                             s->dev->driver->context, -1);
  });
}

// Wraps an immediate list of the program (or the exported list of an accel
// stream, whose Queue the wrapper then shares). Level Zero 1.8 cannot tell a
// list's device, context or whether it is immediate (zeCommandListGet*Handle
// and zeCommandListIsImmediate are newer than what loader 1.8 dispatches):
// what is checked is native->context when given and, for accel's
// own lists, their device; the rest is the caller's promise.
accel_status_t op_stream_from_native(int32_t device, const accel_native_handle_t* native,
                                     uint32_t flags, accel_plugin_stream_t* stream) {
  return on_device("stream_from_native", device, [&](Device* d) -> accel_status_t {
    if (native == nullptr || stream == nullptr || native->handle == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_from_native: NULL argument or handle");
    if ((flags & ~ACCEL_NATIVE_TAKE_OWNERSHIP) != 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_from_native: unknown flags 0x%x", flags);
    const bool take = (flags & ACCEL_NATIVE_TAKE_OWNERSHIP) != 0;
    auto list = static_cast<ze_command_list_handle_t>(native->handle);
    if (native->context != nullptr && native->context != d->driver->context)
      return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                  "stream_from_native: the command list is of ze_context_handle_t %p, but %s "
                  "works in context %p: create the list with zeCommandListCreateImmediate on "
                  "the context accel_device_native_handle gives",
                  native->context, d->label(), static_cast<void*>(d->driver->context));
    QueueRef q;
    {
      std::lock_guard lock(queue_registry_mutex());
      auto it = queue_registry().find(list);
      if (it != queue_registry().end()) q = it->second.lock();
      if (q) {
        if (q->dev != d)
          return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                      "stream_from_native: command list %p is a list of %s, not of %s",
                      native->handle, q->dev->label(), d->label());
        if (take && q->accel_made)
          return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                      "stream_from_native: command list %p belongs to an accel stream of %s; "
                      "accel cannot take ownership of it (wrap it without "
                      "ACCEL_NATIVE_TAKE_OWNERSHIP)",
                      native->handle, d->label());
        // A second wrapper of the program's list shares the first's state;
        // with ownership, the list goes with the last of them.
        if (take) q->destroy_list = true;
      } else {
        q = make_queue(d, list, false, take);
        queue_registry()[list] = q;
      }
      q->exported.store(true, std::memory_order_release);
    }
    *stream = add_stream(d, std::move(q), 0, false);
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::level_zero
