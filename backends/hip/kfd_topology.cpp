#include "kfd_topology.hpp"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace accel::hip {

namespace {

bool all_digits(const char* s) {
  if (*s == '\0') return false;
  for (; *s != '\0'; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

}  // namespace

KfdTopology read_kfd_topology(const std::string& nodes_dir) {
  KfdTopology t;
  DIR* d = opendir(nodes_dir.c_str());
  if (d == nullptr) {
    t.error = std::strerror(errno);
    return t;
  }
  std::vector<int> numbers;
  while (struct dirent* e = readdir(d)) {
    if (all_digits(e->d_name) && std::strlen(e->d_name) < 9)
      numbers.push_back(std::atoi(e->d_name));
  }
  closedir(d);
  t.readable = true;
  std::sort(numbers.begin(), numbers.end());
  for (int n : numbers) {
    std::ifstream in(nodes_dir + "/" + std::to_string(n) + "/properties");
    if (!in) continue;
    ++t.nodes;
    unsigned long long simd = 0, gfx = 0, unique = 0;
    bool has_unique = false;
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string key;
      unsigned long long value = 0;
      if (!(ls >> key >> value)) continue;
      if (key == "simd_count")
        simd = value;
      else if (key == "gfx_target_version")
        gfx = value;
      else if (key == "unique_id") {
        unique = value;
        has_unique = true;
      }
    }
    // libhsakmt reads simd_count into NumFComputeCores, and ROCr makes a GPU
    // agent (and counts a ROCR_VISIBLE_DEVICES index) exactly for the nodes
    // where it is non-zero.
    if (simd == 0) continue;
    KfdGpu g;
    g.node = n;
    g.gfx_target_version = gfx;
    if (has_unique && unique != 0) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "GPU-%016llx", unique);
      g.uuid = buf;
    }
    t.gpus.push_back(g);
  }
  return t;
}

}  // namespace accel::hip
