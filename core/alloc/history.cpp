#include "history.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace accel::alloc {

const char* action_name(Action a) {
  switch (a) {
    case Action::kAlloc:
      return "alloc";
    case Action::kFreeRequested:
      return "free_requested";
    case Action::kFreeCompleted:
      return "free_completed";
    case Action::kSegmentAlloc:
      return "segment_alloc";
    case Action::kSegmentFree:
      return "segment_free";
    case Action::kEmptyCache:
      return "empty_cache";
    case Action::kOom:
      return "oom";
  }
  return "unknown";
}

void History::resize(size_t max_entries) {
  ring_.clear();
  ring_.shrink_to_fit();
  ring_.reserve(std::min<size_t>(max_entries, 4096));
  max_ = max_entries;
  next_ = 0;
  dropped_ = 0;
}

void History::push(Action a, uintptr_t address, size_t size, const void* stream,
                   const void* caller) {
  auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
                 .count();
  HistoryEvent e{a, address, size, stream, static_cast<int64_t>(now), caller};
  if (ring_.size() < max_) {
    ring_.push_back(e);
    return;
  }
  ring_[next_] = e;
  next_ = (next_ + 1) % max_;
  ++dropped_;
}

void History::to_json(nlohmann::json& out, std::string (*stream_name)(const void*),
                      std::string (*stream_label)(const void*)) const {
  out = nlohmann::json::object();
  out["max_entries"] = max_;
  out["dropped"] = dropped_;
  auto& events = out["events"] = nlohmann::json::array();
  for (size_t i = 0; i < ring_.size(); ++i) {
    const HistoryEvent& e = ring_[(next_ + i) % ring_.size()];
    events.push_back({{"action", action_name(e.action)},
                      {"address", e.address},
                      {"size", e.size},
                      {"stream", e.stream != nullptr ? stream_name(e.stream) : std::string()},
                      {"time_us", e.time_us},
                      {"caller", e.caller != nullptr ? describe_caller(e.caller) : std::string()}});
    if (e.stream != nullptr && stream_label != nullptr) {
      if (std::string label = stream_label(e.stream); !label.empty())
        events.back()["stream_name"] = std::move(label);
    }
  }
}

std::string describe_caller(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return fmt::format("{}", address);
  std::string_view file = info.dli_fname;
  if (auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  auto offset = reinterpret_cast<uintptr_t>(address) - reinterpret_cast<uintptr_t>(info.dli_fbase);
  if (info.dli_sname != nullptr && info.dli_saddr != nullptr) {
    auto sym_offset =
        reinterpret_cast<uintptr_t>(address) - reinterpret_cast<uintptr_t>(info.dli_saddr);
    return fmt::format("{}+{:#x} ({}+{:#x})", file, offset, info.dli_sname, sym_offset);
  }
  return fmt::format("{}+{:#x}", file, offset);
}

}  // namespace accel::alloc
