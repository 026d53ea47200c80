// accel.hpp over the stream-ordered caching allocator (docs/memory.md):
// DeviceBuffer's stream, its stream-ordered destructor and record_stream,
// and accel::memory (statistics, empty_cache, snapshots and history, the
// pinned host cache). Part of accel-cxx-test: sim with 2 devices and
// ACCEL_ALLOC_CONF unset, so the caching allocator.
//
// "Not reused" is checked twice over: by address (another owner never gets
// the block while a copy that uses it is queued) and by data (what the
// queued copies wrote is intact after the next owner wrote its own data).
// Every wait is bounded: a Gate opens by itself after 30 s, and drained()
// gives up after 20 s, so a broken allocator fails a check instead of
// hanging the suite.
#include <accel/accel.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// Registers a vector's bytes with accel_host_register while it lives, for
// copies into it queued behind a gate: into pageable memory a copy returns
// only once it has completed (CUDA's rule), which the gate would hold up.
// Declare it after the vector.
class Registered {
 public:
  template <typename T>
  explicit Registered(std::vector<T>& v) : p_(v.data()) {
    REQUIRE(accel_host_register(p_, v.size() * sizeof(T), 0) == ACCEL_SUCCESS);
  }
  ~Registered() { accel_host_unregister(p_); }
  Registered(const Registered&) = delete;
  Registered& operator=(const Registered&) = delete;

 private:
  void* p_;
};

// Holds a stream in a host function until open(), the Gate's destruction,
// or 30 s (a watchdog: a failed check never leaves a stream blocked). The
// state is shared with the host function, which may outlive the Gate.
class Gate {
 public:
  ~Gate() { open(); }
  void launch(const accel::Stream& s) {
    s.launch_host_func([st = state_] {
      std::unique_lock<std::mutex> lock(st->mu);
      st->entered = true;
      st->cv.notify_all();
      st->cv.wait_for(lock, 30s, [&] { return st->open; });
    });
  }
  // True once the host function runs (at most 30 s).
  bool wait_entered() {
    std::unique_lock<std::mutex> lock(state_->mu);
    return state_->cv.wait_for(lock, 30s, [this] { return state_->entered; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->open = true;
    state_->cv.notify_all();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool entered = false;
    bool open = false;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// True once all of `s`'s work has completed; false after `limit`.
bool drained(const accel::Stream& s, std::chrono::seconds limit = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!s.query()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

std::vector<int> iota_vector(std::size_t n, int first) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// Every name torch.cuda.memory_stats gives, built from its rules (not
// copied from the library), plus the plain counters accel.h lists.
std::vector<std::string> expected_device_stat_names() {
  std::vector<std::string> names;
  for (const char* stat :
       {"allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
        "active_bytes", "inactive_split_bytes", "requested_bytes"})
    for (const char* pool : {"all", "small_pool", "large_pool"})
      for (const char* metric : {"current", "peak", "allocated", "freed"})
        names.push_back(std::string(stat) + "." + pool + "." + metric);
  for (const char* plain : {"num_alloc_retries", "num_ooms", "num_sync_all_streams",
                            "num_device_alloc", "num_device_free", "max_split_size"})
    names.emplace_back(plain);
  return names;
}

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The snapshot's text for a stream ("0x..."), read back as a number.
std::uintptr_t stream_address(const json& text) {
  return static_cast<std::uintptr_t>(std::stoull(text.get<std::string>(), nullptr, 16));
}

// The segment of `snap` whose blocks include one starting at `p`, and
// that block; nullptr when none does.
const json* find_block(const json& snap, const void* p, const json** segment = nullptr) {
  for (const json& seg : snap["segments"])
    for (const json& blk : seg["blocks"])
      if (blk["address"].get<std::uintptr_t>() == address(p)) {
        if (segment != nullptr) *segment = &seg;
        return &blk;
      }
  return nullptr;
}

}  // namespace

// --- DeviceBuffer's stream ------------------------------------------------------------

TEST_CASE("DeviceBuffer: belongs to the stream it was allocated on", "[cxx][memory][alloc]") {
  accel::set_device_index(0);
  REQUIRE(accel::memory::allocator_backend() == "caching");
  accel::Stream s = accel::Stream::create(1);

  accel::DeviceBuffer<int> on_stream(100, s);
  CHECK(on_stream.stream() == s);
  CHECK_FALSE(on_stream.stream().owns());
  CHECK(on_stream.device() == 1);

  accel::DeviceBuffer<int> on_current(100, 1);
  CHECK(on_current.stream() == accel::Stream::current(1));
  {
    accel::StreamGuard guard(s);
    accel::DeviceBuffer<int> guarded(10);
    CHECK(guarded.stream() == s);
    CHECK(guarded.device() == 1);
  }

  int* raw = on_stream.data();
  accel::DeviceBuffer<int> moved(std::move(on_stream));
  CHECK(moved.stream() == s);
  CHECK(moved.data() == raw);
  accel::DeviceBuffer<int> assigned;
  assigned = std::move(moved);
  CHECK(assigned.stream() == s);

  accel::DeviceBuffer<int> empty;
  CHECK_FALSE(static_cast<bool>(empty.stream()));
  accel::DeviceBuffer<int> zero(0, s);
  CHECK(zero.stream() == s);
  CHECK(zero.data() == nullptr);

  accel::Stream gone = accel::Stream::create(0);
  accel::Stream taker = std::move(gone);
  try {
    accel::DeviceBuffer<int> refused(4, gone);  // NOLINT(bugprone-use-after-move): on purpose
    FAIL("a buffer on a moved-from stream was made");
  } catch (const accel::Error& e) {
    CHECK(e.status() == ACCEL_ERROR_INVALID_ARGUMENT);
  }
  // The error names the C call that failed.
  try {
    accel::DeviceBuffer<int> refused(std::size_t{1} << 40, s);  // 4 TiB
    FAIL("an allocation larger than the device succeeded");
  } catch (const accel::Error& e) {
    CHECK(e.status() == ACCEL_ERROR_OUT_OF_MEMORY);
    CHECK(e.operation() == "accel_malloc_async");
  }
}

TEST_CASE("DeviceBuffer: freed while a copy into it is queued: stream-ordered",
          "[cxx][memory][alloc]") {
  accel::set_device_index(0);
  constexpr std::size_t n = 64 * 1024;  // 256 KiB: the small pool
  const std::vector<int> in = iota_vector(n, 7);
  std::vector<int> out(n, 0);
  const Registered out_registered(out);
  accel::Stream a = accel::Stream::create(0);
  accel::Stream b = accel::Stream::create(0);
  Gate gate;
  const int* freed = nullptr;
  {
    accel::DeviceBuffer<int> buf(n, a);
    freed = buf.data();
    buf.copy_from(in, a);
    gate.launch(a);
    buf.copy_to(out, a);
  }  // freed while the copy to `out` waits behind the gate
  REQUIRE(gate.wait_entered());
  CHECK_FALSE(a.query());  // the copy is still queued: the free did not wait for it

  // Another stream of the device allocates and writes: never that block,
  // and it does not wait for `a` either.
  std::vector<accel::DeviceBuffer<int>> others;
  for (int i = 0; i < 8; ++i) {
    others.emplace_back(n, b);
    CHECK(others.back().data() != freed);
    others.back().fill_bytes(0xEE, b);
  }
  REQUIRE(drained(b));
  CHECK_FALSE(a.query());

  // The stream that freed it may take it again at once: whatever it queues
  // runs after the copy. (A fresh stream's only block: best fit finds it.)
  {
    accel::DeviceBuffer<int> again(n, a);
    CHECK(again.data() == freed);
  }
  gate.open();
  REQUIRE(drained(a));
  CHECK(out == in);
}

TEST_CASE("DeviceBuffer: record_stream keeps memory from reuse until that stream's work is done",
          "[cxx][memory][alloc]") {
  accel::set_device_index(0);
  constexpr std::size_t n = 32 * 1024;
  const std::vector<int> in = iota_vector(n, -3);
  std::vector<int> out(n, 0);
  const Registered out_registered(out);
  accel::Stream owner = accel::Stream::create(0);
  accel::Stream user = accel::Stream::create(0);
  Gate gate;
  const int* freed = nullptr;

  SECTION("the buffer's copies on another stream record it themselves") {
    accel::DeviceBuffer<int> buf(n, owner);
    freed = buf.data();
    gate.launch(user);
    buf.copy_from(in, user);
    buf.copy_to(out, user);
  }
  SECTION("work queued through data() is named with record_stream") {
    accel::DeviceBuffer<int> buf(n, owner);
    freed = buf.data();
    gate.launch(user);
    REQUIRE(accel_memcpy_async(buf.data(), in.data(), buf.size_bytes(), ACCEL_MEMCPY_HOST_TO_DEVICE,
                               user.handle()) == ACCEL_SUCCESS);
    REQUIRE(accel_memcpy_async(out.data(), buf.data(), buf.size_bytes(),
                               ACCEL_MEMCPY_DEVICE_TO_HOST, user.handle()) == ACCEL_SUCCESS);
    buf.record_stream(user);
    buf.record_stream(owner);  // its own stream: nothing to do
  }
  REQUIRE(freed != nullptr);
  REQUIRE(gate.wait_entered());
  // `owner` is idle, yet even its own allocations must not take the block
  // while `user` may still copy from and into it.
  std::vector<accel::DeviceBuffer<int>> later;
  for (int i = 0; i < 4; ++i) {
    later.emplace_back(n, owner);
    CHECK(later.back().data() != freed);
    later.back().fill_bytes(0x5A, owner);
  }
  REQUIRE(drained(owner));
  gate.open();
  REQUIRE(drained(user));
  CHECK(out == in);
}

TEST_CASE("DeviceBuffer: a peer copy on the other device's stream orders the free",
          "[cxx][memory][alloc]") {
  accel::set_device_index(0);
  constexpr std::size_t n = 1024;
  const std::vector<int> in = iota_vector(n, 1);
  accel::Stream s0 = accel::Stream::create(0);
  accel::Stream s1 = accel::Stream::create(1);
  accel::DeviceBuffer<int> src(n, s0);
  src.copy_from(in, s0);
  Gate gate;
  gate.launch(s0);
  const int* freed = nullptr;
  {
    accel::DeviceBuffer<int> dst(n, s1);
    freed = dst.data();
    dst.copy_from(src, s0);  // device 0's stream writes device 1's memory
  }
  REQUIRE(gate.wait_entered());
  // s1 may reuse the block at once, but s1's work now waits for the copy:
  // the fill lands after it, so the new owner reads its own bytes.
  accel::DeviceBuffer<int> next(n, s1);
  CHECK(next.data() == freed);  // what makes the data check below meaningful
  next.fill_bytes(0x11, s1);
  std::vector<int> out(n, 0);
  const Registered out_registered(out);
  next.copy_to(out, s1);
  gate.open();
  REQUIRE(drained(s0));
  REQUIRE(drained(s1));
  int pattern = 0;
  std::memset(&pattern, 0x11, sizeof pattern);
  CHECK(std::all_of(out.begin(), out.end(), [&](int v) { return v == pattern; }));
}

// --- accel::memory ---------------------------------------------------------------------

TEST_CASE("memory::stats: torch's names and what one allocation adds", "[cxx][memory][stats]") {
  accel::set_device_index(0);
  const auto names = expected_device_stat_names();
  const std::map<std::string, std::int64_t> all = accel::memory::stats(0);
  for (const auto& name : names) {
    INFO(name);
    CHECK(all.count(name) == 1);
  }
  CHECK(all.at("max_split_size") == -1);  // ACCEL_ALLOC_CONF unset: unlimited
  CHECK(accel::memory::stats() == accel::memory::stats(0));

  accel::Stream s = accel::Stream::create(0);
  const auto before = accel::memory::stats(0);
  {
    accel::DeviceBuffer<char> buf(1000, s);  // rounded up to 512-byte units: 1024
    const auto during = accel::memory::stats(0);
    CHECK(during.at("allocation.all.current") == before.at("allocation.all.current") + 1);
    CHECK(during.at("allocation.small_pool.current") ==
          before.at("allocation.small_pool.current") + 1);
    CHECK(during.at("allocated_bytes.all.current") ==
          before.at("allocated_bytes.all.current") + 1024);
    CHECK(during.at("requested_bytes.all.current") ==
          before.at("requested_bytes.all.current") + 1000);
    CHECK(during.at("allocation.all.allocated") == before.at("allocation.all.allocated") + 1);
    CHECK(during.at("reserved_bytes.all.current") >= during.at("allocated_bytes.all.current"));
    CHECK(during.at("active_bytes.all.current") >= during.at("allocated_bytes.all.current"));
  }
  const auto after = accel::memory::stats(0);
  CHECK(after.at("allocation.all.current") == before.at("allocation.all.current"));
  CHECK(after.at("allocated_bytes.all.current") == before.at("allocated_bytes.all.current"));
  CHECK(after.at("allocation.all.freed") == before.at("allocation.all.freed") + 1);
  // Kept in the cache, not given back.
  CHECK(after.at("reserved_bytes.all.current") >= before.at("reserved_bytes.all.current"));

  SECTION("peaks") {
    {
      accel::DeviceBuffer<char> big(8u << 20, s);
      CHECK(accel::memory::stats(0).at("allocated_bytes.all.peak") >=
            after.at("allocated_bytes.all.current") + (8 << 20));
    }
    accel::reset_peak_memory_stats(0);
    const auto reset = accel::memory::stats(0);
    CHECK(reset.at("allocated_bytes.all.peak") == reset.at("allocated_bytes.all.current"));
    CHECK(reset.at("reserved_bytes.all.peak") == reset.at("reserved_bytes.all.current"));
  }
  SECTION("accumulated counters") {
    accel::memory::reset_accumulated_stats(0);
    auto reset = accel::memory::stats(0);
    CHECK(reset.at("allocation.all.allocated") == 0);
    CHECK(reset.at("allocation.all.freed") == 0);
    CHECK(reset.at("num_device_alloc") == 0);
    CHECK(reset.at("allocated_bytes.all.current") == after.at("allocated_bytes.all.current"));
    { accel::DeviceBuffer<char> one(4096, s); }
    reset = accel::memory::stats(0);
    CHECK(reset.at("allocation.all.allocated") == 1);
    CHECK(reset.at("allocation.all.freed") == 1);
  }
  SECTION("errors throw accel::Error") {
    try {
      accel::memory::stats(2);
      FAIL("stats of device 2 of 2");
    } catch (const accel::Error& e) {
      CHECK(e.status() == ACCEL_ERROR_INVALID_DEVICE);
      CHECK(e.operation() == "accel_memory_stats_list");
    }
    CHECK_THROWS_AS(accel::memory::empty_cache(7), accel::Error);
    CHECK_THROWS_AS(accel::memory::snapshot(2), accel::Error);
    try {
      accel::memory::record_history((std::size_t{1} << 24) + 1);
      FAIL("a history of more than 1 << 24 entries");
    } catch (const accel::Error& e) {
      CHECK(e.status() == ACCEL_ERROR_INVALID_ARGUMENT);
    }
  }
}

TEST_CASE("memory::stats: a lookup of a name no statistic has throws and names it",
          "[cxx][memory][stats]") {
  const auto all = accel::memory::stats(0);
  CHECK(all["allocated_bytes.all.current"] == all.at("allocated_bytes.all.current"));
  try {
    (void)all["alocated_bytes.all.current"];
    FAIL("a mistyped name read a value");
  } catch (const std::out_of_range& e) {
    CHECK(std::string(e.what()).find("'alocated_bytes.all.current'") != std::string::npos);
  }
  CHECK_THROWS_AS(all.at("no_such_stat"), std::out_of_range);
  CHECK(all.count("alocated_bytes.all.current") == 0);  // the lookups added nothing
  const auto host = accel::memory::host_stats();
  CHECK_THROWS_AS(host["num_host_allocs"], std::out_of_range);
}

TEST_CASE("memory_stats: reserved and peak reserved bytes as torch.cuda.memory_reserved",
          "[cxx][memory][stats]") {
  accel::Stream s = accel::Stream::create(0);
  accel::memory::empty_cache(0);
  accel::reset_peak_memory_stats(0);
  const accel::MemoryStats before = accel::memory_stats(0);
  CHECK(before.reserved_bytes ==
        static_cast<std::uint64_t>(accel::memory::stats(0).at("reserved_bytes.all.current")));
  {
    accel::DeviceBuffer<char> buf(3u << 20, s);
    const accel::MemoryStats during = accel::memory_stats(0);
    const auto all = accel::memory::stats(0);
    CHECK(during.reserved_bytes >= before.reserved_bytes + (3u << 20));
    CHECK(during.reserved_bytes ==
          static_cast<std::uint64_t>(all.at("reserved_bytes.all.current")));
    CHECK(during.peak_reserved_bytes ==
          static_cast<std::uint64_t>(all.at("reserved_bytes.all.peak")));
    CHECK(during.reserved_bytes >= during.allocated_bytes);
  }
  s.synchronize();
  accel::memory::empty_cache(0);
  const accel::MemoryStats after = accel::memory_stats(0);
  CHECK(after.reserved_bytes < after.peak_reserved_bytes);
  CHECK(after.peak_reserved_bytes >= before.reserved_bytes + (3u << 20));
}

// The state of the block at `address` in a snapshot of device 0 ("" when
// no block starts there).
std::string block_state(std::uintptr_t address) {
  const auto j = nlohmann::json::parse(accel::memory::snapshot(0));
  for (const auto& seg : j.at("segments"))
    for (const auto& b : seg.at("blocks"))
      if (b.at("address").get<std::uintptr_t>() == address) return b.at("state");
  return "";
}

TEST_CASE("memory::snapshot right after a synchronize shows completed frees as free",
          "[cxx][memory][snapshot]") {
  accel::set_device_index(0);
  constexpr std::size_t n = 4096;
  const std::vector<int> in = iota_vector(n, 7);
  accel::Stream owner = accel::Stream::create(0);
  accel::Stream user = accel::Stream::create(0);
  Gate gate;
  std::uintptr_t freed = 0;
  {
    accel::DeviceBuffer<int> buf(n, owner);
    freed = reinterpret_cast<std::uintptr_t>(buf.data());
    gate.launch(user);
    buf.copy_from(in, user);  // records `user`: the free waits for it
  }
  REQUIRE(gate.wait_entered());
  CHECK(block_state(freed) == "active_pending_free");
  gate.open();
  user.synchronize();
  owner.synchronize();
  // No allocation since: only the snapshot itself can notice the marker.
  CHECK(block_state(freed) == "inactive");
}

TEST_CASE("memory::empty_cache gives back every segment no allocation uses",
          "[cxx][memory][stats]") {
  accel::set_device_index(0);
  accel::Stream s = accel::Stream::create(0);
  accel::DeviceBuffer<char> kept(3000, s);
  {
    std::vector<accel::DeviceBuffer<char>> gone;
    for (std::size_t bytes : {std::size_t{100}, std::size_t{5} << 20, std::size_t{30} << 20})
      gone.emplace_back(bytes, s);
  }
  CHECK(accel::memory::stats(0).at("reserved_bytes.all.current") >
        accel::memory::stats(0).at("active_bytes.all.current"));
  const auto before = accel::memory::stats(0);
  accel::memory::empty_cache(0);
  const auto after = accel::memory::stats(0);
  CHECK(after.at("reserved_bytes.all.current") < before.at("reserved_bytes.all.current"));
  CHECK(after.at("num_device_free") > before.at("num_device_free"));
  CHECK(after.at("allocated_bytes.all.current") == before.at("allocated_bytes.all.current"));
  // Every segment left holds a live or pending block.
  const json snap = json::parse(accel::memory::snapshot(0));
  for (const json& seg : snap["segments"]) {
    const bool used = std::any_of(seg["blocks"].begin(), seg["blocks"].end(),
                                  [](const json& b) { return b["state"] != "inactive"; });
    CHECK(used);
  }
  CHECK(find_block(snap, kept.data()) != nullptr);
}

TEST_CASE("memory::snapshot: segments / blocks / streams and the history",
          "[cxx][memory][snapshot]") {
  accel::set_device_index(0);
  accel::memory::record_history(1000);
  accel::Stream s = accel::Stream::create(0);
  accel::DeviceBuffer<char> small(1000, s);
  accel::DeviceBuffer<char> large(std::size_t{5} << 20, s);
  { accel::DeviceBuffer<char> freed(4000, s); }

  const json snap = json::parse(accel::memory::snapshot(0));
  CHECK(snap["schema_version"] == 1);
  CHECK(snap["backend"] == "sim");
  CHECK(snap["device"] == 0);
  CHECK(snap["allocator"] == "caching");
  CHECK(snap["config"].get<std::string>().find("backend:caching") != std::string::npos);
  CHECK(snap["capacity"].get<std::int64_t>() > 0);
  CHECK(snap["stats"]["allocation.all.current"] ==
        accel::memory::stats(0).at("allocation.all.current"));

  const json* seg = nullptr;
  const json* blk = find_block(snap, small.data(), &seg);
  REQUIRE(blk != nullptr);
  CHECK((*blk)["state"] == "active_allocated");
  CHECK((*blk)["size"] == 1024);
  CHECK((*blk)["requested_size"] == 1000);
  CHECK((*seg)["segment_type"] == "small");
  CHECK(stream_address((*seg)["stream"]) == address(s.handle()));
  blk = find_block(snap, large.data(), &seg);
  REQUIRE(blk != nullptr);
  CHECK((*seg)["segment_type"] == "large");
  CHECK((*blk)["requested_size"] == 5 << 20);

  const json& history = snap["history"];
  CHECK(history["max_entries"] == 1000);
  std::map<std::string, int> actions;
  bool saw_small = false;
  for (const json& e : history["events"]) {
    ++actions[e["action"].get<std::string>()];
    if (e["action"] == "alloc" && e["address"].get<std::uintptr_t>() == address(small.data())) {
      saw_small = true;
      CHECK(stream_address(e["stream"]) == address(s.handle()));
      CHECK(e["time_us"].get<std::int64_t>() > 0);
    }
  }
  CHECK(saw_small);
  CHECK(actions["alloc"] >= 3);
  CHECK(actions["free_requested"] >= 1);

  accel::memory::record_history(0);
  const json quiet = json::parse(accel::memory::snapshot(0));
  CHECK(quiet["history"]["max_entries"] == 0);
  CHECK(quiet["history"]["events"].empty());
}

TEST_CASE("memory::snapshot: whole documents while another thread allocates",
          "[cxx][memory][snapshot]") {
  accel::set_device_index(0);
  accel::memory::record_history(2000);  // the snapshot grows with every event until full
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::thread churn([&] {
    try {
      accel::Stream s = accel::Stream::create(0);
      std::size_t bytes = 512;
      while (!stop.load()) {
        std::vector<accel::DeviceBuffer<char>> held;
        for (int i = 0; i < 16; ++i) {
          held.emplace_back(bytes, s);
          bytes = bytes % (3u << 20) + 7919;
        }
        held.clear();
        // Leaves the allocator's lock free now and then: a thread that
        // retakes a mutex at once can starve the snapshots for seconds.
        std::this_thread::sleep_for(100us);
      }
      s.synchronize();
    } catch (...) {
      failures.fetch_add(1);
    }
  });
  int parsed = 0;
  std::string error;  // a throw must not leave `churn` joinable (std::terminate)
  for (int i = 0; i < 30 && error.empty(); ++i) {
    try {
      const std::string text = accel::memory::snapshot(0);
      const json j = json::parse(text, nullptr, false);
      if (!j.is_discarded() && j.contains("segments")) ++parsed;
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  stop.store(true);
  churn.join();
  INFO(error);
  CHECK(error.empty());
  accel::memory::record_history(0);
  CHECK(parsed == 30);
  CHECK(failures.load() == 0);
}

TEST_CASE("memory::host_stats and empty_host_cache: the pinned host cache", "[cxx][memory][host]") {
  accel::set_device_index(0);
  const auto before = accel::memory::host_stats();
  for (const char* stat : {"allocation", "segment", "allocated_bytes", "reserved_bytes"})
    for (const char* metric : {"current", "peak", "allocated", "freed"}) {
      const std::string name = std::string(stat) + "." + metric;
      INFO(name);
      CHECK(before.count(name) == 1);
    }
  CHECK(before.count("num_host_alloc") == 1);
  CHECK(before.count("num_host_free") == 1);

  constexpr std::size_t n = 3000;
  const std::vector<int> in = iota_vector(n, 40);
  accel::DeviceBuffer<int> dev(n, 0);
  accel::Stream s = accel::Stream::create(0);
  Gate gate;
  const int* freed = nullptr;
  {
    accel::HostBuffer<int> pinned(n);
    std::copy(in.begin(), in.end(), pinned.begin());
    const auto during = accel::memory::host_stats();
    CHECK(during.at("allocation.current") == before.at("allocation.current") + 1);
    CHECK(during.at("allocated_bytes.current") >=
          before.at("allocated_bytes.current") + static_cast<std::int64_t>(n * sizeof(int)));
    freed = pinned.data();
    gate.launch(s);
    dev.copy_from(pinned, s);  // reads `pinned` once the gate opens
  }
  REQUIRE(gate.wait_entered());
  // The block is cached, and not handed out while the copy may still read it.
  {
    accel::HostBuffer<int> next(n);
    CHECK(next.data() != freed);
    std::fill(next.begin(), next.end(), -1);
  }
  gate.open();
  REQUIRE(drained(s));
  std::vector<int> out(n, 0);
  dev.copy_to(out, s);
  s.synchronize();
  CHECK(out == in);

  const auto cached = accel::memory::host_stats();
  CHECK(cached.at("allocation.current") == before.at("allocation.current"));
  CHECK(cached.at("reserved_bytes.current") > cached.at("allocated_bytes.current"));
  accel::memory::empty_host_cache();
  const auto emptied = accel::memory::host_stats();
  CHECK(emptied.at("reserved_bytes.current") < cached.at("reserved_bytes.current"));
  CHECK(emptied.at("num_host_free") > cached.at("num_host_free"));
  if (emptied.at("allocation.current") == 0) CHECK(emptied.at("reserved_bytes.current") == 0);
}
