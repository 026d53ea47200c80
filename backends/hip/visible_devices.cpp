#include "visible_devices.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>

namespace accel_hip {

namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t comma = s.find(',', pos);
    out.push_back(trim(s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

bool iequals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

// Decimal index < limit, or -1.
int parse_index(const std::string& tok, size_t limit) {
  if (tok.empty() || tok.size() > 9) return -1;
  for (char c : tok)
    if (c < '0' || c > '9') return -1;
  long v = std::stol(tok);
  return static_cast<size_t>(v) < limit ? static_cast<int>(v) : -1;
}

std::string join(const std::vector<int>& v) {
  std::string out;
  for (int i : v) out += (out.empty() ? "" : ",") + std::to_string(i);
  return out;
}

// Applies one list to `in` (positions are indices into `in`); `uuids` given
// for the ROCr layer only. Appends to `note`.
std::vector<int> apply(const char* var, const std::string& value, const std::vector<int>& in,
                       const std::vector<std::string>* uuids, std::string& note) {
  std::vector<int> out;
  if (trim(value).empty()) {
    note += std::string(var) + " is empty: no GPU is visible";
    return out;
  }
  for (const std::string& tok : split(value)) {
    int pos = -1;
    if (uuids != nullptr && tok.size() > 4 && iequals(tok.substr(0, 4), "GPU-")) {
      for (size_t i = 0; i < in.size(); ++i) {
        const std::string& u = (*uuids)[static_cast<size_t>(in[i])];
        if (!u.empty() && iequals(u, tok)) pos = static_cast<int>(i);
      }
    } else {
      pos = parse_index(tok, in.size());
    }
    if (pos < 0) {
      note += std::string(var) + ": entry '" + tok + "' is not " +
              (uuids != nullptr ? "a GPU index or UUID" : "a device index") + " in [0, " +
              std::to_string(in.size()) + "); it and later entries are ignored; ";
      break;
    }
    int dev = in[static_cast<size_t>(pos)];
    if (std::find(out.begin(), out.end(), dev) != out.end()) continue;
    out.push_back(dev);
  }
  note += std::string(var) + "=" + value + " -> GPUs [" + join(out) + "]";
  return out;
}

}  // namespace

VisibleDevices resolve_visible_devices(const char* rocr, const char* hip, const char* cuda,
                                       const std::vector<std::string>& uuids) {
  VisibleDevices r;
  for (size_t i = 0; i < uuids.size(); ++i) r.physical.push_back(static_cast<int>(i));
  if (rocr != nullptr) r.physical = apply("ROCR_VISIBLE_DEVICES", rocr, r.physical, &uuids, r.note);
  const char* var = nullptr;
  const char* value = nullptr;
  if (hip != nullptr && *hip != '\0') {
    var = "HIP_VISIBLE_DEVICES";
    value = hip;
  } else if (cuda != nullptr && *cuda != '\0') {
    var = "CUDA_VISIBLE_DEVICES";
    value = cuda;
  }
  if (var != nullptr) {
    if (!r.note.empty()) r.note += "; ";
    r.physical = apply(var, value, r.physical, nullptr, r.note);
  }
  return r;
}

}  // namespace accel_hip
