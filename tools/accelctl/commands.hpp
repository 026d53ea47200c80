// commands.hpp - the accelctl subcommands; each returns the process exit code.
#pragma once

#include <string>

namespace accelctl {

int run_summary(bool json);
int run_backends(bool json);
int run_devices(bool json);
// A `--backend` choice must already be in ACCEL_BACKEND: main sets it before
// the first accel call, since discovery reads it once per process.
int run_selftest(bool json);
// `accelctl memory`: with `snapshot_file`, the summary of that snapshot
// file; with `dump_file`, writes the current device's snapshot there; with
// neither, the allocator's configuration and statistics of every device.
int run_memory(bool json, const std::string& snapshot_file, const std::string& dump_file);

}  // namespace accelctl
