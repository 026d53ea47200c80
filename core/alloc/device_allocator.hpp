// The stream-ordered caching allocator of one device (docs/memory.md).
//
// Vendor allocations ("segments") are cut into blocks. Requests of 1 MiB or
// less come from the small pool (2 MiB segments), larger ones from the large
// pool (20 MiB segments below 10 MiB, else the request rounded up to 2 MiB).
// A free block is found best-fit among the blocks of the requesting stream,
// split when the rest is worth keeping, and merged with free neighbours when
// freed. A block belongs to the stream it was allocated on: freed, it serves
// that stream's next request at once (the stream runs in order), and other
// streams only after markers recorded on the streams named by
// record_stream() have completed.
//
// Independent of the rest of the core: it sees the device only through
// DeviceOps, so the unit tests drive it with a counting fake.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "accel/accel.h"
#include "config.hpp"
#include "stats.hpp"

namespace accel::alloc {

// Identifies a stream (the core passes its accel_stream_s*). Never
// dereferenced here.
using StreamKey = const void*;
using EventHandle = void*;

// Sizes of the design (the values of PyTorch's CUDA caching allocator).
inline constexpr size_t kMinBlockSize = 512;         // rounding unit
inline constexpr size_t kSmallSize = 1u << 20;       // largest small-pool request
inline constexpr size_t kSmallBuffer = 2u << 20;     // small-pool segment
inline constexpr size_t kLargeBuffer = 20u << 20;    // segment for requests below kMinLargeAlloc
inline constexpr size_t kMinLargeAlloc = 10u << 20;  // from here: segment = rounded request
inline constexpr size_t kRoundLarge = 2u << 20;      // rounding of large segments

// What the allocator needs from one device. The calls that wait for device
// work (event_synchronize, synchronize, stream_synchronize) come without the
// allocator's lock: no lock is held across a wait (docs/architecture.md,
// "Locks and waits"). All others come with it held, and an implementation
// must not call back into the allocator from them.
class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  // A vendor allocation; ACCEL_ERROR_OUT_OF_MEMORY when the device is full
  // (the allocator then frees its cache and retries once).
  virtual accel_status_t raw_alloc(size_t bytes, void** ptr) = 0;
  virtual accel_status_t raw_free(void* ptr, size_t bytes) = 0;
  // Device memory in bytes (0: unknown), for the garbage-collection
  // threshold and the out-of-memory message.
  virtual size_t capacity() = 0;
  // Markers: event_record makes `ev` complete once the work queued on
  // `stream` so far has. event_query: ACCEL_SUCCESS done,
  // ACCEL_ERROR_NOT_READY pending, anything else an error.
  virtual accel_status_t event_create(EventHandle* ev) = 0;
  virtual accel_status_t event_record(EventHandle ev, StreamKey stream) = 0;
  virtual accel_status_t event_query(EventHandle ev) = 0;
  virtual accel_status_t event_synchronize(EventHandle ev) = 0;
  virtual void event_destroy(EventHandle ev) = 0;
  // Waits for every stream of the device (before segments that streams may
  // still use go back to the vendor).
  virtual accel_status_t synchronize() = 0;
  // True when nothing is queued on `stream` (a destroyed stream's blocks
  // then change stream at once instead of after a marker). May say false.
  virtual bool stream_idle(StreamKey) { return false; }
  // Waits for the work queued on `stream` so far: what a marker the backend
  // could not record stands for.
  virtual accel_status_t stream_synchronize(StreamKey) { return synchronize(); }
  // False once `stream` has been destroyed (or is being): checked under the
  // lock, so a call racing a destroy either comes before retire_stream
  // (which then accounts for its memory) or files nothing under the stream.
  virtual bool stream_alive(StreamKey) { return true; }
};

// An allocated block as the caller sees it.
struct BlockInfo {
  uintptr_t base = 0;
  size_t requested = 0;  // bytes asked for
  size_t size = 0;       // bytes of the block (rounded)
  StreamKey stream = nullptr;
};

enum class Lookup {
  kFound,    // a live allocation starts exactly there
  kInside,   // the pointer lies inside one (BlockInfo says which)
  kMissing,  // no live allocation holds it
  kStreamDead,  // the stream named was destroyed by another thread meanwhile
};

class DeviceAllocator {
 public:
  DeviceAllocator(DeviceOps& ops, const Config& config);
  ~DeviceAllocator();  // returns nothing to the vendor (empty_cache does)
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // A block of at least `bytes` (> 0) for `stream`. `caller` is recorded in
  // the history (may be NULL). ACCEL_ERROR_OUT_OF_MEMORY after one retry
  // with the cache freed, with PyTorch's explanation in `error`; another
  // failure of DeviceOps is returned as is with `error` empty;
  // ACCEL_ERROR_INVALID_ARGUMENT with `error` set when `stream` was
  // destroyed meanwhile (DeviceOps::stream_alive). The retry and garbage
  // collection wait for the device without the lock, so other threads (and
  // host functions) allocate and free meanwhile.
  accel_status_t allocate(size_t bytes, StreamKey stream, const void* caller, void** out,
                          std::string& error);

  // Frees the block starting at `ptr`. `stream` null or the block's own:
  // reusable at once on its stream; another stream: only once the work
  // queued there so far has completed (cudaFreeAsync). kInside / kMissing
  // / kStreamDead change nothing (`info` describes the block for kInside).
  Lookup free(const void* ptr, StreamKey stream, const void* caller, BlockInfo* info = nullptr);

  // Adds `stream` to the streams whose work a free of the block holding
  // `ptr` waits for. kMissing and kStreamDead change nothing.
  Lookup record_stream(const void* ptr, StreamKey stream);

  // The live block holding `p`.
  bool find(const void* p, BlockInfo& out);

  // Waits for pending frees and every stream, then returns each segment
  // without a live or pending block to the vendor. The waits happen without
  // the lock; a segment handed out meanwhile stays.
  accel_status_t empty_cache();

  // `stream` is about to be destroyed: its blocks (free or live) change to
  // `replacement` once the work queued on `stream` so far has completed.
  accel_status_t retire_stream(StreamKey stream, StreamKey replacement);

  Stats stats();
  void reset_peak();
  void reset_accumulated();

  // Keeps the last `max_entries` events (0: none, drops them).
  void set_history(size_t max_entries);

  // The JSON snapshot (docs/memory.md) without the "device"/"backend" keys
  // the caller adds: {"allocator", "config", "segments", "stats",
  // "history"}. `stream_name` turns a StreamKey into the text written as
  // "stream"; `stream_label`, when given, into the stream's own name,
  // written as "stream_name" next to it unless empty.
  std::string snapshot(std::string (*stream_name)(StreamKey),
                       std::string (*stream_label)(StreamKey) = nullptr);

  // Locked around fork() by the core (fork.cpp).
  std::mutex& mutex();

  // For tests: verifies every internal invariant (block lists, pools,
  // statistics recomputed from scratch); an empty string when all hold.
  std::string check_invariants();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The size a request is rounded to, and the size of the segment made for it
// when no cached block fits (exposed for the tests).
size_t round_size(size_t bytes, const Config& c);
size_t segment_size(size_t rounded);

}  // namespace accel::alloc
