// selftest.cpp - `accelctl selftest`: a short device-agnostic workload run on
// every device of the current accelerator, one named PASS/FAIL/SKIP check at a
// time. A check never stops the run; the exit code says whether all passed.
#include <accel/accel.h>

#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string>

#include "checks.hpp"
#include "commands.hpp"
#include "info.hpp"

namespace accelctl {
namespace {

CheckResult run_one(const NamedCheck& check, const Context& ctx) {
  try {
    return check.fn(ctx);
  } catch (const std::exception& e) {
    return {false, false, fmt::format("exception: {}", e.what())};
  } catch (...) {
    return {false, false, "unknown exception"};
  }
}

uint32_t current_backend_caps() {
  for (const auto& e : gather_backends())
    if (e.current) return e.capabilities;
  return 0;
}

}  // namespace

int run_selftest(bool json) {
  if (accel_is_available() == 0) {
    if (json) {
      nlohmann::json j = {{"backend", nullptr},
                          {"selection_reason", accel_selection_reason()},
                          {"devices", nlohmann::json::array()},
                          {"passed", false}};
      fmt::print("{}\n", json_document(std::move(j)));
    } else {
      fmt::print("selftest: no accelerator available: {}\n", accel_selection_reason());
    }
    return 1;
  }
  const char* current = accel_current_accelerator();
  const std::string backend = current != nullptr ? current : "";
  const int32_t count = accel_device_count();
  const uint32_t caps = current_backend_caps();
  const int32_t orig_device = accel_current_device_index();

  if (!json) {
    fmt::print("selftest: backend {}, {} device{}\n", backend, count, count == 1 ? "" : "s");
    std::fflush(stdout);
  }
  bool all_passed = count > 0;
  int n_pass = 0, n_fail = 0, n_skip = 0;
  nlohmann::json devices = nlohmann::json::array();
  for (int32_t dev = 0; dev < count; ++dev) {
    const DeviceEntry info = gather_device(dev);
    const std::string name = info.props_ok ? std::string(info.props.name) : "(name unknown)";
    if (!json) fmt::print("\nDevice {}: {}\n", dev, name);
    const Context ctx{dev, count, caps};
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& check : selftest_checks()) {
      const CheckResult r = run_one(check, ctx);
      all_passed = all_passed && r.passed;
      (r.skipped ? n_skip : r.passed ? n_pass : n_fail) += 1;
      if (json) {
        nlohmann::json c = {{"name", check.name}, {"passed", r.passed}, {"detail", r.detail}};
        if (r.skipped) c["skipped"] = true;
        checks.push_back(std::move(c));
      } else {
        fmt::print("  {:<4}  {:<28}  {}\n",
                   r.skipped  ? "SKIP"
                   : r.passed ? "PASS"
                              : "FAIL",
                   check.name, r.detail);
        std::fflush(stdout);
      }
    }
    devices.push_back({{"index", dev}, {"name", name}, {"checks", std::move(checks)}});
  }
  accel_set_device_index(orig_device);

  if (json) {
    nlohmann::json j = {
        {"backend", backend}, {"devices", std::move(devices)}, {"passed", all_passed}};
    fmt::print("{}\n", json_document(std::move(j)));
  } else {
    fmt::print("\nselftest {}: {} passed, {} failed, {} skipped\n",
               all_passed ? "PASSED" : "FAILED", n_pass, n_fail, n_skip);
  }
  return all_passed ? 0 : 1;
}

}  // namespace accelctl
