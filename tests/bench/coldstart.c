/* A whole program for the cold-start benchmark: it links libaccelcore and,
 * unless given "floor", calls accel_device_count() once. With "rss" it
 * prints the peak RSS (kB) added by that call: loading the core's discovery
 * and every plugin. */
#include <stdio.h>
#include <string.h>

#include "accel/accel.h"

static long status_kb(const char* key) {
  char line[256];
  long kb = -1;
  size_t n = strlen(key);
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, key, n) == 0) {
      sscanf(line + n, "%ld", &kb);
      break;
    }
  }
  fclose(f);
  return kb;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "floor") == 0) return 0;
  long before = status_kb("VmRSS:");
  int count = accel_device_count();
  if (argc > 1 && strcmp(argv[1], "rss") == 0) {
    printf("%ld %ld %d\n", before, status_kb("VmHWM:"), count);
  }
  return count < 0;
}
