// accel-loader-test: plugin discovery under hostile and unusual conditions.
//
// Discovery runs once per process, so each scenario is its own invocation:
//
//   accel-loader-test --scenario hostile          hostile corpus + sim (2 devices)
//   accel-loader-test --scenario absent-backend   ACCEL_BACKEND names no plugin
//   accel-loader-test --scenario named-no-devices ACCEL_BACKEND=sim, sim has 0 devices
//   accel-loader-test --scenario no-plugins       an empty plugin path
//   accel-loader-test --scenario minimal          only the tiny plugin (NULL optionals)
//   accel-loader-test --scenario reentry          a plugin calling accel from its callbacks
//   accel-loader-test --scenario copies           three copies of one backend, two unusable
//   accel-loader-test --scenario copies-named     the same, with ACCEL_BACKEND naming it
//   accel-loader-test --scenario path-duplicates  one folder spelled three ways, and a file
//   accel-loader-test --scenario priority         a dropped-in plugin claiming priority 500
//   accel-loader-test --scenario tie              two plugins of equal priority
//   accel-loader-test --scenario bad-name         a plugin with an invalid backend name
//
// main() prepares the environment (setenv) BEFORE the first accel call and
// then runs the Catch2 test cases tagged with the scenario's name.
#include <accel/accel.h>

#include <catch2/catch.hpp>
#include "runner.hpp"

#include <cstring>
#include <functional>
#include <map>
#include <regex>
#include <thread>

#include "corpus.hpp"

namespace {

struct Entry {
  size_t index = 0;
  std::string name, path, reason;
  int status = -1;
  int32_t device_count = 0;
  int32_t is_current = 0;
  uint32_t abi_major = 0, abi_minor = 0;
  int32_t priority = 0;
};

std::vector<Entry> entries() {
  std::vector<Entry> out;
  const size_t n = accel_backend_count();
  for (size_t i = 0; i < n; ++i) {
    accel_backend_info_t info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    accel_status_t st = accel_get_backend_info(i, &info);
    INFO("accel_get_backend_info(" << i << ") -> " << accel_status_name(st) << ": "
                                   << accel_last_error());
    REQUIRE(st == ACCEL_SUCCESS);
    Entry e;
    e.index = i;
    e.name = info.name ? info.name : "(null)";
    e.path = info.path ? info.path : "(null)";
    e.reason = info.reason ? info.reason : "(null)";
    e.status = static_cast<int>(info.status);
    e.device_count = info.device_count;
    e.is_current = info.is_current;
    e.abi_major = info.abi_major;
    e.abi_minor = info.abi_minor;
    e.priority = info.priority;
    out.push_back(e);
  }
  return out;
}

std::string dump(const std::vector<Entry>& es) {
  std::string s;
  for (const auto& e : es) {
    s += "  [" + std::to_string(e.index) + "] name='" + e.name +
         "' status=" + corpus::status_name(e.status) +
         " devices=" + std::to_string(e.device_count) + " current=" + std::to_string(e.is_current) +
         " path=" + e.path + "\n      reason: " + e.reason + "\n";
  }
  return s;
}

const Entry* find_by_name(const std::vector<Entry>& es, const std::string& name) {
  for (const auto& e : es)
    if (e.name == name && (e.status == corpus::kAvailable || e.status == corpus::kNoDevices ||
                           e.status == corpus::kUnavailable))
      return &e;
  return nullptr;
}

corpus::Corpus g_corpus;
std::string g_scenario;

// Temporary folders of scenarios other than hostile.
std::vector<std::string> g_cleanup;

}  // namespace

// --- hostile ------------------------------------------------------------------

TEST_CASE("every hostile item is reported with its fault", "[hostile]") {
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  std::vector<bool> used(es.size(), false);
  std::map<std::string, size_t> index_of;
  for (const auto& ex : g_corpus.expect) {
    INFO("item '" << ex.key << "' expected " << corpus::status_name(ex.status) << " at "
                  << ex.path);
    // The entry with this path and the expected status; else any unused
    // entry with this path (to report its wrong status).
    const Entry* hit = nullptr;
    for (size_t i = 0; i < es.size() && hit == nullptr; ++i)
      if (!used[i] && es[i].path == ex.path && es[i].status == ex.status) hit = &es[i];
    for (size_t i = 0; i < es.size() && hit == nullptr; ++i)
      if (!used[i] && es[i].path == ex.path) hit = &es[i];
    if (hit == nullptr) {
      FAIL_CHECK("no entry for item '" << ex.key << "' (path " << ex.path << ")");
      continue;
    }
    used[hit->index] = true;
    index_of[ex.key] = hit->index;
    INFO("got status " << corpus::status_name(hit->status) << ", reason \"" << hit->reason << "\"");
    CHECK(hit->status == ex.status);
    CHECK(hit->is_current == 0);
    if (ex.status == corpus::kRejected || ex.status == corpus::kDuplicate)
      CHECK_FALSE(hit->reason.empty());
    for (const auto& group : ex.reason_any) {
      bool any = false;
      std::string wanted;
      for (const auto& w : group) {
        any = any || corpus::contains_ci(hit->reason, w);
        wanted += (wanted.empty() ? "\"" : " or \"") + w + "\"";
      }
      INFO("reason should contain " << wanted);
      CHECK(any);
    }
    if (!ex.name.empty()) CHECK(hit->name == ex.name);
  }

  SECTION("the symlink is reported under its resolved path; never its own") {
    const std::string link = g_corpus.dir + "/accel-zz-symlink.so";
    for (const auto& e : es) CHECK(e.path != link);
  }
  SECTION("the world-writable folder's plugin was not loaded") {
    for (const auto& e : es) {
      INFO("entry " << e.index << " path " << e.path);
      CHECK(e.name != "worldw");
      CHECK(e.path.rfind(g_corpus.ww_dir + "/", 0) != 0);
    }
  }
  SECTION("the unreadable plugin was not loaded") { CHECK(find_by_name(es, "unread") == nullptr); }
  SECTION("discovery order: path entries in order; files sorted by name") {
    const char* order[] = {"abi-major",  "dup-a",      "dup-b",   "init-fail",     "no-entry",
                           "notelf",     "null-entry", "null-op", "small-vtable",  "tiny",
                           "unreadable", "relative",   "missing", "world-writable"};
    for (size_t i = 1; i < sizeof order / sizeof order[0]; ++i) {
      if (!index_of.count(order[i - 1]) || !index_of.count(order[i])) continue;
      INFO(order[i - 1] << " before " << order[i]);
      CHECK(index_of[order[i - 1]] < index_of[order[i]]);
    }
  }
}

// Every refusal sends its reader to the rule it applied (docs/plugin-abi.md;
// tests/docs checks that each rule the core cites exists there).
TEST_CASE("every refusal of the hostile corpus names its plugin-abi rule", "[hostile]") {
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  const std::regex rule(R"(\(plugin-abi rule [0-9]+\))");
  size_t refused = 0;
  for (const auto& e : es) {
    if (e.status != corpus::kRejected && e.status != corpus::kDuplicate &&
        e.status != corpus::kUnavailable)
      continue;
    ++refused;
    INFO("entry " << e.index << " (" << corpus::status_name(e.status) << ") " << e.path
                  << ": reason \"" << e.reason << "\"");
    CHECK(std::regex_search(e.reason, rule));
  }
  // Every item of the corpus is refused but its two good plugins (dup-a, tiny).
  CHECK(refused >= g_corpus.expect.size() - 2);
}

TEST_CASE("good plugins still load next to the hostile ones", "[hostile]") {
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  const Entry* sim = find_by_name(es, "sim");
  REQUIRE(sim != nullptr);
  CHECK(sim->status == corpus::kAvailable);
  CHECK(sim->device_count == 2);
  CHECK(sim->is_current == 1);
  CHECK(sim->abi_major >= 1);
  CHECK(sim->path.rfind(g_corpus.sim_dir + "/", 0) == 0);
  const Entry* tiny = find_by_name(es, "tiny");
  REQUIRE(tiny != nullptr);
  CHECK(tiny->status == corpus::kNoDevices);
  CHECK(tiny->is_current == 0);
  CHECK_FALSE(tiny->reason.empty());  // it said why it has no devices
  const Entry* dup = find_by_name(es, "dup");
  REQUIRE(dup != nullptr);
  CHECK(dup->path == g_corpus.dir + "/accel-dup-a.so");  // the first one wins

  CHECK(accel_is_available() == 1);
  REQUIRE(accel_current_accelerator() != nullptr);
  CHECK(std::string(accel_current_accelerator()) == "sim");
  CHECK(accel_device_count() == 2);
}

TEST_CASE("the process survived and the chosen backend works", "[hostile]") {
  REQUIRE(accel_is_available() == 1);
  REQUIRE(accel_set_device_index(1) == ACCEL_SUCCESS);
  void* p = nullptr;
  REQUIRE(accel_malloc(-1, 1024, &p) == ACCEL_SUCCESS);
  std::vector<unsigned char> in(1024, 0x3C), out(1024, 0);
  REQUIRE(accel_memcpy_async(p, in.data(), in.size(), ACCEL_MEMCPY_HOST_TO_DEVICE, nullptr) ==
          ACCEL_SUCCESS);
  REQUIRE(accel_memcpy_async(out.data(), p, out.size(), ACCEL_MEMCPY_DEVICE_TO_HOST, nullptr) ==
          ACCEL_SUCCESS);
  REQUIRE(accel_synchronize(-1) == ACCEL_SUCCESS);
  CHECK(in == out);
  CHECK(accel_free(p) == ACCEL_SUCCESS);
  CHECK(accel_set_device_index(0) == ACCEL_SUCCESS);
}

// --- absent backend ------------------------------------------------------------

TEST_CASE("ACCEL_BACKEND naming an absent backend: no accelerator and no fallback",
          "[absent-backend]") {
  CHECK(accel_is_available() == 0);
  CHECK(accel_current_accelerator() == nullptr);
  CHECK(accel_device_count() == 0);
  CHECK(accel_current_device_index() == -1);
  const std::string reason = accel_selection_reason();
  INFO("selection reason: " << reason);
  CHECK(reason.find("nosuch_backend") != std::string::npos);
  // sim is loaded and has devices, but is not used in its place.
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  const Entry* sim = find_by_name(es, "sim");
  REQUIRE(sim != nullptr);
  CHECK(sim->status == corpus::kAvailable);
  CHECK(sim->device_count == 2);
  CHECK(sim->is_current == 0);
  for (const auto& e : es) CHECK(e.is_current == 0);

  accel_status_t st = accel_set_device_index(0);
  CHECK(st == ACCEL_ERROR_NO_ACCELERATOR);
  CHECK(std::strlen(accel_last_error()) > 0);
}

TEST_CASE("ACCEL_BACKEND naming a backend without devices: no accelerator", "[named-no-devices]") {
  CHECK(accel_is_available() == 0);
  CHECK(accel_current_accelerator() == nullptr);
  CHECK(accel_device_count() == 0);
  const std::string reason = accel_selection_reason();
  INFO("selection reason: " << reason);
  CHECK(reason.find("sim") != std::string::npos);
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  const Entry* sim = find_by_name(es, "sim");
  REQUIRE(sim != nullptr);
  CHECK(sim->status == corpus::kNoDevices);
  CHECK(sim->is_current == 0);
  CHECK(accel_set_device_index(0) == ACCEL_ERROR_NO_ACCELERATOR);
}

// --- no plugins -------------------------------------------------------------------

TEST_CASE("no plugins at all: not available / nothing works / everything says why",
          "[no-plugins]") {
  // First call from many threads at once: lazy init must cope.
  std::vector<std::thread> ts;
  std::vector<int> avail(6, -1);
  for (int i = 0; i < 6; ++i) ts.emplace_back([&, i] { avail[i] = accel_is_available(); });
  for (auto& t : ts) t.join();
  for (int a : avail) CHECK(a == 0);

  CHECK(accel_is_available() == 0);
  CHECK(accel_current_accelerator() == nullptr);
  CHECK(accel_device_count() == 0);
  CHECK(accel_current_device_index() == -1);
  CHECK(std::strlen(accel_selection_reason()) > 0);
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  for (const auto& e : es) CHECK(e.status != corpus::kAvailable);

  struct Call {
    const char* what;
    accel_status_t st;
  };
  accel_stream_t s = nullptr;
  accel_event_t ev = nullptr;
  void* p = nullptr;
  int32_t prev = 0;
  size_t f = 0, t = 0;
  accel_memory_stats_t ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  accel_device_properties_t props;
  std::memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  const Call calls[] = {
      {"set_device_index(0)", accel_set_device_index(0)},
      {"exchange_device(0)", accel_exchange_device(0, &prev)},
      {"current_stream(-1)", accel_current_stream(-1, &s)},
      {"stream_create(-1)", accel_stream_create(-1, 0, &s)},
      {"event_create(-1)", accel_event_create(-1, ACCEL_EVENT_DEFAULT, &ev)},
      {"malloc(-1)", accel_malloc(-1, 64, &p)},
      {"mem_get_info(-1)", accel_mem_get_info(-1, &f, &t)},
      {"memory_stats(-1)", accel_memory_stats(-1, &ms)},
      {"get_device_properties(-1)", accel_get_device_properties(-1, &props)},
  };
  for (const auto& c : calls) {
    INFO(c.what << " -> " << accel_status_name(c.st));
    CHECK(c.st == ACCEL_ERROR_NO_ACCELERATOR);
  }
  // The message of a NO_ACCELERATOR failure, on a fresh thread.
  std::string before = "x", after;
  accel_status_t st = ACCEL_SUCCESS;
  std::thread th([&] {
    before = accel_last_error();
    st = accel_set_device_index(0);
    after = accel_last_error();
  });
  th.join();
  CHECK(st == ACCEL_ERROR_NO_ACCELERATOR);
  CHECK(before.empty());
  INFO("message: " << after);
  CHECK_FALSE(after.empty());
  CHECK(s == nullptr);
  CHECK(ev == nullptr);
  CHECK(p == nullptr);
  CHECK(accel_free(nullptr) == ACCEL_SUCCESS);
}

// --- minimal plugin ----------------------------------------------------------------

TEST_CASE("a minimal plugin: NULL optional members are NOT_SUPPORTED naming both", "[minimal]") {
  REQUIRE(accel_is_available() == 1);
  REQUIRE(accel_current_accelerator() != nullptr);
  CHECK(std::string(accel_current_accelerator()) == "tiny");
  CHECK(accel_device_count() == 2);

  // What it has works.
  accel_stream_t s = nullptr;
  REQUIRE(accel_stream_create(1, 0, &s) == ACCEL_SUCCESS);
  CHECK(accel_stream_query(s) == ACCEL_SUCCESS);
  CHECK(accel_stream_synchronize(s) == ACCEL_SUCCESS);
  CHECK(accel_synchronize(1) == ACCEL_SUCCESS);
  accel_device_properties_t props;
  std::memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  CHECK(accel_get_device_properties(1, &props) == ACCEL_SUCCESS);
  CHECK(props.device_index == 1);
  CHECK(std::string(props.name) == "tiny test device");

  // No stream_priority_range: only priority 0 exists, others are clamped.
  int32_t least = 9, greatest = 9;
  CHECK(accel_stream_priority_range(0, &least, &greatest) == ACCEL_SUCCESS);
  CHECK(least == 0);
  CHECK(greatest == 0);
  accel_stream_t hi = nullptr;
  REQUIRE(accel_stream_create(0, -5, &hi) == ACCEL_SUCCESS);
  int32_t prio = 7;
  CHECK(accel_stream_priority(hi, &prio) == ACCEL_SUCCESS);
  CHECK(prio == 0);
  CHECK(accel_stream_destroy(hi) == ACCEL_SUCCESS);

  // Statistics are kept by the core, so they work without memory support.
  accel_memory_stats_t ms;
  std::memset(&ms, 0, sizeof ms);
  ms.struct_size = sizeof ms;
  CHECK(accel_memory_stats(0, &ms) == ACCEL_SUCCESS);
  CHECK(ms.allocated_bytes == 0);

  void* p = nullptr;
  accel_event_t ev = nullptr;
  size_t f = 0, t = 0;
  unsigned char host[8] = {0};
  struct Call {
    const char* what;
    std::function<accel_status_t()> fn;
    std::vector<std::string> op_words;  // the operation, as the message may name it
  };
  const std::vector<Call> calls = {
      {"malloc", [&] { return accel_malloc(0, 64, &p); }, {"malloc", "mem_alloc", "alloc"}},
      {"event_create", [&] { return accel_event_create(0, ACCEL_EVENT_DEFAULT, &ev); }, {"event"}},
      {"launch_host_func",
       [&] {
         return accel_launch_host_func(
             s, [](void*) {}, nullptr);
       },
       {"host_func", "host func", "host function"}},
      {"mem_get_info", [&] { return accel_mem_get_info(0, &f, &t); }, {"mem_get_info", "info"}},
      {"memcpy_async",
       [&] { return accel_memcpy_async(host, host + 4, 4, ACCEL_MEMCPY_HOST_TO_DEVICE, s); },
       {"memcpy", "copy"}},
  };
  for (const auto& c : calls) {
    std::string msg;
    accel_status_t st = ACCEL_SUCCESS;
    std::thread th([&] {
      st = c.fn();
      msg = accel_last_error();
    });
    th.join();
    INFO(c.what << " -> " << accel_status_name(st) << ": \"" << msg << "\"");
    // memcpy may be refused earlier as INVALID_ARGUMENT (host pointers are
    // not device allocations); everything else must be NOT_SUPPORTED.
    if (std::string(c.what) == "memcpy_async") {
      CHECK((st == ACCEL_ERROR_NOT_SUPPORTED || st == ACCEL_ERROR_INVALID_ARGUMENT));
    } else {
      CHECK(st == ACCEL_ERROR_NOT_SUPPORTED);
      CHECK(corpus::contains_ci(msg, "tiny"));
      bool named = false;
      for (const auto& w : c.op_words) named = named || corpus::contains_ci(msg, w);
      CHECK(named);
    }
  }
  CHECK(p == nullptr);
  CHECK(ev == nullptr);
  CHECK(accel_stream_destroy(s) == ACCEL_SUCCESS);
}

// --- re-entry ---------------------------------------------------------------------

// The plugin itself checks each nested call (tests/bad_plugins, BAD_REENTER)
// and fails its callback unless it got ACCEL_ERROR_REENTRANT naming it: the
// backend works only if all three were refused. Before, init deadlocked.
TEST_CASE("a plugin calling accel from init / lazy_init / default_stream is refused and not hung",
          "[reentry]") {
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  const Entry* e = find_by_name(es, "reenter");
  REQUIRE(e != nullptr);
  CHECK(e->status == corpus::kAvailable);  // init's nested call was refused
  REQUIRE(accel_is_available() == 1);
  accel_stream_t s = nullptr;
  accel_status_t st = accel_stream_create(0, 0, &s);  // runs lazy_init
  INFO(accel_last_error());
  REQUIRE(st == ACCEL_SUCCESS);
  accel_stream_t def = nullptr;
  st = accel_current_stream(1, &def);  // runs default_stream
  INFO(accel_last_error());
  CHECK(st == ACCEL_SUCCESS);
  CHECK(accel_stream_destroy(s) == ACCEL_SUCCESS);
  // The status has a name and a message like every other.
  CHECK(std::string(accel_status_name(ACCEL_ERROR_REENTRANT)) == "ACCEL_ERROR_REENTRANT");
}

// --- copies of one backend ------------------------------------------------------------

namespace {
std::vector<Entry> copies_of(const std::vector<Entry>& es, const std::string& name) {
  std::vector<Entry> out;
  for (const auto& e : es)
    if (e.name == name) out.push_back(e);
  return out;
}

void check_copies() {
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  INFO("selection: " << accel_selection_reason());
  const auto vend = copies_of(es, "vend");
  REQUIRE(vend.size() == 3);
  CHECK(vend[0].status == corpus::kRejected);
  CHECK(vend[1].status == corpus::kUnavailable);
  CHECK(vend[2].status == corpus::kAvailable);
  // The unusable copies neither shadow the good one nor stay silent about it.
  for (int i = 0; i < 2; ++i) {
    CHECK(vend[i].reason.find("provided by the later copy " + vend[2].path) != std::string::npos);
    CHECK(vend[i].is_current == 0);
  }
  CHECK(vend[2].is_current == 1);
  REQUIRE(accel_current_accelerator() != nullptr);
  CHECK(std::string(accel_current_accelerator()) == "vend");
  CHECK(accel_device_count() == 1);
}
}  // namespace

TEST_CASE("copies of one backend: the usable copy serves it and the others say so", "[copies]") {
  check_copies();
}

TEST_CASE("ACCEL_BACKEND picks the copy automatic selection would pick", "[copies-named]") {
  check_copies();
  CHECK(std::string(accel_selection_reason()).find("ACCEL_BACKEND=vend") != std::string::npos);
}

// --- search-path duplicates ----------------------------------------------------------

TEST_CASE(
    "one folder listed three ways is searched once and listed thrice; a file entry says "
    "what to do",
    "[path-duplicates]") {
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  const std::string path = std::getenv("ACCEL_PLUGIN_PATH");
  std::vector<std::string> parts;
  for (size_t a = 0, b; a <= path.size(); a = b + 1) {
    b = path.find(':', a);
    if (b == std::string::npos) b = path.size();
    parts.push_back(path.substr(a, b - a));
  }
  REQUIRE(parts.size() == 6);  // dir, dir/, link, file, "", file/
  // The tiny plugin was loaded once.
  CHECK(copies_of(es, "tiny").size() == 1);
  for (size_t i = 1; i < 3; ++i) {
    INFO("entry " << parts[i]);
    const Entry* row = nullptr;
    for (const auto& e : es)
      if (e.path == parts[i]) row = &e;
    REQUIRE(row != nullptr);
    CHECK(row->status == corpus::kDuplicate);
    CHECK(row->reason.find("ACCEL_PLUGIN_PATH entry '" + parts[i] + "'") != std::string::npos);
    CHECK(row->reason.find("same directory as the earlier entry '" + parts[0] + "'") !=
          std::string::npos);
    CHECK(row->reason.find("(plugin-abi rule 5)") != std::string::npos);
  }
  // A file, with or without a trailing slash: what to list instead.
  for (size_t i : {size_t{3}, size_t{5}}) {
    INFO("entry " << parts[i]);
    const Entry* file = nullptr;
    for (const auto& e : es)
      if (e.path == parts[i]) file = &e;
    REQUIRE(file != nullptr);
    CHECK(file->status == corpus::kRejected);
    CHECK(file->reason.find("ACCEL_PLUGIN_PATH entry '" + parts[i] + "' is a file") !=
          std::string::npos);
    CHECK(file->reason.find("list its directory ('" + parts[0] + "')") != std::string::npos);
    CHECK(file->reason.find("(plugin-abi rule 3)") != std::string::npos);
  }
  // The empty entry between two ':' is listed too.
  const Entry* empty = nullptr;
  for (const auto& e : es)
    if (e.path.empty()) empty = &e;
  REQUIRE(empty != nullptr);
  CHECK(empty->status == corpus::kRejected);
  CHECK(empty->reason.find("empty ACCEL_PLUGIN_PATH entry") != std::string::npos);
}

// --- priorities --------------------------------------------------------------------

TEST_CASE("a dropped-in plugin cannot claim a vendor priority", "[priority]") {
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  const Entry* loud = find_by_name(es, "loud");
  REQUIRE(loud != nullptr);
  CHECK(loud->priority == 99);
  CHECK(loud->reason.find("priority 500 lowered to 99") != std::string::npos);
  CHECK(loud->reason.find("(plugin-abi rule 16)") != std::string::npos);
  // sim comes from this build's own plugin folder: its priority is its own.
  const Entry* sim = find_by_name(es, "sim");
  REQUIRE(sim != nullptr);
  CHECK(sim->priority == 10);
  CHECK(sim->reason.find("lowered") == std::string::npos);
  REQUIRE(accel_current_accelerator() != nullptr);
  CHECK(std::string(accel_current_accelerator()) == "loud");  // 99 still beats sim's 10
}

TEST_CASE("a priority tie is broken by name and the reason says so", "[tie]") {
  const std::string reason = accel_selection_reason();
  INFO(reason);
  REQUIRE(accel_current_accelerator() != nullptr);
  CHECK(std::string(accel_current_accelerator()) == "tiny");  // "tiny" < "vend"
  CHECK(reason.find("tied with 'vend'") != std::string::npos);
  CHECK(reason.find("by name") != std::string::npos);
}

TEST_CASE("an invalid backend name is echoed in the reason", "[bad-name]") {
  const auto es = entries();
  INFO("discovery saw:\n" << dump(es));
  bool seen = false;
  for (const auto& e : es) {
    if (e.path.find("accel-badname.so") == std::string::npos) continue;
    seen = true;
    CHECK(e.status == corpus::kRejected);
    CHECK(e.reason.find("'Bad-Name'") != std::string::npos);
    CHECK(e.reason.find("(plugin-abi rule 15)") != std::string::npos);
  }
  CHECK(seen);
}

// --- main ------------------------------------------------------------------------

namespace {

// Sets up the scenario's environment before the first accel call.
int setup_scenario(accel_test::Parsed& parsed) {
  unsetenv("ACCEL_BACKEND");
  unsetenv("ACCEL_SIM_DEVICES");
  unsetenv("ACCEL_TINY_DEVICES");
  unsetenv("ACCEL_PLUGIN_PATH");

  if (g_scenario == "hostile") {
    g_corpus = corpus::build(true);
    g_cleanup = g_corpus.cleanup;
    setenv("ACCEL_PLUGIN_PATH", g_corpus.plugin_path.c_str(), 1);
    setenv("ACCEL_SIM_DEVICES", "2", 1);
  } else if (g_scenario == "absent-backend") {
    setenv("ACCEL_PLUGIN_PATH", corpus::env_or_die("ACCEL_TEST_SIM_DIR").c_str(), 1);
    setenv("ACCEL_SIM_DEVICES", "2", 1);
    setenv("ACCEL_BACKEND", "nosuch_backend", 1);
  } else if (g_scenario == "named-no-devices") {
    setenv("ACCEL_PLUGIN_PATH", corpus::env_or_die("ACCEL_TEST_SIM_DIR").c_str(), 1);
    setenv("ACCEL_SIM_DEVICES", "0", 1);
    setenv("ACCEL_BACKEND", "sim", 1);
  } else if (g_scenario == "no-plugins") {
    const std::string empty = corpus::make_temp_dir("empty");
    g_cleanup.push_back(empty);
    setenv("ACCEL_PLUGIN_PATH", empty.c_str(), 1);
  } else if (g_scenario == "minimal") {
    const std::string dir = corpus::make_temp_dir("minimal");
    g_cleanup.push_back(dir);
    corpus::copy_module("ACCEL_TEST_MOD_TINY", dir + "/accel-tiny.so");
    setenv("ACCEL_PLUGIN_PATH", dir.c_str(), 1);
    setenv("ACCEL_TINY_DEVICES", "2", 1);
  } else if (g_scenario == "reentry") {
    const std::string dir = corpus::make_temp_dir("reentry");
    g_cleanup.push_back(dir);
    corpus::copy_module("ACCEL_TEST_MOD_REENTER", dir + "/accel-reenter.so");
    setenv("ACCEL_PLUGIN_PATH", dir.c_str(), 1);
    setenv("ACCEL_TINY_DEVICES", "2", 1);
  } else if (g_scenario == "copies" || g_scenario == "copies-named") {
    // A/accel-vend.so: init fails; B/accel-vend.so: vendor library missing;
    // C/accel-vend.so: works. Searched in that order.
    std::string path;
    for (const char* variant :
         {"ACCEL_TEST_MOD_VEND_FAIL", "ACCEL_TEST_MOD_VEND_UNAVAIL", "ACCEL_TEST_MOD_VEND"}) {
      const std::string dir = corpus::make_temp_dir("copies");
      g_cleanup.push_back(dir);
      corpus::copy_module(variant, dir + "/accel-vend.so");
      path += (path.empty() ? "" : ":") + dir;
    }
    setenv("ACCEL_PLUGIN_PATH", path.c_str(), 1);
    setenv("ACCEL_TINY_DEVICES", "1", 1);
    if (g_scenario == "copies-named") setenv("ACCEL_BACKEND", "vend", 1);
  } else if (g_scenario == "path-duplicates") {
    const std::string dir = corpus::make_temp_dir("pathdup");
    g_cleanup.push_back(dir);
    corpus::copy_module("ACCEL_TEST_MOD_TINY", dir + "/accel-tiny.so");
    const std::string link = dir + "-link";
    std::filesystem::create_directory_symlink(dir, link);
    g_cleanup.push_back(link);
    const std::string path =
        dir + ":" + dir + "/:" + link + ":" + dir + "/accel-tiny.so::" + dir + "/accel-tiny.so/";
    setenv("ACCEL_PLUGIN_PATH", path.c_str(), 1);
    setenv("ACCEL_TINY_DEVICES", "1", 1);
  } else if (g_scenario == "priority" || g_scenario == "tie") {
    const std::string dir = corpus::make_temp_dir(g_scenario);
    g_cleanup.push_back(dir);
    if (g_scenario == "priority")
      corpus::copy_module("ACCEL_TEST_MOD_LOUD", dir + "/accel-loud.so");
    corpus::copy_module("ACCEL_TEST_MOD_TINY", dir + "/accel-tiny.so");
    corpus::copy_module("ACCEL_TEST_MOD_VEND", dir + "/accel-vend.so");
    // sim from this build's own folder (priority 10), next to them.
    const std::string path = dir + ":" + corpus::env_or_die("ACCEL_TEST_SIM_DIR");
    setenv("ACCEL_PLUGIN_PATH", path.c_str(), 1);
    setenv("ACCEL_TINY_DEVICES", "1", 1);
    setenv("ACCEL_SIM_DEVICES", g_scenario == "tie" ? "0" : "1", 1);
  } else if (g_scenario == "bad-name") {
    const std::string dir = corpus::make_temp_dir("badname");
    g_cleanup.push_back(dir);
    corpus::copy_module("ACCEL_TEST_MOD_BAD_NAME", dir + "/accel-badname.so");
    setenv("ACCEL_PLUGIN_PATH", dir.c_str(), 1);
  } else {
    std::fprintf(stderr, "accel-loader-test: --scenario is required (see --help)\n");
    return 2;
  }
  std::printf("scenario %s: ACCEL_PLUGIN_PATH=%s\n", g_scenario.c_str(),
              std::getenv("ACCEL_PLUGIN_PATH"));
  std::fflush(stdout);

  // Run only this scenario's test cases.
  if (parsed.filters->empty()) parsed.filters->push_back("[" + g_scenario + "]");
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  int rc = accel_test::run(argc, argv,
                           {{&g_scenario, "--scenario", "name",
                             "hostile | absent-backend | named-no-devices | no-plugins | minimal"}},
                           setup_scenario);
  corpus::remove_dirs(g_cleanup);
  return rc;
}
