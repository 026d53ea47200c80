#include "visible_devices.hpp"

#include <algorithm>
#include <cctype>

namespace accel::cuda {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\n\r");
  return s.substr(b, e - b + 1);
}

bool starts_with_ci(const std::string& s, const std::string& prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  }
  return true;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

VisibleDevices resolve_visible_devices(const char* value, int physical_count,
                                       const std::vector<std::string>& uuids) {
  VisibleDevices out;
  if (value == nullptr) {
    for (int i = 0; i < physical_count; ++i) out.physical.push_back(i);
    return out;
  }
  std::string all = value;
  if (trim(all).empty()) {
    out.note = "CUDA_VISIBLE_DEVICES is empty: no device is visible";
    return out;
  }
  for (const std::string& raw : split(all)) {
    std::string entry = trim(raw);
    int index = -1;
    if (!entry.empty() && std::isdigit(static_cast<unsigned char>(entry[0]))) {
      size_t digits = 0;
      long long v = 0;
      while (digits < entry.size() && std::isdigit(static_cast<unsigned char>(entry[digits]))) {
        v = std::min<long long>(v * 10 + (entry[digits] - '0'), 1LL << 40);
        ++digits;
      }
      if (v >= physical_count) {
        out.note = "CUDA_VISIBLE_DEVICES entry '" + entry + "' is not a device index below " +
                   std::to_string(physical_count) + "; the list stops there";
        break;
      }
      index = static_cast<int>(v);
    } else if (starts_with_ci(entry, "GPU-")) {
      if (uuids.empty()) {
        out.resolved = false;
        out.note = "CUDA_VISIBLE_DEVICES names GPUs by UUID and their UUIDs are unknown";
        return out;
      }
      int matches = 0;
      for (int i = 0; i < static_cast<int>(uuids.size()); ++i) {
        if (starts_with_ci(uuids[static_cast<size_t>(i)], entry)) {
          ++matches;
          index = i;
        }
      }
      if (matches != 1) {
        out.note = "CUDA_VISIBLE_DEVICES entry '" + entry + "' " +
                   (matches == 0 ? "matches no GPU UUID" : "matches several GPU UUIDs") +
                   "; the list stops there";
        index = -1;
        break;
      }
    } else if (starts_with_ci(entry, "MIG-")) {
      out.resolved = false;
      out.note = "CUDA_VISIBLE_DEVICES names MIG instances; only the driver can count them";
      return out;
    } else {
      out.note = "CUDA_VISIBLE_DEVICES entry '" + entry +
                 "' is neither an index nor a GPU- UUID; the list stops there";
      break;
    }
    if (std::find(out.physical.begin(), out.physical.end(), index) != out.physical.end()) {
      out.physical.clear();
      out.note = "CUDA_VISIBLE_DEVICES lists device '" + entry + "' twice: no device is visible";
      return out;
    }
    out.physical.push_back(index);
  }
  return out;
}

}  // namespace accel::cuda
