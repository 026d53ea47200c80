// memory.cpp - `accelctl memory`: the caching allocator's configuration and
// statistics for each device, a snapshot written to a file, and a summary of
// a snapshot file (docs/memory.md has the snapshot's schema).
#include <accel/accel.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "info.hpp"

namespace accelctl {
namespace {

using nlohmann::json;

// The snapshot shape this summary understands (accel_memory_snapshot's
// "schema_version").
constexpr int64_t kSnapshotSchemaVersion = 1;

// The block states of the snapshot, in the order they are printed.
constexpr const char* kBlockStates[] = {"active_allocated", "active_pending_free", "inactive"};

// "123456 bytes (120.56 KiB)": exact bytes first, the rounded unit for people.
std::string bytes_text(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  if (bytes < (int64_t{1} << 20)) return fmt::format("{} bytes ({:.2f} KiB)", bytes, b / 1024.0);
  if (bytes < (int64_t{1} << 30))
    return fmt::format("{} bytes ({:.2f} MiB)", bytes, b / (1024.0 * 1024.0));
  return fmt::format("{} bytes ({})", bytes, gib_string(static_cast<uint64_t>(bytes)));
}

// --- accelctl memory (the live allocator of this process) ----------------------

// The statistics the text output shows, as [label, stat with current/peak].
constexpr std::pair<const char*, const char*> kMainStats[] = {
    {"allocated", "allocated_bytes.all"},
    {"reserved", "reserved_bytes.all"},
    {"active", "active_bytes.all"},
    {"requested", "requested_bytes.all"},
};

// accel_memory_stats_list of one device, by name; the detail on failure.
bool gather_stats(int32_t device, std::map<std::string, int64_t>& out, std::string& error) {
  size_t count = 0;
  accel_status_t st = accel_memory_stats_list(device, nullptr, 0, &count);
  if (st != ACCEL_SUCCESS) {
    error = failure_detail("accel_memory_stats_list", st);
    return false;
  }
  std::vector<accel_memory_stat_t> list(count);
  size_t written = 0;
  st = accel_memory_stats_list(device, list.data(), list.size(), &written);
  if (st != ACCEL_SUCCESS) {
    error = failure_detail("accel_memory_stats_list", st);
    return false;
  }
  for (size_t i = 0; i < written && i < list.size(); ++i)
    if (list[i].name != nullptr) out[list[i].name] = list[i].value;
  return true;
}

int64_t stat_or_zero(const std::map<std::string, int64_t>& stats, const std::string& name) {
  const auto it = stats.find(name);
  return it != stats.end() ? it->second : 0;
}

// accel_memory_snapshot of `device` (negative: current). The snapshot may
// grow between the length query and the copy: ask again, a few times.
bool read_snapshot(int32_t device, std::string& out, std::string& error) {
  size_t length = 0;
  accel_status_t st = accel_memory_snapshot(device, nullptr, 0, &length);
  if (st != ACCEL_SUCCESS && st != ACCEL_ERROR_OUT_OF_RANGE) {
    error = failure_detail("accel_memory_snapshot", st);
    return false;
  }
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string text(length + 1 + length / 8 + 4096, '\0');
    st = accel_memory_snapshot(device, text.data(), text.size(), &length);
    if (st == ACCEL_SUCCESS) {
      text.resize(length);
      out = std::move(text);
      return true;
    }
    if (st != ACCEL_ERROR_OUT_OF_RANGE) {
      error = failure_detail("accel_memory_snapshot", st);
      return false;
    }
  }
  error = "accel_memory_snapshot: the snapshot kept growing faster than it could be read";
  return false;
}

// The allocator's configuration as the core parsed it (the snapshot's
// "config"); "" when it cannot tell.
std::string config_text(int32_t device) {
  std::string text, error;
  if (!read_snapshot(device, text, error)) return "";
  try {
    const json j = json::parse(text);
    if (j.is_object() && j.contains("config") && j["config"].is_string())
      return j["config"].get<std::string>();
  } catch (const std::exception&) {
  }
  return "";
}

int run_live(bool as_json) {
  const char* backend = accel_get_allocator_backend();
  const std::string allocator = backend != nullptr ? backend : "";
  const int32_t count = accel_device_count();
  const std::string config = count > 0 ? config_text(0) : "";
  bool ok = true;
  json devices = json::array();
  std::vector<std::pair<std::map<std::string, int64_t>, std::string>> per_device;
  for (int32_t d = 0; d < count; ++d) {
    std::map<std::string, int64_t> stats;
    std::string error;
    const bool got = gather_stats(d, stats, error);
    ok = ok && got;
    json entry = {{"index", d}};
    if (got) {
      entry["stats"] = stats;
    } else {
      entry["error"] = error;
    }
    devices.push_back(std::move(entry));
    per_device.emplace_back(std::move(stats), std::move(error));
  }
  if (as_json) {
    json j = {{"current_accelerator", current_accelerator_json()},
              {"selection_reason", accel_selection_reason()},
              {"allocator", allocator},
              {"config", config.empty() ? json(nullptr) : json(config)},
              {"device_count", count},
              {"devices", std::move(devices)}};
    fmt::print("{}\n", json_document(std::move(j)));
    return ok ? 0 : 1;
  }
  const char* cur = accel_current_accelerator();
  if (cur == nullptr) {
    fmt::print("Current accelerator: none\nSelection: {}\n", accel_selection_reason());
    return 0;
  }
  fmt::print("Current accelerator: {} ({} device{})\n", cur, count, count == 1 ? "" : "s");
  fmt::print("Allocator: {}\n", allocator.empty() ? "-" : allocator);
  if (!config.empty()) fmt::print("Config: {}\n", config);
  fmt::print(
      "(statistics of this accelctl process; a program's own: have it write\n"
      " accel_memory_snapshot to a file and run accelctl memory --snapshot FILE)\n");
  for (int32_t d = 0; d < count; ++d) {
    const auto& [stats, error] = per_device[static_cast<size_t>(d)];
    fmt::print("\nDevice {}:\n", d);
    if (!error.empty()) {
      fmt::print("  error: {}\n", error);
      continue;
    }
    for (const auto& [label, name] : kMainStats) {
      const std::string base = name;
      fmt::print("  {:<15} {} (peak {})\n", std::string(label) + ":",
                 bytes_text(stat_or_zero(stats, base + ".current")),
                 bytes_text(stat_or_zero(stats, base + ".peak")));
    }
    fmt::print("  {:<15} {} (peak {})\n",
               "allocations:", stat_or_zero(stats, "allocation.all.current"),
               stat_or_zero(stats, "allocation.all.peak"));
    fmt::print("  {:<15} {} (small {}, large {}; peak {})\n",
               "segments:", stat_or_zero(stats, "segment.all.current"),
               stat_or_zero(stats, "segment.small_pool.current"),
               stat_or_zero(stats, "segment.large_pool.current"),
               stat_or_zero(stats, "segment.all.peak"));
    fmt::print("  {:<15} {} allocations, {} frees\n",
               "device calls:", stat_or_zero(stats, "num_device_alloc"),
               stat_or_zero(stats, "num_device_free"));
    fmt::print("  {:<15} {} (retries {})\n", "ooms:", stat_or_zero(stats, "num_ooms"),
               stat_or_zero(stats, "num_alloc_retries"));
  }
  return ok ? 0 : 1;
}

// --- accelctl memory --dump-snapshot FILE ------------------------------------------

int run_dump(bool as_json, const std::string& path) {
  if (accel_is_available() == 0) {
    std::fprintf(stderr, "accelctl: error: no accelerator available: %s\n",
                 accel_selection_reason());
    return 1;
  }
  std::string text, error;
  if (!read_snapshot(-1, text, error)) {
    std::fprintf(stderr, "accelctl: error: %s\n", error.c_str());
    return 1;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text << '\n';
  out.close();
  if (!out) {
    std::fprintf(stderr, "accelctl: error: cannot write %s\n", path.c_str());
    return 1;
  }
  const int32_t device = accel_current_device_index();
  if (as_json) {
    json j = {{"file", path}, {"device", device}, {"bytes", text.size()}};
    fmt::print("{}\n", json_document(std::move(j)));
  } else {
    fmt::print("Wrote the snapshot of device {} ({} bytes) to {}\n", device, text.size(), path);
  }
  return 0;
}

// --- accelctl memory --snapshot FILE -------------------------------------------------

// Typed reads of the snapshot that name what was wrong; a missing key of an
// optional part reads as the default.
struct Reader {
  std::vector<std::string>& problems;

  int64_t integer(const json& o, const char* key, const std::string& where) const {
    if (!o.is_object() || !o.contains(key)) {
      problems.push_back(fmt::format("{}: no \"{}\"", where, key));
      return 0;
    }
    const json& v = o[key];
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_unsigned()) return static_cast<int64_t>(v.get<uint64_t>());
    problems.push_back(fmt::format("{}: \"{}\" is not an integer", where, key));
    return 0;
  }
  std::string text(const json& o, const char* key, const std::string& where) const {
    if (o.is_object() && o.contains(key) && o[key].is_string()) return o[key].get<std::string>();
    problems.push_back(fmt::format("{}: \"{}\" is missing or not a string", where, key));
    return "";
  }
  const json& array(const json& o, const char* key, const std::string& where) const {
    static const json empty = json::array();
    if (o.is_object() && o.contains(key) && o[key].is_array()) return o[key];
    problems.push_back(fmt::format("{}: \"{}\" is missing or not an array", where, key));
    return empty;
  }
};

struct StreamTotals {
  std::string name;  // the snapshot's stream_name, "" when the stream has none
  int64_t segments = 0;
  int64_t blocks = 0;
  int64_t reserved = 0;
  int64_t allocated = 0;
};

// Totals over every segment of a snapshot.
struct SegmentTotals {
  int64_t count = 0;
  int64_t small = 0;
  int64_t large = 0;
  int64_t reserved = 0;
  int64_t allocated = 0;
  int64_t active = 0;
  int64_t requested = 0;
  int64_t largest_free = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> states;  // state -> count, bytes
  std::map<std::string, StreamTotals> streams;
};

// What the blocks of one segment add up to.
struct BlockTotals {
  std::vector<std::pair<int64_t, int64_t>> spans;  // address, size
  int64_t allocated = 0;
  int64_t active = 0;
};

// Counts the blocks of segment `seg` into `t` and `stream`; a block of an
// unknown state is a problem and counts only in the spans.
BlockTotals tally_blocks(const Reader& r, const json& seg, const std::string& where,
                         StreamTotals& stream, SegmentTotals& t) {
  BlockTotals bt;
  const json& blocks = r.array(seg, "blocks", where);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const json& blk = blocks[b];
    const std::string bwhere = fmt::format("{} block {}", where, b);
    const int64_t addr = r.integer(blk, "address", bwhere);
    const int64_t size = r.integer(blk, "size", bwhere);
    const std::string state = r.text(blk, "state", bwhere);
    bt.spans.emplace_back(addr, size);
    ++stream.blocks;
    if (t.states.count(state) == 0) {
      r.problems.push_back(fmt::format("{}: unknown state \"{}\"", bwhere, state));
      continue;
    }
    ++t.states[state].first;
    t.states[state].second += size;
    if (state == "active_allocated") bt.allocated += size;
    if (state != "inactive") bt.active += size;
    if (state == "inactive") t.largest_free = std::max(t.largest_free, size);
  }
  return bt;
}

// The blocks must tile the segment [base, base + total), in address order.
void check_tiling(const Reader& r, const std::string& where, int64_t base, int64_t total,
                  std::vector<std::pair<int64_t, int64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  int64_t next = base;
  for (const auto& [addr, size] : spans) {
    if (addr != next) {
      r.problems.push_back(fmt::format("{}: a block starts at {:#x}, expected {:#x}", where,
                                       static_cast<uint64_t>(addr), static_cast<uint64_t>(next)));
    }
    next = addr + size;
  }
  if (!spans.empty() && next != base + total)
    r.problems.push_back(fmt::format("{}: blocks end at {:#x}, the segment at {:#x}", where,
                                     static_cast<uint64_t>(next),
                                     static_cast<uint64_t>(base + total)));
}

// Adds segment `i` to `t`; its blocks must tile it and add up to its
// allocated and active sizes.
void tally_segment(const Reader& r, const json& seg, size_t i, SegmentTotals& t) {
  const std::string where = fmt::format("segment {}", i);
  const int64_t base = r.integer(seg, "address", where);
  const int64_t total = r.integer(seg, "total_size", where);
  const int64_t seg_allocated = r.integer(seg, "allocated_size", where);
  const int64_t seg_active = r.integer(seg, "active_size", where);
  t.reserved += total;
  t.allocated += seg_allocated;
  t.active += seg_active;
  t.requested += r.integer(seg, "requested_size", where);
  const std::string type = r.text(seg, "segment_type", where);
  if (type == "small") {
    ++t.small;
  } else if (type == "large") {
    ++t.large;
  } else {
    r.problems.push_back(
        fmt::format("{}: segment_type \"{}\" is neither small nor large", where, type));
  }
  StreamTotals& st = t.streams[r.text(seg, "stream", where)];
  if (auto it = seg.find("stream_name"); it != seg.end() && it->is_string())
    st.name = it->get<std::string>();
  ++st.segments;
  st.reserved += total;
  st.allocated += seg_allocated;

  const BlockTotals bt = tally_blocks(r, seg, where, st, t);
  check_tiling(r, where, base, total, bt.spans);
  if (bt.allocated != seg_allocated)
    r.problems.push_back(
        fmt::format("{}: allocated_size {} but its active_allocated blocks hold {}", where,
                    seg_allocated, bt.allocated));
  if (bt.active != seg_active)
    r.problems.push_back(fmt::format("{}: active_size {} but its active blocks hold {}", where,
                                     seg_active, bt.active));
}

SegmentTotals tally_segments(const Reader& r, const json& segments) {
  SegmentTotals t;
  t.count = static_cast<int64_t>(segments.size());
  for (const char* state : kBlockStates) t.states[state] = {0, 0};
  for (size_t i = 0; i < segments.size(); ++i) tally_segment(r, segments[i], i, t);
  return t;
}

// The summary's segment, memory, block and stream entries.
void put_segment_totals(json& s, const SegmentTotals& t) {
  s["segments"] = {{"count", t.count}, {"small", t.small}, {"large", t.large}};
  s["reserved_bytes"] = t.reserved;
  s["allocated_bytes"] = t.allocated;
  s["active_bytes"] = t.active;
  s["requested_bytes"] = t.requested;
  // Bytes held from the vendor per byte handed out: 1 is none lost to
  // rounding, splitting and caching.
  s["fragmentation"] = t.allocated > 0 ? json(static_cast<double>(t.reserved) /
                                              static_cast<double>(t.allocated))
                                       : json(nullptr);
  s["largest_free_block"] = t.largest_free;
  json blocks = json::object();
  for (const auto& [state, cb] : t.states)
    blocks[state] = {{"count", cb.first}, {"bytes", cb.second}};
  s["blocks"] = std::move(blocks);
  json stream_list = json::array();
  for (const auto& [name, st] : t.streams) {
    stream_list.push_back({{"stream", name},
                           {"segments", st.segments},
                           {"blocks", st.blocks},
                           {"reserved_bytes", st.reserved},
                           {"allocated_bytes", st.allocated}});
    if (!st.name.empty()) stream_list.back()["stream_name"] = st.name;
  }
  s["streams"] = std::move(stream_list);
}

// The statistics taken with the segments must agree with them.
void check_stats(const Reader& r, const json& snap, const SegmentTotals& t) {
  if (!snap.contains("stats") || !snap["stats"].is_object()) {
    r.problems.push_back("snapshot: \"stats\" is missing or not an object");
    return;
  }
  const json& stats = snap["stats"];
  const std::pair<const char*, int64_t> expected[] = {
      {"segment.all.current", t.count},
      {"segment.small_pool.current", t.small},
      {"segment.large_pool.current", t.large},
      {"reserved_bytes.all.current", t.reserved},
      {"allocated_bytes.all.current", t.allocated},
      {"active_bytes.all.current", t.active},
  };
  for (const auto& [name, want] : expected) {
    if (!stats.contains(name)) continue;  // a statistic the snapshot does not keep
    const int64_t got = r.integer(stats, name, "stats");
    if (got != want)
      r.problems.push_back(fmt::format("stats: {} is {}, the segments say {}", name, got, want));
  }
}

// The history's size and its events counted per action.
json summarize_history(const Reader& r, const json& snap) {
  json history = {{"max_entries", 0}, {"dropped", 0}, {"events", 0}, {"by_action", json::object()}};
  if (!snap.contains("history") || !snap["history"].is_object()) {
    r.problems.push_back("snapshot: \"history\" is missing or not an object");
    return history;
  }
  const json& h = snap["history"];
  history["max_entries"] = r.integer(h, "max_entries", "history");
  history["dropped"] = r.integer(h, "dropped", "history");
  const json& events = r.array(h, "events", "history");
  std::map<std::string, int64_t> by_action;
  for (size_t e = 0; e < events.size(); ++e)
    ++by_action[r.text(events[e], "action", fmt::format("history event {}", e))];
  history["events"] = static_cast<int64_t>(events.size());
  history["by_action"] = by_action;
  return history;
}

// The summary of a parsed snapshot, as the JSON `--json` prints; `problems`
// gets every inconsistency found (blocks that do not tile their segment,
// sizes that do not add up, statistics that disagree with the segments).
json summarize(const json& snap, std::vector<std::string>& problems) {
  const Reader r{problems};
  json s;
  s["snapshot_schema_version"] = r.integer(snap, "schema_version", "snapshot");
  s["backend"] = r.text(snap, "backend", "snapshot");
  s["device"] = r.integer(snap, "device", "snapshot");
  s["allocator"] = r.text(snap, "allocator", "snapshot");
  s["config"] = r.text(snap, "config", "snapshot");
  s["capacity"] = r.integer(snap, "capacity", "snapshot");
  const SegmentTotals t = tally_segments(r, r.array(snap, "segments", "snapshot"));
  put_segment_totals(s, t);
  check_stats(r, snap, t);
  s["history"] = summarize_history(r, snap);
  return s;
}

void print_summary(const std::string& path, const json& s,
                   const std::vector<std::string>& problems) {
  fmt::print("Snapshot: {}\n", path);
  fmt::print("  backend {}, device {}, allocator {}\n", s["backend"].get<std::string>(),
             s["device"].get<int64_t>(), s["allocator"].get<std::string>());
  fmt::print("  config: {}\n", s["config"].get<std::string>());
  const int64_t capacity = s["capacity"].get<int64_t>();
  fmt::print("  capacity: {}\n", capacity > 0 ? bytes_text(capacity) : "unknown");
  const json& seg = s["segments"];
  fmt::print("Segments: {} (small {}, large {})\n", seg["count"].get<int64_t>(),
             seg["small"].get<int64_t>(), seg["large"].get<int64_t>());
  fmt::print("Memory:\n");
  fmt::print("  reserved:      {}\n", bytes_text(s["reserved_bytes"].get<int64_t>()));
  fmt::print("  allocated:     {}\n", bytes_text(s["allocated_bytes"].get<int64_t>()));
  fmt::print("  active:        {}\n", bytes_text(s["active_bytes"].get<int64_t>()));
  fmt::print("  requested:     {}\n", bytes_text(s["requested_bytes"].get<int64_t>()));
  if (s["fragmentation"].is_null()) {
    fmt::print("  fragmentation: - (nothing allocated)\n");
  } else {
    fmt::print("  fragmentation: {:.3f} (reserved / allocated)\n",
               s["fragmentation"].get<double>());
  }
  fmt::print("  largest free block: {}\n", bytes_text(s["largest_free_block"].get<int64_t>()));
  fmt::print("Blocks:\n  {:<20} {:>8}  {}\n", "STATE", "COUNT", "BYTES");
  for (const char* state : kBlockStates) {
    const json& b = s["blocks"][state];
    fmt::print("  {:<20} {:>8}  {}\n", state, b["count"].get<int64_t>(),
               bytes_text(b["bytes"].get<int64_t>()));
  }
  fmt::print("Streams:\n");
  if (s["streams"].empty()) fmt::print("  none\n");
  for (const json& st : s["streams"]) {
    // backend:native records no stream: its frees are not stream-ordered.
    std::string name = st["stream"].get<std::string>();
    if (name.empty()) name = "(no stream)";
    if (st.contains("stream_name")) name += " (" + st["stream_name"].get<std::string>() + ")";
    fmt::print("  {}: {} segment{}, {} block{}, reserved {}, allocated {}\n", name,
               st["segments"].get<int64_t>(),
               st["segments"].get<int64_t>() == 1 ? "" : "s", st["blocks"].get<int64_t>(),
               st["blocks"].get<int64_t>() == 1 ? "" : "s",
               bytes_text(st["reserved_bytes"].get<int64_t>()),
               bytes_text(st["allocated_bytes"].get<int64_t>()));
  }
  const json& h = s["history"];
  fmt::print("History: {} event{} (max_entries {}, dropped {})\n", h["events"].get<int64_t>(),
             h["events"].get<int64_t>() == 1 ? "" : "s", h["max_entries"].get<int64_t>(),
             h["dropped"].get<int64_t>());
  for (const auto& [action, n] : h["by_action"].items())
    fmt::print("  {:<20} {:>8}\n", action, n.get<int64_t>());
  if (problems.empty()) {
    fmt::print("Consistency: ok\n");
  } else {
    fmt::print("Consistency: {} problem{}\n", problems.size(), problems.size() == 1 ? "" : "s");
    for (const auto& p : problems) fmt::print("  {}\n", p);
  }
}

int run_summary_of(bool as_json, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "accelctl: error: cannot read %s\n", path.c_str());
    return 1;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  json snap;
  try {
    snap = json::parse(buffer.str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "accelctl: error: %s is not JSON: %s\n", path.c_str(), e.what());
    return 1;
  }
  if (!snap.is_object() || !snap.contains("schema_version") ||
      !snap["schema_version"].is_number_integer() ||
      snap["schema_version"].get<int64_t>() != kSnapshotSchemaVersion) {
    std::fprintf(stderr,
                 "accelctl: error: %s is not an accel memory snapshot of schema_version %lld\n",
                 path.c_str(), static_cast<long long>(kSnapshotSchemaVersion));
    return 1;
  }
  std::vector<std::string> problems;
  json s = summarize(snap, problems);
  if (as_json) {
    s["file"] = path;
    s["problems"] = problems;
    fmt::print("{}\n", json_document(std::move(s)));
  } else {
    print_summary(path, s, problems);
  }
  // An inconsistent snapshot is an allocator bug (or a damaged file): say so
  // in the exit status too, for scripts.
  return problems.empty() ? 0 : 1;
}

}  // namespace

int run_memory(bool json, const std::string& snapshot_file, const std::string& dump_file) {
  if (!snapshot_file.empty()) return run_summary_of(json, snapshot_file);
  if (!dump_file.empty()) return run_dump(json, dump_file);
  return run_live(json);
}

}  // namespace accelctl
