// Tests of accel.hpp, the C++ layer, over the sim backend with 2 devices
// (ACCEL_BACKEND=sim ACCEL_SIM_DEVICES=2, set by tests/cxx/meson.build).
//
// Catch2 v2 assertions are not thread-safe: worker threads only record what
// they saw, and the test thread asserts on it after joining.
#include <accel/accel.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace std::chrono_literals;

// --- compile-time contracts ---------------------------------------------------

static_assert(std::is_base_of_v<std::runtime_error, accel::Error>);
static_assert(!std::is_copy_constructible_v<accel::Stream>);
static_assert(!std::is_copy_assignable_v<accel::Stream>);
static_assert(std::is_nothrow_move_constructible_v<accel::Stream>);
static_assert(std::is_nothrow_move_assignable_v<accel::Stream>);
static_assert(!std::is_copy_constructible_v<accel::Event>);
static_assert(std::is_nothrow_move_constructible_v<accel::Event>);
static_assert(std::is_nothrow_move_assignable_v<accel::Event>);
static_assert(!std::is_copy_constructible_v<accel::DeviceBuffer<float>>);
static_assert(std::is_nothrow_move_constructible_v<accel::DeviceBuffer<float>>);
static_assert(std::is_nothrow_move_assignable_v<accel::DeviceBuffer<float>>);
static_assert(std::is_nothrow_destructible_v<accel::DeviceIndexGuard>);
static_assert(std::is_nothrow_destructible_v<accel::StreamGuard>);
static_assert(std::is_nothrow_destructible_v<accel::Stream>);
static_assert(std::is_nothrow_destructible_v<accel::Event>);
static_assert(!std::is_copy_constructible_v<accel::DeviceIndexGuard>);
static_assert(!std::is_move_constructible_v<accel::DeviceIndexGuard>);
static_assert(!std::is_move_constructible_v<accel::StreamGuard>);
static_assert(std::is_same_v<decltype(std::declval<accel::Event&>().elapsed_time(
                                 std::declval<const accel::Event&>())),
                             std::chrono::duration<double, std::milli>>);
static_assert(std::is_same_v<decltype(accel::current_accelerator()), std::optional<std::string>>);
static_assert(__cplusplus >= 202002L, "this suite checks the C++20 side of accel.hpp");

// HostSpan, the host side of copies, takes std::span in C++20 with
// std::span's rules: a writable view only of lvalues or of views, never of
// device memory.
static_assert(std::is_convertible_v<std::span<int>, accel::HostSpan<int>>);
static_assert(std::is_convertible_v<std::span<int>, accel::HostSpan<const int>>);
static_assert(std::is_convertible_v<std::span<const int>, accel::HostSpan<const int>>);
static_assert(std::is_convertible_v<std::span<int, 4>, accel::HostSpan<int>>);
static_assert(!std::is_convertible_v<std::span<const int>, accel::HostSpan<int>>);
static_assert(!std::is_convertible_v<std::span<long>, accel::HostSpan<const int>>);
static_assert(std::is_convertible_v<std::vector<int>&, accel::HostSpan<int>>);
static_assert(!std::is_convertible_v<std::vector<int>&&, accel::HostSpan<int>>);
static_assert(!std::is_convertible_v<const std::vector<int>&, accel::HostSpan<int>>);
static_assert(!std::is_convertible_v<accel::DeviceBuffer<int>&, accel::HostSpan<int>>);
static_assert(!std::is_convertible_v<const accel::DeviceBuffer<int>&, accel::HostSpan<const int>>);

namespace {

std::size_t occurrences(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size()))
    ++n;
  return n;
}

// Every test starts on device 0 with the default streams current.
void reset_thread_state() {
  accel::set_device_index(0);
  for (int d = 0; d < accel::device_count(); ++d) {
    // The default stream is the first current stream of a fresh thread.
    accel_stream_t def = nullptr;
    std::thread([&] { accel_current_stream(d, &def); }).join();
    REQUIRE(accel_set_stream(def) == ACCEL_SUCCESS);
  }
  accel::set_device_index(0);
}

accel_stream_t default_stream_of(int device) {
  accel_stream_t def = nullptr;
  std::thread([&] { accel_current_stream(device, &def); }).join();
  return def;
}

// Blocks a stream in a host function until open() (or the Gate's
// destruction, so a failed check never leaves a stream blocked forever). The
// state is shared with the host function, which may outlive the Gate.
class Gate {
 public:
  ~Gate() { open(); }
  void launch(const accel::Stream& s) {
    s.launch_host_func([st = state_] {
      std::unique_lock<std::mutex> lock(st->mu);
      st->entered = true;
      st->cv.notify_all();
      st->cv.wait(lock, [&] { return st->open; });
    });
  }
  void wait_entered() {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->cv.wait(lock, [this] { return state_->entered; });
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

// Captures what the error handler receives.
std::mutex g_handler_mu;
std::vector<std::string> g_handler_calls;
void capturing_handler(const char* context, const char* message) noexcept {
  std::lock_guard<std::mutex> lock(g_handler_mu);
  g_handler_calls.push_back(std::string(context) + " | " + message);
}

}  // namespace

// --- free functions ---------------------------------------------------------------

TEST_CASE("free functions mirror torch.accelerator", "[cxx][device]") {
  reset_thread_state();
  REQUIRE(accel::is_available());
  REQUIRE(accel::current_accelerator() == std::optional<std::string>("sim"));
  REQUIRE(accel::device_count() == 2);
  REQUIRE(accel::current_device_index() == 0);
  REQUIRE_FALSE(accel::version().empty());
  REQUIRE_FALSE(accel::selection_reason().empty());

  accel::set_device_index(1);
  CHECK(accel::current_device_index() == 1);
  accel::set_device_index(std::nullopt);  // torch's None: no change
  CHECK(accel::current_device_index() == 1);
  accel::set_device_index(-3);  // negative: no change
  CHECK(accel::current_device_index() == 1);

  CHECK(accel::exchange_device(0) == 1);
  CHECK(accel::current_device_index() == 0);
  CHECK(accel::exchange_device(std::nullopt) == 0);
  CHECK(accel::maybe_exchange_device(1) == 0);  // returns the index BEFORE
  CHECK(accel::current_device_index() == 1);
  accel::set_device_index(0);

  accel::synchronize();
  accel::synchronize(1);
  CHECK_THROWS_AS(accel::synchronize(7), accel::Error);

  const accel::PriorityRange range = accel::stream_priority_range();
  CHECK(range.greatest <= 0);
  CHECK(range.least >= 0);

  bool saw_current = false;
  for (const accel::BackendInfo& b : accel::backends()) {
    if (b.is_current) {
      saw_current = true;
      CHECK(b.name == "sim");
      CHECK(b.status == ACCEL_BACKEND_AVAILABLE);
      CHECK(b.status_name() == "available");
      CHECK(b.device_count == 2);
    }
  }
  CHECK(saw_current);
}

// --- errors -------------------------------------------------------------------------

TEST_CASE("Error carries the status and the last-error message", "[cxx][error]") {
  reset_thread_state();
  try {
    accel::set_device_index(5);
    FAIL("set_device_index(5) did not throw with 2 devices");
  } catch (const accel::Error& e) {
    CHECK(e.status() == ACCEL_ERROR_INVALID_DEVICE);
    CHECK(std::string(e.status_name()) == "ACCEL_ERROR_INVALID_DEVICE");
    CHECK(e.operation() == "accel_set_device_index");
    CHECK_FALSE(e.message().empty());
    CHECK(e.message() == accel_last_error());           // the C detail, verbatim
    CHECK(e.message().find('5') != std::string::npos);  // names the bad index
    // what() names the operation once, first, although the C detail starts
    // with it too.
    const std::string what = e.what();
    const std::string op_prefix = "accel_set_device_index: ";
    REQUIRE(e.message().rfind(op_prefix, 0) == 0);
    CHECK(what ==
          op_prefix + "ACCEL_ERROR_INVALID_DEVICE: " + e.message().substr(op_prefix.size()));
    CHECK(occurrences(what, "accel_set_device_index") == 1);
  }
  CHECK(accel::current_device_index() == 0);  // nothing changed

  // Caught as std::runtime_error too, and the message is the one of *this*
  // failure even on a thread with no earlier failure.
  std::string msg;
  accel_status_t status = ACCEL_SUCCESS;
  std::thread([&] {
    try {
      accel::DeviceBuffer<int> b(16, 9);
    } catch (const std::runtime_error& e) {
      const auto* ae = dynamic_cast<const accel::Error*>(&e);
      if (ae != nullptr) {
        status = ae->status();
        msg = ae->message();
      }
    }
  }).join();
  CHECK(status == ACCEL_ERROR_INVALID_DEVICE);
  CHECK_FALSE(msg.empty());

  // An Error built by hand (the C++ layer's own checks use this too).
  const accel::Error own(ACCEL_ERROR_OUT_OF_RANGE, "detail text", "op");
  CHECK(std::string(own.what()) == "op: ACCEL_ERROR_OUT_OF_RANGE: detail text");
  // A detail that starts with the operation keeps it in message() only.
  const accel::Error dup(ACCEL_ERROR_OUT_OF_RANGE, "op: detail text", "op");
  CHECK(dup.message() == "op: detail text");
  CHECK(std::string(dup.what()) == "op: ACCEL_ERROR_OUT_OF_RANGE: detail text");
  // Only a whole leading name is dropped, not a longer one it prefixes.
  const accel::Error longer(ACCEL_ERROR_OUT_OF_RANGE, "opera: detail", "op");
  CHECK(std::string(longer.what()) == "op: ACCEL_ERROR_OUT_OF_RANGE: opera: detail");
  const accel::Error no_op(ACCEL_ERROR_OUT_OF_RANGE, "op: detail text");
  CHECK(std::string(no_op.what()) == "ACCEL_ERROR_OUT_OF_RANGE: op: detail text");
}

TEST_CASE("Error::what() names the failed operation once", "[cxx][error]") {
  reset_thread_state();
  // Failures of several C calls, each through the C++ layer: the library's
  // detail starts with the function's name, what() must not repeat it.
  std::vector<std::function<void()>> failing = {
      [] { accel::set_device_index(7); },
      [] { (void)accel::exchange_device(7); },
      [] { (void)accel::Stream::create(7); },
      [] {
        accel::Event e(accel::EventOptions{false, 7});
      },
      [] { (void)accel::device_properties(7); },
      [] { accel::synchronize(7); },
      [] {
        accel::Stream s = accel::Stream::create(0);
        accel::Stream moved = std::move(s);
        s.synchronize();  // a moved-from Stream holds no handle
      },
  };
  for (std::size_t i = 0; i < failing.size(); ++i) {
    INFO("failing call #" << i);
    try {
      failing[i]();
      FAIL("did not throw");
    } catch (const accel::Error& e) {
      const std::string what = e.what();
      INFO("what(): " << what);
      REQUIRE_FALSE(e.operation().empty());
      CHECK(what.rfind(e.operation() + ": ", 0) == 0);
      CHECK(occurrences(what, e.operation()) == 1);
      CHECK(what.find(e.status_name()) != std::string::npos);
    }
  }
}

// --- DeviceIndexGuard -------------------------------------------------------------

TEST_CASE("DeviceIndexGuard sets and restores the device", "[cxx][guard]") {
  reset_thread_state();
  {
    accel::DeviceIndexGuard g(1);
    CHECK(g.active());
    CHECK(g.original_device() == 0);
    CHECK(accel::current_device_index() == 1);
  }
  CHECK(accel::current_device_index() == 0);

  SECTION("an empty optional or a negative index is a no-op") {
    accel::set_device_index(1);
    {
      accel::DeviceIndexGuard none(std::nullopt);
      CHECK_FALSE(none.active());
      CHECK(accel::current_device_index() == 1);
      accel::set_device_index(0);  // a no-op guard restores nothing
    }
    CHECK(accel::current_device_index() == 0);
    {
      accel::DeviceIndexGuard neg(-1);
      CHECK_FALSE(neg.active());
      CHECK(accel::current_device_index() == 0);
    }
    CHECK(accel::current_device_index() == 0);
  }

  SECTION("an invalid index throws and changes nothing") {
    try {
      accel::DeviceIndexGuard bad(2);
      FAIL("guard on device 2 of 2 did not throw");
    } catch (const accel::Error& e) {
      CHECK(e.status() == ACCEL_ERROR_INVALID_DEVICE);
    }
    CHECK(accel::current_device_index() == 0);
  }

  SECTION("restores while an exception unwinds") {
    bool caught = false;
    try {
      accel::DeviceIndexGuard outer(1);
      {
        accel::DeviceIndexGuard inner(0);
        CHECK(accel::current_device_index() == 0);
        accel::DeviceIndexGuard innermost(1);
        CHECK(accel::current_device_index() == 1);
        throw std::runtime_error("boom");
      }
    } catch (const std::runtime_error& e) {
      caught = std::string(e.what()) == "boom";
      CHECK(accel::current_device_index() == 0);
    }
    CHECK(caught);
    CHECK(accel::current_device_index() == 0);

    // An accel::Error thrown inside the guarded scope unwinds the same way.
    try {
      accel::DeviceIndexGuard g(1);
      accel::Stream::create(99);
    } catch (const accel::Error& e) {
      CHECK(e.status() == ACCEL_ERROR_INVALID_DEVICE);
    }
    CHECK(accel::current_device_index() == 0);
  }

  SECTION("nested guards restore in reverse order") {
    accel::DeviceIndexGuard a(1);
    CHECK(accel::current_device_index() == 1);
    {
      accel::DeviceIndexGuard b(0);
      CHECK(b.original_device() == 1);
      CHECK(accel::current_device_index() == 0);
      {
        accel::DeviceIndexGuard c(0);  // already current: still restores to 0
        CHECK(accel::current_device_index() == 0);
      }
      CHECK(accel::current_device_index() == 0);
    }
    CHECK(accel::current_device_index() == 1);
  }
  accel::set_device_index(0);
}

TEST_CASE("nested DeviceIndexGuards on two threads at once are independent",
          "[cxx][guard][threads]") {
  reset_thread_state();
  constexpr int kRounds = 200;
  // Each step of both threads runs between two barrier phases, so the
  // threads really interleave their guard changes.
  std::barrier sync(2);
  std::vector<std::string> errors[2];

  auto body = [&](int self) {
    const int mine = self;       // device this thread starts on
    const int other = 1 - self;  // device its outer guard switches to
    try {
      accel::set_device_index(mine);
      for (int round = 0; round < kRounds; ++round) {
        auto expect = [&](int want, const char* where) {
          const int got = accel::current_device_index();
          if (got != want)
            errors[self].push_back("round " + std::to_string(round) + " " + where + ": device " +
                                   std::to_string(got) + ", expected " + std::to_string(want));
        };
        sync.arrive_and_wait();
        {
          accel::DeviceIndexGuard outer(other);
          sync.arrive_and_wait();
          expect(other, "in outer");
          {
            accel::DeviceIndexGuard inner(mine);
            sync.arrive_and_wait();
            expect(mine, "in inner");
            try {
              accel::DeviceIndexGuard thrower(other);
              sync.arrive_and_wait();
              expect(other, "in thrower");
              throw std::runtime_error("unwind");
            } catch (const std::runtime_error&) {
            }
            sync.arrive_and_wait();
            expect(mine, "after thrower");
          }
          sync.arrive_and_wait();
          expect(other, "after inner");
        }
        sync.arrive_and_wait();
        expect(mine, "after outer");
      }
    } catch (const std::exception& e) {
      errors[self].push_back(std::string("exception: ") + e.what());
      // Keep the other thread from waiting forever on the barrier.
      sync.arrive_and_drop();
    }
  };
  std::thread t0(body, 0);
  std::thread t1(body, 1);
  t0.join();
  t1.join();
  for (int t = 0; t < 2; ++t) {
    INFO("thread " << t);
    CHECK(errors[t].empty());
    for (const auto& e : errors[t]) UNSCOPED_INFO(e);
  }
  CHECK(accel::current_device_index() == 0);  // this thread untouched
}

// --- Stream ---------------------------------------------------------------------------

TEST_CASE("Stream: create / query / synchronize / device / priority", "[cxx][stream]") {
  reset_thread_state();
  accel::Stream s = accel::Stream::create(1, -1);
  CHECK(s.owns());
  CHECK(static_cast<bool>(s));
  CHECK(s.device() == 1);
  CHECK(s.priority() == -1);
  CHECK(s.query());

  const accel::PriorityRange range = accel::stream_priority_range(1);
  accel::Stream clamped = accel::Stream::create(1, range.greatest - 100);
  CHECK(clamped.priority() == range.greatest);

  Gate gate;
  gate.launch(s);
  gate.wait_entered();
  CHECK_FALSE(s.query());
  gate.open();
  s.synchronize();
  CHECK(s.query());

  accel::Stream on_current = accel::Stream::create();  // empty: current device
  CHECK(on_current.device() == 0);
  CHECK(on_current.priority() == 0);

  CHECK_THROWS_AS(accel::Stream::create(2), accel::Error);
}

TEST_CASE("Stream: current and default streams are non-owning", "[cxx][stream]") {
  reset_thread_state();
  {
    accel::Stream cur = accel::Stream::current();
    CHECK_FALSE(cur.owns());
    CHECK(cur.handle() == default_stream_of(0));
    CHECK(cur.priority() == 0);
    accel::Stream cur1 = accel::current_stream(1);
    CHECK(cur1.device() == 1);
    CHECK(cur1.handle() == default_stream_of(1));
  }
  // Destroying the wrappers destroyed nothing.
  accel::Stream again = accel::Stream::current();
  CHECK(again.query());
  CHECK(accel_stream_query(default_stream_of(0)) == ACCEL_SUCCESS);

  // borrow / view / adopt / release
  accel_stream_t raw = nullptr;
  REQUIRE(accel_stream_create(0, 0, &raw) == ACCEL_SUCCESS);
  {
    accel::Stream b = accel::Stream::borrow(raw);
    CHECK_FALSE(b.owns());
    accel::Stream v = b.view();
    CHECK(v == b);
  }
  CHECK(accel_stream_query(raw) == ACCEL_SUCCESS);  // still alive
  accel::Stream owner = accel::Stream::adopt(raw);
  CHECK(owner.owns());
  accel_stream_t back = owner.release();
  CHECK(back == raw);
  CHECK_FALSE(owner.owns());
  CHECK(accel_stream_destroy(raw) == ACCEL_SUCCESS);
}

TEST_CASE("Stream: move semantics", "[cxx][stream][move]") {
  reset_thread_state();
  accel::Stream a = accel::Stream::create(0);
  accel_stream_t raw_a = a.handle();

  accel::Stream b(std::move(a));
  CHECK(b.handle() == raw_a);
  CHECK(b.owns());
  CHECK(a.handle() ==
        nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  CHECK_FALSE(a.owns());
  CHECK_FALSE(static_cast<bool>(a));
  try {
    a.synchronize();
    FAIL("operation on a moved-from Stream did not throw");
  } catch (const accel::Error& e) {
    CHECK(e.status() == ACCEL_ERROR_INVALID_ARGUMENT);
  }

  // Move assignment destroys the stream the target owned.
  accel::Stream c = accel::Stream::create(1);
  accel_stream_t raw_c = c.handle();
  c = std::move(b);
  CHECK(c.handle() == raw_a);
  CHECK(accel_stream_query(raw_c) == ACCEL_ERROR_INVALID_ARGUMENT);  // destroyed
  CHECK(c.query());

  // Self-move leaves it intact.
  accel::Stream& alias = c;
  c = std::move(alias);
  CHECK(c.handle() == raw_a);

  // Moving a non-owning wrapper over an owning one does not destroy the
  // wrapped default stream later.
  {
    accel::Stream d = accel::Stream::create(0);
    d = accel::Stream::current(0);
    CHECK_FALSE(d.owns());
  }
  CHECK(accel_stream_query(default_stream_of(0)) == ACCEL_SUCCESS);
}

TEST_CASE("Stream: wait for an event and for another stream", "[cxx][stream][event]") {
  reset_thread_state();
  accel::Stream producer = accel::Stream::create(0);
  accel::Stream consumer = accel::Stream::create(0);

  SECTION("wait(Event)") {
    Gate gate;
    std::atomic<int> order{0};
    std::atomic<int> producer_done{0}, consumer_ran{0};
    gate.launch(producer);
    producer.launch_host_func([&] { producer_done = ++order; });
    accel::Event e;
    producer.record(e);
    consumer.wait(e);
    consumer.launch_host_func([&] { consumer_ran = ++order; });
    gate.wait_entered();
    std::this_thread::sleep_for(20ms);
    CHECK(consumer_ran.load() == 0);  // held back by the event
    CHECK_FALSE(e.query());
    gate.open();
    consumer.synchronize();
    CHECK(producer_done.load() == 1);
    CHECK(consumer_ran.load() == 2);
    CHECK(e.query());
  }

  SECTION("wait(Stream)") {
    Gate gate;
    std::atomic<int> order{0};
    std::atomic<int> producer_done{0}, consumer_ran{0};
    gate.launch(producer);
    producer.launch_host_func([&] { producer_done = ++order; });
    consumer.wait(producer);
    consumer.launch_host_func([&] { consumer_ran = ++order; });
    gate.wait_entered();
    std::this_thread::sleep_for(20ms);
    CHECK(consumer_ran.load() == 0);
    gate.open();
    consumer.synchronize();
    CHECK(producer_done.load() == 1);
    CHECK(consumer_ran.load() == 2);
    consumer.wait(consumer);  // waiting on itself is a no-op
  }

  SECTION("streams of different devices: ordered or refused; as the backend declares") {
    // The C API orders work across devices of a backend that declares
    // ACCEL_CAP_CROSS_DEVICE_WAIT (sim does) and refuses it otherwise.
    std::uint32_t caps = 0;
    for (const accel::BackendInfo& b : accel::backends())
      if (b.is_current) caps = b.capabilities;
    accel::Stream other = accel::Stream::create(1);
    if ((caps & ACCEL_CAP_CROSS_DEVICE_WAIT) != 0) {
      Gate gate;
      std::atomic<int> order{0};
      std::atomic<int> other_done{0}, consumer_ran{0};
      gate.launch(other);
      other.launch_host_func([&] { other_done = ++order; });
      consumer.wait(other);
      consumer.launch_host_func([&] { consumer_ran = ++order; });
      gate.wait_entered();
      std::this_thread::sleep_for(20ms);
      CHECK(consumer_ran.load() == 0);  // held back by the other device's stream
      gate.open();
      consumer.synchronize();
      CHECK(other_done.load() == 1);
      CHECK(consumer_ran.load() == 2);
    } else {
      try {
        consumer.wait(other);
        FAIL("cross-device wait did not throw on a backend without ACCEL_CAP_CROSS_DEVICE_WAIT");
      } catch (const accel::Error& e) {
        CHECK(e.status() == ACCEL_ERROR_DEVICE_MISMATCH);
      }
    }
  }
}

TEST_CASE("Stream: launch_host_func with any callable", "[cxx][stream][hostfn]") {
  reset_thread_state();
  accel::Stream s = accel::Stream::create(1);

  SECTION("move-only callables run once; in order; and are deleted after") {
    auto token = std::make_shared<int>(0);
    std::vector<int> seen;
    std::mutex mu;
    for (int i = 0; i < 10; ++i) {
      auto owned = std::make_unique<int>(i);
      s.launch_host_func([owned = std::move(owned), token, &seen, &mu] {
        std::lock_guard<std::mutex> lock(mu);
        seen.push_back(*owned);
      });
    }
    s.synchronize();
    std::vector<int> want(10);
    std::iota(want.begin(), want.end(), 0);
    CHECK(seen == want);
    CHECK(token.use_count() == 1);  // every holder was deleted

    // A function pointer and a std::function work too.
    static std::atomic<int> hits{0};
    s.launch_host_func(+[] { ++hits; });
    std::function<void()> fn = [] { ++hits; };
    s.launch_host_func(fn);
    s.synchronize();
    CHECK(hits.load() == 2);
  }

  SECTION("an exception from the callable goes to the error handler; the stream goes on") {
    {
      std::lock_guard<std::mutex> lock(g_handler_mu);
      g_handler_calls.clear();
    }
    const accel::ErrorHandler old = accel::set_error_handler(&capturing_handler);
    std::atomic<bool> after{false};
    s.launch_host_func([] { throw std::runtime_error("from the host function"); });
    s.launch_host_func([] { throw 42; });
    s.launch_host_func([&] { after = true; });
    s.synchronize();
    accel::set_error_handler(old);
    CHECK(after.load());
    std::lock_guard<std::mutex> lock(g_handler_mu);
    REQUIRE(g_handler_calls.size() == 2);
    CHECK(g_handler_calls[0].find("from the host function") != std::string::npos);
    CHECK(g_handler_calls[1].find("host function") != std::string::npos);
  }

  SECTION("a failed launch destroys the callable without calling it") {
    auto token = std::make_shared<int>(0);
    bool called = false;
    accel::Stream moved_from = std::move(s);
    try {
      s.launch_host_func([token, &called] { called = true; });
      FAIL("launch on a moved-from stream did not throw");
    } catch (const accel::Error& e) {
      CHECK(e.status() == ACCEL_ERROR_INVALID_ARGUMENT);
    }
    CHECK_FALSE(called);
    CHECK(token.use_count() == 1);
  }
}

// --- StreamGuard -----------------------------------------------------------------------

TEST_CASE("StreamGuard sets and restores the current stream and device", "[cxx][guard][stream]") {
  reset_thread_state();
  const accel_stream_t def0 = default_stream_of(0);
  const accel_stream_t def1 = default_stream_of(1);
  accel::Stream s1 = accel::Stream::create(1);

  {
    accel::StreamGuard g(s1);
    CHECK(g.original_device() == 0);
    CHECK(g.original_stream().handle() == def1);
    CHECK(accel::current_device_index() == 1);
    CHECK(accel::Stream::current().handle() == s1.handle());
    CHECK(accel::Stream::current(1).handle() == s1.handle());
    CHECK(accel::Stream::current(0).handle() == def0);
  }
  CHECK(accel::current_device_index() == 0);
  CHECK(accel::Stream::current(1).handle() == def1);
  CHECK(accel::Stream::current(0).handle() == def0);

  SECTION("restores while an exception unwinds; nested") {
    accel::Stream s0 = accel::Stream::create(0);
    accel::Stream s1b = accel::Stream::create(1);
    try {
      accel::StreamGuard outer(s1);
      accel::StreamGuard middle(s0);
      CHECK(accel::current_device_index() == 0);
      accel::StreamGuard inner(s1b);
      CHECK(accel::Stream::current().handle() == s1b.handle());
      CHECK(accel::Stream::current(0).handle() == s0.handle());
      throw std::runtime_error("unwind");
    } catch (const std::runtime_error&) {
    }
    CHECK(accel::current_device_index() == 0);
    CHECK(accel::Stream::current(0).handle() == def0);
    CHECK(accel::Stream::current(1).handle() == def1);
  }

  SECTION("a DeviceIndexGuard inside a StreamGuard") {
    accel::StreamGuard g(s1);
    {
      accel::DeviceIndexGuard d(0);
      CHECK(accel::Stream::current().handle() == def0);
    }
    CHECK(accel::Stream::current().handle() == s1.handle());
  }

  SECTION("a moved-from stream is refused and nothing changes") {
    accel::Stream gone = std::move(s1);
    CHECK_THROWS_AS(accel::StreamGuard(s1), accel::Error);
    CHECK(accel::current_device_index() == 0);
    CHECK(accel::Stream::current(1).handle() == def1);
  }
}

// --- Event ------------------------------------------------------------------------------

TEST_CASE("Event: query / synchronize / device / errors", "[cxx][event]") {
  reset_thread_state();
  accel::Event plain;
  CHECK_FALSE(plain.timing_enabled());
  CHECK(plain.device() == 0);
  CHECK(plain.query());  // never recorded: complete
  plain.synchronize();   // returns at once

  accel::Event on1({.device = 1});
  CHECK(on1.device() == 1);

  accel::Event timed({.enable_timing = true});
  try {
    (void)timed.elapsed_time(plain);
    FAIL("elapsed_time against an event without timing did not throw");
  } catch (const accel::Error& e) {
    CHECK((e.status() == ACCEL_ERROR_EVENT_NO_TIMING ||
           e.status() == ACCEL_ERROR_EVENT_NOT_RECORDED));
  }
  accel::Event timed2({.enable_timing = true});
  try {
    (void)timed.elapsed_time(timed2);
    FAIL("elapsed_time of never-recorded events did not throw");
  } catch (const accel::Error& e) {
    CHECK(e.status() == ACCEL_ERROR_EVENT_NOT_RECORDED);
  }

  // record() with no stream: the current stream of the event's device.
  accel::Stream s = accel::Stream::create(1);
  Gate gate;
  {
    accel::StreamGuard g(s);
    gate.launch(s);
    gate.wait_entered();
    on1.record();
  }
  CHECK_FALSE(on1.query());
  gate.open();
  on1.synchronize();
  CHECK(on1.query());

  // An event of device 1 on a stream of device 0 is refused.
  accel::Stream s0 = accel::Stream::create(0);
  try {
    on1.record(s0);
    FAIL("cross-device record did not throw");
  } catch (const accel::Error& e) {
    CHECK(e.status() == ACCEL_ERROR_DEVICE_MISMATCH);
  }
}

TEST_CASE("Event: elapsed_time measures a sleeping host function", "[cxx][event][timing]") {
  reset_thread_state();
  accel::Stream s = accel::Stream::create(1);
  accel::Event start({.enable_timing = true, .device = 1});
  accel::Event end({.enable_timing = true, .device = 1});
  s.record(start);
  s.launch_host_func([] { std::this_thread::sleep_for(50ms); });
  s.record(end);
  end.synchronize();
  const std::chrono::duration<double, std::milli> t = start.elapsed_time(end);
  CHECK(t.count() >= 45.0);
  CHECK(t.count() < 5000.0);
  CHECK(t >= 45ms);  // chrono arithmetic works on the result

  // record_event makes, records and returns an event of the stream's device.
  accel::Event e2 = s.record_event(true);
  CHECK(e2.timing_enabled());
  CHECK(e2.device() == 1);
  e2.synchronize();
  CHECK(end.elapsed_time(e2).count() >= 0.0);
}

TEST_CASE("Event: move semantics", "[cxx][event][move]") {
  reset_thread_state();
  accel::Event a({.enable_timing = true});
  accel_event_t raw_a = a.handle();
  accel::Event b(std::move(a));
  CHECK(b.handle() == raw_a);
  CHECK(b.timing_enabled());
  CHECK(a.handle() == nullptr);  // NOLINT(bugprone-use-after-move)
  CHECK_THROWS_AS(a.query(), accel::Error);

  accel::Event c;
  accel_event_t raw_c = c.handle();
  c = std::move(b);
  CHECK(c.handle() == raw_a);
  CHECK(accel_event_query(raw_c) == ACCEL_ERROR_INVALID_ARGUMENT);  // destroyed
  CHECK(c.query());

  accel_event_t released = c.release();
  CHECK_FALSE(static_cast<bool>(c));
  CHECK(accel_event_destroy(released) == ACCEL_SUCCESS);
}

// --- DeviceBuffer ---------------------------------------------------------------------

TEST_CASE("DeviceBuffer: round trip through std::span", "[cxx][memory]") {
  reset_thread_state();
  for (int device = 0; device < 2; ++device) {
    INFO("device " << device);
    accel::Stream s = accel::Stream::create(device);
    std::vector<std::int32_t> in(4096);
    std::iota(in.begin(), in.end(), -100);
    accel::DeviceBuffer<std::int32_t> buf(in.size(), device);
    CHECK(buf.size() == in.size());
    CHECK(buf.size_bytes() == in.size() * sizeof(std::int32_t));
    CHECK(buf.device() == device);
    CHECK(buf.data() != nullptr);

    buf.copy_from(in, s);
    std::vector<std::int32_t> out(in.size(), 0);
    buf.copy_to(out, s);
    s.synchronize();
    CHECK(out == in);

    // Partial copies with an offset.
    const std::vector<std::int32_t> patch = {7, 8, 9};
    buf.copy_from(patch, s, 10);
    std::vector<std::int32_t> window(5, 0);
    buf.copy_to(window, s, 9);
    s.synchronize();
    CHECK(window == std::vector<std::int32_t>{in[9], 7, 8, 9, in[13]});

    // fill_bytes then read back.
    buf.fill_bytes(0xAB, s);
    buf.copy_to(out, s);
    s.synchronize();
    std::uint32_t word = 0;
    std::memcpy(&word, out.data(), sizeof word);
    CHECK(word == 0xABABABABu);

    // Device-to-device.
    accel::DeviceBuffer<std::int32_t> copy(in.size(), device);
    buf.copy_from(in, s);
    copy.copy_from(buf, s);
    std::fill(out.begin(), out.end(), 0);
    copy.copy_to(out, s);
    s.synchronize();
    CHECK(out == in);
  }

  SECTION("std::span arguments; also temporaries of one") {
    accel::Stream s = accel::Stream::create(0);
    std::vector<std::int32_t> in(64);
    std::iota(in.begin(), in.end(), 1);
    std::vector<std::int32_t> out(in.size(), 0);
    accel::DeviceBuffer<std::int32_t> buf(in.size(), 0);
    const std::span<const std::int32_t> src(in);
    buf.copy_from(src, s);
    buf.copy_to(std::span<std::int32_t>(out).first(32), s);
    buf.copy_to(std::span<std::int32_t>(out).subspan(32), s, 32);
    s.synchronize();
    CHECK(out == in);
    std::span<std::int32_t, 4> fixed(out.data(), 4);
    buf.copy_to(fixed, s, 60);
    s.synchronize();
    CHECK(out[0] == 61);
    CHECK(out[3] == 64);
  }

  SECTION("default stream overloads use the current stream of the buffer's device") {
    accel::DeviceBuffer<double> d(8, 1);
    std::vector<double> v = {1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5};
    d.copy_from(v);
    std::vector<double> back(8);
    d.copy_to(back);
    accel::Stream::current(1).synchronize();
    CHECK(back == v);
  }

  SECTION("ranges that do not fit and foreign streams are refused") {
    accel::DeviceBuffer<float> f(4, 0);
    std::vector<float> big(5, 1.0f);
    accel::Stream s0 = accel::Stream::create(0);
    try {
      f.copy_from(big, s0);
      FAIL("oversized copy_from did not throw");
    } catch (const accel::Error& e) {
      CHECK(e.status() == ACCEL_ERROR_INVALID_ARGUMENT);
    }
    std::vector<float> two(2);
    CHECK_THROWS_AS(f.copy_to(two, s0, 3), accel::Error);
    accel::Stream s1 = accel::Stream::create(1);
    std::vector<float> four(4, 2.0f);
    try {
      f.copy_from(four, s1);
      FAIL("copy on a stream of another device did not throw");
    } catch (const accel::Error& e) {
      CHECK((e.status() == ACCEL_ERROR_DEVICE_MISMATCH ||
             e.status() == ACCEL_ERROR_INVALID_ARGUMENT));
    }
  }
}

TEST_CASE("DeviceBuffer: ownership / moves / memory stats", "[cxx][memory][move]") {
  reset_thread_state();
  accel::reset_peak_memory_stats(1);
  const accel::MemoryStats before = accel::memory_stats(1);
  {
    accel::DeviceBuffer<std::uint64_t> a(1000, 1);
    const accel::MemoryStats during = accel::memory_stats(1);
    CHECK(during.allocated_bytes == before.allocated_bytes + 8000);
    CHECK(during.allocation_count == before.allocation_count + 1);
    CHECK(during.total_allocations == before.total_allocations + 1);

    std::uint64_t* raw = a.data();
    accel::DeviceBuffer<std::uint64_t> b(std::move(a));
    CHECK(b.data() == raw);
    CHECK(b.size() == 1000);
    CHECK(a.empty());  // NOLINT(bugprone-use-after-move)
    CHECK(a.data() == nullptr);
    CHECK(accel::memory_stats(1).allocation_count == before.allocation_count + 1);

    accel::DeviceBuffer<std::uint64_t> c(10, 1);
    CHECK(accel::memory_stats(1).allocation_count == before.allocation_count + 2);
    c = std::move(b);  // frees c's old memory
    CHECK(c.data() == raw);
    CHECK(accel::memory_stats(1).allocation_count == before.allocation_count + 1);
    CHECK(accel::memory_stats(1).allocated_bytes == before.allocated_bytes + 8000);
  }
  const accel::MemoryStats after = accel::memory_stats(1);
  CHECK(after.allocated_bytes == before.allocated_bytes);
  CHECK(after.allocation_count == before.allocation_count);
  CHECK(after.peak_allocated_bytes >= before.allocated_bytes + 8080);

  accel::DeviceBuffer<int> empty_buf;
  CHECK(empty_buf.empty());
  CHECK(empty_buf.device() == -1);
  accel::DeviceBuffer<int> zero(0, 1);
  CHECK(zero.empty());
  CHECK(zero.data() == nullptr);
  CHECK(accel::memory_stats(1).allocation_count == before.allocation_count);

  accel::DeviceBuffer<char> r(64, 0);
  char* p = r.release();
  CHECK(r.empty());
  CHECK(accel_free(p) == ACCEL_SUCCESS);

  const accel::MemoryInfo info = accel::mem_get_info(1);
  CHECK(info.total_bytes > 0);
  CHECK(info.free_bytes <= info.total_bytes);
}

// --- properties -------------------------------------------------------------------------

TEST_CASE("device_properties and memory_stats", "[cxx][device]") {
  reset_thread_state();
  const accel::DeviceProperties p = accel::device_properties(1);
  CHECK(p.device_index == 1);
  CHECK_FALSE(p.name.empty());
  CHECK_FALSE(p.vendor.empty());
  CHECK(p.total_memory > 0);
  CHECK(p.uuid.has_value());
  CHECK(p.compute_units > 0);
  const accel::DeviceProperties p0 = accel::device_properties();
  CHECK(p0.device_index == 0);
  CHECK(p0.uuid != p.uuid);
  CHECK_THROWS_AS(accel::device_properties(2), accel::Error);
  CHECK_THROWS_AS(accel::memory_stats(2), accel::Error);
}

TEST_CASE("interop: native handles and pinned memory and peer copies and attributes",
          "[cxx][interop]") {
  REQUIRE(accel::device_count() == 2);
  SECTION("Stream::native_handle and Stream::from_native share one queue") {
    accel::Stream owner = accel::Stream::create(1);
    const accel_native_handle_t h = owner.native_handle();
    CHECK(h.type == ACCEL_NATIVE_SIM);
    CHECK(h.handle != nullptr);
    accel::Stream wrapper = accel::Stream::from_native(h, 1);
    CHECK(wrapper.owns());
    CHECK(wrapper.device() == 1);
    CHECK(wrapper.native_handle().handle == h.handle);
    std::vector<int> in(1000), out(1000, 0);
    std::iota(in.begin(), in.end(), 5);
    accel::DeviceBuffer<int> buf(in.size(), 1);
    buf.copy_from(in, owner);   // on the owner
    buf.copy_to(out, wrapper);  // on the wrapper: the same queue, so after it
    wrapper.synchronize();
    CHECK(out == in);
  }
  SECTION("HostBuffer is pinned; converts to HostSpan; frees itself") {
    accel::HostBuffer<float> pinned(4096);
    REQUIRE(pinned.size() == 4096);
    std::iota(pinned.begin(), pinned.end(), 0.5f);
    const accel::PointerAttributes a = accel::pointer_attributes(pinned.data() + 7);
    CHECK(a.type == ACCEL_MEMORY_HOST_PINNED);
    CHECK(a.base == pinned.data());
    CHECK(a.size == 4096 * sizeof(float));
    accel::DeviceBuffer<float> dev(4096, 0);
    accel::Stream s = accel::Stream::current(0);
    dev.copy_from(pinned, s);
    accel::HostBuffer<float> back(4096);
    dev.copy_to(back, s);
    s.synchronize();
    CHECK(std::equal(back.begin(), back.end(), pinned.begin()));
    void* raw = back.data();
    accel::HostBuffer<float> moved = std::move(back);
    CHECK(moved.data() == raw);
    CHECK(back.data() == nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty
  }
  SECTION("DeviceBuffer copies with offsets and counts; across devices") {
    std::vector<int> in(64), out(64, 0);
    std::iota(in.begin(), in.end(), 100);
    accel::DeviceBuffer<int> a(64, 0), b(64, 1);
    accel::Stream s0 = accel::Stream::current(0);
    a.copy_from(in, s0);
    b.fill_bytes(0, accel::Stream::current(1));
    accel::Stream::current(1).synchronize();
    // Elements [10, 30) of a (device 0) into b (device 1) at 20: a peer copy.
    b.copy_from(a, 10, 20, 20, s0);
    s0.synchronize();
    b.copy_to(out, accel::Stream::current(1));
    accel::Stream::current(1).synchronize();
    for (int i = 0; i < 64; ++i) {
      INFO("element " << i);
      CHECK(out[i] == (i >= 20 && i < 40 ? in[i - 10] : 0));
    }
    CHECK_THROWS_AS(b.copy_from(a, 50, 0, 20, s0), accel::Error);  // source range too long
    CHECK(accel::can_device_access_peer(0, 1));
    CHECK_NOTHROW(accel::enable_peer_access(0, 1));
  }
  SECTION("device_attribute and device_capability") {
    CHECK(accel::device_attribute(ACCEL_DEVICE_ATTR_WARP_SIZE, 0) == 32);
    CHECK_FALSE(accel::device_attribute(ACCEL_DEVICE_ATTR_CLOCK_RATE_KHZ, 0).has_value());
    const accel::DeviceCapability c = accel::device_capability(1);
    CHECK(c.supports(ACCEL_DTYPE_FLOAT32));
    CHECK(c.supports(ACCEL_DTYPE_BFLOAT16));
  }
}
