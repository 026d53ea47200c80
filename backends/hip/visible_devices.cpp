#include "visible_devices.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace accel::hip {

namespace {

// std::isspace in the "C" locale, which is what ROCr's trim uses.
bool classic_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

std::string classic_trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && classic_space(s[b])) ++b;
  while (e > b && classic_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::string upper(std::string s) {
  for (char& c : s)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return s;
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::string join(const std::vector<int>& v) {
  std::string out;
  for (int i : v) out += (out.empty() ? "" : ",") + std::to_string(i);
  return out;
}

// Pieces between commas; a last empty piece (after a trailing comma) is no
// piece. Both vendors' loops end that way: ROCr's getline() fails at end of
// input, ROCclr's loop condition is pos < size.
std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) {
      out.push_back(s.substr(start));
      break;
    }
    out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

// strtol(s, &end, 0) on LP64 as C17 specifies it: leading blanks, a sign,
// then "0x"/"0X" + hex digits, "0" + octal digits, or decimal digits;
// saturates at LONG_MIN/LONG_MAX. `end`: characters consumed, 0 when there
// was no number (strtol then leaves end at the start). Written out rather
// than calling strtol so the result cannot depend on the C library (glibc
// 2.38 lets C2x builds accept "0b").
long long c17_strtol_base0(const std::string& s, size_t& end) {
  size_t i = 0;
  while (i < s.size() && classic_space(s[i])) ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  int base = 10;
  if (i + 2 < s.size() && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X') &&
      digit_value(s[i + 2]) < 16) {
    base = 16;
    i += 2;
  } else if (i < s.size() && s[i] == '0') {
    base = 8;
  }
  const unsigned long long limit =
      negative ? (1ULL << 63) : (1ULL << 63) - 1;  // |LONG_MIN|, LONG_MAX
  unsigned long long magnitude = 0;
  bool overflow = false;
  size_t digits_start = i;
  while (i < s.size() && digit_value(s[i]) < base) {
    auto d = static_cast<unsigned long long>(digit_value(s[i]));
    const auto b = static_cast<unsigned long long>(base);
    if (!overflow && magnitude > (limit - d) / b) overflow = true;
    if (!overflow) magnitude = magnitude * b + d;
    ++i;
  }
  if (i == digits_start) {
    end = 0;
    return 0;
  }
  end = i;
  if (overflow) return negative ? INT64_MIN : INT64_MAX;
  if (negative) return magnitude == (1ULL << 63) ? INT64_MIN : -static_cast<long long>(magnitude);
  return static_cast<long long>(magnitude);
}

// --- layer 1: ROCr ------------------------------------------------------------

// RvdFilter::ProcessUuidToken: the one GPU whose upper-case UUID starts
// with `token` (already upper-case), or -1 (bad length, none, several).
int rocr_uuid(const std::string& token, const std::vector<std::string>& uuids) {
  if (token.size() < 5 || token.size() > 20) return -1;
  int found = -1;
  for (size_t i = 0; i < uuids.size(); ++i) {
    if (uuids[i].empty()) continue;  // ROCr's "Invalid-UUID" matches no 'G' token
    std::string u = upper(uuids[i]);
    if (token.size() > u.size() || u.compare(0, token.size(), token) != 0) continue;
    if (found != -1) return -1;
    found = static_cast<int>(i);
  }
  return found;
}

// The physical GPUs ROCr surfaces, in order.
std::vector<int> rocr_filter(const std::string& value, const std::vector<std::string>& uuids,
                             std::string& note) {
  std::vector<int> out;
  if (value.empty()) {
    note += "ROCR_VISIBLE_DEVICES is empty: no GPU is visible";
    return out;
  }
  std::vector<std::string> tokens = split_commas(value);
  for (auto& t : tokens) t = classic_trim(upper(t));
  const size_t n = uuids.size();
  const size_t read = std::min(n, tokens.size());
  std::string stop;
  for (size_t i = 0; i < read; ++i) {
    const std::string& t = tokens[i];
    if (t.empty()) {
      // token.at(0) throws out of BuildTopology: hsa_init fails.
      note += "ROCR_VISIBLE_DEVICES=" + value + ": entry " + std::to_string(i + 1) +
              " is empty, which makes ROCr's initialisation fail: no GPU is visible";
      out.clear();
      return out;
    }
    long long dev = -1;
    if (t[0] == 'G') {
      dev = rocr_uuid(t, uuids);
      if (dev < 0) {
        stop = "entry '" + t + "' is not the prefix of exactly one GPU's UUID";
        break;
      }
    } else {
      size_t end = 0;
      long long v = c17_strtol_base0(t, end);
      if (end != t.size()) {
        stop = "entry '" + t + "' is not a number (strtol, base 0)";
        break;
      }
      dev = static_cast<int32_t>(v);  // ROCr keeps strtol's long in an int32_t
    }
    if (dev < 0 || static_cast<size_t>(dev) >= n) {
      stop = "entry '" + t + "' is not a GPU index in [0, " + std::to_string(n) + ")";
      break;
    }
    if (std::find(out.begin(), out.end(), static_cast<int>(dev)) != out.end()) {
      stop = "entry '" + t + "' names GPU " + std::to_string(dev) + " again";
      break;
    }
    out.push_back(static_cast<int>(dev));
  }
  note += "ROCR_VISIBLE_DEVICES=" + value;
  if (!stop.empty()) note += ": " + stop + ", so it and later entries are ignored";
  if (read < tokens.size())
    note += (stop.empty() ? ": " : "; ") + std::string("entries after the first ") +
            std::to_string(read) + " are not read (ROCr reads as many as there are GPUs)";
  note += " -> GPUs [" + join(out) + "]";
  return out;
}

// --- layer 2: HIP ----------------------------------------------------------------

// Flag::init + removeQuotes: the value HIP works with ("" = no filter).
std::string hip_flag_value(const char* env, const HipRules& rules) {
  if (env == nullptr) return {};
  std::string v = env;
  if (v.empty()) return rules.empty_hides ? " " : "";
  size_t p = 0;
  while (p < v.size() && v[p] == ' ') ++p;
  if (p == v.size() || v[p] != '"') return v;
  size_t last = std::string::npos;
  for (size_t q = p + 1; q < v.size(); ++q) {
    if (v[q] == '"')
      last = q;
    else if (last != std::string::npos && v[q] != ' ')
      last = std::string::npos;
  }
  if (last == std::string::npos) return v;
  return v.substr(p + 1, last - p - 1);
}

// The exact decimal form of an index below n, as atoi + to_string compare it.
int canonical_index(const std::string& s, size_t n) {
  if (s.empty() || s.size() > 10) return -1;
  if (!std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  if (s.size() > 1 && s[0] == '0') return -1;
  unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  return v < n ? static_cast<int>(v) : -1;
}

std::vector<int> hip_select(const char* var, const std::string& ordinals, bool set_but_empty,
                            const std::vector<int>& in, const std::vector<std::string>& uuids,
                            const HipRules& rules, std::string& note) {
  std::vector<int> out;
  std::string stop;
  for (std::string t : split_commas(ordinals)) {
    const std::string entry = t;
    if (rules.uuid_tokens && t.find("GPU-") != std::string::npos) {
      for (size_t i = 0; i < in.size(); ++i) {
        const std::string& u = uuids[static_cast<size_t>(in[i])];
        // ROCr's HSA_AMD_AGENT_INFO_UUID text for this GPU.
        std::string agent = u.size() > 4 ? "GPU-" + lower(u.substr(4)) : "GPU-XX";
        if (agent.find(t) != std::string::npos) {
          t = std::to_string(i);
          break;
        }
      }
    }
    int index = canonical_index(t, in.size());
    if (index < 0) {
      stop = "entry '" + entry + "' is not " +
             (rules.uuid_tokens ? "a GPU index or UUID prefix" : "a GPU index") + " in [0, " +
             std::to_string(in.size()) + ")";
      break;
    }
    int dev = in[static_cast<size_t>(index)];
    if (std::find(out.begin(), out.end(), dev) == out.end()) out.push_back(dev);
  }
  if (set_but_empty) {
    // Flag::init stores an empty value as " ", an invalid entry.
    note += std::string(var) +
            " is set but empty, which HIP 5.5 and later read as an invalid "
            "entry";
  } else {
    note += std::string(var) + "=" + ordinals;
    if (!stop.empty()) note += ": " + stop + ", so it and later entries are ignored";
  }
  note += " -> GPUs [" + join(out) + "]";
  return out;
}

}  // namespace

HipRules hip_rules_for_version(int major, int minor) {
  HipRules r;  // the newest rules
  if (major < 0) return r;
  // Unknown minor: the newest release of that major (5.7 for 5; any minor
  // decides nothing for the others).
  if (minor < 0) minor = major == 5 ? 7 : 99;
  auto at_least = [&](int ma, int mi) { return major > ma || (major == ma && minor >= mi); };
  r.empty_hides = at_least(5, 5);  // ROCclr flags.cpp, since ROCm 5.5
  r.uuid_tokens = at_least(6, 2);  // ROCclr rocdevice.cpp, since ROCm 6.2
  return r;
}

HipRules hip_rules_for_library(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t so = name.find(".so.");
  if (so == std::string::npos) return hip_rules_for_version(-1, -1);
  const char* p = name.c_str() + so + 4;
  auto number = [&p]() {
    if (*p < '0' || *p > '9') return -1;
    int v = 0;
    while (*p >= '0' && *p <= '9') {
      if (v < 100000) v = v * 10 + (*p - '0');
      ++p;
    }
    return v;
  };
  int major = number();
  int minor = -1;
  if (major >= 0 && *p == '.') {
    ++p;
    minor = number();
  }
  return hip_rules_for_version(major, minor);
}

VisibleDevices resolve_visible_devices(const char* rocr, const char* hip, const char* cuda,
                                       const std::vector<std::string>& uuids,
                                       const HipRules& rules) {
  VisibleDevices r;
  for (size_t i = 0; i < uuids.size(); ++i) r.physical.push_back(static_cast<int>(i));
  if (rocr != nullptr) r.physical = rocr_filter(rocr, uuids, r.note);
  std::string h = hip_flag_value(hip, rules);
  std::string c = hip_flag_value(cuda, rules);
  // Device::init: HIP_VISIBLE_DEVICES when HIP sees a non-empty value.
  const bool use_hip = !h.empty();
  const char* var = use_hip ? "HIP_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES";
  const char* raw = use_hip ? hip : cuda;
  const std::string& ordinals = use_hip ? h : c;
  if (!ordinals.empty()) {
    if (!r.note.empty()) r.note += "; ";
    r.physical =
        hip_select(var, ordinals, raw != nullptr && *raw == '\0', r.physical, uuids, rules, r.note);
  }
  return r;
}

}  // namespace accel::hip
