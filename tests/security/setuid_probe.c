/*
 * accel-setuid-probe: what a (possibly setuid) program linking libaccelcore
 * sees. Run by setuid_test.py, once setuid-root and once not, as an
 * unprivileged user with the same environment. Prints one "key value" line
 * per fact on stdout; accel's own log (ACCEL_LOG_LEVEL) goes to stderr.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <accel/accel.h>

static const char* const kVars[] = {
    "ACCEL_PLUGIN_PATH",    "ACCEL_BACKEND",   "ACCEL_LOG_LEVEL",          "ACCEL_SIM_DEVICES",
    "ACCEL_CUDA_DRIVER",    "ACCEL_CUDA_NVML", "ACCEL_HIP_RUNTIME",        "ACCEL_HIP_KFD_TOPOLOGY",
    "ACCEL_HIP_KFD_DEVICE", "ACCEL_ZE_LOADER", "ACCEL_OPENCL_DEVICE_TYPE",
};

int main(void) {
  size_t i;
  printf("uid %ld\n", (long)getuid());
  printf("euid %ld\n", (long)geteuid());
  printf("setuid %d\n", getuid() != geteuid() ? 1 : 0);
  printf("at_secure %lu\n", getauxval(AT_SECURE));
  for (i = 0; i < sizeof kVars / sizeof kVars[0]; ++i) {
    /* getenv: the variable really reached the process; secure_getenv: what
     * a setuid-aware reader sees. */
    const char* plain = getenv(kVars[i]);
    const char* secure = secure_getenv(kVars[i]);
    printf("env %s %s %s\n", kVars[i], plain ? "set" : "unset", secure ? "visible" : "hidden");
  }
  printf("available %d\n", accel_is_available());
  printf("current %s\n", accel_current_accelerator() ? accel_current_accelerator() : "-");
  printf("devices %d\n", (int)accel_device_count());
  printf("selection %s\n", accel_selection_reason());
  for (i = 0; i < accel_backend_count(); ++i) {
    accel_backend_info_t info = {0};
    info.struct_size = sizeof info;
    if (accel_get_backend_info(i, &info) != ACCEL_SUCCESS) {
      printf("backend-error %zu %s\n", i, accel_last_error());
      continue;
    }
    /* Tab-separated: name, status, devices, path, reason. */
    printf("backend\t%s\t%s\t%d\t%s\t%s\n", info.name, accel_backend_status_name(info.status),
           (int)info.device_count, info.path, info.reason);
  }
  printf("end\n");
  return 0;
}
