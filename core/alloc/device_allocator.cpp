// The stream-ordered caching allocator of one device: the interface and its
// guarantees are in device_allocator.hpp, the user's view in docs/memory.md.
// The design notes stand where the code they describe is:
//   Note [Pools and rounding]      round_size, segment_size, take_free
//   Note [Splitting and merging]   should_split, free_block
//   Note [Stream ordering]         marker, Impl::free, retire_stream
//   Note [Out of memory]           grow_pool
// and every wait for the device follows "Waiting without the lock" below.
#include "device_allocator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "history.hpp"

namespace accel::alloc {

// Note [Pools and rounding]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A request is rounded first (round_size): up to a multiple of
// kMinBlockSize (512 bytes; smaller requests get 512), or, with
// roundup_power2_divisions:N (N > 1) and a request above kSmallSize, up to
// one of N equal steps between the powers of two around it (a power of two
// stays as it is). The rounded size picks the pool: kSmallSize (1 MiB) or
// less the small pool, else the large one. When no cached block fits, the
// new segment is segment_size(rounded): kSmallBuffer (2 MiB) for the small
// pool, kLargeBuffer (20 MiB) below kMinLargeAlloc (10 MiB), else the
// rounded size up to a multiple of kRoundLarge (2 MiB).
//
// Each pool is one ordered set of free blocks keyed by (stream, size,
// address), so best fit is one lower_bound (take_free): the smallest free
// block of the requesting stream that is large enough, the lowest address
// among equal sizes. Blocks of other streams are never candidates. With
// max_split_size set, a block of that size or more ("oversize") serves only
// requests of that size or more, and only when less than kLargeBuffer of it
// would be left over. Pool nodes, live-map nodes and Block objects are
// recycled, so serving a request from the cache allocates no bookkeeping.
size_t round_size(size_t bytes, const Config& c) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  size_t divisions = c.roundup_power2_divisions;
  // Only large-pool requests: small blocks are cut from 2 MiB segments at
  // 512-byte granularity, where coarser steps would only waste memory.
  if (divisions > 1 && bytes > kSmallSize) {
    // One of `divisions` equal steps between the power of two at or below
    // `bytes` and the next: 1200 MiB with 4 divisions becomes 1280 MiB.
    size_t floor = std::bit_floor(bytes);
    if (floor == bytes) return bytes;
    size_t step = floor / divisions;
    size_t up = (bytes + step - 1) / step * step;
    return up;
  }
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t segment_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

namespace {

struct Block;
struct BlockLess {
  bool operator()(const Block* a, const Block* b) const;
};
using PoolSet = std::set<Block*, BlockLess>;
using LiveMap = std::map<uintptr_t, Block*>;

struct Segment {
  uintptr_t base = 0;
  size_t size = 0;
  bool small = false;
  StreamKey stream = nullptr;
  Block* head = nullptr;   // the block at `base`; blocks are linked in address order
  uint64_t last_used = 0;  // allocator tick of the last free (garbage collection)
  // Changes whenever a block of the segment is handed out or changes
  // stream: a release decided before an unlocked device synchronize goes
  // ahead only if the segment is still at the version it was chosen at.
  uint64_t version = 0;
};

struct Block {
  uintptr_t ptr = 0;
  size_t size = 0;       // bytes of the block (a multiple of kMinBlockSize)
  size_t requested = 0;  // bytes asked for, while allocated
  StreamKey stream = nullptr;
  bool allocated = false;
  // Markers still to complete before the block may be reused: a free block
  // with event_count > 0 is "pending" (neither allocated nor in a pool).
  int event_count = 0;
  Block* prev = nullptr;
  Block* next = nullptr;
  Segment* segment = nullptr;
  std::vector<StreamKey> uses;  // other streams named by record_stream
  PoolSet::node_type node;      // the pool's node, kept while not in the pool
  PoolSet::iterator position;   // where it is in the pool, while it is there

  bool is_free() const { return !allocated && event_count == 0; }
  bool is_split() const { return prev != nullptr || next != nullptr; }
  PoolKind kind() const { return segment->small ? kSmallPool : kLargePool; }
};

bool BlockLess::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return std::less<StreamKey>()(a->stream, b->stream);
  if (a->size != b->size) return a->size < b->size;
  return a->ptr < b->ptr;
}

// One marker and the blocks that wait for it. `event` is null when the
// backend could not record one: the blocks then wait for a synchronize of
// `stream`, done by the public call without the lock.
struct Pending {
  EventHandle event = nullptr;
  StreamKey stream = nullptr;
  std::vector<Block*> blocks;
};

// A segment chosen for release, as it was when chosen.
struct SegmentRef {
  uintptr_t base = 0;
  uint64_t version = 0;
};

using Lock = std::unique_lock<std::mutex>;

std::string format_bytes(uint64_t n) {
  if (n >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(n) / (1ull << 30));
  if (n >= (1ull << 20)) return fmt::format("{:.2f} MiB", static_cast<double>(n) / (1ull << 20));
  if (n >= (1ull << 10)) return fmt::format("{:.2f} KiB", static_cast<double>(n) / (1ull << 10));
  return fmt::format("{} bytes", n);
}

}  // namespace

struct DeviceAllocator::Impl {
  DeviceOps& ops;
  Config config;
  // Guards everything below. Never held while waiting for device work
  // (docs/architecture.md, "Locks and waits"): see the waits further down.
  std::mutex mutex;
  Stats stats;
  PoolSet small_pool, large_pool;
  LiveMap live;                                // allocated blocks by address
  std::vector<LiveMap::node_type> spare_live;  // recycled nodes: no malloc per allocation
  std::vector<Block*> spare_blocks;
  std::map<uintptr_t, Segment*> segments;  // by base address
  std::vector<Pending> pending;
  std::vector<Pending> unsynced;  // markers the backend could not record
  std::vector<EventHandle> spare_events;
  uint64_t versions = 0;  // source of Segment::version
  History history;
  uint64_t tick = 0;

  Impl(DeviceOps& o, const Config& c) : ops(o), config(c) {
    stats.max_split_size =
        c.max_split_size == SIZE_MAX ? -1 : static_cast<int64_t>(c.max_split_size);
  }

  PoolSet& pool_of(const Block* b) { return b->segment->small ? small_pool : large_pool; }

  Block* new_block() {
    if (spare_blocks.empty()) return new Block();
    Block* b = spare_blocks.back();
    spare_blocks.pop_back();
    return b;
  }

  void recycle(Block* b) {
    PoolSet::node_type node = std::move(b->node);
    b->uses.clear();
    *b = Block();
    b->node = std::move(node);
    spare_blocks.push_back(b);
  }

  // A free block enters or leaves its pool. A free block of a split segment
  // counts as inactive_split while it is in the pool.
  void pool_insert(Block* b) {
    if (b->node.empty()) {
      b->position = pool_of(b).insert(b).first;
    } else {
      b->node.value() = b;
      b->position = pool_of(b).insert(std::move(b->node)).position;
    }
    if (b->is_split()) {
      add(stats.inactive_split, b->kind(), 1);
      add(stats.inactive_split_bytes, b->kind(), static_cast<int64_t>(b->size));
    }
  }
  void pool_erase(Block* b) {
    b->node = pool_of(b).extract(b->position);  // no search
    if (b->is_split()) {
      sub(stats.inactive_split, b->kind(), 1);
      sub(stats.inactive_split_bytes, b->kind(), static_cast<int64_t>(b->size));
    }
  }

  void live_insert(Block* b) {
    if (spare_live.empty()) {
      live.emplace(b->ptr, b);
      return;
    }
    LiveMap::node_type node = std::move(spare_live.back());
    spare_live.pop_back();
    node.key() = b->ptr;
    node.mapped() = b;
    live.insert(std::move(node));
  }
  void live_erase(LiveMap::iterator it) { spare_live.push_back(live.extract(it)); }

  Block* live_containing(uintptr_t p) {
    auto it = live.upper_bound(p);
    if (it == live.begin()) return nullptr;
    Block* b = std::prev(it)->second;
    return p - b->ptr < b->requested ? b : nullptr;
  }

  // Best fit among the free blocks of `stream`: the smallest of at least
  // `size` (taken out of its pool), or nullptr.
  Block* take_free(PoolSet& pool, StreamKey stream, size_t size) {
    Block key;
    key.stream = stream;
    key.size = size;
    auto it = pool.lower_bound(&key);
    if (it == pool.end() || (*it)->stream != stream) return nullptr;
    Block* b = *it;
    if (config.max_split_size != SIZE_MAX) {
      // Oversize blocks serve only oversize requests, and those only when
      // the waste stays under a large segment.
      if (size < config.max_split_size && b->size >= config.max_split_size) return nullptr;
      if (size >= config.max_split_size && b->size >= size + kLargeBuffer) return nullptr;
    }
    pool_erase(b);
    return b;
  }

  // Note [Splitting and merging]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // The blocks of a segment are linked in address order and cover it
  // exactly; a block with a neighbour is_split(). A block larger than the
  // rounded request is cut (split_block) when the rest is worth keeping: in
  // the small pool at least kMinBlockSize, in the large pool more than
  // kSmallSize and only for requests below max_split_size. The rest stays a
  // free block of the same segment and stream, in the pool. An uncut block
  // keeps its whole size (BlockInfo::size above `requested`).
  //
  // A block that becomes free (no longer allocated, no markers pending:
  // is_free()) is merged with each free neighbour (free_block), so no two
  // free blocks are ever adjacent, and a segment whose blocks are all free
  // is one free block again: the only kind of segment that goes back to the
  // vendor (whole_free_segments). Free blocks of split segments are counted
  // as inactive_split while in the pool.
  bool should_split(const Block* b, size_t size) const {
    size_t rest = b->size - size;
    if (b->segment->small) return rest >= kMinBlockSize;
    return size < config.max_split_size && rest > kSmallSize;
  }

  EventHandle get_event(accel_status_t& st) {
    if (!spare_events.empty()) {
      EventHandle e = spare_events.back();
      spare_events.pop_back();
      st = ACCEL_SUCCESS;
      return e;
    }
    EventHandle e = nullptr;
    st = ops.event_create(&e);
    return e;
  }

  // Note [Stream ordering]
  // ~~~~~~~~~~~~~~~~~~~~~~~
  // A segment and all its blocks belong to one stream, the one it was made
  // for; only that stream's requests take its blocks. Freed with no stream
  // or its own, a block is free at once: its stream runs in order, so work
  // queued after the free runs after the work that still used the block.
  // Other streams that used it are named by record_stream() or by a free on
  // another stream (Block::uses). Freeing such a block records one marker
  // (an event of the backend) on each of them; the block then waits,
  // neither allocated nor in a pool, with event_count markers to go. Every
  // allocation first polls the markers (process_events) and frees the
  // blocks whose markers have all completed; a query error counts as
  // completed, so a broken device loses no block. A marker the backend
  // cannot record goes to `unsynced`: the public call synchronizes its
  // stream after letting go of the lock (settle_unsynced). Spare events are
  // reused, except that markers of a destroyed stream are destroyed.
  //
  // A stream about to be destroyed hands its segments to `replacement`
  // (retire_stream): when the stream is not idle, a marker on it first,
  // and its blocks, free or live, and other streams' blocks that named it,
  // wait for that marker. A stream found dead under the lock
  // (DeviceOps::stream_alive) gets nothing filed under it: allocate fails
  // and free answers kStreamDead.
  //
  // A marker on `stream` now, waited for by the blocks later added to the
  // returned entry. When the backend cannot record one, the entry waits in
  // `unsynced` for the public call to synchronize the stream once it has
  // let go of the lock (settle_unsynced).
  Pending* marker(StreamKey stream) {
    accel_status_t st = ACCEL_SUCCESS;
    EventHandle e = get_event(st);
    if (st == ACCEL_SUCCESS && ops.event_record(e, stream) == ACCEL_SUCCESS) {
      pending.push_back(Pending{e, stream, {}});
      return &pending.back();
    }
    if (st == ACCEL_SUCCESS) spare_events.push_back(e);
    unsynced.push_back(Pending{nullptr, stream, {}});
    return &unsynced.back();
  }

  // A block leaves the active set (its markers have completed, or it had
  // none): merged with free neighbours and put in its pool.
  void free_block(Block* b, const void* caller) {
    sub(stats.active, b->kind(), 1);
    sub(stats.active_bytes, b->kind(), static_cast<int64_t>(b->size));
    b->segment->last_used = ++tick;
    history.add(Action::kFreeCompleted, b->ptr, b->size, b->stream, caller);
    if (Block* p = b->prev; p != nullptr && p->is_free()) {
      pool_erase(p);
      b->ptr = p->ptr;
      b->size += p->size;
      b->prev = p->prev;
      if (b->prev != nullptr) {
        b->prev->next = b;
      } else {
        b->segment->head = b;
      }
      recycle(p);
    }
    if (Block* n = b->next; n != nullptr && n->is_free()) {
      pool_erase(n);
      b->size += n->size;
      b->next = n->next;
      if (b->next != nullptr) b->next->prev = b;
      recycle(n);
    }
    pool_insert(b);
  }

  void complete(Pending& p) {
    for (Block* b : p.blocks) {
      if (--b->event_count == 0 && !b->allocated) free_block(b, nullptr);
    }
    if (p.event == nullptr) return;
    // A marker of a destroyed stream goes back to the backend instead of
    // the spares: an OpenCL event keeps its queue alive, and a program that
    // wrapped its own queue expects it released once the wrapper is gone.
    if (p.stream != nullptr && !ops.stream_alive(p.stream)) {
      ops.event_destroy(p.event);
    } else {
      spare_events.push_back(p.event);
    }
  }

  // --- Waiting without the lock ---------------------------------------------
  // No core lock is held while waiting for device work (docs/architecture.md,
  // "Locks and waits"): a host function that the wait depends on may call
  // into this allocator. Each wait below takes what it waits for out of the
  // shared books (so no other thread completes or reuses it meanwhile),
  // unlocks, waits, relocks and re-checks what may have changed.

  // Waits for every pending free's marker. A marker that cannot be waited
  // for (a host function of the device is calling) stays pending.
  void wait_all_events(Lock& lock) {
    std::vector<Pending> taken;
    taken.swap(pending);
    if (taken.empty()) return;
    std::vector<char> done(taken.size());
    lock.unlock();
    for (size_t i = 0; i < taken.size(); ++i)
      done[i] = ops.event_synchronize(taken[i].event) == ACCEL_SUCCESS;
    lock.lock();
    for (size_t i = 0; i < taken.size(); ++i) {
      if (done[i]) {
        complete(taken[i]);
      } else {
        pending.push_back(std::move(taken[i]));
      }
    }
  }

  // Synchronizes the streams of the markers the backend could not record,
  // then completes them. Whatever the outcome the blocks are treated as
  // idle afterwards: a device the allocator cannot wait for is broken anyway.
  void settle_unsynced(Lock& lock) {
    while (!unsynced.empty()) {
      std::vector<Pending> taken;
      taken.swap(unsynced);
      lock.unlock();
      for (Pending& p : taken) {
        if (ops.stream_synchronize(p.stream) != ACCEL_SUCCESS) (void)ops.synchronize();
      }
      lock.lock();
      for (Pending& p : taken) {
        ++stats.num_sync_all_streams;
        complete(p);
      }
    }
  }

  std::vector<SegmentRef> refs(const std::vector<Block*>& blocks) {
    std::vector<SegmentRef> out;
    out.reserve(blocks.size());
    for (const Block* b : blocks) out.push_back({b->segment->base, b->segment->version});
    return out;
  }

  // Returns the chosen segments to the vendor after an unlocked wait for the
  // device (their last work may still be queued on their stream), skipping
  // any that was handed out, changed or released by another thread while
  // the lock was let go.
  accel_status_t release(Lock& lock, const std::vector<SegmentRef>& chosen) {
    if (chosen.empty()) return ACCEL_SUCCESS;
    lock.unlock();
    accel_status_t st = ops.synchronize();
    lock.lock();
    if (st != ACCEL_SUCCESS) return st;
    ++stats.num_sync_all_streams;
    accel_status_t result = ACCEL_SUCCESS;
    for (const SegmentRef& r : chosen) {
      auto it = segments.find(r.base);
      if (it == segments.end() || it->second->version != r.version) continue;
      Block* b = it->second->head;
      if (b->next != nullptr || !b->is_free()) continue;
      if (auto rs = release_segment(b); rs != ACCEL_SUCCESS && result == ACCEL_SUCCESS) result = rs;
    }
    return result;
  }

  // Frees the blocks whose markers have completed.
  void process_events() {
    size_t kept = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      // An error from the query is a broken device: treated as complete so
      // the block is not lost.
      if (ops.event_query(pending[i].event) == ACCEL_ERROR_NOT_READY) {
        if (kept != i) pending[kept] = std::move(pending[i]);
        ++kept;
      } else {
        complete(pending[i]);
      }
    }
    pending.resize(kept);
  }

  // Segments whose single block is free, best first for `order`.
  std::vector<Block*> whole_free_segments() {
    std::vector<Block*> out;
    for (auto& [base, seg] : segments) {
      Block* b = seg->head;
      if (b->next == nullptr && b->is_free()) out.push_back(b);
    }
    return out;
  }

  accel_status_t release_segment(Block* b) {
    Segment* seg = b->segment;
    pool_erase(b);
    if (auto st = ops.raw_free(reinterpret_cast<void*>(seg->base), seg->size);
        st != ACCEL_SUCCESS) {
      pool_insert(b);  // still ours: nothing changes
      return st;
    }
    PoolKind kind = b->kind();
    sub(stats.segment, kind, 1);
    sub(stats.reserved_bytes, kind, static_cast<int64_t>(seg->size));
    if (seg->size >= config.max_split_size) stats.oversize_segments.sub(1);
    ++stats.num_device_free;
    history.add(Action::kSegmentFree, seg->base, seg->size, seg->stream, nullptr);
    segments.erase(seg->base);
    delete seg;
    recycle(b);
    return ACCEL_SUCCESS;
  }

  accel_status_t release_cached(Lock& lock) {
    wait_all_events(lock);
    return release(lock, refs(whole_free_segments()));
  }

  // garbage_collection_threshold: once reserved memory is past the
  // threshold, free the cached segments unused the longest before a new
  // vendor allocation, until the new segment fits under it (or none is
  // left). Below the threshold the cache stays, as in PyTorch.
  void collect_garbage(Lock& lock, size_t incoming) {
    size_t capacity = ops.capacity();
    if (capacity == 0) return;
    auto limit =
        static_cast<int64_t>(config.garbage_collection_threshold * static_cast<double>(capacity));
    int64_t reserved = stats.reserved_bytes[kAll].current;
    if (reserved <= limit) return;
    std::vector<Block*> idle = whole_free_segments();
    std::sort(idle.begin(), idle.end(), [](const Block* a, const Block* b) {
      return a->segment->last_used < b->segment->last_used;
    });
    std::vector<Block*> chosen;
    for (Block* b : idle) {
      if (reserved + static_cast<int64_t>(incoming) <= limit) break;
      chosen.push_back(b);
      reserved -= static_cast<int64_t>(b->size);
    }
    (void)release(lock, refs(chosen));  // a failure leaves them cached; the allocation goes on
  }

  std::string oom_message(size_t bytes) {
    size_t capacity = ops.capacity();
    int64_t allocated = stats.allocated_bytes[kAll].current;
    int64_t reserved = stats.reserved_bytes[kAll].current;
    return fmt::format(
        "tried to allocate {}; the device has a total capacity of {}; {} is allocated by accel "
        "and {} is reserved by accel but unallocated. If reserved but unallocated memory is "
        "large, set ACCEL_ALLOC_CONF=max_split_size_mb:<MiB> to limit fragmentation, or call "
        "accel_empty_cache() where other software shares the device",
        format_bytes(bytes), capacity == 0 ? std::string("unknown") : format_bytes(capacity),
        format_bytes(static_cast<uint64_t>(allocated)),
        format_bytes(static_cast<uint64_t>(reserved - allocated)));
  }

  // A stream destroyed by another thread since the caller checked it: its
  // memory has been retired (or is being), so nothing more is filed under it.
  bool stream_dead(StreamKey stream, std::string& error) {
    if (stream == nullptr || ops.stream_alive(stream)) return false;
    error = "the stream was destroyed by another thread during the call";
    return true;
  }

  // The out-of-memory outcome: counted, recorded in the history, and
  // explained in `error`.
  accel_status_t out_of_memory(size_t bytes, StreamKey stream, const void* caller,
                               std::string& error) {
    ++stats.num_ooms;
    history.add(Action::kOom, 0, bytes, stream, caller);
    error = oom_message(bytes);
    return ACCEL_ERROR_OUT_OF_MEMORY;
  }

  // Note [Out of memory]
  // ~~~~~~~~~~~~~~~~~~~~
  // A request above SIZE_MAX / 4 is refused as out of memory before it is
  // rounded (the rounding would overflow; no device has that much). Past
  // the garbage-collection threshold the longest-unused whole free segments
  // go back to the vendor before a new segment is made (collect_garbage).
  // When the vendor refuses the new segment with ACCEL_ERROR_OUT_OF_MEMORY,
  // grow_pool() retries once (num_alloc_retries): it waits for every pending
  // free's marker and then for the device, both without the lock, returns
  // every whole free segment that nobody took meanwhile (release_cached),
  // looks in the pool again (a completed free may fit now), and else asks
  // the vendor for the segment again, and then for a segment of just the
  // rounded request when that is smaller. Still refused: num_ooms, an oom
  // event in the history, and PyTorch's explanation in `error` (what was
  // asked, the capacity, what accel has allocated and what it reserves
  // unallocated, and what to do). Any other DeviceOps failure is returned
  // as it is, with `error` empty.
  //
  // No cached block fits: a new segment from the vendor, `b` its one block,
  // or `b` from the pool after the cache was freed (Note [Out of memory]).
  accel_status_t grow_pool(Lock& lock, PoolSet& pool, size_t size, size_t bytes, StreamKey stream,
                           const void* caller, Block*& b, std::string& error) {
    size_t seg_size = segment_size(size);
    void* raw = nullptr;
    accel_status_t st = ops.raw_alloc(seg_size, &raw);
    if (st == ACCEL_ERROR_OUT_OF_MEMORY) {
      ++stats.num_alloc_retries;
      (void)release_cached(lock);
      if (stream_dead(stream, error)) return ACCEL_ERROR_INVALID_ARGUMENT;
      b = take_free(pool, stream, size);
      if (b != nullptr) return ACCEL_SUCCESS;
      st = ops.raw_alloc(seg_size, &raw);
      if (st == ACCEL_ERROR_OUT_OF_MEMORY && seg_size > size) {
        // A nearly full (or small) device may still hold the block
        // itself: a segment of exactly the rounded request.
        seg_size = size;
        st = ops.raw_alloc(seg_size, &raw);
      }
    }
    if (st == ACCEL_ERROR_OUT_OF_MEMORY) return out_of_memory(bytes, stream, caller, error);
    if (st != ACCEL_SUCCESS) return st;
    b = new_segment(raw, seg_size, size <= kSmallSize, stream, caller);
    return ACCEL_SUCCESS;
  }

  // Cuts `b` down to `size`; the rest, a free block of `stream` right after
  // it, goes to the pool (Note [Splitting and merging]).
  void split_block(Block* b, size_t size, StreamKey stream) {
    Block* rest = new_block();
    rest->ptr = b->ptr + size;
    rest->size = b->size - size;
    rest->stream = stream;
    rest->segment = b->segment;
    rest->prev = b;
    rest->next = b->next;
    if (rest->next != nullptr) rest->next->prev = rest;
    b->next = rest;
    b->size = size;
    pool_insert(rest);
  }

  // `b` becomes a live allocation of `bytes`: filed by address, counted,
  // recorded in the history.
  void hand_out(Block* b, size_t bytes, StreamKey stream, const void* caller) {
    b->allocated = true;
    b->requested = bytes;
    b->segment->version = ++versions;
    live_insert(b);
    PoolKind kind = b->kind();
    auto sz = static_cast<int64_t>(b->size);
    add(stats.allocation, kind, 1);
    ++stats.lifetime_allocations;
    add(stats.allocated_bytes, kind, sz);
    add(stats.requested_bytes, kind, static_cast<int64_t>(bytes));
    add(stats.active, kind, 1);
    add(stats.active_bytes, kind, sz);
    if (b->size >= config.max_split_size) stats.oversize_allocations.add(1);
    history.add(Action::kAlloc, b->ptr, b->size, stream, caller);
  }

  // See Note [Pools and rounding]: best fit from the stream's own free
  // blocks first, then (past the garbage-collection threshold) after
  // releasing the longest-unused segments, then a new segment.
  accel_status_t allocate(Lock& lock, size_t bytes, StreamKey stream, const void* caller,
                          void** out, std::string& error) {
    error.clear();
    if (stream_dead(stream, error)) return ACCEL_ERROR_INVALID_ARGUMENT;
    if (!pending.empty()) process_events();
    // Sizes near SIZE_MAX would overflow the rounding: no device has them.
    if (bytes > (SIZE_MAX >> 2)) return out_of_memory(bytes, stream, caller, error);
    size_t size = round_size(bytes, config);
    PoolSet& pool = size <= kSmallSize ? small_pool : large_pool;
    Block* b = take_free(pool, stream, size);
    if (b == nullptr && config.garbage_collection_threshold > 0) {
      collect_garbage(lock, segment_size(size));
      // The lock may have been let go: look again (and at the stream).
      if (stream_dead(stream, error)) return ACCEL_ERROR_INVALID_ARGUMENT;
      b = take_free(pool, stream, size);
    }
    if (b == nullptr) {
      if (auto st = grow_pool(lock, pool, size, bytes, stream, caller, b, error);
          st != ACCEL_SUCCESS)
        return st;
    }
    if (should_split(b, size)) split_block(b, size, stream);
    hand_out(b, bytes, stream, caller);
    *out = reinterpret_cast<void*>(b->ptr);
    return ACCEL_SUCCESS;
  }

  Block* new_segment(void* raw, size_t seg_size, bool small, StreamKey stream, const void* caller) {
    auto* seg = new Segment();
    seg->base = reinterpret_cast<uintptr_t>(raw);
    seg->size = seg_size;
    seg->small = small;
    seg->stream = stream;
    Block* b = new_block();
    b->ptr = seg->base;
    b->size = seg_size;
    b->stream = stream;
    b->segment = seg;
    seg->head = b;
    segments.emplace(seg->base, seg);
    PoolKind kind = small ? kSmallPool : kLargePool;
    add(stats.segment, kind, 1);
    add(stats.reserved_bytes, kind, static_cast<int64_t>(seg_size));
    if (seg_size >= config.max_split_size) stats.oversize_segments.add(1);
    ++stats.num_device_alloc;
    history.add(Action::kSegmentAlloc, seg->base, seg_size, stream, caller);
    return b;
  }

  static void add_use(Block* b, StreamKey s) {
    if (s == b->stream) return;
    if (std::find(b->uses.begin(), b->uses.end(), s) == b->uses.end()) b->uses.push_back(s);
  }

  Lookup free(const void* ptr, StreamKey stream, const void* caller, BlockInfo* info) {
    auto p = reinterpret_cast<uintptr_t>(ptr);
    auto it = live.find(p);
    if (it == live.end()) {
      Block* in = live_containing(p);
      if (in == nullptr) return Lookup::kMissing;
      if (info != nullptr) *info = {in->ptr, in->requested, in->size, in->stream};
      return Lookup::kInside;
    }
    if (stream != nullptr && !ops.stream_alive(stream)) return Lookup::kStreamDead;
    Block* b = it->second;
    if (info != nullptr) *info = {b->ptr, b->requested, b->size, b->stream};
    live_erase(it);
    if (stream != nullptr) add_use(b, stream);
    PoolKind kind = b->kind();
    auto sz = static_cast<int64_t>(b->size);
    sub(stats.allocation, kind, 1);
    sub(stats.allocated_bytes, kind, sz);
    sub(stats.requested_bytes, kind, static_cast<int64_t>(b->requested));
    if (b->size >= config.max_split_size) stats.oversize_allocations.sub(1);
    history.add(Action::kFreeRequested, b->ptr, b->size, b->stream, caller);
    b->allocated = false;
    b->requested = 0;
    for (StreamKey s : b->uses) {
      if (Pending* m = marker(s)) {
        m->blocks.push_back(b);
        ++b->event_count;
      }
    }
    b->uses.clear();
    if (b->event_count == 0) free_block(b, caller);
    return Lookup::kFound;
  }

  Lookup record_stream(const void* ptr, StreamKey stream) {
    auto p = reinterpret_cast<uintptr_t>(ptr);
    Block* b = live_containing(p);
    if (b == nullptr) return Lookup::kMissing;
    if (!ops.stream_alive(stream)) return Lookup::kStreamDead;
    add_use(b, stream);
    return b->ptr == p ? Lookup::kFound : Lookup::kInside;
  }

  accel_status_t empty_cache(Lock& lock) {
    settle_unsynced(lock);
    wait_all_events(lock);
    // The spare markers go back too: empty_cache returns what it can.
    for (EventHandle e : spare_events) ops.event_destroy(e);
    spare_events.clear();
    auto st = release(lock, refs(whole_free_segments()));
    history.add(Action::kEmptyCache, 0, 0, nullptr, nullptr);
    return st;
  }

  accel_status_t retire_stream(StreamKey stream, StreamKey replacement) {
    // Spare markers may have been recorded on the stream last, and hold a
    // reference to its native queue (OpenCL): they go back to the backend.
    for (EventHandle e : spare_events) ops.event_destroy(e);
    spare_events.clear();
    // Blocks owned by the stream, and blocks of other streams that name it
    // in their uses: all wait for the stream's last work before moving on.
    std::vector<Block*> affected;
    for (auto& [base, seg] : segments) {
      for (Block* b = seg->head; b != nullptr; b = b->next) {
        auto use = std::find(b->uses.begin(), b->uses.end(), stream);
        if (seg->stream == stream || use != b->uses.end()) affected.push_back(b);
      }
    }
    if (affected.empty()) return ACCEL_SUCCESS;
    // nullptr: the stream is idle, or the device was synchronized instead.
    Pending* m = ops.stream_idle(stream) ? nullptr : marker(stream);
    for (Block* b : affected) {
      b->uses.erase(std::remove(b->uses.begin(), b->uses.end(), stream), b->uses.end());
      if (b->segment->stream != stream) {
        // Another stream's live block that named this one: its free waits.
        if (m != nullptr) {
          m->blocks.push_back(b);
          ++b->event_count;
        }
        continue;
      }
      if (b->is_free()) {
        pool_erase(b);  // under its old key
        b->stream = replacement;
        if (m == nullptr) {
          pool_insert(b);
          continue;
        }
        // Pending until the marker completes, as a freed block is.
        add(stats.active, b->kind(), 1);
        add(stats.active_bytes, b->kind(), static_cast<int64_t>(b->size));
      } else {
        b->stream = replacement;
      }
      if (m != nullptr) {
        m->blocks.push_back(b);
        ++b->event_count;
      }
    }
    for (auto& [base, seg] : segments) {
      if (seg->stream == stream) {
        seg->stream = replacement;
        seg->version = ++versions;
      }
    }
    return ACCEL_SUCCESS;
  }

  std::string check_invariants();
  std::string snapshot(std::string (*stream_name)(StreamKey),
                       std::string (*stream_label)(StreamKey));
};

DeviceAllocator::DeviceAllocator(DeviceOps& ops, const Config& config)
    : impl_(std::make_unique<Impl>(ops, config)) {}

DeviceAllocator::~DeviceAllocator() {
  for (auto& [base, seg] : impl_->segments) {
    for (Block* b = seg->head; b != nullptr;) {
      Block* n = b->next;
      delete b;
      b = n;
    }
    delete seg;
  }
  for (Block* b : impl_->spare_blocks) delete b;
  for (EventHandle e : impl_->spare_events) impl_->ops.event_destroy(e);
  for (Pending& p : impl_->pending) impl_->ops.event_destroy(p.event);
}

accel_status_t DeviceAllocator::allocate(size_t bytes, StreamKey stream, const void* caller,
                                         void** out, std::string& error) {
  Lock lock(impl_->mutex);
  return impl_->allocate(lock, bytes, stream, caller, out, error);
}

Lookup DeviceAllocator::free(const void* ptr, StreamKey stream, const void* caller,
                             BlockInfo* info) {
  Lock lock(impl_->mutex);
  Lookup found = impl_->free(ptr, stream, caller, info);
  impl_->settle_unsynced(lock);
  return found;
}

Lookup DeviceAllocator::record_stream(const void* ptr, StreamKey stream) {
  std::lock_guard lock(impl_->mutex);
  return impl_->record_stream(ptr, stream);
}

bool DeviceAllocator::find(const void* p, BlockInfo& out) {
  std::lock_guard lock(impl_->mutex);
  Block* b = impl_->live_containing(reinterpret_cast<uintptr_t>(p));
  if (b == nullptr) return false;
  out = {b->ptr, b->requested, b->size, b->stream};
  return true;
}

accel_status_t DeviceAllocator::empty_cache() {
  Lock lock(impl_->mutex);
  return impl_->empty_cache(lock);
}

accel_status_t DeviceAllocator::retire_stream(StreamKey stream, StreamKey replacement) {
  Lock lock(impl_->mutex);
  accel_status_t st = impl_->retire_stream(stream, replacement);
  impl_->settle_unsynced(lock);
  return st;
}

Stats DeviceAllocator::stats() {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

void DeviceAllocator::reset_peak() {
  std::lock_guard lock(impl_->mutex);
  impl_->stats.reset_peak();
}

void DeviceAllocator::reset_accumulated() {
  std::lock_guard lock(impl_->mutex);
  impl_->stats.reset_accumulated();
}

void DeviceAllocator::set_history(size_t max_entries) {
  std::lock_guard lock(impl_->mutex);
  impl_->history.resize(max_entries);
}

std::mutex& DeviceAllocator::mutex() { return impl_->mutex; }

std::string DeviceAllocator::snapshot(std::string (*stream_name)(StreamKey),
                                      std::string (*stream_label)(StreamKey)) {
  std::lock_guard lock(impl_->mutex);
  return impl_->snapshot(stream_name, stream_label);
}

std::string DeviceAllocator::check_invariants() {
  std::lock_guard lock(impl_->mutex);
  return impl_->check_invariants();
}

std::string DeviceAllocator::Impl::snapshot(std::string (*stream_name)(StreamKey),
                                            std::string (*stream_label)(StreamKey)) {
  // Frees whose markers have completed (a synchronize just before, say) are
  // finished first, without waiting for any, so the snapshot and its
  // statistics show only frees still waiting for stream work.
  if (!pending.empty()) process_events();
  nlohmann::json j = nlohmann::json::object();
  j["allocator"] = config.caching ? "caching" : "native";
  j["config"] = describe(config);
  std::vector<NamedValue> flat;
  flatten(stats, flat);
  auto& st = j["stats"] = nlohmann::json::object();
  for (const NamedValue& v : flat) st[v.name] = v.value;
  auto& segs = j["segments"] = nlohmann::json::array();
  for (auto& [base, seg] : segments) {
    nlohmann::json blocks = nlohmann::json::array();
    uint64_t allocated = 0, active = 0, requested = 0;
    for (Block* b = seg->head; b != nullptr; b = b->next) {
      const char* state = b->allocated         ? "active_allocated"
                          : b->event_count > 0 ? "active_pending_free"
                                               : "inactive";
      if (b->allocated) {
        allocated += b->size;
        requested += b->requested;
      }
      if (!b->is_free()) active += b->size;
      blocks.push_back({{"address", b->ptr},
                        {"size", b->size},
                        {"requested_size", b->requested},
                        {"state", state}});
    }
    segs.push_back({{"address", seg->base},
                    {"total_size", seg->size},
                    {"allocated_size", allocated},
                    {"active_size", active},
                    {"requested_size", requested},
                    {"stream", stream_name(seg->stream)},
                    {"segment_type", seg->small ? "small" : "large"},
                    {"blocks", std::move(blocks)}});
    if (stream_label != nullptr) {
      if (std::string label = stream_label(seg->stream); !label.empty())
        segs.back()["stream_name"] = std::move(label);
    }
  }
  history.to_json(j["history"], stream_name, stream_label);
  return j.dump();
}

std::string DeviceAllocator::Impl::check_invariants() {
  Stats want;
  size_t free_in_pools = 0;
  for (auto& [base, seg] : segments) {
    if (seg->base != base) return fmt::format("segment {:#x} filed under {:#x}", seg->base, base);
    if (seg->head == nullptr || seg->head->prev != nullptr || seg->head->ptr != base)
      return fmt::format("segment {:#x}: bad head block", base);
    PoolKind kind = seg->small ? kSmallPool : kLargePool;
    add(want.segment, kind, 1);
    add(want.reserved_bytes, kind, static_cast<int64_t>(seg->size));
    uintptr_t at = base;
    for (Block* b = seg->head; b != nullptr; b = b->next) {
      if (b->segment != seg) return fmt::format("block {:#x}: wrong segment", b->ptr);
      if (b->ptr != at) return fmt::format("block {:#x}: expected at {:#x}", b->ptr, at);
      if (b->next != nullptr && b->next->prev != b)
        return fmt::format("block {:#x}: broken links", b->ptr);
      if (b->stream != seg->stream)
        return fmt::format("block {:#x}: stream differs from its segment's", b->ptr);
      if (b->size == 0 || b->size % kMinBlockSize != 0)
        return fmt::format("block {:#x}: size {}", b->ptr, b->size);
      at += b->size;
      bool in_pool = pool_of(b).count(b) != 0;
      if (b->is_free() != in_pool)
        return fmt::format("block {:#x}: free={} but in pool={}", b->ptr, b->is_free(), in_pool);
      if (b->is_free() && b->next != nullptr && b->next->is_free())
        return fmt::format("blocks {:#x} and {:#x}: free neighbours not merged", b->ptr,
                           b->next->ptr);
      bool is_live = live.count(b->ptr) != 0 && live.at(b->ptr) == b;
      if (b->allocated != is_live)
        return fmt::format("block {:#x}: allocated={} but live={}", b->ptr, b->allocated, is_live);
      auto sz = static_cast<int64_t>(b->size);
      if (b->allocated) {
        if (b->requested == 0 || b->requested > b->size)
          return fmt::format("block {:#x}: requested {} of {}", b->ptr, b->requested, b->size);
        add(want.allocation, kind, 1);
        add(want.allocated_bytes, kind, sz);
        add(want.requested_bytes, kind, static_cast<int64_t>(b->requested));
      }
      if (!b->is_free()) {
        add(want.active, kind, 1);
        add(want.active_bytes, kind, sz);
      } else {
        ++free_in_pools;
        if (b->is_split()) {
          add(want.inactive_split, kind, 1);
          add(want.inactive_split_bytes, kind, sz);
        }
      }
    }
    if (at != base + seg->size) return fmt::format("segment {:#x}: blocks do not cover it", base);
  }
  if (free_in_pools != small_pool.size() + large_pool.size())
    return fmt::format("pools hold {} blocks, segments {} free ones",
                       small_pool.size() + large_pool.size(), free_in_pools);
  struct Pair {
    const char* name;
    const StatArray& have;
    const StatArray& want;
  };
  for (const Pair& p :
       {Pair{"allocation", stats.allocation, want.allocation},
        Pair{"segment", stats.segment, want.segment}, Pair{"active", stats.active, want.active},
        Pair{"inactive_split", stats.inactive_split, want.inactive_split},
        Pair{"allocated_bytes", stats.allocated_bytes, want.allocated_bytes},
        Pair{"reserved_bytes", stats.reserved_bytes, want.reserved_bytes},
        Pair{"active_bytes", stats.active_bytes, want.active_bytes},
        Pair{"inactive_split_bytes", stats.inactive_split_bytes, want.inactive_split_bytes},
        Pair{"requested_bytes", stats.requested_bytes, want.requested_bytes}}) {
    for (size_t k = 0; k < kPoolKinds; ++k) {
      if (p.have[k].current != p.want[k].current)
        return fmt::format("{}[{}].current is {}, the blocks say {}", p.name, k, p.have[k].current,
                           p.want[k].current);
      if (p.have[k].peak < p.have[k].current)
        return fmt::format("{}[{}]: peak {} below current {}", p.name, k, p.have[k].peak,
                           p.have[k].current);
    }
  }
  return {};
}

}  // namespace accel::alloc
