// interop.cpp - native handles (ABI 1.1): a sim queue is the Stream object
// that runs the work, so its address is the "native" handle a program can
// hand back to stream_from_native. Nothing outside the simulator can
// enqueue on it.
#include "backend.hpp"

#include <memory>
#include <mutex>
#include <utility>

namespace accel::sim {

accel_status_t op_stream_native_handle(accel_plugin_stream_t stream, accel_native_handle_t* out) {
  return guarded("stream_native_handle", [&] {
    if (stream == nullptr || out == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_native_handle: NULL argument");
    Stream* s = as_stream(stream);
    return accel::backend::set_native_handle(out, ACCEL_NATIVE_SIM, s->queue(), nullptr,
                                             s->device());
  });
}

accel_status_t op_stream_from_native(int32_t device, const accel_native_handle_t* native,
                                     uint32_t flags, accel_plugin_stream_t* stream) {
  return guarded("stream_from_native", [&] {
    if (native == nullptr || stream == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "stream_from_native: NULL argument");
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    const auto* key = static_cast<const Stream*>(native->handle);
    // Find the queue among the live streams of every device, never
    // dereferencing a handle that is not one of them.
    std::shared_ptr<Stream> target;
    int32_t owner = -1;
    for (auto& d : state().devices) {
      std::lock_guard<std::mutex> lock(d->streams_mu);
      auto it = d->streams.find(key);
      if (it != d->streams.end()) {
        target = it->second;
        owner = d->index;
        break;
      }
    }
    if (!target)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "stream_from_native: %p is not a live sim queue (take one from "
                  "accel_stream_native_handle)",
                  native->handle);
    if (owner != device)
      return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                  "stream_from_native: the queue belongs to sim device %d, not to sim device %d",
                  static_cast<int>(owner), static_cast<int>(device));
    // native->handle is always a queue (stream_native_handle gives the
    // queue of a wrapper), so `target` runs its own work.
    auto wrapper =
        std::make_shared<Stream>(std::move(target), (flags & ACCEL_NATIVE_TAKE_OWNERSHIP) != 0);
    {
      std::lock_guard<std::mutex> lock(dev->streams_mu);
      dev->streams.emplace(wrapper.get(), wrapper);
    }
    *stream = wrapper.get();
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::sim
