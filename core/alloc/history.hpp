// The allocator's recent events, kept for the snapshot when
// accel_record_memory_history asked for them (a ring of the last N).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace accel::alloc {

enum class Action : uint8_t {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kEmptyCache,
  kOom,
};

const char* action_name(Action a);

struct HistoryEvent {
  Action action;
  uintptr_t address;
  size_t size;
  const void* stream;
  int64_t time_us;  // system_clock, microseconds since the epoch
  const void* caller;
};

class History {
 public:
  // 0: off (drops what was kept).
  void resize(size_t max_entries);
  bool on() const { return max_ != 0; }
  void add(Action a, uintptr_t address, size_t size, const void* stream, const void* caller) {
    if (max_ != 0) [[unlikely]]
      push(a, address, size, stream, caller);
  }
  // {"max_entries", "dropped", "events": [...]}, oldest first; an event's
  // "stream_name" is `stream_label`'s answer, when it is given and not empty.
  void to_json(nlohmann::json& out, std::string (*stream_name)(const void*),
               std::string (*stream_label)(const void*) = nullptr) const;

 private:
  void push(Action a, uintptr_t address, size_t size, const void* stream, const void* caller);
  std::vector<HistoryEvent> ring_;
  size_t max_ = 0;
  size_t next_ = 0;  // where the next event goes once the ring is full
  uint64_t dropped_ = 0;
};

// "libfoo.so+0x1234 (symbol+0x10)" for a code address, from dladdr.
std::string describe_caller(const void* address);

}  // namespace accel::alloc
