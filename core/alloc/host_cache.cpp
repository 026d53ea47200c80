#include "host_cache.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <deque>
#include <map>
#include <vector>

namespace accel::alloc {

size_t host_block_size(size_t bytes) {
  if (bytes <= kHostMinBlock) return kHostMinBlock;
  if (bytes > (SIZE_MAX >> 1) + 1) return 0;  // the next power of two would not fit
  return std::bit_ceil(bytes);
}

namespace {

enum class State {
  kLive,     // handed out
  kPending,  // freed, in the pending queue: markers not yet recorded or complete
  kWaiting,  // freed, its markers waited for by empty_cache (in no list)
  kFree,     // in its free list, reusable
};

struct Block {
  uintptr_t base = 0;
  size_t size = 0;       // a power of two
  size_t requested = 0;  // while live
  State state = State::kLive;
  // Streams that used the block and have no marker yet.
  std::vector<StreamKey> streams;
  // Markers recorded and not yet seen complete.
  std::vector<EventHandle> events;
};

size_t size_class(size_t size) { return static_cast<size_t>(std::countr_zero(size)); }

const char* state_name(State s) {
  switch (s) {
    case State::kLive:
      return "live";
    case State::kPending:
      return "pending";
    case State::kWaiting:
      return "waiting";
    case State::kFree:
      return "free";
  }
  return "?";
}

}  // namespace

struct HostCache::Impl {
  explicit Impl(HostOps& o) : ops(o) {}

  HostOps& ops;
  // Never held while waiting for device work (docs/architecture.md, "Locks
  // and waits"): empty_cache waits for its blocks in the kWaiting state.
  std::mutex mu;
  // Every block the cache owns, by base address. Blocks on their way back to
  // the backend are removed first (and put back if the backend refuses).
  std::map<uintptr_t, Block*> blocks;
  // Free blocks by size class (log2 of the size); the last freed is reused
  // first, its pages the likeliest to be warm.
  std::array<std::vector<Block*>, 64> free_lists;
  // Freed blocks waiting for their markers, oldest free first.
  std::deque<Block*> pending;
  HostStats stats;
  // Blocks with a non-empty `streams`: retire_stream has nothing to do at 0.
  size_t with_streams = 0;

  // The block holding `p` (any state), or nullptr.
  Block* containing(uintptr_t p) {
    auto it = blocks.upper_bound(p);
    if (it == blocks.begin()) return nullptr;
    --it;
    Block* b = it->second;
    return p - b->base < b->size ? b : nullptr;
  }

  void drop_stream(Block* b, size_t i) {
    b->streams.erase(b->streams.begin() + static_cast<ptrdiff_t>(i));
    if (b->streams.empty()) --with_streams;
  }

  // Records a marker on `stream` for `b`. On failure nothing changes.
  accel_status_t mark_one(Block* b, StreamKey stream) {
    EventHandle ev = nullptr;
    accel_status_t st = ops.event_create(stream, &ev);
    if (st != ACCEL_SUCCESS) return st;
    st = ops.event_record(ev, stream);
    if (st != ACCEL_SUCCESS) {
      ops.event_destroy(ev);
      return st;
    }
    b->events.push_back(ev);
    return ACCEL_SUCCESS;
  }

  // Turns the block's streams into markers; the ones that fail stay in
  // `streams` for the next try. Returns the first failure.
  accel_status_t mark(Block* b) {
    accel_status_t first = ACCEL_SUCCESS;
    for (size_t i = 0; i < b->streams.size();) {
      accel_status_t st = mark_one(b, b->streams[i]);
      if (st == ACCEL_SUCCESS) {
        drop_stream(b, i);
      } else {
        if (first == ACCEL_SUCCESS) first = st;
        ++i;
      }
    }
    return first;
  }

  // Drops the markers that have completed; true when none is left.
  bool poll(Block* b) {
    auto& evs = b->events;
    for (size_t i = 0; i < evs.size();) {
      if (ops.event_query(evs[i]) == ACCEL_SUCCESS) {
        ops.event_destroy(evs[i]);
        evs.erase(evs.begin() + static_cast<ptrdiff_t>(i));
      } else {
        // Pending, or an error: either way not known to be done.
        ++i;
      }
    }
    return evs.empty();
  }

  void to_free_list(Block* b) {
    b->state = State::kFree;
    b->requested = 0;
    free_lists[size_class(b->size)].push_back(b);
  }

  // Moves the blocks whose markers have all completed to the free lists,
  // oldest first, stopping at the first that is not done.
  void process_pending() {
    while (!pending.empty()) {
      Block* b = pending.front();
      if (!b->streams.empty()) {
        mark(b);
        if (!b->streams.empty()) return;
      }
      if (!poll(b)) return;
      pending.pop_front();
      to_free_list(b);
    }
  }

  // Takes every free block out of the cache's books, for raw_free outside
  // the lock.
  std::vector<Block*> take_free_blocks() {
    std::vector<Block*> out;
    for (auto& list : free_lists) {
      for (Block* b : list) {
        blocks.erase(b->base);
        stats.segment.sub(1);
        stats.reserved_bytes.sub(static_cast<int64_t>(b->size));
        out.push_back(b);
      }
      list.clear();
    }
    return out;
  }

  // Returns `victims` to the backend, without the lock. The ones it refuses
  // go back to the free lists. Returns the first failure.
  accel_status_t release(std::vector<Block*>& victims) {
    accel_status_t first = ACCEL_SUCCESS;
    std::vector<Block*> kept;
    int64_t freed = 0;
    for (Block* b : victims) {
      accel_status_t st = ops.raw_free(reinterpret_cast<void*>(b->base));
      if (st == ACCEL_SUCCESS) {
        delete b;
        ++freed;
      } else {
        if (first == ACCEL_SUCCESS) first = st;
        kept.push_back(b);
      }
    }
    std::lock_guard lock(mu);
    stats.num_host_free += freed;
    for (Block* b : kept) {
      blocks.emplace(b->base, b);
      stats.segment.add(1);
      stats.reserved_bytes.add(static_cast<int64_t>(b->size));
      to_free_list(b);
    }
    return first;
  }

  void hand_out(Block* b, size_t bytes) {
    b->state = State::kLive;
    b->requested = bytes;
    stats.allocation.add(1);
    stats.allocated_bytes.add(static_cast<int64_t>(b->size));
  }
};

HostCache::HostCache(HostOps& ops) : impl_(std::make_unique<Impl>(ops)) {}

HostCache::~HostCache() {
  for (auto& [base, b] : impl_->blocks) {
    for (EventHandle ev : b->events) impl_->ops.event_destroy(ev);
    delete b;
  }
}

std::mutex& HostCache::mutex() { return impl_->mu; }

accel_status_t HostCache::allocate(size_t bytes, void** out) {
  Impl& m = *impl_;
  size_t size = host_block_size(bytes);
  if (size == 0) return ACCEL_ERROR_OUT_OF_MEMORY;
  {
    std::lock_guard lock(m.mu);
    m.process_pending();
    auto& list = m.free_lists[size_class(size)];
    if (!list.empty()) {
      Block* b = list.back();
      list.pop_back();
      m.hand_out(b, bytes);
      *out = reinterpret_cast<void*>(b->base);
      return ACCEL_SUCCESS;
    }
  }
  // Pinning is slow: other threads keep using the cache meanwhile.
  void* p = nullptr;
  accel_status_t st = m.ops.raw_alloc(size, &p);
  if (st == ACCEL_ERROR_OUT_OF_MEMORY) {
    std::vector<Block*> idle;
    {
      std::lock_guard lock(m.mu);
      m.process_pending();
      idle = m.take_free_blocks();
    }
    if (!idle.empty()) {
      m.release(idle);
      st = m.ops.raw_alloc(size, &p);
    }
  }
  if (st != ACCEL_SUCCESS) return st;
  if (p == nullptr) return ACCEL_ERROR_INTERNAL;
  auto* b = new Block;
  b->base = reinterpret_cast<uintptr_t>(p);
  b->size = size;
  {
    std::lock_guard lock(m.mu);
    if (m.containing(b->base) != nullptr || m.containing(b->base + size - 1) != nullptr) {
      // The backend handed out memory the cache still owns: never reuse it
      // twice.
      delete b;
      return ACCEL_ERROR_INTERNAL;
    }
    m.blocks.emplace(b->base, b);
    m.stats.segment.add(1);
    m.stats.reserved_bytes.add(static_cast<int64_t>(size));
    ++m.stats.num_host_alloc;
    m.hand_out(b, bytes);
  }
  *out = p;
  return ACCEL_SUCCESS;
}

Lookup HostCache::free(const void* ptr, HostBlockInfo* info) {
  Impl& m = *impl_;
  auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard lock(m.mu);
  Block* b = m.containing(p);
  if (b == nullptr || b->state != State::kLive) return Lookup::kMissing;
  if (info != nullptr) *info = {b->base, b->requested, b->size};
  if (b->base != p) return Lookup::kInside;
  m.stats.allocation.sub(1);
  m.stats.allocated_bytes.sub(static_cast<int64_t>(b->size));
  m.mark(b);
  if (b->streams.empty() && b->events.empty()) {
    m.to_free_list(b);
  } else {
    b->state = State::kPending;
    m.pending.push_back(b);
  }
  return Lookup::kFound;
}

Lookup HostCache::record_use(const void* ptr, StreamKey stream) {
  Impl& m = *impl_;
  auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard lock(m.mu);
  Block* b = m.containing(p);
  if (b == nullptr || b->state != State::kLive || p - b->base >= b->requested)
    return Lookup::kMissing;
  if (std::find(b->streams.begin(), b->streams.end(), stream) == b->streams.end()) {
    if (b->streams.empty()) ++m.with_streams;
    b->streams.push_back(stream);
  }
  return b->base == p ? Lookup::kFound : Lookup::kInside;
}

accel_status_t HostCache::retire_stream(StreamKey stream) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  accel_status_t first = ACCEL_SUCCESS;
  if (m.with_streams == 0) return first;
  for (auto& [base, b] : m.blocks) {
    auto it = std::find(b->streams.begin(), b->streams.end(), stream);
    if (it == b->streams.end()) continue;
    accel_status_t st = m.mark_one(b, stream);
    if (st == ACCEL_SUCCESS) {
      m.drop_stream(b, static_cast<size_t>(it - b->streams.begin()));
    } else if (first == ACCEL_SUCCESS) {
      first = st;
    }
  }
  return first;
}

bool HostCache::find(const void* p, HostBlockInfo& out) {
  Impl& m = *impl_;
  auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(m.mu);
  Block* b = m.containing(a);
  if (b == nullptr || b->state != State::kLive || a - b->base >= b->requested) return false;
  out = {b->base, b->requested, b->size};
  return true;
}

accel_status_t HostCache::empty_cache() {
  Impl& m = *impl_;
  accel_status_t first = ACCEL_SUCCESS;
  auto note = [&](accel_status_t st) {
    if (first == ACCEL_SUCCESS && st != ACCEL_SUCCESS && st != ACCEL_ERROR_NOT_READY) first = st;
  };
  // Blocks whose markers are all recorded are taken out of the queue and
  // waited for without the lock: a host function that allocates pinned
  // memory may be what one of those markers waits for.
  std::vector<Block*> waiting;
  {
    std::lock_guard lock(m.mu);
    m.process_pending();
    std::deque<Block*> still;
    for (Block* b : m.pending) {
      note(m.mark(b));
      if (b->streams.empty()) {
        b->state = State::kWaiting;
        waiting.push_back(b);
      } else {
        still.push_back(b);
      }
    }
    m.pending.swap(still);
  }
  // Which markers completed; only this thread touches waiting blocks.
  std::vector<std::vector<bool>> done(waiting.size());
  for (size_t i = 0; i < waiting.size(); ++i) {
    for (EventHandle ev : waiting[i]->events) {
      accel_status_t st = m.ops.event_synchronize(ev);
      note(st);
      done[i].push_back(st == ACCEL_SUCCESS);
    }
  }
  std::vector<Block*> victims;
  {
    std::lock_guard lock(m.mu);
    std::deque<Block*> back;
    for (size_t i = 0; i < waiting.size(); ++i) {
      Block* b = waiting[i];
      std::vector<EventHandle> left;
      for (size_t j = 0; j < b->events.size(); ++j) {
        if (done[i][j]) {
          m.ops.event_destroy(b->events[j]);
        } else {
          left.push_back(b->events[j]);
        }
      }
      b->events.swap(left);
      if (b->events.empty() && b->streams.empty()) {
        m.to_free_list(b);
      } else {
        b->state = State::kPending;
        back.push_back(b);
      }
    }
    // They were freed before anything still queued.
    m.pending.insert(m.pending.begin(), back.begin(), back.end());
    victims = m.take_free_blocks();
  }
  note(m.release(victims));
  return first;
}

HostStats HostCache::stats() {
  std::lock_guard lock(impl_->mu);
  return impl_->stats;
}

std::string HostCache::check_invariants() {
  Impl& m = *impl_;
  std::lock_guard lock(m.mu);
  std::string err;
  auto bad = [&](const std::string& s) {
    if (err.empty()) err = s;
  };
  int64_t live = 0, live_bytes = 0, reserved = 0, with_streams = 0;
  size_t n_free = 0, n_pending = 0;
  uintptr_t end_of_previous = 0;
  for (auto& [base, b] : m.blocks) {
    if (base != b->base) bad(fmt::format("block {:#x} filed under {:#x}", b->base, base));
    if (b->size < kHostMinBlock || !std::has_single_bit(b->size))
      bad(fmt::format("block {:#x}: size {} is not a power of two >= {}", base, b->size,
                      kHostMinBlock));
    if (base < end_of_previous) bad(fmt::format("block {:#x} overlaps the one before", base));
    end_of_previous = base + b->size;
    reserved += static_cast<int64_t>(b->size);
    if (!b->streams.empty()) ++with_streams;
    switch (b->state) {
      case State::kLive:
        ++live;
        live_bytes += static_cast<int64_t>(b->size);
        if (b->requested == 0 || b->requested > b->size || host_block_size(b->requested) != b->size)
          bad(fmt::format("live block {:#x}: {} bytes requested in a block of {}", base,
                          b->requested, b->size));
        break;
      case State::kFree:
        ++n_free;
        if (!b->streams.empty() || !b->events.empty())
          bad(fmt::format("free block {:#x} still has markers or streams", base));
        if (std::count(m.free_lists[size_class(b->size)].begin(),
                       m.free_lists[size_class(b->size)].end(), b) != 1)
          bad(fmt::format("free block {:#x} is not once in its free list", base));
        break;
      case State::kPending:
        ++n_pending;
        if (std::count(m.pending.begin(), m.pending.end(), b) != 1)
          bad(fmt::format("pending block {:#x} is not once in the queue", base));
        break;
      case State::kWaiting:
        break;
    }
  }
  size_t listed = 0;
  for (auto& list : m.free_lists) {
    listed += list.size();
    for (Block* b : list) {
      auto it = m.blocks.find(b->base);
      if (it == m.blocks.end() || it->second != b || b->state != State::kFree)
        bad(fmt::format("free list holds block {:#x} in state {}", b->base, state_name(b->state)));
    }
  }
  if (listed != n_free) bad(fmt::format("{} free blocks, {} in free lists", n_free, listed));
  if (m.pending.size() != n_pending)
    bad(fmt::format("{} pending blocks, {} queued", n_pending, m.pending.size()));
  if (static_cast<size_t>(with_streams) != m.with_streams)
    bad(fmt::format("{} blocks with streams, counter says {}", with_streams, m.with_streams));
  const HostStats& s = m.stats;
  auto check = [&](const char* name, const Stat& st, int64_t want) {
    if (st.current != want)
      bad(fmt::format("{}.current is {}, blocks say {}", name, st.current, want));
    if (st.current != st.allocated - st.freed)
      bad(fmt::format("{}: current {} != allocated {} - freed {}", name, st.current, st.allocated,
                      st.freed));
    if (st.peak < st.current)
      bad(fmt::format("{}: peak {} < current {}", name, st.peak, st.current));
  };
  check("allocation", s.allocation, live);
  check("allocated_bytes", s.allocated_bytes, live_bytes);
  check("segment", s.segment, static_cast<int64_t>(m.blocks.size()));
  check("reserved_bytes", s.reserved_bytes, reserved);
  if (s.num_host_alloc - s.num_host_free != s.segment.current)
    bad(fmt::format("num_host_alloc {} - num_host_free {} != segment.current {}", s.num_host_alloc,
                    s.num_host_free, s.segment.current));
  return err;
}

}  // namespace accel::alloc
