// accel-accelctl-memory-test: `accelctl memory` run as a user would, over
// sim with 2 devices (ACCEL_PLUGIN_PATH, ACCEL_BACKEND=sim and
// ACCEL_SIM_DEVICES=2 come from tests/meson.build).
//
//   accel-accelctl-memory-test --accelctl /path/to/accelctl [Catch2 options]
//   accel-accelctl-memory-test --write-snapshot FILE
//
// The second form is the program whose allocator accelctl reads: it
// allocates and frees on two streams through accel.h (small and large
// segments, a block split off and freed between live ones, a free pending
// behind a busy stream, the history on), writes accel_memory_snapshot of
// device 0 to FILE and exits. The tests run it as a child, once over the
// caching allocator and once with ACCEL_ALLOC_CONF=backend:native, then
// check that `accelctl memory --snapshot FILE --json` reports the numbers the
// file holds, computed here from the file, and what the workload implies.
// Every child runs under a watchdog (killed after 60 s: a failure).
#include <accel/accel.h>
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "corpus.hpp"
#include "runner.hpp"

using nlohmann::json;

namespace {

std::string g_accelctl;
std::string g_self;
std::vector<std::string> g_cleanup;

struct RunResult {
  int exit_code = -1;  // -1: did not exit normally (or was killed by the watchdog)
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string work_dir() {
  static const std::string dir = [] {
    std::string d = corpus::make_temp_dir("accelctl-memory");
    g_cleanup.push_back(d);
    return d;
  }();
  return dir;
}

// Runs `argv` with our environment plus `env` ("" as a value: removed),
// stdout and stderr to files; killed after 60 s.
RunResult run(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  static int counter = 0;
  const std::string base = work_dir() + "/run" + std::to_string(counter++);
  const std::string out_path = base + ".out", err_path = base + ".err";
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (env.count(name) == 0) envs.push_back(entry);
  }
  for (const auto& [k, v] : env)
    if (!v.empty()) envs.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : envs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_s = args;
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);

  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0 || e < 0) _exit(126);
    dup2(o, 1);
    dup2(e, 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  RunResult r;
  if (pid < 0) return r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  pid_t done = 0;
  while ((done = waitpid(pid, &status, WNOHANG)) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.err = "killed by the test's watchdog after 60 s\n";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (done == pid && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  r.out = slurp(out_path);
  r.err += slurp(err_path);
  return r;
}

RunResult accelctl(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv{g_accelctl};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, env);
}

json parse_or_fail(const RunResult& r) {
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  json j;
  try {
    j = json::parse(r.out);
  } catch (const std::exception& e) {
    FAIL("accelctl did not print valid JSON: " << e.what());
  }
  return j;
}

json read_json_file(const std::string& path) {
  INFO("file " << path);
  json j;
  try {
    j = json::parse(slurp(path));
  } catch (const std::exception& e) {
    FAIL("not valid JSON: " << e.what());
  }
  return j;
}

// Writes the workload's snapshot to `path` (a child: the allocator's
// configuration is read once per process).
void write_snapshot(const std::string& path, const std::string& alloc_conf) {
  const RunResult r = run({g_self, "--write-snapshot", path}, {{"ACCEL_ALLOC_CONF", alloc_conf}});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
}

// What the summary must say about `snap`, computed here from the file.
struct Expected {
  int64_t segments = 0, small = 0, large = 0;
  int64_t reserved = 0, allocated = 0, active = 0, requested = 0, largest_free = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> states;  // count, bytes
  std::map<std::string, std::map<std::string, int64_t>> streams;
  std::map<std::string, int64_t> actions;
  int64_t events = 0;
};

Expected expected_from(const json& snap) {
  Expected e;
  for (const json& seg : snap["segments"]) {
    ++e.segments;
    (seg["segment_type"] == "small" ? e.small : e.large) += 1;
    e.reserved += seg["total_size"].get<int64_t>();
    e.allocated += seg["allocated_size"].get<int64_t>();
    e.active += seg["active_size"].get<int64_t>();
    e.requested += seg["requested_size"].get<int64_t>();
    auto& st = e.streams[seg["stream"].get<std::string>()];
    st["segments"] += 1;
    st["reserved_bytes"] += seg["total_size"].get<int64_t>();
    st["allocated_bytes"] += seg["allocated_size"].get<int64_t>();
    for (const json& b : seg["blocks"]) {
      st["blocks"] += 1;
      auto& cb = e.states[b["state"].get<std::string>()];
      cb.first += 1;
      cb.second += b["size"].get<int64_t>();
      if (b["state"] == "inactive")
        e.largest_free = std::max(e.largest_free, b["size"].get<int64_t>());
    }
  }
  for (const json& ev : snap["history"]["events"]) {
    ++e.actions[ev["action"].get<std::string>()];
    ++e.events;
  }
  return e;
}

// The summary `s` (accelctl memory --snapshot --json) against the file.
void check_summary(const json& s, const json& snap) {
  const Expected e = expected_from(snap);
  CHECK(s["schema_version"] == 1);
  CHECK(s["snapshot_schema_version"] == 1);
  CHECK(s["backend"] == snap["backend"]);
  CHECK(s["device"] == snap["device"]);
  CHECK(s["allocator"] == snap["allocator"]);
  CHECK(s["config"] == snap["config"]);
  CHECK(s["capacity"] == snap["capacity"]);
  CHECK(s["segments"]["count"] == e.segments);
  CHECK(s["segments"]["small"] == e.small);
  CHECK(s["segments"]["large"] == e.large);
  CHECK(s["reserved_bytes"] == e.reserved);
  CHECK(s["allocated_bytes"] == e.allocated);
  CHECK(s["active_bytes"] == e.active);
  CHECK(s["requested_bytes"] == e.requested);
  REQUIRE(e.allocated > 0);
  CHECK(s["fragmentation"].get<double>() ==
        Approx(static_cast<double>(e.reserved) / static_cast<double>(e.allocated)));
  CHECK(s["largest_free_block"] == e.largest_free);
  for (const char* state : {"active_allocated", "active_pending_free", "inactive"}) {
    INFO("state " << state);
    const auto it = e.states.find(state);
    const std::pair<int64_t, int64_t> want =
        it != e.states.end() ? it->second : std::pair<int64_t, int64_t>{0, 0};
    CHECK(s["blocks"][state]["count"] == want.first);
    CHECK(s["blocks"][state]["bytes"] == want.second);
  }
  REQUIRE(s["streams"].size() == e.streams.size());
  for (const json& st : s["streams"]) {
    const std::string name = st["stream"].get<std::string>();
    INFO("stream " << name);
    REQUIRE(e.streams.count(name) == 1);
    for (const char* key : {"segments", "blocks", "reserved_bytes", "allocated_bytes"})
      CHECK(st[key] == e.streams.at(name).at(key));
  }
  CHECK(s["history"]["events"] == e.events);
  CHECK(s["history"]["max_entries"] == snap["history"]["max_entries"]);
  CHECK(s["history"]["dropped"] == snap["history"]["dropped"]);
  CHECK(s["history"]["by_action"] == json(e.actions));
  CHECK(s["problems"] == json::array());
}

// --- the workload (--write-snapshot) ---------------------------------------------------

#define WL_CHECK(call)                                                                         \
  do {                                                                                         \
    const accel_status_t st_ = (call);                                                         \
    if (st_ != ACCEL_SUCCESS) {                                                                \
      std::fprintf(stderr, "%s: %s: %s\n", #call, accel_status_name(st_), accel_last_error()); \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

std::atomic<bool> g_release{false};

// Holds its stream until g_release, at most 30 s.
void hold(void*) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!g_release.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

int write_workload_snapshot(const char* path) {
  WL_CHECK(accel_record_memory_history(1000));
  accel_stream_t s1 = nullptr, s2 = nullptr;
  WL_CHECK(accel_stream_create(0, 0, &s1));
  WL_CHECK(accel_stream_create(0, 0, &s2));
  WL_CHECK(accel_stream_set_name(s1, "loader"));  // the summary shows it (caching test)
  // s1: a small segment holding three blocks, the middle one freed (an
  // inactive block between live ones), and two large segments.
  void *a = nullptr, *b = nullptr, *c = nullptr, *big = nullptr, *huge = nullptr;
  WL_CHECK(accel_malloc_async(1000, s1, &a));
  WL_CHECK(accel_malloc_async(3000, s1, &b));
  WL_CHECK(accel_malloc_async(700000, s1, &c));
  WL_CHECK(accel_malloc_async(size_t{5} << 20, s1, &big));
  WL_CHECK(accel_malloc_async(size_t{30} << 20, s1, &huge));
  WL_CHECK(accel_free_async(b, s1));
  // s2: its own small segment; a block of s1 freed in s2's order while s2
  // is busy stays pending (caching allocator).
  void *d = nullptr, *e = nullptr;
  WL_CHECK(accel_malloc_async(4096, s2, &d));
  WL_CHECK(accel_malloc_async(8192, s1, &e));
  WL_CHECK(accel_launch_host_func(s2, hold, nullptr));
  WL_CHECK(accel_record_stream(e, s2));
  WL_CHECK(accel_free_async(e, s1));

  size_t length = 0;
  WL_CHECK(accel_memory_snapshot(0, nullptr, 0, &length));
  std::string text;
  accel_status_t st = ACCEL_ERROR_OUT_OF_RANGE;
  for (int attempt = 0; attempt < 8 && st == ACCEL_ERROR_OUT_OF_RANGE; ++attempt) {
    text.assign(length + 4096, '\0');
    st = accel_memory_snapshot(0, text.data(), text.size(), &length);
  }
  WL_CHECK(st);
  text.resize(length);
  g_release.store(true);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", path);
      return 1;
    }
  }
  WL_CHECK(accel_synchronize(0));
  for (void* p : {a, c, big, huge, d}) WL_CHECK(accel_free(p));
  WL_CHECK(accel_stream_destroy(s1));
  WL_CHECK(accel_stream_destroy(s2));
  return 0;
}

std::vector<std::string> torch_stat_names() {
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

}  // namespace

TEST_CASE("accelctl memory --snapshot summarises a caching snapshot", "[accelctl][memory]") {
  const std::string path = work_dir() + "/caching.json";
  write_snapshot(path, "");
  const json snap = read_json_file(path);
  REQUIRE(snap["allocator"] == "caching");

  const RunResult r = accelctl({"memory", "--snapshot", path, "--json"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  const json s = parse_or_fail(r);
  check_summary(s, snap);
  CHECK(s["file"] == path);

  // What the workload implies, whatever the file says.
  CHECK(s["segments"]["small"].get<int64_t>() >= 2);  // one per stream
  CHECK(s["segments"]["large"].get<int64_t>() >= 2);  // 5 MiB and 30 MiB
  CHECK(s["allocated_bytes"].get<int64_t>() >= 1000 + 700000 + (5 << 20) + (30 << 20) + 4096);
  CHECK(s["blocks"]["active_allocated"]["count"].get<int64_t>() >= 5);
  CHECK(s["blocks"]["inactive"]["count"].get<int64_t>() >= 1);
  CHECK(s["blocks"]["active_pending_free"]["count"].get<int64_t>() >= 1);
  CHECK(s["fragmentation"].get<double>() >= 1.0);
  CHECK(s["streams"].size() >= 2);
  int named = 0;
  for (const json& st : s["streams"]) named += st.value("stream_name", "") == "loader";
  CHECK(named == 1);  // s1, named by the workload; s2 has no stream_name
  CHECK(s["history"]["max_entries"] == 1000);
  CHECK(s["history"]["by_action"]["alloc"].get<int64_t>() >= 7);
  CHECK(s["history"]["by_action"]["segment_alloc"].get<int64_t>() >= 4);
  CHECK(s["history"]["by_action"]["free_requested"].get<int64_t>() >= 2);

  // The text form says the same.
  const RunResult t = accelctl({"memory", "--snapshot", path});
  INFO("text:\n" << t.out);
  REQUIRE(t.exit_code == 0);
  CHECK(t.out.find("Segments: " + s["segments"]["count"].dump() + " (small " +
                   s["segments"]["small"].dump() + ", large " + s["segments"]["large"].dump() +
                   ")") != std::string::npos);
  CHECK(t.out.find("reserved:      " + s["reserved_bytes"].dump() + " bytes") != std::string::npos);
  CHECK(t.out.find("allocated:     " + s["allocated_bytes"].dump() + " bytes") !=
        std::string::npos);
  CHECK(t.out.find("largest free block: " + s["largest_free_block"].dump() + " bytes") !=
        std::string::npos);
  CHECK(t.out.find("Consistency: ok") != std::string::npos);
  CHECK(t.out.find(" (loader): ") != std::string::npos);
}

TEST_CASE("accelctl memory --snapshot summarises a backend:native snapshot", "[accelctl][memory]") {
  const std::string path = work_dir() + "/native.json";
  write_snapshot(path, "backend:native");
  const json snap = read_json_file(path);
  REQUIRE(snap["allocator"] == "native");

  const RunResult r = accelctl({"memory", "--snapshot", path, "--json"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  const json s = parse_or_fail(r);
  check_summary(s, snap);
  // One vendor allocation per live accel_malloc: nothing cached, nothing
  // pending, nothing lost to splitting.
  CHECK(s["segments"]["count"] == snap["stats"]["allocation.all.current"]);
  CHECK(s["reserved_bytes"] == s["allocated_bytes"]);
  CHECK(s["fragmentation"].get<double>() == Approx(1.0));
  CHECK(s["blocks"]["inactive"]["count"] == 0);
  CHECK(s["blocks"]["active_pending_free"]["count"] == 0);
  CHECK(s["history"]["events"] == 0);
}

TEST_CASE("accelctl memory --dump-snapshot writes this device's snapshot", "[accelctl][memory]") {
  const std::string path = work_dir() + "/dumped.json";
  const RunResult r = accelctl({"memory", "--dump-snapshot", path, "--json"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  const json out = parse_or_fail(r);
  CHECK(out["schema_version"] == 1);
  CHECK(out["file"] == path);
  CHECK(out["device"] == 0);
  const std::string text = slurp(path);
  CHECK(out["bytes"].get<size_t>() + 1 == text.size());  // and a newline
  const json snap = read_json_file(path);
  CHECK(snap["schema_version"] == 1);
  CHECK(snap["backend"] == "sim");
  CHECK(snap["device"] == 0);
  CHECK(snap["allocator"] == "caching");
  CHECK(snap["segments"].is_array());
  for (const auto& name : torch_stat_names()) {
    INFO(name);
    CHECK(snap["stats"].contains(name));
  }

  // accelctl reads back what it wrote.
  const RunResult back = accelctl({"memory", "--snapshot", path, "--json"});
  INFO("summary:\n" << back.out << back.err);
  REQUIRE(back.exit_code == 0);
  const json s = parse_or_fail(back);
  CHECK(s["segments"]["count"] == snap["segments"].size());
  CHECK(s["problems"] == json::array());
  CHECK(s["history"]["events"] == snap["history"]["events"].size());

  // Without an accelerator there is nothing to dump.
  const RunResult none = accelctl({"memory", "--dump-snapshot", work_dir() + "/none.json"},
                                  {{"ACCEL_SIM_DEVICES", "0"}});
  CHECK(none.exit_code == 1);
  CHECK(none.err.find("no accelerator") != std::string::npos);
}

TEST_CASE("accelctl memory: backend / configuration / statistics per device",
          "[accelctl][memory]") {
  const RunResult r = accelctl({"memory", "--json"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  const json j = parse_or_fail(r);
  CHECK(j["schema_version"] == 1);
  CHECK(j["current_accelerator"] == "sim");
  CHECK(j["allocator"] == "caching");
  CHECK(j["config"].get<std::string>().rfind("backend:caching,", 0) == 0);
  REQUIRE(j["devices"].size() == 2);
  for (const json& d : j["devices"]) {
    for (const auto& name : torch_stat_names()) {
      INFO("device " << d["index"] << " " << name);
      CHECK(d["stats"].contains(name));
    }
    CHECK(d["stats"]["max_split_size"] == -1);
  }
  const RunResult text = accelctl({"memory"});
  INFO("text:\n" << text.out);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("Allocator: caching") != std::string::npos);
  CHECK(text.out.find("Device 1:") != std::string::npos);
  CHECK(text.out.find("device calls:") != std::string::npos);

  const RunResult native = accelctl({"memory", "--json"}, {{"ACCEL_ALLOC_CONF", "backend:native"}});
  const json n = parse_or_fail(native);
  CHECK(n["allocator"] == "native");
  CHECK(n["config"].get<std::string>().rfind("backend:native", 0) == 0);

  const RunResult split =
      accelctl({"memory", "--json"}, {{"ACCEL_ALLOC_CONF", "max_split_size_mb:64"}});
  const json sp = parse_or_fail(split);
  CHECK(sp["devices"][0]["stats"]["max_split_size"] == 64 << 20);

  // An invalid setting is reported and ignored as a whole: the defaults.
  const RunResult bogus =
      accelctl({"memory", "--json"}, {{"ACCEL_ALLOC_CONF", "backend:native,max_split_size_mb:3"}});
  INFO("stderr:\n" << bogus.err);
  const json b = parse_or_fail(bogus);
  CHECK(b["allocator"] == "caching");
  CHECK(b["config"].get<std::string>().find("max_split_size_mb:unlimited") != std::string::npos);
  CHECK(bogus.err.find("ACCEL_ALLOC_CONF") != std::string::npos);

  // No accelerator is a normal state.
  const RunResult none = accelctl({"memory"}, {{"ACCEL_SIM_DEVICES", "0"}});
  CHECK(none.exit_code == 0);
  CHECK(none.out.find("Current accelerator: none") != std::string::npos);
}

TEST_CASE("accelctl memory --snapshot refuses what is not a consistent snapshot",
          "[accelctl][memory]") {
  const std::string good = work_dir() + "/for-damage.json";
  write_snapshot(good, "");
  json snap = read_json_file(good);
  REQUIRE_FALSE(snap["segments"].empty());

  // A block that no longer tiles its segment, and a statistic that
  // disagrees with the segments: listed, exit status 1.
  snap["segments"][0]["blocks"][0]["size"] =
      snap["segments"][0]["blocks"][0]["size"].get<int64_t>() + 512;
  snap["stats"]["segment.all.current"] = 12345;
  const std::string damaged = work_dir() + "/damaged.json";
  std::ofstream(damaged) << snap.dump();
  const RunResult r = accelctl({"memory", "--snapshot", damaged, "--json"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == 1);
  const json s = parse_or_fail(r);
  REQUIRE(s["problems"].is_array());
  bool tiling = false, stats = false;
  for (const json& p : s["problems"]) {
    const std::string text = p.get<std::string>();
    tiling = tiling || text.rfind("segment 0", 0) == 0;
    stats = stats || text.find("segment.all.current is 12345") != std::string::npos;
  }
  CHECK(tiling);
  CHECK(stats);
  const RunResult t = accelctl({"memory", "--snapshot", damaged});
  CHECK(t.exit_code == 1);
  CHECK(t.out.find("Consistency: ") != std::string::npos);
  CHECK(t.out.find("Consistency: ok") == std::string::npos);

  const std::string other = work_dir() + "/other.json";
  std::ofstream(other) << R"({"schema_version": 2, "segments": []})";
  const RunResult wrong = accelctl({"memory", "--snapshot", other});
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.err.find("schema_version 1") != std::string::npos);

  const std::string garbage = work_dir() + "/garbage.json";
  std::ofstream(garbage) << "{not json";
  const RunResult bad = accelctl({"memory", "--snapshot", garbage});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("is not JSON") != std::string::npos);

  const RunResult both =
      accelctl({"memory", "--snapshot", good, "--dump-snapshot", work_dir() + "/x.json"});
  CHECK(both.exit_code == 2);  // a usage error
}

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--write-snapshot") == 0)
    return write_workload_snapshot(argv[2]);
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) g_self.assign(self, static_cast<size_t>(n));
  int rc = accel_test::run(
      argc, argv, {{&g_accelctl, "--accelctl", "path", "the accelctl to test"}},
      [](accel_test::Parsed& parsed) {
        if (parsed.listing) return -1;
        if (g_accelctl.empty() || access(g_accelctl.c_str(), X_OK) != 0 || g_self.empty()) {
          std::fprintf(stderr,
                       "accel-accelctl-memory-test: --accelctl PATH (an executable) is required\n");
          return 2;
        }
        return -1;
      });
  corpus::remove_dirs(g_cleanup);
  return rc;
}
