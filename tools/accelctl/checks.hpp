// checks.hpp - the named checks `accelctl selftest` runs on each device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace accelctl {

struct CheckResult {
  bool passed = false;
  bool skipped = false;  // passed, but the backend lacks what the check needs
  std::string detail;
};

struct Context {
  int32_t device = 0;
  int32_t count = 0;
  uint32_t caps = 0;  // declared capabilities (ACCEL_CAP_*) of the current backend
};

struct NamedCheck {
  const char* name;
  CheckResult (*fn)(const Context&);
};

// In run order. A check may change the current device or stream only
// temporarily: it restores them before returning.
const std::vector<NamedCheck>& selftest_checks();

// The kernel check (kernel_check.cpp).
CheckResult check_kernels(const Context& ctx);
// The graph check (graph_check.cpp).
CheckResult check_graphs(const Context& ctx);

}  // namespace accelctl
