// The pinned host memory cache behind accel_host_malloc (torch's
// CachingHostAllocator, done once for every backend).
//
// Page-locking memory is slow (cudaHostAlloc maps and pins every page, often
// with a device-wide synchronisation), and pinned staging buffers are
// allocated and freed at a high rate by data loaders. So freed blocks are
// kept and handed out again:
//
//  - A request is rounded up to a power of two, at least kHostMinBlock
//    bytes, and served from the free list of exactly that size (no
//    splitting: pinned blocks are few and large, and a power-of-two class
//    wastes at most half of a block while keeping the lookup trivial).
//  - A block remembers the streams that copies used it on (record_use(); the
//    core calls it from accel_memcpy_async). When it is freed, a marker is
//    recorded on each of them and the block is reused only after every one
//    has completed, so a copy still queued from a freed buffer never reads
//    data written by the buffer's next owner. A block no stream used is
//    reusable at once.
//  - Pending markers are polled, oldest free first, at every allocation
//    (stopping at the first one not ready: later frees are rarely done
//    before earlier ones), and waited for by empty_cache().
//
// Independent of the rest of the core: it sees the backend only through
// HostOps, so the unit tests drive it with a fake whose markers they
// complete by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "accel/accel.h"
#include "device_allocator.hpp"  // StreamKey, EventHandle, Lookup
#include "stats.hpp"

namespace accel::alloc {

// The smallest block: smaller requests share its free list. Vendors pin
// whole pages anyway; 512 bytes keeps tiny requests from spreading over a
// dozen size classes.
inline constexpr size_t kHostMinBlock = 512;

// What the cache needs from one backend. Called with the cache's lock held
// (raw_alloc and raw_free without it); an implementation must not call back
// into the cache.
class HostOps {
 public:
  virtual ~HostOps() = default;
  // Pinned host memory; ACCEL_ERROR_OUT_OF_MEMORY when exhausted (the
  // cache then returns its idle blocks and retries once).
  virtual accel_status_t raw_alloc(size_t bytes, void** ptr) = 0;
  virtual accel_status_t raw_free(void* ptr) = 0;
  // Markers. event_create makes a marker for `stream`'s device;
  // event_record makes it complete once the work queued on `stream` so far
  // has. event_query and event_synchronize: ACCEL_SUCCESS done,
  // ACCEL_ERROR_NOT_READY pending (event_synchronize may say so when it
  // cannot wait, e.g. from a host function), anything else an error. A
  // backend without events records by synchronising the stream.
  virtual accel_status_t event_create(StreamKey stream, EventHandle* ev) = 0;
  virtual accel_status_t event_record(EventHandle ev, StreamKey stream) = 0;
  virtual accel_status_t event_query(EventHandle ev) = 0;
  virtual accel_status_t event_synchronize(EventHandle ev) = 0;
  virtual void event_destroy(EventHandle ev) = 0;
};

// A live block as the caller sees it.
struct HostBlockInfo {
  uintptr_t base = 0;
  size_t requested = 0;  // bytes asked for
  size_t size = 0;       // bytes of the block (a power of two)
};

class HostCache {
 public:
  explicit HostCache(HostOps& ops);
  ~HostCache();  // returns nothing to the backend (empty_cache does)
  HostCache(const HostCache&) = delete;
  HostCache& operator=(const HostCache&) = delete;

  // A block of at least `bytes` (> 0). ACCEL_ERROR_OUT_OF_MEMORY when the
  // rounded size does not exist or the backend stays out of memory after
  // the idle cached blocks went back; other HostOps failures as they are.
  accel_status_t allocate(size_t bytes, void** out);

  // Frees the live block starting at `ptr` into the cache. kInside /
  // kMissing change nothing (`info` describes the block for kInside).
  // A marker that cannot be recorded now is tried again later: the block
  // stays pending meanwhile (a later marker waits for more work, never
  // less).
  Lookup free(const void* ptr, HostBlockInfo* info = nullptr);

  // Adds `stream` to the streams whose queued work a free of the live block
  // holding `ptr` waits for. kMissing changes nothing.
  Lookup record_use(const void* ptr, StreamKey stream);

  // `stream` is about to be destroyed: the blocks that it used get their
  // markers on it now, while it still exists (they are waited for when the
  // block is freed). The first failure is returned; what failed is tried
  // again at the free.
  accel_status_t retire_stream(StreamKey stream);

  // The live block holding `p`.
  bool find(const void* p, HostBlockInfo& out);

  // Waits for the markers of freed blocks, then returns every cached block
  // to the backend. Live blocks stay. The lock is not held while waiting.
  // Returns the first failure (the blocks it concerns stay cached).
  accel_status_t empty_cache();

  HostStats stats();

  // Locked around fork() by the core (fork.cpp).
  std::mutex& mutex();

  // For tests: every internal invariant (block states, lists, statistics
  // recomputed from scratch); an empty string when all hold.
  std::string check_invariants();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The block size a request of `bytes` gets: the next power of two, at least
// kHostMinBlock; 0 when that does not fit in size_t.
size_t host_block_size(size_t bytes);

}  // namespace accel::alloc
