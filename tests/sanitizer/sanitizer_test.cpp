// The stream sanitizer (ACCEL_STREAM_SANITIZER) end to end on the backend the
// environment selects. The parent runs each scenario in a child process of
// this program (the variable is read once per process) and reads its
// stderr:
//   missing  a block read on stream B after an event wait, B slowed by a host
//            function, freed on stream A without record_stream and reused: one
//            report naming both streams.
//   ordered  the same program made correct three ways (record_stream, an
//            event recorded on B that A waits for, a stream synchronize): no
//            report; and ACCEL_STREAM_SANITIZER=yes warned about.
//   abort    `missing` with ACCEL_STREAM_SANITIZER=abort: the report, then
//            SIGABRT.
//   kernel   `missing` with B's read a kernel (vector_add of the block into
//            another buffer): the report names accel_launch_kernel.
// Copies and memsets are the accesses, so every backend with streams, events
// and memory can run it; one without exits 77, as does `kernel` where the
// device takes none of the build's kernel images.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "accel/accel.h"
#include "accel_kernels.h"

namespace {

constexpr size_t kBytes = 1 << 16;
constexpr int kSkip = 77;

void check(accel_status_t st, const char* what) {
  if (st == ACCEL_SUCCESS) return;
  std::fprintf(stderr, "%s failed: %s (%s)\n", what, accel_status_name(st), accel_last_error());
  std::exit(st == ACCEL_ERROR_NOT_SUPPORTED || st == ACCEL_ERROR_NO_ACCELERATOR ? kSkip : 1);
}

void slow(void*) { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

struct Pipeline {
  accel_stream_t a = nullptr, b = nullptr;
  accel_event_t ready = nullptr, done = nullptr;
  void* out = nullptr;
  accel_kernel_t add = nullptr;  // vector_add: B's read in `kernel`
};

Pipeline setup() {
  Pipeline p;
  check(accel_stream_create(0, 0, &p.a), "accel_stream_create");
  check(accel_stream_create(0, 0, &p.b), "accel_stream_create");
  check(accel_event_create(0, 0, &p.ready), "accel_event_create");
  check(accel_event_create(0, 0, &p.done), "accel_event_create");
  check(accel_malloc_async(kBytes, p.b, &p.out), "accel_malloc_async");
  std::printf("streams A=%p B=%p\n", static_cast<void*>(p.a), static_cast<void*>(p.b));
  std::fflush(stdout);
  return p;
}

// How chunk `i` orders B's read of the block before A frees it.
enum class Order { none, record_stream, event, synchronize };

// vector_add from the build's images; exits 77 where the device takes none.
accel_kernel_t load_vector_add() {
  accel_module_image_t images[8];
  const size_t count = accel_kernels_images(images, 8);
  accel_module_t module = nullptr;
  accel_status_t st = accel_module_load(0, images, count, nullptr, &module);
  if (st == ACCEL_ERROR_NOT_SUPPORTED || st == ACCEL_ERROR_INVALID_ARGUMENT) {
    std::printf("SKIP: device 0 takes none of the build's kernel images: %s\n", accel_last_error());
    std::exit(77);  // Meson's SKIP
  }
  check(st, "accel_module_load");
  accel_kernel_t k = nullptr;
  check(accel_module_get_kernel(module, "vector_add", &k), "accel_module_get_kernel");
  return k;
}

// B reads the block: a device-to-device copy, or vector_add(block, block).
void read_on_b(Pipeline& p, void* block) {
  if (p.add == nullptr) {
    check(accel_memcpy_async(p.out, block, kBytes, ACCEL_MEMCPY_DEVICE_TO_DEVICE, p.b),
          "accel_memcpy_async");
    return;
  }
  uint32_t n = kBytes / sizeof(float);
  accel_kernel_arg_t args[] = {{ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), block},
                               {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), block},
                               {ACCEL_KERNEL_ARG_DEVICE_POINTER, sizeof(void*), p.out},
                               {ACCEL_KERNEL_ARG_VALUE, sizeof n, &n}};
  accel_launch_config_t config;
  std::memset(&config, 0, sizeof config);
  config.struct_size = sizeof config;
  config.grid = {n / 64, 1, 1};
  config.block = {64, 1, 1};
  config.stream = p.b;
  check(accel_launch_kernel(p.add, &config, args, 4), "accel_launch_kernel");
}

void chunk(Pipeline& p, Order order) {
  void* block = nullptr;
  check(accel_malloc_async(kBytes, p.a, &block), "accel_malloc_async");
  check(accel_memset_async(block, 1, kBytes, p.a), "accel_memset_async");  // written on A
  check(accel_event_record(p.ready, p.a), "accel_event_record");
  check(accel_stream_wait_event(p.b, p.ready), "accel_stream_wait_event");
  // Slows B so that A's next chunk would overwrite the block first.
  accel_status_t st = accel_launch_host_func(p.b, slow, nullptr);
  if (st != ACCEL_SUCCESS && st != ACCEL_ERROR_NOT_SUPPORTED) check(st, "accel_launch_host_func");
  read_on_b(p, block);
  if (order == Order::record_stream) check(accel_record_stream(block, p.b), "accel_record_stream");
  if (order == Order::event) {
    check(accel_event_record(p.done, p.b), "accel_event_record");
    check(accel_stream_wait_event(p.a, p.done), "accel_stream_wait_event");
  }
  if (order == Order::synchronize) check(accel_stream_synchronize(p.b), "accel_stream_synchronize");
  check(accel_free_async(block, p.a), "accel_free_async");
}

int run(const std::string& scenario) {
  Pipeline p = setup();
  if (scenario == "kernel") p.add = load_vector_add();
  if (scenario == "missing" || scenario == "kernel") {
    chunk(p, Order::none);
    chunk(p, Order::none);  // reuses the block
  } else {
    for (Order o : {Order::record_stream, Order::event, Order::synchronize}) chunk(p, o);
  }
  check(accel_synchronize(0), "accel_synchronize");
  check(accel_free(p.out), "accel_free");
  return 0;
}

// Runs this program with `scenario` under ACCEL_STREAM_SANITIZER=`mode`;
// its stdout and stderr in `out`, its wait status in `status`.
void child(const char* self, const char* scenario, const char* mode, std::string& out,
           int& status) {
  setenv("ACCEL_STREAM_SANITIZER", mode, 1);
  const std::string cmd = std::string("exec '") + self + "' run-" + scenario + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) {
    std::perror("popen");
    std::exit(1);
  }
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  status = pclose(f);
}

std::string stream_of(const std::string& out, const char* name) {
  const std::string key = std::string(name) + "=";
  const size_t at = out.find(key);
  if (at == std::string::npos) return {};
  const size_t end = out.find_first_of(" \n", at);
  return out.substr(at + key.size(), end - at - key.size());
}

int fail(const char* why, const std::string& out) {
  std::fprintf(stderr, "FAIL: %s; the child printed:\n%s\n", why, out.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strncmp(argv[1], "run-", 4) == 0) return run(argv[1] + 4);
  const std::string scenario = argc == 2 ? argv[1] : "";
  if (scenario != "missing" && scenario != "ordered" && scenario != "abort" &&
      scenario != "kernel") {
    std::fprintf(stderr, "usage: %s missing|ordered|abort|kernel\n", argv[0]);
    return 2;
  }
  std::string out;
  int status = 0;
  const bool aborts = scenario == "abort";
  child(argv[0], aborts ? "missing" : scenario.c_str(), aborts ? "abort" : "1", out, status);
  std::printf("%s", out.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == kSkip) return kSkip;
  const size_t report = out.find("accel: stream sanitizer:");
  if (scenario == "ordered") {
    if (report != std::string::npos) return fail("a correctly ordered program was reported", out);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return fail("the child failed", out);
    // The variable is read: a value it does not accept is warned about,
    // naming the accepted ones.
    std::string bad;
    child(argv[0], "ordered", "yes", bad, status);
    if (bad.find("ACCEL_STREAM_SANITIZER='yes' ignored") == std::string::npos ||
        bad.find("abort") == std::string::npos)
      return fail("ACCEL_STREAM_SANITIZER=yes was not warned about", bad);
    return 0;
  }
  if (report == std::string::npos) return fail("no stream sanitizer report", out);
  const std::string line = out.substr(report, out.find('\n', report) - report);
  const std::string a = stream_of(out, "A"), b = stream_of(out, "B");
  if (a.empty() || b.empty()) return fail("the child did not name its streams", out);
  if (line.find(a) == std::string::npos || line.find(b) == std::string::npos)
    return fail("the report does not name both streams", out);
  const char* read_call = scenario == "kernel" ? "accel_launch_kernel" : "accel_memcpy_async";
  if (line.find(read_call) == std::string::npos ||
      line.find("accel_free_async") == std::string::npos)
    return fail("the report does not name both calls", out);
  if (aborts && !(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT))
    return fail("ACCEL_STREAM_SANITIZER=abort did not abort", out);
  if (!aborts && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    return fail("ACCEL_STREAM_SANITIZER=1 did not continue", out);
  return 0;
}
