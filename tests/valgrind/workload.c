/*
 * accel-valgrind-workload: a small but complete use of accel over sim, run
 * under valgrind memcheck (meson test --suite valgrind): discovery, streams
 * with priorities, events with timing, host functions, wait on an event,
 * malloc / memset / memcpy (all kinds) / free, statistics, properties,
 * error paths, a second thread, then a normal exit. Prints "workload ok" and
 * exits 0 when every step did what it should; memcheck reports leaks and
 * invalid accesses.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>

static int failures = 0;

#define EXPECT(call, want)                                                           \
  do {                                                                               \
    accel_status_t st_ = (call);                                                     \
    if (st_ != (want)) {                                                             \
      fprintf(stderr, "FAIL line %d: %s -> %s (%s), expected %s\n", __LINE__, #call, \
              accel_status_name(st_), accel_last_error(), accel_status_name(want));  \
      ++failures;                                                                    \
    }                                                                                \
  } while (0)

static void count_fn(void* user) { ++*(int*)user; }

static void* thread_main(void* arg) {
  accel_stream_t s = NULL;
  void* p = NULL;
  (void)arg;
  EXPECT(accel_set_device_index(accel_device_count() - 1), ACCEL_SUCCESS);
  EXPECT(accel_stream_create(-1, 0, &s), ACCEL_SUCCESS);
  EXPECT(accel_malloc(-1, 4096, &p), ACCEL_SUCCESS);
  EXPECT(accel_memset_async(p, 7, 4096, s), ACCEL_SUCCESS);
  EXPECT(accel_stream_synchronize(s), ACCEL_SUCCESS);
  EXPECT(accel_free(p), ACCEL_SUCCESS);
  EXPECT(accel_stream_destroy(s), ACCEL_SUCCESS);
  EXPECT(accel_set_device_index(99), ACCEL_ERROR_INVALID_DEVICE); /* a per-thread error */
  return NULL;
}

int main(void) {
  enum { N = 1 << 16 };
  int32_t n, d, least = 0, greatest = 0;
  int ran = 0, launched = 0;
  unsigned char *in, *out;
  accel_stream_t s[2] = {NULL, NULL};
  accel_event_t start = NULL, stop = NULL;
  void *a = NULL, *b = NULL;
  float ms = 0;
  accel_memory_stats_t stats;
  accel_device_properties_t props;
  pthread_t t;

  if (!accel_is_available()) {
    fprintf(stderr, "FAIL no accelerator: %s\n", accel_selection_reason());
    return 1;
  }
  n = accel_device_count();
  in = malloc(N);
  out = malloc(N);
  if (in == NULL || out == NULL) return 1;
  memset(in, 0x5C, N);

  for (d = 0; d < n; ++d) {
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    EXPECT(accel_get_device_properties(d, &props), ACCEL_SUCCESS);
  }
  EXPECT(accel_stream_priority_range(0, &least, &greatest), ACCEL_SUCCESS);
  EXPECT(accel_stream_create(0, greatest, &s[0]), ACCEL_SUCCESS);
  EXPECT(accel_stream_create(0, least, &s[1]), ACCEL_SUCCESS);
  EXPECT(accel_event_create(0, ACCEL_EVENT_ENABLE_TIMING, &start), ACCEL_SUCCESS);
  EXPECT(accel_event_create(0, ACCEL_EVENT_ENABLE_TIMING, &stop), ACCEL_SUCCESS);

  EXPECT(accel_malloc(0, N, &a), ACCEL_SUCCESS);
  EXPECT(accel_malloc(0, N, &b), ACCEL_SUCCESS);
  EXPECT(accel_event_record(start, s[0]), ACCEL_SUCCESS);
  EXPECT(accel_memcpy_async(a, in, N, ACCEL_MEMCPY_HOST_TO_DEVICE, s[0]), ACCEL_SUCCESS);
  EXPECT(accel_launch_host_func(s[0], count_fn, &ran), ACCEL_SUCCESS);
  ++launched;
  EXPECT(accel_event_record(stop, s[0]), ACCEL_SUCCESS);
  EXPECT(accel_stream_wait_event(s[1], stop), ACCEL_SUCCESS);
  EXPECT(accel_memcpy_async(b, a, N, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s[1]), ACCEL_SUCCESS);
  EXPECT(accel_memcpy_async(out, b, N, ACCEL_MEMCPY_DEVICE_TO_HOST, s[1]), ACCEL_SUCCESS);
  EXPECT(accel_launch_host_func(s[1], count_fn, &ran), ACCEL_SUCCESS);
  ++launched;
  EXPECT(accel_stream_synchronize(s[1]), ACCEL_SUCCESS);
  EXPECT(accel_event_synchronize(stop), ACCEL_SUCCESS);
  EXPECT(accel_event_elapsed_time(start, stop, &ms), ACCEL_SUCCESS);
  if (memcmp(in, out, N) != 0) {
    fprintf(stderr, "FAIL the data did not survive host->device->device->host\n");
    ++failures;
  }
  EXPECT(accel_synchronize(0), ACCEL_SUCCESS);
  if (ran != launched) {
    fprintf(stderr, "FAIL %d host functions ran, %d launched\n", ran, launched);
    ++failures;
  }

  /* Error paths allocate messages too. */
  EXPECT(accel_free(in), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_malloc(0, 0, &a), ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_memcpy_async(a, in, (size_t)N + 1, ACCEL_MEMCPY_HOST_TO_DEVICE, s[0]),
         ACCEL_ERROR_INVALID_ARGUMENT);
  EXPECT(accel_stream_destroy(NULL), ACCEL_ERROR_INVALID_ARGUMENT);

  memset(&stats, 0, sizeof stats);
  stats.struct_size = sizeof stats;
  EXPECT(accel_memory_stats(0, &stats), ACCEL_SUCCESS);
  EXPECT(accel_free(a), ACCEL_SUCCESS);
  EXPECT(accel_free(b), ACCEL_SUCCESS);
  EXPECT(accel_event_destroy(start), ACCEL_SUCCESS);
  EXPECT(accel_event_destroy(stop), ACCEL_SUCCESS);
  EXPECT(accel_stream_destroy(s[0]), ACCEL_SUCCESS);
  EXPECT(accel_stream_destroy(s[1]), ACCEL_SUCCESS);

  if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0) {
    fprintf(stderr, "FAIL thread\n");
    ++failures;
  }
  free(in);
  free(out);
  if (failures != 0) {
    fprintf(stderr, "workload: %d failures\n", failures);
    return 1;
  }
  printf("workload ok (%d devices, %.3f ms between events)\n", (int)n, ms);
  return 0;
}
