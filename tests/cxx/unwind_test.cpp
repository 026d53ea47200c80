// accel-unwind-test: an exception unwinds between queued copies and the
// synchronize that should have followed them, so DeviceBuffers are
// destroyed while the device still reads and writes them (the report that
// made DeviceBuffer stream-ordered: a heap-use-after-free under ASan on sim).
//
//   accel-unwind-test --expect-backend caching|native
//
// meson runs it twice over sim, with ACCEL_ALLOC_CONF unset and with
// ACCEL_ALLOC_CONF=backend:native; the CI's ASan+UBSan build runs both too.
// With the caching allocator the destructors return at once and the memory
// must not go to another stream before the copies complete (checked by
// address and by data); with backend:native they wait for the stream and
// the vendor free comes after the copies (ASan would see sim's memory freed
// under a running copy). Either way, after synchronizing, the host memory
// holds what the copies wrote. Exit status 0 pass, 1 fail, 2 usage.
#include <accel/accel.hpp>

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;

int g_failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  std::fflush(stdout);
  if (!ok) ++g_failures;
}

// Holds a stream in a host function until open() or `limit` has passed, so
// the copies queued behind it are certainly still pending while the
// exception unwinds. With the caching allocator the test opens it once it
// has looked; with backend:native the destructors wait for the stream, so
// it opens by itself after a short while. The state is shared with the host
// function, which may outlive the Hold.
class Hold {
 public:
  explicit Hold(std::chrono::milliseconds limit) : limit_(limit) {}
  ~Hold() { open(); }
  void launch(const accel::Stream& s) {
    s.launch_host_func([st = state_, limit = limit_] {
      std::unique_lock<std::mutex> lock(st->mu);
      st->cv.wait_for(lock, limit, [&] { return st->open; });
    });
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
    bool open = false;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::chrono::milliseconds limit_;
};

struct Addresses {
  std::vector<const void*> freed;  // the device memory the unwinding freed
};

constexpr std::size_t kLarge = 300000;  // ints: 1.2 MB, the large pool
constexpr std::size_t kSmall = 1000;    // ints: 4 KB, the small pool

// Queues copies into and out of three buffers on `s`, behind `hold`, and
// throws before synchronizing: the buffers die during unwinding.
[[noreturn]] void copy_then_fail(const accel::Stream& s, const std::vector<int>& in,
                                 std::vector<int>& out_large, std::vector<int>& out_small,
                                 Hold& hold, Addresses& addresses) {
  accel::DeviceBuffer<int> a(kLarge, s);
  accel::DeviceBuffer<int> b(kLarge, s);
  // On the current (default) stream, used on `s`: its copies record `s`.
  accel::DeviceBuffer<int> c(kSmall);
  addresses.freed = {a.data(), b.data(), c.data()};
  a.copy_from(in, s);
  hold.launch(s);
  b.copy_from(a, s);  // device to device, behind the hold
  c.copy_from(accel::HostSpan<const int>(in.data(), kSmall), s);
  b.copy_to(out_large, s);
  c.copy_to(out_small, s);
  throw std::runtime_error("failed after queueing the copies, before synchronizing");
}

bool was_freed(const Addresses& addresses, const void* p) {
  for (const void* f : addresses.freed)
    if (f == p) return true;
  return false;
}

void round_trip(int round, bool caching) {
  const std::string tag = "round " + std::to_string(round) + ": ";
  accel::Stream s = accel::Stream::create();
  accel::Stream other = accel::Stream::create();
  std::vector<int> in(kLarge);
  std::iota(in.begin(), in.end(), round * 1000);
  std::vector<int> out_large(kLarge, 0), out_small(kSmall, 0);
  // Registered: the copies into them are queued behind the hold, and a copy
  // into pageable memory returns only once it has completed (CUDA's rule).
  expect(accel_host_register(out_large.data(), kLarge * sizeof(int), 0) == ACCEL_SUCCESS &&
             accel_host_register(out_small.data(), kSmall * sizeof(int), 0) == ACCEL_SUCCESS,
         tag + "the host buffers are registered");
  const std::uint64_t live_before = accel::memory_stats().allocation_count;

  Hold hold(caching ? std::chrono::milliseconds(30s) : std::chrono::milliseconds(200ms));
  Addresses addresses;
  std::string caught;
  try {
    copy_then_fail(s, in, out_large, out_small, hold, addresses);
  } catch (const accel::Error& e) {
    caught = std::string("accel::Error ") + e.what();
  } catch (const std::runtime_error& e) {
    caught = e.what();
  }
  expect(caught == "failed after queueing the copies, before synchronizing",
         tag + "the exception unwound the buffers (caught: " + caught + ")");
  expect(accel::memory_stats().allocation_count == live_before,
         tag + "the unwinding freed the three buffers");

  if (caching) {
    // The destructors did not wait: the copies are still queued.
    expect(!s.query(), tag + "the copies are still queued after the unwinding");
  } else {
    // backend:native: each destructor waited for its stream before the
    // vendor free.
    expect(s.query(), tag + "backend:native: the destructors waited for the copies");
  }

  // Other owners allocate and overwrite; with the caching allocator they
  // must get other memory while the copies are queued.
  std::vector<accel::DeviceBuffer<int>> scribblers;
  bool distinct = true;
  for (int i = 0; i < 3; ++i) {
    scribblers.emplace_back(kLarge, other);
    scribblers.emplace_back(kSmall, other);
    scribblers.emplace_back(kSmall);  // the default stream, c's own
  }
  for (auto& buf : scribblers) {
    distinct = distinct && !was_freed(addresses, buf.data());
    buf.fill_bytes(0xEE, buf.stream());
  }
  if (caching) expect(distinct, tag + "no other owner got the memory while the copies were queued");
  other.synchronize();

  hold.open();
  s.synchronize();
  accel::synchronize();
  expect(out_large == in, tag +
                              "the host data is what the copies wrote (1.2 MB, device to device "
                              "then to the host)");
  expect(std::equal(out_small.begin(), out_small.end(), in.begin()),
         tag + "the host data is what the copies wrote (4 KB, a buffer of the default stream)");
  scribblers.clear();
  accel::synchronize();
  expect(accel::memory_stats().allocation_count == live_before, tag + "every allocation was freed");
  accel_host_unregister(out_large.data());
  accel_host_unregister(out_small.data());
}

}  // namespace

int main(int argc, char** argv) {
  // A watchdog for standalone runs (meson has its own timeout): a wait that
  // never ends is a failure, not a hang.
  alarm(120);
  std::string expected;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--expect-backend") == 0 && i + 1 < argc) {
      expected = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s --expect-backend caching|native\n", argv[0]);
      return 2;
    }
  }
  if (expected != "caching" && expected != "native") {
    std::fprintf(stderr, "usage: %s --expect-backend caching|native\n", argv[0]);
    return 2;
  }
  try {
    if (!accel::is_available()) {
      std::printf("FAILED: no accelerator: %s\n", accel::selection_reason().c_str());
      return 1;
    }
    const std::string backend = accel::memory::allocator_backend();
    expect(backend == expected,
           "the allocator is " + backend + " (ACCEL_ALLOC_CONF='" +
               (std::getenv("ACCEL_ALLOC_CONF") ? std::getenv("ACCEL_ALLOC_CONF") : "") +
               "'), expected " + expected);
    for (int round = 0; round < 3; ++round) round_trip(round, backend == "caching");
  } catch (const std::exception& e) {
    std::printf("FAILED: %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", g_failures == 0 ? "PASS" : "FAIL");
  return g_failures == 0 ? 0 : 1;
}
