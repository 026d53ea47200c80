/* Drives the trace from C: ranges (nested, and misuse), copies, a host
 * function and an event on a stream, 8 threads at once, a fork child that
 * calls accel and flushes (copies of the file from before the fork and
 * after the child, with ACCEL_TRACE_API_SNAPSHOT), and accel_trace_flush
 * mid-run. trace_check.py
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

/* Copies the file `from` to `prefix` + `suffix`; 0 on failure (says why). */
static int copy_file(const char* from, const char* prefix, const char* suffix) {
  char to[4096];
  if (snprintf(to, sizeof to, "%s%s", prefix, suffix) >= (int)sizeof to) return 0;
  FILE* in = fopen(from, "rb");
  FILE* out = in != NULL ? fopen(to, "wb") : NULL;
  int ok = in != NULL && out != NULL;
  char buf[1 << 14];
  size_t n;
  while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
  if (in != NULL) {
    ok = ok && !ferror(in);
    fclose(in);
  }
  if (out != NULL && fclose(out) != 0) ok = 0;
  if (!ok) fprintf(stderr, "cannot copy %s to %s\n", from, to);
  return ok;
}

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

  /* A graph (docs/tracing.md): its capture is one "stream capture" slice;
   * each replay's operations are spans (a memset of 12345 bytes, found by
   * its size, and a copy into pinned memory), none at capture; where the
   * device replays natively, the memset is inside a "graph launch" span. */
  {
    void* pinned = NULL;
    accel_graph_t g = NULL;
    accel_device_properties_t props = {.struct_size = sizeof props};
    CHECK(accel_get_device_properties(-1, &props), ACCEL_SUCCESS);
    printf("graphs: %s\n", props.graphs); /* which spans a replay makes */
    fflush(stdout);
    CHECK(accel_host_malloc(12345, 0, &pinned), ACCEL_SUCCESS);
    CHECK(accel_stream_begin_capture(s, ACCEL_CAPTURE_MODE_GLOBAL, 0), ACCEL_SUCCESS);
    CHECK(accel_memset_async(dev, 3, 12345, s), ACCEL_SUCCESS);
    CHECK(accel_memcpy_async(pinned, dev, 12345, ACCEL_MEMCPY_DEVICE_TO_HOST, s), ACCEL_SUCCESS);
    CHECK(accel_stream_end_capture(s, &g), ACCEL_SUCCESS);
    CHECK(accel_graph_replay(g, s), ACCEL_SUCCESS);
    CHECK(accel_graph_replay(g, s), ACCEL_SUCCESS);
    CHECK(accel_stream_synchronize(s), ACCEL_SUCCESS);
    CHECK(accel_graph_destroy(g), ACCEL_SUCCESS);
    CHECK(accel_host_free(pinned), ACCEL_SUCCESS);
  }

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

  /* A fork child (docs/tracing.md: it stops tracing and never writes the
   * parent's file) does what only it does here: a range named after its own
   * pid and accel_is_available(), which the parent never calls, then a
   * flush; it reports what it saw on stdout and in its exit status.
   * Its records would carry the parent's pid and thread id (both are the
   * tracer's, inherited), so the checker looks for its work, not its pid.
   * With ACCEL_TRACE_API_SNAPSHOT=PREFIX (trace_check.py sets it) the parent
   * copies its trace file to PREFIX.before-fork just before the fork and to
   * PREFIX.after-fork once the child has exited: only a flush or exit()
   * writes the file, and the parent makes neither in between, so any
   * difference is the child's. The final file cannot show it: the parent's
   * later flushes rewrite it from the place the child would have written. */
  int child_ok = 1;
  {
    const char* snap = getenv("ACCEL_TRACE_API_SNAPSHOT");
    const char* trace_path = getenv("ACCEL_TRACE");
    if (snap != NULL && trace_path != NULL && !copy_file(trace_path, snap, ".before-fork"))
      return 1;
    /* The child inherits unwritten output: its own fflush would print it again. */
    fflush(stdout);
    fflush(stderr);
    pid_t child = fork();
    if (child == 0) {
      char name[64];
      snprintf(name, sizeof name, "fork child %d", (int)getpid());
      int enabled = accel_trace_enabled();
      accel_status_t pushed = accel_range_push(name);
      int available = accel_is_available();
      accel_status_t popped = accel_range_pop();
      accel_status_t flushed = accel_trace_flush();
      printf("fork child %d: trace enabled: %d, available: %d, range: %s %s, flush: %s\n",
             (int)getpid(), enabled, available, accel_status_name(pushed),
             accel_status_name(popped), accel_status_name(flushed));
      fflush(stdout);
      const int ok = enabled == 0 && pushed == ACCEL_SUCCESS && popped == ACCEL_SUCCESS &&
                     flushed == ACCEL_SUCCESS;
      _exit(ok ? 0 : 3);
    }
    int wst = 0;
    if (child < 0 || waitpid(child, &wst, 0) != child) {
      fprintf(stderr, "fork failed\n");
      return 1;
    }
    const int code = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst);
    printf("fork child: pid %d, exit status %d\n", (int)child, code);
    if (code != 0) {
      fprintf(stderr, "fork child: tracing should be off in the child and its flush a no-op\n");
      child_ok = 0; /* the rest still runs: the checker reads the whole trace */
    }
    if (snap != NULL && trace_path != NULL && !copy_file(trace_path, snap, ".after-fork"))
      return 1;
  }

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
  return ran == 1 && child_ok ? 0 : 1; /* exit() writes the rest of the trace */
}
