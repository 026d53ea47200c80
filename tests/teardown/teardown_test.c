/*
 * teardown_test.c - process exit with accel objects still alive.
 *
 *   accel-teardown-test exit         work, then exit(0) from main with live
 *                                    streams, events, allocations and host
 *                                    functions still queued
 *   accel-teardown-test return       the same, but main returns 0
 *   accel-teardown-test exit-thread  threads keep calling accel (streams
 *                                    running, host functions queued, memory
 *                                    allocated and freed) while another
 *                                    thread calls exit(0)
 *
 * ACCEL_BACKEND names the backend that must be chosen: no accelerator, or
 * another one, fails the run (never a silent pass). The process must end
 * with status 0, without a crash, a hang (meson's timeout) or a sanitizer
 * report. Every failed check prints a line and makes the status non-zero.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <accel/accel.h>

static int g_checks = 0;

static void die(const char* what, accel_status_t st) {
  fprintf(stderr, "FAILED: %s returned %s: %s\n", what, accel_status_name(st), accel_last_error());
  fflush(stderr);
  _exit(1);
}

#define CHECK_OK(call)                         \
  do {                                         \
    accel_status_t st_ = (call);               \
    if (st_ != ACCEL_SUCCESS) die(#call, st_); \
    ++g_checks;                                \
  } while (0)

static void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

/* A host function that keeps its stream busy for a while. */
static void slow_host_fn(void* arg) {
  (void)arg;
  sleep_ms(2);
}

static int g_host_funcs = 1;

/* Host functions are optional: a backend without them says so. */
static void queue_host_fn(accel_stream_t s) {
  if (!g_host_funcs) return;
  accel_status_t st = accel_launch_host_func(s, slow_host_fn, NULL);
  if (st == ACCEL_ERROR_NOT_SUPPORTED) {
    printf("note: backend %s has no host functions\n", accel_current_accelerator());
    g_host_funcs = 0;
    return;
  }
  if (st != ACCEL_SUCCESS) die("accel_launch_host_func", st);
  ++g_checks;
}

static void require_backend(void) {
  const char* want = getenv("ACCEL_BACKEND");
  const char* got;
  if (!accel_is_available()) {
    fprintf(stderr, "FAILED: no accelerator: %s\n", accel_selection_reason());
    exit(1);
  }
  got = accel_current_accelerator();
  if (want != NULL && *want != '\0' && strcmp(want, got) != 0) {
    fprintf(stderr, "FAILED: current accelerator is %s, ACCEL_BACKEND=%s\n", got, want);
    exit(1);
  }
  printf("backend %s, %d device(s)\n", got, (int)accel_device_count());
  ++g_checks;
}

/* Leaves on every device: two created streams with queued work, a recorded
 * event, an unrecorded timing event, device memory with a copy in flight.
 * Nothing is destroyed or freed. */
static unsigned char g_host_buf[8][4096];

static void leave_live_objects(void) {
  int32_t n = accel_device_count();
  int32_t d;
  for (d = 0; d < n && d < 8; ++d) {
    accel_stream_t s1 = NULL, s2 = NULL, def = NULL;
    accel_event_t e1 = NULL, e2 = NULL;
    void* p = NULL;
    int i;
    CHECK_OK(accel_stream_create(d, 0, &s1));
    CHECK_OK(accel_stream_create(d, -1, &s2));
    CHECK_OK(accel_current_stream(d, &def));
    CHECK_OK(accel_event_create(d, ACCEL_EVENT_DEFAULT, &e1));
    {
      accel_status_t st = accel_event_create(d, ACCEL_EVENT_ENABLE_TIMING, &e2);
      if (st != ACCEL_SUCCESS && st != ACCEL_ERROR_NOT_SUPPORTED)
        die("accel_event_create(timing)", st);
      if (e2 != NULL) CHECK_OK(accel_event_record(e2, def));
    }
    CHECK_OK(accel_malloc(d, sizeof g_host_buf[d], &p));
    for (i = 0; i < 4; ++i) queue_host_fn(s1);
    CHECK_OK(accel_memcpy_async(p, g_host_buf[d], sizeof g_host_buf[d], ACCEL_MEMCPY_HOST_TO_DEVICE,
                                s1));
    CHECK_OK(accel_event_record(e1, s1));
    CHECK_OK(accel_stream_wait_event(s2, e1));
    CHECK_OK(accel_memset_async(p, 0x5a, 64, s2));
    queue_host_fn(s2);
    queue_host_fn(def);
    if (d == n - 1) CHECK_OK(accel_set_stream(s2));
  }
}

/* --- exit() from another thread while others are mid-call ----------------- */

static void* churn(void* arg) {
  int32_t n = accel_device_count();
  int32_t d = (int32_t)(long)arg % n;
  unsigned char buf[256];
  memset(buf, 1, sizeof buf);
  if (accel_set_device_index(d) != ACCEL_SUCCESS)
    die("accel_set_device_index", ACCEL_ERROR_INTERNAL);
  for (;;) {
    accel_stream_t s = NULL;
    accel_event_t e = NULL;
    void* p = NULL;
    accel_status_t st;
    if ((st = accel_stream_create(d, 0, &s)) != ACCEL_SUCCESS) die("accel_stream_create", st);
    if ((st = accel_malloc(d, sizeof buf, &p)) != ACCEL_SUCCESS) die("accel_malloc", st);
    if ((st = accel_memcpy_async(p, buf, sizeof buf, ACCEL_MEMCPY_HOST_TO_DEVICE, s)) !=
        ACCEL_SUCCESS)
      die("accel_memcpy_async", st);
    queue_host_fn(s);
    if ((st = accel_event_create(d, 0, &e)) != ACCEL_SUCCESS) die("accel_event_create", st);
    if ((st = accel_event_record(e, s)) != ACCEL_SUCCESS) die("accel_event_record", st);
    st = accel_event_query(e);
    if (st != ACCEL_SUCCESS && st != ACCEL_ERROR_NOT_READY) die("accel_event_query", st);
    if ((st = accel_stream_synchronize(s)) != ACCEL_SUCCESS) die("accel_stream_synchronize", st);
    if ((st = accel_free(p)) != ACCEL_SUCCESS) die("accel_free", st);
    if ((st = accel_event_destroy(e)) != ACCEL_SUCCESS) die("accel_event_destroy", st);
    queue_host_fn(s); /* still queued when the stream is destroyed */
    if ((st = accel_stream_destroy(s)) != ACCEL_SUCCESS) die("accel_stream_destroy", st);
    d = (d + 1) % n;
  }
  return NULL;
}

/* Only the allocation table: malloc / free as fast as possible, so exit()
 * finds this thread inside it. */
static void* churn_memory(void* arg) {
  int32_t d = (int32_t)(long)arg % accel_device_count();
  for (;;) {
    void* p = NULL;
    void* q = NULL;
    accel_status_t st;
    accel_memory_stats_t stats;
    if ((st = accel_malloc(d, 64, &p)) != ACCEL_SUCCESS) die("accel_malloc", st);
    if ((st = accel_malloc(d, 128, &q)) != ACCEL_SUCCESS) die("accel_malloc", st);
    if ((st = accel_free(p)) != ACCEL_SUCCESS) die("accel_free", st);
    if ((st = accel_free(q)) != ACCEL_SUCCESS) die("accel_free", st);
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    if ((st = accel_memory_stats(d, &stats)) != ACCEL_SUCCESS) die("accel_memory_stats", st);
  }
  return NULL;
}

static void* exiter(void* arg) {
  (void)arg;
  sleep_ms(150);
  printf("teardown exit-thread: %d checks passed, 0 failed; exit(0) from a second thread\n",
         g_checks);
  fflush(stdout);
  exit(0);
  return NULL;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "exit") != 0 && strcmp(mode, "return") != 0 &&
      strcmp(mode, "exit-thread") != 0) {
    fprintf(stderr, "usage: %s exit|return|exit-thread\n", argv[0]);
    return 2;
  }
  require_backend();
  leave_live_objects();

  if (strcmp(mode, "exit-thread") == 0) {
    enum { kChurn = 3, kMemory = 2 };
    pthread_t t[kChurn + kMemory + 1];
    int i;
    for (i = 0; i < kChurn; ++i)
      if (pthread_create(&t[i], NULL, churn, (void*)(long)i) != 0) return 1;
    for (i = 0; i < kMemory; ++i)
      if (pthread_create(&t[kChurn + i], NULL, churn_memory, (void*)(long)i) != 0) return 1;
    if (pthread_create(&t[kChurn + kMemory], NULL, exiter, NULL) != 0) return 1;
    /* The main thread is mid-call too when exit() runs. */
    churn((void*)(long)kChurn);
    return 1; /* not reached */
  }

  printf(
      "teardown %s: %d checks passed, 0 failed; leaving with live streams, events, "
      "allocations and queued work\n",
      mode, g_checks);
  fflush(stdout);
  if (strcmp(mode, "exit") == 0) exit(0);
  return 0;
}
