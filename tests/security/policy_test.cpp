// accel-security-policy-test: the plugin-loading policy of core/search_path.cpp
// and core/loader.cpp, checked item by item, through accel_get_backend_info
// and through `accelctl backends --json` (what a user sees).
//
//   accel-security-policy-test --accelctl PATH [Catch2 options]
//
// main() builds a fresh folder tree under ACCEL_TEST_WORKDIR, sets
// ACCEL_PLUGIN_PATH, and only then makes the first accel call. Every refused
// item holds a plugin that WOULD load (a copy of a good test plugin), so a
// policy that stopped refusing it shows up as a loaded backend, not as a
// silently missing one:
//
//   dir-ok/            0755  control: accel-a-good.so (0755) loads as 'tiny'
//     accel-b-gw.so    0775  group-writable file: refused
//     accel-c-ww.so    0757  world-writable file: refused
//     accel-d-link.so  ->    symlink to real/accel-sim-real.so: loads (sim),
//                            reported under the resolved path
//     accel-e-wwlink.so ->   symlink to a world-writable file elsewhere:
//                            refused (the policy looks at the target)
//   dir-gw/          0775  group-writable folder: refused, its plugin unseen
//   dir-ww/          0777  world-writable folder: refused
//   dir-sticky/     01777  world-writable even with the sticky bit: refused
//   relative/entry, ./dot  relative ACCEL_PLUGIN_PATH entries: ignored
//
// Needs ACCEL_TEST_MOD_TINY, ACCEL_TEST_MOD_DUP_A, ACCEL_TEST_MOD_WORLDW,
// ACCEL_TEST_MOD_SIM (set by tests/security/meson.build).
#include <accel/accel.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include "runner.hpp"
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <sstream>

#include "../loader/corpus.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct Tree {
  std::string root, ok, gw, ww, sticky, real, wwfile_dir;
  std::string plugin_path;
  std::vector<std::string> relative = {"relative/entry", "./dot"};
} T;

std::string g_accelctl;

void must_chmod(const std::string& path, mode_t mode) {
  if (chmod(path.c_str(), mode) != 0) {
    std::perror(("chmod " + path).c_str());
    std::exit(2);
  }
}

void must_mkdir(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), 0700) != 0) {
    std::perror(("mkdir " + path).c_str());
    std::exit(2);
  }
  must_chmod(path, mode);  // explicit: the umask must not decide
}

void build_tree() {
  T.root = corpus::make_temp_dir("security");
  must_chmod(T.root, 0755);
  T.ok = T.root + "/dir-ok";
  T.gw = T.root + "/dir-gw";
  T.ww = T.root + "/dir-ww";
  T.sticky = T.root + "/dir-sticky";
  T.real = T.root + "/real";
  T.wwfile_dir = T.root + "/wwfile";
  for (const auto& d : {T.ok, T.real, T.wwfile_dir}) must_mkdir(d, 0755);
  for (const auto& d : {T.gw, T.ww, T.sticky}) must_mkdir(d, 0755);

  corpus::copy_module("ACCEL_TEST_MOD_TINY", T.ok + "/accel-a-good.so");
  corpus::copy_module("ACCEL_TEST_MOD_DUP_A", T.ok + "/accel-b-gw.so");
  must_chmod(T.ok + "/accel-b-gw.so", 0775);
  corpus::copy_module("ACCEL_TEST_MOD_WORLDW", T.ok + "/accel-c-ww.so");
  must_chmod(T.ok + "/accel-c-ww.so", 0757);
  corpus::copy_module("ACCEL_TEST_MOD_SIM", T.real + "/accel-sim-real.so");
  fs::create_symlink(T.real + "/accel-sim-real.so", T.ok + "/accel-d-link.so");
  corpus::copy_module("ACCEL_TEST_MOD_DUP_A", T.wwfile_dir + "/accel-ww-target.so");
  must_chmod(T.wwfile_dir + "/accel-ww-target.so", 0777);
  fs::create_symlink(T.wwfile_dir + "/accel-ww-target.so", T.ok + "/accel-e-wwlink.so");

  // Valid plugins inside the refused folders: they must never be seen.
  corpus::copy_module("ACCEL_TEST_MOD_WORLDW", T.gw + "/accel-in-gw.so");
  corpus::copy_module("ACCEL_TEST_MOD_WORLDW", T.ww + "/accel-in-ww.so");
  corpus::copy_module("ACCEL_TEST_MOD_WORLDW", T.sticky + "/accel-in-sticky.so");
  must_chmod(T.gw, 0775);
  must_chmod(T.ww, 0777);
  must_chmod(T.sticky, 01777);

  T.plugin_path =
      T.ok + ":" + T.relative[0] + ":" + T.gw + ":" + T.ww + ":" + T.relative[1] + ":" + T.sticky;
}

struct Entry {
  std::string name, path, reason;
  int status = -1;
  int32_t devices = 0;
};

std::vector<Entry> entries() {
  std::vector<Entry> out;
  for (size_t i = 0; i < accel_backend_count(); ++i) {
    accel_backend_info_t info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    REQUIRE(accel_get_backend_info(i, &info) == ACCEL_SUCCESS);
    out.push_back({info.name ? info.name : "", info.path ? info.path : "",
                   info.reason ? info.reason : "", static_cast<int>(info.status),
                   info.device_count});
  }
  return out;
}

std::string dump(const std::vector<Entry>& es) {
  std::ostringstream s;
  for (const auto& e : es)
    s << "  name='" << e.name << "' status=" << corpus::status_name(e.status) << " path=" << e.path
      << "\n    reason: " << e.reason << "\n";
  return s.str();
}

const Entry* at_path(const std::vector<Entry>& es, const std::string& path) {
  for (const auto& e : es)
    if (e.path == path) return &e;
  return nullptr;
}

// What every refused item must look like: rejected, and a reason naming the
// fault.
void check_refused(const std::vector<Entry>& es, const std::string& path,
                   const std::vector<std::string>& words) {
  INFO("item " << path);
  const Entry* e = at_path(es, path);
  REQUIRE(e != nullptr);
  INFO("status " << corpus::status_name(e->status) << ", reason \"" << e->reason << "\"");
  CHECK(e->status == corpus::kRejected);
  CHECK(e->name.empty());  // never loaded, so it never said its name
  for (const auto& w : words) {
    INFO("reason should mention \"" << w << "\"");
    CHECK(corpus::contains_ci(e->reason, w));
  }
}

// Runs accelctl with the current environment; returns its stdout.
std::string run_accelctl(const std::vector<std::string>& args, int& exit_code) {
  std::string out_path = T.root + "/accelctl.out";
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(g_accelctl.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0) _exit(126);
    dup2(o, 1);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  exit_code = -1;
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
    exit_code = WEXITSTATUS(status);
  std::ifstream in(out_path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("group- and world-writable plugin folders are refused with a reason", "[policy]") {
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  check_refused(es, T.gw, {"group-writable", "refus"});
  check_refused(es, T.ww, {"world-writable", "refus"});
  check_refused(es, T.sticky, {"world-writable", "refus"});
  for (const auto& e : es) {
    INFO("entry " << e.path);
    CHECK(e.name != "worldw");  // no plugin inside them was loaded
    for (const auto& d : {T.gw, T.ww, T.sticky}) CHECK(e.path.rfind(d + "/", 0) != 0);
  }
}

TEST_CASE("group- and world-writable plugin files are refused before dlopen", "[policy]") {
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  check_refused(es, T.ok + "/accel-b-gw.so", {"group-writable", "refused"});
  check_refused(es, T.ok + "/accel-c-ww.so", {"world-writable", "refused"});
  // Through a symlink the target's mode counts, and the target's path is
  // what is reported.
  check_refused(es, T.wwfile_dir + "/accel-ww-target.so", {"world-writable"});
  CHECK(at_path(es, T.ok + "/accel-e-wwlink.so") == nullptr);
  for (const auto& e : es) CHECK(e.name != "dup");
}

TEST_CASE("relative ACCEL_PLUGIN_PATH entries are ignored with a reason", "[policy]") {
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  for (const auto& rel : T.relative) check_refused(es, rel, {"not absolute", "ignored"});
}

TEST_CASE("a plugin reached through a symlink is reported with its resolved path", "[policy]") {
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  const std::string real = T.real + "/accel-sim-real.so";
  const Entry* e = at_path(es, real);
  REQUIRE(e != nullptr);
  CHECK(e->name == "sim");
  CHECK(e->status == corpus::kAvailable);
  CHECK(e->devices == 1);
  CHECK(at_path(es, T.ok + "/accel-d-link.so") == nullptr);
  REQUIRE(accel_current_accelerator() != nullptr);
  CHECK(std::string(accel_current_accelerator()) == "sim");
}

TEST_CASE("the control plugin next to the refused ones loads", "[policy]") {
  // Proves the folder is searched at all: the refusals above are the
  // policy's, not a path that was never read.
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  const Entry* e = at_path(es, T.ok + "/accel-a-good.so");
  REQUIRE(e != nullptr);
  CHECK(e->name == "tiny");
  CHECK(e->status == corpus::kNoDevices);
}

TEST_CASE("accelctl shows every refusal and its reason", "[policy][accelctl]") {
  if (g_accelctl.empty()) FAIL("--accelctl PATH was not given");
  int code = -1;
  const std::string out = run_accelctl({"backends", "--json"}, code);
  INFO("accelctl backends --json printed:\n" << out);
  CHECK(code == 0);
  json j;
  try {
    j = json::parse(out);
  } catch (const std::exception& ex) {
    FAIL("not JSON: " << ex.what());
  }
  REQUIRE(j.contains("backends"));
  auto find = [&](const std::string& path) -> const json* {
    for (const auto& b : j["backends"])
      if (b.value("path", "") == path) return &b;
    return nullptr;
  };
  struct Want {
    std::string path, word;
  };
  const std::vector<Want> wants = {
      {T.gw, "group-writable"},
      {T.ww, "world-writable"},
      {T.sticky, "world-writable"},
      {T.ok + "/accel-b-gw.so", "group-writable"},
      {T.ok + "/accel-c-ww.so", "world-writable"},
      {T.wwfile_dir + "/accel-ww-target.so", "world-writable"},
      {T.relative[0], "not absolute"},
      {T.relative[1], "not absolute"},
  };
  for (const auto& w : wants) {
    INFO("path " << w.path);
    const json* b = find(w.path);
    REQUIRE(b != nullptr);
    CHECK(b->value("status", "") == "rejected");
    INFO("reason: " << b->value("reason", ""));
    CHECK(corpus::contains_ci(b->value("reason", ""), w.word));
  }
  const json* sim = find(T.real + "/accel-sim-real.so");
  REQUIRE(sim != nullptr);
  CHECK(sim->value("status", "") == "available");

  // The plain-text table a user reads carries the reasons too.
  const std::string text = run_accelctl({"backends"}, code);
  INFO("accelctl backends printed:\n" << text);
  CHECK(code == 0);
  CHECK(corpus::contains_ci(text, "group-writable"));
  CHECK(corpus::contains_ci(text, "world-writable"));
  CHECK(corpus::contains_ci(text, "not absolute"));
}

int main(int argc, char** argv) {
  bool built = false;
  int rc = accel_test::run(argc, argv, {{&g_accelctl, "--accelctl", "path", "the accelctl to run"}},
                           [&](accel_test::Parsed&) {
                             build_tree();
                             built = true;
                             setenv("ACCEL_PLUGIN_PATH", T.plugin_path.c_str(), 1);
                             setenv("ACCEL_SIM_DEVICES", "1", 1);
                             setenv("ACCEL_LOG_LEVEL", "off", 1);
                             unsetenv("ACCEL_BACKEND");
                             std::printf("ACCEL_PLUGIN_PATH=%s\n", T.plugin_path.c_str());
                             return -1;
                           });
  if (built) corpus::remove_dirs({T.root});
  return rc;
}
