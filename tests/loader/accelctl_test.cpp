// accel-accelctl-test: runs the accelctl diagnostics tool as a user would and
// checks what it prints (JSON parsed with nlohmann-json) and its exit codes.
//
//   accel-accelctl-test --accelctl /path/to/accelctl [Catch2 options]
//
// Every accelctl run is a child process with its own environment, so one
// invocation of this program covers every scenario.
#include <catch2/catch.hpp>
#include "runner.hpp"
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "corpus.hpp"

using nlohmann::json;

namespace {

std::string g_accelctl;
std::vector<std::string> g_cleanup;

struct RunResult {
  int exit_code = -1;  // -1: did not exit normally
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs accelctl with `args`; the environment is ours minus every ACCEL_*
// variable, plus `env`.
RunResult run_accelctl(const std::vector<std::string>& args,
                       const std::map<std::string, std::string>& env) {
  static int counter = 0;
  const std::string dir = corpus::make_temp_dir("accelctl-run" + std::to_string(counter++));
  g_cleanup.push_back(dir);
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";

  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "ACCEL_", 6) != 0) envs.emplace_back(*e);
  for (const auto& kv : env) envs.push_back(kv.first + "=" + kv.second);
  std::vector<char*> envp;
  for (auto& s : envs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_s{g_accelctl};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);

  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0 || e < 0) _exit(126);
    dup2(o, 1);
    dup2(e, 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  RunResult r;
  int status = 0;
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
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

// Every object anywhere in `j` that looks like a backend entry (has "path"
// and "status").
void collect_entries(const json& j, std::vector<json>& out) {
  if (j.is_object()) {
    if (j.contains("path") && j.contains("status")) out.push_back(j);
    for (const auto& kv : j.items()) collect_entries(kv.value(), out);
  } else if (j.is_array()) {
    for (const auto& v : j) collect_entries(v, out);
  }
}

std::string str_field(const json& o, const char* key) {
  if (!o.contains(key)) return "";
  const auto& v = o[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

int status_of(const json& o) {
  const auto& v = o["status"];
  if (v.is_number_integer()) return v.get<int>();
  const std::string s = corpus::lower(v.is_string() ? v.get<std::string>() : v.dump());
  for (int i = 0; i <= 4; ++i)
    if (s == corpus::status_name(i)) return i;
  return -1;
}

// Finds a key anywhere (breadth-first: the top level wins).
const json* find_key(const json& j, const std::string& key) {
  std::vector<const json*> queue{&j};
  for (size_t i = 0; i < queue.size(); ++i) {
    const json* cur = queue[i];
    if (cur->is_object()) {
      auto it = cur->find(key);
      if (it != cur->end()) return &*it;
      for (const auto& kv : cur->items()) queue.push_back(&kv.value());
    } else if (cur->is_array()) {
      for (const auto& v : *cur) queue.push_back(&v);
    }
  }
  return nullptr;
}

}  // namespace

TEST_CASE("accelctl --json with no variables: no accelerator, exit 0", "[accelctl]") {
  RunResult r = run_accelctl({"--json"}, {});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == 0);
  json j = parse_or_fail(r);
  REQUIRE(j.is_object());
  REQUIRE(j.contains("current_accelerator"));
  CHECK(j["current_accelerator"].is_null());
}

TEST_CASE("accelctl --json with two simulated devices", "[accelctl]") {
  RunResult r = run_accelctl(
      {"--json"},
      {{"ACCEL_PLUGIN_PATH", corpus::env_or_die("ACCEL_TEST_SIM_DIR")}, {"ACCEL_SIM_DEVICES", "2"}});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == 0);
  json j = parse_or_fail(r);
  REQUIRE(j.is_object());
  REQUIRE(j.contains("current_accelerator"));
  CHECK(j["current_accelerator"] == "sim");
  // The device count: top-level if accelctl prints one, else sim's entry.
  int count = -1;
  if (j.contains("device_count") && j["device_count"].is_number_integer()) {
    count = j["device_count"].get<int>();
  } else {
    std::vector<json> es;
    collect_entries(j, es);
    for (const auto& e : es)
      if (str_field(e, "name") == "sim" && e.contains("device_count"))
        count = e["device_count"].get<int>();
    if (count < 0) {
      const json* dc = find_key(j, "device_count");
      if (dc != nullptr && dc->is_number_integer()) count = dc->get<int>();
    }
  }
  CHECK(count == 2);
}

TEST_CASE("accelctl backends --json over the hostile corpus", "[accelctl][hostile]") {
  corpus::Corpus c = corpus::build(true);
  g_cleanup.insert(g_cleanup.end(), c.cleanup.begin(), c.cleanup.end());
  RunResult r = run_accelctl({"backends", "--json"},
                             {{"ACCEL_PLUGIN_PATH", c.plugin_path}, {"ACCEL_SIM_DEVICES", "2"}});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == 0);
  json j = parse_or_fail(r);
  std::vector<json> es;
  collect_entries(j, es);
  REQUIRE_FALSE(es.empty());
  std::vector<bool> used(es.size(), false);
  for (const auto& ex : c.expect) {
    INFO("item '" << ex.key << "' expected " << corpus::status_name(ex.status) << " at "
                  << ex.path);
    int hit = -1;
    for (size_t i = 0; i < es.size() && hit < 0; ++i)
      if (!used[i] && str_field(es[i], "path") == ex.path && status_of(es[i]) == ex.status)
        hit = static_cast<int>(i);
    for (size_t i = 0; i < es.size() && hit < 0; ++i)
      if (!used[i] && str_field(es[i], "path") == ex.path) hit = static_cast<int>(i);
    if (hit < 0) {
      FAIL_CHECK("no entry for item '" << ex.key << "'");
      continue;
    }
    used[hit] = true;
    const json& e = es[hit];
    const std::string reason = str_field(e, "reason");
    INFO("entry: " << e.dump());
    CHECK(status_of(e) == ex.status);
    for (const auto& group : ex.reason_any) {
      bool any = false;
      for (const auto& w : group) any = any || corpus::contains_ci(reason, w);
      CHECK(any);
    }
  }
  bool sim_ok = false;
  for (const auto& e : es)
    if (str_field(e, "name") == "sim" && status_of(e) == corpus::kAvailable) sim_ok = true;
  CHECK(sim_ok);
}

TEST_CASE("accelctl selftest passes with sim next to a broken plugin", "[accelctl]") {
  const std::string dir = corpus::make_temp_dir("selftest");
  g_cleanup.push_back(dir);
  corpus::copy_module("ACCEL_TEST_MOD_SIM", dir + "/accel-sim.so");
  corpus::copy_module("ACCEL_TEST_MOD_NULL_OP", dir + "/accel-null-op.so");
  corpus::write_text(dir + "/accel-broken.so", "not a shared object, not even close\n");
  RunResult r = run_accelctl({"selftest"}, {{"ACCEL_PLUGIN_PATH", dir}, {"ACCEL_SIM_DEVICES", "2"}});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == 0);
  CHECK_FALSE((r.out + r.err).empty());
}

TEST_CASE("accelctl selftest fails without an accelerator", "[accelctl]") {
  const std::string dir = corpus::make_temp_dir("selftest-empty");
  g_cleanup.push_back(dir);
  RunResult r = run_accelctl({"selftest"}, {{"ACCEL_PLUGIN_PATH", dir}});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code != 0);
  CHECK(r.exit_code != -1);  // failed cleanly, did not crash
}

TEST_CASE("accelctl bad usage exits 2", "[accelctl]") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--definitely-not-an-option"}, {"no-such-command"}}) {
    RunResult r = run_accelctl(args, {});
    INFO("args: " << args[0] << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK_FALSE(r.err.empty());  // says what was wrong
  }
}

int main(int argc, char** argv) {
  int rc = accel_test::run(
      argc, argv, {{&g_accelctl, "--accelctl", "path", "the accelctl to test"}},
      [](accel_test::Parsed&) {
        if (g_accelctl.empty() || access(g_accelctl.c_str(), X_OK) != 0) {
          std::fprintf(stderr, "accel-accelctl-test: --accelctl PATH (an executable) is required\n");
          return 2;
        }
        return -1;
      });
  corpus::remove_dirs(g_cleanup);
  return rc;
}
