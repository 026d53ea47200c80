// Where plugins are looked for: ACCEL_PLUGIN_PATH (absolute entries only),
// then the plugins folder next to libaccelcore (<its folder>/accel/plugins;
// skipped under AT_SECURE and when it is the compiled-in one), then the
// compiled-in plugins directory. Read with secure_getenv so a
// setuid/setgid program ignores the variable (Vulkan and Khronos OpenCL
// loaders do the same).
#pragma once

#include <string>
#include <vector>

namespace accel::core {

struct SearchDir {
  std::string path;     // as given
  std::string refusal;  // non-empty: why this entry is not searched
  bool from_env = false;
  std::string duplicate_of;  // non-empty: an earlier entry naming the same directory
  bool missing = false;      // an install folder that does not exist (not searched)
};

std::vector<SearchDir> plugin_search_dirs();

// <folder of libaccelcore.so>/accel/plugins, resolved: the plugins of the
// installation this library belongs to (a staged or moved prefix, a Python
// wheel's library folder). Empty under AT_SECURE and when dladdr fails.
std::string own_plugin_dir();

// Candidate file names in `dir` (regular files or links to them, ending in
// ".so"), sorted bytewise so load order never depends on the file system.
std::vector<std::string> list_candidates(const std::string& dir);

}  // namespace accel::core
