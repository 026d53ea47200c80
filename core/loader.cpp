#include "loader.hpp"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "callbacks.hpp"
#include "error.hpp"
#include "fork.hpp"
#include "host_services.hpp"
#include "log.hpp"
#include "plugin_groups.hpp"
#include "runtime_version.hpp"
#include "search_path.hpp"

namespace accel::core {

namespace {

using Entries = std::vector<std::unique_ptr<Backend>>;

std::string resolved(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  std::string out = real != nullptr ? real : path;
  free(real);
  return out;
}

// File-level policy: checked before dlopen runs any of the file's code.
std::string file_refusal(const std::string& path, const struct stat& st) {
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return fmt::format("plugin file is {}-writable (mode {:04o}); refused (plugin-abi rule 8)",
                       (st.st_mode & S_IWOTH) ? "world" : "group", st.st_mode & 07777);
  }
  // Root can read anything, so "no read bit at all" is the owner's clear
  // statement that the file is not meant to be loaded.
  if ((st.st_mode & 0444) == 0 || access(path.c_str(), R_OK) != 0) {
    return fmt::format("plugin file is not readable (mode {:04o}) (plugin-abi rule 8)",
                       st.st_mode & 07777);
  }
  return {};
}

bool valid_name(const char* name) {
  if (name == nullptr || *name == '\0' || strnlen(name, 65) > 64) return false;
  for (const char* p = name; *p != '\0'; ++p) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// Why a name is refused, echoing what the plugin gave (at most 64 bytes,
// unprintable bytes escaped) so its author sees the typo.
std::string name_refusal(const char* name) {
  if (name == nullptr)
    return "backend name is NULL; it must be of the form [a-z0-9_]{1,64} "
           "(plugin-abi rule 15)";
  const size_t n = strnlen(name, 65);
  std::string shown;
  for (size_t i = 0; i < n && i < 64; ++i) {
    auto c = static_cast<unsigned char>(name[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\') {
      shown += static_cast<char>(c);
    } else {
      shown += fmt::format("\\x{:02x}", c);
    }
  }
  if (n > 64) shown += "...";
  if (n == 0) {
    return "backend name is empty; it must be of the form [a-z0-9_]{1,64} (plugin-abi rule 15)";
  }
  return fmt::format(
      "backend name '{}' is not of the form [a-z0-9_]{{1,64}}{} (plugin-abi rule 15)", shown,
      n > 64 ? " (longer than 64 bytes)" : "");
}

// Plugins may use priorities of the in-tree vendor range (>= 100) only from
// the compiled-in plugins directory, the plugins folder beside this
// libaccelcore (its own installation's, moved, staged or in a Python wheel;
// never searched under AT_SECURE) or this build's own plugin folders (what
// `meson devenv` and the tests point at): a file dropped anywhere else
// cannot outrank cuda just by saying so.
constexpr int32_t kThirdPartyPriorityMax = 99;

bool trusted_location(const std::string& resolved_path) {
  auto under = [&](const std::string& dir) {
    return !dir.empty() && resolved_path.size() > dir.size() + 1 &&
           resolved_path.compare(0, dir.size(), dir) == 0 && resolved_path[dir.size()] == '/';
  };
  auto resolved = [](const std::string& dir) {
    char* real = dir.empty() ? nullptr : realpath(dir.c_str(), nullptr);
    std::string out = real != nullptr ? real : dir;
    free(real);
    return out;
  };
  static const std::string plugindir = resolved(ACCEL_PLUGINDIR);
  static const std::string own_dir = resolved(own_plugin_dir());
  for (const std::string* dir : {&plugindir, &own_dir})
    if (under(*dir) && resolved_path.find('/', dir->size() + 1) == std::string::npos) return true;
#ifdef ACCEL_BUILD_ROOT
  for (const char* sub : {"/backends/", "/plugins/"}) {
    const std::string tree = std::string(ACCEL_BUILD_ROOT) + sub;
    // <build>/backends/<name>/<file>.so: one folder per plugin, no deeper.
    if (resolved_path.compare(0, tree.size(), tree) == 0) {
      const size_t slash = resolved_path.find('/', tree.size());
      if (slash != std::string::npos && resolved_path.find('/', slash + 1) == std::string::npos)
        return true;
    }
  }
#endif
  return false;
}

// Names of REQUIRED members that are NULL; empty when all are present.
std::string missing_required(const accel_plugin_api_t& a) {
  std::vector<const char*> missing;
  auto need = [&](const void* fn, const char* what) {
    if (fn == nullptr) missing.push_back(what);
  };
  need(reinterpret_cast<const void*>(a.device_count), "device_count");
  need(reinterpret_cast<const void*>(a.get_device_properties), "get_device_properties");
  need(reinterpret_cast<const void*>(a.device_synchronize), "device_synchronize");
  need(reinterpret_cast<const void*>(a.stream_create), "stream_create");
  need(reinterpret_cast<const void*>(a.stream_destroy), "stream_destroy");
  need(reinterpret_cast<const void*>(a.default_stream), "default_stream");
  need(reinterpret_cast<const void*>(a.stream_query), "stream_query");
  need(reinterpret_cast<const void*>(a.stream_synchronize), "stream_synchronize");
  if ((a.capabilities & ACCEL_PLUGIN_CAP_NATIVE_CURRENT_DEVICE) != 0) {
    need(reinterpret_cast<const void*>(a.get_current_device), "get_current_device");
    need(reinterpret_cast<const void*>(a.set_current_device), "set_current_device");
  }
  if (missing.empty()) return {};
  return fmt::format("required operation{} {} {} NULL (plugin-abi rule 18)",
                     missing.size() > 1 ? "s" : "", fmt::join(missing, ", "),
                     missing.size() > 1 ? "are" : "is");
}

// Optional groups are all-or-nothing so the core never half-supports events.
std::string partial_group(const accel_plugin_api_t& a) {
  const void* events[] = {reinterpret_cast<const void*>(a.event_create),
                          reinterpret_cast<const void*>(a.event_destroy),
                          reinterpret_cast<const void*>(a.event_record),
                          reinterpret_cast<const void*>(a.event_query),
                          reinterpret_cast<const void*>(a.event_synchronize),
                          reinterpret_cast<const void*>(a.event_elapsed_time)};
  const void* memory[] = {
      reinterpret_cast<const void*>(a.mem_alloc), reinterpret_cast<const void*>(a.mem_free),
      reinterpret_cast<const void*>(a.memcpy_async), reinterpret_cast<const void*>(a.memset_async)};
  auto partial = [](auto& group) {
    int set = 0;
    for (auto* p : group) set += p != nullptr;
    return set != 0 && set != static_cast<int>(std::size(group));
  };
  if (partial(events)) return "event operations must be all set or all NULL (plugin-abi rule 19)";
  if (partial(memory))
    return "memory operations (mem_alloc, mem_free, memcpy_async, memset_async) "
           "must be all set or all NULL (plugin-abi rule 19)";
  return {};
}

std::string plugin_said(const char* fallback) {
  auto& pe = plugin_error();
  return plugin_error_set() && !pe.message.empty() ? pe.message : fallback;
}

// dlopen, the entry symbol and the entry call: the plugin's vtable, or
// nullptr with the refusal in b.reason. The first of the file's code to run
// is the entry itself (and its static constructors, under dlopen).
const accel_plugin_api_t* open_plugin(Backend& b) {
  b.handle = dlopen(b.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (b.handle == nullptr) {
    const char* err = dlerror();
    b.reason = fmt::format("dlopen failed: {} (plugin-abi rule 9)",
                           err != nullptr ? err : "unknown error");
    return nullptr;
  }
  dlerror();
  void* sym = dlsym(b.handle, ACCEL_PLUGIN_ENTRY_NAME);
  if (sym == nullptr) {
    b.reason = fmt::format("no entry symbol '{}' (not an accel plugin) (plugin-abi rule 10)",
                           ACCEL_PLUGIN_ENTRY_NAME);
    return nullptr;
  }
  auto entry = reinterpret_cast<accel_plugin_entry_fn>(sym);
  init_host_services(b);
  const accel_plugin_api_t* api = nullptr;
  {
    LockedCallbackScope in_callback(b, "entry", "discovery", discovery_mutex());
    begin_plugin_call();
    api = entry(ACCEL_PLUGIN_ABI_MAJOR, ACCEL_PLUGIN_ABI_MINOR, &b.host);
  }
  if (api == nullptr) {
    b.reason = fmt::format(
        "entry '{}' returned NULL (plugin declined ABI {}.{}){} "
        "(plugin-abi rule 11)",
        ACCEL_PLUGIN_ENTRY_NAME, ACCEL_PLUGIN_ABI_MAJOR, ACCEL_PLUGIN_ABI_MINOR,
        plugin_error_set() ? ": " + plugin_error().message : "");
  }
  return api;
}

// Checks the vtable's size and ABI version before reading any member past
// them, then copies into b.api as many bytes as both sides know. False, with
// the refusal in b.reason, when the table is too small or of another major.
bool copy_vtable(Backend& b, const accel_plugin_api_t& api) {
  constexpr size_t header = offsetof(accel_plugin_api_t, abi_minor) + sizeof(uint32_t);
  if (api.struct_size < header) {
    b.reason = fmt::format(
        "vtable struct_size {} is too small to hold its ABI version "
        "(need {} bytes for ABI {}.{}: {}) (plugin-abi rule 12)",
        api.struct_size, ACCEL_PLUGIN_API_V1_SIZE, ACCEL_PLUGIN_ABI_MAJOR, ACCEL_PLUGIN_ABI_MINOR,
        "vtable too small");
    return false;
  }
  b.abi_major = api.abi_major;
  b.abi_minor = api.abi_minor;
  if (api.abi_major != ACCEL_PLUGIN_ABI_MAJOR) {
    b.reason = fmt::format(
        "plugin ABI {}.{} is not supported: this core speaks ABI {}.{} "
        "(plugin-abi rule 13)",
        api.abi_major, api.abi_minor, ACCEL_PLUGIN_ABI_MAJOR, ACCEL_PLUGIN_ABI_MINOR);
    return false;
  }
  if (api.struct_size < ACCEL_PLUGIN_API_V1_SIZE) {
    b.reason = fmt::format(
        "vtable struct_size {} is smaller than ABI {}.0 requires ({} bytes) "
        "(plugin-abi rule 12)",
        api.struct_size, ACCEL_PLUGIN_ABI_MAJOR, ACCEL_PLUGIN_API_V1_SIZE);
    return false;
  }
  std::memcpy(&b.api, &api, std::min(api.struct_size, sizeof(accel_plugin_api_t)));
  b.api.struct_size = api.struct_size;
  // Members after ABI 1.0 count only when struct_size covers all of them:
  // a size ending inside a pointer must not leave half of one behind.
  if (api.struct_size < offsetof(accel_plugin_api_t, runtime_version) + sizeof(void*))
    b.api.runtime_version = nullptr;
  if (api.struct_size < offsetof(accel_plugin_api_t, stream_set_name) + sizeof(void*))
    b.api.stream_set_name = nullptr;
  return true;
}

// The copied vtable's contents: a valid name, a priority the file's location
// allows (lowered, with a note, otherwise), consistent capability groups,
// every required operation, no half-set optional group. False, with the
// refusal in b.reason, on the first that fails.
bool check_vtable(Backend& b, const accel_plugin_api_t& api) {
  if (!valid_name(b.api.name)) {
    b.reason = name_refusal(b.api.name);
    return false;
  }
  b.name = b.api.name;
  b.priority = b.api.priority;
  if (b.priority > kThirdPartyPriorityMax && !trusted_location(b.path)) {
    const std::string own = own_plugin_dir();
    b.priority_note = fmt::format(
        "priority {} lowered to {}: priorities of 100 and above are kept for plugins installed "
        "in {}{} (plugin-abi rule 16)",
        b.priority, kThirdPartyPriorityMax, ACCEL_PLUGINDIR,
        own.empty() || own == ACCEL_PLUGINDIR ? "" : " or beside libaccelcore, in " + own);
    log().info("plugin {} ({}): {}", b.path, b.name, b.priority_note);
    b.priority = kThirdPartyPriorityMax;
  }
  b.capabilities = b.api.capabilities;
  if (auto m = check_plugin_groups(b.api, api.struct_size, b.capabilities); !m.empty()) {
    b.reason = m;
    return false;
  }
  b.capabilities = with_group_bits(b.api, b.capabilities);
  if (auto m = missing_required(b.api); !m.empty()) {
    b.reason = m;
    return false;
  }
  if (auto m = partial_group(b.api); !m.empty()) {
    b.reason = m;
    return false;
  }
  return true;
}

// The plugin's init, when it has one. False, with the status
// (unavailable or rejected) and reason set, when it fails.
bool run_init(Backend& b) {
  if (b.api.init == nullptr) return true;
  LockedCallbackScope in_callback(b, "init", "discovery", discovery_mutex());
  begin_plugin_call();
  accel_status_t st = b.api.init();
  if (st == ACCEL_SUCCESS) return true;
  b.status =
      st == ACCEL_ERROR_BACKEND_UNAVAILABLE ? ACCEL_BACKEND_UNAVAILABLE : ACCEL_BACKEND_REJECTED;
  b.reason = fmt::format("init failed ({}): {}", accel_status_name(st),
                         plugin_said(accel_status_message(st)));
  if (st == ACCEL_ERROR_BACKEND_UNAVAILABLE) b.reason = plugin_said("vendor library missing");
  b.reason += " (plugin-abi rule 23)";
  return false;
}

// device_count, then the checks on its answer: the native-current-device
// capability unchanged since the entry returned (`api` is the plugin's own
// table), a count of zero or more. On success the final capabilities, the
// per-device state, the status (available or no_devices) and the runtime
// version; otherwise the status and reason of the refusal.
void count_devices(Backend& b, const accel_plugin_api_t& api) {
  int32_t count = 0;
  accel_status_t st = ACCEL_SUCCESS;
  {
    LockedCallbackScope in_callback(b, "device_count", "discovery", discovery_mutex());
    begin_plugin_call();
    st = b.api.device_count(&count);
  }
  if (b.native_current_device() !=
      ((api.capabilities & ACCEL_PLUGIN_CAP_NATIVE_CURRENT_DEVICE) != 0)) {
    b.status = ACCEL_BACKEND_REJECTED;
    b.reason =
        "the native-current-device capability changed after the entry returned "
        "(plugin-abi rule 21)";
    return;
  }
  if (st != ACCEL_SUCCESS) {
    b.status = ACCEL_BACKEND_UNAVAILABLE;
    b.reason = fmt::format("device_count failed ({}): {} (plugin-abi rule 24)",
                           accel_status_name(st), plugin_said(accel_status_message(st)));
    return;
  }
  if (count < 0) {
    b.status = ACCEL_BACKEND_REJECTED;
    b.reason =
        fmt::format("device_count returned a negative count ({}) (plugin-abi rule 24)", count);
    return;
  }
  // Capabilities may depend on what device_count found (e.g. an OpenCL
  // extension on some device), so they are final only now.
  b.capabilities = with_group_bits(b.api, api.capabilities);
  b.api.capabilities = b.capabilities;
  b.device_count = count;
  b.devices = std::make_unique<DeviceState[]>(static_cast<size_t>(count));
  b.status = count > 0 ? ACCEL_BACKEND_AVAILABLE : ACCEL_BACKEND_NO_DEVICES;
  b.reason = plugin_said(count > 0 ? "" : "the backend reports no devices");
  {
    LockedCallbackScope in_callback(b, "runtime_version", "discovery", discovery_mutex());
    query_runtime_version(b, /*initialised=*/false);
  }
}

// One candidate file: opened and its vtable checked (nothing of the plugin
// runs but its entry until all checks pass), refused as a duplicate when an
// earlier copy took its name, then init and device_count. The first
// refusal leaves its reason in `b` and stops.
void load_candidate(Backend& b, const std::map<std::string, const Backend*>& names) {
  const accel_plugin_api_t* api = open_plugin(b);
  if (api == nullptr || !copy_vtable(b, *api) || !check_vtable(b, *api)) return;
  if (auto it = names.find(b.name); it != names.end()) {
    b.status = ACCEL_BACKEND_DUPLICATE;
    b.reason = fmt::format(
        "duplicate backend name '{}': already provided by {} "
        "(plugin-abi rule 17)",
        b.name, it->second->path);
    return;
  }
  b.loaded = true;
  b.discovered = true;
  if (run_init(b)) count_devices(b, *api);
}

// A copy takes its backend name only when it can serve it: init and
// device_count succeeded (available or no_devices). A copy that could not
// keeps its own status and reason, and later copies of the name still load;
// so automatic selection and ACCEL_BACKEND=name see the same one copy.
bool takes_name(const Backend& b) {
  return b.loaded && (b.status == ACCEL_BACKEND_AVAILABLE || b.status == ACCEL_BACKEND_NO_DEVICES);
}

// The backend a file's name says it provides: "accel-<name>.so" with '-'
// read as '_' (accel-level-zero.so: level_zero), the names every in-tree
// plugin is installed under; "" for any other file name.
std::string named_backend(const std::string& file) {
  constexpr std::string_view prefix = "accel-", suffix = ".so";
  if (file.size() <= prefix.size() + suffix.size() || file.compare(0, prefix.size(), prefix) != 0 ||
      file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0)
    return {};
  std::string name = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
  std::replace(name.begin(), name.end(), '-', '_');
  return valid_name(name.c_str()) ? name : std::string();
}

void log_outcome(const Backend& b) {
  if (b.status == ACCEL_BACKEND_REJECTED) {
    log().warn("plugin {} rejected: {}", b.path, b.reason);
  } else {
    log().debug("plugin {} ({}): {} {}", b.path, b.name, accel_backend_status_name(b.status),
                b.reason);
  }
}

std::string pending_name(const std::vector<std::pair<size_t, std::string>>& pending, size_t index) {
  for (const auto& p : pending)
    if (p.first == index) return p.second;
  return {};
}

// What discovery keeps while it walks the search path.
struct Discovery {
  Entries entries;
  // (device, inode) of every candidate file seen: one file reached through
  // two paths is loaded once.
  std::set<std::pair<dev_t, ino_t>> seen_files;
  // Backend name -> the copy that took it (takes_name).
  std::map<std::string, const Backend*> names;
  // Candidates that passed the file checks: (index in entries, the backend
  // their file name says they provide, "" when it says none).
  std::vector<std::pair<size_t, std::string>> pending;
};

// The entry listing a search directory that is not searched: refused, or
// the same directory as an earlier entry.
std::unique_ptr<Backend> unsearched_dir_entry(const SearchDir& dir) {
  auto b = std::make_unique<Backend>();
  b->path = dir.path;
  if (!dir.duplicate_of.empty()) {
    b->status = ACCEL_BACKEND_DUPLICATE;
    b->reason = fmt::format(
        "{} is the same directory as the earlier entry '{}'; searched once "
        "(plugin-abi rule 5)",
        dir.from_env ? fmt::format("ACCEL_PLUGIN_PATH entry '{}'", dir.path)
                     : fmt::format("the plugins directory '{}'", dir.path),
        dir.duplicate_of);
    log().info("{}", b->reason);
  } else {
    b->status = ACCEL_BACKEND_REJECTED;
    b->reason = dir.refusal;
  }
  return b;
}

// Adds `file` of `dir` to d.entries: pending when it passes the file checks
// (stat, not seen before, file_refusal), refused (and logged) otherwise.
void add_candidate(Discovery& d, const std::string& dir, const std::string& file) {
  auto b = std::make_unique<Backend>();
  std::string given = dir + "/" + file;
  b->path = resolved(given);
  struct stat st {};
  if (stat(b->path.c_str(), &st) != 0) {
    b->reason =
        fmt::format("cannot stat '{}': {} (plugin-abi rule 6)", given, std::strerror(errno));
  } else if (auto key = std::make_pair(st.st_dev, st.st_ino); !d.seen_files.insert(key).second) {
    b->status = ACCEL_BACKEND_DUPLICATE;
    b->reason = fmt::format(
        "same file as an earlier candidate, reached again through '{}'; "
        "loaded once (plugin-abi rule 7)",
        given);
  } else if (auto refusal = file_refusal(b->path, st); !refusal.empty()) {
    b->reason = refusal;
  } else {
    d.pending.push_back({d.entries.size(), named_backend(file)});
  }
  if (d.pending.empty() || d.pending.back().first != d.entries.size()) log_outcome(*b);
  d.entries.push_back(std::move(b));
}

// Loads pending entry `index`; a copy that can serve its name takes it, and
// earlier copies of the name that could not say which copy does.
void load_and_take_name(Discovery& d, size_t index) {
  Backend& b = *d.entries[index];
  load_candidate(b, d.names);
  if (!b.priority_note.empty())
    b.reason = b.reason.empty() ? b.priority_note : b.reason + "; " + b.priority_note;
  if (!takes_name(b)) return;
  d.names.emplace(b.name, &b);
  for (size_t i = 0; i < index; ++i) {
    Backend& earlier = *d.entries[i];
    if (earlier.loaded && earlier.name == b.name && !takes_name(earlier)) {
      earlier.reason +=
          fmt::format(" (backend '{}' is provided by the later copy {})", b.name, b.path);
    }
  }
}

// Loads every pending candidate, in order. With ACCEL_BACKEND=name, when
// some candidate's file is named for that backend (accel-<name>.so), files
// named for another backend are not opened at all: dlopen alone may load a
// vendor library (the opencl plugin links the ICD loader, which loads every
// ICD it finds), and the program asked for one backend. Files with other
// names are loaded as usual (their name says nothing about the backend they
// provide). Should none of those take the name, the skipped files are loaded
// after all, so the answer is the one a full discovery gives.
void load_pending(Discovery& d, const BackendRequest& request) {
  const std::string wanted = request.valid ? request.name : std::string();
  bool narrow = false;
  if (!wanted.empty()) {
    for (const auto& p : d.pending) narrow = narrow || p.second == wanted;
  }
  std::vector<size_t> skipped;
  for (const auto& [index, named] : d.pending) {
    if (narrow && !named.empty() && named != wanted) {
      skipped.push_back(index);
      continue;
    }
    load_and_take_name(d, index);
  }
  if (!skipped.empty() && d.names.count(wanted) != 0) {
    for (size_t index : skipped) {
      Backend& b = *d.entries[index];
      b.status = ACCEL_BACKEND_UNAVAILABLE;
      b.reason = fmt::format(
          "not loaded: ACCEL_BACKEND={} (the file's name says it provides '{}'; with "
          "ACCEL_BACKEND set, only the named backend's plugin is opened)",
          wanted, pending_name(d.pending, index));
    }
  } else {
    for (size_t index : skipped) load_and_take_name(d, index);
  }
}

}  // namespace

BackendRequest requested_backend() {
  BackendRequest r;
  if (const char* env = secure_getenv("ACCEL_BACKEND"); env != nullptr && *env != '\0') {
    r.name = env;
    r.valid = valid_name(env);
  }
  return r;
}

// "'/a' (does not exist), '/b' (no *.so file), ...": every folder of the
// search path in order, for the message that says no plugin was found.
std::string describe_search(const std::vector<SearchDir>& dirs, const Entries& entries) {
  std::vector<std::string> parts;
  for (const auto& dir : dirs) {
    if (dir.path.empty()) continue;
    std::string what = "searched";
    struct stat st {};
    if (dir.missing || (stat(dir.path.c_str(), &st) != 0 && errno == ENOENT)) {
      what = "does not exist";
    } else if (!dir.refusal.empty()) {
      what = "refused";
    } else if (!dir.duplicate_of.empty()) {
      what = "same as '" + dir.duplicate_of + "'";
    } else if (std::none_of(entries.begin(), entries.end(),
                            [&](const auto& b) { return b->path.rfind(dir.path + "/", 0) == 0; })) {
      what = "no *.so file";
    }
    parts.push_back(fmt::format("'{}' ({})", dir.path, what));
  }
  return parts.empty() ? std::string("no folder") : fmt::format("{}", fmt::join(parts, ", "));
}

Entries discover_plugins(const BackendRequest& request, std::string* searched) {
  LastErrorScope keep_last_error;
  Discovery d;
  const auto dirs = plugin_search_dirs();
  for (const auto& dir : dirs) {
    if (dir.missing) {
      log().debug("not searching {}: it does not exist", dir.path);
      continue;
    }
    if (!dir.refusal.empty() || !dir.duplicate_of.empty()) {
      d.entries.push_back(unsearched_dir_entry(dir));
      continue;
    }
    log().debug("searching {}", dir.path);
    for (const auto& file : list_candidates(dir.path)) add_candidate(d, dir.path, file);
  }
  load_pending(d, request);
  for (const auto& p : d.pending) log_outcome(*d.entries[p.first]);
  if (std::none_of(d.entries.begin(), d.entries.end(), [](const auto& b) { return b->loaded; })) {
    std::string where = describe_search(dirs, d.entries);
    log().warn(
        "no backend plugin loaded; plugin folders, in search order: {} (install plugins in one "
        "of them or list their folder in ACCEL_PLUGIN_PATH)",
        where);
    if (searched != nullptr) *searched = std::move(where);
  }
  return std::move(d.entries);
}

}  // namespace accel::core
