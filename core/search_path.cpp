#include "search_path.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "log.hpp"

#ifndef ACCEL_PLUGINDIR
#error "ACCEL_PLUGINDIR must be defined by the build"
#endif
#ifndef ACCEL_PLUGINDIR_FROM_LIBDIR
#error "ACCEL_PLUGINDIR_FROM_LIBDIR must be defined by the build"
#endif

namespace accel::core {

namespace {

// A directory anyone but its owner can write lets anyone plant code in every
// process that links accel; refuse it (sticky bit or not).
std::string directory_refusal(const std::string& dir, bool from_env) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    if (!from_env) return {};  // the install dir simply isn't there: normal
    // "/d/accel-x.so/": a file named with a trailing slash.
    if (errno == ENOTDIR) {
      std::string file = dir;
      while (file.size() > 1 && file.back() == '/') file.pop_back();
      if (stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        const auto slash = file.find_last_of('/');
        return fmt::format(
            "ACCEL_PLUGIN_PATH entry '{}' is a file; list its directory ('{}') "
            "instead (plugin-abi rule 3)",
            dir, slash == 0 ? "/" : file.substr(0, slash));
      }
    }
    return fmt::format(
        "ACCEL_PLUGIN_PATH entry '{}' does not exist or cannot be read ({}) "
        "(plugin-abi rule 3)",
        dir, std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    const std::string what =
        from_env ? fmt::format("ACCEL_PLUGIN_PATH entry '{}'", dir) : fmt::format("'{}'", dir);
    if (S_ISREG(st.st_mode)) {
      const auto slash = dir.find_last_of('/');
      const std::string parent = slash == 0 ? "/" : dir.substr(0, slash);
      return fmt::format("{} is a file; list its directory ('{}') instead (plugin-abi rule 3)",
                         what, parent);
    }
    return fmt::format("{} is not a directory (plugin-abi rule 3)", what);
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return fmt::format(
        "directory '{}' is {}-writable (mode {:04o}); refusing to load plugins "
        "from it (plugin-abi rule 4)",
        dir, (st.st_mode & S_IWOTH) ? "world" : "group", st.st_mode & 07777);
  }
  return {};
}

bool same_directory(const std::string& a, const std::string& b) {
  if (a == b) return true;
  struct stat sa {
  }, sb{};
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace

// The plugins folder of the installation this libaccelcore belongs to:
// <folder of libaccelcore.so>/accel/plugins. It finds the plugins of a staged
// (DESTDIR) or relocated install, whose compiled-in folder does not exist or
// holds another install's plugins. Empty for a setuid/setgid process
// (AT_SECURE), which searches only the compiled-in folder: where the library
// was loaded from is not the installer's word (docs/security.md).
std::string own_plugin_dir() {
  if (getauxval(AT_SECURE) != 0) return {};
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&plugin_search_dirs), &info) == 0 ||
      info.dli_fname == nullptr || info.dli_fname[0] != '/')
    return {};
  // dli_fname is spelled as the RUNPATH found it (".../bin/../lib/..."):
  // resolve the folder so messages name it plainly.
  std::string lib = info.dli_fname;
  lib.erase(lib.find_last_of('/'));
  char* real = realpath(lib.empty() ? "/" : lib.c_str(), nullptr);
  if (real != nullptr) {
    lib = real;
    free(real);
  }
  if (lib == "/") lib.clear();
  return lib + "/" ACCEL_PLUGINDIR_FROM_LIBDIR;
}

std::vector<SearchDir> plugin_search_dirs() {
  std::vector<SearchDir> dirs;
  std::map<std::string, std::string> seen;  // resolved directory -> first spelling
  auto add = [&](std::string path, bool from_env) {
    SearchDir d{path, {}, from_env, {}};
    if (from_env && path.front() != '/') {
      d.refusal = fmt::format(
          "ACCEL_PLUGIN_PATH entry '{}' is not absolute; ignored "
          "(plugin-abi rule 2)",
          path);
    } else {
      d.refusal = directory_refusal(path, from_env);
      if (d.refusal.empty() && !from_env) {
        struct stat st {};
        d.missing = stat(path.c_str(), &st) != 0;  // install dir absent: listed, not searched
      }
      // Two spellings of one directory are searched once; the second is
      // still listed (as a duplicate), never dropped silently.
      if (d.refusal.empty() && !d.missing) {
        char* real = realpath(path.c_str(), nullptr);
        std::string key = real != nullptr ? real : path;
        free(real);
        if (auto [it, fresh] = seen.emplace(key, path); !fresh) d.duplicate_of = it->second;
      }
    }
    if (!d.refusal.empty()) log().warn("{}", d.refusal);
    dirs.push_back(std::move(d));
  };

  if (const char* env = secure_getenv("ACCEL_PLUGIN_PATH"); env != nullptr) {
    std::string_view rest(env);
    while (!rest.empty()) {
      auto colon = rest.find(':');
      auto entry = rest.substr(0, colon);
      if (!entry.empty()) {
        add(std::string(entry), true);
      } else {
        // "a::b", ":a", "a:": listed, never dropped silently, but only at
        // debug level: "$ACCEL_PLUGIN_PATH:/dir" with the variable unset is
        // a common, harmless way to write one.
        SearchDir d{"",
                    "an empty ACCEL_PLUGIN_PATH entry (two ':' in a row, or one at an end) "
                    "names no folder; ignored (plugin-abi rule 2)",
                    true,
                    {}};
        log().debug("{}", d.refusal);
        dirs.push_back(std::move(d));
      }
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  // The library's own plugins folder first: plugins installed with this
  // libaccelcore match it, whatever else lives at the configured prefix.
  // The same folder as the compiled-in one (an ordinary install) is listed once.
  if (const std::string own = own_plugin_dir();
      !own.empty() && !same_directory(own, ACCEL_PLUGINDIR))
    add(own, false);
  add(ACCEL_PLUGINDIR, false);
  return dirs;
}

std::vector<std::string> list_candidates(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    std::string_view n(e->d_name);
    if (n.size() <= 3 || n.substr(n.size() - 3) != ".so") continue;
    struct stat st {};
    std::string full = dir + "/" + std::string(n);
    if (stat(full.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      // A dangling link or a directory named *.so is still worth a line.
      if (lstat(full.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    }
    names.emplace_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace accel::core
