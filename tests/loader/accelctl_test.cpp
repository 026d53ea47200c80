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
#include <regex>
#include <sstream>
#include <utility>
#include <vector>

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

TEST_CASE("accelctl --json with no variables: no accelerator and exit 0", "[accelctl]") {
  RunResult r = run_accelctl({"--json"}, {});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == 0);
  json j = parse_or_fail(r);
  REQUIRE(j.is_object());
  REQUIRE(j.contains("current_accelerator"));
  CHECK(j["current_accelerator"].is_null());
}

TEST_CASE("accelctl names every capability bit accel.h defines", "[accelctl]") {
  RunResult r = run_accelctl({"backends", "--json"},
                             {{"ACCEL_PLUGIN_PATH", corpus::env_or_die("ACCEL_TEST_SIM_DIR")},
                              {"ACCEL_SIM_DEVICES", "2"}});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  json j = parse_or_fail(r);
  std::vector<json> es;
  collect_entries(j, es);
  bool seen = false;
  for (const auto& e : es) {
    if (str_field(e, "name") != "sim" || !e.contains("capabilities")) continue;
    seen = true;
    const std::string caps = e["capabilities"].dump();
    CHECK(caps.find("unknown") == std::string::npos);
    // sim declares both bits of plugin ABI 1.1.
    CHECK(caps.find("discovery_fork_safe") != std::string::npos);
    CHECK(caps.find("cross_device_wait") != std::string::npos);
  }
  CHECK(seen);
}

TEST_CASE("accelctl --json with two simulated devices", "[accelctl]") {
  RunResult r =
      run_accelctl({"--json"}, {{"ACCEL_PLUGIN_PATH", corpus::env_or_die("ACCEL_TEST_SIM_DIR")},
                                {"ACCEL_SIM_DEVICES", "2"}});
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
  RunResult r =
      run_accelctl({"selftest"}, {{"ACCEL_PLUGIN_PATH", dir}, {"ACCEL_SIM_DEVICES", "2"}});
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
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"--definitely-not-an-option"}, {"no-such-command"}}) {
    RunResult r = run_accelctl(args, {});
    INFO("args: " << args[0] << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK_FALSE(r.err.empty());  // says what was wrong
  }
}

// --- JSON schema, runtime versions, --backend, logging ----------------------

namespace {

// A fresh plugin folder holding copies of the given ACCEL_TEST_MOD_* modules.
std::string plugin_dir(const std::string& tag,
                       const std::vector<std::pair<std::string, std::string>>& modules) {
  const std::string dir = corpus::make_temp_dir(tag);
  g_cleanup.push_back(dir);
  for (const auto& [var, file] : modules) corpus::copy_module(var, dir + "/" + file);
  return dir;
}

const json* entry_named(const json& doc, const std::string& name) {
  if (!doc.contains("backends") || !doc["backends"].is_array()) return nullptr;
  for (const auto& e : doc["backends"])
    if (str_field(e, "name") == name) return &e;
  return nullptr;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The lines of `text` that accel's logger wrote.
std::vector<std::string> accel_log_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find("[accel]") != std::string::npos) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("accelctl --json: every document carries schema_version 1", "[accelctl][json]") {
  const std::string dir = plugin_dir("schema", {{"ACCEL_TEST_MOD_SIM", "accel-sim.so"}});
  const std::map<std::string, std::string> env = {{"ACCEL_PLUGIN_PATH", dir},
                                                  {"ACCEL_SIM_DEVICES", "1"}};
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--json"}, {"backends", "--json"}, {"devices", "--json"}, {"selftest", "--json"}}) {
    RunResult r = run_accelctl(args, env);
    INFO("args: " << args[0] << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 0);
    json j = parse_or_fail(r);
    REQUIRE(j.is_object());
    REQUIRE(j.contains("schema_version"));
    CHECK(j["schema_version"].is_number_integer());
    CHECK(j["schema_version"] == 1);
  }
  // The no-accelerator form of selftest's document too.
  RunResult r =
      run_accelctl({"selftest", "--json"}, {{"ACCEL_PLUGIN_PATH", plugin_dir("schema-empty", {})}});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == 1);
  json j = parse_or_fail(r);
  CHECK(j.value("schema_version", 0) == 1);
}

TEST_CASE("accelctl backends and devices show the runtime version", "[accelctl][runtime-version]") {
  const std::string dir = plugin_dir(
      "runtime-version",
      {{"ACCEL_TEST_MOD_SIM", "accel-sim.so"}, {"ACCEL_TEST_MOD_ABI10", "accel-abi10.so"}});
  const std::map<std::string, std::string> env = {{"ACCEL_PLUGIN_PATH", dir},
                                                  {"ACCEL_SIM_DEVICES", "2"}};
  {
    RunResult r = run_accelctl({"backends", "--json"}, env);
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 0);
    json j = parse_or_fail(r);
    const json* sim = entry_named(j, "sim");
    REQUIRE(sim != nullptr);
    CHECK(starts_with(str_field(*sim, "runtime_version"), "accel sim "));
    // A plugin built for ABI 1.0 (no runtime_version member) still loads.
    const json* old = entry_named(j, "abi10");
    REQUIRE(old != nullptr);
    CHECK(str_field(*old, "status") == "no_devices");
    CHECK(str_field(*old, "abi_version") == "1.0");
    REQUIRE(old->contains("runtime_version"));
    CHECK((*old)["runtime_version"].is_null());
  }
  {
    RunResult r = run_accelctl({"backends"}, env);
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("runtime: accel sim "));
    CHECK_THAT(r.out, Catch::Contains("runtime: unknown (plugin ABI 1.0)"));
  }
  {
    RunResult r = run_accelctl({"devices", "--json"}, env);
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 0);
    json j = parse_or_fail(r);
    CHECK(starts_with(str_field(j, "runtime_version"), "accel sim "));
  }
  {
    RunResult r = run_accelctl({"devices"}, env);
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("Runtime: accel sim "));
  }
}

TEST_CASE("accelctl --backend works with every command before or after it", "[accelctl][backend]") {
  const std::string dir = plugin_dir("backend-option", {{"ACCEL_TEST_MOD_SIM", "accel-sim.so"},
                                                        {"ACCEL_TEST_MOD_TINY", "accel-tiny.so"}});
  // ACCEL_BACKEND names sim: --backend must win over it.
  const std::map<std::string, std::string> env = {{"ACCEL_PLUGIN_PATH", dir},
                                                  {"ACCEL_SIM_DEVICES", "2"},
                                                  {"ACCEL_TINY_DEVICES", "1"},
                                                  {"ACCEL_BACKEND", "sim"}};
  auto current_of = [&](const std::vector<std::string>& args, int want_exit) {
    RunResult r = run_accelctl(args, env);
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    INFO("args: " << shown << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == want_exit);
    json j = parse_or_fail(r);
    REQUIRE(j.is_object());
    return j;
  };
  CHECK(current_of({"devices", "--json"}, 0)["current_accelerator"] == "sim");
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"--backend", "tiny", "--json"},
                                             {"--backend", "tiny", "devices", "--json"},
                                             {"devices", "--backend", "tiny", "--json"},
                                             {"--json", "backends", "--backend=tiny"},
                                             {"--backend", "tiny", "backends", "--json"}}) {
    json j = current_of(args, 0);
    CHECK(j["current_accelerator"] == "tiny");
    if (j.contains("device_count")) CHECK(j["device_count"] == 1);
    if (const json* tiny = entry_named(j, "tiny")) CHECK((*tiny)["current"] == true);
  }
  json none = current_of({"--backend", "nosuch", "--json"}, 0);
  CHECK(none["current_accelerator"].is_null());
  CHECK_THAT(str_field(none, "selection_reason"), Catch::Contains("nosuch"));
  // selftest keeps its own spelling, and the global one works for it too.
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"selftest", "--backend", "sim", "--json"},
                                             {"--backend", "sim", "selftest", "--json"}}) {
    RunResult r = run_accelctl(args, {{"ACCEL_PLUGIN_PATH", dir},
                                      {"ACCEL_SIM_DEVICES", "1"},
                                      {"ACCEL_TINY_DEVICES", "1"},
                                      {"ACCEL_BACKEND", "tiny"}});
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 0);
    CHECK(parse_or_fail(r)["backend"] == "sim");
  }
  RunResult missing = run_accelctl({"devices", "--backend"}, env);
  CHECK(missing.exit_code == 2);  // the option needs a value
}

TEST_CASE("ACCEL_LOG_LEVEL is read in any case", "[accelctl][log]") {
  const std::string dir = plugin_dir("log-case", {{"ACCEL_TEST_MOD_SIM", "accel-sim.so"}});
  for (const std::string level : {"DEBUG", "Debug", "debug", "TRACE"}) {
    RunResult r = run_accelctl(
        {"--json"},
        {{"ACCEL_PLUGIN_PATH", dir}, {"ACCEL_SIM_DEVICES", "1"}, {"ACCEL_LOG_LEVEL", level}});
    INFO("ACCEL_LOG_LEVEL=" << level << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, Catch::Contains("[debug]"));
    CHECK_THAT(r.err, !Catch::Contains("ACCEL_LOG_LEVEL="));
  }
  for (const std::string level : {"WARN", "Warn", "ERROR", "Off"}) {
    RunResult r = run_accelctl(
        {"--json"},
        {{"ACCEL_PLUGIN_PATH", dir}, {"ACCEL_SIM_DEVICES", "1"}, {"ACCEL_LOG_LEVEL", level}});
    INFO("ACCEL_LOG_LEVEL=" << level << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, !Catch::Contains("[debug]"));
    CHECK_THAT(r.err, !Catch::Contains("[info]"));
    CHECK_THAT(r.err, !Catch::Contains("ACCEL_LOG_LEVEL="));
  }
}

TEST_CASE("an unknown ACCEL_LOG_LEVEL warns once and keeps the default", "[accelctl][log]") {
  const std::string dir = plugin_dir("log-unknown", {{"ACCEL_TEST_MOD_SIM", "accel-sim.so"}});
  corpus::write_text(dir + "/accel-broken.so", "not a shared object\n");  // a warning to see
  RunResult r = run_accelctl(
      {"backends"},
      {{"ACCEL_PLUGIN_PATH", dir}, {"ACCEL_SIM_DEVICES", "1"}, {"ACCEL_LOG_LEVEL", "verbose"}});
  INFO("stderr:\n" << r.err);
  CHECK(r.exit_code == 0);
  int warnings = 0;
  for (const auto& line : accel_log_lines(r.err))
    if (line.find("ACCEL_LOG_LEVEL='verbose'") != std::string::npos) ++warnings;
  CHECK(warnings == 1);
  CHECK_THAT(r.err, Catch::Contains("using warn"));
  CHECK_THAT(r.err, Catch::Contains("rejected"));  // warn is on: not "off"
  CHECK_THAT(r.err, !Catch::Contains("[debug]"));
  CHECK_THAT(r.err, !Catch::Contains("[info]"));
}

TEST_CASE("log lines carry time and thread id at debug and trace only", "[accelctl][log]") {
  const std::string dir = plugin_dir("log-format", {{"ACCEL_TEST_MOD_SIM", "accel-sim.so"}});
  corpus::write_text(dir + "/accel-broken.so", "not a shared object\n");
  const std::regex detailed(
      R"(^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}\] \[accel\] \[[a-z]+\] \[tid \d+\] .+)");
  for (const std::string level : {"debug", "trace"}) {
    RunResult r = run_accelctl(
        {"--json"},
        {{"ACCEL_PLUGIN_PATH", dir}, {"ACCEL_SIM_DEVICES", "1"}, {"ACCEL_LOG_LEVEL", level}});
    INFO("ACCEL_LOG_LEVEL=" << level << "\nstderr:\n" << r.err);
    const auto lines = accel_log_lines(r.err);
    CHECK(lines.size() >= 2);
    bool saw_warning = false;
    for (const auto& line : lines) {
      INFO("line: " << line);
      CHECK(std::regex_match(line, detailed));
      saw_warning = saw_warning || line.find("[warning]") != std::string::npos;
    }
    CHECK(saw_warning);  // the same format for every line at this level
  }
  // At the default level (warn) only the short form: no time, no thread.
  RunResult r = run_accelctl({"--json"}, {{"ACCEL_PLUGIN_PATH", dir}, {"ACCEL_SIM_DEVICES", "1"}});
  INFO("stderr:\n" << r.err);
  const auto lines = accel_log_lines(r.err);
  REQUIRE_FALSE(lines.empty());  // the broken plugin's rejection
  for (const auto& line : lines) {
    INFO("line: " << line);
    CHECK(starts_with(line, "[accel] [warning] "));
    CHECK(line.find("[tid ") == std::string::npos);
  }
}

int main(int argc, char** argv) {
  int rc = accel_test::run(
      argc, argv, {{&g_accelctl, "--accelctl", "path", "the accelctl to test"}},
      [](accel_test::Parsed&) {
        if (g_accelctl.empty() || access(g_accelctl.c_str(), X_OK) != 0) {
          std::fprintf(stderr,
                       "accel-accelctl-test: --accelctl PATH (an executable) is required\n");
          return 2;
        }
        return -1;
      });
  corpus::remove_dirs(g_cleanup);
  return rc;
}
