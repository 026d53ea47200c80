#include "proc_gpus.hpp"

#include <dirent.h>

#include <algorithm>
#include <fstream>

namespace accel::cuda {

bool read_proc_gpus(const std::string& root, ProcGpus& out) {
  DIR* dir = opendir(root.c_str());
  if (dir == nullptr) return false;
  std::vector<std::string> names;
  while (const dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  out.count = static_cast<int>(names.size());
  out.uuids.clear();
  for (const auto& name : names) {
    std::ifstream info(root + "/" + name + "/information");
    std::string line, uuid;
    while (std::getline(info, line)) {
      if (line.rfind("GPU UUID:", 0) == 0) {
        size_t b = line.find_first_not_of(" \t", 9);
        if (b != std::string::npos) uuid = line.substr(b);
        while (!uuid.empty() && (uuid.back() == ' ' || uuid.back() == '\t' || uuid.back() == '\r'))
          uuid.pop_back();
        break;
      }
    }
    if (uuid.empty()) {
      out.uuids.clear();
      return true;
    }
    out.uuids.push_back(uuid);
  }
  return true;
}

}  // namespace accel::cuda
