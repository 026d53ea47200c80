// The loader's hostile corpus, built at run time in fresh temporary folders
// from the modules tests/bad_plugins builds (their paths arrive in
// ACCEL_TEST_MOD_* environment variables set by tests/meson.build), and the
// verdict expected of discovery for each item. Shared by the loader test
// (through accel_get_backend_info) and the accelctl test (through
// `accelctl backends --json`).
#ifndef ACCEL_TESTS_CORPUS_HPP
#define ACCEL_TESTS_CORPUS_HPP

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace corpus {

namespace fs = std::filesystem;

inline std::string env_or_die(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    std::fprintf(stderr,
                 "test setup: environment variable %s is not set (run through meson test)\n", name);
    std::exit(2);
  }
  return v;
}

inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

inline bool contains_ci(const std::string& hay, const std::string& needle) {
  return lower(hay).find(lower(needle)) != std::string::npos;
}

// A fresh private folder (mode 0700) under ACCEL_TEST_WORKDIR (the build
// folder; /tmp as a fallback), resolved through symlinks.
inline std::string make_temp_dir(const std::string& tag) {
  const char* base = std::getenv("ACCEL_TEST_WORKDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/accel-" + tag + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    std::perror("mkdtemp");
    std::exit(2);
  }
  return fs::canonical(buf.data()).string();
}

inline void copy_module(const std::string& env_var, const std::string& dest) {
  const std::string src = env_or_die(env_var.c_str());
  fs::copy_file(src, dest, fs::copy_options::overwrite_existing);
  fs::permissions(dest, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// What discovery must say about one item.
struct Expect {
  std::string key;   // short label for messages
  std::string path;  // the entry's path as accel reports it
  int status;        // accel_backend_status_t value
  // All groups must match, any string in a group. The last group of every
  // refused item is the rule of docs/plugin-abi.md the loader must name.
  std::vector<std::vector<std::string>> reason_any;
  std::string name;  // expected backend name, "" to skip
};

// Status values of accel_backend_status_t, spelled out so this header needs
// no accel include (the accelctl test reads them as JSON strings).
enum : int { kAvailable = 0, kNoDevices = 1, kUnavailable = 2, kRejected = 3, kDuplicate = 4 };

inline const char* status_name(int s) {
  switch (s) {
    case kAvailable:
      return "available";
    case kNoDevices:
      return "no_devices";
    case kUnavailable:
      return "unavailable";
    case kRejected:
      return "rejected";
    case kDuplicate:
      return "duplicate";
  }
  return "unknown";
}

struct Corpus {
  std::string dir;             // the hostile plugin folder
  std::string ww_dir;          // a world-writable folder holding a valid plugin
  std::string relative_entry;  // a non-absolute ACCEL_PLUGIN_PATH entry
  std::string missing_entry;   // an absolute entry that does not exist
  std::string sim_dir;         // where the sim plugin was built
  std::string plugin_path;     // the ACCEL_PLUGIN_PATH value to use
  std::vector<Expect> expect;  // every verdict, in expected discovery order
  std::vector<std::string> cleanup;
};

// Builds the corpus. File names are chosen so the sorted load order is the
// order of `expect`, and the symlink sorts after its target (so the target
// loads and the link is the duplicate).
inline Corpus build(bool with_sim = true) {
  Corpus c;
  c.dir = make_temp_dir("corpus");
  c.ww_dir = make_temp_dir("worldwritable");
  c.relative_entry = "relative/entry";
  c.missing_entry = "/nonexistent-accel-test-dir/plugins";
  c.cleanup = {c.dir, c.ww_dir};
  const std::string d = c.dir + "/";

  copy_module("ACCEL_TEST_MOD_ABI_MAJOR", d + "accel-abi-major.so");
  copy_module("ACCEL_TEST_MOD_DUP_A", d + "accel-dup-a.so");
  copy_module("ACCEL_TEST_MOD_DUP_B", d + "accel-dup-b.so");
  copy_module("ACCEL_TEST_MOD_INIT_FAIL", d + "accel-init-fail.so");
  copy_module("ACCEL_TEST_MOD_NO_ENTRY", d + "accel-no-entry.so");
  write_text(d + "accel-notelf.so",
             "This is not an ELF shared object, only text with a .so name that is long "
             "enough to fill an ELF header's worth of bytes and more.\n");
  copy_module("ACCEL_TEST_MOD_HALF_GROUP", d + "accel-half-group.so");
  copy_module("ACCEL_TEST_MOD_CAP_NO_GROUP", d + "accel-cap-no-group.so");
  copy_module("ACCEL_TEST_MOD_NULL_ENTRY", d + "accel-null-entry.so");
  copy_module("ACCEL_TEST_MOD_NULL_OP", d + "accel-null-op.so");
  copy_module("ACCEL_TEST_MOD_SMALL_VTABLE", d + "accel-small-vtable.so");
  copy_module("ACCEL_TEST_MOD_TINY", d + "accel-tiny.so");
  copy_module("ACCEL_TEST_MOD_UNREAD", d + "accel-unreadable.so");
  fs::permissions(d + "accel-unreadable.so", fs::perms::none);
  fs::create_symlink(d + "accel-tiny.so", d + "accel-zz-symlink.so");

  copy_module("ACCEL_TEST_MOD_WORLDW", c.ww_dir + "/accel-worldw.so");
  if (chmod(c.ww_dir.c_str(), 0777) != 0) {
    std::perror("chmod 0777");
    std::exit(2);
  }

  using V = std::vector<std::vector<std::string>>;
  c.expect = {
      {"abi-major", d + "accel-abi-major.so", kRejected, V{{"abi"}, {"(plugin-abi rule 13)"}}, ""},
      {"dup-a", d + "accel-dup-a.so", kNoDevices, V{}, "dup"},
      {"dup-b", d + "accel-dup-b.so", kDuplicate,
       V{{"duplicate", "already"}, {"(plugin-abi rule 17)"}}, ""},
      {"half-group", d + "accel-half-group.so", kRejected,
       V{{"native handles", "all set or all null"}, {"(plugin-abi rule 19)"}}, ""},
      {"cap-no-group", d + "accel-cap-no-group.so", kRejected,
       V{{"pinned host memory", "declare"}, {"(plugin-abi rule 19)"}}, ""},
      {"init-fail", d + "accel-init-fail.so", kRejected,
       V{{"init"}, {"deliberate init failure"}, {"(plugin-abi rule 23)"}}, ""},
      {"no-entry", d + "accel-no-entry.so", kRejected,
       V{{"accel_plugin_get_api", "entry", "symbol"}, {"(plugin-abi rule 10)"}}, ""},
      {"notelf", d + "accel-notelf.so", kRejected,
       V{{"elf", "too short", "invalid"}, {"(plugin-abi rule 9)"}}, ""},
      {"null-entry", d + "accel-null-entry.so", kRejected,
       V{{"null", "declin", "entry"}, {"(plugin-abi rule 11)"}}, ""},
      {"null-op", d + "accel-null-op.so", kRejected, V{{"stream_query"}, {"(plugin-abi rule 18)"}},
       ""},
      {"small-vtable", d + "accel-small-vtable.so", kRejected,
       V{{"struct_size", "too small"}, {"(plugin-abi rule 12)"}}, ""},
      {"tiny", d + "accel-tiny.so", kNoDevices, V{}, "tiny"},
      {"unreadable", d + "accel-unreadable.so", kRejected,
       V{{"read", "permission"}, {"(plugin-abi rule 8)"}}, ""},
      // The symlink resolves to accel-tiny.so: reported under that path.
      {"symlink", d + "accel-tiny.so", kDuplicate,
       V{{"duplicate", "already", "same"}, {"(plugin-abi rule 7)"}}, ""},
      {"relative", c.relative_entry, kRejected, V{{"absolute"}, {"(plugin-abi rule 2)"}}, ""},
      {"missing", c.missing_entry, kRejected,
       V{{"does not exist", "no such", "not exist"}, {"(plugin-abi rule 3)"}}, ""},
      {"world-writable", c.ww_dir, kRejected, V{{"writable"}, {"(plugin-abi rule 4)"}}, ""},
  };
  c.plugin_path = c.dir + ":" + c.relative_entry + ":" + c.missing_entry + ":" + c.ww_dir;
  if (with_sim) {
    c.sim_dir = env_or_die("ACCEL_TEST_SIM_DIR");
    c.plugin_path += ":" + c.sim_dir;
  }
  return c;
}

inline void remove_dirs(const std::vector<std::string>& dirs) {
  if (std::getenv("ACCEL_TEST_KEEP") != nullptr) return;
  for (const auto& d : dirs) {
    std::error_code ec;
    fs::permissions(d, fs::perms::owner_all, ec);
    fs::remove_all(d, ec);
  }
}

}  // namespace corpus

#endif  // ACCEL_TESTS_CORPUS_HPP
