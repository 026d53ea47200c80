/* accel_range_push/pop and accel_stream_set_name reach NVTX while cuda is
 * current, and only then: the tool sees the ranges, and the stream's name
 * with the CUstream accel_stream_native_handle reports.
 * Run with NVTX_INJECTION64_PATH naming tests/fakes/nvtx's tool and
 * FAKE_NVTX_LOG a fresh file; argv[1] is "forwarded" (cuda, through its
 * fake driver) or "not-forwarded" (sim). Exits 0 when the tool's log is
 * exactly what was expected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const int forwarded = strcmp(argv[1], "forwarded") == 0;
  /* A log left by an earlier run must not count (the tool creates it when
   * NVTX loads it, at the first range). */
  if (getenv("FAKE_NVTX_LOG") == NULL) return 2;
  remove(getenv("FAKE_NVTX_LOG"));
  if (accel_device_count() < 1) {
    fprintf(stderr, "no accelerator: %s\n", accel_selection_reason());
    return 1;
  }
  printf("current accelerator: %s\n", accel_current_accelerator());
  if (accel_range_push("step") != ACCEL_SUCCESS || accel_range_push("inner") != ACCEL_SUCCESS ||
      accel_range_pop() != ACCEL_SUCCESS || accel_range_pop() != ACCEL_SUCCESS) {
    fprintf(stderr, "a range call failed: %s\n", accel_last_error());
    return 1;
  }
  /* Misuse is refused before NVTX sees it. */
  if (accel_range_pop() != ACCEL_ERROR_INVALID_ARGUMENT) return 1;
  accel_stream_t s = NULL;
  accel_native_handle_t h;
  memset(&h, 0, sizeof h);
  h.struct_size = sizeof h;
  if (accel_stream_create(-1, 0, &s) != ACCEL_SUCCESS ||
      accel_stream_set_name(s, "copy engine 1") != ACCEL_SUCCESS ||
      accel_stream_set_name(s, "") != ACCEL_ERROR_INVALID_ARGUMENT ||
      (forwarded && accel_stream_native_handle(s, &h) != ACCEL_SUCCESS)) {
    fprintf(stderr, "naming a stream failed: %s\n", accel_last_error());
    return 1;
  }
  char want[256] = "";
  if (forwarded)
    snprintf(want, sizeof want, "push step\npush inner\npop\npop\nname-stream %p copy engine 1\n",
             h.handle);
  if (accel_stream_destroy(s) != ACCEL_SUCCESS) return 1;
  char got[256] = {0};
  FILE* f = fopen(getenv("FAKE_NVTX_LOG"), "r");
  if (f != NULL) {
    size_t n = fread(got, 1, sizeof got - 1, f);
    got[n] = '\0';
    fclose(f);
  } else if (forwarded) {
    fprintf(stderr, "the NVTX tool was never loaded (no log file)\n");
    return 1;
  }
  if (strcmp(got, want) != 0) {
    fprintf(stderr, "the NVTX tool saw:\n%s---\nexpected:\n%s---\n", got, want);
    return 1;
  }
  printf("NVTX saw %s\n", forwarded ? "both ranges and the stream's name" : "nothing, as expected");
  return 0;
}
