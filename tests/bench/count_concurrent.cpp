// count_concurrent: would counting backends concurrently make discovery
// faster? Measured without changing the core:
// this program does what discovery does for each plugin file (dlopen, the
// entry, init, device_count) either one plugin after the other, as the core
// does, or one thread per plugin, and prints how long each step took as
// JSON. count_concurrent.py runs both modes in interleaved fresh processes
// (cold start is a per-process cost) and reports the medians.
//
//   count-concurrent serial|concurrent PLUGIN.so...
//
// The host services are do-nothing stand-ins. The core is linked because
// plugins use a few of its name functions (accel_status_name and the like,
// as they would inside a program), but its discovery never runs, so the figures are the
// plugins' and their vendor libraries' own cost, the part a concurrent
// discovery could overlap.
#include <accel/accel.h>
#include <accel/accel_plugin.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "direct_plugin.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Result {
  std::string path;
  accel_host_services_t host{};
  double start_ms = 0, dlopen_ms = 0, init_ms = 0, count_ms = 0;
  int32_t count = -1;
  std::string error;
};

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void discover_one(Result& r, Clock::time_point t0) {
  r.host = accel_test::quiet_host();
  auto t = Clock::now();
  r.start_ms = ms_since(t0);
  void* h = dlopen(r.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  r.dlopen_ms = ms_since(t);
  if (h == nullptr) {
    const char* e = dlerror();
    r.error = e != nullptr ? e : "dlopen failed";
    return;
  }
  auto entry = reinterpret_cast<accel_plugin_entry_fn>(dlsym(h, ACCEL_PLUGIN_ENTRY_NAME));
  t = Clock::now();
  const accel_plugin_api_t* api =
      entry != nullptr ? entry(ACCEL_PLUGIN_ABI_MAJOR, ACCEL_PLUGIN_ABI_MINOR, &r.host) : nullptr;
  if (api == nullptr || api->device_count == nullptr) {
    r.error = "no plugin entry or vtable";
    return;
  }
  accel_status_t st = api->init != nullptr ? api->init() : ACCEL_SUCCESS;
  r.init_ms = ms_since(t);
  if (st != ACCEL_SUCCESS) {
    r.error = std::string("init returned ") + accel_status_name(st);
    return;
  }
  t = Clock::now();
  st = api->device_count(&r.count);
  r.count_ms = ms_since(t);
  if (st != ACCEL_SUCCESS) r.error = std::string("device_count returned ") + accel_status_name(st);
  // The handle stays open, as discovery keeps it.
}

// JSON string body: plugin paths and dlerror texts are plain ASCII here,
// but escape what JSON requires anyway.
std::string escaped(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || (std::strcmp(argv[1], "serial") != 0 && std::strcmp(argv[1], "concurrent") != 0)) {
    std::fprintf(stderr, "usage: %s serial|concurrent PLUGIN.so...\n", argv[0]);
    return 2;
  }
  const bool concurrent = std::strcmp(argv[1], "concurrent") == 0;
  std::vector<Result> results(static_cast<size_t>(argc - 2));
  for (size_t i = 0; i < results.size(); ++i) results[i].path = argv[i + 2];

  const auto t0 = Clock::now();
  if (concurrent) {
    std::vector<std::thread> threads;
    for (auto& r : results) threads.emplace_back(discover_one, std::ref(r), t0);
    for (auto& t : threads) t.join();
  } else {
    for (auto& r : results) discover_one(r, t0);
  }
  const double total = ms_since(t0);

  std::printf("{\"mode\": \"%s\", \"total_ms\": %.4f, \"plugins\": [", argv[1], total);
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    std::printf(
        "%s{\"path\": \"%s\", \"start_ms\": %.4f, \"dlopen_ms\": %.4f, \"init_ms\": %.4f, "
        "\"count_ms\": %.4f, \"count\": %d, \"error\": \"%s\"}",
        i == 0 ? "" : ", ", escaped(r.path).c_str(), r.start_ms, r.dlopen_ms, r.init_ms,
        r.count_ms, r.count, escaped(r.error).c_str());
  }
  std::printf("]}\n");
  return 0;
}
