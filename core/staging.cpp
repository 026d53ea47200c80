// Pageable host copies (staging.hpp): the per-stream staging ring and the
// synchronous paths.
#include "staging.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "callbacks.hpp"
#include "error.hpp"
#include "handles.hpp"
#include "host_cache_hook.hpp"
#include "host_services.hpp"

namespace accel::core {

// One stream's ring. Lives as long as the handle slot (never freed, as the
// slot), emptied when the stream is destroyed.
struct Staging {
  struct Block {
    void* base = nullptr;
    accel_plugin_event_t marker = nullptr;  // an event of the stream's backend and device
    bool recorded = false;                  // marker recorded after the block's last copy
    int waiters = 0;                        // threads waiting for the marker, lock let go
  };
  // Held while bytes are copied into a block and the device copy is queued
  // (neither waits for device work), never while waiting.
  std::mutex mu;
  // Ring order; Block objects stay put (waiters hold pointers while the lock
  // is let go).
  std::vector<std::unique_ptr<Block>> blocks;
  size_t current = 0;  // the block being filled, when blocks is not empty
  size_t used = 0;     // bytes of it handed out
  // Blocks between retire_stream_staging and release_stream_staging.
  std::vector<void*> retired;
  Backend* retired_backend = nullptr;
};

namespace {

constexpr size_t kAlign = 64;  // each staged copy starts on a cache line
// The caller's bytes go into a block in pieces of this size. One memcpy of
// a whole 1 MiB block ran at 6 GB/s on the 2-core dev machine (glibc 2.36
// leaves `rep movsb` for its vector loop at 1 MiB there, and the block's
// lines were last read by the stream's thread on the other core); 256 KiB
// pieces ran at 24 GB/s, as a 1 MiB - 4 KiB copy did (docs/performance.md,
// "Copies").
constexpr size_t kStagingPiece = size_t{256} << 10;

Staging& staging_of(accel_stream_s* s) {
  Staging* r = s->staging.load(std::memory_order_acquire);
  if (r != nullptr) [[likely]]
    return *r;
  auto* fresh = new Staging;
  if (s->staging.compare_exchange_strong(r, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;
  return *r;
}

// "Not yet" is an answer here, not the caller's last error.
bool marker_done(const Backend& b, const Staging::Block& k) {
  if (!k.recorded) return true;
  begin_plugin_call();
  return b.api.event_query(k.marker) == ACCEL_SUCCESS;
}

accel_status_t seal(const Backend& b, accel_stream_s* s, Staging::Block& k) {
  auto st = call_plugin(b, "event_record", [&] { return b.api.event_record(k.marker, s->native); });
  if (st == ACCEL_SUCCESS) k.recorded = true;
  return st;
}

// A new block, made without the ring's lock (pinning may be slow).
accel_status_t make_block(Backend& b, accel_stream_s* s, std::unique_ptr<Staging::Block>& out) {
  auto k = std::make_unique<Staging::Block>();
  auto st = host_cache(b).allocate(kStagingBlockBytes, &k->base);
  if (st != ACCEL_SUCCESS) return st;
  st = call_plugin(b, "event_create",
                   [&] { return b.api.event_create(s->device, ACCEL_EVENT_DEFAULT, &k->marker); });
  if (st != ACCEL_SUCCESS) {
    (void)host_cache(b).free(k->base);
    return st;
  }
  out = std::move(k);
  return ACCEL_SUCCESS;
}

// Records the current block's marker once it holds copies, and marks it
// full: no later copy may land in it behind its marker.
accel_status_t seal_current(const Backend& b, accel_stream_s* s, Staging& r) {
  if (r.blocks.empty() || r.used == 0 || r.blocks[r.current]->recorded) return ACCEL_SUCCESS;
  if (auto st = seal(b, s, *r.blocks[r.current]); st != ACCEL_SUCCESS) return st;
  r.used = kStagingBlockBytes;
  return ACCEL_SUCCESS;
}

// Moves the ring to a block with room for `bytes`: the next one once its
// marker completed, a new one while the ring is short of blocks (or the
// caller is a host function of the stream, which must not wait), else waits
// for the next one's marker with the lock let go. Called and returns with
// `lock` held; other threads may move the ring while it is let go.
accel_status_t advance(Backend& b, accel_stream_s* s, Staging& r, size_t bytes,
                       std::unique_lock<std::mutex>& lock) {
  for (;;) {
    if (!r.blocks.empty() && r.used + bytes <= kStagingBlockBytes) return ACCEL_SUCCESS;
    if (auto st = seal_current(b, s, r); st != ACCEL_SUCCESS) return st;
    if (!r.blocks.empty()) {
      const size_t next = (r.current + 1) % r.blocks.size();
      Staging::Block& k = *r.blocks[next];
      if (k.waiters == 0 && marker_done(b, k)) {
        k.recorded = false;
        r.current = next;
        r.used = 0;
        return ACCEL_SUCCESS;
      }
      if (r.blocks.size() >= kStagingRingBlocks && !running_on_stream(s)) {
        ++k.waiters;
        accel_plugin_event_t ev = k.marker;
        lock.unlock();
        auto st = call_plugin(b, "event_synchronize", [&] { return b.api.event_synchronize(ev); });
        lock.lock();
        --k.waiters;
        if (st != ACCEL_SUCCESS) return st;
        continue;
      }
    }
    std::unique_ptr<Staging::Block> k;
    lock.unlock();
    auto st = make_block(b, s, k);
    lock.lock();
    if (st != ACCEL_SUCCESS) return st;
    if (auto sst = seal_current(b, s, r); sst != ACCEL_SUCCESS) {
      // Keep the block: it is ready, and the ring looks at it next time.
      r.blocks.insert(r.blocks.begin() + static_cast<ptrdiff_t>(r.current + 1), std::move(k));
      return sst;
    }
    const size_t at = r.blocks.empty() ? 0 : r.current + 1;
    r.blocks.insert(r.blocks.begin() + static_cast<ptrdiff_t>(at), std::move(k));
    r.current = at;
    r.used = 0;
    return ACCEL_SUCCESS;
  }
}

accel_status_t staged_h2d(void* dst, const void* src, size_t bytes, accel_stream_s* s) {
  Backend& b = *s->backend;
  Staging& r = staging_of(s);
  std::unique_lock lock(r.mu);
  if (r.blocks.empty() || r.used + bytes > kStagingBlockBytes) {
    if (auto st = advance(b, s, r, bytes, lock); st != ACCEL_SUCCESS) return st;
  }
  Staging::Block& k = *r.blocks[r.current];
  void* at = static_cast<unsigned char*>(k.base) + r.used;
  for (size_t off = 0; off < bytes; off += kStagingPiece)
    std::memcpy(static_cast<unsigned char*>(at) + off, static_cast<const unsigned char*>(src) + off,
                std::min(kStagingPiece, bytes - off));
  auto st = call_plugin(b, "memcpy_async", [&] {
    return b.api.memcpy_async(dst, at, bytes, ACCEL_MEMCPY_HOST_TO_DEVICE, s->native);
  });
  if (st == ACCEL_SUCCESS) r.used += (bytes + kAlign - 1) / kAlign * kAlign;
  return st;
}

bool can_stage(const Backend& b) {
  return b.api.host_alloc != nullptr && b.api.event_create != nullptr &&
         b.api.event_record != nullptr && b.api.event_query != nullptr;
}

}  // namespace

accel_status_t pageable_copy(const char* fn, void* dst, const void* src, size_t bytes,
                             accel_memcpy_kind_t kind, accel_stream_s* s) {
  Backend& b = *s->backend;
  const bool h2d = kind == ACCEL_MEMCPY_HOST_TO_DEVICE;
  if (h2d && bytes <= kStagingBlockBytes && can_stage(b)) return staged_h2d(dst, src, bytes, s);
  if (running_on_stream(s)) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "{}: a copy {} pageable host memory{} waits for its stream, and this host "
                 "function runs on that stream; use pinned memory (accel_host_malloc or "
                 "accel_host_register) or another stream",
                 fn, h2d ? "from" : "into",
                 h2d ? fmt::format(" of more than {} bytes", kStagingBlockBytes) : "");
  }
  auto st = call_plugin(b, "memcpy_async",
                        [&] { return b.api.memcpy_async(dst, src, bytes, kind, s->native); });
  if (st != ACCEL_SUCCESS) return st;
  return call_plugin(b, "stream_synchronize", [&] { return b.api.stream_synchronize(s->native); });
}

void retire_stream_staging(accel_stream_s* s) {
  Staging* r = s->staging.load(std::memory_order_acquire);
  if (r == nullptr) return;
  Backend& b = *s->backend;
  std::lock_guard lock(r->mu);
  // An idle stream has run every copy from its blocks: the cache may reuse
  // them at once (and holds no marker, which would keep a vendor queue
  // referenced until it is polled).
  begin_plugin_call();
  const bool idle = b.api.stream_query != nullptr && b.api.stream_query(s->native) == ACCEL_SUCCESS;
  for (auto& k : r->blocks) {
    // Otherwise the cache reuses the block once the stream's copies from it
    // have run.
    if (!idle) (void)host_cache(b).record_use(k->base, s);
    r->retired.push_back(k->base);
  }
  r->retired_backend = &b;
  // A marker may still be pending: its record completes with the stream's
  // queued work whether or not the event lives on.
  for (auto& k : r->blocks)
    (void)call_plugin(b, "event_destroy", [&] { return b.api.event_destroy(k->marker); });
  r->blocks.clear();
  r->current = 0;
  r->used = 0;
}

void release_stream_staging(accel_stream_s* s) {
  Staging* r = s->staging.load(std::memory_order_acquire);
  if (r == nullptr) return;
  std::lock_guard lock(r->mu);
  for (void* p : r->retired) (void)host_cache(*r->retired_backend).free(p);
  r->retired.clear();
}

}  // namespace accel::core
