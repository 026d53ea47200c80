/* Drives the trace from C: ranges (nested, and misuse), copies, a host
 * function and an event on a stream, 8 threads at once, a fork child that
 * calls accel and flushes, and accel_trace_flush mid-run. trace_check.py
 * runs it with ACCEL_TRACE set and checks the file it leaves.
 * Prints "trace enabled: N" first; exits non-zero on any unexpected status. */
#define _POSIX_C_SOURCE 200809L /* fork, nanosleep under -std=c99 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "accel/accel.h"

#define CHECK(call, want)                                                             \
  do {                                                                                \
    accel_status_t st_ = (call);                                                      \
    if (st_ != (want)) {                                                              \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s: %s\n", __FILE__, __LINE__, \
              #call, accel_status_name(st_), accel_status_name(want), accel_last_error()); \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

enum { kThreads = 8, kCopies = 25, kBytes = 4096 };

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void host_fn(void* arg) { *(volatile int*)arg = 1; }

/* Holds its stream until *arg becomes non-zero. */
static void gate(void* arg) {
  while (__atomic_load_n((int*)arg, __ATOMIC_ACQUIRE) == 0) sleep_ms(1);
}

static void* open_later(void* arg) {
  sleep_ms(20);
  __atomic_store_n((int*)arg, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* A host function that calls accel (traced calls on the worker's lane). */
static void calls_accel(void* arg) {
  (void)arg;
  (void)accel_current_device_index();
  accel_range_push("in a host function");
  accel_range_pop();
}

/* A host function that takes 2 ms: on a stream several threads share,
 * each one's span must last that long (no other thread's operation inside
 * its timing bracket). */
static void sleeper(void* arg) {
  (void)arg;
  sleep_ms(2);
}

static void* worker(void* arg) {
  accel_stream_t shared = (accel_stream_t)arg;
  for (int i = 0; i < 4; ++i) CHECK(accel_launch_host_func(shared, sleeper, NULL), ACCEL_SUCCESS);
  char host[kBytes];
  memset(host, 7, sizeof host);
  void* dev = NULL;
  CHECK(accel_range_push("worker"), ACCEL_SUCCESS);
  CHECK(accel_malloc(-1, kBytes, &dev), ACCEL_SUCCESS);
  accel_stream_t s = NULL;
  CHECK(accel_stream_create(-1, 0, &s), ACCEL_SUCCESS);
  for (int i = 0; i < kCopies; ++i) {
    CHECK(accel_memcpy_async(dev, host, kBytes, ACCEL_MEMCPY_HOST_TO_DEVICE, s), ACCEL_SUCCESS);
    CHECK(accel_memcpy_async(host, dev, kBytes, ACCEL_MEMCPY_DEVICE_TO_HOST, s), ACCEL_SUCCESS);
  }
  CHECK(accel_stream_synchronize(s), ACCEL_SUCCESS);
  CHECK(accel_stream_destroy(s), ACCEL_SUCCESS);
  CHECK(accel_free(dev), ACCEL_SUCCESS);
  CHECK(accel_range_pop(), ACCEL_SUCCESS);
  return NULL;
}

int main(void) {
  printf("trace enabled: %d\n", accel_trace_enabled());
  fflush(stdout);
  if (accel_device_count() < 1) {
    fprintf(stderr, "no accelerator: %s\n", accel_selection_reason());
    return 1;
  }
  /* Misuse changes nothing and says why. */
  CHECK(accel_range_pop(), ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(accel_range_push(NULL), ACCEL_ERROR_INVALID_ARGUMENT);

  /* Names need not be UTF-8, and long ones are cut at a character
   * boundary: the file stays valid JSON either way. */
  CHECK(accel_range_push("not utf-8 \xff\xfe"), ACCEL_SUCCESS);
  CHECK(accel_range_pop(), ACCEL_SUCCESS);
  CHECK(accel_range_push("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                         "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                         "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                         "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                         "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"),
        ACCEL_SUCCESS);
  CHECK(accel_range_pop(), ACCEL_SUCCESS);

  CHECK(accel_range_push("outer"), ACCEL_SUCCESS);
  CHECK(accel_range_push("inner"), ACCEL_SUCCESS);
  accel_stream_t s = NULL;
  CHECK(accel_stream_create(-1, 0, &s), ACCEL_SUCCESS);
  void* dev = NULL;
  char host[1 << 16];
  memset(host, 1, sizeof host);
  CHECK(accel_malloc(-1, sizeof host, &dev), ACCEL_SUCCESS);
  CHECK(accel_memcpy_async(dev, host, sizeof host, ACCEL_MEMCPY_HOST_TO_DEVICE, s), ACCEL_SUCCESS);
  CHECK(accel_memset_async(dev, 0, sizeof host, s), ACCEL_SUCCESS);
  volatile int ran = 0;
  CHECK(accel_launch_host_func(s, host_fn, (void*)&ran), ACCEL_SUCCESS);
  accel_event_t ev = NULL;
  CHECK(accel_event_create(-1, 0, &ev), ACCEL_SUCCESS);
  CHECK(accel_event_record(ev, s), ACCEL_SUCCESS);
  CHECK(accel_memcpy_async(host, dev, sizeof host, ACCEL_MEMCPY_DEVICE_TO_HOST, s), ACCEL_SUCCESS);
  CHECK(accel_event_synchronize(ev), ACCEL_SUCCESS);
  CHECK(accel_stream_synchronize(s), ACCEL_SUCCESS);
  CHECK(accel_range_pop(), ACCEL_SUCCESS);

  /* Host functions that call accel while the stream's queue is full (sim
   * holds 4096 tasks; each traced memset queues three): the tracer never
   * holds its lock across an enqueue, which may block until the worker has
   * run those functions. A regression hangs here (the test's timeout). */
  for (int i = 0; i < 3000; ++i) {
    CHECK(accel_memset_async(dev, i & 0xff, 64, s), ACCEL_SUCCESS);
    if (i % 100 == 0) CHECK(accel_launch_host_func(s, calls_accel, NULL), ACCEL_SUCCESS);
  }
  CHECK(accel_stream_synchronize(s), ACCEL_SUCCESS);
  /* Destroying a stream that a host function still holds: with tracing the
   * destroy adds no wait of its own (sim's destroy drains the queue, so
   * another thread opens the gate); the spans are timed once the work has
   * run (the checker wants no unresolved span). */
  {
    accel_stream_t gated = NULL;
    int open_gate = 0;
    CHECK(accel_stream_create(-1, 0, &gated), ACCEL_SUCCESS);
    CHECK(accel_launch_host_func(gated, gate, &open_gate), ACCEL_SUCCESS);
    CHECK(accel_memcpy_async(dev, host, sizeof host, ACCEL_MEMCPY_HOST_TO_DEVICE, gated),
          ACCEL_SUCCESS);
    pthread_t opener;
    pthread_create(&opener, NULL, open_later, &open_gate);
    CHECK(accel_stream_destroy(gated), ACCEL_SUCCESS);
    pthread_join(opener, NULL);
    CHECK(accel_synchronize(-1), ACCEL_SUCCESS);
  }
  /* A flush mid-run leaves a complete file (the checker reads the last). */
  CHECK(accel_trace_flush(), ACCEL_SUCCESS);

  /* A fork child calls accel and flushes: it must not write the parent's
   * file (the checker finds no record of the child's pid). */
  pid_t child = fork();
  if (child == 0) {
    int enabled = accel_trace_enabled();
    accel_range_push("child");
    accel_range_pop();
    accel_status_t st = accel_trace_flush();
    _exit(enabled == 0 && st == ACCEL_SUCCESS ? 0 : 3);
  }
  int wst = 0;
  if (child < 0 || waitpid(child, &wst, 0) != child || !WIFEXITED(wst) || WEXITSTATUS(wst) != 0) {
    fprintf(stderr, "fork child: tracing should be off in the child and its flush a no-op\n");
    return 1;
  }
  printf("fork child: %d\n", (int)child);

  accel_stream_t shared = NULL;
  CHECK(accel_stream_create(-1, 0, &shared), ACCEL_SUCCESS);
  pthread_t threads[kThreads];
  for (int i = 0; i < kThreads; ++i) pthread_create(&threads[i], NULL, worker, shared);
  for (int i = 0; i < kThreads; ++i) pthread_join(threads[i], NULL);
  CHECK(accel_stream_synchronize(shared), ACCEL_SUCCESS);
  CHECK(accel_stream_destroy(shared), ACCEL_SUCCESS);

  CHECK(accel_event_destroy(ev), ACCEL_SUCCESS);
  CHECK(accel_free(dev), ACCEL_SUCCESS);
  CHECK(accel_stream_destroy(s), ACCEL_SUCCESS);
  CHECK(accel_empty_cache(-1), ACCEL_SUCCESS);
  CHECK(accel_range_pop(), ACCEL_SUCCESS); /* "outer" */
  printf("host function ran: %d\n", ran);
  return ran == 1 ? 0 : 1; /* exit() writes the rest of the trace */
}
