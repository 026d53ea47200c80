// Peer access and copies between devices (ABI 1.1).
#include "checks.hpp"
#include "graph.hpp"
#include "guard.hpp"
#include "host_services.hpp"
#include "memory_table.hpp"
#include "peer.hpp"
#include "plugin_groups.hpp"
#include "stream_sanitizer.hpp"

using namespace accel::core;

namespace {

// The current accelerator, ready, with the peer group, and both devices
// resolved and different.
accel_status_t peer_pair(const char* fn, int32_t device, int32_t peer, Backend*& b, int32_t& a,
                         int32_t& p) {
  if (auto st = check_device(fn, device, b, a, InitBackend::no); st != ACCEL_SUCCESS) return st;
  if (auto st = resolve_device(fn, *b, peer, p); st != ACCEL_SUCCESS) return st;
  if (auto st = ensure_ready(*b); st != ACCEL_SUCCESS) return st;
  return require_group(fn, *b, PluginGroup::peer_copy);
}

// `p` lies, with `bytes` bytes, in a device allocation of `device` of `b`.
accel_status_t check_peer_range(const char* fn, const char* what, const void* p, size_t bytes,
                                const Backend& b, int32_t device) {
  Allocation a;
  if (!find_allocation(p, a) || a.type != ACCEL_MEMORY_DEVICE) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "{}: {} {} is not inside a live allocation made by accel_malloc", fn, what, p);
  }
  if (a.backend != &b || a.device != device) {
    return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                 "{}: {} {} belongs to {} device {}, not to {} device {}", fn, what, p,
                 a.backend->name, a.device, b.name, device);
  }
  return check_range_fits(fn, what, p, bytes, a);
}

}  // namespace

namespace accel::core {

accel_status_t peer_copy(const char* fn, void* dst, int32_t dst_device, const void* src,
                         int32_t src_device, size_t bytes, accel_stream_t stream) {
  Backend& b = *stream->backend;
  if (auto st = require_group(fn, b, PluginGroup::peer_copy); st != ACCEL_SUCCESS) return st;
  if (stream->device != dst_device && stream->device != src_device) {
    return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                 "{}: the stream belongs to {} device {}, neither the source device {} nor the "
                 "destination device {}",
                 fn, b.name, stream->device, src_device, dst_device);
  }
  if (auto st = check_peer_range(fn, "dst", dst, bytes, b, dst_device); st != ACCEL_SUCCESS)
    return st;
  if (auto st = check_peer_range(fn, "src", src, bytes, b, src_device); st != ACCEL_SUCCESS)
    return st;
  if (capturing_anywhere()) [[unlikely]] {
    GraphOp op{.kind = OpKind::peer_copy,
               .dst = dst,
               .src = src,
               .bytes = bytes,
               .dst_device = dst_device,
               .src_device = src_device};
    if (auto r = record_op(fn, stream, std::move(op)); r.recorded) return r.status;
  }
  TraceSpan span(stream);
  auto st = call_plugin(b, "memcpy_peer_async", [&] {
    return b.api.memcpy_peer_async(dst, dst_device, src, src_device, bytes, stream->native);
  });
  if (span) span.end(st, {.kind = SpanKind::peer_copy, .bytes = bytes});
  return st;
}

}  // namespace accel::core

extern "C" {

accel_status_t accel_device_can_access_peer(int32_t device, int32_t peer, int32_t* can_access) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (can_access == nullptr)
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: can_access is NULL", fn);
    Backend* b = nullptr;
    int32_t a = 0, p = 0;
    if (auto st = peer_pair(fn, device, peer, b, a, p); st != ACCEL_SUCCESS) return st;
    if (a == p) {  // as cuDeviceCanAccessPeer: a device is not its own peer
      *can_access = 0;
      return ACCEL_SUCCESS;
    }
    int32_t yes = 0;
    auto st = call_plugin(*b, "device_can_access_peer",
                          [&] { return b->api.device_can_access_peer(a, p, &yes); });
    if (st != ACCEL_SUCCESS) return st;
    *can_access = yes != 0 ? 1 : 0;
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_device_enable_peer_access(int32_t device, int32_t peer) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    Backend* b = nullptr;
    int32_t a = 0, p = 0;
    if (auto st = peer_pair(fn, device, peer, b, a, p); st != ACCEL_SUCCESS) return st;
    if (a == p) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: device and peer are both {} device {}; a device always reaches its own "
                   "memory",
                   fn, b->name, a);
    }
    return call_plugin(*b, "device_enable_peer_access",
                       [&] { return b->api.device_enable_peer_access(a, p); });
  });
}

accel_status_t accel_memcpy_peer_async(void* dst, int32_t dst_device, const void* src,
                                       int32_t src_device, size_t bytes, accel_stream_t stream) {
  const char* const fn = __func__;
  const void* caller = __builtin_return_address(0);
  const accel_status_t result = guarded(fn, [&] {
    if (auto st = pick_stream(fn, stream); st != ACCEL_SUCCESS) return st;
    Backend& b = *stream->backend;
    int32_t d = 0, s = 0;
    if (auto st = resolve_device(fn, b, dst_device, d); st != ACCEL_SUCCESS) return st;
    if (auto st = resolve_device(fn, b, src_device, s); st != ACCEL_SUCCESS) return st;
    if (auto st = require_group(fn, b, PluginGroup::peer_copy); st != ACCEL_SUCCESS) return st;
    if (bytes == 0) return ACCEL_SUCCESS;  // as accel_memcpy_async
    if (dst == nullptr || src == nullptr) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} is NULL", fn,
                   dst == nullptr ? "dst" : "src");
    }
    if (d == s) {
      // One device: an ordinary device-to-device copy on the stream.
      return accel_memcpy_async(dst, src, bytes, ACCEL_MEMCPY_DEVICE_TO_DEVICE, stream);
    }
    return peer_copy(fn, dst, d, src, s, bytes, stream);
  });
  if (sanitizer::on() && result == ACCEL_SUCCESS && bytes != 0 && !in_capture(stream))
      [[unlikely]] {
    sanitizer::on_read(src, stream, {fn, caller});
    sanitizer::on_write(dst, stream, {fn, caller});
  }
  return result;
}

}  // extern "C"
