/* accel-only-named-backend: with ACCEL_BACKEND=name, discovery opens only
 * that backend's plugin, so no other vendor library enters the process.
 *
 *   accel-only-named-backend sim      expects ACCEL_BACKEND=sim
 *   accel-only-named-backend opencl   expects ACCEL_BACKEND=opencl
 *
 * The environment (ACCEL_BACKEND, ACCEL_PLUGIN_PATH with every built plugin,
 * the fakes' library variables) comes from meson: the program sets nothing
 * itself, so it sees what any program started that way sees. It calls
 * accel_device_count() (the first call runs discovery), then reads
 * /proc/self/maps and fails when a mapped file is one it must not be:
 *
 *   sim:    any other accel plugin, an OpenCL ICD loader or ICD (libOpenCL,
 *           PoCL, LLVM), libze_loader, libamdhip64, libcuda, libnvidia-ml,
 *           or one of the fakes standing in for them;
 *   opencl: any other accel plugin or vendor library (the OpenCL ICD loader
 *           and the ICDs it loads, PoCL and its LLVM, are expected).
 *
 * Exit 0: pass; 1: a forbidden mapping (each one printed); 2: usage; 77: the
 * run cannot prove anything (no /proc/self/maps). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"

/* Basename prefixes of files that must not be mapped, per mode. */
static const char* const other_plugins_sim[] = {
    "accel-opencl", "accel-cuda", "accel-hip", "accel-level-zero", "accel-skeleton",
    "libOpenCL.so", "libpocl", "libLLVM", "libze_loader", "libamdhip64", "libcuda.so",
    "libnvidia-ml", "libfake_ze", "libfake", NULL};
static const char* const other_plugins_opencl[] = {
    "accel-sim", "accel-cuda", "accel-hip", "accel-level-zero", "accel-skeleton",
    "libze_loader", "libamdhip64", "libcuda.so", "libnvidia-ml", "libfake_ze", "libfake", NULL};

static const char* base_name(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash != NULL ? slash + 1 : path;
}

int main(int argc, char** argv) {
  if (argc != 2 || (strcmp(argv[1], "sim") != 0 && strcmp(argv[1], "opencl") != 0)) {
    fprintf(stderr, "usage: accel-only-named-backend sim|opencl\n");
    return 2;
  }
  const char* mode = argv[1];
  const char* wanted = getenv("ACCEL_BACKEND");
  if (wanted == NULL || strcmp(wanted, mode) != 0) {
    fprintf(stderr, "ACCEL_BACKEND must be '%s' (meson sets it), is '%s'\n", mode,
            wanted != NULL ? wanted : "(unset)");
    return 2;
  }
  const char* const* forbidden = strcmp(mode, "sim") == 0 ? other_plugins_sim : other_plugins_opencl;

  int32_t count = accel_device_count();
  const char* current = accel_current_accelerator();
  printf("ACCEL_BACKEND=%s: current accelerator %s, %d device(s); %s\n", mode,
         current != NULL ? current : "(none)", (int)count, accel_selection_reason());
  if (strcmp(mode, "sim") == 0 && (current == NULL || strcmp(current, "sim") != 0)) {
    fprintf(stderr, "FAIL: sim is not the current accelerator\n");
    return 1;
  }
  for (size_t i = 0; i < accel_backend_count(); ++i) {
    accel_backend_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (accel_get_backend_info(i, &info) == ACCEL_SUCCESS)
      printf("  %-10s %-11s %s\n    %s\n", info.name, accel_backend_status_name(info.status),
             info.path, info.reason);
  }

  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) {
    printf("SKIP: /proc/self/maps cannot be read\n");
    return 77;
  }
  char line[4096];
  char last[4096] = "";
  int bad = 0, files = 0;
  while (fgets(line, sizeof line, maps) != NULL) {
    char* path = strchr(line, '/');
    if (path == NULL) continue;
    path[strcspn(path, "\n")] = '\0';
    if (strcmp(path, last) == 0) continue; /* one file, several mappings */
    snprintf(last, sizeof last, "%s", path);
    ++files;
    const char* base = base_name(path);
    for (const char* const* f = forbidden; *f != NULL; ++f) {
      if (strncmp(base, *f, strlen(*f)) == 0) {
        printf("FAIL: %s is mapped (matches '%s')\n", path, *f);
        ++bad;
        break;
      }
    }
  }
  fclose(maps);
  printf("%d mapped file(s) checked, %d forbidden\n", files, bad);
  return bad == 0 ? 0 : 1;
}
