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

}  // namespace accelctl
